//! `grpo_signal`: does a GRPO / RLVR run still get a learning signal? Group-relative
//! advantages are zero for every prompt whose completions all got the same reward, so a run
//! whose groups have zero reward spread (TRL's `frac_reward_zero_std` near 1, or `reward_std`
//! ≈ 0) for most of its second half learns nothing (H3). Completions piling up at the length
//! cap while their length keeps growing point at length bias or a gamed reward (H5).
//! Completions that collapse to their EOS token are a failed run whatever the reward says: a
//! reward that pays for brevity, or that an empty answer earns, climbs while the answers
//! vanish (H5). A loss
//! of about 0 with a moving gradient is GRPO by design (H2), never a finding.

use crate::metrics::Series;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::util::*;

pub(super) const GRPO_SIGNAL: ProbeSpec = ProbeSpec {
    id: "grpo_signal",
    entries: &["H3", "H5", "H2"],
    inputs: &[
        "metrics:frac_reward_zero_std",
        "metrics:reward_std",
        "metrics:completions/mean_length",
        "metrics:completions/clipped_ratio",
        "metrics:loss",
        "metrics:grad_norm",
    ],
    params: &[
        "tail_frac",
        "min_points",
        "zero_std_frac",
        "zero_std_share",
        "reward_std_eps",
        "clipped_ratio",
        "length_growth",
        "collapse_ratio",
        "collapse_tokens",
        "loss_zero_abs",
    ],
    outcomes: &[
        "pass",
        "no_signal",
        "length_drift",
        "length_collapse",
        "skip",
    ],
    run: grpo_signal,
};

/// Share of the log, from its start, that says how long completions were to begin with.
const COLLAPSE_HEAD_FRAC: f64 = 0.2;

/// The first series the logs hold under any of `names` (TRL logs some under `train/`).
fn series<'a>(ctx: &'a ProbeCtx, names: &[&str]) -> Option<&'a Series> {
    let m = ctx.run.metrics();
    names.iter().find_map(|n| m.get(n))
}

/// The last `frac` of a series' finite values (at least one).
fn tail_values(s: &Series, frac: f64) -> Vec<f64> {
    let v = finite_values(s);
    let k = ((v.len() as f64 * frac.clamp(0.0, 1.0)).ceil() as usize).clamp(1, v.len().max(1));
    v[v.len().saturating_sub(k)..].to_vec()
}

