//! Systems signals in the metric logs: `memory_growth` (allocated memory climbing step after
//! step, M2), `data_wait` (data time a large share of each step, T1) and `eval_zero`
//! (a detection mAP exactly 0 at every evaluation while the loss falls, V3).

use crate::metrics::{MetricSet, Series};
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::util::*;

pub(super) const MEMORY_GROWTH: ProbeSpec = ProbeSpec {
    id: "memory_growth",
    entries: &["M2"],
    inputs: &["metrics:memory allocated / reserved"],
    params: &["warm_frac", "min_points", "warn_growth", "fail_growth"],
    outcomes: &["pass", "growing", "skip"],
    run: memory_growth,
};

/// The memory series of a run: names with `mem` and one of alloc / reserved / gpu / cuda
/// (an allocated one first: reserved memory follows the caching allocator), else a process
/// resident-set series (`rss`: a CPU run's memory).
fn memory_series(m: &MetricSet) -> Option<&Series> {
    let names = m.names();
    let pick = |want: &str| {
        names.iter().find(|n| {
            n.contains(want)
                && (n.contains("mem") || want == "rss")
                && !n.contains("percent")
                && !n.contains("eval")
                && (want == "rss" || !n.contains("cpu"))
        })
    };
    ["alloc", "reserved", "gpu", "cuda", "rss"]
        .iter()
        .find_map(|w| pick(w))
        .and_then(|n| m.get(n))
}

pub fn memory_growth(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (warm, min_pts, warn_g, fail_g) = (
        p!(ctx, "M2", "warm_frac"),
        p!(ctx, "M2", "min_points") as usize,
        p!(ctx, "M2", "warn_growth"),
        p!(ctx, "M2", "fail_growth"),
    );
    let Some(s) = memory_series(ctx.run.metrics()) else {
        return vec![Verdict::skip(
            "M2",
            "no GPU-memory series in the logs (log torch.cuda.memory_allocated() every N steps)",
        )];
    };
    let pts: Vec<(u64, f64)> = s
        .points
        .iter()
        .filter(|p| p.value.is_finite() && p.value > 0.0)
        .map(|p| (p.step, p.value))
        .collect();
    if pts.len() < min_pts {
        return vec![Verdict::skip(
            "M2",
            format!(
                "`{}` has {} points, fewer than {min_pts}",
                s.name,
                pts.len()
            ),
        )];
    }
    let (a, b) = (pts[0].0, pts[pts.len() - 1].0);
    let from = a + ((b - a) as f64 * warm) as u64;
    let judged: Vec<(u64, f64)> = pts.into_iter().filter(|p| p.0 >= from).collect();
    // Four quarters of the judged span, in steps; a leak raises every one above the last.
    let span = (b - from).max(1);
    let quarter_median = |q: u64| {
        let (lo, hi) = (from + span * q / 4, from + span * (q + 1) / 4);
        let v: Vec<f64> = judged
            .iter()
            .filter(|p| p.0 >= lo && (p.0 < hi || (q == 3 && p.0 <= hi)))
            .map(|p| p.1)
            .collect();
        median(&v)
    };
    let qs: Vec<f64> = (0..4).filter_map(quarter_median).collect();
    if qs.len() < 4 {
        return vec![Verdict::skip(
            "M2",
            format!(
                "`{}` does not cover the run evenly enough to compare its quarters",
                s.name
            ),
        )];
    }
    let rising = qs.windows(2).all(|w| w[1] > w[0]);
    let growth = qs[3] / qs[0] - 1.0;
    let measured = format!(
        "`{}` quarter medians after step {from}: {} ({:+.0}%)",
        s.name,
        qs.iter().map(|x| fmt(*x)).collect::<Vec<_>>().join(" → "),
        growth * 100.0
    );
    let (st, out, msg) = if rising && growth >= fail_g {
        (Status::Fail, "growing", "GPU memory climbs in every quarter of the run: something keeps each step's graph alive (total_loss += loss instead of loss.item(), logits appended to a list) — detach and .cpu() what you keep, wrap evaluation in torch.no_grad(), and find the holder with torch.cuda.memory._record_memory_history()")
    } else if rising && growth >= warn_g {
        (Status::Warn, "growing", "GPU memory keeps rising after warm-up: a slow leak, or the caching allocator still adapting to new shapes — watch whether it levels off; if not, look for tensors kept across steps")
    } else {
        (Status::Pass, "pass", "GPU memory levels off after warm-up")
    };
    vec![Verdict::new("M2", st, out)
        .measured(measured)
        .expected(format!(
            "flat after warm-up (growth < {:.0}% across the judged span)",
            warn_g * 100.0
        ))
        .message(msg)
        .evidence(series_evidence(s, from, b))
        .value("growth", growth)]
}

