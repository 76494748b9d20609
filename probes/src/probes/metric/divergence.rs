//! Divergence mid-run: `nan_onset` (what moved in the steps before the first non-finite loss:
//! fp16 overflow P1, or a precursor F22) and `late_spikes` (a transformer's late loss spikes
//! riding grad-norm spikes, F20).

use crate::metrics::{Point, Series};
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::util::*;

pub(super) const NAN_ONSET: ProbeSpec = ProbeSpec {
    id: "nan_onset",
    entries: &["P1", "F22"],
    inputs: &[
        "metrics:loss",
        "metrics:grad_norm",
        "metrics:loss_scale",
        "metrics:learning_rate",
        "fact:precision",
    ],
    params: &[
        "min_finite",
        "window_steps",
        "rise_factor",
        "scale_drop_log2",
    ],
    outcomes: &["pass", "fp16_overflow", "precursor", "sudden", "skip"],
    run: nan_onset,
};

/// The first non-finite point after at least `min_finite` finite ones.
fn onset(s: &Series, min_finite: usize) -> Option<&Point> {
    let i = s.points.iter().position(|p| !p.value.is_finite())?;
    (i >= min_finite).then(|| &s.points[i])
}

/// Finite values of `s` in steps [lo, hi).
fn finite_in(s: &Series, lo: u64, hi: u64) -> Vec<f64> {
    s.points
        .iter()
        .filter(|p| p.step >= lo && p.step < hi && p.value.is_finite())
        .map(|p| p.value)
        .collect()
}

