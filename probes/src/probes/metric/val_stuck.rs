//! `val_stuck` (F12): the training loss falls while the validation loss never moves off the
//! level training started from. What the model learns does not carry to held-out data at all:
//! labels that do not belong to their inputs (shuffled or misaligned), an eval pipeline that
//! feeds different inputs (V1), or train and validation drawn from different data.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::probes::util::*;

pub(super) const VAL_STUCK: ProbeSpec = ProbeSpec {
    id: "val_stuck",
    entries: &["F12"],
    inputs: &[
        "metrics:loss",
        "metrics:eval_loss",
        "metrics:accuracy",
        "metrics:eval_accuracy",
    ],
    params: &["learn_min", "carry_max", "start_still", "min_evals"],
    outcomes: &["pass", "stuck", "skip"],
    run: val_stuck,
};

/// The rule, from the training loss's starting level L0 (the median of its first few logged
/// batches, or its first epoch's mean):
/// - training learns: the mean of its last fifth is at least `learn_min` × L0 below L0;
/// - by the first eval the training loss had not yet moved (within `start_still` × L0 of L0),
///   so that eval saw the model as it started — a pretrained model learning fast in its first
///   steps is not judged by an eval taken after them;
/// - validation gains less than `carry_max` of what training gained: L0 − best eval ≤
///   carry_max × (L0 − training tail).
///
/// Overfitting differs: validation improves first, then turns back up, so its best stands
/// well below L0. A hard task learned slowly differs: validation follows training down.
pub fn val_stuck(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "F12";
    let (learn_min, carry_max, start_still, min_evals) = (
        p!(ctx, E, "learn_min"),
        p!(ctx, E, "carry_max"),
        p!(ctx, E, "start_still"),
        p!(ctx, E, "min_evals"),
    );
    if let Some(v) = accuracy_at_zero(ctx, min_evals).or_else(|| accuracy_at_chance(ctx, min_evals))
    {
        return vec![v];
    }
    let LossPair {
        tr,
        ev,
        train,
        evals,
        head_n,
        l0,
    } = match loss_pair(
        ctx,
        E,
        min_evals,
        5,
        "needs both a training loss and an eval/val loss series (or a training and an eval accuracy)",
        "no untrained level to measure from",
    ) {
        Ok(p) => p,
        Err(v) => return v,
    };
    // An epoch log's first point is the mean over a whole epoch of training, and its first eval
    // comes after it: neither shows the level training started from, so whether the training
    // loss had moved by the first eval cannot be seen. Only a run known to start from random
    // weights has its untrained level there (a fine-tune's first epoch starts far lower).
    if tr.unit == crate::metrics::Unit::Epoch
        && ctx.profile.init.value != crate::profile::Init::Scratch
    {
        return vec![Verdict::skip(
            E,
            "the loss is logged once per epoch and the run is not known to start from random weights: its first epoch mean is not an untrained level",
        )];
    }
    let tail_n = (train.len() / 5).max(1);
    let tail = train[train.len() - tail_n..]
        .iter()
        .map(|p| p.1)
        .sum::<f64>()
        / tail_n as f64;
    let (best_step, best) = evals
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, f64::NAN));
    let first_eval = evals[0].0;
    // The training loss as the first eval saw it: its last points at or before that eval.
    let before: Vec<f64> = train
        .iter()
        .rev()
        .filter(|p| p.0 <= first_eval)
        .take(head_n)
        .map(|p| p.1)
        .collect();
    let at_first_eval = median(&before).unwrap_or(l0);
    let ev_all = whole_series_evidence(ev);
    let learned = l0 - tail;
    let carried = l0 - best;
    let measured = format!(
        "training loss {} at the start ({} {}..{}) → {} (mean of the last {} points); validation best {} at {} {} (first {} at {} {})",
        fmt(l0),
        tr.unit.as_str(),
        train[0].0,
        train[head_n - 1].0,
        fmt(tail),
        tail_n,
        fmt(best),
        ev.unit.as_str(),
        best_step,
        fmt(evals[0].1),
        ev.unit.as_str(),
        first_eval
    );
    let expected = format!(
        "validation gains more than {:.0}% of what training gains below its starting level",
        100.0 * carry_max
    );
    if l0 <= 0.0 || learned < learn_min * l0 {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .message(format!(
                "the training loss fell by less than {:.0}% of its start: nothing learned for validation to miss (the loss trend is S4.1's)",
                100.0 * learn_min
            ))
            .evidence(whole_series_evidence(tr))];
    }
    if (l0 - at_first_eval).abs() > start_still * l0 {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .message("training had already moved by the first eval: that eval cannot say where validation started")
            .evidence(ev_all)];
    }
    if carried <= carry_max * learned {
        return vec![Verdict::new(E, Status::Fail, "stuck")
            .measured(measured)
            .expected(expected)
            .message(format!(
                "training fell {} below its start; validation never got more than {} below it: what the model learns does not carry to held-out data at all. Look at the data: labels that do not belong to their inputs (shuffled or misaligned, F13), an eval pipeline that normalises or decodes differently (V1), or a validation set from other data",
                fmt(learned),
                fmt(carried.max(0.0))
            ))
            .evidence(ev_all)
            .value("carried", carried / learned)];
    }
    vec![Verdict::new(E, Status::Pass, "pass")
        .measured(measured)
        .expected(expected)
        .message(format!(
            "validation gained {:.0}% of what training gained: learning carries to held-out data",
            100.0 * carried / learned
        ))
        .evidence(ev_all)
        .value("carried", carried / learned)]
}