pub(super) const DATA_WAIT: ProbeSpec = ProbeSpec {
    id: "data_wait",
    entries: &["T1"],
    inputs: &["metrics:data_time", "metrics:step time"],
    params: &["warn_share", "fail_share", "skip_points"],
    outcomes: &["pass", "data_bound", "skip"],
    run: data_wait,
};

const DATA_TIME: &[&str] = &[
    "data_time",
    "time/data",
    "data",
    "dataloader_time",
    "data_wait",
    "time_data",
    "perf/data_time",
];
const STEP_TIME: &[&str] = &[
    "time",
    "batch_time",
    "step_time",
    "iter_time",
    "time/step",
    "time/iter",
    "time_per_step",
    "perf/step_time",
];

pub fn data_wait(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (warn_s, fail_s, skip_n) = (
        p!(ctx, "T1", "warn_share"),
        p!(ctx, "T1", "fail_share"),
        p!(ctx, "T1", "skip_points") as usize,
    );
    let m = ctx.run.metrics();
    let (Some((_, d)), Some((_, t))) = (
        super::first_series(m, DATA_TIME),
        super::first_series(m, STEP_TIME),
    ) else {
        return vec![Verdict::skip(
            "T1",
            "needs a data-time and a step-time series (e.g. mmengine's `data_time` and `time`)",
        )];
    };
    // The first iterations start the workers: leave them out.
    let vals = |s: &Series| -> Vec<f64> {
        s.points
            .iter()
            .skip(skip_n.min(s.points.len().saturating_sub(1)))
            .map(|p| p.value)
            .filter(|v| v.is_finite() && *v >= 0.0)
            .collect()
    };
    let (Some(dm), Some(tm)) = (median(&vals(d)), median(&vals(t))) else {
        return vec![Verdict::skip("T1", "the time series hold no finite value")];
    };
    if tm <= 0.0 {
        return vec![Verdict::skip("T1", "step time is 0")];
    }
    // Most loggers count the data wait inside the step time; one that does not logs a data
    // time longer than the step.
    let share = if dm <= tm { dm / tm } else { dm / (dm + tm) };
    let (st, out, msg) = if share >= fail_s {
        (Status::Fail, "data_bound", "the GPU waits for data most of each step: raise DataLoader num_workers (about the CPU cores per GPU), pin_memory=True, persistent_workers=True, prefetch_factor, and pre-tokenise / pre-resize once instead of in the loop")
    } else if share >= warn_s {
        (Status::Warn, "data_bound", "data loading takes a large share of each step: more DataLoader workers or lighter per-sample work would speed the run up")
    } else {
        (
            Status::Pass,
            "pass",
            "data loading is a small share of each step",
        )
    };
    let (a, b) = (t.points[0].step, t.points[t.points.len() - 1].step);
    vec![Verdict::new("T1", st, out)
        .measured(format!(
            "median `{}` {} of median `{}` {}: {:.0}% of each step",
            d.name,
            fmt(dm),
            t.name,
            fmt(tm),
            share * 100.0
        ))
        .expected(format!("data time < {:.0}% of the step", warn_s * 100.0))
        .message(msg)
        .evidence(series_evidence(d, a, b))
        .value("data_share", share)]
}

pub(super) const EVAL_ZERO: ProbeSpec = ProbeSpec {
    id: "eval_zero",
    entries: &["V3"],
    inputs: &["metrics:mAP", "metrics:loss"],
    params: &[
        "min_evals",
        "zero_abs",
        "loss_fall",
        "near_zero",
        "near_min_evals",
        "detector_fall",
    ],
    outcomes: &["pass", "zero", "skip"],
    run: eval_zero,
};

/// The detection mAP series: a name with the token `map` (`eval_map`, `bbox_map`,
/// `metrics/map50(b)`, `map_50`), never `heatmap` or `mapping`.
fn map_series(m: &MetricSet) -> Option<&Series> {
    // The vocabulary's meanings first (mAP50, then mAP@[.5:.95]): the number a detector's
    // first matches move soonest.
    if let Some(s) = ["eval_map50", "eval_map"].iter().find_map(|n| m.get(n)) {
        return Some(s);
    }
    let names = m.names();
    let is_map = |n: &str| {
        n.match_indices("map").any(|(i, _)| {
            let before = n[..i].chars().next_back();
            let after = n[i + 3..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphabetic())
                && !after.is_some_and(|c| c.is_ascii_alphabetic())
        })
    };
    let mut found: Vec<&str> = names.into_iter().filter(|n| is_map(n)).collect();
    // Prefer the headline number (mAP@[.5:.95] or mAP50) over per-size breakdowns.
    found.sort_by_key(|n| {
        (
            n.contains("_s") || n.contains("_m") || n.contains("_l"),
            n.len(),
        )
    });
    found.first().and_then(|n| m.get(n))
}

