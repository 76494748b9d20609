//! `update_ratio` (O22): the per-step update-to-weight ratio between two checkpoints, per
//! optimizer step (see `optimizer_steps_between`: checkpoints indexed by epoch or by
//! environment timesteps are counted by the optimizer's own step counter, or not judged).

use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;
use crate::probes::checkpoint::optimizer_state::{
    index_counts_optimizer_steps, optimizer_steps_between, saved_optimizer_step,
};
use crate::probes::util::*;

pub(super) const UPDATE_RATIO: ProbeSpec = ProbeSpec {
    id: "update_ratio",
    entries: &["O22", "O7"],
    inputs: &["checkpoint:2"],
    params: &[
        "target",
        "low",
        "high",
        "outlier_ratio",
        "fail_factor",
        "early_steps",
        "grad_stopped_ratio",
    ],
    outcomes: &["pass", "low", "high", "outliers", "skip"],
    run: update_ratio,
};

// =======================================================================================
// O22 — update-to-weight ratio
// =======================================================================================

/// The mean logged LR over steps `a..=b` as a fraction of the run's peak logged LR; None when
/// the LR is not logged there or the peak is not positive.
fn lr_fraction(ctx: &ProbeCtx, a: u64, b: u64) -> Option<f64> {
    let m = ctx.run.metrics();
    let lr = m.get("learning_rate")?;
    let peak = lr
        .points
        .iter()
        .map(|p| p.value)
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    // `mean` keeps the finite values only.
    let inside: Vec<f64> = lr.range(a + 1, b).iter().map(|p| p.value).collect();
    let mean = mean(&inside)?;
    (peak > 0.0).then(|| (mean / peak).clamp(1e-6, 1.0))
}

