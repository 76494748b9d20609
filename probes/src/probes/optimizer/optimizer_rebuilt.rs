//! `optimizer_rebuilt` (S6.2, S2.1): optimizer state rebuilt on resume, scheduler never stepped.

use std::path::{Path, PathBuf};

use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::CheckpointDir;
use crate::tensors::{lookup, read_pickled_dict, Value};

use crate::probes::checkpoint::model::*;
use crate::probes::checkpoint::optimizer_state::*;
use crate::probes::util::*;

// =======================================================================================
// S6.2 — optimizer rebuilt (and S2.1 from scheduler.pt)
// =======================================================================================

/// `last_epoch` and `_step_count` of a scheduler state (scheduler.pt, or a Lightning .ckpt's
/// `lr_schedulers[0]`).
fn scheduler_state(c: &CheckpointDir) -> Option<(f64, Option<f64>, PathBuf)> {
    let read = |v: &Value, p: &Path| -> Option<(f64, Option<f64>, PathBuf)> {
        let le = lookup(v, "last_epoch")?.as_f64()?;
        Some((
            le,
            lookup(v, "_step_count").and_then(Value::as_f64),
            p.to_path_buf(),
        ))
    };
    if let Some(p) = &c.scheduler {
        if let Ok(v) = read_pickled_dict(p) {
            if let Some(x) = read(&v, p) {
                return Some(x);
            }
        }
    }
    for w in c.weights.iter().filter(|w| file_name(w).ends_with(".ckpt")) {
        if let Ok(v) = read_pickled_dict(w) {
            if let Some(s) = lookup(&v, "lr_schedulers").and_then(|l| l.as_seq()?.first()) {
                if let Some(x) = read(s, w) {
                    return Some(x);
                }
            }
        }
    }
    None
}
pub(super) const OPTIMIZER_REBUILT: ProbeSpec = ProbeSpec {
    id: "optimizer_rebuilt",
    entries: &["S6.2", "O27"],
    inputs: &["optimizer", "scheduler", "trainer_state"],
    params: &["step_ratio", "v_zero", "min_step"],
    outcomes: &["pass", "rebuilt", "skip"],
    run: optimizer_rebuilt,
};