pub fn eval_zero(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (min_evals, zero, fall, near, near_evals) = (
        p!(ctx, "V3", "min_evals") as usize,
        p!(ctx, "V3", "zero_abs"),
        p!(ctx, "V3", "loss_fall"),
        p!(ctx, "V3", "near_zero"),
        p!(ctx, "V3", "near_min_evals") as usize,
    );
    let m = ctx.run.metrics();
    let Some(s) = map_series(m) else {
        return vec![Verdict::skip("V3", "no mAP series in the logs")];
    };
    let vals: Vec<f64> = s
        .points
        .iter()
        .map(|p| p.value)
        .filter(|v| v.is_finite())
        .collect();
    let (a, b) = (s.points[0].step, s.points[s.points.len() - 1].step);
    // Near zero and not growing is the same failure as exactly zero: a few accidental matches
    // (mAP50 ≈ 0.01 at every evaluation) are not a detector that learns.
    let best_abs = vals.iter().map(|v| v.abs()).fold(0.0, f64::max);

    let stuck = best_abs <= near && vals.len() >= near_evals;
    if vals.iter().any(|v| v.abs() > zero) && !stuck {
        let best = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        return vec![Verdict::new("V3", Status::Pass, "pass")
            .measured(format!(
                "`{}` reaches {} over {} evaluations",
                s.name,
                fmt(best),
                vals.len()
            ))
            .expected("mAP above 0 once the loss has fallen")
            .message("the evaluation finds matches: boxes and classes line up")
            .evidence(series_evidence(s, a, b))];
    }
    if vals.len() < min_evals {
        return vec![Verdict::skip(
            "V3",
            format!(
                "`{}` is 0 at {} evaluation(s): too few to tell a slow start from a broken evaluation",
                s.name,
                vals.len()
            ),
        )];
    }
    let Some(loss) = m.get("loss").filter(|l| l.points.len() >= 4) else {
        return vec![Verdict::skip(
            "V3",
            format!(
                "`{}` is 0 at every evaluation but there is no training loss to compare",
                s.name
            ),
        )];
    };
    // A detector's summed loss rises while its assigner matches more boxes (see `loss_trend`):
    // for a detection run whose loss peaks in the first half, "fell" is from that peak on, and
    // any steady fall (`detector_fall`) shows training works.
    let pts = finite_points(loss);
    let peak = super::loss::detector_loss_peak(ctx, &pts, 4);
    let detector = peak.is_some();
    let (hm, tm) = if let Some(peak) = peak {
        let after = &pts[peak..];
        let k = (after.len() / 5).max(1);
        let mean = |x: &[(u64, f64)]| x.iter().map(|p| p.1).sum::<f64>() / x.len() as f64;
        (
            Some(mean(&after[..k])),
            Some(mean(&after[after.len() - k..])),
        )
    } else {
        (head_mean(loss, 0.2), tail_mean(loss, 0.2))
    };
    let fall = if detector {
        p!(ctx, "V3", "detector_fall")
    } else {
        fall
    };
    let (Some(h), Some(t)) = (hm, tm) else {
        return vec![Verdict::skip("V3", "the loss has no finite head and tail")];
    };
    if !(t > 0.0 && h >= t * (1.0 + fall)) {
        return vec![Verdict::skip(
            "V3",
            format!(
                "`{}` is 0, but the loss is not falling either ({} → {}): a convergence problem first",
                s.name,
                fmt(h),
                fmt(t)
            ),
        )];
    }
    let how = if best_abs <= zero {
        "exactly 0".to_string()
    } else {
        format!("at most {} (near 0)", fmt(best_abs))
    };
    vec![Verdict::new("V3", Status::Fail, "zero")
        .measured(format!(
            "`{}` {how} at all {} evaluations while the loss fell {} → {}",
            s.name,
            vals.len(),
            fmt(h),
            fmt(t)
        ))
        .expected("mAP above 0 once the loss has fallen")
        .message("the model learns but no prediction ever matches a target: the evaluation reads boxes in another format or scale (xywh vs xyxy, normalised vs pixels) or the class ids are offset — draw a few targets and predictions on their images, and check the dataset's box format and category-id mapping")
        .evidence(series_evidence(s, a, b))
        .value("evaluations", vals.len() as f64)]
}
