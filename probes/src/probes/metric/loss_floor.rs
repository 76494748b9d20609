//! `loss_floor` (O16, O12, O13, S4.1): loss values a healthy run cannot produce — a cross-entropy
//! below 0, a classifier loss pressed against the double-softmax floor ln(1 + (C−1)/e), or a
//! loss of exactly 100 (BCELoss clamps log(0) at −100), or an in-batch contrastive loss (MNRL,
//! InfoNCE) that stays near chance ln K (S4.1).

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use super::contrastive::{contrastive, Contrastive};
use super::init_loss::is_classifier;
use super::need;
use crate::probes::util::*;

pub(super) const LOSS_FLOOR: ProbeSpec = ProbeSpec {
    id: "loss_floor",
    entries: &["O16", "O12", "O13", "S4.1"],
    inputs: &[
        "metrics:loss",
        "fact:num_classes|vocab_size",
        "fact:phase",
        "fact:loss|train_batch_size",
        "config:model_card_loss",
    ],
    params: &[
        "neg_tol",
        "min_points",
        "tail_frac",
        "near_floor",
        "start_frac",
        "flat_frac",
        "clamp_value",
        "clamp_tol",
        "chance_frac",
        "bce_saturated",
    ],
    outcomes: &[
        "pass",
        "negative",
        "softmax_floor",
        "bce_clamp",
        "chance",
        "skip",
    ],
    run: loss_floor,
};

/// Phases and series whose "loss" is not a cross-entropy (policy-gradient objectives can go
/// below zero by design).
fn rl_like(ctx: &ProbeCtx) -> bool {
    if super::objective::objective(ctx).0 == super::objective::Objective::PolicyGradient {
        return true;
    }
    ctx.run.metrics().names().iter().any(|n| {
        let n = n.to_ascii_lowercase();
        n == "kl" || n.contains("reward") || n.contains("advantage")
    })
}

