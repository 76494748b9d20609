//! Loss-curve probes: `loss_trend`, `val_gap`, `loss_degenerate`.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use super::need;
use crate::probes::util::*;

pub(super) const LOSS_TREND: ProbeSpec = ProbeSpec {
    id: "loss_trend",
    entries: &["S4.1", "O7"],
    inputs: &["metrics:loss"],
    params: &[
        "ema_span",
        "early_step",
        "late_step",
        "min_slope_per_100",
        "min_rel_drop",
        "min_span_steps",
        "min_points",
        "blowup_factor",
        "blowup_steps",
        "blowup_abs",
    ],
    outcomes: &["pass", "rising", "slow", "overshot", "skip"],
    run: loss_trend,
};

// ---------------------------------------------------------------------------------------
pub fn loss_trend(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (span, early, late, min_slope, min_drop, min_span, min_points) = (
        p!(ctx, "ema_span"),
        p!(ctx, "early_step"),
        p!(ctx, "late_step"),
        p!(ctx, "min_slope_per_100"),
        p!(ctx, "min_rel_drop"),
        p!(ctx, "min_span_steps"),
        p!(ctx, "min_points"),
    );
    let s = match need(ctx, "loss", "S4.1") {
        Ok(s) => s,
        Err(v) => return v,
    };
    // A loss that multiplies within a few steps is a divergence, whatever the curve does after
    // (an EMA smooths it away once the loss parks somewhere lower).
    if ctx.profile.phase.value.is_cross_entropy() {
        if let Some(v) = blowup(ctx, s) {
            return vec![v];
        }
    }
    if let Some(v) = dropped_to_zero(ctx, s) {
        return vec![v];
    }
    if s.unit == crate::metrics::Unit::Epoch {
        return epoch_trend(ctx, s, min_drop);
    }
    let e = ema(&s.points, span);
    let Some(&(last_step, last_v)) = e.last() else {
        return vec![Verdict::skip("S4.1", "no finite loss values")];
    };
    let first_step = e[0].0;
    if ((last_step - first_step) as f64) < min_span || (e.len() as f64) < min_points {
        return vec![Verdict::skip(
            "S4.1",
            format!(
                "too few loss points ({} over steps {first_step}..{last_step}; need {min_points} over {min_span} steps) to judge a trend",
                e.len()
            ),
        )];
    }
    // The comparison steps are training steps, clamped into the logged span. A series that
    // starts after `early_step` (sparse logging, a resumed run) is compared over the part it
    // shows; when the window [early, late] lies before the first logged step, the whole logged
    // span is the window (first → last), said in `measured`.
    let mut late_s = (late as u64).clamp(first_step, last_step);
    let mut early_s = (early as u64)
        .min(first_step + (late_s - first_step) / 4)
        .max(first_step);
    let own_span = ((late_s - early_s) as f64) < min_span;
    if own_span {
        early_s = first_step;
        late_s = last_step;
    }
    let (Some((_, ve)), Some((_, vl))) = (at_step(&e, early_s), at_step(&e, late_s)) else {
        return vec![Verdict::skip("S4.1", "no loss around the comparison steps")];
    };
    let slope100 = (ve - vl) / ((late_s - early_s).max(1) as f64) * 100.0;
    let rel_drop = if ve.abs() > 1e-12 {
        (ve - last_v) / ve.abs()
    } else {
        0.0
    };
    let long_enough = last_step as f64 >= late;
    let mut measured = format!("EMA{span} loss {} at step {early_s} → {} at step {late_s} → {} at step {last_step} ({:+.1}%)", fmt(ve), fmt(vl), fmt(last_v), -100.0 * rel_drop);
    if own_span {
        measured.push_str(&format!(
            "; the loss is first logged at step {first_step}, after the window {early}..{late}: judged over the logged span"
        ));
    }
    // The seed's slope floor is in cross-entropy units (losses of order 1 and up); a loss at a
    // smaller scale (a regression on normalised targets at 1e-3) is held to the same floor
    // relative to its own level.
    let slope_floor = min_slope * ve.abs().clamp(1e-12, 1.0);
    // A resumed segment (or a fine-tune) starts near its floor: only a rising loss is judged;
    // "falls too slowly" is a start-of-run rule.
    let late_start = !ctx.profile.sees_run_start();
    // The loss rose well above where it started before it fell: the first updates overshot (an
    // LR or warmup too aggressive) and the run recovered, mostly. A window that opens on that
    // peak reads the recovery as learning; the rise itself is the finding. Judged on a 3-point
    // running median, so one noisy batch is no rise.
    let overshoot = early_overshoot(s);
    let (st, out, msg) = if vl >= ve && late_start {
        let rise = (vl - ve) / ve.abs().max(1e-12);
        if rise > min_drop {
            (Status::Fail, "rising", format!("the loss rises {:.1}% over the logged segment of a resumed run: check the restored optimizer and LR state (S6.2, S2.1)", 100.0 * rise))
        } else {
            return vec![Verdict::skip(
                "S4.1",
                format!("the logs begin mid-run (resumed at step {}): a late segment sits near its floor, and a flat slope there is not a start-of-run stall", ctx.profile.resumed_at.value.unwrap_or(first_step)),
            )
            .measured(measured)];
        }
    } else if late_start {
        (
            Status::Pass,
            "pass",
            "the loss does not rise over the resumed segment".to_string(),
        )
    } else if vl >= ve {
        (Status::Fail, "rising", "the loss is not falling (diverging or static): check the LR schedule (S2) and the optimizer state (S6)".to_string())
    } else if slope100 < slope_floor {
        (
            Status::Warn,
            "slow",
            format!(
                "falling by only {} per 100 steps: LR may be too low — try lr_max × 3 and re-walk",
                fmt(slope100)
            ),
        )
    } else if long_enough
        && rel_drop < min_drop
        && matches!(
            ctx.profile.init.value,
            crate::profile::Init::Pretrained | crate::profile::Init::Adapter
        )
    {
        return vec![Verdict::skip(
            "S4.1",
            format!("only {:.1}% lower over the run, but this is a fine-tune ({}): it may have started at its floor — judge against a baseline run or the update ratio (O22)", 100.0 * rel_drop, ctx.profile.init.why()),
        )
        .measured(measured)];
    } else if long_enough && rel_drop < min_drop {
        // Barely learning after the loss first rose above where it started: the LR is too high
        // (the run overshot and parked), and a larger one is the wrong advice.
        let first = s
            .points
            .iter()
            .find(|p| p.value.is_finite())
            .map(|p| p.value);
        let head = &s.points[..(s.points.len() / 5).max(1)];
        let early_peak = head
            .iter()
            .map(|p| p.value)
            .filter(|v| v.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        let overshot =
            first.is_some_and(|f| early_peak > OVERSHOOT_REL * f && early_peak - f > OVERSHOOT_ABS);
        // An Adam-family optimizer at lr ≥ 1e-2 is far above any usual recipe (1e-5…1e-3):
        // a loss parked there is an LR too high, whatever the curve's shape.
        let adam_lr = ctx
            .facts
            .f64("lr_max")
            .filter(|lr| *lr >= 1e-2)
            .filter(|_| {
                crate::probes::checkpoint::optimizer_state::newest_optimizer(ctx.run, "S4.1")
                    .is_ok_and(|(o, _)| o.groups.iter().any(|g| g.betas.is_some()))
            });
        if let Some(lr) = adam_lr {
            (Status::Warn, "slow", format!("only {:.1}% lower over the whole run with an Adam-family optimizer at lr {}: far above the usual 1e-5…1e-3 — the LR is too high, not too low; the loss parks where the updates overshoot (check the update ratio, O22)", 100.0 * rel_drop, fmt(lr)))
        } else if overshot {
            let lr = ctx
                .facts
                .f64("lr_max")
                .map(|lr| format!(" (lr_max {} here)", fmt(lr)))
                .unwrap_or_default();
            (Status::Warn, "slow", format!("only {:.1}% lower over the whole run, after the loss first rose to {} from {}: the LR is too high, not too low — lower it{lr} or lengthen the warmup", 100.0 * rel_drop, fmt(early_peak), fmt(first.unwrap_or(0.0))))
        } else {
            (Status::Warn, "slow", format!("only {:.1}% lower over the whole run: barely learning — check the actual LR (O23) and try a larger one (O7)", 100.0 * rel_drop))
        }
    } else if let Some((from, peak, at)) = overshoot {
        let lr = ctx
            .facts
            .f64("lr_max")
            .map(|lr| format!(" (lr_max {} here)", fmt(lr)))
            .unwrap_or_default();
        (Status::Warn, "overshot", format!("the loss first rose to {} at step {at} from {} before it fell: the first updates overshot and the run recovered — the LR is too high or its warmup too short; lower it{lr} or lengthen the warmup, and compare the final loss with a run at a third of the LR", fmt(peak), fmt(from)))
    } else {
        (Status::Pass, "pass", "the loss falls steadily".to_string())
    };
    vec![Verdict::new("S4.1", st, out)
        .measured(measured)
        .expected(format!(
            "falling, ≥ {min_slope} per 100 steps, ≥ {:.0}% over the run",
            100.0 * min_drop
        ))
        .message(msg)
        .evidence(series_evidence(s, first_step, last_step))
        .value("slope_per_100", slope100)
        .value("rel_drop", rel_drop)]
}
/// How far above its first value the loss must climb early in the run to count as an
/// overshoot: 20% and 0.1 (nats, or the loss's own units).
const OVERSHOOT_REL: f64 = 1.2;
const OVERSHOOT_ABS: f64 = 0.1;

/// An early overshoot: within the first fifth of the logged points, a 3-point running median of
/// the loss climbs above OVERSHOOT_REL × its first value (and by OVERSHOOT_ABS) and the series
/// later falls back below that peak. Returns (start, peak, step of
/// the peak).
fn early_overshoot(s: &crate::metrics::Series) -> Option<(f64, f64, u64)> {
    let pts = finite_points(s);
    if pts.len() < 15 {
        return None;
    }
    let med3 = |w: &[(u64, f64)]| {
        let mut v = [w[0].1, w[1].1, w[2].1];
        v.sort_by(f64::total_cmp);
        (w[1].0, v[1])
    };
    let smooth: Vec<(u64, f64)> = pts.windows(3).map(med3).collect();
    let start = pts[0].1;
    let head = &smooth[..(pts.len() / 5).max(3).min(smooth.len())];
    let &(at, peak) = head.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let end = smooth.last()?.1;
    (peak > OVERSHOOT_REL * start && peak - start > OVERSHOOT_ABS && end < peak)
        .then_some((start, peak, at))
}

/// A loss that lands on exactly 0 from a value of 0.5 or more and stays there: no optimiser
/// converges onto 0.0000 in one log interval. The loss went non-finite and was zeroed or
/// skipped, or every target was dropped — after a divergence when the loss first climbed.
fn dropped_to_zero(ctx: &ProbeCtx, s: &crate::metrics::Series) -> Option<Verdict> {
    let pts = &s.points;
    let i = pts
        .windows(2)
        .position(|w| w[0].value.is_finite() && w[0].value.abs() >= 0.5 && w[1].value == 0.0)?
        + 1;
    let rest = pts.get(i..)?;
    if rest.len() < 2 || rest.iter().any(|p| p.value != 0.0) {
        return None;
    }
    let unit = s.unit.as_str();
    let first = pts.first()?.value;
    let peak = pts[..i]
        .iter()
        .map(|p| p.value)
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    let diverged = peak > 10.0 * first.abs().max(1e-12);
    let lr = ctx
        .facts
        .f64("lr_max")
        .map(|lr| format!(" (learning rate {} here)", fmt(lr)))
        .unwrap_or_default();
    let why = if diverged {
        format!("it first climbed from {} to {}: the run diverged and its loss went non-finite — lower the learning rate{lr}, add warmup and gradient clipping", fmt(first), fmt(peak))
    } else {
        "the loss went non-finite and was zeroed, or every target was dropped (labels filtered out, an empty batch)".to_string()
    };
    Some(
        Verdict::new("S4.1", Status::Fail, "rising")
            .measured(format!(
                "loss {} at {unit} {} → exactly 0 from {unit} {} to the end ({} points)",
                fmt(pts[i - 1].value),
                pts[i - 1].step,
                pts[i].step,
                rest.len()
            ))
            .expected("a loss that approaches its floor, never exactly 0.0 in one interval")
            .message(format!(
                "the loss drops to exactly 0 and stays: not convergence — {why}"
            ))
            .evidence(series_evidence(s, pts[i - 1].step, pts[pts.len() - 1].step)),
    )
}

/// S4.1 on a loss logged once per epoch (each point an epoch's mean): step windows and a
/// 50-step EMA mean nothing here, so the question is whether the epoch means fall — the first
/// third of the epochs against the last third, with at least three epochs to judge.
/// Where a detection run's loss peaks, when that is past its first point and in the first half
/// of the run with at least `min_after` points from it on (see `epoch_trend`: an assigner's
/// loss climbs while it matches more boxes); None for any other run.
pub(crate) fn detector_loss_peak(
    ctx: &ProbeCtx,
    pts: &[(u64, f64)],
    min_after: usize,
) -> Option<usize> {
    let detector = ctx.profile.phase.value == crate::profile::Phase::Detection
        && ctx.profile.phase.sure >= crate::profile::Sure::Medium;
    let peak = pts
        .iter()
        .enumerate()
        .max_by(|x, y| x.1 .1.total_cmp(&y.1 .1))
        .map(|(i, _)| i)?;
    (detector && peak > 0 && peak < pts.len() / 2 && pts.len() - peak >= min_after).then_some(peak)
}

fn epoch_trend(ctx: &ProbeCtx, s: &crate::metrics::Series, min_drop: f64) -> Vec<Verdict> {
    let v = finite_points(s);
    if v.len() < 3 {
        return vec![Verdict::skip(
            "S4.1",
            format!(
                "{} epoch mean(s) of the loss: too few to judge a trend (need 3)",
                v.len()
            ),
        )];
    }
    // A detector's summed loss is no yardstick over its first epochs: an assigner (TAL, SimOTA,
    // ATSS) matches boxes to the predictions, so while the untrained head matches few, the box
    // and DFL terms are small, and they grow as it learns to localise. Such a loss rises to a
    // peak and falls from there; from a peak in the first half of the run on is what is judged.
    let peak = detector_loss_peak(ctx, &v, 3);
    let from_peak = peak.is_some();
    let v = match peak {
        Some(k) => v[k..].to_vec(),
        None => v,
    };
    let k = v.len().div_ceil(3);
    let mean = |xs: &[(u64, f64)]| xs.iter().map(|x| x.1).sum::<f64>() / xs.len() as f64;
    let (head, tail) = (mean(&v[..k]), mean(&v[v.len() - k..]));
    let rel = (head - tail) / head.abs().max(1e-12);
    let (a, b) = (v[0].0, v[v.len() - 1].0);
    let measured = format!(
        "loss per epoch{}: mean {} over epochs {a}..{} → {} over epochs {}..{b} ({:+.1}%)",
        if from_peak {
            format!(", from its peak at epoch {a} (a detector's assigner matches more boxes as it learns, so its loss first rises)")
        } else {
            String::new()
        },
        fmt(head),
        v[k - 1].0,
        fmt(tail),
        v[v.len() - k].0,
        -100.0 * rel
    );
    let late_start = !ctx.profile.sees_run_start();
    let (st, out, msg) = if tail >= head && !late_start {
        (
            Status::Fail,
            "rising",
            "the epoch means do not fall (diverging or static): check the LR (S2) and the optimizer state (S6)",
        )
    } else if rel < min_drop && !late_start {
        (
            Status::Warn,
            "slow",
            "the epoch means barely fall: check the actual LR (O23) and the data",
        )
    } else {
        (Status::Pass, "pass", "the loss falls from epoch to epoch")
    };
    vec![Verdict::new("S4.1", st, out)
        .measured(measured)
        .expected(format!(
            "the last third of the epochs ≥ {:.0}% below the first",
            100.0 * min_drop
        ))
        .message(msg)
        .evidence(series_evidence(s, a, b))
        .value("rel_drop", rel)]
}

pub(super) const VAL_GAP: ProbeSpec = ProbeSpec {
    id: "val_gap",
    entries: &["S4.2"],
    inputs: &["metrics:loss", "metrics:eval_loss"],
    params: &[
        "overfit_gap",
        "by_step",
        "leak_gap",
        "ema_span",
        "overfit_rel_min",
        "overfit_rel",
        "overfit_abs_min",
        "leak_rel",
        "still_best_tol",
    ],
    outcomes: &["pass", "overfit", "leak", "skip"],
    run: val_gap,
};

pub fn val_gap(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (overfit, by_step, leak, span) = (
        p!(ctx, "overfit_gap"),
        p!(ctx, "by_step"),
        p!(ctx, "leak_gap"),
        p!(ctx, "ema_span"),
    );
    let (rel_min, rel_over, abs_min, leak_rel, best_tol) = (
        p!(ctx, "overfit_rel_min"),
        p!(ctx, "overfit_rel"),
        p!(ctx, "overfit_abs_min"),
        p!(ctx, "leak_rel"),
        p!(ctx, "still_best_tol"),
    );
    // Scale-free: a gap counts against the loss level at the same step. An absolute gap above
    // overfit_gap must also be rel_min of the training loss (1.0 on a loss of 8 is noise).
    let abs_away = |gap: f64, train: f64| gap > overfit && gap / train.abs().max(1e-12) > rel_min;
    let m = ctx.run.metrics();
    let (Some(tr), Some(ev)) = (m.get("loss"), m.get("eval_loss")) else {
        return vec![Verdict::skip(
            "S4.2",
            "needs both a training loss and an eval/val loss series",
        )];
    };
    // A gap below overfit_gap but overfit_rel × the training loss (0.1 vs 0.6) runs away only
    // once validation has stopped improving: a training loss near 0 on a small set sits far
    // below a validation loss that is still falling, and that is the generalisation gap of a
    // healthy run, not overfitting. Overfitting is validation getting worse while training
    // improves, so the relative gap needs the last eval well above its earlier best (by
    // still_best_tol of it: a late rise of a few percent is noise or mild, a quarter is a trend).
    let evals: Vec<f64> = ev
        .points
        .iter()
        .map(|p| p.value)
        .filter(|v| v.is_finite())
        .collect();
    let still_best = match evals.split_last() {
        Some((last, before)) if !before.is_empty() => {
            let best = before.iter().copied().fold(f64::INFINITY, f64::min);
            *last <= best + best_tol * best.abs()
        }
        _ => false,
    };
    let runs_away = |gap: f64, train: f64| {
        abs_away(gap, train)
            || (!still_best && gap > abs_min && gap / train.abs().max(1e-12) > rel_over)
    };
    let e = ema(&tr.points, span);
    let mut gaps = Vec::new();
    for p in ev.points.iter().filter(|p| p.value.is_finite()) {
        if let Some((_, t)) = at_step(&e, p.step) {
            gaps.push((p.step, p.value - t, p.value, t));
        }
    }
    let Some(&(step, gap, v, t)) = gaps.last() else {
        return vec![Verdict::skip(
            "S4.2",
            "no eval point overlaps the training loss",
        )];
    };
    // An early gap counts only when it never closes: a gap that closes later (the final val
    // loss at or below the training loss) was the start of the run, not overfitting — saying
    // "gap 15 at step 50" next to a final gap of −0.1 would contradict itself.
    let early_overfit = gaps
        .iter()
        .enumerate()
        .find(|(i, g)| {
            runs_away(g.1, g.3)
                && g.0 as f64 <= by_step
                && gaps
                    .get(i + 1..)
                    .is_some_and(|rest| rest.iter().all(|x| x.1 > 0.0))
        })
        .map(|(_, g)| *g);
    let (st, out, msg) = if runs_away(gap, t) || early_overfit.is_some() {
        (Status::Fail, "overfit", format!("validation loss runs away from training loss{}: raise weight_decay (try 0.2), reduce capacity, or add data", early_overfit.map(|g| format!(" (gap {} already at step {})", fmt(g.1), g.0)).unwrap_or_default()))
    } else if still_best && gap > abs_min && gap / t.abs().max(1e-12) > rel_over {
        (Status::Pass, "pass", format!("validation loss is {:.0}% above the training loss but at the last eval still within {:.0}% of its best: a generalisation gap (and at most a mild late rise), not overfitting (that shows as validation climbing well past its best)", 100.0 * gap / t.abs().max(1e-12), 100.0 * best_tol))
    } else if gap < -leak && -gap / t.abs().max(1e-12) > leak_rel {
        // The leak leaf needs the ordinary causes ruled out first: training-only regularisation
        // (dropout, label smoothing, input noise, augmentation, mixup) puts validation below
        // training in healthy runs, and a log cannot say whether any is on. A leak of training
        // items brings validation down to training, not clearly below it. Not judged.
        return vec![Verdict::skip(
            "S4.2",
            format!(
                "validation sits {} below training at step {step} (val {}, train EMA {}): what training-only regularisation does (dropout, label smoothing, augmentation); a log cannot rule that out, so a leak (training items in the val set) is not judged — with all of it off, compare both losses in eval mode",
                fmt(-gap),
                fmt(v),
                fmt(t)
            ),
        )];
    } else {
        (
            Status::Pass,
            "pass",
            "validation tracks training".to_string(),
        )
    };
    vec![Verdict::new("S4.2", st, out)
        .measured(format!(
            "val − train = {} at step {step} (val {}, train EMA {})",
            fmt(gap),
            fmt(v),
            fmt(t)
        ))
        .expected(format!(
            "gap ≤ {overfit} or ≤ {:.0}% of the training loss (by step {by_step}), under {:.0}% of it at any scale once validation stops improving, and ≥ −{leak}",
            100.0 * rel_min,
            100.0 * rel_over
        ))
        .message(msg)
        .evidence(series_evidence(ev, ev.points[0].step, step))
        .value("gap", gap)]
}
pub(super) const LOSS_DEGENERATE: ProbeSpec = ProbeSpec {
    id: "loss_degenerate",
    entries: &["L2", "O15", "F25", "V5", "L6", "F22"],
    inputs: &["metrics:loss"],
    params: &["zero_abs", "first_steps"],
    outcomes: &["pass", "zero", "nan", "skip"],
    run: loss_degenerate,
};

pub fn loss_degenerate(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (zero, first) = (p!(ctx, "zero_abs"), p!(ctx, "first_steps"));
    let s = match need(ctx, "loss", "L2") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let k = (first.max(1.0) as usize).min(s.points.len());
    let head = &s.points[..k];
    let (a, b) = (head[0].step, head[k - 1].step);
    if head
        .iter()
        .all(|p| p.value.is_finite() && p.value.abs() <= zero)
    {
        return vec![Verdict::new("L2", Status::Fail, "zero")
            .measured(format!("loss = 0 exactly over the first {k} logged steps"))
            .expected("a positive loss near ln V at the start")
            .message("every label is -100 (all masked): the model learns nothing — check the collator's masking (decode one label row)")
            .evidence(series_evidence(s, a, b))];
    }
    if head.iter().any(|p| !p.value.is_finite()) {
        let vision = ctx.facts.get("domain") == Some("vision")
            || (ctx.facts.get("num_classes").is_some() && ctx.facts.get("vocab_size").is_none());
        // For a language model, NaN from the first steps is most often a batch whose labels
        // are all -100: a mean over zero tokens is 0/0 (HF Trainer and TRL log NaN). The
        // z-loss story (L6) is a late-run drift, never a step-1 NaN.
        let entry = if vision { "V5" } else { "L2" };
        return vec![Verdict::new(entry, Status::Fail, "nan")
            .measured(format!("non-finite loss within the first {k} steps"))
            .expected("finite loss from step 1")
            .message(if vision { "NaN from the start: a void label (255) counted as a class, labels ≥ num_classes, or sigmoid+BCELoss log(0)" } else { "NaN from the start: every label masked (-100) makes the mean loss 0/0 — decode one label row and check the collator's masking; otherwise an overflow in the first forward (init scale, fp16 logits)" })
            .evidence(series_evidence(s, a, b))];
    }
    if let Some(p) = s.points.iter().find(|p| !p.value.is_finite()) {
        let entry = nonfinite_entry(ctx.profile);
        return vec![Verdict::new(entry, Status::Fail, "nan")
            .measured(format!("loss becomes non-finite at step {}", p.step))
            .expected("finite loss throughout")
            .message(if entry == "L6" { "the loss diverged to NaN/Inf mid-run: logit drift / low-precision overflow — z-loss, grad clipping, bf16 over fp16, lower LR" } else { "the loss diverged to NaN/Inf mid-run: look at what moved in the steps before it (nan_onset: the LR's peak, a rising grad norm, fp16 overflow) — lower LR, grad clipping, bf16 over fp16" })
            .evidence(series_evidence(s, p.step, p.step))];
    }
    vec![Verdict::new("L2", Status::Pass, "pass")
        .measured("loss finite and non-zero from the start")
        .expected("no exactly-zero or NaN loss")
        .message("the loss is neither masked away nor non-finite")
        .evidence(series_evidence(s, a, b))]
}

/// The first point where the loss multiplies (× `blowup_factor`, by at least `blowup_abs`)
/// over the lowest loss logged in the `blowup_steps` steps before it, as a failure.
fn blowup(ctx: &ProbeCtx, s: &crate::metrics::Series) -> Option<Verdict> {
    let (factor, within, abs) = (
        ctx.params.f64("blowup_factor").ok()?,
        ctx.params.f64("blowup_steps").ok()? as u64,
        ctx.params.f64("blowup_abs").ok()?,
    );
    let pts: Vec<&crate::metrics::Point> =
        s.points.iter().filter(|p| p.value.is_finite()).collect();
    // A loss logged at every step is one batch's loss: one hard batch jumps ×3 and the next is
    // back (S3.2's "one unusual batch"). There the jump counts when the next logged batch is up
    // too; a loss averaged over several steps (HF's logging_steps) jumps as a whole window.
    let per_batch = s.interval() == Some(1);
    for (i, p) in pts.iter().enumerate() {
        let Some(low) = pts[..i]
            .iter()
            .rev()
            .take_while(|q| p.step - q.step <= within)
            .min_by(|a, b| a.value.total_cmp(&b.value))
        else {
            continue;
        };
        let up = |v: f64| v >= factor * low.value && v - low.value >= abs;
        let held = !per_batch
            || s.points
                .iter()
                .find(|q| q.step > p.step)
                .is_none_or(|q| !q.value.is_finite() || up(q.value));
        if low.value > 0.0 && up(p.value) && held {
            let lr = match ctx.facts.f64("lr_max") {
                Some(lr) => format!(" (lr_max is {} here)", fmt(lr)),
                None => String::new(),
            };
            let last = pts.last().map(|q| q.value).unwrap_or(p.value);
            // An epoch-indexed log (Ultralytics, timm, Keras) says epochs, not steps.
            let u = s.unit.as_str();
            return Some(
                Verdict::new("S4.1", Status::Fail, "rising")
                    .measured(format!(
                        "loss {} at {u} {} → {} at {u} {} (×{:.1} in {} {u}s); {} at the end",
                        fmt(low.value),
                        low.step,
                        fmt(p.value),
                        p.step,
                        p.value / low.value,
                        p.step - low.step,
                        fmt(last)
                    ))
                    .expected(format!("no ×{factor} jump within {within} {u}s"))
                    .message(format!(
                        "the loss diverged at {u} {}: it multiplied ×{:.1} within {} {u}s — an event, whatever comes after (a loss that recovers to a plateau has usually lost what it learned). Lower the LR{lr} or lengthen the warmup, then check the grad-norm spikes (S3.2)",
                        p.step,
                        p.value / low.value,
                        p.step - low.step
                    ))
                    .evidence(series_evidence(s, low.step, p.step))
                    .value("blowup", p.value / low.value),
            );
        }
    }
    None
}
