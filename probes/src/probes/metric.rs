//! Probes over metric logs: init loss vs ln V, first-step grad norm, LR schedule shape and
//! warmup peak, grad-norm band and spikes, loss trend, val-train gap, degenerate loss, fp16
//! loss scale, DPO and PPO health, grad-norm ratio against a baseline, seed spread,
//! activation growth and dead units from logged series.

use crate::metrics::{Point, Series};
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::Run;

use super::util::{
    at_step, ema, fmt, head_mean, iqm, max_in_window, median, rel_spread, rolling_mean,
    series_evidence, std_dev, tail_mean,
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

/// Architecture-name endings of heads that score one of `num_labels` classes (per example or
/// per token), whose untrained loss is ln C even when the config also has a vocab_size.
const CLASSIFIER_HEADS: &[&str] = &[
    "ForSequenceClassification",
    "ForImageClassification",
    "ForTokenClassification",
    "ForAudioClassification",
    "ForVideoClassification",
    "ForAudioFrameClassification",
];

/// Whether the run trains a classifier head: the `task` fact says so, or config.json's
/// `architectures` (the `architectures` fact) names a classification head.
fn is_classifier(ctx: &ProbeCtx) -> bool {
    let task = ctx
        .facts
        .get("task")
        .map(|t| t.to_ascii_lowercase())
        .unwrap_or_default();
    task.contains("classification")
        || ctx
            .facts
            .list("architectures")
            .iter()
            .any(|a| CLASSIFIER_HEADS.iter().any(|h| a.ends_with(h)))
}

/// ln V (or ln C) from facts: the number of classes when the user gave it, or when the head is
/// a classifier, or when there is no vocabulary; else the vocabulary size.
fn log_v(ctx: &ProbeCtx) -> Option<(f64, String)> {
    use crate::facts::FactSource;
    let by_user = |k: &str| {
        ctx.facts
            .fact(k)
            .is_some_and(|f| f.source == FactSource::User)
    };
    let vocab = ctx.facts.u64("vocab_size").filter(|v| *v > 1);
    let classes = ctx.facts.u64("num_classes").filter(|v| *v > 1);
    let use_classes = match (vocab, classes) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(_), Some(_)) => {
            by_user("num_classes") || (!by_user("vocab_size") && is_classifier(ctx))
        }
    };
    if use_classes {
        return classes.map(|c| ((c as f64).ln(), format!("ln C = ln {c}")));
    }
    vocab.map(|v| ((v as f64).ln(), format!("ln V = ln {v}")))
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
    if s.points.is_empty() {
        return vec![Verdict::skip("S1.2", "empty grad_norm series")];
    }
    let head = s.points[0].step;
    if head as f64 > max_first {
        return vec![Verdict::skip(
            "S1.2",
            format!("first logged grad norm is at step {head} (> {max_first})"),
        )];
    }
    // fp16 GradScaler calibration: the first steps overflow (inf/NaN norms, steps skipped)
    // until the scale backs off. Judge the first finite norm; say how many came before it.
    let skipped: Vec<&Point> = s
        .points
        .iter()
        .take_while(|p| !p.value.is_finite())
        .collect();
    let Some(first) = first_finite(s) else {
        return vec![Verdict::new("S1.2", Status::Fail, "high")
            .measured(format!(
                "grad_norm non-finite at all {} logged steps",
                s.points.len()
            ))
            .expected(format!("[{plo}, {phi}]; fail > {fhi} or < {flo}"))
            .message("the gradient norm is never finite: overflow from init or the loss (if fp16, the GradScaler never finds a working scale)")
            .evidence(series_evidence(s, head, s.points[s.points.len() - 1].step))];
    };
    if first.step as f64 > max_first {
        return vec![Verdict::new("S1.2", Status::Fail, "high")
            .measured(format!(
                "grad_norm non-finite at {} logged step(s) {head}..{}; first finite at step {}",
                skipped.len(),
                skipped[skipped.len() - 1].step,
                first.step
            ))
            .expected(format!("a finite norm by step {max_first}"))
            .message("non-finite gradient norms from the start, for longer than fp16 loss-scale calibration takes: overflow from init or the loss")
            .evidence(series_evidence(s, head, first.step))
            .value("nonfinite_head", skipped.len() as f64)];
    }
    let g = first.value;
    let (status, outcome, msg) = if g > fhi {
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
    let (measured, msg) = if skipped.is_empty() {
        (format!("grad_norm(step {}) = {}", first.step, fmt(g)), msg)
    } else {
        (
            format!(
                "grad_norm(step {}) = {} (first finite; {} non-finite before it, steps {head}..{})",
                first.step,
                fmt(g),
                skipped.len(),
                skipped[skipped.len() - 1].step
            ),
            format!("{msg} (the non-finite norms before it look like fp16 GradScaler calibration: overflowed steps are skipped while the scale backs off)"),
        )
    };
    vec![Verdict::new("S1.2", status, outcome)
        .measured(measured)
        .expected(format!("[{plo}, {phi}]; fail > {fhi} or < {flo}"))
        .message(msg)
        .evidence(series_evidence(s, head, first.step))
        .value("grad_norm0", g)
        .value("nonfinite_head", skipped.len() as f64)]
}

// ---------------------------------------------------------------------------------------

/// The declared schedule's LR at `step` (1-based logged steps), or None for unknown kinds.
/// `total` may be infinite (a run of unknown length: the decay has not started to show).
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

fn is_step_kind(kind: &str) -> bool {
    matches!(kind, "step" | "multistep" | "step_decay" | "warmup_step")
}

/// A schedule declared through facts, with what is known of its shape.
struct DeclaredSchedule {
    kind: String,
    /// Warmup steps (0 when not stated).
    warmup: f64,
    /// Planned optimizer steps, when a fact (or trainer_state.json's max_steps) says.
    total: Option<f64>,
    /// Step schedules: the decay steps (`milestones`), or every `step_size` steps.
    milestones: Vec<f64>,
    step_size: Option<f64>,
    gamma: f64,
}

