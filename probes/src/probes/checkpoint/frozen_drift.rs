//! `frozen_drift` (O17): declared-frozen prefixes that moved, or are still in the optimizer.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::CheckpointDir;
use crate::tensors::OptimizerState;

use crate::probes::checkpoint::model::*;
use crate::probes::checkpoint::optimizer_state::*;
use crate::probes::util::*;

pub(super) const FROZEN_DRIFT: ProbeSpec = ProbeSpec {
    id: "frozen_drift",
    entries: &["O17", "X1"],
    inputs: &["checkpoint:2", "fact:frozen", "optimizer"],
    params: &["moved_rel", "shrink_cos", "grad_stopped_ratio"],
    outcomes: &["pass", "moved", "decayed", "skip"],
    run: frozen_drift,
};

// =======================================================================================
// O17 — declared-frozen prefixes that moved / gradient stopped but still in the optimizer
// =======================================================================================

pub fn frozen_drift(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O17";
    let (moved_rel, shrink_cos, stopped) = (
        p!(ctx, E, "moved_rel"),
        p!(ctx, E, "shrink_cos"),
        p!(ctx, E, "grad_stopped_ratio"),
    );
    let frozen = ctx.facts.list("frozen");
    if !frozen.is_empty() && weight_ckpts(ctx.run).len() >= 2 {
        return frozen_by_weights(ctx, &frozen, moved_rel, shrink_cos);
    }
    match newest_optimizer(ctx.run, E) {
        Ok((opt, c)) => frozen_by_optimizer(ctx, &opt, c, stopped),
        Err(_) if !frozen.is_empty() => vec![Verdict::skip(
            E,
            "fact frozen is set but the run has fewer than two checkpoints and no optimizer state",
        )],
        Err(_) => vec![Verdict::skip(
            E,
            "needs fact frozen=PREFIX[,PREFIX] and two checkpoints, or an optimizer.pt",
        )],
    }
}

fn frozen_by_weights(
    ctx: &ProbeCtx,
    frozen: &[String],
    moved_rel: f64,
    shrink_cos: f64,
) -> Vec<Verdict> {
    const E: &str = "O17";
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let (mv, errors) = movements(&a, &b, |n, i| {
        is_trainable(n, i) && frozen.iter().any(|p| under(n, p))
    });
    if mv.is_empty() {
        return vec![Verdict::skip(
            E,
            format!(
                "no trainable tensor under the frozen prefix(es) {}{}",
                frozen.join(", "),
                if errors.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", list_some(&errors, 2))
                }
            ),
        )];
    }
    let moved: Vec<&Movement> = mv.iter().filter(|m| m.rel > moved_rel).collect();
    let shrink = |m: &Movement| m.diff.cosine() >= shrink_cos && m.diff.norm_b < m.diff.norm_a;
    let measured = format!(
        "{} of {} tensors under {} changed between steps {} and {}",
        moved.len(),
        mv.len(),
        frozen.join(", "),
        a.step,
        b.step
    );
    let expected = format!("byte-identical (‖ΔW‖/‖W‖ ≤ {moved_rel})");
    if moved.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .message("the declared-frozen tensors did not change")
            .evidence(step_ev(&a, &b))
            .value("moved", 0.0)];
    }
    let max_rel = moved.iter().map(|m| m.rel).fold(0.0, f64::max);
    let min_rel = moved.iter().map(|m| m.rel).fold(f64::INFINITY, f64::min);
    let all_shrink = moved.iter().all(|m| shrink(m));
    let names: Vec<String> = moved
        .iter()
        .map(|m| {
            format!(
                "{} (Δ {:.2}%, cos {:.6})",
                m.name,
                100.0 * m.rel,
                m.diff.cosine()
            )
        })
        .collect();
    let (out, why) = if all_shrink {
        ("decayed", "Every change is a pure shrink (same direction, smaller norm): the tensors are frozen but still in a weight-decayed param group and still carry a .grad tensor — zeros kept by optimizer.zero_grad(set_to_none=False), or a stale gradient never cleared — so AdamW applies its decoupled decay with a zero gradient (torch optimizers skip only params whose .grad is None, which is what zero_grad(set_to_none=True), the default since torch 2.0, leaves on a frozen param)")
    } else {
        ("moved", "They get updates: they still receive gradients (never actually frozen), or they are still in the optimizer with a .grad that is not None — zero tensors from zero_grad(set_to_none=False), or a stale gradient — so AdamW keeps applying its momentum tail and weight decay after requires_grad=False")
    };
    let mut v = Verdict::new(E, Status::Fail, out)
        .measured(format!("{measured} (Δ {:.2}%…{:.2}%)", 100.0 * min_rel, 100.0 * max_rel))
        .expected(expected)
        .message(format!("declared-frozen tensors changed: {}. {why}. requires_grad=False alone does not take a param out of the optimizer — build the optimizer only over trainable params (filter(lambda p: p.requires_grad, model.parameters())) or rebuild it after freezing, and keep zero_grad(set_to_none=True) so a frozen param's .grad stays None", list_some(&names, 3)));
    for m in moved.iter().take(3) {
        v = v.evidence(
            step_ev(&a, &b)
                .tensor(&m.name)
                .note(format!("Δ {:.2}%", 100.0 * m.rel)),
        );
    }
    vec![v
        .value("moved", moved.len() as f64)
        .value("max_rel", max_rel)]
}

