//! Probes over metric logs: init loss vs ln V, first-step grad norm, LR schedule shape and
//! warmup peak, grad-norm band and spikes, loss trend, val-train gap, degenerate loss, fp16
//! loss scale, DPO and PPO health, grad-norm ratio against a baseline, seed spread,
//! activation growth and dead units from logged series.

use crate::metrics::{Point, Series};
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use super::util::{
    at_step, ema, fmt, head_mean, iqm, median, rolling_mean, series_evidence, tail_mean,
};

macro_rules! p {
    ($ctx:expr, $k:expr) => {
        match $ctx.params.f64($k) {
            Ok(v) => v,
            Err(e) => return vec![Verdict::skip("", format!("playbook: {e}"))],
        }
    };
}

fn need<'a>(ctx: &'a ProbeCtx, name: &str, entry: &str) -> Result<&'a Series, Vec<Verdict>> {
    ctx.run.metrics().get(name).ok_or_else(|| {
        vec![Verdict::skip(
            entry,
            format!("no `{name}` series in the run's logs"),
        )]
    })
}

fn first_finite(s: &Series) -> Option<&Point> {
    s.points.iter().find(|p| p.value.is_finite())
}

/// ln V from facts (vocab_size, else num_classes).
fn log_v(ctx: &ProbeCtx) -> Option<(f64, String)> {
    if let Some(v) = ctx.facts.u64("vocab_size").filter(|v| *v > 1) {
        return Some(((v as f64).ln(), format!("ln V = ln {v}")));
    }
    ctx.facts
        .u64("num_classes")
        .filter(|v| *v > 1)
        .map(|c| ((c as f64).ln(), format!("ln C = ln {c}")))
}

// ---------------------------------------------------------------------------------------
pub fn init_loss(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (band, hi, lo, max_first) = (
        p!(ctx, "band"),
        p!(ctx, "high_margin"),
        p!(ctx, "low_margin"),
        p!(ctx, "max_first_step"),
    );
    let s = match need(ctx, "loss", "S1.1") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let Some(first) = first_finite(s) else {
        return vec![Verdict::skip("S1.1", "the loss series has no finite value")];
    };
    if first.step as f64 > max_first {
        return vec![Verdict::skip(
            "S1.1",
            format!(
                "first logged loss is at step {} (> {max_first}): not a step-0 loss",
                first.step
            ),
        )];
    }
    let Some((lnv, label)) = log_v(ctx) else {
        return vec![Verdict::skip(
            "S1.1",
            "needs fact vocab_size (or num_classes) — none in config.json either",
        )
        .measured(format!("loss(step {}) = {}", first.step, fmt(first.value)))];
    };
    if ctx.facts.bool("from_scratch") == Some(false) {
        return vec![Verdict::skip(
            "S1.1",
            "from_scratch=false: a fine-tune starts below ln V by design",
        )
        .measured(format!("loss(step {}) = {}", first.step, fmt(first.value)))];
    }
    let d = first.value - lnv;
    let measured = format!(
        "loss(step {}) = {} ({}{} vs {label} = {})",
        first.step,
        fmt(first.value),
        if d >= 0.0 { "+" } else { "" },
        fmt(d),
        fmt(lnv)
    );
    let expected = format!(
        "{} ± {band} = [{}, {}]",
        fmt(lnv),
        fmt(lnv - band),
        fmt(lnv + band)
    );
    let (status, outcome, msg) = if d.abs() <= band {
        (
            Status::Pass,
            "pass",
            "the run starts untrained, as a from-scratch run should".to_string(),
        )
    } else if d > hi {
        (Status::Fail, "high", format!("far above {label}: init is broken (weights too large) or the output-head bias is non-zero — check init statistics (S5.1)"))
    } else if d < -lo {
        let st = if ctx.facts.bool("from_scratch") == Some(true) {
            Status::Fail
        } else {
            Status::Warn
        };
        (st, "low", "well below chance: the model is not untrained — weights were loaded (expected when fine-tuning; set from_scratch=false) or the seed/checkpoint is wrong".to_string())
    } else if d > 0.0 {
        (
            Status::Warn,
            "pass",
            format!("above {label} by more than {band}: init slightly too large or a skewed head"),
        )
    } else {
        (
            Status::Warn,
            "pass",
            format!(
                "below {label} by more than {band}: partly trained weights or an easy first batch"
            ),
        )
    };
    vec![Verdict::new("S1.1", status, outcome)
        .measured(measured)
        .expected(expected)
        .message(msg)
        .evidence(series_evidence(s, first.step, first.step))
        .value("loss0", first.value)
        .value("ln_v", lnv)
        .value("delta", d)]
}

pub fn first_grad_norm(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (plo, phi, fhi, flo, max_first) = (
        p!(ctx, "pass_lo"),
        p!(ctx, "pass_hi"),
        p!(ctx, "fail_hi"),
        p!(ctx, "fail_lo"),
        p!(ctx, "max_first_step"),
    );
    let s = match need(ctx, "grad_norm", "S1.2") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let Some(first) = s.points.first() else {
        return vec![Verdict::skip("S1.2", "empty grad_norm series")];
    };
    if first.step as f64 > max_first {
        return vec![Verdict::skip(
            "S1.2",
            format!(
                "first logged grad norm is at step {} (> {max_first})",
                first.step
            ),
        )];
    }
    let g = first.value;
    let (status, outcome, msg) = if !g.is_finite() {
        (
            Status::Fail,
            "high",
            "non-finite gradient norm on the first step: overflow from init or the loss"
                .to_string(),
        )
    } else if g > fhi {
        (Status::Fail, "high", "huge first-step gradients: init is wrong (S5.1) or the loss uses reduction='sum' where 'mean' was meant".into())
    } else if g < flo {
        (Status::Fail, "low", "almost no gradient: degenerate data (every target the same) or a loss mask that zeroes everything".into())
    } else if (plo..=phi).contains(&g) {
        (
            Status::Pass,
            "pass",
            "first-step gradient norm in the healthy band".into(),
        )
    } else if g > phi {
        (
            Status::Warn,
            "pass",
            format!("above {phi}: large for a first step; watch init scale and loss reduction"),
        )
    } else {
        (
            Status::Warn,
            "pass",
            format!("below {plo}: small for a first step; check the loss mask"),
        )
    };
    vec![Verdict::new("S1.2", status, outcome)
        .measured(format!("grad_norm(step {}) = {}", first.step, fmt(g)))
        .expected(format!("[{plo}, {phi}]; fail > {fhi} or < {flo}"))
        .message(msg)
        .evidence(series_evidence(s, first.step, first.step))
        .value("grad_norm0", g)]
}

// ---------------------------------------------------------------------------------------

