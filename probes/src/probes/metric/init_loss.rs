//! `init_loss` (S1.1): the first logged loss against ln V (or ln C for classifier heads).

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use super::objective::{objective, Objective};
use super::{first_finite, need};
use crate::config::classifier_head;
use crate::probes::util::*;

use super::contrastive::contrastive;

/// Whether the run trains a classifier head: the `task` fact says so, or config.json's
/// `architectures` (the `architectures` fact) names a classification head.
pub(super) fn is_classifier(ctx: &ProbeCtx) -> bool {
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
            .any(|a| classifier_head(a).is_some())
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
    // A classification head with no class count: its config's vocabulary is the encoder's
    // input, not what the loss ranges over.
    if classes.is_none() && is_classifier(ctx) && !by_user("vocab_size") {
        return None;
    }
    vocab.map(|v| ((v as f64).ln(), format!("ln V = ln {v}")))
}
pub(super) const INIT_LOSS: ProbeSpec = ProbeSpec {
    id: "init_loss",
    entries: &["S1.1", "O1"],
    inputs: &[
        "metrics:loss",
        "fact:vocab_size|num_classes",
        "fact:architectures|task",
        "fact:loss|train_batch_size",
        "config:model_card_loss",
    ],
    params: &[
        "band",
        "high_margin",
        "low_margin",
        "max_first_step",
        "ln2_band",
    ],
    outcomes: &["pass", "high", "low", "skip"],
    run: init_loss,
};

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
    let loss0 = format!("loss(step {}) = {}", first.step, fmt(first.value));
    match objective(ctx) {
        (Objective::CrossEntropy, _) => {}
        (Objective::Preference, why) => {
            // With policy = reference the margin is 0 and the sigmoid loss is ln 2.
            let ln2 = std::f64::consts::LN_2;
            if (first.value - ln2).abs() <= p!(ctx, "ln2_band") {
                return vec![Verdict::new("S1.1", Status::Pass, "pass")
                    .measured(loss0)
                    .expected(format!("ln 2 = {} ({why})", fmt(ln2)))
                    .message("a preference loss starts at ln 2 while the policy equals the reference: as it should")];
            }
            return vec![Verdict::skip(
                "S1.1",
                format!("{why}: a preference loss, not a cross-entropy — ln V does not apply (and it is not a sigmoid loss at ln 2)"),
            )
            .measured(loss0)];
        }
        (Objective::PolicyGradient, why) => {
            return vec![Verdict::skip(
                "S1.1",
                format!(
                    "{why}: a policy-gradient loss starts near 0 by design — ln V does not apply"
                ),
            )
            .measured(loss0)];
        }
        (Objective::Reward, why) => {
            return vec![Verdict::skip(
                "S1.1",
                format!("{why}: a reward model's pairwise loss starts near ln 2, not ln V"),
            )
            .measured(loss0)];
        }
    }
    // An in-batch contrastive loss is a cross-entropy over the batch's candidates: chance is
    // ln K, whatever the encoder's vocabulary (unless the user states C).
    let user_vc = ctx
        .facts
        .fact("num_classes")
        .is_some_and(|f| f.source == crate::facts::FactSource::User);
    let con = contrastive(ctx).filter(|_| !user_vc);
    if let Some(base) = con.as_ref().and_then(|c| c.base.clone()) {
        return vec![Verdict::skip(
            "S1.1",
            format!("the model card says it was fine-tuned from {base}: a fine-tune starts below ln K by design"),
        )
        .measured(loss0)];
    }
    let Some((lnv, label)) = con.map(|c| (c.ln_k(), c.label())).or_else(|| log_v(ctx)) else {
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
    // A logged point that averages the first k steps (HF Trainer, TRL) sits below the step-0
    // loss of a falling curve: "below ln V" cannot be read from it, only "above".
    if let Some(k) = ctx.profile.logging.mean_over.filter(|_| d < -band) {
        return vec![Verdict::skip(
            "S1.1",
            format!(
                "the first logged loss is the mean of steps 1..{k}, not the step-0 loss: a falling loss averages below where it started, so a value under {label} says nothing of the init"
            ),
        )
        .measured(measured)];
    }
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
