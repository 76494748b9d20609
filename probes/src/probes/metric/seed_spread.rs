//! `seed_spread`: the spread of final metrics across seeds (runs, not log files).

use crate::metrics::Series;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::Run;

use crate::probes::util::*;

/// Whether two series are one run logged twice (metrics.csv and TensorBoard, a trainer state
/// and TensorBoard): they share at least one step and agree at every shared step.
fn same_run(a: &Series, b: &Series, tol: f64) -> bool {
    // Two logs of one folder are one run's (a progress log and an epoch summary), and so are
    // logs one of whose folders holds the other (progress.csv beside a tb/ folder of the same
    // loop): a seed is never inside another seed's folder, they sit side by side. A series
    // counted in epochs is never another seed of one counted in steps.
    let nested = match (a.source.parent(), b.source.parent()) {
        (Some(pa), Some(pb)) => pa.starts_with(pb) || pb.starts_with(pa),
        _ => false,
    };
    if a.unit != b.unit || nested {
        return true;
    }
    let mut shared = 0usize;
    for p in &b.points {
        let Some(q) = a.value_at_or_before(p.step).filter(|q| q.step == p.step) else {
            continue;
        };
        match (p.value.is_finite(), q.value.is_finite()) {
            (true, true) => {
                let scale = p.value.abs().max(q.value.abs());
                if (p.value - q.value).abs() > tol * scale {
                    return false;
                }
                shared += 1;
            }
            (false, false) => {}
            _ => return false,
        }
    }
    shared > 0
}

/// The distinct training runs among series of one metric: ranks other than 0 belong to the
/// run of their rank 0, and copies of one run in several log files count once.
fn distinct_runs(series: Vec<&Series>, tol: f64) -> Vec<&Series> {
    let primary = |s: &&Series| matches!(s.rank, None | Some(0));
    let has_primary = series.iter().any(primary);
    let mut cands: Vec<&Series> = series
        .into_iter()
        .filter(|s| !has_primary || primary(s))
        .collect();
    cands.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.source.cmp(&b.source)));
    let mut kept: Vec<&Series> = Vec::new();
    for s in cands {
        if !kept.iter().any(|k| same_run(k, s, tol)) {
            kept.push(s);
        }
    }
    kept
}

/// Pooled within-group sample standard deviation over groups with ≥ 2 values.
fn pooled_std(groups: &[&[f64]]) -> Option<f64> {
    let (mut ss, mut dof) = (0.0, 0usize);
    for g in groups {
        if let Some(sd) = std_dev(g) {
            let k = g.iter().filter(|x| x.is_finite()).count() - 1;
            ss += sd * sd * k as f64;
            dof += k;
        }
    }
    (dof > 0).then(|| (ss / dof as f64).sqrt())
}
pub(super) const SEED_SPREAD: ProbeSpec = ProbeSpec {
    id: "seed_spread",
    entries: &["R6", "F16"],
    inputs: &[
        "metrics:reward|eval_loss|loss (several runs)",
        "baseline",
        "fact:claimed_effect",
    ],
    params: &[
        "min_seeds",
        "tail_frac",
        "same_run_rel_tol",
        "min_effect_to_spread",
        "max_range_to_progress",
        "same_length_rel_tol",
    ],
    outcomes: &["pass", "too_few", "wide", "skip"],
    run: seed_spread,
};

