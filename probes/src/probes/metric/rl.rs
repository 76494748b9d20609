//! Preference and RL health: `dpo_health`, `ppo_health`, `rl_scale`.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::util::*;

pub(super) const DPO_HEALTH: ProbeSpec = ProbeSpec {
    id: "dpo_health",
    entries: &["L9"],
    inputs: &[
        "metrics:rewards/margins",
        "metrics:rewards/accuracies",
        "metrics:logps/chosen",
        "metrics:logps/rejected",
    ],
    params: &[
        "flat_margin",
        "min_accuracy",
        "good_accuracy",
        "tail_frac",
        "logp_drop",
    ],
    outcomes: &["pass", "flat_margin", "collapse", "skip"],
    run: dpo_health,
};

pub fn dpo_health(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (flat, min_acc, good_acc, tail, drop) = (
        p!(ctx, "flat_margin"),
        p!(ctx, "min_accuracy"),
        p!(ctx, "good_accuracy"),
        p!(ctx, "tail_frac"),
        p!(ctx, "logp_drop"),
    );
    let m = ctx.run.metrics();
    let Some(margins) = m.get("rewards/margins") else {
        return vec![Verdict::skip(
            "L9",
            "no rewards/margins series (not a DPO run?)",
        )];
    };
    let mt = tail_mean(margins, tail).unwrap_or(0.0);
    let acc = m.get("rewards/accuracies").and_then(|s| tail_mean(s, tail));
    let fall = |name: &str| {
        m.get(name)
            .and_then(|s| Some(head_mean(s, tail)? - tail_mean(s, tail)?))
    };
    let (fc, fr) = (fall("logps/chosen"), fall("logps/rejected"));
    let both_fall = matches!((fc, fr), (Some(a), Some(b)) if a > drop && b > drop);
    // A small margin with a high preference accuracy is a short run or a small beta (the
    // margin's scale is beta × the log-ratio gap), not a flat one.
    let flat_margin =
        (mt <= flat && !acc.is_some_and(|a| a >= good_acc)) || acc.is_some_and(|a| a < min_acc);
    // L9's own signature, whatever the margins say: both log-probs fall and the chosen one at
    // least doubles in magnitude — the policy unlearns both answers (the margin grows because
    // rejected falls faster).
    let level = |name: &str| {
        m.get(name)
            .and_then(|s| Some((head_mean(s, tail)?, tail_mean(s, tail)?)))
    };
    let chosen_doubles = level("logps/chosen").is_some_and(|(h, t)| h < 0.0 && t <= 2.0 * h);
    let lr_note = match ctx.facts.f64("lr_max") {
        Some(lr) => format!(
            "learning_rate is {} here; DPO's usual value is about 1e-6 (1e-5 for LoRA)",
            fmt(lr)
        ),
        None => "lower learning_rate (≈1e-6, 1e-5 for LoRA)".to_string(),
    };
    if both_fall && chosen_doubles && !flat_margin {
        let (hc, tc) = level("logps/chosen").unwrap_or((0.0, 0.0));
        return vec![Verdict::new("L9", Status::Fail, "collapse")
            .measured(format!(
                "logps/chosen {} → {}, rejected Δ {}; margins tail mean {}, accuracies {}",
                fmt(hc),
                fmt(tc),
                fr.map(|x| fmt(-x)).unwrap_or("?".into()),
                fmt(mt),
                acc.map(fmt).unwrap_or("?".into())
            ))
            .expected(format!("chosen log-probs roughly steady (a fall under {drop} nats, not a doubling)"))
            .message(format!(
                "both log-probs collapse (chosen from {} to {}) behind a margin that looks good: the policy is unlearning both answers — {lr_note}; raise beta and make sure the reference model is frozen",
                fmt(hc),
                fmt(tc)
            ))
            .evidence(whole_series_evidence(margins))
            .value("margin_tail", mt)];
    }
    let (st, out, msg) = if flat_margin && both_fall {
        (Status::Fail, "collapse", "both log-probs plunge while the margin stays flat: collapse — lower learning_rate (≈1e-6, 1e-5 for LoRA), raise beta, and make sure the reference model is frozen")
    } else if flat_margin {
        (Status::Fail, "flat_margin", "the reward margin does not grow (accuracy near 0.5): beta too large for the signal, LR too low, or a lost ref_model — start beta=0.1 and check the data schema (L8)")
    } else if acc.is_some_and(|a| a < good_acc) {
        // L9's signature is a margin that does not grow or log-probs that collapse; a growing
        // margin at an accuracy under 0.7 is what hard preference pairs give.
        (
            Status::Pass,
            "pass",
            "margins grow; a preference accuracy under ~0.7 with a growing margin reflects hard preference pairs, not a failure",
        )
    } else {
        (Status::Pass, "pass", "margins grow and accuracy is healthy")
    };
    let (a, b) = (
        margins.points[0].step,
        margins.points[margins.points.len() - 1].step,
    );
    vec![Verdict::new("L9", st, out)
        .measured(format!(
            "margins tail mean {}, accuracies {}, logps chosen Δ {}, rejected Δ {}",
            fmt(mt),
            acc.map(fmt).unwrap_or("?".into()),
            fc.map(|x| fmt(-x)).unwrap_or("?".into()),
            fr.map(|x| fmt(-x)).unwrap_or("?".into())
        ))
        .expected(format!(
            "margins > {flat} and rising, accuracies → ≥ {good_acc}"
        ))
        .message(msg)
        .evidence(series_evidence(margins, a, b))
        .value("margin_tail", mt)]
}
pub(super) const PPO_HEALTH: ProbeSpec = ProbeSpec {
    id: "ppo_health",
    entries: &["R2", "R1", "H4"],
    inputs: &[
        "metrics:kl",
        "metrics:reward",
        "metrics:eval_reward",
        "metrics:success_rate",
    ],
    params: &[
        "kl_target",
        "kl_blowup_factor",
        "kl_growth_factor",
        "reward_drop_frac",
        "tail_frac",
        "reward_ema_span",
        "success_min_peak",
        "success_drop_frac",
    ],
    outcomes: &[
        "pass",
        "kl_blowup",
        "reward_collapse",
        "falls_from_start",
        "reward_gamed",
        "skip",
    ],
    run: ppo_health,
};