fn frozen_by_optimizer(
    ctx: &ProbeCtx,
    opt: &OptimizerState,
    c: Option<&CheckpointDir>,
    stopped: f64,
) -> Vec<Verdict> {
    const E: &str = "O17";
    let rows = moment_rows(opt);
    if rows.is_empty() {
        return vec![Verdict::skip(
            E,
            "needs fact frozen=PREFIX (the optimizer keeps no Adam moments to inspect)",
        )];
    }
    let model = model_for(ctx.run, c);
    let names = param_names(opt, model.as_ref());
    let flagged = stopped_rows(&rows, stopped);
    let ev = opt_ev(opt, c);
    // Freezing stops a subset. When the gradient stopped for nearly every parameter while the
    // loss does not learn, the whole network stopped receiving gradient: units dead after too
    // high an LR (O25), or a loss cut off from the graph (O3); the loss trend (S4.1) says which.
    if everywhere(flagged.len(), rows.len())
        && !crate::probes::metric::grad_norm::loss_improving(ctx)
    {
        return vec![Verdict::skip(E, dead_network_reason(flagged.len(), rows.len())).evidence(ev)];
    }
    if flagged.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(format!("{} params with Adam state; none with a vanished first moment", rows.len()))
            .expected(format!("RMS(m)/√RMS(v) ≥ {stopped} wherever v is not ~0"))
            .message("no parameter looks frozen while left in the optimizer (declare --fact frozen=PREFIX to check the weights directly)")
            .evidence(ev)];
    }
    // A subset whose gradient stopped while the loss does not learn at all reads the same as
    // units that died (too high an LR pushes whole ReLU layers negative): a frozen subset is
    // told by the rest of the network learning beside it.
    if crate::probes::metric::grad_norm::loss_not_learning(ctx) {
        return vec![Verdict::skip(
            E,
            format!(
                "{} of {} params have a vanished first moment (their gradient stopped), but the loss does not learn: the moments cannot tell a frozen subset from units that died (too high an LR, O25) or a graph cut (O3); the loss trend (S4.1) and the LR say which (declare --fact frozen=PREFIX to measure the weights)",
                flagged.len(),
                rows.len()
            ),
        )
        .evidence(ev)];
    }
    // At a minimum the gradient's mean goes to 0 while its noise stays: m/√v vanishes for
    // every converged parameter. The moments only say "frozen" while the loss still learns.
    if crate::probes::metric::grad_norm::loss_converged(ctx) {
        return vec![Verdict::skip(
            E,
            format!(
                "{} of {} params have a vanished first moment, but the loss has converged to its floor, where every gradient's mean goes to 0: the moments cannot tell a frozen parameter from a converged one (declare --fact frozen=PREFIX to measure the weights)",
                flagged.len(),
                rows.len()
            ),
        )
        .evidence(ev)];
    }
    // A frozen subset leaves something to train: a head, an adapter, some weight matrix. When
    // the gradient stopped in every weight matrix after it had flowed, only biases still learn:
    // the units those matrices feed died (O25), which `dead_units` reads from these moments.
    if let Some(dead) = matrices_stopped(ctx, opt, &rows, &flagged, &names) {
        return vec![Verdict::skip(
            E,
            format!(
                "{} of {} params have a vanished first moment, among them every weight matrix ({}): not a frozen subset, which leaves a head or adapter to train, but units that died (O25)",
                flagged.len(),
                rows.len(),
                dead.matrices
            ),
        )
        .evidence(ev)];
    }
    let list: Vec<String> = flagged
        .iter()
        .map(|r| {
            format!(
                "{} (m/√v {:.1e})",
                describe_param(r.id, &names, opt),
                r.m / r.g
            )
        })
        .collect();
    vec![Verdict::new(E, Status::Warn, "moved")
        .measured(format!("{} of {} params have Adam's first moment ~0 while the second moment is not", flagged.len(), rows.len()))
        .expected(format!("RMS(m)/√RMS(v) ≥ {stopped}"))
        .message(format!(
            "Adam kept stepping them after their gradient stopped (m decays toward 0 while v still remembers it): {} — they are in the optimizer with .grad zero tensors (frozen with requires_grad=False while zero_grad(set_to_none=False) keeps zero grads), so AdamW still moves them (momentum tail, decoupled weight decay); with zero_grad(set_to_none=True), the default since torch 2.0, their .grad is None and the optimizer skips them. Exclude them from the optimizer, and declare --fact frozen=PREFIX to measure the drift",
            list_some(&list, 4)
        ))
        .evidence(ev)
        .value("flagged", flagged.len() as f64)]
}

