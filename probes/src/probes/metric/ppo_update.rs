//! `ppo_update`: PPO's own per-update health signals — approx_kl and the clip fraction — read
//! against their bands, with the run's learning rate named in the verdict (R7).

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::probes::util::*;

pub(super) const PPO_UPDATE: ProbeSpec = ProbeSpec {
    id: "ppo_update",
    entries: &["R7"],
    inputs: &["metrics:approx_kl", "metrics:clip_fraction"],
    params: &[
        "kl_fail",
        "kl_warn",
        "clip_fail",
        "clip_warn",
        "kl_first_fail",
        "clip_first_fail",
    ],
    outcomes: &["pass", "too_large", "skip"],
    run: ppo_update,
};

/// The median of a series' finite values.
fn median_of(s: &crate::metrics::Series) -> Option<f64> {
    let v: Vec<f64> = s.values().into_iter().filter(|x| x.is_finite()).collect();
    median(&v)
}

pub fn ppo_update(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (kl_fail, kl_warn, clip_fail, clip_warn, kl_first, clip_first) = (
        p!(ctx, "kl_fail"),
        p!(ctx, "kl_warn"),
        p!(ctx, "clip_fail"),
        p!(ctx, "clip_warn"),
        p!(ctx, "kl_first_fail"),
        p!(ctx, "clip_first_fail"),
    );
    let m = ctx.run.metrics();
    let kl = m.get("approx_kl");
    let clip = m.get("clip_fraction");
    let Some(main) = kl.or(clip) else {
        return vec![Verdict::skip(
            "R7",
            "no approx_kl or clip_fraction series (not a PPO run, or the framework does not log them)",
        )];
    };
    // The whole run's median, or the first updates' median when larger: a policy blown apart
    // by its first updates stops moving (approx_kl 0 from then on) and would hide behind the
    // run's median.
    let judged = |s: Option<&crate::metrics::Series>| {
        let s = s?;
        let all = median_of(s)?;
        let k = (s.len() / 10).max(3).min(s.len());
        let head: Vec<f64> = s.points[..k].iter().map(|p| p.value).collect();
        Some(all.max(median(&head).unwrap_or(all)))
    };
    let k = judged(kl);
    let c = judged(clip);
    let first = |s: Option<&crate::metrics::Series>| s.and_then(|s| s.first()).map(|p| p.value);
    // The first updates on their own: one that moves the policy by a KL of 1 or more (50×
    // the band) blows it apart, whatever the later updates (often 0: nothing left to move) say.
    let first_peak = |s: Option<&crate::metrics::Series>| {
        s.map(|s| {
            s.points
                .iter()
                .take(3)
                .map(|p| p.value)
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max)
        })
    };
    let blown = first_peak(kl).is_some_and(|v| v > kl_first)
        || first_peak(clip).is_some_and(|v| v > clip_first);
    let fail = blown || k.is_some_and(|k| k > kl_fail) || c.is_some_and(|c| c > clip_fail);
    let warn = k.is_some_and(|k| k > kl_warn) || c.is_some_and(|c| c > clip_warn);
    let lr = ctx.facts.f64("lr_max").or_else(|| {
        m.get("learning_rate")
            .and_then(|s| s.first())
            .map(|p| p.value)
    });
    let lr_note = match lr {
        Some(lr) => format!(
            "learning_rate is {} here (PPO's usual is about 3e-4)",
            fmt(lr)
        ),
        None => "lower learning_rate (about 3e-4)".to_string(),
    };
    let measured = format!(
        "approx_kl {}, clip fraction {} (median, of the first updates where larger; first update: {}, {})",
        k.map(fmt).unwrap_or("?".into()),
        c.map(fmt).unwrap_or("?".into()),
        first(kl).map(fmt).unwrap_or("?".into()),
        first(clip).map(fmt).unwrap_or("?".into()),
    );
    let (st, out, msg) = if fail {
        (
            Status::Fail,
            "too_large",
            format!("each PPO update leaves the trust region — most of the batch hits the clip: {lr_note}; set target_kl ≈ 0.02, keep clip_range 0.2 and n_epochs ≤ 10"),
        )
    } else if warn {
        (
            Status::Warn,
            "too_large",
            format!("PPO updates are larger than usual: {lr_note}; consider target_kl ≈ 0.02"),
        )
    } else {
        (
            Status::Pass,
            "pass",
            "approx_kl and the clip fraction sit in PPO's usual bands".to_string(),
        )
    };
    let (a, b) = (
        main.first().map(|p| p.step).unwrap_or(0),
        main.last().map(|p| p.step).unwrap_or(0),
    );
    let mut v = Verdict::new("R7", st, out)
        .measured(measured)
        .expected(format!(
            "approx_kl ≤ {kl_warn} (fail above {kl_fail}), clip fraction ≤ {clip_warn} (fail above {clip_fail})"
        ))
        .message(msg)
        .evidence(series_evidence(main, a, b));
    if let Some(k) = k {
        v = v.value("approx_kl_median", k);
    }
    if let Some(c) = c {
        v = v.value("clip_fraction_median", c);
    }
    vec![v]
}
