//! Gradient-norm probes: `first_grad_norm`, `grad_norm_band`, `grad_norm_spikes`,
//! `grad_norm_ratio` (against a baseline run).

use crate::metrics::Point;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use super::{first_finite, need};
use crate::probes::util::*;

pub(super) const FIRST_GRAD_NORM: ProbeSpec = ProbeSpec {
    id: "first_grad_norm",
    entries: &["S1.2"],
    inputs: &["metrics:grad_norm"],
    params: &["pass_lo", "pass_hi", "fail_hi", "fail_lo", "max_first_step"],
    outcomes: &["pass", "high", "low", "large", "small", "skip"],
    run: first_grad_norm,
};

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
    } else if g > phi && !looks_untrained(ctx, max_first) {
        // The band is a from-scratch init's: a fine-tune's fresh head on a trained body starts
        // with a larger gradient. Judged on a run known to start from random weights or whose
        // first loss sits at or above chance (untrained, or a broken init); otherwise only the
        // fail band (a broken init, a summed loss) is beyond any start.
        return vec![Verdict::skip(
            "S1.2",
            format!(
                "grad_norm(step {}) = {} is above the from-scratch band's {phi} but under {fhi}, and the run is not known to start from random weights nor does its first loss sit at chance (a fine-tune's new head starts larger): --fact init=scratch to judge it",
                first.step,
                fmt(g)
            ),
        )];
    } else if g > phi {
        (
            Status::Warn,
            "large",
            format!("above {phi}: large for a first step; watch init scale and loss reduction"),
        )
    } else if matches!(
        ctx.profile.init.value,
        crate::profile::Init::Pretrained | crate::profile::Init::Adapter
    ) {
        // The band is a from-scratch init's; a fine-tune starts near a minimum, and a LoRA
        // adapter's B starts at 0, so only the adapters' small gradient flows.
        (
            Status::Pass,
            "pass",
            format!(
                "below {plo}, as a fine-tune's first gradient may be ({})",
                ctx.profile.init.why()
            ),
        )
    } else {
        (
            Status::Warn,
            "small",
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
pub(super) const GRAD_NORM_BAND: ProbeSpec = ProbeSpec {
    id: "grad_norm_band",
    entries: &["S3.1"],
    inputs: &["metrics:grad_norm", "fact:max_grad_norm"],
    params: &[
        "window",
        "high",
        "low",
        "high_frac",
        "low_frac",
        "high_over_clip",
    ],
    outcomes: &["pass", "high", "low", "skip"],
    run: grad_norm_band,
};

// ---------------------------------------------------------------------------------------
pub fn grad_norm_band(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (window, high, low, high_frac, low_frac, over_clip) = (
        p!(ctx, "window"),
        p!(ctx, "high"),
        p!(ctx, "low"),
        p!(ctx, "high_frac"),
        p!(ctx, "low_frac"),
        p!(ctx, "high_over_clip"),
    );
    // "Always clipping" is relative to the run's own clipping threshold when it has one (the
    // logged norm is the pre-clip norm): the seed's 5 is 5× HF's default max_grad_norm of 1.
    let clip = ctx.facts.f64("max_grad_norm").filter(|c| *c > 0.0);
    let high = clip.map_or(high, |c| c * over_clip);
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
    // A grad norm is judged by what it does to the loss: above the band while the loss keeps
    // improving is the regime small models learn in (clipping, when on, bounds every update),
    // not an always-clipping failure; below it once the loss has converged to its floor is
    // convergence, not dead training.
    let improving = above > 0.0 && loss_improving(ctx);
    let converged = below > 0.0 && loss_converged(ctx);
    let (st, out, msg) = if improving && !converged {
        (
            Status::Pass,
            "pass",
            format!(
                "pre-clip norm above {high} in {:.0}% of windows, but the loss keeps improving under it{}: a learning run, not an always-clipping one",
                100.0 * above / n,
                clip.map(|c| format!(" (clipping at {} bounds every update)", fmt(c)))
                    .unwrap_or_default()
            ),
        )
    } else if converged && above / n < high_frac {
        (
            Status::Pass,
            "pass",
            format!(
                "the norm falls below {low} in {:.0}% of windows after the loss converged to its floor: gradients vanish at a minimum, not dead training",
                100.0 * below / n
            ),
        )
    } else if above / n >= high_frac {
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
        .expected(match clip {
            Some(c) => format!(
                "[{low}, {}] ({over_clip}× max_grad_norm {})",
                fmt(high),
                fmt(c)
            ),
            None => format!("[{low}, {high}]"),
        })
        .message(msg)
        .evidence(series_evidence(s, a, b))
        .value("rolling_max", mx)
        .value("rolling_min", mn)
        .value("frac_above", above / n)]
}
pub(super) const GRAD_NORM_SPIKES: ProbeSpec = ProbeSpec {
    id: "grad_norm_spikes",
    entries: &["S3.2"],
    inputs: &["metrics:grad_norm", "metrics:loss_scale"],
    params: &[
        "abs_spike",
        "rel_spike",
        "per_steps",
        "max_spikes",
        "window",
        "rel_floor",
    ],
    outcomes: &["pass", "once", "many", "skip"],
    run: grad_norm_spikes,
};

pub fn grad_norm_spikes(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (abs_spike, rel_spike, per, max_spikes, window, rel_floor) = (
        p!(ctx, "abs_spike"),
        p!(ctx, "rel_spike"),
        p!(ctx, "per_steps"),
        p!(ctx, "max_spikes"),
        p!(ctx, "window"),
        p!(ctx, "rel_floor"),
    );
    // A relative jump only counts once the norm reaches the clip threshold (or rel_floor):
    // an adapter's 0.05 → 0.5 is not an instability.
    let rel_floor = ctx
        .facts
        .f64("max_grad_norm")
        .filter(|c| *c > 0.0)
        .map_or(rel_floor, |c| c.min(rel_floor));
    let s = match need(ctx, "grad_norm", "S3.2") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let w = window.max(1.0) as usize;
    let pts = &s.points;
    let vals: Vec<f64> = pts.iter().map(|p| p.value).collect();
    // Group-relative policy gradients (GRPO, RLOO) are heavy-tailed by construction: a step
    // whose groups all scored alike has no advantage and a norm near 0, one where a single
    // group has spread carries all of it. A jump over the rolling median is the estimator's
    // ordinary spread there, so only the absolute bound (and non-finite norms) count.
    let group_relative = matches!(ctx.profile.phase.value, crate::profile::Phase::Grpo)
        && ctx.profile.phase.sure >= crate::profile::Sure::Medium;
    let finite_spike = |i: usize| -> bool {
        let v = vals[i];
        let rel = !group_relative
            && i >= w
            && v >= rel_floor
            && median(&vals[i - w..i]).is_some_and(|m| m > 0.0 && v > rel_spike * m);
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
        .message(format!(
            "{msg}{overflow_note}{}",
            if group_relative {
                " (group-relative policy gradient: only norms above the absolute bound count; a jump over the rolling median is the estimator's ordinary spread)"
            } else {
                ""
            }
        ))
        .evidence(series_evidence(s, a, b))
        .value("spikes", spikes.len() as f64)
        .value("max_in_window", dense as f64)
        .value("overflow_steps", overflow.len() as f64)]
}
pub(super) const GRAD_NORM_RATIO: ProbeSpec = ProbeSpec {
    id: "grad_norm_ratio",
    entries: &["S6.3", "O9"],
    inputs: &[
        "metrics:grad_norm",
        "baseline",
        "fact:accum_steps",
        "fact:max_grad_norm",
    ],
    params: &["tolerance", "max_ratio", "clipped_frac", "clip_factor"],
    outcomes: &["pass", "k_times", "skip"],
    run: grad_norm_ratio,
};

pub fn grad_norm_ratio(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (tol, max_ratio) = (p!(ctx, "tolerance"), p!(ctx, "max_ratio"));
    let (frac_min, factor) = (p!(ctx, "clipped_frac"), p!(ctx, "clip_factor"));
    let Some(base) = ctx.baseline else {
        return clipped_every_step(ctx, frac_min, factor).unwrap_or_else(|| {
            vec![Verdict::skip(
                "S6.3",
                "needs --baseline RUN (the same config without accumulation), or accum_steps, max_grad_norm and a logged pre-clip grad norm",
            )]
        });
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
        .evidence(whole_series_evidence(g))
        .evidence(whole_series_evidence(gb))
        .value("ratio", r)]
}

/// Without a baseline: a run that accumulates k ≥ 2 micro-batches, clips at max_grad_norm, and
/// logs a pre-clip grad norm above the clip on (nearly) every step past the first tenth of the
/// run, at a median of several times the clip. An undivided loss sums k micro-batch gradients:
/// the clip then rescales every step, and the norm it reports is k× what a divided loss gives.
fn clipped_every_step(ctx: &ProbeCtx, frac_min: f64, factor: f64) -> Option<Vec<Verdict>> {
    // Trainers that own the accumulation divide the loss themselves (HF Trainer / TRL,
    // Lightning's accumulate_grad_batches, DeepSpeed, accelerate's backward under
    // `accumulate`): the bug needs a loop of the user's own. A clip active on every step there
    // is a large-gradient regime (LoRA, early training), not k summed gradients.
    let framework = ctx.profile.framework.value.as_str();
    if matches!(
        framework,
        "hf_trainer" | "trl" | "lightning" | "deepspeed" | "accelerate" | "sentence_transformers"
    ) {
        return None;
    }
    let k = ctx.facts.f64("accum_steps").filter(|k| *k >= 2.0)?;
    let clip = ctx.facts.f64("max_grad_norm").filter(|c| *c > 0.0)?;
    let g = ctx.run.metrics().get("grad_norm")?;
    let pts: Vec<&Point> = g.points.iter().filter(|p| p.value.is_finite()).collect();
    if pts.len() < 10 {
        return None;
    }
    let tail = &pts[pts.len() / 10..];
    let above = tail.iter().filter(|p| p.value > clip).count() as f64 / tail.len() as f64;
    let vals: Vec<f64> = tail.iter().map(|p| p.value).collect();
    let med = median(&vals)?;
    let (a, b) = (tail[0].step, tail[tail.len() - 1].step);
    let measured = format!(
        "pre-clip grad norm above max_grad_norm {} on {:.0}% of steps {a}..{b}, median {} ({:.1}× the clip); accum_steps {k}",
        fmt(clip),
        100.0 * above,
        fmt(med),
        med / clip
    );
    let v = if above >= frac_min && med >= factor * clip {
        Verdict::new("O9", Status::Warn, "k_times").message(format!(
            "the clip rescales every step: with accum_steps {k}, an accumulated loss that is not divided by {k} sums {k} micro-batch gradients — loss = loss / {k} before backward() (S6.3); compare with --baseline RUN (accum 1) to confirm"
        ))
    } else {
        Verdict::new("S6.3", Status::Pass, "pass")
            .message("the pre-clip grad norm does not sit above the clip on every step")
    };
    Some(vec![v
        .measured(measured)
        .expected(format!(
            "the clip active on < {:.0}% of steps, or a median under {factor}× the clip",
            100.0 * frac_min
        ))
        .evidence(series_evidence(g, a, b))
        .value("clipped_frac", above)])
}

/// The training loss, finite values in step order, when the phase's loss is meant to fall
/// (not a policy-gradient surrogate) and there are enough points to tell.
fn falling_kind_loss(ctx: &ProbeCtx) -> Option<Vec<f64>> {
    use crate::profile::Phase;
    if matches!(
        ctx.profile.phase.value,
        Phase::Grpo | Phase::Ppo | Phase::Rl
    ) && ctx.profile.phase.sure >= crate::profile::Sure::Medium
    {
        return None;
    }
    let s = ctx.run.metrics().get("loss")?;
    let v = finite_values(s);
    // Each point a mean over many steps (an epoch's mean; the HF Trainer's loss, averaged over
    // its logging interval): four of them tell a trend that eight single batches would.
    let averaged = s.unit == crate::metrics::Unit::Epoch
        || matches!(ctx.profile.framework.value.as_str(), "hf_trainer" | "trl");
    (v.len() >= 8 || (averaged && v.len() >= 4)).then_some(v)
}

/// Does a preference-optimisation run learn, by its own signal? Its loss can sit on an offset
/// (IPO's squared distance to 1/(2β) starts at 25 for β 0.1 and falls a few percent while the
/// policy learns; hinge and KTO losses have floors of their own), so the loss's relative drop
/// does not say; the reward margin, chosen over rejected, does. Learning: the margin's last
/// quarter positive and above its first, and, where logged, the reward accuracy's last quarter
/// above a coin flip.
fn preference_learning(ctx: &ProbeCtx) -> bool {
    use crate::profile::{Phase, Sure};
    if ctx.profile.phase.value != Phase::Dpo || ctx.profile.phase.sure < Sure::Medium {
        return false;
    }
    let m = ctx.run.metrics();
    let Some(margins) = m.get("rewards/margins").map(finite_values) else {
        return false;
    };
    if margins.len() < 8 {
        return false;
    }
    let (head, _, tail) = quarters(&margins);
    let accurate = m
        .get("rewards/accuracies")
        .map(finite_values)
        .filter(|a| a.len() >= 8)
        .is_none_or(|a| quarters(&a).2 > 0.5);
    tail > 0.0 && tail > head && accurate
}

/// Means of the first quarter, the middle half and the last quarter.
fn quarters(v: &[f64]) -> (f64, f64, f64) {
    let q = (v.len() / 4).max(1);
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len().max(1) as f64;
    (
        mean(&v[..q]),
        mean(&v[q..v.len() - q]),
        mean(&v[v.len() - q..]),
    )
}

/// Whether the loss improves over the logs: from the run's start, its last quarter at least
/// 10% under its first and not above its middle (no late climb); in a resumed segment (which
/// starts near its floor), not rising by more than 2%.
pub(crate) fn loss_improving(ctx: &ProbeCtx) -> bool {
    if preference_learning(ctx) {
        return true;
    }
    let Some(v) = falling_kind_loss(ctx) else {
        return false;
    };
    let (head, mid, tail) = quarters(&v);
    if head <= 0.0 {
        return false;
    }
    // Fallen to a twentieth of where it started: it learned, whatever the noise at its floor
    // does between the last two quarters (a loss that lands on exactly 0 is degenerate, not
    // learned).
    if tail > 0.0 && tail <= 0.05 * head {
        return true;
    }
    if ctx.profile.sees_run_start() {
        (head - tail) / head >= 0.1 && tail <= mid * 1.02
    } else {
        tail <= head * 1.02 && tail <= mid * 1.05
    }
}

/// Whether a training loss of a kind meant to fall is logged, and it does not improve (see
/// [`loss_improving`]): known not to learn, as against not known.
pub(crate) fn loss_not_learning(ctx: &ProbeCtx) -> bool {
    falling_kind_loss(ctx).is_some() && !loss_improving(ctx)
}

/// Whether the loss has converged to its floor: its last quarter at most 5% of its first.
pub(crate) fn loss_converged(ctx: &ProbeCtx) -> bool {
    let Some(v) = falling_kind_loss(ctx) else {
        return false;
    };
    let (head, _, tail) = quarters(&v);
    head > 0.0 && tail >= 0.0 && tail <= 0.05 * head
}

/// Does the run start untrained: known to start from random weights, or not known to be a
/// fine-tune and its first loss (within `max_first` steps) at or above the phase's chance level
/// (ln V or ln C, when the vocabulary or class count is known)?
fn looks_untrained(ctx: &ProbeCtx, max_first: f64) -> bool {
    use crate::profile::Init;
    // An init inferred from the first loss alone (Low) is checked against chance here as if
    // unknown: the profile's "at ln V" tolerance is wider than "at or above chance".
    match ctx.profile.init.value {
        Init::Scratch if ctx.profile.init.sure >= crate::profile::Sure::Medium => true,
        Init::Pretrained | Init::Adapter => false,
        _ => {
            let chance = crate::profile::start::chance_loss(ctx.facts, ctx.profile.phase.value);
            let first = ctx
                .run
                .metrics()
                .get("loss")
                .and_then(first_finite)
                .filter(|p| p.step as f64 <= max_first);
            matches!((chance, first), (Some(c), Some(p)) if p.value >= c)
        }
    }
}