/// The declared schedule's LR at `step` (1-based logged steps), or None for unknown kinds.
fn declared_lr(
    kind: &str,
    lr_max: f64,
    warmup: f64,
    total: f64,
    t: f64,
    shift: f64,
) -> Option<f64> {
    let w = warmup.max(0.0);
    let tt = (t - shift).max(0.0);
    if tt < w && w > 0.0 {
        return Some(lr_max * tt / w);
    }
    let span = (total - w).max(1.0);
    let frac = ((tt - w) / span).clamp(0.0, 1.0);
    match kind {
        "warmup_cosine" | "cosine" => {
            Some(lr_max * 0.5 * (1.0 + (std::f64::consts::PI * frac).cos()))
        }
        "warmup_linear" | "linear" => Some(lr_max * (1.0 - frac)),
        "constant" | "constant_with_warmup" => Some(lr_max),
        _ => None,
    }
}

pub fn lr_schedule(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (flat, zero, jump, fit_tol) = (
        p!(ctx, "flat_rel_tol"),
        p!(ctx, "zero_abs"),
        p!(ctx, "jump_rel"),
        p!(ctx, "fit_rel_tol"),
    );
    let s = match need(ctx, "learning_rate", "S2.1") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let pts: Vec<&Point> = s.points.iter().filter(|p| p.value.is_finite()).collect();
    if pts.is_empty() {
        return vec![Verdict::skip(
            "S2.1",
            "the learning-rate series has no finite value",
        )];
    }
    let (a, b) = (pts[0].step, pts[pts.len() - 1].step);
    let ev = series_evidence(s, a, b);
    let lo = pts.iter().map(|p| p.value).fold(f64::INFINITY, f64::min);
    let hi = pts
        .iter()
        .map(|p| p.value)
        .fold(f64::NEG_INFINITY, f64::max);
    let declared = ctx
        .facts
        .get("schedule")
        .map(|x| x.trim().to_ascii_lowercase());
    let warmup = ctx.facts.f64("warmup_steps").unwrap_or(0.0);
    let lr_max = ctx.facts.f64("lr_max");
    let decl_text = declared.clone().unwrap_or_else(|| "none declared".into());
    let base = |st: Status, out: &str| {
        Verdict::new("S2.1", st, out)
            .evidence(ev.clone())
            .value("lr_min", lo)
            .value("lr_max_logged", hi)
            .value("points", pts.len() as f64)
    };
    if hi <= zero {
        return vec![base(Status::Fail, "constant_zero")
            .measured(format!("LR = 0 at every logged step ({} points)", pts.len()))
            .expected(format!("schedule: {decl_text}"))
            .message("the LR is zero throughout: warmup multiplies a param_group[\"lr\"] of 0 — initialise param_group[\"lr\"] = lr_max and let the scheduler scale it")];
    }
    if pts.len() >= 2 && (hi - lo) / hi <= flat {
        let measured = format!("LR constant at {} over steps {a}..{b}", fmt(hi));
        return match declared.as_deref() {
            Some(d) if d != "constant" => {
                let mut msg = format!("declared {d} but the LR never moves: the scheduler is never stepped (call scheduler.step() after optimizer.step()), or the optimizer is rebuilt each step and loses the schedule");
                if let Some(m) = lr_max {
                    msg.push_str(&format!("; it sits at {}× lr_max {}", fmt(hi / m), fmt(m)));
                }
                vec![base(Status::Fail, "constant_nonzero").measured(measured).expected(format!("{d} (warmup {warmup}, lr_max {})", lr_max.map(fmt).unwrap_or("?".into()))).message(msg)]
            }
            _ => vec![base(Status::Pass, "pass").measured(measured).expected(format!("schedule: {decl_text}")).message("constant LR, and no other schedule declared (pass --fact schedule=… if one was configured)")],
        };
    }
    // Jumps: large one-step relative changes outside warmup.
    // A jump is a large relative change that is also far larger than the curve's typical
    // step-to-step change (so a linear warmup ramp or the tail of a cosine never counts).
    let deltas: Vec<f64> = pts
        .windows(2)
        .map(|w| (w[1].value - w[0].value).abs())
        .collect();
    let typical = median(&deltas).unwrap_or(0.0);
    let mut jumps = Vec::new();
    for w in pts.windows(2) {
        let (p0, p1) = (w[0], w[1]);
        if p0.value <= zero || (p1.step as f64) <= warmup + 1.0 {
            continue;
        }
        let d = (p1.value - p0.value).abs();
        let rel = d / p0.value.max(p1.value);
        if rel > jump && d > 10.0 * typical && p1.step.saturating_sub(p0.step) <= 2 {
            jumps.push(p1.step);
        }
    }
    if !jumps.is_empty() {
        let measured = format!(
            "{} discontinuous jump(s), first at step {}",
            jumps.len(),
            jumps[0]
        );
        return match declared.as_deref() {
            Some("step") | None => vec![base(Status::Pass, "pass").measured(measured).expected(format!("schedule: {decl_text}")).message("step-decay LR (drops between plateaus)")],
            Some(d) => vec![base(Status::Fail, "jumps").measured(measured).expected(format!("smooth {d}")).message("the LR jumps: this is a step-decay schedule, not the declared one — match the scheduler to the config")],
        };
    }
    // Fit against the declared curve when enough is known.
    if let (Some(d), Some(m)) = (declared.as_deref(), lr_max) {
        let total = ctx
            .facts
            .f64("total_steps")
            .unwrap_or(b as f64)
            .max(b as f64);
        let dev_for = |shift: f64| -> Option<f64> {
            let mut devs = Vec::new();
            for p in &pts {
                let e = declared_lr(d, m, warmup, total, p.step as f64, shift)?;
                if e > 0.05 * m {
                    devs.push((p.value - e).abs() / e);
                }
            }
            median(&devs)
        };
        if let Some(dev) = [0.0, 1.0]
            .iter()
            .filter_map(|s| dev_for(*s))
            .reduce(f64::min)
        {
            let v = base(
                if dev <= fit_tol {
                    Status::Pass
                } else {
                    Status::Warn
                },
                if dev <= fit_tol { "pass" } else { "mismatch" },
            )
            .measured(format!(
                "median deviation {:.1}% from {d} (peak {})",
                100.0 * dev,
                fmt(hi)
            ))
            .expected(format!(
                "≤ {:.0}% from {d} (lr_max {}, warmup {warmup}, {total} steps)",
                100.0 * fit_tol,
                fmt(m)
            ))
            .value("fit_dev", dev);
            return vec![if dev <= fit_tol {
                v.message("the logged LR follows the declared schedule")
            } else {
                v.message("the logged LR does not follow the declared schedule: check scheduler cadence (per optimizer step, not per micro-batch or per epoch) and total_steps")
            }];
        }
    }
    vec![base(Status::Pass, "pass")
        .measured(format!(
            "LR varies {}..{} over steps {a}..{b}, no jumps",
            fmt(lo),
            fmt(hi)
        ))
        .expected(format!("schedule: {decl_text}"))
        .message(
            "the LR moves smoothly (declare --fact schedule=… lr_max=… warmup_steps=… to fit it)",
        )]
}

