//! Logged activation series: `activation_growth`, `dead_units`.

use crate::metrics::Series;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::util::*;

/// Series whose name mentions `needle` and carries a layer index, as (index, last value).
fn layered(ctx: &ProbeCtx, needles: &[&str]) -> Vec<(u64, f64, String)> {
    let mut out = Vec::new();
    for s in &ctx.run.metrics().series {
        let n = s.name.to_ascii_lowercase();
        if !needles.iter().any(|k| n.contains(k)) {
            continue;
        }
        let idx: String = n
            .chars()
            .rev()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit())
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if let (Ok(i), Some(v)) = (
            idx.parse::<u64>(),
            s.points.iter().rev().find(|p| p.value.is_finite()),
        ) {
            out.push((i, v.value, s.tag.clone()));
        }
    }
    out.sort_by_key(|x| x.0);
    out
}
pub(super) const ACTIVATION_GROWTH: ProbeSpec = ProbeSpec {
    id: "activation_growth",
    entries: &["S5.2"],
    inputs: &["metrics:act_norm/layer_N"],
    params: &["max_growth", "warn_growth"],
    outcomes: &["pass", "exploding", "skip"],
    run: activation_growth,
};

pub fn activation_growth(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (max_g, warn_g) = (p!(ctx, "max_growth"), p!(ctx, "warn_growth"));
    let layers = layered(ctx, &["activation", "act_norm", "acts/", "activations"]);
    if layers.len() < 2 {
        return vec![Verdict::skip("S5.2", "no per-layer activation norms logged (forward one batch with hooks and log e.g. act_norm/layer_N)")];
    }
    let mut worst = (0.0f64, String::new());
    for w in layers.windows(2) {
        if w[0].1 > 0.0 {
            let g = w[1].1 / w[0].1;
            if g > worst.0 {
                worst = (g, w[1].2.clone());
            }
        }
    }
    let (st, out) = if worst.0 > max_g {
        (Status::Fail, "exploding")
    } else if worst.0 > warn_g {
        (Status::Warn, "pass")
    } else {
        (Status::Pass, "pass")
    };
    vec![Verdict::new("S5.2", st, out)
        .measured(format!(
            "largest layer-to-layer growth ×{:.2} at {}",
            worst.0, worst.1
        ))
        .expected(format!("≤ ×{warn_g} per layer; fail above ×{max_g}"))
        .message(if st == Status::Fail {
            "a layer amplifies its input more than 10×: missing or misplaced LayerNorm/RMSNorm"
        } else {
            "activation norms grow gently"
        })]
}
pub(super) const DEAD_UNITS: ProbeSpec = ProbeSpec {
    id: "dead_units",
    entries: &["O25"],
    inputs: &["metrics:dead_frac", "optimizer"],
    params: &["dead_frac", "rise", "edge_frac", "grad_stopped_ratio"],
    outcomes: &["pass", "dying", "skip"],
    run: dead_units,
};

pub fn dead_units(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (dead, rise, edge) = (p!(ctx, "dead_frac"), p!(ctx, "rise"), p!(ctx, "edge_frac"));
    let series: Vec<&Series> = ctx
        .run
        .metrics()
        .series
        .iter()
        .filter(|s| {
            let n = s.name.to_ascii_lowercase();
            n.contains("dead") || n.contains("zero_frac") || n.contains("sparsity")
        })
        .collect();
    if series.is_empty() {
        return dead_by_moments(ctx);
    }
    let mut worst: Option<(f64, f64, &Series)> = None;
    for s in series {
        let (Some(h), Some(t)) = (head_mean(s, edge), tail_mean(s, edge)) else {
            continue;
        };
        if worst.is_none_or(|w| t > w.1) {
            worst = Some((h, t, s));
        }
    }
    let Some((h, t, s)) = worst else {
        return vec![Verdict::skip("O25", "no finite values")];
    };
    let (st, out) = if t >= dead {
        (Status::Fail, "dying")
    } else if t - h > rise {
        (Status::Warn, "dying")
    } else {
        (Status::Pass, "pass")
    };
    vec![Verdict::new("O25", st, out)
        .measured(format!("{}: {:.0}% → {:.0}%", s.tag, 100.0 * h, 100.0 * t))
        .expected(format!("stable, below {:.0}%", 100.0 * dead))
        .message(if st == Status::Pass {
            "dead fraction stable"
        } else {
            "units are dying: lower the LR, switch ReLU → LeakyReLU/GELU, fix large negative biases"
        })
        .evidence(whole_series_evidence(s))]
}

/// With no dead fraction logged, Adam's moments can still show the extreme: every weight
/// matrix's gradient stopped after it had flowed, so the units they feed died (see
/// `frozen_drift::DeadMatrices`). Less than that (some units of a layer dead) they cannot see.
fn dead_by_moments(ctx: &ProbeCtx) -> Vec<Verdict> {
    let ratio = p!(ctx, "grad_stopped_ratio");
    let Some((d, ev)) = crate::probes::checkpoint::frozen_drift::dead_matrices(ctx, "O25", ratio)
    else {
        return vec![Verdict::skip(
            "O25",
            "no dead-unit / zero-activation fraction logged, and no optimizer state in which every weight matrix's gradient stopped",
        )];
    };
    let when = match d.steps_ago {
        Some(k) => format!(", the most recent at least {k} optimizer steps ago"),
        None => String::new(),
    };
    vec![Verdict::new("O25", Status::Fail, "dying")
        .measured(format!(
            "every one of the {} weight matrices has Adam's first moment ~0 while its second moment remembers a gradient ({} of {} params stopped{when}): {}",
            d.matrices,
            d.stopped,
            d.params,
            crate::probes::checkpoint::model::list_some(&d.names, 4)
        ))
        .expected(format!(
            "RMS(m)/√RMS(v) ≥ {ratio} in the weight matrices that train"
        ))
        .message("the gradient stopped reaching every weight matrix after it had flowed, and only biases still learn: the units those matrices feed died (ReLUs pushed negative for every input, or saturated tanh/sigmoid), so the net tends to a constant prediction — lower the LR, use LeakyReLU/GELU, check for large negative biases, and clip gradients")
        .evidence(ev)]
}