impl DeclaredSchedule {
    fn from_facts(ctx: &ProbeCtx, kind: &str, last_step: u64) -> Self {
        let f = ctx.facts;
        let mut milestones: Vec<f64> = f
            .list("milestones")
            .iter()
            .filter_map(|m| m.parse::<f64>().ok())
            .filter(|m| m.is_finite() && *m > 0.0)
            .collect();
        milestones.sort_by(|a, b| a.total_cmp(b));
        DeclaredSchedule {
            kind: kind.to_string(),
            warmup: f.f64("warmup_steps").unwrap_or(0.0).max(0.0),
            total: f
                .f64("total_steps")
                .or_else(|| f.f64("max_steps"))
                .filter(|t| *t > 0.0)
                .map(|t| t.max(last_step as f64)),
            milestones,
            step_size: f.f64("step_size").filter(|s| *s >= 1.0),
            // PyTorch's StepLR / MultiStepLR default decay factor.
            gamma: f.f64("gamma").filter(|g| *g > 0.0).unwrap_or(0.1),
        }
    }

    /// The declared LR relative to lr_max at logged step `t`, for a run of `total` steps
    /// (infinite: not known), or None when the shape is not known (a step schedule with no
    /// milestones, a kind this probe does not model).
    fn rel_at(&self, total: f64, t: f64, shift: f64) -> Option<f64> {
        if !is_step_kind(&self.kind) {
            return declared_lr(&self.kind, 1.0, self.warmup, total, t, shift);
        }
        let tt = (t - shift).max(0.0);
        if self.warmup > 0.0 && tt < self.warmup {
            return Some(tt / self.warmup);
        }
        let k = if let Some(s) = self.step_size {
            (tt / s).floor()
        } else if !self.milestones.is_empty() {
            self.milestones.iter().filter(|m| tt >= **m).count() as f64
        } else {
            return None;
        };
        Some(self.gamma.powf(k))
    }

    /// A lower bound every declared schedule satisfies: its warmup ramp (then flat).
    fn warmup_rel(&self, t: f64, shift: f64) -> f64 {
        let tt = (t - shift).max(0.0);
        if self.warmup > 0.0 && tt < self.warmup {
            tt / self.warmup
        } else {
            1.0
        }
    }

    /// How much (relative spread) the declared LR must move over the logged steps: the least
    /// over the two step conventions and, when the run length is unknown, over every length
    /// (an unending run: only the warmup shows). `exact` is false when only the warmup
    /// ramp could be modelled.
    fn expected_spread(&self, pts: &[&Point]) -> (f64, bool) {
        let total = self.total.unwrap_or(f64::INFINITY);
        let mut exact = true;
        let mut best = f64::INFINITY;
        for shift in [0.0, 1.0] {
            let curve: Option<Vec<f64>> = pts
                .iter()
                .map(|p| self.rel_at(total, p.step as f64, shift))
                .collect();
            let curve = curve.unwrap_or_else(|| {
                exact = false;
                pts.iter()
                    .map(|p| self.warmup_rel(p.step as f64, shift))
                    .collect()
            });
            best = best.min(rel_spread(&curve).unwrap_or(0.0));
        }
        (best, exact)
    }

    /// The declared curve's own relative change between two logged steps (the larger over
    /// the two step conventions), or None when its shape is unknown.
    fn rel_change(&self, t0: f64, t1: f64) -> Option<f64> {
        let total = self.total.unwrap_or(f64::INFINITY);
        [0.0, 1.0]
            .iter()
            .filter_map(|&sh| {
                let (c0, c1) = (self.rel_at(total, t0, sh)?, self.rel_at(total, t1, sh)?);
                let m = c0.max(c1);
                Some(if m > 0.0 { (c1 - c0).abs() / m } else { 0.0 })
            })
            .reduce(f64::max)
    }

    /// Run lengths to fit against: the known one, else the length the logged decay implies,
    /// the last logged step (a finished run) and an unending run (a partial run early on).
    fn candidate_totals(&self, pts: &[&Point], lr_max: f64, last: f64) -> Vec<f64> {
        if let Some(t) = self.total {
            return vec![t];
        }
        let w = self.warmup;
        let mut est = Vec::new();
        for p in pts {
            let (t, r) = (p.step as f64, (p.value / lr_max).clamp(0.0, 1.0));
            let frac = match self.kind.as_str() {
                "warmup_cosine" | "cosine" => (2.0 * r - 1.0).acos() / std::f64::consts::PI,
                "warmup_linear" | "linear" => 1.0 - r,
                _ => continue,
            };
            if t > w && frac > 0.0 {
                est.push(w + (t - w) / frac);
            }
        }
        let mut out = vec![last, f64::INFINITY];
        if let Some(m) = median(&est) {
            out.push(m.max(last));
        }
        out
    }
}