pub fn seed_spread(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (min_seeds, tail, tol, min_ratio, max_range, same_len) = (
        p!(ctx, "min_seeds"),
        p!(ctx, "tail_frac"),
        p!(ctx, "same_run_rel_tol"),
        p!(ctx, "min_effect_to_spread"),
        p!(ctx, "max_range_to_progress"),
        p!(ctx, "same_length_rel_tol"),
    );
    fn runs_of<'r>(r: &'r Run, n: &str, tol: f64) -> Vec<&'r Series> {
        distinct_runs(r.metrics().all(n), tol)
    }
    let metric = ["reward", "eval_loss", "loss"].into_iter().find(|n| {
        let here = runs_of(ctx.run, n, tol).len();
        here >= 2 || (here >= 1 && ctx.baseline.is_some_and(|b| !runs_of(b, n, tol).is_empty()))
    });
    let Some(name) = metric else {
        return vec![Verdict::skip(
            "R6",
            "one run only (copies of one run in several log files, and its other ranks, count once): pass a folder of seed runs, or --baseline RUN to compare against",
        )];
    };
    let finals =
        |v: &[&Series]| -> Vec<f64> { v.iter().filter_map(|s| tail_mean(s, tail)).collect() };
    let moved = |v: &[&Series]| -> Vec<f64> {
        v.iter()
            .filter_map(|s| Some((head_mean(s, tail)? - tail_mean(s, tail)?).abs()))
            .collect()
    };
    let runs = runs_of(ctx.run, name, tol);
    // Seeds of one configuration run the same schedule: their logs end at the same step. Runs
    // that end far apart are different experiments (a pretraining and the fine-tune beside it,
    // a short trial and the full run), not a sample of seeds.
    let ends: Vec<u64> = runs
        .iter()
        .filter_map(|s| s.last().map(|p| p.step))
        .collect();
    if let (Some(lo), Some(hi)) = (ends.iter().min(), ends.iter().max()) {
        if ends.len() >= 2 && (*lo as f64) < (1.0 - same_len) * *hi as f64 {
            return vec![Verdict::skip(
                "R6",
                format!(
                    "{} runs of {name} that end at different steps ({lo} to {hi}): different experiments, not seeds of one configuration — pass a folder of seed runs, or --baseline RUN to compare against",
                    ends.len()
                ),
            )];
        }
    }
    let base_runs = ctx
        .baseline
        .map(|b| runs_of(b, name, tol))
        .unwrap_or_default();
    let (va, vb) = (finals(&runs), finals(&base_runs));
    let (n, nb) = (va.len(), vb.len());
    let iq = iqm(&va).unwrap_or(f64::NAN);
    let iq_b = iqm(&vb);
    let lo = va.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = va.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sd = pooled_std(&[&va, &vb]);
    let progress = median(&[moved(&runs), moved(&base_runs)].concat()).unwrap_or(0.0);
    let effect: Option<(f64, String)> = match (iq_b, ctx.facts.f64("claimed_effect")) {
        (Some(b), _) => Some((
            iq - b,
            format!("IQM {} vs baseline IQM {}", fmt(iq), fmt(b)),
        )),
        (None, Some(e)) => Some((e, "claimed_effect".to_string())),
        (None, None) => None,
    };
    let fewest = if ctx.baseline.is_some() { n.min(nb) } else { n };
    let too_few = (fewest as f64) < min_seeds;
    let more = format!(
        "run ≥ {min_seeds} seeds per configuration and compare IQMs with confidence intervals"
    );
    let (st, out, msg) = match (&effect, sd) {
        (Some((e, what)), Some(sd)) if e.abs() < min_ratio * sd => (
            Status::Warn,
            "wide",
            format!("the effect ({what}: {}) is under {min_ratio}× the between-seed std {}: it cannot be told from seed noise — {more}", fmt(*e), fmt(sd)),
        ),
        (Some((e, what)), None) => (
            Status::Warn,
            "too_few",
            format!("one seed per configuration: the effect ({what}: {}) cannot be told from seed noise — {more}", fmt(*e)),
        ),
        (None, _) if progress > 0.0 && hi - lo > max_range * progress => (
            Status::Warn,
            "wide",
            format!("seeds end {} apart, {:.0}% of how far {name} moved in training: a difference between configurations smaller than that is seed noise — {more}", fmt(hi - lo), 100.0 * (hi - lo) / progress),
        ),
        _ if too_few => (
            Status::Warn,
            "too_few",
            format!("only {fewest} seed(s): a difference this small a sample shows is not a result — {more}"),
        ),
        (Some((e, _)), Some(sd)) => (
            Status::Pass,
            "pass",
            format!("the effect {} is ≥ {min_ratio}× the between-seed std {}", fmt(*e), fmt(sd)),
        ),
        (None, _) => (
            Status::Pass,
            "pass",
            "seeds agree closely (no effect claimed to compare with: pass --baseline RUN or --fact claimed_effect=…)".to_string(),
        ),
    };
    let mut measured = format!(
        "{n} run(s): final {name} IQM {} (range {}..{}{})",
        fmt(iq),
        fmt(lo),
        fmt(hi),
        sd.map(|s| format!(", between-seed std {}", fmt(s)))
            .unwrap_or_default()
    );
    if let Some(b) = iq_b {
        measured.push_str(&format!("; baseline {nb} run(s), IQM {}", fmt(b)));
    }
    let mut v = Verdict::new("R6", st, out)
        .measured(measured)
        .expected(format!(
            "≥ {min_seeds} seeds; effect ≥ {min_ratio}× between-seed std; seed range ≤ {:.0}% of training progress",
            100.0 * max_range
        ))
        .message(msg)
        .value("seeds", n as f64)
        .value("iqm", iq);
    for s in runs.iter().chain(base_runs.iter()) {
        if let (Some(a), Some(z)) = (s.first(), s.last()) {
            v = v.evidence(series_evidence(s, a.step, z.step));
        }
    }
    if let Some(sd) = sd {
        v = v.value("between_seed_std", sd);
    }
    if let Some((e, _)) = effect {
        v = v.value("effect", e);
    }
    vec![v]
}