pub fn update_ratio(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O22";
    let (target, low, high) = (p!(ctx, E, "target"), p!(ctx, E, "low"), p!(ctx, E, "high"));
    let (outlier, fail_factor) = (p!(ctx, E, "outlier_ratio"), p!(ctx, E, "fail_factor"));
    let early_steps = p!(ctx, E, "early_steps");
    // Only checkpoints whose step is known: a per-step ratio needs the steps between them.
    let cks: Vec<_> = weight_ckpts(ctx.run)
        .into_iter()
        .filter(|c| !c.step_unknown)
        .collect();
    if cks.len() < 2 {
        return vec![Verdict::skip(
            E,
            format!("needs two checkpoints with weights; found {}", cks.len()),
        )];
    }
    // The last few consecutive pairs (each pair reads both checkpoints once).
    let start = cks.len().saturating_sub(4);
    let dirs = &cks[start..];
    let mut models: Vec<Model> = Vec::new();
    for c in dirs {
        match Model::open(c) {
            Ok(m) => models.push(m),
            Err(e) => {
                return vec![Verdict::skip(
                    E,
                    format!("cannot read {}: {e}", c.path.display()),
                )]
            }
        }
    }
    struct Pair {
        a: u64,
        b: u64,
        /// Optimizer steps from a to b.
        k: f64,
        lb: f64,
        ub: f64,
        n: usize,
        outliers: Vec<String>,
        /// The logged LR over the interval as a fraction of the run's peak (1 when unknown).
        lr_frac: f64,
        /// The interval ends within the run's first `early_steps` optimizer steps.
        early: bool,
    }
    let mut pairs = Vec::new();
    // Pairs whose optimizer steps cannot be counted (epoch checkpoints without a step counter).
    let mut uncounted = 0usize;
    // Each checkpoint's saved optimizer step, read at most once (an interior checkpoint ends one
    // pair and starts the next).
    let saved: Vec<std::cell::OnceCell<Option<f64>>> =
        dirs.iter().map(|_| std::cell::OnceCell::new()).collect();
    let saved_at =
        |c: &crate::run::CheckpointDir| match dirs.iter().position(|d| std::ptr::eq(*d, c)) {
            Some(i) => *saved[i].get_or_init(|| saved_optimizer_step(c)),
            None => saved_optimizer_step(c),
        };
    for (w, d) in models.windows(2).zip(dirs.windows(2)) {
        let (a, b) = (&w[0], &w[1]);
        let Some(k) = optimizer_steps_between(ctx.run, d[0], d[1], saved_at) else {
            uncounted += 1;
            continue;
        };
        // Where the later checkpoint sits in optimizer steps: its index where that counts
        // steps, else the optimizer's own counter saved with it.
        let end_step = if index_counts_optimizer_steps(ctx.run, d[1]) {
            Some(d[1].step as f64)
        } else {
            saved_at(d[1])
        };
        let early = end_step.is_some_and(|e| e <= early_steps);
        let (mv, _) = movements(a, b, |n, i| is_trainable(n, i) && i.shape.len() >= 2);
        let rs: Vec<(String, f64)> = mv
            .iter()
            .filter(|m| {
                !m.diff.identical_bytes && m.diff.norm_a > 0.0 && m.rel.is_finite() && m.rel > 0.0
            })
            .map(|m| (m.name.clone(), m.rel))
            .collect();
        let Some(med) = median(&rs.iter().map(|(_, r)| *r).collect::<Vec<_>>()) else {
            continue;
        };
        let outliers: Vec<String> = rs
            .iter()
            .filter(|(_, r)| *r > outlier * med)
            .map(|(n, r)| format!("{n} ({:.0}× the median)", r / med))
            .collect();
        pairs.push(Pair {
            a: a.step,
            b: b.step,
            k,
            lb: med / k,
            ub: med / k.sqrt(),
            n: rs.len(),
            outliers,
            lr_frac: lr_fraction(ctx, a.step, b.step).unwrap_or(1.0),
            early,
        });
    }
    // Checkpoints indexed otherwise than by optimizer steps say how many steps each interval
    // held.
    let by_steps = dirs
        .iter()
        .all(|c| index_counts_optimizer_steps(ctx.run, c));
    let unit = if dirs.iter().all(|c| c.unit == crate::run::IndexUnit::Epoch) {
        "epoch"
    } else if by_steps {
        "step"
    } else {
        "environment timesteps"
    };
    let Some(last) = pairs.last() else {
        return vec![Verdict::skip(
            E,
            if uncounted > 0 {
                format!(
                    "the checkpoints are indexed by {unit} and save no optimizer step counter: the optimizer steps between them are unknown"
                )
            } else {
                "no weight matrix moved between checkpoints (see identical_tensors)".to_string()
            },
        )];
    };
    // The first steps from a random init move small weights by large relative amounts: the
    // ~1e-3 rule is for the steady state, so an interval that starts at the init is measured
    // held only to the failure bound (fail_factor × high), not to the warning band.
    let init_steps: Vec<u64> = cks
        .iter()
        .filter(|c| is_init_ckpt(c))
        .map(|c| c.step)
        .collect();
    // So is an interval inside the run's first early_steps optimizer steps (checkpoints at steps
    // 1 and 2; a tiny model under a constant LR with no warmup, still at 1e-2 per step between
    // steps 50 and 100). Later, a median tensor moving by more than `high` of its norm per step
    // is churn whether or not the loss still improves: a 100x LR improves it too, only less.
    let from_init = |p: &Pair| init_steps.contains(&p.a) || p.early;
    let too_high = pairs
        .iter()
        .filter(|p| {
            p.lb > if from_init(p) {
                high * fail_factor
            } else {
                high
            }
        })
        .max_by(|x, y| x.lb.total_cmp(&y.lb));
    // The ratio scales with the LR: where the schedule has already decayed the LR, the low
    // bound is held at the LR the interval actually had (a cosine tail is not a too-small LR).
    let low_at = |p: &Pair| low * p.lr_frac;
    let too_low = pairs
        .iter()
        .filter(|p| p.ub < low_at(p))
        .min_by(|x, y| (x.ub / x.lr_frac).total_cmp(&(y.ub / y.lr_frac)));
    let span = |p: &Pair| {
        if by_steps {
            format!("steps {}..{}", p.a, p.b)
        } else {
            let unit = if unit == "epoch" {
                "epochs"
            } else {
                "timesteps"
            };
            format!("{unit} {}..{} ({} optimizer steps)", p.a, p.b, p.k)
        }
    };
    let render = |p: &Pair| {
        let span = span(p);
        format!(
            "{span}: median ‖ΔW‖/‖W‖ per step ∈ [{}, {}] over {} tensors",
            fmt(p.lb),
            fmt(p.ub),
            p.n
        )
    };
    let measured = pairs.iter().map(render).collect::<Vec<_>>().join("; ");
    let ev = Evidence::file(models.last().map(|m| m.path().to_path_buf()).unwrap_or_default()).steps(pairs[0].a, last.b).note("per-step range: net change / Δsteps (consistent direction) … net change / √Δsteps (random walk)");
    // Below the warning band but inside the failure band, the ratio is judged by its effect:
    // tiny steps once the loss has converged are a minimum.
    use crate::probes::metric::grad_norm::loss_converged;
    let mild_low = too_high.is_none()
        && too_low.is_some_and(|p| p.ub >= low_at(p) / fail_factor)
        && loss_converged(ctx);
    // Steps this small because the gradient itself stopped (Adam's first moments vanished for
    // nearly every parameter) are no sign of a small LR: a dead network is not an O7.
    if too_high.is_none()
        && too_low.is_some()
        && !crate::probes::metric::grad_norm::loss_improving(ctx)
    {
        if let Some(why) = crate::probes::checkpoint::frozen_drift::gradient_stopped_everywhere(
            ctx,
            p!(ctx, E, "grad_stopped_ratio"),
        ) {
            return vec![Verdict::skip(
                E,
                format!("the weights barely move, but not for a small LR: {why}"),
            )
            .measured(measured)
            .evidence(ev)];
        }
    }
    let (st, out, msg) = if mild_low {
        (
            Status::Pass,
            "pass",
            format!("per-step ratios below {low}, but within {fail_factor}× of it after the loss converged to its floor: a minimum, not a stalled LR"),
        )
    } else if let Some(p) = too_high {
        let st = if p.lb > fail_factor * high {
            Status::Fail
        } else {
            Status::Warn
        };
        (st, "high", format!("even the lower bound of the per-step update ratio exceeds {high} ({}): steps this large churn the weights — lower the LR or check that it is not scaled up (accumulation, batch-size scaling)", span(p)))
    } else if let Some(p) = too_low {
        let st = if p.ub < low_at(p) / fail_factor {
            Status::Fail
        } else {
            Status::Warn
        };
        let held = if p.lr_frac < 1.0 {
            format!(
                " ({low} scaled to the LR of that interval, {:.0}% of its peak)",
                100.0 * p.lr_frac
            )
        } else {
            String::new()
        };
        (st, "low", format!("even the upper bound of the per-step update ratio is below {}{held} ({}): the weights barely move — the LR is too small (O7: raise it, find it with a range test), mostly zero, or updates are lost", fmt(low_at(p)), span(p)))
    } else if let Some(p) = pairs.iter().rev().find(|p| !p.outliers.is_empty()) {
        (Status::Warn, "outliers", format!("most tensors update normally but some move over {outlier}× faster than the median ({}): {} — a per-parameter LR multiplier or an unnormalised layer", span(p), list_some(&p.outliers, 3)))
    } else {
        (
            Status::Pass,
            "pass",
            format!("update-to-weight ratios are plausible around the {target} rule of thumb"),
        )
    };
    // The cure names the finding: a ratio far too low is an LR too low (O7), with the ratio
    // (O22's measurement) as the evidence.
    let entry = if out == "low" && st == Status::Fail {
        "O7"
    } else {
        E
    };
    vec![Verdict::new(entry, st, out)
        .measured(measured)
        .expected(format!("per step ≈ {target}; warn outside [{low}, {high}], fail beyond {fail_factor}× past either; a tensor over {outlier}× the median warns"))
        .message(msg)
        .evidence(ev)
        .value("median_per_step_lb", last.lb)
        .value("median_per_step_ub", last.ub)]
}