pub fn lr_schedule(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (flat, zero, jump, jump_factor, fit_tol, fit_min) = (
        p!(ctx, "flat_rel_tol"),
        p!(ctx, "zero_abs"),
        p!(ctx, "jump_rel"),
        p!(ctx, "jump_factor"),
        p!(ctx, "fit_rel_tol"),
        p!(ctx, "fit_min_frac"),
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
    let decl = declared
        .as_deref()
        .map(|k| DeclaredSchedule::from_facts(ctx, k, b));
    let warmup = decl.as_ref().map(|d| d.warmup).unwrap_or(0.0);
    let warmup_known = ctx.facts.f64("warmup_steps").is_some();
    let lr_max = ctx.facts.f64("lr_max").filter(|m| *m > 0.0);
    let decl_text = declared.clone().unwrap_or_else(|| "none declared".into());
    let total_text = decl
        .as_ref()
        .and_then(|d| d.total)
        .map(|t| format!("{t} steps"))
        .unwrap_or_else(|| "run length unknown".into());
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
    // A flat LR: a bug only if the declared curve should have moved over these steps.
    let mut flat_note: Option<String> = None;
    if pts.len() >= 2 && (hi - lo) / hi <= flat {
        let measured = format!("LR constant at {} over steps {a}..{b}", fmt(hi));
        let d = match &decl {
            Some(d) if d.kind != "constant" => d,
            _ => return vec![base(Status::Pass, "pass").measured(measured).expected(format!("schedule: {decl_text}")).message("constant LR, and no other schedule declared (pass --fact schedule=… if one was configured)")],
        };
        let (want, exact) = d.expected_spread(&pts);
        let expected = format!(
            "{} (warmup {warmup}, {total_text}) moves ≥ {:.1}% over steps {a}..{b}",
            d.kind,
            100.0 * want
        );
        if want > flat {
            let mut msg = format!("declared {} but the LR never moves: the scheduler is never stepped (call scheduler.step() after optimizer.step()), or the optimizer is rebuilt each step and loses the schedule", d.kind);
            if let Some(m) = lr_max {
                msg.push_str(&format!("; it sits at {}× lr_max {}", fmt(hi / m), fmt(m)));
            }
            return vec![base(Status::Fail, "constant_nonzero")
                .measured(measured)
                .expected(expected)
                .message(msg)
                .value("expected_spread", want)];
        }
        let why = if !exact {
            format!("{} decays at steps this probe does not know (pass --fact milestones=… or step_size=…): a flat LR is expected before the first decay", d.kind)
        } else if d.total.is_none() {
            format!("with no warmup in this range and the run length unknown, {} may not have visibly decayed yet (pass --fact total_steps=… to check)", d.kind)
        } else {
            format!(
                "the declared {} moves only {:.2}% over this range of a {total_text} run",
                d.kind,
                100.0 * want
            )
        };
        let note = format!("flat so far, as the declared schedule allows: {why}; this cannot yet tell a working scheduler from one that is never stepped");
        if lr_max.is_none() || !exact {
            return vec![base(Status::Pass, "pass")
                .measured(measured)
                .expected(expected)
                .message(note)
                .value("expected_spread", want)];
        }
        flat_note = Some(note);
    }
    // Jumps: a large relative change whose per-step rate is far above the curve's typical
    // per-step rate (logging gaps are normalised away), outside the warmup ramp, and not
    // explained by the declared curve itself changing that much between the two points.
    let gap = |w: &[&Point]| w[1].step.saturating_sub(w[0].step).max(1) as f64;
    let rates: Vec<f64> = pts
        .windows(2)
        .map(|w| (w[1].value - w[0].value).abs() / gap(w))
        .collect();
    let typical = median(&rates).unwrap_or(0.0);
    // Without a declared warmup length, the rising head of the series is the warmup.
    let first_drop = pts
        .windows(2)
        .position(|w| w[1].value < w[0].value)
        .unwrap_or(pts.len());
    let mut jumps = Vec::new();
    for (i, w) in pts.windows(2).enumerate() {
        let (p0, p1) = (w[0], w[1]);
        if p0.value <= zero || (p1.step as f64) <= warmup + 1.0 {
            continue;
        }
        if !warmup_known && i < first_drop {
            continue;
        }
        let d = (p1.value - p0.value).abs();
        let rel = d / p0.value.max(p1.value);
        let explained = decl
            .as_ref()
            .and_then(|dc| dc.rel_change(p0.step as f64, p1.step as f64))
            .is_some_and(|c| c > jump);
        if rel > jump && d / gap(w) > jump_factor * typical && !explained {
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
            Some(k) if !is_step_kind(k) => vec![base(Status::Fail, "jumps").measured(measured).expected(format!("smooth {k}")).message("the LR jumps: this is a step-decay schedule, not the declared one — match the scheduler to the config").value("jumps", jumps.len() as f64)],
            _ => vec![base(Status::Pass, "pass").measured(measured).expected(format!("schedule: {decl_text}")).message("step-decay LR (drops between plateaus)").value("jumps", jumps.len() as f64)],
        };
    }
    // Fit against the declared curve when enough is known; an unknown run length is a free
    // parameter (a partial or crashed run must not be fitted as if it ended at its last step).
    if let (Some(d), Some(m)) = (decl.as_ref(), lr_max) {
        let dev_for = |total: f64, shift: f64| -> Option<f64> {
            let mut devs = Vec::new();
            for p in &pts {
                let e = d.rel_at(total, p.step as f64, shift)?;
                if e > fit_min {
                    devs.push((p.value - e * m).abs() / (e * m));
                }
            }
            median(&devs)
        };
        let fits: Vec<(f64, f64)> = d
            .candidate_totals(&pts, m, b as f64)
            .into_iter()
            .flat_map(|t| [0.0, 1.0].map(|sh| (t, sh)))
            .filter_map(|(t, sh)| dev_for(t, sh).map(|dev| (dev, t)))
            .collect();
        if let Some((dev, t_fit)) = fits
            .into_iter()
            .reduce(|x, y| if y.0 < x.0 { y } else { x })
        {
            let ok = dev <= fit_tol;
            let fitted = match d.total {
                Some(_) => total_text.clone(),
                None if t_fit.is_finite() => {
                    format!("run length unknown, best fit {t_fit:.0} steps")
                }
                None => "run length unknown, no decay yet".into(),
            };
            let v = base(
                if ok { Status::Pass } else { Status::Warn },
                if ok { "pass" } else { "mismatch" },
            )
            .measured(format!(
                "median deviation {:.1}% from {} (peak {})",
                100.0 * dev,
                d.kind,
                fmt(hi)
            ))
            .expected(format!(
                "≤ {:.0}% from {} (lr_max {}, warmup {warmup}, {fitted})",
                100.0 * fit_tol,
                d.kind,
                fmt(m)
            ))
            .value("fit_dev", dev);
            return vec![if ok {
                v.message(
                    flat_note
                        .unwrap_or_else(|| "the logged LR follows the declared schedule".into()),
                )
            } else {
                v.message("the logged LR does not follow the declared schedule: check scheduler cadence (per optimizer step, not per micro-batch or per epoch), lr_max and total_steps")
            }];
        }
    }
    if let Some(note) = flat_note {
        return vec![base(Status::Pass, "pass")
            .measured(format!("LR constant at {} over steps {a}..{b}", fmt(hi)))
            .expected(format!("schedule: {decl_text}"))
            .message(note)];
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
        (
            Status::Pass,
            "pass",
            "warmup reaches lr_max on time".to_string(),
        )
    } else if r < fail_ratio {
        (Status::Fail, "low", format!("LR at the end of warmup is under {fail_ratio}× lr_max: an off-by-one in the warmup formula (t/W vs (t+1)/W at small W), or the schedule is not applied"))
    } else {
        (
            Status::Warn,
            "low",
            format!(
                "LR at the end of warmup misses lr_max by more than {:.0}%",
                100.0 * pass_rel
            ),
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
    let (window, high, low, high_frac, low_frac) = (
        p!(ctx, "window"),
        p!(ctx, "high"),
        p!(ctx, "low"),
        p!(ctx, "high_frac"),
        p!(ctx, "low_frac"),
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
    } else if below / n >= low_frac {
        (Status::Fail, "low", format!("dead training ({:.0}% of windows below {low}): the loss mask zeroes most tokens, every parameter is frozen, or the LR is too small for updates to land", 100.0 * below / n))
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
    let pts = &s.points;
    let vals: Vec<f64> = pts.iter().map(|p| p.value).collect();
    let finite_spike = |i: usize| -> bool {
        let v = vals[i];
        let rel = i >= w && median(&vals[i - w..i]).is_some_and(|m| m > 0.0 && v > rel_spike * m);
        v > abs_spike || rel
    };
    let scale = ctx.run.metrics().get("loss_scale");
    let mut spikes = Vec::new();
    let mut overflow = Vec::new();
    let mut i = 0;
    while i < pts.len() {
        if pts[i].value.is_finite() {
            if finite_spike(i) {
                spikes.push(pts[i].step);
            }
            i += 1;
            continue;
        }
        // A run of non-finite norms [i, j): an fp16 overflow the GradScaler skipped when it
        // comes before any finite norm (calibration), or is isolated, or the loss scale backs
        // off across it — and training recovers to a finite, non-spiking norm after it.
        let j = (i..pts.len())
            .find(|&k| pts[k].value.is_finite())
            .unwrap_or(pts.len());
        let recovered = j < pts.len() && !finite_spike(j);
        let backoff = scale.is_some_and(|sc| {
            let from = sc
                .value_at_or_before(pts[i].step.saturating_sub(1))
                .map_or(pts[i].step, |p| p.step);
            let to = pts.get(j).map_or(pts[j - 1].step, |p| p.step);
            sc.range(from, to)
                .windows(2)
                .any(|w| w[1].value < w[0].value)
        });
        let calibration = i == 0 || !vals[..i].iter().any(|v| v.is_finite());
        let is_overflow = recovered && (calibration || j - i == 1 || backoff);
        for p in &pts[i..j] {
            if is_overflow {
                overflow.push(p.step);
            } else {
                spikes.push(p.step);
            }
        }
        i = j;
    }
    spikes.sort_unstable();
    let (a, b) = (pts[0].step, pts[pts.len() - 1].step);
    // The seed's rate is per window of `per` steps: the densest window counts, not the
    // average over a long run.
    let (dense, dense_at) = max_in_window(&spikes, per.max(1.0) as u64);
    let overflow_note = if overflow.is_empty() {
        String::new()
    } else {
        format!(
            "; {} non-finite norm(s) at steps {} not counted: isolated fp16 overflow steps the GradScaler skipped (see O24 if they recur)",
            overflow.len(),
            overflow
                .iter()
                .take(8)
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let (st, out, msg) = if spikes.is_empty() {
        (Status::Pass, "pass", "no gradient spikes".to_string())
    } else if dense as f64 > max_spikes {
        (Status::Fail, "many", format!("{dense} spikes within {per} steps (from step {}; {} in all): instability — go to the loss-spike / NaN ladder (warmup, clip, lower LR, z-loss, bf16)", dense_at.unwrap_or(a), spikes.len()))
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
            format!(
                "{} spikes, at most {dense} within any {per} steps; inspect those batches",
                spikes.len()
            ),
        )
    };
    let shown: Vec<String> = spikes.iter().take(8).map(|x| x.to_string()).collect();
    vec![Verdict::new("S3.2", st, out)
        .measured(format!(
            "{} step(s) above {abs_spike} or {rel_spike}× the rolling median (or non-finite){}",
            spikes.len(),
            if shown.is_empty() {
                String::new()
            } else {
                format!(" (steps {})", shown.join(", "))
            }
        ))
        .expected(format!(
            "≤ 1 per {per} steps; fail above {max_spikes} in any {per}"
        ))
        .message(format!("{msg}{overflow_note}"))
        .evidence(series_evidence(s, a, b))
        .value("spikes", spikes.len() as f64)
        .value("max_in_window", dense as f64)
        .value("overflow_steps", overflow.len() as f64)]
}

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
        (Status::Fail, "collapsing", "the loss scale never recovers: fp16 overflow every step, optimizer steps skipped — switch fp16 → bf16, or keep logits/attention in fp32".to_string())
    } else if llast < healthy && llast < after[0].value.log2() {
        (
            Status::Warn,
            "collapsing",
            format!("the loss scale keeps backing off below 2^{healthy}: persistent fp16 overflow"),
        )
    } else {
        (
            Status::Pass,
            "pass",
            "loss scale on a healthy plateau".to_string(),
        )
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
                .evidence(series_evidence(
                    k,
                    k.points[0].step,
                    k.points[k.points.len() - 1].step,
                ))
                .value("kl_tail", kt),
        );
    }
    if let Some(r) = reward {
        let e = ema(&r.points, reward_span);
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

/// Whether two series are one run logged twice (metrics.csv and TensorBoard, a trainer state
/// and TensorBoard): they share at least one step and agree at every shared step.
fn same_run(a: &Series, b: &Series, tol: f64) -> bool {
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

pub fn seed_spread(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (min_seeds, tail, tol, min_ratio, max_range) = (
        p!(ctx, "min_seeds"),
        p!(ctx, "tail_frac"),
        p!(ctx, "same_run_rel_tol"),
        p!(ctx, "min_effect_to_spread"),
        p!(ctx, "max_range_to_progress"),
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
        return vec![Verdict::skip(
            "O25",
            "no dead-unit / zero-activation fraction logged",
        )];
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
        inputs: &[
            "metrics:loss",
            "fact:vocab_size|num_classes",
            "fact:architectures|task",
        ],
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
            "fact:total_steps",
            "fact:milestones|step_size",
        ],
        params: &[
            "flat_rel_tol",
            "zero_abs",
            "jump_rel",
            "jump_factor",
            "fit_rel_tol",
            "fit_min_frac",
        ],
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
        params: &["window", "high", "low", "high_frac", "low_frac"],
        outcomes: &["pass", "high", "low", "skip"],
        run: grad_norm_band,
    },
    ProbeSpec {
        id: "grad_norm_spikes",
        question: "How many grad-norm spikes per 200 steps?",
        entries: &["S3.2"],
        inputs: &["metrics:grad_norm", "metrics:loss_scale"],
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
            "min_span_steps",
            "min_points",
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
            "kl_growth_factor",
            "reward_drop_frac",
            "tail_frac",
            "reward_ema_span",
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
        ],
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
        params: &["dead_frac", "rise", "edge_frac"],
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
            .with("jump_factor", 10.0)
            .with("fit_rel_tol", 0.15)
            .with("fit_min_frac", 0.05)
    }

    fn warmup_cosine(t: u64, w: f64, total: f64, m: f64) -> f64 {
        let t = t as f64 - 1.0; // HF logs LR 0.0 at step 1
        if t < w {
            m * t / w
        } else {
            m * 0.5 * (1.0 + (std::f64::consts::PI * (t - w) / (total - w)).cos())
        }
    }

    fn series_at(tag: &str, source: &str, rank: Option<u32>, pts: Vec<(u64, f64)>) -> Series {
        let mut s = Series::from_points(
            tag,
            Path::new(source),
            pts.into_iter()
                .map(|(step, value)| Point {
                    step,
                    value,
                    wall_time: None,
                })
                .collect(),
        );
        s.rank = rank;
        s
    }

    fn ask_with(
        f: fn(&ProbeCtx) -> Vec<Verdict>,
        run: &Run,
        facts: &Facts,
        params: Params,
        baseline: Option<&Run>,
    ) -> Verdict {
        let c = Compute::cpu();
        f(&ProbeCtx {
            run,
            facts,
            params: &params,
            compute: &c,
            baseline,
        })
        .remove(0)
    }

    #[test]
    fn lr_flat_is_never_stepped_only_if_the_declared_curve_should_move() {
        let flat_at = |v: f64, steps: std::ops::RangeInclusive<u64>| {
            run_with(&[("learning_rate", steps.map(|t| (t, v)).collect())])
        };
        let at_max = flat_at(1e-3, 1..=300);
        // No warmup, 100k planned steps, triaged at step 300: cosine moved < 0.01% — healthy.
        let v = ask(
            lr_schedule,
            &at_max,
            &[
                "schedule=warmup_cosine",
                "warmup_steps=0",
                "total_steps=100000",
                "lr_max=0.001",
            ],
            lr_params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
        // The same flat LR in a 600-step run should have decayed by half: never stepped.
        let v = ask(
            lr_schedule,
            &at_max,
            &[
                "schedule=warmup_cosine",
                "warmup_steps=0",
                "total_steps=600",
            ],
            lr_params(),
        );
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Fail, "constant_nonzero"),
            "{v:?}"
        );
        assert!(v.values["expected_spread"] > 0.4);
        // Run length unknown, no warmup: cannot have visibly decayed yet — not a fail.
        let v = ask(lr_schedule, &at_max, &["schedule=cosine"], lr_params());
        assert_eq!(v.status, Status::Pass, "{v:?}");
        assert!(v.message.contains("cannot yet tell"), "{}", v.message);
        // Short warmup (5) already over when logging starts (every 10 steps): not a fail.
        let sparse = run_with(&[("learning_rate", (1..=30).map(|k| (10 * k, 1e-3)).collect())]);
        let v = ask(
            lr_schedule,
            &sparse,
            &["schedule=warmup_cosine", "warmup_steps=5", "lr_max=0.001"],
            lr_params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
        // A warmup in the logged range must show: flat from step 1 is never stepped.
        let v = ask(
            lr_schedule,
            &flat_at(3.3e-5, 1..=300),
            &["schedule=warmup_cosine", "warmup_steps=30"],
            lr_params(),
        );
        assert_eq!(v.outcome, "constant_nonzero");
        // A step schedule before its first milestone is flat by design …
        let v = ask(lr_schedule, &at_max, &["schedule=step"], lr_params());
        assert_eq!(v.status, Status::Pass, "{v:?}");
        let v = ask(
            lr_schedule,
            &at_max,
            &["schedule=step", "milestones=1000,2000"],
            lr_params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
        // … but not once a known milestone has passed.
        let v = ask(
            lr_schedule,
            &at_max,
            &["schedule=step", "milestones=100,200"],
            lr_params(),
        );
        assert_eq!(v.outcome, "constant_nonzero", "{v:?}");
        let v = ask(
            lr_schedule,
            &at_max,
            &["schedule=step", "step_size=150"],
            lr_params(),
        );
        assert_eq!(v.outcome, "constant_nonzero", "{v:?}");
    }

    #[test]
    fn lr_jumps_found_with_sparse_logging() {
        let step_decay = |every: u64| -> Vec<(u64, f64)> {
            (0..=300 / every)
                .map(|k| {
                    let t = 1 + k * every;
                    (t, 1e-3 * 0.1f64.powi((t / 100) as i32))
                })
                .collect()
        };
        for every in [1, 3, 5, 10, 25] {
            let r = run_with(&[("learning_rate", step_decay(every))]);
            let v = ask(lr_schedule, &r, &["schedule=warmup_cosine"], lr_params());
            assert_eq!(
                (v.status, v.outcome.as_str()),
                (Status::Fail, "jumps"),
                "every {every}: {v:?}"
            );
            let v = ask(lr_schedule, &r, &["schedule=step"], lr_params());
            assert_eq!(v.status, Status::Pass, "every {every}: {v:?}");
        }
        // Warmup + cosine logged sparsely, off the warmup grid (steps 2, 12, 22, …): the
        // warmup ramp and the cosine tail are not jumps, with or without warmup_steps.
        for every in [5, 10, 25] {
            let hf: Vec<(u64, f64)> = (0..300 / every)
                .map(|k| {
                    let t = 2 + k * every;
                    (t, warmup_cosine(t, 30.0, 300.0, 1e-3))
                })
                .collect();
            let r = run_with(&[("learning_rate", hf)]);
            for facts in [
                &["schedule=warmup_cosine", "warmup_steps=30", "lr_max=0.001"][..],
                &["schedule=warmup_cosine", "lr_max=0.001"][..],
                &[
                    "schedule=warmup_cosine",
                    "warmup_steps=30",
                    "total_steps=300",
                ][..],
            ] {
                let v = ask(lr_schedule, &r, facts, lr_params());
                assert_ne!(v.outcome, "jumps", "every {every} {facts:?}: {v:?}");
                assert_ne!(v.status, Status::Fail, "every {every} {facts:?}: {v:?}");
            }
        }
    }

    #[test]
    fn lr_partial_run_fits_with_the_run_length_free() {
        // A 3000-step warmup + cosine run that crashed at step 1000.
        let part: Vec<(u64, f64)> = (1..=1000)
            .map(|t| (t, warmup_cosine(t, 30.0, 3000.0, 1e-3)))
            .collect();
        let r = run_with(&[("learning_rate", part)]);
        let facts = ["schedule=warmup_cosine", "warmup_steps=30", "lr_max=0.001"];
        let v = ask(lr_schedule, &r, &facts, lr_params());
        assert_eq!(v.status, Status::Pass, "{v:?}");
        assert!(v.expected.contains("best fit"), "{}", v.expected);
        // A known, correct length fits; a wrong known length does not.
        let mut f = facts.to_vec();
        f.push("total_steps=3000");
        assert_eq!(ask(lr_schedule, &r, &f, lr_params()).status, Status::Pass);
        f.pop();
        f.push("total_steps=1000");
        assert_eq!(ask(lr_schedule, &r, &f, lr_params()).outcome, "mismatch");
        // A free length does not excuse a wrong peak.
        let half: Vec<(u64, f64)> = (1..=1000)
            .map(|t| (t, warmup_cosine(t, 30.0, 3000.0, 5e-4)))
            .collect();
        let v = ask(
            lr_schedule,
            &run_with(&[("learning_rate", half)]),
            &facts,
            lr_params(),
        );
        assert_eq!(v.outcome, "mismatch", "{v:?}");
        // A finished run still fits with its end inferred.
        let full: Vec<(u64, f64)> = (1..=3000)
            .map(|t| (t, warmup_cosine(t, 30.0, 3000.0, 1e-3)))
            .collect();
        let v = ask(
            lr_schedule,
            &run_with(&[("learning_rate", full)]),
            &facts,
            lr_params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
    }

    #[test]
    fn init_loss_uses_ln_classes_for_classifier_heads() {
        let p = Params::new()
            .with("band", 0.5)
            .with("high_margin", 1.76)
            .with("low_margin", 2.24)
            .with("max_first_step", 20.0);
        // A BERT classifier over 3 labels: loss ≈ ln 3 = 1.10, far below ln 30522 = 10.3.
        let r = run_with(&[("loss", vec![(1, 1.12), (2, 1.1)])]);
        let from_config = |arch: &str| {
            let mut f = Facts::new();
            f.set_artifact("vocab_size", "30522", "config.json");
            f.set_artifact("num_classes", "3", "config.json");
            f.set_artifact("architectures", arch, "config.json");
            f
        };
        for arch in [
            "BertForSequenceClassification",
            "ViTForImageClassification",
            "RobertaForTokenClassification",
        ] {
            let v = ask_with(init_loss, &r, &from_config(arch), p.clone(), None);
            assert_eq!(v.status, Status::Pass, "{arch}: {v:?}");
            assert!((v.values["ln_v"] - 3f64.ln()).abs() < 1e-9);
        }
        // A causal LM config with a stray num_labels keeps ln V.
        let lm = run_with(&[("loss", vec![(1, 10.3)])]);
        let v = ask_with(
            init_loss,
            &lm,
            &from_config("BertLMHeadModel"),
            p.clone(),
            None,
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
        assert!((v.values["ln_v"] - 30522f64.ln()).abs() < 1e-9);
        // num_classes given by the user wins; so does a task fact.
        let mut f = from_config("BertModel");
        f.set_user("num_classes", "3");
        assert_eq!(
            ask_with(init_loss, &r, &f, p.clone(), None).status,
            Status::Pass
        );
        let mut f = from_config("BertModel");
        f.set_user("task", "classification");
        assert_eq!(ask_with(init_loss, &r, &f, p, None).status, Status::Pass);
    }

    #[test]
    fn fp16_calibration_does_not_trip_grad_norm_probes() {
        let fp = Params::new()
            .with("pass_lo", 0.1)
            .with("pass_hi", 10.0)
            .with("fail_hi", 100.0)
            .with("fail_lo", 0.001)
            .with("max_first_step", 20.0);
        let sp = Params::new()
            .with("abs_spike", 100.0)
            .with("rel_spike", 10.0)
            .with("per_steps", 200.0)
            .with("max_spikes", 3.0)
            .with("window", 20.0);
        // GradScaler calibration: inf, inf, NaN, then finite; one isolated overflow at 100
        // (scale halves there), one at 150 with no scale logged around it.
        let mut g: Vec<(u64, f64)> = (1..=300).map(|t| (t, 1.5)).collect();
        g[0].1 = f64::INFINITY;
        g[1].1 = f64::INFINITY;
        g[2].1 = f64::NAN;
        g[99].1 = f64::INFINITY;
        g[149].1 = f64::NAN;
        let scale: Vec<(u64, f64)> = (1..=300)
            .map(|t| {
                let halvings = match t {
                    1 => 0,
                    2 => 1,
                    3..=99 => 3,
                    _ => 4,
                };
                (t, 65536.0 / 2f64.powi(halvings))
            })
            .collect();
        let r = run_with(&[("grad_norm", g.clone()), ("loss_scale", scale)]);
        let v = ask(first_grad_norm, &r, &[], fp.clone());
        assert_eq!(v.status, Status::Pass, "{v:?}");
        assert_eq!(v.values["nonfinite_head"], 3.0);
        assert!(v.measured.contains("3 non-finite"), "{}", v.measured);
        let v = ask(grad_norm_spikes, &r, &[], sp.clone());
        assert_eq!(v.status, Status::Pass, "{v:?}");
        assert_eq!(v.values["overflow_steps"], 5.0);
        assert!(v.message.contains("not counted"), "{}", v.message);
        // Divergence is still caught: the norm goes non-finite and never recovers.
        let mut d = g.clone();
        for p in d.iter_mut().skip(250) {
            p.1 = f64::NAN;
        }
        let v = ask(
            grad_norm_spikes,
            &run_with(&[("grad_norm", d)]),
            &[],
            sp.clone(),
        );
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Fail, "many"),
            "{v:?}"
        );
        // A long non-finite stretch mid-run with no scale backoff counts as spikes.
        let mut m = g.clone();
        for p in m.iter_mut().skip(200).take(5) {
            p.1 = f64::INFINITY;
        }
        let v = ask(grad_norm_spikes, &run_with(&[("grad_norm", m)]), &[], sp);
        assert_eq!(v.outcome, "many", "{v:?}");
        // Non-finite past the first steps: overflow from init, still a fail.
        let late: Vec<(u64, f64)> = (1..=100)
            .map(|t| (t, if t <= 40 { f64::INFINITY } else { 1.0 }))
            .collect();
        let v = ask(
            first_grad_norm,
            &run_with(&[("grad_norm", late)]),
            &[],
            fp.clone(),
        );
        assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "high"));
        let never = run_with(&[("grad_norm", (1..=10).map(|t| (t, f64::NAN)).collect())]);
        assert_eq!(ask(first_grad_norm, &never, &[], fp).status, Status::Fail);
    }

    #[test]
    fn spikes_counted_in_the_densest_window() {
        let sp = Params::new()
            .with("abs_spike", 100.0)
            .with("rel_spike", 10.0)
            .with("per_steps", 200.0)
            .with("max_spikes", 3.0)
            .with("window", 20.0);
        // Four spikes within 200 steps of a 2000-step run: instability (the run-wide
        // average, 0.4 per 200, used to hide it).
        let mut g: Vec<(u64, f64)> = (1..=2000).map(|t| (t, 1.0)).collect();
        for i in [1000, 1040, 1080, 1120] {
            g[i].1 = 300.0;
        }
        let v = ask(
            grad_norm_spikes,
            &run_with(&[("grad_norm", g)]),
            &[],
            sp.clone(),
        );
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Fail, "many"),
            "{v:?}"
        );
        assert_eq!(v.values["max_in_window"], 4.0);
        // The same four spread 400 steps apart: at most one per window — a warning only.
        let mut g: Vec<(u64, f64)> = (1..=2000).map(|t| (t, 1.0)).collect();
        for i in [200, 600, 1000, 1400] {
            g[i].1 = 300.0;
        }
        let v = ask(grad_norm_spikes, &run_with(&[("grad_norm", g)]), &[], sp);
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Warn, "many"),
            "{v:?}"
        );
        assert_eq!(v.values["max_in_window"], 1.0);
    }

    fn seed_params() -> Params {
        Params::new()
            .with("min_seeds", 5.0)
            .with("tail_frac", 0.1)
            .with("same_run_rel_tol", 1e-4)
            .with("min_effect_to_spread", 2.0)
            .with("max_range_to_progress", 0.25)
    }

    /// A loss curve falling from 6 to `end`.
    fn curve(end: f64) -> Vec<(u64, f64)> {
        (1..=100)
            .map(|t| (t, end + (6.0 - end) * (-(t as f64) / 20.0).exp()))
            .collect()
    }

    #[test]
    fn seed_spread_counts_runs_not_log_files() {
        let facts = Facts::new();
        // One run logged to metrics.csv and TensorBoard (f32-rounded), plus its rank 1: one run.
        let f32ed: Vec<(u64, f64)> = curve(2.0)
            .into_iter()
            .map(|(t, v)| (t, v as f32 as f64))
            .collect();
        let one = Run::from_metrics(
            Path::new("run"),
            MetricSet::new(vec![
                series_at("train_loss", "run/metrics.csv", None, curve(2.0)),
                series_at("train/loss", "run/events", None, f32ed),
                series_at("loss", "run/metrics_rank1.jsonl", Some(1), curve(2.1)),
            ]),
        );
        let v = ask_with(seed_spread, &one, &facts, seed_params(), None);
        assert_eq!(v.status, Status::Skip, "{v:?}");
        // Five seeds ending close together (each also logged twice): 5 runs, narrow.
        let mut series = Vec::new();
        for (i, end) in [2.0, 2.01, 2.02, 1.99, 2.005].into_iter().enumerate() {
            series.push(series_at(
                "loss",
                &format!("seed{i}/metrics.csv"),
                None,
                curve(end),
            ));
            series.push(series_at(
                "loss",
                &format!("seed{i}/events"),
                None,
                curve(end),
            ));
        }
        let five = Run::from_metrics(Path::new("seeds"), MetricSet::new(series));
        let v = ask_with(seed_spread, &five, &facts, seed_params(), None);
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Pass, "pass"),
            "{v:?}"
        );
        assert_eq!(v.values["seeds"], 5.0);
        // A claimed 0.01 improvement is inside that seed noise (std ≈ 0.012).
        let mut f = Facts::new();
        f.set_user("claimed_effect", "0.01");
        let v = ask_with(seed_spread, &five, &f, seed_params(), None);
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Warn, "wide"),
            "{v:?}"
        );
        f.set_user("claimed_effect", "0.3");
        assert_eq!(
            ask_with(seed_spread, &five, &f, seed_params(), None).status,
            Status::Pass
        );
        // Seeds ending far apart relative to how far the loss fell: wide.
        let wild: Vec<Series> = [2.0, 3.5, 2.2, 4.0, 2.8]
            .into_iter()
            .enumerate()
            .map(|(i, e)| series_at("loss", &format!("s{i}/m.csv"), None, curve(e)))
            .collect();
        let wild = Run::from_metrics(Path::new("wild"), MetricSet::new(wild));
        let v = ask_with(seed_spread, &wild, &facts, seed_params(), None);
        assert_eq!(v.outcome, "wide", "{v:?}");
        // Against a baseline arm: a 0.5 lower loss over 5 narrow seeds each is an effect.
        let base: Vec<Series> = [2.5, 2.51, 2.52, 2.49, 2.505]
            .into_iter()
            .enumerate()
            .map(|(i, e)| series_at("loss", &format!("b{i}/m.csv"), None, curve(e)))
            .collect();
        let base = Run::from_metrics(Path::new("base"), MetricSet::new(base));
        let v = ask_with(seed_spread, &five, &facts, seed_params(), Some(&base));
        assert_eq!(v.status, Status::Pass, "{v:?}");
        assert!((v.values["effect"] + 0.5).abs() < 0.02, "{v:?}");
        // One seed against one seed: too few, whatever the difference.
        let v = ask_with(seed_spread, &one, &facts, seed_params(), Some(&base));
        assert!(v.status == Status::Warn, "{v:?}");
        let single = Run::from_metrics(
            Path::new("b"),
            MetricSet::new(vec![series_at("loss", "b/m.csv", None, curve(2.5))]),
        );
        let v = ask_with(seed_spread, &one, &facts, seed_params(), Some(&single));
        assert_eq!(v.outcome, "too_few", "{v:?}");
    }

    #[test]
    fn moved_thresholds_come_from_the_playbook() {
        // Missing a moved threshold: skip naming it, never a silent default.
        let r = run_with(&[("learning_rate", vec![(1, 1e-3), (2, 1e-3)])]);
        let p = Params::new()
            .with("flat_rel_tol", 0.01)
            .with("zero_abs", 1e-12)
            .with("jump_rel", 0.5)
            .with("fit_rel_tol", 0.15)
            .with("fit_min_frac", 0.05);
        let v = ask(lr_schedule, &r, &[], p);
        assert_eq!(v.status, Status::Skip);
        assert!(v.message.contains("jump_factor"), "{}", v.message);
        // grad_norm_band's low-fraction is a parameter: 40% dead windows fail at 0.3.
        let mut g: Vec<(u64, f64)> = (1..=100).map(|t| (t, 1.0)).collect();
        for p in g.iter_mut().skip(50) {
            p.1 = 1e-5;
        }
        let r = run_with(&[("grad_norm", g)]);
        let band = |low_frac: f64| {
            Params::new()
                .with("window", 20.0)
                .with("high", 5.0)
                .with("low", 0.01)
                .with("high_frac", 0.5)
                .with("low_frac", low_frac)
        };
        assert_eq!(ask(grad_norm_band, &r, &[], band(0.5)).status, Status::Warn);
        assert_eq!(ask(grad_norm_band, &r, &[], band(0.3)).status, Status::Fail);
        // dead_units reads start/end over edge_frac of the points.
        let dead = run_with(&[(
            "dead_frac",
            (1..=100)
                .map(|t| (t, if t > 80 { 0.5 } else { 0.1 }))
                .collect(),
        )]);
        let dp = |edge: f64| {
            Params::new()
                .with("dead_frac", 0.9)
                .with("rise", 0.2)
                .with("edge_frac", edge)
        };
        assert_eq!(ask(dead_units, &dead, &[], dp(0.1)).outcome, "dying");
        assert_eq!(ask(dead_units, &dead, &[], dp(0.5)).outcome, "pass");
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
        let v = ask(
            lr_schedule,
            &flat,
            &["schedule=warmup_cosine", "warmup_steps=30"],
            lr_params(),
        );
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
            .with("high_frac", 0.5)
            .with("low_frac", 0.5);
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
            .with("min_rel_drop", 0.05)
            .with("min_span_steps", 20.0)
            .with("min_points", 10.0);
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
            .with("kl_growth_factor", 3.0)
            .with("reward_drop_frac", 0.3)
            .with("tail_frac", 0.2)
            .with("reward_ema_span", 20.0);
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