pub fn lr_warmup_peak(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (pass_rel, fail_ratio) = (p!(ctx, "pass_rel"), p!(ctx, "fail_ratio"));
    let s = match need(ctx, "learning_rate", "S2.2") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let (Some(w), Some(m)) = (
        ctx.facts.u64("warmup_steps"),
        ctx.facts.f64("lr_max").filter(|m| *m > 0.0),
    ) else {
        return vec![Verdict::skip("S2.2", "needs facts warmup_steps and lr_max")];
    };
    let near: Vec<&Point> = s
        .range(w.saturating_sub(1), w + 2)
        .iter()
        .filter(|p| p.value.is_finite())
        .collect();
    let Some(best) = near.iter().max_by(|a, b| a.value.total_cmp(&b.value)) else {
        return vec![Verdict::skip(
            "S2.2",
            format!("no LR logged around step {w}"),
        )];
    };
    let r = best.value / m;
    let (st, out, msg) = if (r - 1.0).abs() <= pass_rel {
        (Status::Pass, "pass", "warmup reaches lr_max on time")
    } else if r < fail_ratio {
        (Status::Fail, "low", "LR at the end of warmup is under half of lr_max: an off-by-one in the warmup formula (t/W vs (t+1)/W at small W), or the schedule is not applied")
    } else {
        (
            Status::Warn,
            "low",
            "LR at the end of warmup misses lr_max by more than 5%",
        )
    };
    vec![Verdict::new("S2.2", st, out)
        .measured(format!(
            "LR(step {}) = {} = {:.2}× lr_max",
            best.step,
            fmt(best.value),
            r
        ))
        .expected(format!(
            "within {:.0}% of lr_max {}",
            100.0 * pass_rel,
            fmt(m)
        ))
        .message(msg)
        .evidence(series_evidence(s, best.step, best.step))
        .value("ratio", r)]
}

// ---------------------------------------------------------------------------------------
pub fn grad_norm_band(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (window, high, low, high_frac) = (
        p!(ctx, "window"),
        p!(ctx, "high"),
        p!(ctx, "low"),
        p!(ctx, "high_frac"),
    );
    let s = match need(ctx, "grad_norm", "S3.1") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let r = rolling_mean(&s.points, window.max(1.0) as usize);
    if r.is_empty() {
        return vec![Verdict::skip("S3.1", "no finite grad-norm values")];
    }
    let n = r.len() as f64;
    let above = r.iter().filter(|x| x.1 > high).count() as f64;
    let below = r.iter().filter(|x| x.1 < low).count() as f64;
    let mx = r.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    let mn = r.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let (a, b) = (s.points[0].step, s.points[s.points.len() - 1].step);
    let (st, out, msg) = if above / n >= high_frac {
        (Status::Fail, "high", format!("always-clipping regime ({:.0}% of windows above {high}): LR too high, batch too small, or a pathological example — halve lr_max and re-walk", 100.0 * above / n))
    } else if below / n >= 0.5 {
        (Status::Fail, "low", "dead training: the loss mask zeroes most tokens, every parameter is frozen, or the LR is too small for updates to land".to_string())
    } else if above > 0.0 {
        (
            Status::Warn,
            "high",
            format!(
                "rolling grad norm above {high} in {:.0}% of windows",
                100.0 * above / n
            ),
        )
    } else if below > 0.0 {
        (
            Status::Warn,
            "low",
            format!(
                "rolling grad norm below {low} in {:.0}% of windows",
                100.0 * below / n
            ),
        )
    } else {
        (
            Status::Pass,
            "pass",
            "gradient norm stays in band".to_string(),
        )
    };
    vec![Verdict::new("S3.1", st, out)
        .measured(format!(
            "{}-step rolling mean in [{}, {}]",
            window,
            fmt(mn),
            fmt(mx)
        ))
        .expected(format!("[{low}, {high}]"))
        .message(msg)
        .evidence(series_evidence(s, a, b))
        .value("rolling_max", mx)
        .value("rolling_min", mn)
        .value("frac_above", above / n)]
}

pub fn grad_norm_spikes(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (abs_spike, rel_spike, per, max_spikes, window) = (
        p!(ctx, "abs_spike"),
        p!(ctx, "rel_spike"),
        p!(ctx, "per_steps"),
        p!(ctx, "max_spikes"),
        p!(ctx, "window"),
    );
    let s = match need(ctx, "grad_norm", "S3.2") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let w = window.max(1.0) as usize;
    let vals: Vec<f64> = s.points.iter().map(|p| p.value).collect();
    let mut spikes = Vec::new();
    for (i, p) in s.points.iter().enumerate() {
        let v = p.value;
        let rel = if i >= w {
            median(&vals[i - w..i]).is_some_and(|m| m > 0.0 && v > rel_spike * m)
        } else {
            false
        };
        if !v.is_finite() || v > abs_spike || rel {
            spikes.push(p.step);
        }
    }
    let (a, b) = (s.points[0].step, s.points[s.points.len() - 1].step);
    let span = (b - a + 1).max(1) as f64;
    let rate = spikes.len() as f64 * per / span.max(per);
    let (st, out, msg) = if spikes.is_empty() {
        (Status::Pass, "pass", "no gradient spikes".to_string())
    } else if rate > max_spikes {
        (Status::Fail, "many", format!("{} spikes ({:.1} per {per} steps): instability — go to the loss-spike / NaN ladder (warmup, clip, lower LR, z-loss, bf16)", spikes.len(), rate))
    } else if spikes.len() == 1 {
        (
            Status::Warn,
            "once",
            format!(
                "one spike at step {}: clipping handled it; inspect that batch",
                spikes[0]
            ),
        )
    } else {
        (
            Status::Warn,
            "many",
            format!("{} spikes; inspect those batches", spikes.len()),
        )
    };
    let shown: Vec<String> = spikes.iter().take(8).map(|x| x.to_string()).collect();
    vec![Verdict::new("S3.2", st, out)
        .measured(format!(
            "{} step(s) above {abs_spike} or {rel_spike}× the rolling median{}",
            spikes.len(),
            if shown.is_empty() {
                String::new()
            } else {
                format!(" (steps {})", shown.join(", "))
            }
        ))
        .expected(format!("≤ 1 per {per} steps; fail above {max_spikes}"))
        .message(msg)
        .evidence(series_evidence(s, a, b))
        .value("spikes", spikes.len() as f64)]
}