pub fn optimizer_rebuilt(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "S6.2";
    let (step_ratio, v_zero, min_step) = (
        p!(ctx, E, "step_ratio"),
        p!(ctx, E, "v_zero"),
        p!(ctx, E, "min_step"),
    );
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let Some(opt_step) = opt.max_step() else {
        return vec![Verdict::skip(
            E,
            "the optimizer state has no `step` (not Adam-like, or no state yet)",
        )];
    };
    // The run's step at this checkpoint.
    let ts_step = c
        .and_then(|c| c.trainer_state.as_ref())
        .and_then(|p| crate::metrics::trainer_state::TrainerState::read(p).ok())
        .and_then(|t| t.global_step);
    let sched = c.and_then(scheduler_state);
    let accum = ctx.facts.f64("accum_steps").filter(|a| *a >= 1.0);
    // A checkpoint index that does not count optimizer steps says nothing about Adam's count:
    // an epoch (timm, Ultralytics), or a Stable-Baselines3 archive's environment timesteps
    // (each rollout of n_steps feeds n_epochs × n_steps / batch_size optimizer steps).
    let counts_steps = c.is_some_and(|c| index_counts_optimizer_steps(ctx.run, c));
    let (run_step, src) = match (
        ts_step,
        c.map(|c| c.step).filter(|s| *s > 0 && counts_steps),
    ) {
        (Some(s), _) => (s as f64, "trainer_state global_step".to_string()),
        (None, Some(s)) => match accum {
            Some(a) => (
                s as f64 / a,
                format!("checkpoint step {s} / accum_steps {a}"),
            ),
            None => (s as f64, format!("checkpoint step {s}")),
        },
        _ => match sched.as_ref().filter(|s| s.0 > 0.0) {
            Some(s) => (s.0, "scheduler last_epoch".to_string()),
            None => (f64::NAN, String::new()),
        },
    };
    let names = param_names(&opt, model_for(ctx.run, c).as_ref());
    let mut zero_v = Vec::new();
    let mut low_steps = 0usize;
    // Params past `min_step` with a second moment to look at.
    let mut judged = 0usize;
    for s in opt.state.values() {
        let st = s.step.unwrap_or(0.0);
        if st < opt_step {
            low_steps += 1;
        }
        if st >= min_step {
            if let Some(v) = &s.exp_avg_sq {
                judged += 1;
                if opt.l2_norm(v).is_ok_and(|n| n <= v_zero) {
                    zero_v.push(describe_param(s.id, &names, &opt));
                }
            }
        }
    }
    // A cleared or rebuilt state zeroes the moments of every parameter together. A few
    // parameters with v = 0 beside many that accumulated after as many steps, got no
    // gradient at any step: a bias whose effect cancels in a pairwise loss (a reward model's
    // Bradley-Terry loss reads only r_chosen - r_rejected), or an unused branch.
    let few = 2 * zero_v.len() < judged;
    let ev = opt_ev(&opt, c);
    let mut out = Vec::new();
    // A run step that counts the steps of every optimizer in the checkpoint (Lightning's
    // global_step under manual optimization: a GAN's generator and discriminator steps) is
    // held against all of them.
    let all_steps = opt_step + opt.sibling_steps;
    let ratio = all_steps / run_step;
    // Most params with moments at 0 while their step count matches the run's (a rebuild
    // restarts the count) and the loss does not learn: the network gets no gradient at all
    // (units dead after too high an LR or a negative bias, or the loss cut off from the graph),
    // not a lost state. A state zeroed at the full count beside a loss that learns, or with no
    // loss to say, stays a reset.
    let steps_match = run_step.is_finite() && run_step >= min_step && ratio >= step_ratio;
    let dead = steps_match && crate::probes::metric::grad_norm::loss_not_learning(ctx);
    let no_gradient = !zero_v.is_empty() && (few || dead);
    let siblings = if opt.sibling_steps > 0.0 {
        format!(
            " + {} of the checkpoint's other optimizers",
            fstep(opt.sibling_steps)
        )
    } else {
        String::new()
    };
    let measured = if run_step.is_finite() {
        format!(
            "optimizer step {}{siblings} vs run step {} ({src}): ratio {:.2}",
            fstep(opt_step),
            fstep(run_step),
            ratio
        )
    } else {
        format!("optimizer step {}", fstep(opt_step))
    };
    let expected = format!(
        "step ratio ≥ {step_ratio}; ‖v‖ > {} after {min_step} steps",
        fmt(v_zero)
    );
    if run_step.is_finite() && run_step >= min_step && ratio < step_ratio {
        out.push(
            Verdict::new(E, Status::Fail, "rebuilt")
                .measured(measured.clone())
                .expected(expected.clone())
                .message(format!(
                    "Adam's step count ({}{siblings}) is far below the run's step ({}): the optimizer was re-created mid-run (inside the loop, on resume, or after unfreezing) — its moments and bias correction restart, and a scheduler attached to the old optimizer stops acting on the new one",
                    fstep(opt_step),
                    fstep(run_step)
                ))
                .evidence(ev.clone())
                .value("opt_step", opt_step)
                .value("run_step", run_step),
        );
    } else if !zero_v.is_empty() && !no_gradient {
        out.push(
            Verdict::new(E, Status::Fail, "rebuilt")
                .measured(format!("{} params with ‖v‖ ≈ 0 after ≥ {min_step} steps", zero_v.len()))
                .expected(expected.clone())
                .message(format!("Adam's second moment is ~0 for {} — the state was reset (optimizer rebuilt or state cleared) or those params never get a gradient", list_some(&zero_v, 4)))
                .evidence(ev.clone())
                .value("zero_v", zero_v.len() as f64),
        );
    } else {
        let mut msg =
            "Adam's step count and moments match the run: the optimizer persisted".to_string();
        if low_steps > 0 {
            msg.push_str(&format!(
                " ({low_steps} params have a lower step: added or unfrozen later)"
            ));
        }
        if no_gradient && few {
            msg.push_str(&format!(
                "; {} of {judged} params never got a gradient (‖v‖ ≈ 0 after ≥ {min_step} of their steps): {} — not a reset, which zeroes every param's moments",
                zero_v.len(),
                list_some(&zero_v, 4)
            ));
        } else if no_gradient {
            msg.push_str(&format!(
                "; {} of {judged} params never got a gradient (‖v‖ ≈ 0 while their step count matches the run's, which a reset would restart): {} — the network receives no gradient: units dead after too high an LR or a large negative bias (O25), or the loss cut off from the graph (O3)",
                zero_v.len(),
                list_some(&zero_v, 4)
            ));
        }
        out.push(
            Verdict::new(E, Status::Pass, "pass")
                .measured(measured)
                .expected(expected)
                .message(msg)
                .evidence(ev.clone())
                .value("opt_step", opt_step),
        );
    }
    // The scheduler never stepped.
    if let Some((last_epoch, step_count, path)) = sched {
        if last_epoch == 0.0 && opt_step >= min_step {
            out.push(
                Verdict::new("S2.1", Status::Fail, "constant_nonzero")
                    .measured(format!("scheduler last_epoch 0{} after {} optimizer steps", step_count.map(|s| format!(" (_step_count {})", fstep(s))).unwrap_or_default(), fstep(opt_step)))
                    .expected(format!("last_epoch ≈ {} (one scheduler.step() per optimizer step)", fstep(opt_step)))
                    .message(format!(
                        "scheduler.pt says last_epoch 0 after {} optimizer steps: the scheduler was never stepped — call scheduler.step() after each optimizer.step() (if it is stepped per epoch, this is expected only inside the first epoch)",
                        fstep(opt_step)
                    ))
                    .evidence(Evidence::file(&path).steps(c.map(|c| c.step).unwrap_or(0), c.map(|c| c.step).unwrap_or(0)))
                    .value("last_epoch", last_epoch)
                    .value("opt_step", opt_step),
            );
        }
    }
    out
}
