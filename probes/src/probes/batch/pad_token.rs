//! `pad_token` (L3): a pad token set, distinct from content, ids inside the vocabulary.

use std::collections::BTreeMap;

use crate::config::{classifier_head, ClassifierHead, ModelConfig};
use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;

// ---------------------------------------------------------------------------------------
// L3: pad token

/// A `*ForSequenceClassification` model (config architectures), or a batch shaped like one
/// (labels (N,) beside input_ids (N, L)).
fn is_seq_cls(cfg: Option<&ModelConfig>, b: &Batch, ids: &Ints) -> bool {
    if cfg.is_some_and(|c| {
        c.architectures
            .iter()
            .any(|a| classifier_head(a) == Some(ClassifierHead::Sequence))
    }) {
        return true;
    }
    ids.shape.len() == 2
        && b.find(LABELS)
            .is_some_and(|l| l.shape.len() == 1 && l.shape.first() == ids.shape.first())
}
pub(super) const PAD_TOKEN: ProbeSpec = ProbeSpec {
    id: "pad_token",
    entries: &["L3"],
    inputs: &[
        "batch:input_ids",
        "batch:attention_mask",
        "batch:labels",
        "config:pad_token_id",
        "config:architectures",
        "fact:vocab_size",
    ],
    params: &[],
    outcomes: &["pass", "unset", "out_of_range", "skip"],
    run: pad_token,
};

