//! `head_shape` (O20/L3): head rows against num_classes, embedding rows against the vocabulary.

use std::path::PathBuf;

use crate::config::classifier_head;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::Run;
use crate::tensors::TensorInfo;

use crate::probes::checkpoint::model::*;

// =======================================================================================
// O20 / L3 — head rows vs num_classes, embedding rows vs vocabulary
// =======================================================================================

fn is_head_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    if [
        "lm_head",
        "decoder",
        "predictions",
        "attn",
        "attention",
        "mlp",
        "lora",
        "embed",
        "pooler",
    ]
    .iter()
    .any(|x| n.contains(x))
    {
        return false;
    }
    last_component(&n) == "weight"
        && n.split('.').any(|c| {
            matches!(
                c,
                "classifier"
                    | "score"
                    | "fc"
                    | "head"
                    | "heads"
                    | "cls"
                    | "logits"
                    | "classification_head"
            )
        })
}

/// `num_labels` from config.json is a default (2) unless the model is a classifier.
fn num_classes(ctx: &ProbeCtx) -> Option<(u64, String)> {
    let f = ctx.facts.fact("num_classes")?;
    let n = ctx.facts.u64("num_classes")?;
    if let crate::facts::FactSource::Artifact(file) = &f.source {
        if n == 2 {
            if let Some((_, c)) = ctx.run.model_config() {
                let explicit = c.raw.get("num_labels").is_some();
                let classifier = c.architectures.iter().any(|a| classifier_head(a).is_some());
                if !explicit && !classifier {
                    return None;
                }
            }
        }
        return Some((n, format!("num_labels in {file}")));
    }
    Some((n, "--fact num_classes".to_string()))
}

/// Tokenizer size from a `tokenizer.json`: the largest token id + 1.
fn tokenizer_size(run: &Run) -> Option<(u64, PathBuf)> {
    let a = run
        .artifacts
        .iter()
        .filter(|a| file_name(&a.path) == "tokenizer.json")
        .min_by_key(|a| a.path.components().count())?;
    if a.bytes > 64 << 20 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&a.path).ok()?).ok()?;
    let mut max: Option<u64> = None;
    if let Some(vocab) = v.get("model").and_then(|m| m.get("vocab")) {
        if let Some(o) = vocab.as_object() {
            max = o.values().filter_map(|x| x.as_u64()).max();
        } else if let Some(arr) = vocab.as_array() {
            max = (!arr.is_empty()).then(|| arr.len() as u64 - 1);
        }
    }
    if let Some(added) = v.get("added_tokens").and_then(|x| x.as_array()) {
        let m2 = added
            .iter()
            .filter_map(|t| t.get("id").and_then(|x| x.as_u64()))
            .max();
        max = max.max(m2);
    }
    max.map(|m| (m + 1, a.path.clone()))
}
pub(super) const HEAD_SHAPE: ProbeSpec = ProbeSpec {
    id: "head_shape",
    entries: &["O20", "L3"],
    inputs: &["checkpoint", "fact:num_classes", "fact:vocab_size"],
    params: &[],
    outcomes: &["pass", "mismatch", "skip"],
    run: head_shape,
};

pub fn head_shape(ctx: &ProbeCtx) -> Vec<Verdict> {
    let m = match newest_model(ctx.run, "O20") {
        Ok(m) => m,
        Err(v) => return v,
    };
    let mut out = Vec::new();
    // O20: classifier head rows.
    let mut heads: Vec<(&str, &TensorInfo)> = m
        .infos()
        .filter(|(n, i)| i.shape.len() == 2 && i.dtype.is_float() && is_head_name(n))
        .collect();
    heads.sort_by_key(|(n, _)| natural_key(n));
    match (heads.last(), num_classes(ctx)) {
        (None, _) => out.push(Verdict::skip(
            "O20",
            "no classifier head (classifier/score/fc/head … weight) in the checkpoint",
        )),
        (Some((n, _)), None) => out.push(Verdict::skip(
            "O20",
            format!("needs fact num_classes to check {n}"),
        )),
        (Some((n, i)), Some((c, src))) => {
            let rows = i.shape[0] as u64;
            let v = if rows == c || (rows == 1 && c == 2) {
                Verdict::new("O20", Status::Pass, "pass").message(if rows == c {
                    "the head has one row per class".to_string()
                } else {
                    "one logit for two classes (BCE head)".to_string()
                })
            } else {
                Verdict::new("O20", Status::Fail, "mismatch").message(format!(
                    "{n} has {rows} output rows but there are {c} classes ({src}): the head was not replaced for the new label set (a pretrained head kept, or load_state_dict(strict=False) left the old shape) — re-create it with num_labels={c} (ignore_mismatched_sizes=True)"
                ))
            };
            out.push(
                v.measured(format!("{n} {}", shape_str(&i.shape)))
                    .expected(format!("{c} rows ({src})"))
                    .evidence(m.ev().tensor(*n))
                    .value("rows", rows as f64)
                    .value("num_classes", c as f64),
            );
        }
    }
    // L3: embedding rows vs vocabulary (fact, else tokenizer.json).
    let emb = m.infos().find(|(n, i)| {
        let l = n.to_ascii_lowercase();
        i.shape.len() == 2
            && i.dtype.is_float()
            && (l.contains("wte") || l.contains("embed_tokens") || l.contains("word_embeddings"))
            && !is_lora(n)
    });
    let vocab_fact = ctx.facts.u64("vocab_size").map(|v| {
        (
            v,
            ctx.facts
                .fact("vocab_size")
                .map(|f| match &f.source {
                    crate::facts::FactSource::User => "--fact vocab_size".to_string(),
                    crate::facts::FactSource::Artifact(p) => format!("vocab_size in {p}"),
                })
                .unwrap_or_default(),
        )
    });
    let tok = tokenizer_size(ctx.run).map(|(v, p)| (v, format!("tokenizer {}", p.display())));
    let need = [vocab_fact, tok]
        .into_iter()
        .flatten()
        .max_by_key(|(v, _)| *v);
    match (emb, need) {
        (None, _) => out.push(Verdict::skip(
            "L3",
            "no token embedding (wte / embed_tokens / word_embeddings) in the checkpoint",
        )),
        (Some((n, _)), None) => out.push(Verdict::skip(
            "L3",
            format!("needs fact vocab_size to check {n}"),
        )),
        (Some((n, i)), Some((v, src))) => {
            let rows = i.shape[0] as u64;
            let verdict = if rows >= v {
                Verdict::new("L3", Status::Pass, "pass")
                    .message("every token id has an embedding row (a tied LM head shares it)")
            } else {
                Verdict::new("L3", Status::Fail, "mismatch").message(format!(
                    "{n} has {rows} rows but the vocabulary has {v} ({src}): tokens were added (pad / special tokens) without model.resize_token_embeddings(len(tokenizer)) — ids ≥ {rows} index out of range or alias other rows"
                ))
            };
            out.push(
                verdict
                    .measured(format!("{n} {}", shape_str(&i.shape)))
                    .expected(format!("≥ {v} rows ({src})"))
                    .evidence(m.ev().tensor(n))
                    .value("rows", rows as f64)
                    .value("vocab", v as f64),
            );
        }
    }
    out
}
