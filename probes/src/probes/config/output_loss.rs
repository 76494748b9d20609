//! `output_loss` (O12, O13): a Keras model's last activation against its compiled loss's
//! `from_logits`, read from the `.keras` archive's config. A softmax (sigmoid) head under a loss
//! told it gets logits squashes twice; a linear head under a loss told it gets probabilities
//! reads logits as probabilities.

use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::tensors::keras::KerasModel;

pub(super) const OUTPUT_LOSS: ProbeSpec = ProbeSpec {
    id: "output_loss",
    entries: &["O12", "O13"],
    inputs: &[
        "config:keras output activation",
        "config:keras loss from_logits",
    ],
    params: &[],
    outcomes: &["pass", "squashed_twice", "logits_as_probabilities", "skip"],
    run: output_loss,
};

/// The head's activation as the loss must see it: `probabilities` (softmax / sigmoid),
/// `logits` (linear), or something else the rule does not judge.
fn head_gives(activation: &str) -> Option<bool> {
    match activation {
        "softmax" | "sigmoid" => Some(true),
        "linear" | "none" => Some(false),
        _ => None,
    }
}

pub fn output_loss(ctx: &ProbeCtx) -> Vec<Verdict> {
    // One skip (on O12, the probe's first entry) when nothing can be judged, as every probe.
    let Some(m) = ctx.run.keras_model() else {
        return vec![Verdict::skip(
            "O12",
            "no Keras model archive (.keras) in the run: the head and the loss are not stated",
        )];
    };
    let entry = if m.binary_loss() {
        "O13"
    } else if m.categorical_loss() {
        "O12"
    } else {
        let what = m
            .loss
            .as_deref()
            .unwrap_or("none compiled (or one per output)");
        return vec![Verdict::skip(
            "O12",
            format!(
                "{}: loss {what}, not a cross-entropy over classes or a binary one",
                m.path.display()
            ),
        )];
    };
    vec![judge(entry, &m)]
}

fn judge(entry: &str, m: &KerasModel) -> Verdict {
    let (Some(act), Some(from_logits)) = (m.output_activation.as_deref(), m.from_logits) else {
        return Verdict::skip(
            entry,
            format!(
                "{}: the output layer's activation is not stated",
                m.path.display()
            ),
        );
    };
    let Some(gives_probs) = head_gives(act) else {
        return Verdict::skip(
            entry,
            format!(
                "{}: output activation {act} is neither logits nor probabilities",
                m.path.display()
            ),
        );
    };
    let loss = m.loss.as_deref().unwrap_or("?");
    let layer = m.output_layer.as_deref().unwrap_or("the output layer");
    let squash = if entry == "O13" { "sigmoid" } else { "softmax" };
    let measured = format!(
        "output layer {layer}: activation {act}{}; loss {loss}(from_logits={from_logits})",
        m.output_units
            .map(|u| format!(", {u} units"))
            .unwrap_or_default()
    );
    let expected = format!(
        "a {squash} head with from_logits=False, or a linear head (logits) with from_logits=True"
    );
    let v = |status, outcome: &str| {
        Verdict::new(entry, status, outcome)
            .measured(measured.clone())
            .expected(expected.clone())
            .evidence(Evidence::file(&m.path))
    };
    match (gives_probs, from_logits) {
        (true, true) => v(Status::Fail, "squashed_twice").message(format!(
            "the head applies {act} and the loss, told it gets logits, applies {squash} again: the loss reads values in [0, 1] as logits, so it cannot fall far and the gradient is weak. Make the last Dense linear (activation=None) and keep from_logits=True; apply {squash} at inference only"
        )),
        (false, false) => v(Status::Fail, "logits_as_probabilities").message(format!(
            "the head is linear (raw logits) and the loss, left at from_logits=False, reads them as probabilities: it clips them into [1e-7, 1 - 1e-7] (and rescales them to sum to 1), so the loss no longer measures the model. Set from_logits=True on the loss, or end the head in {squash}"
        )),
        _ => v(Status::Pass, "pass").message(format!(
            "the head gives {} and the loss expects {}",
            if gives_probs { "probabilities" } else { "logits" },
            if from_logits { "logits" } else { "probabilities" }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(loss: &str, act: &str, from_logits: bool) -> KerasModel {
        KerasModel {
            path: "final.keras".into(),
            output_layer: Some("out".into()),
            output_units: Some(if loss.starts_with("binary") { 1 } else { 10 }),
            output_activation: Some(act.into()),
            loss: Some(loss.into()),
            from_logits: Some(from_logits),
            ..Default::default()
        }
    }

    #[test]
    fn a_head_and_a_loss_that_disagree_fail_and_the_two_agreements_pass() {
        let ce = "sparse_categorical_crossentropy";
        let bce = "binary_crossentropy";
        let j = |e, m: KerasModel| {
            let v = judge(e, &m);
            (v.status, v.outcome)
        };
        assert_eq!(
            j("O12", model(ce, "softmax", true)),
            (Status::Fail, "squashed_twice".into())
        );
        assert_eq!(
            j("O12", model(ce, "linear", false)),
            (Status::Fail, "logits_as_probabilities".into())
        );
        assert_eq!(j("O12", model(ce, "softmax", false)).0, Status::Pass);
        assert_eq!(j("O12", model(ce, "linear", true)).0, Status::Pass);
        assert_eq!(
            j("O13", model(bce, "sigmoid", true)),
            (Status::Fail, "squashed_twice".into())
        );
        assert_eq!(
            j("O13", model(bce, "linear", false)),
            (Status::Fail, "logits_as_probabilities".into())
        );
        assert_eq!(j("O13", model(bce, "sigmoid", false)).0, Status::Pass);
        // A head the rule cannot read as either is not judged.
        assert_eq!(j("O12", model(ce, "relu", false)).0, Status::Skip);
    }
}