/// A run's training and validation losses, their finite points, and the level training started
/// from: the median of its first few logged batches (a step log's first points are single
/// batches), or its first epoch's mean (`head_n` points).
pub(super) struct LossPair<'a> {
    pub tr: &'a crate::metrics::Series,
    pub ev: &'a crate::metrics::Series,
    pub train: Vec<(u64, f64)>,
    pub evals: Vec<(u64, f64)>,
    pub head_n: usize,
    pub l0: f64,
}

/// Both loss series with at least `min_evals` evals and `min_train` training points, in a log that
/// starts at the run's start (a log that begins mid-run, resumed, has no starting level); else
/// the skip verdict for entry `e`, saying `missing` or, for a late start, `no_start`.
pub(super) fn loss_pair<'a>(
    ctx: &ProbeCtx<'a>,
    e: &str,
    min_evals: f64,
    min_train: usize,
    missing: &str,
    no_start: &str,
) -> Result<LossPair<'a>, Vec<Verdict>> {
    let m = ctx.run.metrics();
    let (Some(tr), Some(ev)) = (m.get("loss"), m.get("eval_loss")) else {
        return Err(vec![Verdict::skip(e, missing)]);
    };
    let (train, evals) = (finite_points(tr), finite_points(ev));
    if (evals.len() as f64) < min_evals || train.len() < min_train {
        return Err(vec![Verdict::skip(
            e,
            format!(
                "{} eval point(s) and {} training point(s): too few to tell",
                evals.len(),
                train.len()
            ),
        )]);
    }
    let starts = match tr.unit {
        crate::metrics::Unit::Epoch => train.first().is_some_and(|p| p.0 <= 1),
        crate::metrics::Unit::Step => {
            ctx.profile.sees_run_start() && ctx.profile.resumed_at.value.is_none()
        }
    };
    if !starts {
        return Err(vec![Verdict::skip(
            e,
            format!("the training log does not start at the run's start: {no_start}"),
        )]);
    }
    let head_n = match tr.unit {
        crate::metrics::Unit::Epoch => 1,
        crate::metrics::Unit::Step => (train.len() / 20).clamp(1, 5),
    };
    let l0 = median(&train[..head_n].iter().map(|p| p.1).collect::<Vec<_>>()).unwrap_or(f64::NAN);
    Ok(LossPair {
        tr,
        ev,
        train,
        evals,
        head_n,
        l0,
    })
}