pub fn grpo_signal(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (tail, min_points, zero_frac, zero_share, std_eps) = (
        p!(ctx, "H3", "tail_frac"),
        p!(ctx, "H3", "min_points"),
        p!(ctx, "H3", "zero_std_frac"),
        p!(ctx, "H3", "zero_std_share"),
        p!(ctx, "H3", "reward_std_eps"),
    );
    let (clip_min, growth, loss_zero) = (
        p!(ctx, "H5", "clipped_ratio"),
        p!(ctx, "H5", "length_growth"),
        p!(ctx, "H2", "loss_zero_abs"),
    );
    let (collapse_ratio, collapse_tokens) = (
        p!(ctx, "H5", "collapse_ratio"),
        p!(ctx, "H5", "collapse_tokens"),
    );
    let frac = series(ctx, &["frac_reward_zero_std", "train/frac_reward_zero_std"]);
    let rstd = series(ctx, &["reward_std", "train/reward_std"]);
    // Which series says how many groups carry no reward spread, and how to read a point.
    let (spread, is_zero): (&Series, Box<dyn Fn(f64) -> bool>) = match (frac, rstd) {
        (Some(f), _) => (f, Box::new(move |x: f64| x >= zero_frac)),
        (None, Some(s)) => (s, Box::new(move |x: f64| x.abs() <= std_eps)),
        (None, None) => {
            return vec![Verdict::skip(
                "H3",
                "no frac_reward_zero_std or reward_std series (not a GRPO run, or an older logger)",
            )]
        }
    };
    let n = finite_values(spread).len();
    if (n as f64) < min_points {
        return vec![Verdict::skip(
            "H3",
            format!(
                "only {n} logged points of {} (need {min_points})",
                spread.tag
            ),
        )];
    }
    let tv = tail_values(spread, tail);
    let zero = tv.iter().filter(|x| is_zero(**x)).count();
    let share = zero as f64 / tv.len().max(1) as f64;
    let first = spread.points[0].step;
    let last = spread.points[spread.points.len() - 1].step;
    let reward_tail = series(ctx, &["reward", "train/reward"]).and_then(|r| tail_mean(r, tail));
    let mut out = Vec::new();
    if share >= zero_share {
        let level = reward_tail
            .map(|r| format!("; mean reward there {}", fmt(r)))
            .unwrap_or_default();
        out.push(
            Verdict::new("H3", Status::Fail, "no_signal")
                .measured(format!(
                    "{zero} of the last {} logged points have no reward spread within the groups ({}){level}",
                    tv.len(),
                    spread.tag
                ))
                .expected(format!(
                    "fewer than {:.0}% of the late points with zero-spread groups",
                    100.0 * zero_share
                ))
                .message("every completion of a prompt gets the same reward, so the group-relative advantage is 0 and nothing is learned: make the reward graded, raise max_completion_length, keep temperature near 1, use more num_generations, or drop prompts that are always or never solved")
                .evidence(series_evidence(spread, first, last))
                .value("zero_spread_share", share),
        );
    } else {
        out.push(
            Verdict::new("H3", Status::Pass, "pass")
                .measured(format!(
                    "{zero} of the last {} logged points without reward spread ({})",
                    tv.len(),
                    spread.tag
                ))
                .expected(format!(
                    "fewer than {:.0}% of the late points",
                    100.0 * zero_share
                ))
                .message("the groups' rewards differ, so the advantages carry a signal")
                .value("zero_spread_share", share),
        );
    }
    // Length drift: completions grow and pile up at the cap.
    let len = series(
        ctx,
        &[
            "completions/mean_length",
            "train/completions/mean_length",
            "completion_length",
        ],
    );
    let clip = series(
        ctx,
        &[
            "completions/clipped_ratio",
            "train/completions/clipped_ratio",
        ],
    );
    if let Some(l) = len {
        let (lh, lt) = (head_mean(l, tail), tail_mean(l, tail));
        let ct = clip.and_then(|c| tail_mean(c, tail));
        // The cap cutting completions is drift when training brought it there: the length grew
        // `growth` times, or (a cap close above where lengths start leaves no room to grow 1.5×)
        // the share cut at the cap rose from under half of `clipped_ratio` at the start.
        // "At the start": the least share cut over the first fifth of the log (the initial
        // policy's completions, before the first updates moved them).
        let cs = clip.map(finite_values).and_then(|v| {
            let k =
                ((v.len() as f64 * COLLAPSE_HEAD_FRAC).ceil() as usize).clamp(1, v.len().max(1));
            v.get(..k)?.iter().copied().reduce(f64::min)
        });
        if let (Some(lh), Some(lt), Some(ct)) = (lh, lt, ct) {
            let clipping_came = cs.is_some_and(|cs| cs < 0.5 * clip_min);
            if lh > 0.0 && (lt >= growth * lh || clipping_came) && ct >= clip_min {
                out.push(
                    Verdict::new("H5", Status::Warn, "length_drift")
                        .measured(format!(
                            "mean completion length {} → {}, clipped ratio {}{} late in the run",
                            fmt(lh),
                            fmt(lt),
                            cs.map(|c| format!("{} at the start → ", fmt(c)))
                                .unwrap_or_default(),
                            fmt(ct)
                        ))
                        .expected(format!(
                            "length growth below {growth}× and no rise in the share cut at the cap, or under {:.0}% of completions cut late",
                            100.0 * clip_min
                        ))
                        .message("completions keep growing until the length cap cuts them: read samples; use loss_type=\"dr_grpo\" or \"dapo\", mask_truncated_completions=True, and weight correctness above format rewards")
                        .evidence(whole_series_evidence(l))
                        .value("length_ratio", lt / lh),
                );
            }
        }
        // Length collapse: from where completions started (the first fifth of the log) to about
        // one token, the EOS, in the judged tail: most answers are empty. The shortest real
        // answer is a word and its EOS, so a run that learns to answer tersely stays above the
        // bound. A reward that still climbs is no comfort: it is what pays for the empty answers.
        if let (Some(ls), Some(lt)) = (head_mean(l, COLLAPSE_HEAD_FRAC), lt) {
            let enough = finite_values(l).len() as f64 >= min_points;
            if enough && ls > 0.0 && lt <= collapse_ratio * ls && lt <= collapse_tokens {
                let reward = series(ctx, &["reward", "train/reward"])
                    .and_then(|r| Some((head_mean(r, COLLAPSE_HEAD_FRAC)?, tail_mean(r, tail)?)));
                out.push(
                    Verdict::new("H5", Status::Fail, "length_collapse")
                        .measured(format!(
                            "mean completion length {} at the start → {} late in the run{}",
                            fmt(ls),
                            fmt(lt),
                            reward.map_or(String::new(), |(a, b)| format!(
                                ", while the reward went {} → {}",
                                fmt(a),
                                fmt(b)
                            ))
                        ))
                        .expected(format!(
                            "a mean above {} tokens (an answer and its EOS) or above {}× the starting length",
                            fmt(collapse_tokens),
                            fmt(collapse_ratio)
                        ))
                        .message("most completions are empty (the EOS and nothing else): the reward pays for short or empty answers (a length penalty with nothing to earn beside it, a format or safety check an empty answer passes) — read samples; make correctness the dominant reward term, drop or cap the length penalty, and make an empty completion score the minimum")
                        .evidence(whole_series_evidence(l))
                        .value("length_ratio", lt / ls),
                );
            }
        }
    }
    // A loss of about 0 at the start with a moving gradient: expected, said so once.
    if let (Some(loss), Some(g)) = (
        series(ctx, &["loss", "train/loss"]),
        series(ctx, &["grad_norm", "train/grad_norm"]),
    ) {
        let (lh, gh) = (head_mean(loss, 0.1), head_mean(g, 0.1));
        if let (Some(lh), Some(gh)) = (lh, gh) {
            if lh.abs() <= loss_zero && gh > 0.0 {
                out.push(
                    Verdict::new("H2", Status::Pass, "pass")
                        .measured(format!(
                            "loss {} at the start with grad_norm {}",
                            fmt(lh),
                            fmt(gh)
                        ))
                        .expected("GRPO's loss starts near 0 by design")
                        .message("a GRPO loss of about 0 is expected (group-centred advantages, ratio 1): judge the run by its reward"),
                );
            }
        }
    }
    out
}