pub fn loss_floor(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (neg_tol, min_points, tail_frac, near, start_frac, flat_frac, clamp, clamp_tol) = (
        p!(ctx, "O16", "neg_tol"),
        p!(ctx, "O16", "min_points"),
        p!(ctx, "O16", "tail_frac"),
        p!(ctx, "O16", "near_floor"),
        p!(ctx, "O16", "start_frac"),
        p!(ctx, "O16", "flat_frac"),
        p!(ctx, "O16", "clamp_value"),
        p!(ctx, "O16", "clamp_tol"),
    );
    let s = match need(ctx, "loss", "O16") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let fin = finite_points(s);
    if fin.is_empty() {
        return vec![Verdict::skip("O16", "no finite loss values")];
    }
    let (a, b) = (fin[0].1, fin[fin.len() - 1].0);
    let first_step = fin[0].0;
    let mut out = Vec::new();

    // O13: BCELoss clamps log at −100, so a batch where every target is saturated the wrong
    // way logs exactly 100.
    let clamped: Vec<u64> = fin
        .iter()
        .filter(|(_, v)| (v - clamp).abs() <= clamp_tol * clamp)
        .map(|(st, _)| *st)
        .collect();
    if let Some(&at) = clamped.first() {
        out.push(
            Verdict::new("O13", Status::Fail, "bce_clamp")
                .measured(format!(
                    "loss = {} exactly at {} logged step(s), first at step {at}",
                    fmt(clamp),
                    clamped.len()
                ))
                .expected(format!("never exactly {} (BCELoss clamps log(0) at −100)", fmt(clamp)))
                .message("sigmoid + BCELoss saturated: probabilities of exactly 0/1 hit the −100 log clamp — use BCEWithLogitsLoss on the raw logits (pos_weight for imbalance)")
                .evidence(series_evidence(s, at, *clamped.last().unwrap_or(&at)))
                .value("clamped_points", clamped.len() as f64),
        );
    }

    // O13 for a multi-label head: a per-element binary cross-entropy starts near ln 2; one that
    // climbs to many times that has its probabilities pinned at 0/1 the wrong way — a sigmoid
    // saturated under BCELoss's clamp (often behind a too-high LR), not a slow start.
    let multi_label = ctx
        .facts
        .get("task")
        .is_some_and(|t| t.to_ascii_lowercase().contains("multi_label"));
    if multi_label && clamped.is_empty() {
        let sat = p!(ctx, "O16", "bce_saturated");
        let k = (fin.len() as f64 * tail_frac).ceil().max(1.0) as usize;
        let tail = &fin[fin.len().saturating_sub(k)..];
        let mean = tail.iter().map(|x| x.1).sum::<f64>() / tail.len() as f64;
        if mean >= sat * std::f64::consts::LN_2 {
            let lr = ctx
                .facts
                .f64("lr_max")
                .map(|lr| format!("; the learning rate is {} here", fmt(lr)))
                .unwrap_or_default();
            out.push(
                Verdict::new("O13", Status::Fail, "bce_clamp")
                    .measured(format!(
                        "multi-label loss {} over the last {} points (chance ln 2 = 0.693 per label)",
                        fmt(mean),
                        tail.len()
                    ))
                    .expected(format!("below {} × ln 2", fmt(sat)))
                    .message(format!("sigmoid outputs saturated the wrong way: a binary cross-entropy this far above ln 2 has probabilities pinned at 0/1 — compute the loss with BCEWithLogitsLoss on the raw logits (never torch.sigmoid + BCELoss), pos_weight for imbalance, and lower the learning rate{lr}"))
                    .evidence(series_evidence(s, tail[0].0, tail[tail.len() - 1].0))
                    .value("tail_mean", mean),
            );
        }
    }

    let classes = ctx.facts.u64("num_classes").filter(|c| *c > 1);
    // An in-batch contrastive loss (MNRL, InfoNCE …) is a cross-entropy over K candidates,
    // unless the user states the classes.
    let user_classes = ctx
        .facts
        .fact("num_classes")
        .is_some_and(|f| f.source == crate::facts::FactSource::User);
    let con = contrastive(ctx).filter(|_| !user_classes);
    let categorical = classes.is_some()
        || ctx.facts.u64("vocab_size").is_some()
        || is_classifier(ctx)
        || con.is_some();
    if !categorical || rl_like(ctx) {
        if out.is_empty() {
            out.push(Verdict::skip(
                "O16",
                if categorical {
                    "an RL objective (phase / reward or KL series) may be negative: no floor to judge"
                } else {
                    "needs fact num_classes or vocab_size to know the loss is a cross-entropy"
                },
            ));
        }
        return out;
    }

    // O16: a cross-entropy over log-probabilities is never below 0.
    let (min_step, min_v) =
        fin.iter()
            .copied()
            .fold((0, f64::INFINITY), |m, p| if p.1 < m.1 { p } else { m });
    if min_v < -neg_tol {
        let negs = fin.iter().filter(|p| p.1 < -neg_tol).count();
        out.insert(
            0,
            Verdict::new("O16", Status::Fail, "negative")
                .measured(format!(
                    "loss {} at step {min_step} ({negs} logged point(s) below 0)",
                    fmt(min_v)
                ))
                .expected("a cross-entropy / NLL is ≥ 0")
                .message("the loss went below zero: NLLLoss was given probabilities or raw logits instead of log_softmax outputs — use CrossEntropyLoss on logits (or NLLLoss(log_softmax(x)))")
                .evidence(series_evidence(s, min_step, min_step))
                .value("min_loss", min_v),
        );
        return out;
    }

    if let Some(con) = con {
        let chance_frac = p!(ctx, "O16", "chance_frac");
        let v = chance(&con, &fin, (min_points, tail_frac, flat_frac, chance_frac));
        if out.is_empty() || v.status == Status::Fail {
            out.insert(0, v.evidence(series_evidence(s, first_step, b)));
        }
        return out;
    }

    // O12: with softmax applied before CrossEntropyLoss, inputs are in [0, 1], so each
    // example's loss is at least ln(1 + (C−1)/e): the curve falls from ln C and stops there.
    let Some(c) = classes else {
        if out.is_empty() {
            out.push(
                Verdict::new("O16", Status::Pass, "pass")
                    .measured(format!("lowest loss {} at step {min_step}", fmt(min_v)))
                    .expected("≥ 0 and never exactly 100")
                    .message("no impossible loss values (double-softmax floor not judged: needs fact num_classes)")
                    .evidence(series_evidence(s, first_step, b)),
            );
        }
        return out;
    };
    let c = c as f64;
    let (ln_c, floor) = (c.ln(), (1.0 + (c - 1.0) / std::f64::consts::E).ln());
    let room = ln_c - floor;
    let n = fin.len();
    if (n as f64) < min_points {
        if out.is_empty() {
            out.push(Verdict::skip(
                "O12",
                format!("too few loss points ({n}, need {min_points}) to judge a floor"),
            ));
        }
        return out;
    }
    let k = ((n as f64 * tail_frac).ceil() as usize).clamp(1, n);
    let tail: Vec<f64> = fin[n - k..].iter().map(|p| p.1).collect();
    let tail_mean = mean(&tail).unwrap_or(f64::NAN);
    let half = k / 2;
    let drift = if half >= 1 {
        mean(&tail[..half]).unwrap_or(0.0) - mean(&tail[half..]).unwrap_or(0.0)
    } else {
        0.0
    };
    let started_high = a >= floor + start_frac * room;
    let above = min_v >= floor - neg_tol.max(1e-6 * floor);
    let hugging = tail_mean <= floor + near * room;
    let flat = drift.abs() <= flat_frac * room;
    let measured = format!(
        "lowest loss {} (step {min_step}), last {k} points mean {}; floor ln(1+(C−1)/e) = {} for C = {c}, ln C = {}",
        fmt(min_v),
        fmt(tail_mean),
        fmt(floor),
        fmt(ln_c)
    );
    if started_high && above && hugging && flat {
        out.insert(
            0,
            Verdict::new("O12", Status::Fail, "softmax_floor")
                .measured(measured)
                .expected(format!("a healthy classifier goes below {} on its easy batches", fmt(floor)))
                .message("the loss fell from ln C and stopped on the double-softmax floor, never crossing it: the model's outputs are already probabilities — drop the softmax before CrossEntropyLoss (it applies log_softmax itself)")
                .evidence(series_evidence(s, fin[n - k].0, b))
                .value("floor", floor)
                .value("min_loss", min_v)
                .value("tail_mean", tail_mean),
        );
    } else if out.is_empty() {
        out.push(
            Verdict::new("O12", Status::Pass, "pass")
                .measured(measured)
                .expected(format!(
                    "≥ 0, never exactly 100, not pinned at {}",
                    fmt(floor)
                ))
                .message("no impossible loss values")
                .evidence(series_evidence(s, first_step, b))
                .value("floor", floor)
                .value("min_loss", min_v),
        );
    }
    out
}