pub fn nan_onset(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (min_finite, window, rise, drop_log2) = (
        p!(ctx, "P1", "min_finite") as usize,
        p!(ctx, "P1", "window_steps").max(1.0) as u64,
        p!(ctx, "P1", "rise_factor"),
        p!(ctx, "P1", "scale_drop_log2"),
    );
    let m = ctx.run.metrics();
    let (loss, gn) = (m.get("loss"), m.get("grad_norm"));
    if loss.is_none() && gn.is_none() {
        return vec![Verdict::skip("P1", "no `loss` or `grad_norm` series")];
    }
    let first = [loss, gn]
        .into_iter()
        .flatten()
        .filter_map(|s| onset(s, min_finite.max(1)).map(|p| (s, p)))
        .min_by_key(|(_, p)| p.step);
    let Some((s, at)) = first else {
        let any_nan = [loss, gn]
            .into_iter()
            .flatten()
            .any(|s| s.points.iter().any(|p| !p.value.is_finite()));
        if any_nan {
            return vec![Verdict::skip(
                "P1",
                "non-finite from the first logged steps: loss_degenerate judges a run that never had a finite start",
            )];
        }
        let s = loss.or(gn).expect("one series");
        let (a, b) = (s.points[0].step, s.points[s.points.len() - 1].step);
        return vec![Verdict::new("P1", Status::Pass, "pass")
            .measured(format!("`{}` finite at every logged step", s.name))
            .expected("no non-finite loss or grad norm after a finite start")
            .message("the run never went non-finite")
            .evidence(series_evidence(s, a, b))];
    };
    let step = at.step;
    let lo = step.saturating_sub(window);
    let start = s.points[0].step;
    // Precursors, each measured in steps before the onset.
    let mut precursors: Vec<String> = Vec::new();
    let mut values: Vec<(&'static str, f64)> = Vec::new();
    if let Some(g) = gn {
        let before = finite_in(g, start, lo);
        let near = finite_in(g, lo, step);
        if let (Some(base), Some(peak)) = (
            median(&before),
            near.iter()
                .copied()
                .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x)))),
        ) {
            if base > 0.0 && peak / base >= rise {
                precursors.push(format!(
                    "the grad norm rose {:.0}× (median {} → {}) in the {window} steps before",
                    peak / base,
                    fmt(base),
                    fmt(peak)
                ));
                values.push(("grad_norm_rise", peak / base));
            }
        }
    }
    let scale = m.get("loss_scale");
    if let Some(sc) = scale {
        let before: Vec<f64> = finite_in(sc, start, lo)
            .into_iter()
            .filter(|v| *v > 0.0)
            .collect();
        let near: Vec<f64> = finite_in(sc, lo, step + 1)
            .into_iter()
            .filter(|v| *v > 0.0)
            .collect();
        if let (Some(hi), Some(lo_v)) = (
            before.iter().copied().reduce(f64::max),
            near.iter().copied().reduce(f64::min),
        ) {
            let d = hi.log2() - lo_v.log2();
            if d >= drop_log2 {
                precursors.push(format!(
                    "the loss scale fell 2^{d:.0} (to {}) around the onset",
                    fmt(lo_v)
                ));
                values.push(("scale_drop_log2", d));
            }
        }
    }
    if let Some(lr) = m.get("learning_rate") {
        let fin: Vec<&Point> = lr.points.iter().filter(|p| p.value.is_finite()).collect();
        if let Some(peak) = fin
            .iter()
            .max_by(|a, b| a.value.total_cmp(&b.value))
            .filter(|p| p.step > fin[0].step)
        {
            if peak.step <= step && step - peak.step <= window {
                precursors.push(format!(
                    "the LR reached its peak {} at step {}, {} steps before",
                    fmt(peak.value),
                    peak.step,
                    step - peak.step
                ));
            }
        }
    }
    let fp16 = match ctx.facts.get("precision") {
        Some(p) => p == "fp16",
        None => scale.is_some(),
    };
    let prec_note = match ctx.facts.get("precision") {
        Some(p) => format!("precision {p}"),
        None if scale.is_some() => "a GradScaler loss scale is logged (fp16)".to_string(),
        None => "precision unknown (pass --fact precision=fp16|bf16|fp32)".to_string(),
    };
    let measured = format!(
        "`{}` non-finite first at step {step} after {} finite points; {prec_note}{}",
        s.name,
        s.points.iter().take_while(|p| p.value.is_finite()).count(),
        if precursors.is_empty() {
            String::new()
        } else {
            format!("; {}", precursors.join("; "))
        }
    );
    let ev = series_evidence(s, lo.max(start), step);
    let mut v = if fp16 {
        Verdict::new("P1", Status::Fail, "fp16_overflow")
            .expected("finite values throughout; fp16 activations below 65504")
            .message("the run went non-finite mid-training in fp16: an activation or the loss overflowed the 65504 range (the GradScaler guards gradients only) — train in bf16 (bf16=True) where the GPU has it, compute the loss/softmax in fp32, never model.half() for training")
    } else if !precursors.is_empty() {
        Verdict::new("F22", Status::Fail, "precursor")
            .expected("no quantity running away before the first non-finite value")
            .message(format!(
                "the non-finite value at step {step} was announced: {} — the cause is in those steps, not at the crash: lower the LR or lengthen warm-up, clip gradients (max_grad_norm=1.0), and wrap the model in DebugUnderflowOverflow on a resume from the last good checkpoint to see which module climbs",
                precursors.join("; ")
            ))
    } else {
        Verdict::new("F22", Status::Warn, "sudden")
            .expected("a precursor in the logged series before the first non-finite value")
            .message(format!(
                "nothing in the logged loss / grad norm / LR moved before step {step}: suspect the batch at that step (bad sample, inf in the input) or an overflow inside one module — resume from the last good checkpoint with DebugUnderflowOverflow(model) and torch.autograd.set_detect_anomaly(True)"
            ))
    };
    v = v
        .measured(measured)
        .evidence(ev)
        .value("onset_step", step as f64);
    for (k, x) in values {
        v = v.value(k, x);
    }
    vec![v]
}

pub(super) const LATE_SPIKES: ProbeSpec = ProbeSpec {
    id: "late_spikes",
    entries: &["F20"],
    inputs: &[
        "metrics:loss",
        "metrics:grad_norm",
        "fact:vocab_size",
        "fact:model_type",
    ],
    params: &[
        "late_frac",
        "median_points",
        "loss_jump",
        "grad_jump",
        "match_steps",
        "min_points",
    ],
    outcomes: &["pass", "spikes", "skip"],
    run: late_spikes,
};

/// Model families whose attention normalises queries and keys.
const QK_NORM: &[&str] = &[
    "qwen3",
    "qwen3_moe",
    "olmo2",
    "olmoe",
    "gemma3",
    "gemma3_text",
    "chameleon",
];