/// A run's training and evaluation accuracy as the accuracy forms read them.
struct Accuracies<'a> {
    /// The evaluation series (for evidence).
    ev: &'a crate::metrics::Series,
    /// Its finite values.
    e: Vec<f64>,
    /// 1 for fractions, 100 for percentages (any value above 1.5).
    scale: f64,
    /// The mean of the training accuracy's last fifth, and how many points that is.
    train_tail: f64,
    tail_n: usize,
}

/// Both accuracies, when logged, with at least 5 training points.
fn accuracies<'a>(ctx: &ProbeCtx<'a>) -> Option<Accuracies<'a>> {
    let m = ctx.run.metrics();
    let (tr, ev) = (m.get("accuracy")?, m.get("eval_accuracy")?);
    let (t, e) = (finite_values(tr), finite_values(ev));
    if t.len() < 5 {
        return None;
    }
    let scale = if t.iter().chain(&e).any(|v| *v > 1.5) {
        100.0
    } else {
        1.0
    };
    let tail_n = (t.len() / 5).max(1);
    let train_tail = t[t.len() - tail_n..].iter().sum::<f64>() / tail_n as f64;
    Some(Accuracies {
        ev,
        e,
        scale,
        train_tail,
        tail_n,
    })
}

/// Accuracy's form of the same question: the training accuracy ends at half its scale or
/// more while the last `min_evals` evaluations score about nothing (≤ 1% of the scale: below
/// any chance level but a thousand classes'). A model that fits its training set and scores
/// 0 on held-out data is reading labels that do not belong to the held-out inputs (a class
/// index shifted between splits, another label map).
fn accuracy_at_zero(ctx: &ProbeCtx, min_evals: f64) -> Option<Verdict> {
    let Accuracies {
        ev,
        e,
        scale,
        train_tail,
        tail_n,
    } = accuracies(ctx)?;
    let k = min_evals.max(1.0) as usize;
    if e.len() < k {
        return None;
    }
    let last = &e[e.len() - k..];
    let zero = last.iter().all(|v| *v <= 0.01 * scale);
    if !(zero && train_tail >= 0.5 * scale) {
        return None;
    }
    let best = e.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some(
        Verdict::new("F12", Status::Fail, "stuck")
            .measured(format!(
                "training accuracy {} (mean of its last {} points); the last {} evaluations {} (best {})",
                fmt(train_tail),
                tail_n,
                k,
                last.iter().map(|v| fmt(*v)).collect::<Vec<_>>().join(", "),
                fmt(best)
            ))
            .expected("held-out accuracy above chance when the training accuracy is high")
            .message("the model fits its training set and scores about nothing on held-out data, below any chance level: the held-out labels do not belong to their inputs. Compare the label map of both splits (a class folder missing from one split shifts every index after it), and decode a few validation samples next to their labels (F13, V1)")
            .evidence(whole_series_evidence(ev))
            .value("train_accuracy", train_tail),
    )
}