/// S4.1 for an in-batch contrastive loss: falling from chance ln K is learning; a plateau at
/// `chance_frac` × ln K or above is an anchor that cannot find its positive among the batch
/// (warn while it still falls). With a cosine similarity and a known scale the logits are
/// bounded, and the floor that bound sets is named when it holds the loss up.
fn chance(
    con: &Contrastive,
    fin: &[(u64, f64)],
    (min_points, tail_frac, flat_frac, chance_frac): (f64, f64, f64, f64),
) -> Verdict {
    let lnk = con.ln_k();
    let n = fin.len();
    if (n as f64) < min_points || lnk <= 0.0 {
        return Verdict::skip(
            "S4.1",
            format!(
                "{}: too few loss points ({n}, need {min_points}) to judge a plateau against chance",
                con.label()
            ),
        );
    }
    let k = ((n as f64 * tail_frac).ceil() as usize).clamp(1, n);
    let tail: Vec<f64> = fin[n - k..].iter().map(|p| p.1).collect();
    let tail_mean = mean(&tail).unwrap_or(f64::NAN);
    let half = k / 2;
    let drift = if half >= 1 {
        mean(&tail[..half]).unwrap_or(0.0) - mean(&tail[half..]).unwrap_or(0.0)
    } else {
        0.0
    };
    let frac = tail_mean / lnk;
    let floor = con.scale_floor();
    let scale_note = match (con.scale, floor) {
        (Some(sc), Some(f)) => format!("; scale {} → logit floor ≈ {}", fmt(sc), fmt(f)),
        (Some(sc), None) => format!("; scale {}", fmt(sc)),
        _ => String::new(),
    };
    let measured = format!(
        "last {k} points mean {} = {:.0}% of chance {} = {} ({} from {}){scale_note}",
        fmt(tail_mean),
        100.0 * frac,
        con.label(),
        fmt(lnk),
        con.loss,
        con.from
    );
    let v = Verdict::new("S4.1", Status::Pass, "pass")
        .measured(measured)
        .value("ln_k", lnk)
        .value("tail_mean", tail_mean)
        .value("chance_frac", frac)
        .value("candidates", con.candidates as f64);
    let v = match floor {
        Some(f) => v.value("scale_floor", f),
        None => v,
    };
    if frac.is_nan() || frac < chance_frac {
        return Verdict {
            entry: "O16".into(),
            ..v.expected(format!("≥ 0, never exactly 100, well below chance ln K = {}", fmt(lnk)))
                .message("the in-batch contrastive loss falls well below chance: anchors find their positives")
        };
    }
    let flat = drift.abs() <= flat_frac * lnk;
    let (status, still) = if flat {
        (Status::Fail, "and stays there")
    } else {
        (Status::Warn, "still falling slowly at the end")
    };
    let why = match (con.scale, floor) {
        (Some(sc), Some(f)) if f >= 0.5 * chance_frac * lnk => format!(
            "at scale {} the cosine logits lie in [−{0}, {0}], so even perfectly separated embeddings cannot take the loss much below ≈ {} among K = {} candidates — raise the scale (sentence-transformers' default 20, i.e. temperature 0.05) or learn it (CLIP's logit_scale)",
            fmt(sc),
            fmt(f),
            con.candidates
        ),
        _ => "check the scale / temperature (too small a scale, too large a temperature, keeps every candidate alike), that anchors and positives stay paired, that a batch holds no duplicate texts (batch_sampler=no_duplicates), and the LR (O7)".to_string(),
    };
    Verdict {
        status,
        outcome: "chance".into(),
        message: format!(
            "the in-batch contrastive loss stays near chance ln K {still}: the anchors barely pick their positive among the batch — {why}"
        ),
        ..v.expected(format!(
            "a learning contrastive run falls below {:.0}% of ln K = {}",
            100.0 * chance_frac,
            fmt(lnk)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Params;
    use crate::probes::metric::tests::{ask, run_with, thresholds};

    fn params() -> Params {
        thresholds("loss_floor")
    }

    /// Deterministic jitter in [-1, 1].
    fn jitter(i: u64) -> f64 {
        ((i.wrapping_mul(2654435761) % 1000) as f64 / 500.0) - 1.0
    }

    #[test]
    fn negative_loss_names_nll_on_probabilities_and_healthy_twin_passes() {
        // NLLLoss on softmax outputs: −p_y falls from −0.1 toward −1.
        let bad: Vec<(u64, f64)> = (1..=100)
            .map(|i| (i, -0.1 - 0.8 * (i as f64 / 100.0)))
            .collect();
        let v = ask(
            loss_floor,
            &run_with(&[("loss", bad)]),
            &["num_classes=10"],
            params(),
        );
        assert_eq!(
            (v.entry.as_str(), v.status, v.outcome.as_str()),
            ("O16", Status::Fail, "negative")
        );
        let good: Vec<(u64, f64)> = (1..=100)
            .map(|i| {
                (
                    i,
                    2.3 * (-(i as f64) / 30.0).exp() + 0.05 + 0.02 * jitter(i),
                )
            })
            .collect();
        let v = ask(
            loss_floor,
            &run_with(&[("loss", good)]),
            &["num_classes=10"],
            params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
    }

    #[test]
    fn double_softmax_floor_is_named_and_a_slow_healthy_run_is_not() {
        let c = 10f64;
        let floor = (1.0 + (c - 1.0) / std::f64::consts::E).ln();
        // Falls from ln 10 and presses on the floor, with noise only above it.
        let bad: Vec<(u64, f64)> = (1..=200)
            .map(|i| {
                let x = floor + (c.ln() - floor) * (-(i as f64) / 20.0).exp();
                (i, x + 0.01 * jitter(i).abs())
            })
            .collect();
        let v = ask(
            loss_floor,
            &run_with(&[("loss", bad)]),
            &["num_classes=10"],
            params(),
        );
        assert_eq!(
            (v.entry.as_str(), v.status, v.outcome.as_str()),
            ("O12", Status::Fail, "softmax_floor"),
            "{v:?}"
        );
        // A healthy run that plateaus at the same level but with batch noise crossing it.
        let twin: Vec<(u64, f64)> = (1..=200)
            .map(|i| {
                let x = floor + (c.ln() - floor) * (-(i as f64) / 20.0).exp();
                (i, x + 0.1 * jitter(i))
            })
            .collect();
        let v = ask(
            loss_floor,
            &run_with(&[("loss", twin)]),
            &["num_classes=10"],
            params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
        // A healthy run that goes well below the floor.
        let deep: Vec<(u64, f64)> = (1..=200)
            .map(|i| (i, 0.2 + (c.ln() - 0.2) * (-(i as f64) / 30.0).exp()))
            .collect();
        let v = ask(
            loss_floor,
            &run_with(&[("loss", deep)]),
            &["num_classes=10"],
            params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
    }

    #[test]
    fn bce_clamp_at_100_is_named_without_any_fact() {
        let mut pts: Vec<(u64, f64)> = (1..=50).map(|i| (i, 0.7 - 0.005 * i as f64)).collect();
        pts.extend((51..=60).map(|i| (i, 100.0)));
        let v = ask(loss_floor, &run_with(&[("loss", pts)]), &[], params());
        assert_eq!(
            (v.entry.as_str(), v.status, v.outcome.as_str()),
            ("O13", Status::Fail, "bce_clamp")
        );
        let good: Vec<(u64, f64)> = (1..=60).map(|i| (i, 0.7 - 0.005 * i as f64)).collect();
        let v = ask(loss_floor, &run_with(&[("loss", good)]), &[], params());
        assert_eq!(
            v.status,
            Status::Skip,
            "no fact: the floor questions cannot be judged"
        );
    }

    #[test]
    fn rl_objectives_may_be_negative() {
        let pts: Vec<(u64, f64)> = (1..=50).map(|i| (i, -0.05 * jitter(i))).collect();
        let v = ask(
            loss_floor,
            &run_with(&[("loss", pts), ("kl", (1..=50).map(|i| (i, 0.01)).collect())]),
            &["vocab_size=50257"],
            params(),
        );
        assert_eq!(v.status, Status::Skip, "{v:?}");
    }

    /// An in-batch contrastive loss (fact loss=…, batch 32): chance is ln 32.
    fn mnrl_curve(end: f64) -> Vec<(u64, f64)> {
        let lnk = 32f64.ln();
        (1..=40)
            .map(|i| {
                let x = end + (lnk - end) * (-(i as f64) / 6.0).exp();
                (5 * i, x + 0.005 * jitter(i))
            })
            .collect()
    }

    #[test]
    fn contrastive_loss_stuck_near_ln_batch_fails_s41_and_the_healthy_twin_passes() {
        let facts = [
            "loss=MultipleNegativesRankingLoss",
            "train_batch_size=32",
            "vocab_size=125",
        ];
        // Falls from ln 32 = 3.47 to 2.69 and stays: 78% of chance.
        let v = ask(
            loss_floor,
            &run_with(&[("loss", mnrl_curve(2.69))]),
            &facts,
            params(),
        );
        assert_eq!(
            (v.entry.as_str(), v.status, v.outcome.as_str()),
            ("S4.1", Status::Fail, "chance"),
            "{v:?}"
        );
        assert!((v.values["ln_k"] - 32f64.ln()).abs() < 1e-9);
        // The same curve with scale 1 stated: the cosine-logit floor is named.
        let mut with_scale = facts.to_vec();
        with_scale.push("contrastive_scale=1");
        let v = ask(
            loss_floor,
            &run_with(&[("loss", mnrl_curve(2.69))]),
            &with_scale,
            params(),
        );
        assert_eq!(v.status, Status::Fail);
        assert!(v.message.contains("scale 1"), "{}", v.message);
        assert!((v.values["scale_floor"] - 2.4884).abs() < 1e-3, "{v:?}");
        // The healthy twin falls to 0.05: well below chance.
        let v = ask(
            loss_floor,
            &run_with(&[("loss", mnrl_curve(0.05))]),
            &facts,
            params(),
        );
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Pass, "pass"),
            "{v:?}"
        );
        // Without the contrastive loss named, ln 125 is not used to call either stuck.
        let v = ask(
            loss_floor,
            &run_with(&[("loss", mnrl_curve(2.69))]),
            &["vocab_size=125"],
            params(),
        );
        assert_eq!(v.status, Status::Pass, "{v:?}");
    }

    #[test]
    fn nt_xent_counts_the_other_2b_minus_1_views() {
        let v = ask(
            loss_floor,
            &run_with(&[("loss", mnrl_curve(0.3))]),
            &["loss=NT-Xent", "batch_size=16"],
            params(),
        );
        assert_eq!(v.values["candidates"], 31.0, "{v:?}");
    }
}