/// A reward curve's shape (of its EMA): see `ppo_health`.
struct Curve {
    start: f64,
    peak_step: u64,
    peak: f64,
    last: f64,
    /// Fell back by more than `reward_drop_frac` of its gain after the peak.
    collapsed: bool,
    /// Fell from its first value and never rose above it.
    never_rose: bool,
}

/// Points per episode-level smoothing window: one episode's return is one draw from a noisy
/// policy (ε-greedy, a sampled action), so a peak or a drop is read over this many of them.
const EPISODES_PER_WINDOW: f64 = 10.0;

/// Whether each point of a reward series is one episode's return: points at irregular step
/// gaps (each gap an episode's length). A per-rollout mean (SB3's `ep_rew_mean`, logged at
/// regular gaps) is already smoothed.
fn per_episode(r: &crate::metrics::Series) -> bool {
    let gaps: Vec<f64> = r
        .points
        .windows(2)
        .map(|w| w[1].step.saturating_sub(w[0].step) as f64)
        .filter(|g| *g > 0.0)
        .collect();
    if gaps.len() < 10 {
        return false;
    }
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    sd / mean.max(1e-12) > 0.2
}

/// An EMA over the last `n` points, whatever their steps (finite values only).
fn ema_over_points(points: &[crate::metrics::Point], n: f64) -> Vec<(u64, f64)> {
    let alpha = 2.0 / (n + 1.0);
    let mut out: Vec<(u64, f64)> = Vec::with_capacity(points.len());
    for p in points.iter().filter(|p| p.value.is_finite()) {
        let v = match out.last() {
            Some(&(_, prev)) => prev + alpha * (p.value - prev),
            None => p.value,
        };
        out.push((p.step, v));
    }
    out
}