/// With the class count C known (a `num_classes` fact: the user's, or a Keras head's), the
/// accuracy's form also reads chance: the evaluations score within a small band of 1/C (their
/// median within 5% of the way from chance to perfect, none beyond twice that) while the
/// training accuracy ends a quarter of that way or more above it. Validation that never once beats guessing while training fits is the same
/// finding as a validation loss that never leaves its start, and needs no untrained level: it
/// holds for a fine-tune as for a run from scratch. (A model that predicts one class of an
/// imbalanced training set also scores chance on a balanced validation set: the message names it.)
fn accuracy_at_chance(ctx: &ProbeCtx, min_evals: f64) -> Option<Verdict> {
    let classes = ctx.facts.u64("num_classes").filter(|c| *c >= 2)?;
    let Accuracies {
        ev,
        e,
        scale,
        train_tail,
        tail_n,
    } = accuracies(ctx)?;
    if e.len() < (min_evals.max(1.0) as usize).max(3) {
        return None;
    }
    let chance = scale / classes as f64;
    let band = 0.05 * (scale - chance);
    let best = e.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // The typical evaluation sits in the band, and none clears it twice over: with many
    // evaluations on a finite set, the best of them wanders above chance by noise alone.
    let typical = median(&e).unwrap_or(f64::NAN);
    if !(typical <= chance + band && best <= chance + 2.0 * band)
        || train_tail < chance + 0.25 * (scale - chance)
    {
        return None;
    }
    Some(
        Verdict::new("F12", Status::Fail, "stuck")
            .measured(format!(
                "training accuracy {} (mean of its last {} points); {} evaluations, median {}, best {} — chance with {} classes is {}",
                fmt(train_tail),
                tail_n,
                e.len(),
                fmt(typical),
                fmt(best),
                classes,
                fmt(chance)
            ))
            .expected(format!(
                "held-out accuracy above chance ({} ± {}) once the training accuracy is well above it",
                fmt(chance),
                fmt(band)
            ))
            .message(format!(
                "training fits to {} while no evaluation ever beats guessing among {} classes: what the model learns does not carry to held-out data at all. Look at the data: training labels that do not belong to their inputs (shuffled or misaligned, F13), a validation pipeline that preprocesses differently (V1), or a validation set from other data; a model that only predicts the majority class of an imbalanced training set also scores chance on a balanced one (V6)",
                fmt(train_tail),
                classes
            ))
            .evidence(whole_series_evidence(ev))
            .value("train_accuracy", train_tail),
    )
}

#[cfg(test)]
mod tests {
    use crate::probe::Status;
    use crate::probes::metric::tests::{ask, run_with, thresholds};

