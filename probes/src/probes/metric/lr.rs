//! Learning-rate probes: `lr_schedule` (the logged LR against the declared schedule) and
//! `lr_warmup_peak`.

use crate::facts::Facts;
use crate::metrics::Point;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use super::need;
use crate::probes::util::*;

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

/// The LR the facts declare (`schedule`, `lr_max`, `warmup_steps`, …) at each of `steps`,
/// for drawing beside the logged curve; None when no modelled schedule is declared.
pub fn declared_curve(f: &Facts, steps: &[u64]) -> Option<Vec<f64>> {
    let kind = f.get("schedule")?.trim().to_ascii_lowercase();
    let lr_max = f.f64("lr_max").filter(|m| *m > 0.0)?;
    let last = steps.iter().copied().max().unwrap_or(0);
    let d = DeclaredSchedule::from_facts(f, &kind, last);
    let total = d.total.unwrap_or(f64::INFINITY);
    steps
        .iter()
        .map(|&t| d.rel_at(total, t as f64, 0.0).map(|r| r * lr_max))
        .collect()
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
    fn from_facts(f: &Facts, kind: &str, last_step: u64) -> Self {
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
pub(super) const LR_SCHEDULE: ProbeSpec = ProbeSpec {
    id: "lr_schedule",
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
};

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
        .map(|k| DeclaredSchedule::from_facts(ctx.facts, k, b));
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
        if decl.is_none() {
            if let Some((name, flat_over, length)) = named_moving_schedule(ctx, s.unit, a, b) {
                let msg = format!("the config names the {name} LR schedule, which moves the LR every step or epoch, but the LR never moves over {flat_over} of {length}: {}", never_stepped(ctx, lr_max, hi));
                return vec![base(Status::Fail, "constant_nonzero")
                    .measured(measured)
                    .expected(format!(
                        "{name} moves the LR over any {:.0}% of {length}",
                        100.0 * NAMED_SPAN_MIN
                    ))
                    .message(msg)];
            }
        }
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
            let msg = format!(
                "declared {} but the LR never moves: {}",
                d.kind,
                never_stepped(ctx, lr_max, hi)
            );
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
    // A smooth schedule turns at most once (a warmup, then the decay); one that swings between
    // its bounds again and again, without jumps, is a cosine stepped past its period: PyTorch's
    // CosineAnnealingLR bounces back up after T_max steps (T_max counted in epochs while the
    // scheduler is stepped every batch). A cyclic schedule does it on purpose.
    let legs = swings(&pts, SWING_SHARE * (hi - lo));
    if bounces(&pts, &legs) {
        let legs = legs.len();
        let named = named_sched(ctx);
        if !named.as_ref().is_some_and(|(_, k)| *k == SchedName::Cyclic) {
            let smooth_named = named
                .filter(|(_, k)| *k == SchedName::Smooth)
                .map(|(n, _)| n);
            let st = if smooth_named.is_some() || declared.is_some() {
                Status::Fail
            } else {
                Status::Warn
            };
            let what = smooth_named
                .map(|n| format!("the config's {n} schedule"))
                .or_else(|| {
                    declared
                        .clone()
                        .map(|d| format!("the declared {d} schedule"))
                })
                .unwrap_or_else(|| "a warmup and one decay".into());
            return vec![base(st, "mismatch")
                .measured(format!(
                    "LR swings {legs} times between {} and {} over steps {a}..{b}, smoothly (no jumps)",
                    fmt(lo),
                    fmt(hi)
                ))
                .expected(format!("{what}: at most one turn"))
                .message(
                    "the LR rises and falls again and again: a cosine stepped past its period bounces back to its peak (CosineAnnealingLR's T_max counted in epochs while scheduler.step() runs every batch, or a T_max shorter than the run) — set T_max to the number of scheduler.step() calls over the run (epochs × steps per epoch when stepped per batch), or step it once per epoch; a cyclic schedule meant this way: pass --fact sched=cyclic"
                )
                .value("swings", legs as f64)];
        }
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
pub(super) const LR_WARMUP_PEAK: ProbeSpec = ProbeSpec {
    id: "lr_warmup_peak",
    entries: &["S2.2"],
    inputs: &["metrics:learning_rate", "fact:warmup_steps", "fact:lr_max"],
    params: &["pass_rel", "fail_ratio", "overshoot_fail"],
    outcomes: &["pass", "low", "high", "skip"],
    run: lr_warmup_peak,
};

/// Why a declared schedule's LR sits flat at `hi`, with the run's framework's knob, and where it
/// sits against `lr_max` when that is known.
fn never_stepped(ctx: &ProbeCtx, lr_max: Option<f64>, hi: f64) -> String {
    let mut msg = format!(
        "the scheduler is never stepped ({}), or the optimizer is rebuilt each step and loses the schedule",
        scheduler_step_knob(ctx)
    );
    if let Some(m) = lr_max {
        msg.push_str(&format!("; it sits at {}× lr_max {}", fmt(hi / m), fmt(m)));
    }
    msg
}

/// How a config's `sched` name (timm's `args.yaml`, Lightning's `hparams.yaml`) reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SchedName {
    /// May hold the LR flat for long: constant, step, multistep, plateau, none.
    Still,
    /// Rises and falls on purpose, again and again: CyclicLR, triangular.
    Cyclic,
    /// Moves the LR smoothly, turning at most once: cosine, linear, polynomial, exponential,
    /// one-cycle, tanh, inverse square root.
    Smooth,
    /// Not a name these words tell.
    Other,
}

/// The config's `sched` name, lowercased, and how it reads.
fn named_sched(ctx: &ProbeCtx) -> Option<(String, SchedName)> {
    let name = ctx.facts.get("sched")?.trim().to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    let kind = if has(&["const", "step", "plateau", "none", "stable", "fixed"]) {
        SchedName::Still
    } else if has(&["cycl", "clr", "triang"]) && !name.contains("one") {
        SchedName::Cyclic
    } else if has(&["cos", "linear", "poly", "exp", "cycle", "tanh", "sqrt"]) {
        SchedName::Smooth
    } else {
        SchedName::Other
    };
    Some((name, kind))
}

/// A swing of the LR counts when it covers at least this share of the series' range.
const SWING_SHARE: f64 = 0.5;
/// Swings (rises and falls, each over [`SWING_SHARE`] of the range) from which the LR
/// oscillates: a warmup and a decay are two, a one-cycle two, a cosine run past its period once
/// more a third; four is two whole cycles.
const SWINGS_MIN: usize = 4;

/// The series' swings of at least `need` (a share of its range), as (first, last) point indices,
/// read as a zigzag: a turn counts only once the series has moved back that far from its last
/// extreme, so jitter on a long decay (float rounding, an adaptive optimizer's wobble) makes no
/// swing.
fn swings(pts: &[&Point], need: f64) -> Vec<(usize, usize)> {
    let mut legs: Vec<(usize, usize)> = Vec::new();
    if pts.len() < 3 || need.is_nan() || need <= 0.0 {
        return legs;
    }
    // dir: +1 rising, -1 falling, 0 not yet moved `need` from the lowest or highest value so
    // far; `ext` the index of the current leg's extreme.
    let (mut dir, mut ext) = (0i8, 0usize);
    let (mut min, mut max) = (0usize, 0usize);
    for (k, p) in pts.iter().enumerate().skip(1) {
        let v = p.value;
        let e = pts[ext].value;
        match dir {
            0 => {
                if v < pts[min].value {
                    min = k;
                }
                if v > pts[max].value {
                    max = k;
                }
                if v - pts[min].value >= need {
                    (dir, ext) = (1, k);
                    legs.push((min, k));
                } else if pts[max].value - v >= need {
                    (dir, ext) = (-1, k);
                    legs.push((max, k));
                }
            }
            1 if v > e => ext = k,
            -1 if v < e => ext = k,
            _ if (e - v).abs() >= need => {
                legs.last_mut().expect("a leg is open").1 = ext;
                legs.push((ext, k));
                (dir, ext) = (-dir, k);
            }
            _ => {}
        }
        if dir != 0 {
            legs.last_mut().expect("a leg is open").1 = ext;
        }
    }
    legs
}

/// Share of a swing's change made over the middle half of its steps: about 0.71 for a half
/// cosine (flat near its ends), 0.5 for a linear ramp (a triangular cyclic schedule). Only for
/// a swing of at least 6 points.
fn middle_share(pts: &[&Point], (i, j): (usize, usize)) -> Option<f64> {
    if j < i + 5 {
        return None;
    }
    let (s0, s1) = (pts[i].step as f64, pts[j].step as f64);
    let at = |f: f64| {
        let t = s0 + f * (s1 - s0);
        pts[i..=j]
            .iter()
            .min_by(|a, b| {
                (a.step as f64 - t)
                    .abs()
                    .total_cmp(&(b.step as f64 - t).abs())
            })
            .map(|p| p.value)
    };
    let whole = (pts[j].value - pts[i].value).abs();
    let mid = (at(0.75)? - at(0.25)?).abs();
    (whole > 0.0).then(|| mid / whole)
}

/// Whether the swings read as a cosine stepped past its period: at least [`SWINGS_MIN`], every
/// rise after the first swing taking more than one logged interval (a restart schedule, SGDR or
/// HF's cosine_with_restarts, jumps back up at once), and no swing shaped as a linear ramp (a
/// triangular cyclic schedule) where one is long enough to tell.
fn bounces(pts: &[&Point], legs: &[(usize, usize)]) -> bool {
    if legs.len() < SWINGS_MIN {
        return false;
    }
    let rises_at_once = legs
        .iter()
        .skip(1)
        .any(|&(i, j)| pts[j].value > pts[i].value && j <= i + 1);
    let shares: Vec<f64> = legs.iter().filter_map(|&l| middle_share(pts, l)).collect();
    let linear = median(&shares).is_some_and(|m| m < 0.6);
    !rises_at_once && !linear
}

/// The least share of a run's planned length over which a flat LR contradicts a named smooth
/// schedule: a cosine moves at least 20% over any 30% of its run (least at its start, where
/// (1 - cos 0.3π)/2 ≈ 0.21), a linear decay 30%, whatever warmup came before.
const NAMED_SPAN_MIN: f64 = 0.3;

/// A smoothly moving schedule named by a config's `sched` (cosine, linear, poly, exponential,
/// one-cycle, tanh, inverse square root; never a constant, step, multistep or plateau one, which
/// may stay flat for long), when the flat LR series (steps `a..=b`, in `unit`) spans at least
/// [`NAMED_SPAN_MIN`] of the run's planned length in the same unit (`epochs` for an LR logged
/// per epoch, `total_steps` per step), or of a cosine's period `t_max` by the epochs it spans:
/// (name, the flat stretch, the length it is held against), in words.
fn named_moving_schedule(
    ctx: &ProbeCtx,
    unit: crate::metrics::Unit,
    a: u64,
    b: u64,
) -> Option<(String, String, String)> {
    let (name, kind) = named_sched(ctx)?;
    if !matches!(kind, SchedName::Smooth | SchedName::Cyclic) {
        return None;
    }
    let fits = |span: u64, total: f64| total > 0.0 && span as f64 >= NAMED_SPAN_MIN * total;
    let span = b.saturating_sub(a);
    let by_length = match unit {
        crate::metrics::Unit::Epoch => ctx.facts.f64("epochs").map(|t| (t, "epochs")),
        crate::metrics::Unit::Step => ctx.facts.f64("total_steps").map(|t| (t, "steps")),
    };
    if let Some((total, word)) = by_length {
        if fits(span, total) && b as f64 <= 1.5 * total {
            return Some((
                name,
                format!("{span} {word}"),
                format!("the run's {total} {word}"),
            ));
        }
    }
    // A cosine's period T_max counts scheduler steps: epochs (stepped per epoch) or optimizer
    // steps, never fewer than the epochs the flat stretch spans, so those epochs decide.
    let t_max = ctx.facts.f64("t_max")?;
    let epochs = ctx.run.metrics().get("epoch").and_then(|e| {
        let inside: Vec<f64> = e
            .points
            .iter()
            .filter(|p| (a..=b).contains(&p.step) && p.value.is_finite())
            .map(|p| p.value)
            .collect();
        let lo = inside.iter().copied().reduce(f64::min)?;
        let hi = inside.iter().copied().reduce(f64::max)?;
        Some((hi - lo).max(0.0) as u64)
    });
    let span = match unit {
        crate::metrics::Unit::Epoch => span,
        crate::metrics::Unit::Step => epochs?,
    };
    fits(span, t_max).then(|| {
        (
            name,
            format!("{span} epochs (at least {span} scheduler steps)"),
            format!("its period T_max = {t_max} scheduler steps"),
        )
    })
}

/// How this run's framework steps its LR scheduler, as the knob to turn when the schedule
/// never advances (the fix names the run's own framework, not a generic loop).
pub(crate) fn scheduler_step_knob(ctx: &ProbeCtx) -> &'static str {
    match ctx.profile.framework.value.as_str() {
        "lightning" => "Lightning steps only a scheduler that configure_optimizers returns, once per epoch unless told otherwise: return {\"optimizer\": opt, \"lr_scheduler\": {\"scheduler\": sched, \"interval\": \"step\"}} (a scheduler built and not returned is never stepped)",
        "hf_trainer" | "trl" => "the Trainer steps its own scheduler: check lr_scheduler_type (not \"constant\") and that a custom optimizers=(opt, sched) pair passes the scheduler, not None",
        "deepspeed" => "give DeepSpeed the scheduler (the \"scheduler\" block of its config, or lr_scheduler= in deepspeed.initialize) or call lr_scheduler.step() after engine.step()",
        "accelerate" => "call lr_scheduler.step() after optimizer.step() in the loop (and pass the scheduler through accelerator.prepare)",
        "timm" => "timm's schedulers are stepped by the loop: lr_scheduler.step(epoch + 1) after each epoch, and lr_scheduler.step_update(num_updates) after each optimizer step when sched_on_updates is set",
        _ => "call scheduler.step() after each optimizer.step()",
    }
}

pub fn lr_warmup_peak(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (pass_rel, fail_ratio, over) = (
        p!(ctx, "pass_rel"),
        p!(ctx, "fail_ratio"),
        p!(ctx, "overshoot_fail"),
    );
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
    // The declared plan against the run: a warmup longer than the run never reaches lr_max,
    // whatever the curve's shape (a fit to the observed peak would call it a clean schedule).
    let run_end = ctx.run.max_step().unwrap_or(0);
    if let (Some(last), true) = (s.last(), run_end > 0 && run_end < w) {
        let peak = s
            .points
            .iter()
            .map(|p| p.value)
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let r = peak / m;
        if r < 1.0 - pass_rel {
            return vec![Verdict::new("S2.2", Status::Fail, "low")
                .measured(format!(
                    "warmup_steps {w} > the run's {run_end} steps: the LR peaked at {} = {:.2}× lr_max",
                    fmt(peak),
                    r
                ))
                .expected(format!("warmup ending within the run, at lr_max {}", fmt(m)))
                .message(format!(
                    "the warmup ({w} steps) is longer than the run ({run_end} steps): the LR never got past {:.0}% of lr_max — set warmup_steps to a few percent of the run (warmup_ratio 0.03–0.1) or train longer",
                    100.0 * r
                ))
                .evidence(series_evidence(s, s.points[0].step, last.step))
                .value("ratio", r)];
        }
    }
    // Logged every k steps, the peak shows at the first point logged after warmup ends (a point
    // before it is still on the ramp): look one logging interval past the end, and judge that
    // point against what the declared schedule says at its own step (decay already begun).
    let every = crate::profile::Logging::interval_of(s).unwrap_or(1).max(2);
    let near: Vec<&Point> = s
        .range(w.saturating_sub(1), w + every)
        .iter()
        .filter(|p| p.value.is_finite())
        .collect();
    let Some(best) = near.iter().max_by(|a, b| a.value.total_cmp(&b.value)) else {
        return vec![Verdict::skip(
            "S2.2",
            format!("no LR logged around step {w}"),
        )];
    };
    let decayed = if best.step > w + 1 {
        declared_curve(ctx.facts, &[best.step])
            .and_then(|v| v.first().copied())
            .filter(|d| *d > 0.0)
            .map(|d| d / m)
            .unwrap_or(1.0)
    } else {
        1.0
    };
    let r = best.value / (m * decayed);
    // Trainers log the LR of the step before or after the peak as often as the peak itself:
    // one warmup step (1/W of lr_max) of slack on top of pass_rel, and float rounding.
    let tol = pass_rel.max(1.0 / w.max(1) as f64) + 1e-9;
    let (st, out, msg) = if (r - 1.0).abs() <= tol {
        (
            Status::Pass,
            "pass",
            "warmup reaches lr_max on time".to_string(),
        )
    } else if r < fail_ratio {
        // An LR that never moved from where it started is a schedule that is never stepped.
        let fin: Vec<f64> = s
            .points
            .iter()
            .map(|p| p.value)
            .filter(|v| v.is_finite())
            .collect();
        let (lo, hi) = fin
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
        let flat = fin.len() >= 3 && hi > 0.0 && (hi - lo) <= 1e-6 * hi;
        if flat {
            (Status::Fail, "low", format!("the LR never moved from {} over the whole run: the warmup never advanced because the scheduler is not stepped per optimizer step — {}", fmt(hi), scheduler_step_knob(ctx)))
        } else {
            (Status::Fail, "low", format!("LR at the end of warmup is under {fail_ratio}× lr_max: the LR is in other units than lr_max (a scale or per-group factor), or the schedule is not applied (an off-by-one in t/W only costs 1/W)"))
        }
    } else if r >= over {
        (
            Status::Fail,
            "high",
            format!("the LR applied is {r:.1}× the lr_max given: the configured learning_rate is not the one meant (a units or scale mix-up, a typo in the exponent) — set it to lr_max"),
        )
    } else if r > 1.0 {
        (
            Status::Warn,
            "high",
            format!(
                "LR at the end of warmup overshoots lr_max by more than {:.0}%",
                100.0 * pass_rel
            ),
        )
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