pub fn ppo_health(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (target, factor, growth, drop_frac, tail, reward_span) = (
        p!(ctx, "kl_target"),
        p!(ctx, "kl_blowup_factor"),
        p!(ctx, "kl_growth_factor"),
        p!(ctx, "reward_drop_frac"),
        p!(ctx, "tail_frac"),
        p!(ctx, "reward_ema_span"),
    );
    let m = ctx.run.metrics();
    let kl = m.get("kl");
    let reward = m.get("reward");
    if kl.is_none() && reward.is_none() {
        return vec![Verdict::skip(
            "R2",
            "no kl or reward series (not an RL / PPO run?)",
        )];
    }
    let mut out = Vec::new();
    let mut kl_spiked = false;
    if let Some(k) = kl {
        let kt = tail_mean(k, tail).unwrap_or(0.0);
        let kh = head_mean(k, tail).unwrap_or(0.0);
        kl_spiked = kt > target;
        let (st, o, msg) = if kt > target * factor {
            (Status::Fail, "kl_blowup", "KL to the reference runs away: raise the KL coefficient or use an adaptive controller (target ≈ 6), clip the ratio (cliprange 0.2), fewer PPO epochs; confirm the reference is frozen")
        } else if kt > target && kt > growth * kh.max(1e-9) {
            (Status::Warn, "kl_blowup", "KL is growing past its target")
        } else {
            (Status::Pass, "pass", "KL stays bounded")
        };
        out.push(
            Verdict::new("R2", st, o)
                .measured(format!("KL tail mean {} (start {})", fmt(kt), fmt(kh)))
                .expected(format!("≤ {target} (fail above {})", target * factor))
                .message(msg)
                .evidence(whole_series_evidence(k))
                .value("kl_tail", kt),
        );
    }
    // The shape of a reward curve: its EMA's start, peak (step, value) and last value; whether
    // it fell back by more than drop_frac of its gain after the peak (collapsed), and whether it
    // fell from its first value and never rose above it (never_rose).
    let shape = |r: &crate::metrics::Series| {
        let e = if per_episode(r) {
            ema_over_points(&r.points, EPISODES_PER_WINDOW)
        } else {
            ema(&r.points, reward_span)
        };
        let start = e.first().map(|x| x.1).unwrap_or(0.0);
        let (peak_step, peak) =
            e.iter()
                .copied()
                .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
        let last = e.last().map(|x| x.1).unwrap_or(0.0);
        let rise = (peak - start).abs().max(1e-12);
        let collapsed = peak > start
            && (peak - last) / rise > drop_frac
            && e.last().is_some_and(|l| l.0 > peak_step);
        // A reward that falls from its first value and never climbs above it: the policy gets
        // worse from the first update on (an inverted advantage or objective, an update step
        // far too large) — whatever a peak-based rule says, nothing was ever learned.
        let scale = start.abs().max((peak - last).abs()).max(1e-9);
        let never_rose = e.len() >= 10
            && peak <= start + 0.05 * start.abs().max(1e-9)
            && (start - last) > drop_frac * scale.max(start.abs());
        Curve {
            start,
            peak_step,
            peak,
            last,
            collapsed,
            never_rose,
        }
    };
    // An environment agent's evaluation reward (deterministic test episodes: Tianshou's
    // `test/returns_stat/mean`, SB3's `eval/mean_reward`) says what the policy is; the training
    // reward of stochastic rollouts dips while the policy holds. A collapse must show there too.
    let eval = m
        .get("eval_reward")
        .filter(|s| s.points.iter().filter(|p| p.value.is_finite()).count() >= 3);
    if let Some(r) = reward {
        let Curve {
            start,
            peak_step,
            peak,
            last,
            collapsed,
            never_rose,
        } = shape(r);
        let eval_shape = eval.map(|ev| (ev, shape(ev)));
        let fell = if never_rose {
            Some((r, start, last))
        } else {
            eval_shape
                .as_ref()
                .filter(|(_, c)| c.never_rose)
                .map(|(ev, c)| (*ev, c.start, c.last))
        };
        if let Some((r, start, last)) = fell {
            out.push(
                Verdict::new("R1", Status::Fail, "falls_from_start")
                    .measured(format!(
                        "{} EMA {} at the start → {} at the end, never above its start",
                        r.tag,
                        fmt(start),
                        fmt(last)
                    ))
                    .expected("a reward that rises from where it starts")
                    .message("the reward falls from its first value and never rises: every update makes the policy worse — check the sign of the advantage / policy loss, then the learning rate (R7)")
                    .evidence(whole_series_evidence(r)),
            );
            return out;
        }
        if let Some(v) = success_falls(ctx, r, reward_span) {
            out.push(v);
            return out;
        }
        let held = collapsed && eval_shape.as_ref().is_some_and(|(_, c)| !c.collapsed);
        let collapsed = collapsed && !held;
        let (st, o, msg) = if collapsed && kl_spiked {
            (Status::Fail, "reward_collapse", "reward fell after its peak while KL spiked: reward hacking / over-optimisation — stronger KL penalty, LR ≈ 1e-6, fewer PPO epochs, a length penalty if length is gamed")
        } else if collapsed {
            (
                Status::Warn,
                "reward_collapse",
                "reward dropped well below its peak",
            )
        } else if held {
            (Status::Pass, "pass", "the training reward dipped after its peak, but the evaluation reward holds: stochastic rollouts, not a collapse")
        } else {
            (Status::Pass, "pass", "reward holds")
        };
        out.push(
            Verdict::new("R1", st, o)
                .measured(format!(
                    "reward EMA start {} → peak {} (step {peak_step}) → last {}",
                    fmt(start),
                    fmt(peak),
                    fmt(last)
                ))
                .expected(format!(
                    "no drop of more than {:.0}% of the gain",
                    100.0 * drop_frac
                ))
                .message(msg)
                .evidence(whole_series_evidence(r)),
        );
    }
    out
}