// ---------------------------------------------------------------------------------------
pub fn loss_trend(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (span, early, late, min_slope, min_drop) = (
        p!(ctx, "ema_span"),
        p!(ctx, "early_step"),
        p!(ctx, "late_step"),
        p!(ctx, "min_slope_per_100"),
        p!(ctx, "min_rel_drop"),
    );
    let s = match need(ctx, "loss", "S4.1") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let e = ema(&s.points, span);
    let Some(&(last_step, last_v)) = e.last() else {
        return vec![Verdict::skip("S4.1", "no finite loss values")];
    };
    let first_step = e[0].0;
    if last_step < first_step + 20 || e.len() < 10 {
        return vec![Verdict::skip(
            "S4.1",
            format!("too few loss points ({}) to judge a trend", e.len()),
        )];
    }
    let late_s = (late as u64).min(last_step);
    let early_s = (early as u64)
        .min(first_step + (late_s - first_step) / 4)
        .max(first_step);
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
    let measured = format!("EMA{span} loss {} at step {early_s} → {} at step {late_s} → {} at step {last_step} ({:+.1}%)", fmt(ve), fmt(vl), fmt(last_v), -100.0 * rel_drop);
    let (st, out, msg) = if vl >= ve {
        (Status::Fail, "rising", "the loss is not falling (diverging or static): check the LR schedule (S2) and the optimizer state (S6)".to_string())
    } else if slope100 < min_slope {
        (
            Status::Warn,
            "slow",
            format!(
                "falling by only {} per 100 steps: LR may be too low — try lr_max × 3 and re-walk",
                fmt(slope100)
            ),
        )
    } else if long_enough && rel_drop < min_drop {
        (Status::Warn, "slow", format!("only {:.1}% lower over the whole run: barely learning — check the actual LR (O23) and try a larger one (O7)", 100.0 * rel_drop))
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

pub fn val_gap(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (overfit, by_step, leak, span) = (
        p!(ctx, "overfit_gap"),
        p!(ctx, "by_step"),
        p!(ctx, "leak_gap"),
        p!(ctx, "ema_span"),
    );
    let m = ctx.run.metrics();
    let (Some(tr), Some(ev)) = (m.get("loss"), m.get("eval_loss")) else {
        return vec![Verdict::skip(
            "S4.2",
            "needs both a training loss and an eval/val loss series",
        )];
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
    let early_overfit = gaps
        .iter()
        .find(|g| g.1 > overfit && g.0 as f64 <= by_step)
        .copied();
    let (st, out, msg) = if gap > overfit || early_overfit.is_some() {
        (Status::Fail, "overfit", format!("validation loss runs away from training loss{}: raise weight_decay (try 0.2), reduce capacity, or add data", early_overfit.map(|g| format!(" (gap {} already at step {})", fmt(g.1), g.0)).unwrap_or_default()))
    } else if gap < -leak {
        (Status::Warn, "leak", "validation loss sits well below training loss: the val set may contain training items (leak) — or heavy dropout/augmentation only in training".to_string())
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
        .expected(format!("gap ≤ {overfit} (by step {by_step}) and ≥ −{leak}"))
        .message(msg)
        .evidence(series_evidence(ev, ev.points[0].step, step))
        .value("gap", gap)]
}

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
        let entry = if vision { "V5" } else { "L6" };
        return vec![Verdict::new(entry, Status::Fail, "nan")
            .measured(format!("non-finite loss within the first {k} steps"))
            .expected("finite loss from step 1")
            .message(if vision { "NaN from the start: a void label (255) counted as a class, labels ≥ num_classes, or sigmoid+BCELoss log(0)" } else { "NaN from the start: overflow in the first forward (init scale, fp16 logits) or log(0) in the loss" })
            .evidence(series_evidence(s, a, b))];
    }
    if let Some(p) = s.points.iter().find(|p| !p.value.is_finite()) {
        return vec![Verdict::new("L6", Status::Fail, "nan")
            .measured(format!("loss becomes non-finite at step {}", p.step))
            .expected("finite loss throughout")
            .message("the loss diverged to NaN/Inf mid-run: logit drift / low-precision overflow — z-loss, grad clipping, bf16 over fp16, lower LR")
            .evidence(series_evidence(s, p.step, p.step))];
    }
    vec![Verdict::new("L2", Status::Pass, "pass")
        .measured("loss finite and non-zero from the start")
        .expected("no exactly-zero or NaN loss")
        .message("the loss is neither masked away nor non-finite")
        .evidence(series_evidence(s, a, b))]
}

pub fn grad_scaler(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (healthy, collapse, calib) = (
        p!(ctx, "healthy_min_log2"),
        p!(ctx, "collapse_log2"),
        p!(ctx, "calibration_frac"),
    );
    let s = match need(ctx, "loss_scale", "O24") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let fin: Vec<&Point> = s
        .points
        .iter()
        .filter(|p| p.value.is_finite() && p.value > 0.0)
        .collect();
    if fin.is_empty() {
        return vec![Verdict::skip(
            "O24",
            "the loss-scale series has no positive value",
        )];
    }
    let start = ((fin.len() as f64 * calib) as usize).min(fin.len() - 1);
    let after = &fin[start..];
    let last = after[after.len() - 1];
    let lmax = after
        .iter()
        .map(|p| p.value.log2())
        .fold(f64::NEG_INFINITY, f64::max);
    let llast = last.value.log2();
    let (st, out, msg) = if lmax < collapse {
        (Status::Fail, "collapsing", "the loss scale never recovers: fp16 overflow every step, optimizer steps skipped — switch fp16 → bf16, or keep logits/attention in fp32")
    } else if llast < healthy && llast < after[0].value.log2() {
        (
            Status::Warn,
            "collapsing",
            "the loss scale keeps backing off below 2^13: persistent fp16 overflow",
        )
    } else {
        (Status::Pass, "pass", "loss scale on a healthy plateau")
    };
    vec![Verdict::new("O24", st, out)
        .measured(format!(
            "scale 2^{:.1} at step {} (max after calibration 2^{:.1})",
            llast, last.step, lmax
        ))
        .expected(format!("plateau ≥ 2^{healthy}"))
        .message(msg)
        .evidence(series_evidence(s, fin[0].step, last.step))
        .value("log2_scale_last", llast)]
}

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
    let flat_margin = mt <= flat || acc.is_some_and(|a| a < min_acc);
    let (st, out, msg) = if flat_margin && both_fall {
        (Status::Fail, "collapse", "both log-probs plunge while the margin stays flat: collapse — lower learning_rate (≈1e-6, 1e-5 for LoRA), raise beta, and make sure the reference model is frozen")
    } else if flat_margin {
        (Status::Fail, "flat_margin", "the reward margin does not grow (accuracy near 0.5): beta too large for the signal, LR too low, or a lost ref_model — start beta=0.1 and check the data schema (L8)")
    } else if acc.is_some_and(|a| a < good_acc) {
        (
            Status::Warn,
            "flat_margin",
            "margin grows but preference accuracy stays below ~0.7",
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

pub fn ppo_health(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (target, factor, drop_frac, tail) = (
        p!(ctx, "kl_target"),
        p!(ctx, "kl_blowup_factor"),
        p!(ctx, "reward_drop_frac"),
        p!(ctx, "tail_frac"),
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
        } else if kt > target && kt > 3.0 * kh.max(1e-9) {
            (Status::Warn, "kl_blowup", "KL is growing past its target")
        } else {
            (Status::Pass, "pass", "KL stays bounded")
        };
        out.push(
            Verdict::new("R2", st, o)
                .measured(format!("KL tail mean {} (start {})", fmt(kt), fmt(kh)))
                .expected(format!("≤ {target} (fail above {})", target * factor))
                .message(msg)
                .evidence(series_evidence(
                    k,
                    k.points[0].step,
                    k.points[k.points.len() - 1].step,
                ))
                .value("kl_tail", kt),
        );
    }
    if let Some(r) = reward {
        let e = ema(&r.points, 20.0);
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
        let (st, o, msg) = if collapsed && kl_spiked {
            (Status::Fail, "reward_collapse", "reward fell after its peak while KL spiked: reward hacking / over-optimisation — stronger KL penalty, LR ≈ 1e-6, fewer PPO epochs, a length penalty if length is gamed")
        } else if collapsed {
            (
                Status::Warn,
                "reward_collapse",
                "reward dropped well below its peak",
            )
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
                .evidence(series_evidence(
                    r,
                    r.points[0].step,
                    r.points[r.points.len() - 1].step,
                )),
        );
    }
    out
}

pub fn grad_norm_ratio(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (tol, max_ratio) = (p!(ctx, "tolerance"), p!(ctx, "max_ratio"));
    let Some(base) = ctx.baseline else {
        return vec![Verdict::skip(
            "S6.3",
            "needs --baseline RUN (the same config without accumulation)",
        )];
    };
    let (Some(g), Some(gb)) = (
        ctx.run.metrics().get("grad_norm"),
        base.metrics().get("grad_norm"),
    ) else {
        return vec![Verdict::skip(
            "S6.3",
            "needs a grad_norm series in both runs",
        )];
    };
    let (Some(m), Some(mb)) = (median(&g.values()), median(&gb.values())) else {
        return vec![Verdict::skip("S6.3", "no finite grad norms")];
    };
    if mb <= 0.0 {
        return vec![Verdict::skip("S6.3", "baseline grad norm is zero")];
    }
    let r = m / mb;
    let k = ctx.facts.f64("accum_steps").filter(|k| *k > 1.0);
    let near_k = |k: f64| (r / k - 1.0).abs() <= tol;
    let (st, out, msg) = match k {
        Some(k) if near_k(k) => (Status::Fail, "k_times", format!("grad norm is {:.2}× the baseline ≈ accum_steps = {k}: the accumulated loss is not divided by accum_steps — loss = loss / accum_steps before backward()", r)),
        None if r > max_ratio && (r - r.round()).abs() <= tol * r.round() && r.round() >= 2.0 => (Status::Warn, "k_times", format!("grad norm ≈ {}× the baseline: if this run accumulates {} micro-batches, the loss is not divided by accum_steps", r.round(), r.round())),
        _ if r > max_ratio => (Status::Warn, "pass", format!("grad norm {:.2}× the baseline", r)),
        _ => (Status::Pass, "pass", "grad norm comparable to the baseline".to_string()),
    };
    vec![Verdict::new("S6.3", st, out)
        .measured(format!(
            "median grad norm {} vs baseline {} (×{:.2})",
            fmt(m),
            fmt(mb),
            r
        ))
        .expected(
            k.map(|k| format!("×1 (not ×{k})"))
                .unwrap_or_else(|| format!("≤ ×{max_ratio}")),
        )
        .message(msg)
        .evidence(series_evidence(
            g,
            g.points[0].step,
            g.points[g.points.len() - 1].step,
        ))
        .evidence(series_evidence(
            gb,
            gb.points[0].step,
            gb.points[gb.points.len() - 1].step,
        ))
        .value("ratio", r)]
}

pub fn seed_spread(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (min_seeds, tail) = (p!(ctx, "min_seeds"), p!(ctx, "tail_frac"));
    let metric = ["reward", "eval_loss", "loss"].into_iter().find(|n| {
        let mut srcs: Vec<_> = ctx
            .run
            .metrics()
            .all(n)
            .iter()
            .map(|s| s.source.clone())
            .collect();
        srcs.dedup();
        srcs.len() >= 2 || ctx.baseline.is_some_and(|b| b.metrics().get(n).is_some())
    });
    let Some(name) = metric else {
        return vec![Verdict::skip(
            "R6",
            "one run only: pass a folder of seed runs (or --baseline) to compare seeds",
        )];
    };
    let mut finals: Vec<(String, f64)> = Vec::new();
    for s in ctx.run.metrics().all(name) {
        if let Some(v) = tail_mean(s, tail) {
            finals.push((s.source.display().to_string(), v));
        }
    }
    if let Some(b) = ctx.baseline.and_then(|b| b.metrics().get(name).cloned()) {
        if let Some(v) = tail_mean(&b, tail) {
            finals.push((b.source.display().to_string(), v));
        }
    }
    finals.sort_by(|a, b| a.0.cmp(&b.0));
    finals.dedup_by(|a, b| a.0 == b.0);
    let vals: Vec<f64> = finals.iter().map(|x| x.1).collect();
    let n = vals.len();
    let iq = iqm(&vals).unwrap_or(f64::NAN);
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (st, out, msg) = if (n as f64) < min_seeds {
        (Status::Warn, "too_few", format!("only {n} seed(s): a single-seed difference is not a result — run ≥ {min_seeds} seeds and compare IQMs with confidence intervals"))
    } else {
        (
            Status::Pass,
            "pass",
            "enough seeds to compare aggregates".to_string(),
        )
    };
    vec![Verdict::new("R6", st, out)
        .measured(format!(
            "{n} runs: final {name} IQM {} (range {}..{})",
            fmt(iq),
            fmt(lo),
            fmt(hi)
        ))
        .expected(format!("≥ {min_seeds} seeds"))
        .message(msg)
        .value("seeds", n as f64)
        .value("iqm", iq)]
}

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

pub fn dead_units(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (dead, rise) = (p!(ctx, "dead_frac"), p!(ctx, "rise"));
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
        return vec![Verdict::skip(
            "O25",
            "no dead-unit / zero-activation fraction logged",
        )];
    }
    let mut worst: Option<(f64, f64, &Series)> = None;
    for s in series {
        let (Some(h), Some(t)) = (head_mean(s, 0.1), tail_mean(s, 0.1)) else {
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
        .evidence(series_evidence(
            s,
            s.points[0].step,
            s.points[s.points.len() - 1].step,
        ))]
}

pub const SPECS: &[ProbeSpec] = &[
    ProbeSpec {
        id: "init_loss",
        question: "Is the loss at the first logged step within ln V ± band?",
        entries: &["S1.1", "O1"],
        inputs: &["metrics:loss", "fact:vocab_size|num_classes"],
        params: &["band", "high_margin", "low_margin", "max_first_step"],
        outcomes: &["pass", "high", "low", "skip"],
        run: init_loss,
    },
    ProbeSpec {
        id: "first_grad_norm",
        question: "Is the first-step gradient norm in [0.1, 10]?",
        entries: &["S1.2"],
        inputs: &["metrics:grad_norm"],
        params: &["pass_lo", "pass_hi", "fail_hi", "fail_lo", "max_first_step"],
        outcomes: &["pass", "high", "low", "skip"],
        run: first_grad_norm,
    },
    ProbeSpec {
        id: "lr_schedule",
        question: "Does the logged LR follow the configured schedule?",
        entries: &["S2.1", "O8", "O23"],
        inputs: &[
            "metrics:learning_rate",
            "fact:schedule",
            "fact:lr_max",
            "fact:warmup_steps",
        ],
        params: &["flat_rel_tol", "zero_abs", "jump_rel", "fit_rel_tol"],
        outcomes: &[
            "pass",
            "constant_nonzero",
            "constant_zero",
            "jumps",
            "mismatch",
            "skip",
        ],
        run: lr_schedule,
    },
    ProbeSpec {
        id: "lr_warmup_peak",
        question: "At step warmup_steps, is the LR within 5% of lr_max?",
        entries: &["S2.2"],
        inputs: &["metrics:learning_rate", "fact:warmup_steps", "fact:lr_max"],
        params: &["pass_rel", "fail_ratio"],
        outcomes: &["pass", "low", "skip"],
        run: lr_warmup_peak,
    },
    ProbeSpec {
        id: "grad_norm_band",
        question: "Does the rolling grad norm stay in band?",
        entries: &["S3.1"],
        inputs: &["metrics:grad_norm"],
        params: &["window", "high", "low", "high_frac"],
        outcomes: &["pass", "high", "low", "skip"],
        run: grad_norm_band,
    },
    ProbeSpec {
        id: "grad_norm_spikes",
        question: "How many grad-norm spikes per 200 steps?",
        entries: &["S3.2"],
        inputs: &["metrics:grad_norm"],
        params: &[
            "abs_spike",
            "rel_spike",
            "per_steps",
            "max_spikes",
            "window",
        ],
        outcomes: &["pass", "once", "many", "skip"],
        run: grad_norm_spikes,
    },
    ProbeSpec {
        id: "loss_trend",
        question: "Does the loss EMA fall fast enough?",
        entries: &["S4.1", "O7"],
        inputs: &["metrics:loss"],
        params: &[
            "ema_span",
            "early_step",
            "late_step",
            "min_slope_per_100",
            "min_rel_drop",
        ],
        outcomes: &["pass", "rising", "slow", "skip"],
        run: loss_trend,
    },
    ProbeSpec {
        id: "val_gap",
        question: "Does val loss track train loss?",
        entries: &["S4.2"],
        inputs: &["metrics:loss", "metrics:eval_loss"],
        params: &["overfit_gap", "by_step", "leak_gap", "ema_span"],
        outcomes: &["pass", "overfit", "leak", "skip"],
        run: val_gap,
    },
    ProbeSpec {
        id: "loss_degenerate",
        question: "Is the loss exactly 0 or NaN from the start?",
        entries: &["L2", "O15", "F25", "V5", "L6"],
        inputs: &["metrics:loss"],
        params: &["zero_abs", "first_steps"],
        outcomes: &["pass", "zero", "nan", "skip"],
        run: loss_degenerate,
    },
    ProbeSpec {
        id: "grad_scaler",
        question: "Does the fp16 loss scale hold a high plateau?",
        entries: &["O24"],
        inputs: &["metrics:loss_scale"],
        params: &["healthy_min_log2", "collapse_log2", "calibration_frac"],
        outcomes: &["pass", "collapsing", "skip"],
        run: grad_scaler,
    },
    ProbeSpec {
        id: "dpo_health",
        question: "Do DPO margins grow without collapse?",
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
    },
    ProbeSpec {
        id: "ppo_health",
        question: "Is PPO KL bounded and reward stable?",
        entries: &["R2", "R1"],
        inputs: &["metrics:kl", "metrics:reward"],
        params: &[
            "kl_target",
            "kl_blowup_factor",
            "reward_drop_frac",
            "tail_frac",
        ],
        outcomes: &["pass", "kl_blowup", "reward_collapse", "skip"],
        run: ppo_health,
    },
    ProbeSpec {
        id: "grad_norm_ratio",
        question: "Is the grad norm k× the baseline's?",
        entries: &["S6.3", "O9"],
        inputs: &["metrics:grad_norm", "baseline", "fact:accum_steps"],
        params: &["tolerance", "max_ratio"],
        outcomes: &["pass", "k_times", "skip"],
        run: grad_norm_ratio,
    },
    ProbeSpec {
        id: "seed_spread",
        question: "How wide is the spread across seeds?",
        entries: &["R6", "F16"],
        inputs: &["metrics:reward|eval_loss|loss (several runs)"],
        params: &["min_seeds", "tail_frac"],
        outcomes: &["pass", "too_few", "wide", "skip"],
        run: seed_spread,
    },
    ProbeSpec {
        id: "activation_growth",
        question: "Does any layer amplify activations > 10×?",
        entries: &["S5.2"],
        inputs: &["metrics:act_norm/layer_N"],
        params: &["max_growth", "warn_growth"],
        outcomes: &["pass", "exploding", "skip"],
        run: activation_growth,
    },
    ProbeSpec {
        id: "dead_units",
        question: "Is a dead-unit fraction climbing?",
        entries: &["O25"],
        inputs: &["metrics:dead_frac"],
        params: &["dead_frac", "rise"],
        outcomes: &["pass", "dying", "skip"],
        run: dead_units,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Compute;
    use crate::facts::Facts;
    use crate::metrics::{MetricSet, Point, Series};
    use crate::probe::Params;
    use crate::run::Run;
    use std::path::Path;

    fn run_with(series: &[(&str, Vec<(u64, f64)>)]) -> Run {
        let set = MetricSet::new(
            series
                .iter()
                .map(|(tag, pts)| {
                    Series::from_points(
                        tag,
                        Path::new("synthetic.jsonl"),
                        pts.iter()
                            .map(|&(step, value)| Point {
                                step,
                                value,
                                wall_time: None,
                            })
                            .collect(),
                    )
                })
                .collect(),
        );
        Run::from_metrics(Path::new("synthetic"), set)
    }

    fn ask(f: fn(&ProbeCtx) -> Vec<Verdict>, run: &Run, facts: &[&str], params: Params) -> Verdict {
        let facts = Facts::from_args(facts).unwrap();
        let c = Compute::cpu();
        f(&ProbeCtx {
            run,
            facts: &facts,
            params: &params,
            compute: &c,
            baseline: None,
        })
        .remove(0)
    }

    fn lr_params() -> Params {
        Params::new()
            .with("flat_rel_tol", 0.01)
            .with("zero_abs", 1e-12)
            .with("jump_rel", 0.5)
            .with("fit_rel_tol", 0.15)
    }

    fn warmup_cosine(t: u64, w: f64, total: f64, m: f64) -> f64 {
        let t = t as f64 - 1.0; // HF logs LR 0.0 at step 1
        if t < w {
            m * t / w
        } else {
            m * 0.5 * (1.0 + (std::f64::consts::PI * (t - w) / (total - w)).cos())
        }
    }

    #[test]
    fn init_loss_against_ln_v() {
        let p = Params::new()
            .with("band", 0.5)
            .with("high_margin", 1.76)
            .with("low_margin", 2.24)
            .with("max_first_step", 20.0);
        let healthy = run_with(&[("loss", vec![(1, 6.3), (2, 6.2)])]);
        assert_eq!(
            ask(init_loss, &healthy, &["vocab_size=512"], p.clone()).status,
            Status::Pass
        );
        let bad = run_with(&[("loss", vec![(1, 28.7)])]);
        let v = ask(init_loss, &bad, &["vocab_size=512"], p.clone());
        assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "high"));
        assert!((v.values["ln_v"] - 512f64.ln()).abs() < 1e-9);
        let classes = run_with(&[("loss", vec![(1, 2.31)])]);
        assert_eq!(
            ask(init_loss, &classes, &["num_classes=10"], p.clone()).status,
            Status::Pass
        );
        assert_eq!(
            ask(init_loss, &classes, &[], p.clone()).status,
            Status::Skip,
            "needs vocab_size"
        );
        let late = run_with(&[("loss", vec![(500, 2.0)])]);
        assert_eq!(
            ask(init_loss, &late, &["vocab_size=512"], p.clone()).status,
            Status::Skip
        );
        let nan_first = run_with(&[("loss", vec![(1, f64::NAN), (2, 6.2)])]);
        assert_eq!(
            ask(init_loss, &nan_first, &["vocab_size=512"], p).status,
            Status::Pass
        );
    }

    #[test]
    fn lr_schedule_shapes() {
        // HF warmup + cosine, LR 0.0 at step 1: healthy, fits the declared curve.
        let hf: Vec<(u64, f64)> = (1..=300)
            .map(|t| (t, warmup_cosine(t, 30.0, 300.0, 1e-3)))
            .collect();
        let r = run_with(&[("learning_rate", hf)]);
        let v = ask(
            lr_schedule,
            &r,
            &["schedule=warmup_cosine", "warmup_steps=30", "lr_max=0.001"],
            lr_params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
        assert_eq!(ask(lr_schedule, &r, &[], lr_params()).status, Status::Pass);
        // Never stepped: constant at lr_max / W.
        let flat = run_with(&[("learning_rate", (1..=300).map(|t| (t, 3.3e-5)).collect())]);
        let v = ask(lr_schedule, &flat, &["schedule=warmup_cosine"], lr_params());
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Fail, "constant_nonzero")
        );
        // Constant with no declared schedule is healthy.
        assert_eq!(
            ask(lr_schedule, &flat, &[], lr_params()).status,
            Status::Pass
        );
        // Constant zero always fails.
        let zero = run_with(&[("learning_rate", (1..=50).map(|t| (t, 0.0)).collect())]);
        assert_eq!(
            ask(lr_schedule, &zero, &[], lr_params()).outcome,
            "constant_zero"
        );
        // Step decay declared as cosine: jumps.
        let step: Vec<(u64, f64)> = (1..=300)
            .map(|t| {
                (
                    t,
                    if t < 100 {
                        1e-3
                    } else if t < 200 {
                        1e-4
                    } else {
                        1e-5
                    },
                )
            })
            .collect();
        let v = ask(
            lr_schedule,
            &run_with(&[("learning_rate", step.clone())]),
            &["schedule=warmup_cosine"],
            lr_params(),
        );
        assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "jumps"));
        assert_eq!(
            ask(
                lr_schedule,
                &run_with(&[("learning_rate", step)]),
                &["schedule=step"],
                lr_params()
            )
            .status,
            Status::Pass
        );
        // One point, NaN only, missing series: never a panic.
        assert_eq!(
            ask(
                lr_schedule,
                &run_with(&[("learning_rate", vec![(1, f64::NAN)])]),
                &[],
                lr_params()
            )
            .status,
            Status::Skip
        );
        assert_eq!(
            ask(lr_schedule, &run_with(&[]), &[], lr_params()).status,
            Status::Skip
        );
        assert_eq!(
            ask(
                lr_schedule,
                &run_with(&[("learning_rate", vec![(1, 1e-3)])]),
                &[],
                lr_params()
            )
            .status,
            Status::Pass
        );
    }

    #[test]
    fn warmup_peak_and_grad_norms() {
        let hf: Vec<(u64, f64)> = (1..=300)
            .map(|t| (t, warmup_cosine(t, 30.0, 300.0, 1e-3)))
            .collect();
        let p = Params::new().with("pass_rel", 0.05).with("fail_ratio", 0.5);
        let v = ask(
            lr_warmup_peak,
            &run_with(&[("learning_rate", hf)]),
            &["warmup_steps=30", "lr_max=0.001"],
            p.clone(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
        let low: Vec<(u64, f64)> = (1..=300).map(|t| (t, 3.3e-5)).collect();
        assert_eq!(
            ask(
                lr_warmup_peak,
                &run_with(&[("learning_rate", low)]),
                &["warmup_steps=30", "lr_max=0.001"],
                p
            )
            .outcome,
            "low"
        );

        let band = Params::new()
            .with("window", 20.0)
            .with("high", 5.0)
            .with("low", 0.01)
            .with("high_frac", 0.5);
        let hot = run_with(&[("grad_norm", (1..=100).map(|t| (t, 20.0)).collect())]);
        assert_eq!(ask(grad_norm_band, &hot, &[], band.clone()).outcome, "high");
        let dead = run_with(&[("grad_norm", (1..=100).map(|t| (t, 1e-4)).collect())]);
        assert_eq!(ask(grad_norm_band, &dead, &[], band.clone()).outcome, "low");
        let ok = run_with(&[("grad_norm", (1..=100).map(|t| (t, 1.0)).collect())]);
        assert_eq!(ask(grad_norm_band, &ok, &[], band).status, Status::Pass);

        let sp = Params::new()
            .with("abs_spike", 100.0)
            .with("rel_spike", 10.0)
            .with("per_steps", 200.0)
            .with("max_spikes", 3.0)
            .with("window", 20.0);
        let mut g: Vec<(u64, f64)> = (1..=200).map(|t| (t, 1.0)).collect();
        g[150].1 = 500.0;
        assert_eq!(
            ask(
                grad_norm_spikes,
                &run_with(&[("grad_norm", g.clone())]),
                &[],
                sp.clone()
            )
            .outcome,
            "once"
        );
        for i in [30, 60, 90, 120] {
            g[i].1 = 300.0;
        }
        assert_eq!(
            ask(grad_norm_spikes, &run_with(&[("grad_norm", g)]), &[], sp).outcome,
            "many"
        );
    }

    #[test]
    fn loss_trend_gap_and_degenerate_losses() {
        let tp = Params::new()
            .with("ema_span", 50.0)
            .with("early_step", 50.0)
            .with("late_step", 200.0)
            .with("min_slope_per_100", 0.001)
            .with("min_rel_drop", 0.05);
        let falling = run_with(&[(
            "loss",
            (1..=300)
                .map(|t| (t, 6.0 * (-(t as f64) / 150.0).exp() + 2.0))
                .collect(),
        )]);
        assert_eq!(
            ask(loss_trend, &falling, &[], tp.clone()).status,
            Status::Pass
        );
        let rising = run_with(&[(
            "loss",
            (1..=300).map(|t| (t, 2.0 + t as f64 / 100.0)).collect(),
        )]);
        assert_eq!(ask(loss_trend, &rising, &[], tp.clone()).outcome, "rising");
        let crawling = run_with(&[(
            "loss",
            (1..=300).map(|t| (t, 6.24 - t as f64 * 0.0005)).collect(),
        )]);
        assert_eq!(ask(loss_trend, &crawling, &[], tp.clone()).outcome, "slow");
        assert_eq!(
            ask(loss_trend, &run_with(&[("loss", vec![(1, 3.0)])]), &[], tp).status,
            Status::Skip
        );

        let gp = Params::new()
            .with("overfit_gap", 1.0)
            .with("by_step", 500.0)
            .with("leak_gap", 0.3)
            .with("ema_span", 20.0);
        let tr: Vec<(u64, f64)> = (1..=300).map(|t| (t, 2.0)).collect();
        let over = run_with(&[
            ("loss", tr.clone()),
            ("eval_loss", vec![(100, 2.5), (300, 3.5)]),
        ]);
        assert_eq!(ask(val_gap, &over, &[], gp.clone()).outcome, "overfit");
        let leak = run_with(&[("loss", tr.clone()), ("eval_loss", vec![(300, 1.5)])]);
        assert_eq!(ask(val_gap, &leak, &[], gp.clone()).outcome, "leak");
        assert_eq!(
            ask(val_gap, &run_with(&[("loss", tr)]), &[], gp).status,
            Status::Skip,
            "no eval rows"
        );

        let dp = Params::new()
            .with("zero_abs", 1e-8)
            .with("first_steps", 5.0);
        let zero = run_with(&[("loss", (1..=20).map(|t| (t, 0.0)).collect())]);
        assert_eq!(ask(loss_degenerate, &zero, &[], dp.clone()).outcome, "zero");
        let nan = run_with(&[("loss", (1..=20).map(|t| (t, f64::NAN)).collect())]);
        assert_eq!(ask(loss_degenerate, &nan, &[], dp.clone()).outcome, "nan");
        let fine = run_with(&[("loss", (1..=20).map(|t| (t, 3.0)).collect())]);
        assert_eq!(ask(loss_degenerate, &fine, &[], dp).status, Status::Pass);
    }

    #[test]
    fn dpo_ppo_scaler_and_baseline_ratio() {
        let dp = Params::new()
            .with("flat_margin", 0.05)
            .with("min_accuracy", 0.55)
            .with("good_accuracy", 0.7)
            .with("tail_frac", 0.2)
            .with("logp_drop", 5.0);
        let n = 100u64;
        let healthy = run_with(&[
            (
                "rewards/margins",
                (1..=n).map(|t| (t, t as f64 / 20.0)).collect(),
            ),
            (
                "rewards/accuracies",
                (1..=n)
                    .map(|t| (t, 0.5 + 0.3 * t as f64 / n as f64))
                    .collect(),
            ),
        ]);
        assert_eq!(
            ask(dpo_health, &healthy, &[], dp.clone()).status,
            Status::Pass
        );
        let collapse = run_with(&[
            ("rewards/margins", (1..=n).map(|t| (t, 0.01)).collect()),
            ("rewards/accuracies", (1..=n).map(|t| (t, 0.5)).collect()),
            (
                "logps/chosen",
                (1..=n).map(|t| (t, -50.0 - t as f64)).collect(),
            ),
            (
                "logps/rejected",
                (1..=n).map(|t| (t, -50.0 - t as f64)).collect(),
            ),
        ]);
        assert_eq!(ask(dpo_health, &collapse, &[], dp).outcome, "collapse");

        let pp = Params::new()
            .with("kl_target", 6.0)
            .with("kl_blowup_factor", 3.0)
            .with("reward_drop_frac", 0.3)
            .with("tail_frac", 0.2);
        let kl = run_with(&[("kl", (1..=100).map(|t| (t, t as f64)).collect())]);
        assert_eq!(ask(ppo_health, &kl, &[], pp).outcome, "kl_blowup");

        let sp = Params::new()
            .with("healthy_min_log2", 13.0)
            .with("collapse_log2", 4.0)
            .with("calibration_frac", 0.1);
        let bad = run_with(&[(
            "loss_scale",
            (1..=100)
                .map(|t| (t, 65536.0 / 2f64.powi((t / 5) as i32)))
                .collect(),
        )]);
        assert_eq!(
            ask(grad_scaler, &bad, &[], sp.clone()).outcome,
            "collapsing"
        );
        let good = run_with(&[("loss_scale", (1..=100).map(|t| (t, 32768.0)).collect())]);
        assert_eq!(ask(grad_scaler, &good, &[], sp).status, Status::Pass);

        let rp = Params::new().with("tolerance", 0.2).with("max_ratio", 1.5);
        let run = run_with(&[("grad_norm", (1..=50).map(|t| (t, 8.0)).collect())]);
        let base = run_with(&[("grad_norm", (1..=50).map(|t| (t, 1.0)).collect())]);
        let facts = Facts::from_args(&["accum_steps=8"]).unwrap();
        let c = Compute::cpu();
        let v = grad_norm_ratio(&ProbeCtx {
            run: &run,
            facts: &facts,
            params: &rp,
            compute: &c,
            baseline: Some(&base),
        })
        .remove(0);
        assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "k_times"));
        assert_eq!(
            ask(grad_norm_ratio, &run, &[], rp).status,
            Status::Skip,
            "needs --baseline"
        );
    }
}
