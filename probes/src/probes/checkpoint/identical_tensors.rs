//! `identical_tensors` (O2/O3/O4): trainable tensors byte-identical while others moved.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;

// =======================================================================================
// O2/O3/O4 — byte-identical tensors
// =======================================================================================

/// The modules that may directly follow `module` (`0` → `1`, `conv1` → `bn1` / `norm1`,
/// `layer.conv` → `layer.bn`).
fn next_modules(module: &str) -> Vec<String> {
    let (parent, leaf) = match module.rsplit_once('.') {
        Some((p, l)) => (format!("{p}."), l),
        None => (String::new(), module),
    };
    let mut out = Vec::new();
    if let Ok(n) = leaf.parse::<u64>() {
        out.push(format!("{parent}{}", n + 1));
    }
    for (from, to) in [("conv", "bn"), ("conv", "norm"), ("conv", "batchnorm")] {
        if leaf.contains(from) {
            out.push(format!("{parent}{}", leaf.replacen(from, to, 1)));
        }
    }
    out
}

/// A conv / linear bias that feeds straight into BatchNorm: BatchNorm subtracts the batch mean,
/// so the bias's gradient is exactly zero and it never moves — by construction, not a bug.
fn bias_before_batchnorm(m: &Model, name: &str) -> bool {
    let Some(module) = name.strip_suffix(".bias") else {
        return false;
    };
    let weight_nd = m
        .info(&format!("{module}.weight"))
        .is_some_and(|w| w.shape.len() >= 2);
    let width = m.info(name).map(|b| b.shape.clone());
    weight_nd
        && next_modules(module).iter().any(|n| {
            m.info(&format!("{n}.running_mean"))
                .is_some_and(|r| Some(r.shape.clone()) == width)
        })
}

/// A tensor of a network kept as a copy of another, moved by copying or averaging and never by
/// the optimizer: a DQN / SAC / TD3 target network (`q_net_target.…`, `critic_target.…`,
/// `target_net.…`), an EMA or a distillation teacher. Its module's name says so (a word
/// `target`, `ema` or `teacher` in one component of the path), and the network it copies is
/// beside it: a tensor of the same shape under the same path below another component. Between
/// two checkpoints closer than the copy interval it does not move, by design.
fn copy_network(m: &Model, name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    parts.iter().enumerate().any(|(k, comp)| {
        let lower = comp.to_ascii_lowercase();
        let says_copy = lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|t| matches!(t, "target" | "ema" | "teacher"));
        if !says_copy {
            return false;
        }
        let (before, after) = (parts[..k].join("."), parts[k + 1..].join("."));
        let shape = m.info(name).map(|i| i.shape.clone());
        m.infos().any(|(other, info)| {
            other != name
                && Some(&info.shape) == shape.as_ref()
                && other
                    .strip_prefix(before.as_str())
                    .map(|r| r.trim_start_matches('.'))
                    .and_then(|r| r.split_once('.'))
                    .is_some_and(|(c, rest)| c != *comp && rest == after)
        })
    })
}

/// Tensors expected not to train: declared frozen, a LoRA base, a tower frozen by the stage,
/// a bias feeding BatchNorm.
fn expected_static<'a>(ctx: &'a ProbeCtx, m: &'a Model) -> impl Fn(&str) -> bool + 'a {
    let frozen = ctx.facts.list("frozen");
    let lora = m.has_lora();
    let stage = ctx.facts.u64("stage");
    let run = ctx.run;
    move |name: &str| {
        if frozen.iter().any(|p| under(name, p))
            || bias_before_batchnorm(m, name)
            || copy_network(m, name)
            || super::by_design::unused_by_design(run, name).is_some()
        {
            return true;
        }
        if lora && !is_lora(name) && !name.contains("modules_to_save") {
            return true;
        }
        matches!(
            (stage, tower_of(name)),
            (Some(1), Some(Tower::Vision | Tower::Llm)) | (Some(2), Some(Tower::Vision))
        )
    }
}
/// How far each trainable tensor that is expected to train moved from `a` to `b`.
fn compare(ctx: &ProbeCtx, a: &Model, b: &Model) -> (Vec<Movement>, Vec<String>) {
    let excluded = expected_static(ctx, b);
    movements(a, b, |n, i| is_trainable(n, i) && !excluded(n))
}

pub(super) const IDENTICAL_TENSORS: ProbeSpec = ProbeSpec {
    id: "identical_tensors",
    entries: &["O2", "O3", "O4", "F7"],
    inputs: &["checkpoint:2", "fact:frozen"],
    params: &["moved_rel", "grad_stopped_ratio"],
    outcomes: &["pass", "some_identical", "all_identical", "skip"],
    run: identical_tensors,
};