/// The reward is gamed: the task's own success rate (logged beside it) climbed to at least
/// `success_min_peak`, then fell by `success_drop_frac` of its peak while the reward held at or
/// above where it stood at that peak. The policy found a way to collect reward without doing
/// the task (hovering near a goal that pays per step, farming a shaping bonus).
fn success_falls(ctx: &ProbeCtx, reward: &crate::metrics::Series, span: f64) -> Option<Verdict> {
    let min_peak = ctx.params.f64("success_min_peak").ok()?;
    let drop_frac = ctx.params.f64("success_drop_frac").ok()?;
    let s = ctx.run.metrics().get("success_rate")?;
    if s.points.iter().filter(|p| p.value.is_finite()).count() < 10 {
        return None;
    }
    let se = ema(&s.points, span);
    let re = ema(&reward.points, span);
    let (peak_step, peak) =
        se.iter()
            .copied()
            .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
    let (last_step, last) = *se.last()?;
    let reward_at_peak = at_step(&re, peak_step)?.1;
    let reward_last = re.last()?.1;
    let fell = peak >= min_peak && last_step > peak_step && last <= (1.0 - drop_frac) * peak;
    (fell && reward_last >= reward_at_peak).then(|| {
        Verdict::new("R1", Status::Fail, "reward_gamed")
            .measured(format!(
                "{} EMA {} at step {peak_step} → {} at the end, while {} EMA went {} → {}",
                s.tag,
                fmt(peak),
                fmt(last),
                reward.tag,
                fmt(reward_at_peak),
                fmt(reward_last)
            ))
            .expected("the success rate rises with the reward")
            .message("the reward keeps rising while the task's own success rate falls from its peak: the policy collects reward without doing the task (reward hacking) — find what pays without success (a per-step bonus near the goal, a shaping term that is not potential-based, no terminal reward), make shaping potential-based, and judge runs by the success rate")
            .evidence(whole_series_evidence(s))
            .value("success_peak", peak)
            .value("success_last", last)
    })
}