pub fn pad_token(ctx: &ProbeCtx) -> Vec<Verdict> {
    let cfg = model_config(ctx);
    let c = cfg.as_ref().map(|c| &c.1);
    let vocab = vocab_size(ctx, c);
    let pad = PadId::of(ctx, c);
    let eos = eos_ids(ctx, c);
    let ign = ignore_index(ctx);
    let generating = phase(ctx).and_then(|p| wanted_side(&p)) == Some("left");
    over_batches(ctx, "L3", "no batch carries input_ids", |b| {
        let ids = match b.ints(INPUT_IDS)? {
            Ok(i) => i,
            Err(e) => return Some(Verdict::skip("L3", e)),
        };
        let attn = b
            .ints(ATTN)
            .and_then(Result::ok)
            .filter(|a| a.shape == ids.shape);
        // An encoder–decoder's labels are the decoder's targets, not aligned with input_ids.
        let enc_dec = is_encoder_decoder(ctx, c, b);
        let labels = b
            .find(LABELS)
            .filter(|l| l.shape == ids.shape && !enc_dec)
            .and_then(|t| b.read_ints(t).ok());
        let seqcls = is_seq_cls(c, b, &ids);
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for &x in &ids.v {
            lo = lo.min(x);
            hi = hi.max(x);
        }
        let mut fill: BTreeMap<i64, usize> = BTreeMap::new();
        let mut right_padded = 0usize;
        if let Some(a) = &attn {
            for (&m, &x) in a.v.iter().zip(&ids.v) {
                if m == 0 {
                    *fill.entry(x).or_default() += 1;
                }
            }
            right_padded = a.rows().filter(|r| r.last() == Some(&0)).count();
        }
        let pad_n: usize = fill.values().sum();
        let fill_id = fill
            .iter()
            .max_by_key(|(k, n)| (**n, std::cmp::Reverse(**k)))
            .map(|(k, _)| *k);
        let cfg_path = cfg
            .as_ref()
            .map(|c| c.0.display().to_string())
            .unwrap_or_else(|| "facts".into());
        let mut measured = format!("input_ids in [{lo}, {hi}]");
        if let Some(v) = vocab {
            measured.push_str(&format!(" vs vocab_size {v}"));
        }
        measured.push_str(&format!(
            "; pad_token_id = {}",
            match pad {
                PadId::Id(p) => p.to_string(),
                PadId::Unset => "null".into(),
                PadId::Absent => "none (fact)".into(),
                PadId::Unknown => "unknown".into(),
            }
        ));
        if let Some(f) = fill_id {
            measured.push_str(&format!("; {pad_n} pad positions hold id {f}"));
        }
        // Against the labels: pad positions scored, and (pad == EOS) the real EOS ending each
        // row masked along with the pads.
        let pad_is_eos =
            fill_id.is_some_and(|f| eos.contains(&f)) || pad.id().is_some_and(|p| eos.contains(&p));
        let (mut pad_scored, mut eos_rows, mut eos_masked) = (0usize, 0usize, 0usize);
        if let Some(lab) = &labels {
            let l = ids.row_len().max(1);
            for (r, row) in ids.rows().enumerate() {
                let lrow = &lab.v[r * l..r * l + row.len()];
                let mrow = attn.as_ref().map(|a| &a.v[r * l..r * l + row.len()]);
                let real = |i: usize| mrow.is_none_or(|m| m[i] != 0);
                if let Some(m) = mrow {
                    pad_scored += (0..row.len())
                        .filter(|&i| m[i] == 0 && lrow[i] != ign)
                        .count();
                }
                if !pad_is_eos || lrow.iter().all(|&x| x == ign) {
                    continue;
                }
                let Some(k) = (0..row.len()).rev().find(|&i| real(i)) else {
                    continue;
                };
                if eos.contains(&row[k]) {
                    eos_rows += 1;
                    // Labels already shifted left carry the EOS one position earlier.
                    let shifted = k > 0 && lrow[k - 1] == row[k];
                    if lrow[k] == ign && !shifted {
                        eos_masked += 1;
                    }
                }
            }
        }
        if labels.is_some() {
            measured.push_str(&format!("; pad labels scored: {pad_scored}"));
            if eos_rows > 0 {
                measured.push_str(&format!(
                    "; final EOS masked in {eos_masked} of {eos_rows} rows"
                ));
            }
        }
        let mut ev = vec![b.ev(&ids.name)];
        if let Some(l) = &labels {
            ev.push(b.ev(&l.name));
        }
        if let Some(c) = &cfg {
            ev.push(Evidence::file(&c.0));
        }
        let make = |st: Status, out: &str| {
            let mut v = Verdict::new("L3", st, out)
                .measured(measured.clone())
                .value("max_id", hi as f64)
                .value("min_id", lo as f64)
                .value("pad_positions", pad_n as f64)
                .value("pad_scored", pad_scored as f64);
            if let Some(vs) = vocab {
                v = v.value("vocab_size", vs as f64);
            }
            for e in &ev {
                v = v.evidence(e.clone());
            }
            v
        };
        if let Some(v) = vocab {
            let over = ids.v.iter().filter(|&&x| x >= v as i64).count();
            let neg = ids.v.iter().filter(|&&x| x < 0).count();
            if over > 0 || neg > 0 {
                let pad_note = match fill_id {
                    Some(f) if f >= v as i64 || f < 0 => {
                        format!(" — the pad positions hold id {f}: a newly added pad token")
                    }
                    _ => String::new(),
                };
                let msg = if neg > 0 && over == 0 {
                    format!("{neg} negative input id(s) (e.g. -100 copied from labels into input_ids): embedding lookup is out of range — keep -100 in labels only")
                } else {
                    format!("{over} input id(s) ≥ vocab_size {v}{pad_note}: tokens were added to the tokenizer without model.resize_token_embeddings(len(tokenizer)) — index error on CPU, device-side assert or garbage on GPU")
                };
                return Some(
                    make(Status::Fail, "out_of_range")
                        .expected(format!("0 ≤ id < {v}"))
                        .message(msg)
                        .value("out_of_range", (over + neg) as f64),
                );
            }
            if let Some(p) = pad.id().filter(|&p| p >= v as i64 || p < 0) {
                return Some(make(Status::Fail, "out_of_range").expected(format!("pad_token_id < {v}")).message(format!(
                    "pad_token_id {p} is outside the embedding table ({v} rows): call model.resize_token_embeddings(len(tokenizer)) after adding a pad token"
                )));
            }
        }
        let range_note = if vocab.is_some() {
            "ids inside the vocabulary"
        } else {
            "vocab_size unknown (no range check)"
        };
        // Sequence classification pools each row at its last non-pad token, found with
        // config.pad_token_id: transformers refuses batches > 1 without it.
        if seqcls && matches!(pad, PadId::Unset | PadId::Absent) && ids.n_rows() > 1 {
            return Some(make(Status::Fail, "unset").expected(format!("pad_token_id set in {cfg_path} (sequence classification)")).message(format!(
                "a sequence-classification model finds each row's last real token through config.pad_token_id, which is unset: transformers raises \"Cannot handle batch sizes > 1 if no padding token is defined.\" — set tokenizer.pad_token (e.g. = tokenizer.eos_token) and model.config.pad_token_id = tokenizer.pad_token_id; {range_note}"
            )));
        }
        if pad_n == 0 {
            let note = if pad == PadId::Absent {
                " (no pad token: batches whose rows differ in length cannot be padded — set tokenizer.pad_token = tokenizer.eos_token before batching)"
            } else {
                ""
            };
            return Some(
                make(Status::Pass, "pass")
                    .expected("a pad token when batches pad; ids < vocab_size")
                    .message(format!("no padding in this batch; {range_note}{note}")),
            );
        }
        let f = fill_id.unwrap_or(0);
        let what = if eos.contains(&f) {
            format!("id {f} (EOS)")
        } else if f == 0 {
            "id 0 (a real vocabulary entry: Llama-2's <unk>, GPT-2's \"!\")".to_string()
        } else {
            format!("id {f}")
        };
        if pad == PadId::Absent {
            return Some(make(Status::Fail, "unset").expected("a pad token when batches pad").message(format!(
                "the tokenizer has no pad token (fact pad_token_id=none) yet this batch is padded with {what}: a tokenizer without one raises \"Asking to pad but the tokenizer does not have a padding token\", so a custom collator filled the gaps — set tokenizer.pad_token = tokenizer.eos_token (or add a pad token and resize_token_embeddings) and model.config.pad_token_id = tokenizer.pad_token_id"
            )));
        }
        if pad_scored > 0 {
            let harm = if eos.contains(&f) {
                "the model is trained to keep emitting EOS after the end of every text, and the loss is diluted by easy pad predictions"
            } else {
                "the model is trained to predict the pad token, and the loss is diluted by pad predictions"
            };
            return Some(make(Status::Fail, "unset").expected(format!("labels = {ign} at every pad position")).message(format!(
                "{pad_scored} pad position(s), padded with {what}, keep a real label: {harm} — write {ign} into labels wherever attention_mask == 0 (see L2)"
            )));
        }
        if pad_is_eos && eos_rows > 0 && eos_masked == eos_rows {
            return Some(make(Status::Fail, "unset").expected("pad masked, but the EOS that ends each text kept in the loss").message(format!(
                "pad == EOS and the real EOS ending each row is masked to {ign} as well ({eos_masked} of {eos_rows} rows): the collator masks labels by input_ids == pad_token_id (DataCollatorForLanguageModeling does), so the model never learns to stop — mask by attention_mask instead, or pad with a dedicated token (Llama-3: <|finetune_right_pad_id|>; else add one and resize_token_embeddings)"
            )).value("eos_masked_rows", eos_masked as f64));
        }
        if seqcls && right_padded > 0 {
            if let PadId::Id(p) = pad {
                if p != f {
                    return Some(make(Status::Fail, "unset").expected(format!("pad positions hold config.pad_token_id {p} (sequence classification)")).message(format!(
                        "the batch pads with id {f} but config.pad_token_id is {p}: a sequence-classification model takes each row's last token ≠ {p}, so the {right_padded} right-padded row(s) are classified from a pad position — set model.config.pad_token_id = tokenizer.pad_token_id"
                    )));
                }
            }
        }
        let label_note = if labels.is_some() {
            format!(" and masked to {ign} in labels")
        } else {
            String::new()
        };
        match pad {
            PadId::Unknown => Some(Verdict::skip("L3", format!("the batch pads with id {f} but there is no config.json or fact pad_token_id to compare against ({range_note})")).measured(measured.clone())),
            PadId::Unset if labels.is_none() && !generating => Some(make(Status::Warn, "unset").expected(format!("pad_token_id set in {cfg_path}, pads kept out of the loss")).message(format!(
                "config.json has no pad_token_id while the batch pads with {what}, and the batch carries no token labels to confirm the pads stay out of the loss: if it trains, check labels = {ign} at pad positions; mirror the pad id with model.config.pad_token_id = tokenizer.pad_token_id (generation and sequence classification read it)"
            ))),
            PadId::Unset => Some(make(Status::Pass, "pass").expected("pads hidden by attention_mask and kept out of the loss").message(format!(
                "config.json has no pad_token_id while the batch pads with {what}: harmless here — the pads are hidden by attention_mask{label_note} (a real token such as <unk> or Llama-3's <|finetune_right_pad_id|> is a fine pad) — mirror it with model.config.pad_token_id = tokenizer.pad_token_id for generation / sequence classification; {range_note}"
            ))),
            PadId::Id(p) if p != f => Some(make(Status::Warn, "unset").expected(format!("pad positions hold pad_token_id {p}")).message(format!(
                "the collator pads with id {f}, not the configured pad_token_id {p}: the tokenizer and model config disagree — set model.config.pad_token_id = tokenizer.pad_token_id"
            ))),
            _ => {
                let eos_note = if pad_is_eos && eos_rows > 0 {
                    format!(" (EOS reused as pad; the EOS ending {} of {eos_rows} rows stays in the loss)", eos_rows - eos_masked)
                } else {
                    String::new()
                };
                Some(make(Status::Pass, "pass").expected("pad positions hold pad_token_id").message(format!("pad positions hold the configured pad id {f}{eos_note}; {range_note}")))
            }
        }
    })
}