pub fn identical_tensors(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O2";
    let moved_rel = p!(ctx, E, "moved_rel");
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let (mv, errors) = compare(ctx, &a, &b);
    if mv.is_empty() {
        return vec![Verdict::skip(
            E,
            format!(
                "no trainable float tensors to compare between steps {} and {}{}",
                a.step,
                b.step,
                if errors.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", list_some(&errors, 2))
                }
            ),
        )];
    }
    let static_: Vec<&Movement> = mv.iter().filter(|m| m.rel <= moved_rel).collect();
    let moved = mv.len() - static_.len();
    let names: Vec<String> = static_
        .iter()
        .map(|m| format!("{} {}", m.name, shape_str(&m.shape)))
        .collect();
    let measured = format!(
        "{} of {} trainable tensors unchanged between steps {} and {}",
        static_.len(),
        mv.len(),
        a.step,
        b.step
    );
    // The optimizer says whether "not in the optimizer" can be the cause: when its groups
    // hold at least as many params as the model has trainable tensors, and more tensors sat
    // still than params lack state, those tensors were in the optimizer and received
    // gradients — all zero: the loss does not depend on them (an unused branch, a pooler under
    // mean pooling, a head for a scale no target reaches). Not O2's bug.
    let zero_grad = (!static_.is_empty() && moved > 0)
        .then(|| crate::probes::checkpoint::optimizer_state::newest_optimizer(ctx.run, E).ok())
        .flatten()
        .filter(|(o, _)| !o.partitioned && !o.state.is_empty())
        .is_some_and(|(o, _)| {
            let total: usize = o.groups.iter().map(|g| g.params.len()).sum();
            total >= mv.len() && static_.len() > o.params_without_state().len()
        });
    let mut v = if static_.is_empty() {
        Verdict::new(E, Status::Pass, "pass").message("every trainable tensor moved")
    } else if zero_grad {
        Verdict::new(E, Status::Pass, "pass").message(format!(
            "{} tensor(s) did not move ({}), but the optimizer holds every trainable tensor and state for more of them than sat still: they received zero gradients — the loss does not use them (an unused branch or module), not params missing from the optimizer",
            static_.len(),
            list_some(&names, 4)
        ))
    } else if let (0, Some(steps)) = (
        moved,
        stepped_through(
            ctx,
            (a.step, b.step),
            mv.len(),
            p!(ctx, E, "grad_stopped_ratio"),
        ),
    ) {
        // Adam stepped through the interval with a live gradient, yet nothing moved: the
        // updates landed and something wrote the old weights back over them.
        Verdict::new("F7", Status::Fail, "all_identical").message(format!(
            "no weight changed between steps {} and {}, yet the optimizer stepped ({steps}) with a live gradient (its first moments have not decayed): the updates landed and the weights were written back over them, or the file saved is not the model that trains — a load_state_dict inside the loop (a target-network copy written backwards: online.load_state_dict(target.state_dict()) instead of target.load_state_dict(online.state_dict())), a reset or re-init each epoch, or saving a frozen copy instead of the trained model",
            a.step, b.step
        ))
    } else if moved == 0 {
        Verdict::new("O4", Status::Fail, "all_identical").message(format!(
            "no weight changed between steps {} and {}: no update landed — optimizer.step() is never called (or before backward/after zero_grad), the loss is detached from the graph (O3: .item()/.detach()/torch.no_grad), or the LR is 0",
            a.step, b.step
        ))
    } else {
        Verdict::new(E, Status::Fail, "some_identical").message(format!(
            "{} tensor(s) are byte-identical while {moved} others moved: {} — they are not in the optimizer (built before the layer was added/replaced, or from a filtered parameter list) or have requires_grad=False by accident; declare --fact frozen=PREFIX if they are frozen on purpose",
            static_.len(),
            list_some(&names, 4)
        ))
    };
    for m in static_.iter().take(3) {
        v = v.evidence(step_ev(&a, &b).tensor(&m.name).note("byte-identical"));
    }
    if static_.is_empty() {
        v = v.evidence(step_ev(&a, &b));
    }
    if !errors.is_empty() {
        v.message
            .push_str(&format!(" [not compared: {}]", list_some(&errors, 2)));
    }
    vec![v
        .measured(measured)
        .expected(format!(
            "every trainable tensor changes (‖ΔW‖/‖W‖ > {moved_rel})"
        ))
        .value("unchanged", static_.len() as f64)
        .value("moved", moved as f64)]
}

/// Whether the newest optimizer state stepped through checkpoints `a`..`b` (Adam's count past
/// their midpoint) with its gradient alive (not stopped for nearly every parameter), holding
/// state for at least the `compared` tensors (else what it stepped may be other params: a head
/// beside frozen adapters), the gradient stopped where Adam's m/√v is under `stopped_ratio`: in
/// words.
fn stepped_through(
    ctx: &ProbeCtx,
    (a, b): (u64, u64),
    compared: usize,
    stopped_ratio: f64,
) -> Option<String> {
    let (o, _) =
        crate::probes::checkpoint::optimizer_state::newest_optimizer(ctx.run, "O4").ok()?;
    if o.partitioned || o.state.len() < compared {
        return None;
    }
    let step = o.max_step()?;
    let mid = a as f64 + 0.5 * b.saturating_sub(a) as f64;
    let alive = o.state.values().any(|s| s.exp_avg.is_some())
        && crate::probes::checkpoint::frozen_drift::gradient_stopped_everywhere(ctx, stopped_ratio)
            .is_none();
    (b > a && step >= mid && alive).then(|| format!("Adam's step count {step:.0}"))
}