/// One parameter's Adam moments: RMS(m) and √RMS(v), and whether it is a weight matrix (rank 2
/// or more, as the decay split counts them) rather than a bias or a norm's scale.
struct Moments {
    id: u64,
    m: f64,
    g: f64,
    matrix: bool,
}

/// Per parameter with Adam moments. RMS(m)/√RMS(v) is about |E[g]|/RMS(g), far below 1 only
/// when the gradient stopped long ago while v (β₂ ≈ 0.999) still remembers it.
fn moment_rows(opt: &OptimizerState) -> Vec<Moments> {
    let mut rows = Vec::new();
    for s in opt.state.values() {
        let (Some(m), Some(vv)) = (&s.exp_avg, &s.exp_avg_sq) else {
            continue;
        };
        let n = m.shape.iter().product::<usize>().max(1) as f64;
        let (Ok(mn), Ok(vn)) = (opt.l2_norm(m), opt.l2_norm(vv)) else {
            continue;
        };
        let matrix = m.shape.len() >= 2;
        rows.push(Moments {
            id: s.id,
            m: mn / n.sqrt(),
            g: (vn / n.sqrt()).sqrt(),
            matrix,
        });
    }
    rows
}

/// The rows whose gradient stopped: m/√v under `ratio` while v is not ~0.
fn stopped_rows(rows: &[Moments], ratio: f64) -> Vec<&Moments> {
    let med_g = median(&rows.iter().map(|r| r.g).collect::<Vec<_>>()).unwrap_or(0.0);
    rows.iter()
        .filter(|r| r.g > ratio * med_g && r.g > 0.0 && r.m / r.g < ratio)
        .collect()
}

/// At least three quarters of the parameters: not a frozen subset.
fn everywhere(stopped: usize, of: usize) -> bool {
    of > 0 && 4 * stopped >= 3 * of
}

fn dead_network_reason(stopped: usize, of: usize) -> String {
    format!(
        "{stopped} of {of} params have a vanished first moment (their gradient stopped) while the loss does not learn: nearly every parameter, not a frozen subset — the network stopped receiving gradient (units dead after too high an LR, O25, or the loss cut off from the graph, O3); the loss trend (S4.1) and the LR say which"
    )
}