/// Points of `s` (from index `from`) whose value exceeds `(1 + jump)` × the median of the
/// `k` finite points before them.
fn jumps(s: &Series, from: usize, k: usize, factor: f64) -> Vec<(u64, f64, f64)> {
    let mut out = Vec::new();
    for i in from.max(k)..s.points.len() {
        let v = s.points[i].value;
        if !v.is_finite() {
            continue;
        }
        let prev: Vec<f64> = s.points[i - k..i]
            .iter()
            .map(|p| p.value)
            .filter(|x| x.is_finite())
            .collect();
        if let Some(med) = median(&prev).filter(|m| *m > 0.0) {
            if v > med * factor {
                out.push((s.points[i].step, v, med));
            }
        }
    }
    out
}

pub fn late_spikes(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (late, k, lj, gj, tol, min_pts) = (
        p!(ctx, "F20", "late_frac"),
        p!(ctx, "F20", "median_points").max(3.0) as usize,
        p!(ctx, "F20", "loss_jump"),
        p!(ctx, "F20", "grad_jump"),
        p!(ctx, "F20", "match_steps") as u64,
        p!(ctx, "F20", "min_points") as usize,
    );
    let transformer = ctx.facts.get("vocab_size").is_some()
        || matches!(ctx.facts.get("domain"), Some("llm" | "vlm"));
    if !transformer {
        return vec![Verdict::skip(
            "F20",
            "not a transformer language model (no vocab_size / domain llm)",
        )];
    }
    let model_type = ctx
        .facts
        .get("model_type")
        .unwrap_or("")
        .to_ascii_lowercase();
    if QK_NORM.contains(&model_type.as_str()) {
        return vec![Verdict::new("F20", Status::Pass, "pass")
            .measured(format!(
                "model_type {model_type} normalises queries and keys"
            ))
            .expected("QK-norm in a transformer that diverges late")
            .message(
                "this family already has QK-norm: late spikes are not attention-logit growth",
            )];
    }
    let m = ctx.run.metrics();
    let (Some(loss), Some(gn)) = (m.get("loss"), m.get("grad_norm")) else {
        return vec![Verdict::skip(
            "F20",
            "needs both `loss` and `grad_norm` series",
        )];
    };
    if loss.points.len() < min_pts || gn.points.len() < min_pts {
        return vec![Verdict::skip(
            "F20",
            format!("fewer than {min_pts} logged points: too short to tell late spikes from noise"),
        )];
    }
    let (a, b) = (loss.points[0].step, loss.points[loss.points.len() - 1].step);
    let from_step = a + ((b - a) as f64 * late) as u64;
    let li = loss.points.partition_point(|p| p.step < from_step);
    let gi = gn.points.partition_point(|p| p.step < from_step);
    let lspikes = jumps(loss, li, k, 1.0 + lj);
    let gspikes = jumps(gn, gi, k, gj);
    let both: Vec<&(u64, f64, f64)> = lspikes
        .iter()
        .filter(|(s, _, _)| gspikes.iter().any(|(g, _, _)| g.abs_diff(*s) <= tol))
        .collect();
    let measured = format!(
        "after step {from_step}: {} loss jump(s) > {:.0}% over the running median, {} grad-norm jump(s) > {gj}×, {} together",
        lspikes.len(),
        lj * 100.0,
        gspikes.len(),
        both.len()
    );
    let Some(&&(s0, v0, m0)) = both.first() else {
        return vec![Verdict::new("F20", Status::Pass, "pass")
            .measured(measured)
            .expected("no late loss spike riding a grad-norm spike")
            .message("the late run is free of coupled loss / grad-norm spikes")
            .evidence(series_evidence(loss, from_step, b))];
    };
    vec![Verdict::new("F20", Status::Warn, "spikes")
        .measured(format!(
            "{measured}; first at step {s0}: loss {} vs median {}",
            fmt(v0),
            fmt(m0)
        ))
        .expected("no late loss spike riding a grad-norm spike")
        .message("late in the run the loss jumps together with the grad norm, in a transformer without QK-norm: the classic sign of attention logits growing without bound — add QK normalisation (qk_norm=True: LayerNorm/RMSNorm on q and k before the dot product), keep clipping, and log the max attention logit to confirm")
        .evidence(series_evidence(loss, s0, both[both.len() - 1].0))
        .value("coupled_spikes", both.len() as f64)]
}