pub(super) const RL_SCALE: ProbeSpec = ProbeSpec {
    id: "rl_scale",
    entries: &["R3"],
    inputs: &["metrics:value loss", "metrics:returns / advantages"],
    params: &[
        "value_loss_max",
        "return_scale_max",
        "tail_frac",
        "value_rel_max",
    ],
    outcomes: &["pass", "raw_scale", "skip"],
    run: rl_scale,
};

const VALUE_LOSS: &[&str] = &[
    "ppo/loss/value",
    "loss/value_avg",
    "loss/value",
    "value_loss",
    "train/value_loss",
];
const RETURNS: &[&str] = &[
    "ppo/returns/mean",
    "ppo/policy/advantages_mean",
    "returns/mean",
    "returns",
    "advantages",
];

// R3: value loss and returns at raw reward scale (no whitening / reward scaling)
pub fn rl_scale(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (vmax, rmax, tail, value_rel) = (
        p!(ctx, "value_loss_max"),
        p!(ctx, "return_scale_max"),
        p!(ctx, "tail_frac"),
        p!(ctx, "value_rel_max"),
    );
    let m = ctx.run.metrics();
    let Some((vname, v)) = super::first_series(m, VALUE_LOSS) else {
        return vec![Verdict::skip(
            "R3",
            "no value-loss series (not a PPO / actor-critic run?)",
        )];
    };
    let vt = tail_mean(v, tail).unwrap_or(0.0);
    let ret = super::first_series(m, RETURNS).map(|(n, s)| {
        let mean_abs = s.points.iter().map(|p| p.value.abs()).sum::<f64>() / s.points.len() as f64;
        (n, mean_abs)
    });
    let big_value = vt > vmax;
    let big_ret = ret.is_some_and(|(_, r)| r > rmax);
    // Judged by its effect: R3's harm is a brittle policy. Returns at the raw reward scale
    // while the reward clearly climbs (CartPole under Stable-Baselines3's defaults, whose
    // returns reach the hundreds) are the environment's scale, not a failure.
    // The value loss is a squared error in return units: at the environment's scale it sits
    // far below the squared return scale (SB3 CartPole: 137 against returns of 230). A critic
    // whose error is a sizeable part of the squared return scale is not tracking the returns:
    // that is the brittleness R3 names, whatever the reward does.
    let learns = m.get("reward").is_some_and(|r| {
        let (Some(h), Some(t)) = (head_mean(r, tail), tail_mean(r, tail)) else {
            return false;
        };
        let scale = r
            .points
            .iter()
            .map(|p| p.value.abs())
            .filter(|x| x.is_finite())
            .fold(0.0, f64::max);
        t - h > 0.2 * h.abs().max(1e-9) && vt <= value_rel * scale * scale
    });
    if (big_value || big_ret) && learns {
        return vec![Verdict::new("R3", Status::Pass, "pass")
            .measured(format!("{vname} tail mean {}; the reward climbs", fmt(vt)))
            .expected(format!("value loss ≤ {vmax}, or a reward that still climbs"))
            .message("value loss at the raw reward scale, but the policy learns: the environment's scale, not brittle PPO")
            .evidence(whole_series_evidence(v))
            .value("value_loss_tail", vt)];
    }
    let (st, out, msg) = if big_value && (big_ret || ret.is_none()) {
        (Status::Fail, "raw_scale", "the value loss sits at the raw reward scale (returns far from 1): whiten the advantages, normalise or clip the rewards (running reward std), and clip the value loss")
    } else if big_value || big_ret {
        (Status::Warn, "raw_scale", "one of value loss / returns is far above unit scale: consider reward scaling and advantage whitening")
    } else {
        (
            Status::Pass,
            "pass",
            "value loss and returns stay near unit scale",
        )
    };
    vec![Verdict::new("R3", st, out)
        .measured(format!(
            "{vname} tail mean {}{}",
            fmt(vt),
            ret.map(|(n, r)| format!(", mean |{n}| {}", fmt(r)))
                .unwrap_or_default()
        ))
        .expected(format!("value loss ≤ {vmax}, mean |return| ≤ {rmax}"))
        .message(msg)
        .evidence(whole_series_evidence(v))
        .value("value_loss_tail", vt)]
}