/// The newest optimizer state's verdict on whether the gradient stopped for nearly every
/// parameter (see [`everywhere`]): the reason to give, if so.
pub(crate) fn gradient_stopped_everywhere(ctx: &ProbeCtx, ratio: f64) -> Option<String> {
    let (opt, _) = newest_optimizer(ctx.run, "O17").ok()?;
    let rows = moment_rows(&opt);
    let k = stopped_rows(&rows, ratio).len();
    everywhere(k, rows.len()).then(|| dead_network_reason(k, rows.len()))
}

/// Does the newest optimizer state show a parameter whose gradient stopped (Adam's m/√v under
/// `ratio` while v remembers a gradient): a frozen subset, or units that died? None without
/// Adam moments.
pub(crate) fn some_gradient_stopped(ctx: &ProbeCtx, ratio: f64) -> Option<bool> {
    let (opt, _) = newest_optimizer(ctx.run, "O17").ok()?;
    let rows = moment_rows(&opt);
    (!rows.is_empty()).then(|| !stopped_rows(&rows, ratio).is_empty())
}

/// The gradient stopped in every weight matrix after it had flowed (Adam's v still remembers
/// it): what is left learning is biases and norms. No one freezes a network down to its biases
/// half-way through, so the units those matrices feed have died: ReLUs pushed negative for
/// every input by too high an LR or a large negative bias, or saturated tanh/sigmoid tails.
pub(crate) struct DeadMatrices {
    /// Weight matrices with Adam state (all of them stopped).
    pub matrices: usize,
    /// Params with Adam state, and how many of them stopped.
    pub params: usize,
    pub stopped: usize,
    /// The fewest optimizer steps since the most recent matrix stopped, dated by how far m
    /// decayed against v (m shrinks by β₁ a step, √v by √β₂), when the betas allow it.
    pub steps_ago: Option<u64>,
    /// Names of some stopped matrices.
    pub names: Vec<String>,
}

fn matrices_stopped(
    ctx: &ProbeCtx,
    opt: &OptimizerState,
    rows: &[Moments],
    stopped: &[&Moments],
    names: &std::collections::HashMap<u64, String>,
) -> Option<DeadMatrices> {
    let matrices = rows.iter().filter(|r| r.matrix).count();
    let stopped_matrices: Vec<&&Moments> = stopped.iter().filter(|r| r.matrix).collect();
    // Two matrices at least (one linear layer is a probe's toy, not a network), all stopped;
    // a loss at its floor stops every gradient's mean too.
    if matrices < 2
        || stopped_matrices.len() < matrices
        || crate::probes::metric::grad_norm::loss_converged(ctx)
    {
        return None;
    }
    let newest = stopped_matrices
        .iter()
        .map(|r| r.m / r.g)
        .fold(0.0f64, f64::max);
    let (b1, b2) = opt
        .group_of(stopped_matrices[0].id)
        .and_then(|g| g.betas)
        .unwrap_or((0.9, 0.999));
    let per_step = (b1 / b2.sqrt()).ln();
    let steps_ago =
        (newest > 0.0 && per_step < 0.0).then(|| (newest.ln() / per_step).floor() as u64);
    Some(DeadMatrices {
        matrices,
        params: rows.len(),
        stopped: stopped.len(),
        steps_ago,
        names: stopped_matrices
            .iter()
            .map(|r| describe_param(r.id, names, opt))
            .collect(),
    })
}

/// The newest optimizer state's verdict on whether every weight matrix stopped receiving
/// gradient after it had flowed (see [`DeadMatrices`]), with the state's evidence.
pub(crate) fn dead_matrices(
    ctx: &ProbeCtx,
    entry: &str,
    ratio: f64,
) -> Option<(DeadMatrices, crate::probe::Evidence)> {
    let (opt, c) = newest_optimizer(ctx.run, entry).ok()?;
    let rows = moment_rows(&opt);
    let model = model_for(ctx.run, c);
    let names = param_names(&opt, model.as_ref());
    let dead = matrices_stopped(ctx, &opt, &rows, &stopped_rows(&rows, ratio), &names)?;
    Some((dead, opt_ev(&opt, c)))
}