    fn run(train: &[f64], eval: &[(u64, f64)]) -> Status {
        let t: Vec<(u64, f64)> = train
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64 + 1, *v))
            .collect();
        let r = run_with(&[("loss", t), ("eval_loss", eval.to_vec())]);
        ask(super::val_stuck, &r, &[], thresholds("val_stuck")).status
    }

    fn falling(n: usize, from: f64, to: f64) -> Vec<f64> {
        (0..n)
            .map(|i| from + (to - from) * i as f64 / (n - 1) as f64)
            .collect()
    }

    #[test]
    fn validation_that_never_leaves_the_start_fails_while_training_learns() {
        // Shuffled labels: training memorises 2.30 → 1.75, validation 2.30 → 2.45.
        let train = falling(300, 2.30, 1.75);
        let eval: Vec<(u64, f64)> = (1..=10)
            .map(|i| (i * 30, 2.30 + 0.015 * i as f64))
            .collect();
        assert_eq!(run(&train, &eval), Status::Fail);
    }

    #[test]
    fn overfitting_slow_learning_and_a_flat_loss_pass() {
        // Overfitting: validation falls to 1.0 first, then climbs back to 1.6.
        let train = falling(300, 2.30, 0.2);
        let eval: Vec<(u64, f64)> = (1..=10)
            .map(|i| {
                (
                    i * 30,
                    if i <= 3 {
                        2.3 - 0.43 * i as f64
                    } else {
                        1.0 + 0.085 * (i - 3) as f64
                    },
                )
            })
            .collect();
        assert_eq!(run(&train, &eval), Status::Pass);
        // A hard task learned slowly: validation follows training down.
        let train = falling(300, 2.30, 1.9);
        let eval: Vec<(u64, f64)> = (1..=10).map(|i| (i * 30, 2.30 - 0.03 * i as f64)).collect();
        assert_eq!(run(&train, &eval), Status::Pass);
        // Nothing learned at all: S4.1's question, not this one.
        let train = vec![2.3; 300];
        let eval: Vec<(u64, f64)> = (1..=10).map(|i| (i * 30, 2.3)).collect();
        assert_eq!(run(&train, &eval), Status::Pass);
    }

    #[test]
    fn held_out_accuracy_at_zero_while_training_fits_fails() {
        let acc = |v: f64| {
            (1..=300)
                .map(|i| (i, v.min(i as f64 / 3.0)))
                .collect::<Vec<_>>()
        };
        let r = run_with(&[
            ("accuracy", acc(98.0)),
            (
                "eval_accuracy",
                vec![(30, 13.7), (60, 21.5), (90, 0.0), (120, 0.0), (150, 0.0)],
            ),
        ]);
        let v = ask(super::val_stuck, &r, &[], thresholds("val_stuck"));
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Fail, "stuck"),
            "{v:?}"
        );
        // Held-out accuracy low but above 1% of the scale (a hard task, or chance with few
        // classes) is not this.
        let r = run_with(&[
            ("accuracy", acc(98.0)),
            (
                "eval_accuracy",
                vec![(30, 10.0), (60, 11.0), (90, 9.0), (120, 10.5), (150, 9.8)],
            ),
        ]);
        let v = ask(super::val_stuck, &r, &[], thresholds("val_stuck"));
        assert_ne!(v.status, Status::Fail, "{v:?}");
    }

    #[test]
    fn held_out_accuracy_at_chance_with_known_classes_fails() {
        // Keras, training labels shuffled: train 0.10 → 0.43 by memorising, val 0.09-0.13 with
        // 10 classes. An epoch log, no untrained level needed.
        let train: Vec<(u64, f64)> = (0..25).map(|i| (i, 0.10 + 0.0135 * i as f64)).collect();
        let val: Vec<(u64, f64)> = (0..25)
            .map(|i| (i, 0.10 + 0.03 * ((i * 7 % 5) as f64 / 4.0 - 0.3)))
            .collect();
        let r = run_with(&[("accuracy", train.clone()), ("eval_accuracy", val.clone())]);
        let ten = &["num_classes=10"];
        let v = ask(super::val_stuck, &r, &[], thresholds("val_stuck"));
        assert_ne!(v.status, Status::Fail, "without the class count: {v:?}");
        let v = ask(super::val_stuck, &r, ten, thresholds("val_stuck"));
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Fail, "stuck"),
            "{v:?}"
        );
        // Validation that clears chance once by far (0.30 at one eval), or training that stays
        // near chance too (a hard task), is not this.
        let mut once = val.clone();
        once[6].1 = 0.30;
        let r = run_with(&[("accuracy", train.clone()), ("eval_accuracy", once)]);
        let v = ask(super::val_stuck, &r, ten, thresholds("val_stuck"));
        assert_ne!(v.status, Status::Fail, "{v:?}");
        let slow: Vec<(u64, f64)> = (0..25).map(|i| (i, 0.10 + 0.004 * i as f64)).collect();
        let r = run_with(&[("accuracy", slow), ("eval_accuracy", val.clone())]);
        let v = ask(super::val_stuck, &r, ten, thresholds("val_stuck"));
        assert_ne!(v.status, Status::Fail, "{v:?}");
        // Binary: validation at 0.62 beside training at 0.95 is a hard task overfitted, above
        // the band (0.5 + 0.025), not chance.
        let tr: Vec<(u64, f64)> = (0..20).map(|i| (i, 0.6 + 0.018 * i as f64)).collect();
        let ev: Vec<(u64, f64)> = (0..20).map(|i| (i, 0.58 + 0.002 * i as f64)).collect();
        let r = run_with(&[("accuracy", tr), ("eval_accuracy", ev)]);
        let v = ask(
            super::val_stuck,
            &r,
            &["num_classes=2"],
            thresholds("val_stuck"),
        );
        assert_ne!(v.status, Status::Fail, "{v:?}");
    }

    #[test]
    fn a_first_eval_after_training_already_moved_cannot_judge() {
        // A pretrained model adapting fast: training 2.5 → 1.6 within the first 30 steps, the
        // first eval at step 100 (2.3) is the best; that is overfitting, not a data bug.
        let mut train = falling(30, 2.5, 1.6);
        train.extend(falling(270, 1.6, 1.2));
        let eval: Vec<(u64, f64)> = (1..=3).map(|i| (i * 100, 2.2 + 0.1 * i as f64)).collect();
        assert_eq!(run(&train, &eval), Status::Pass);
    }
}
