//! `label_mask` (L2, L7, O15): pad and prompt positions masked with the ignore index.

use crate::config::ModelConfig;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;

pub(super) const LABEL_MASK: ProbeSpec = ProbeSpec {
    id: "label_mask",
    entries: &["L2", "L7", "O15"],
    inputs: &[
        "batch:labels",
        "batch:attention_mask",
        "batch:input_ids",
        "batch:decoder_attention_mask",
        "config:is_encoder_decoder",
        "config:pad_token_id",
        "fact:phase",
    ],
    params: &["min_masked_sft", "max_masked_rows_frac"],
    outcomes: &["pass", "pad_scored", "prompt_scored", "all_masked", "skip"],
    run: label_mask,
};

// ---------------------------------------------------------------------------------------
// L2, L7, O15: label masking

pub fn label_mask(ctx: &ProbeCtx) -> Vec<Verdict> {
    let min_masked = p!(ctx, "L2", "min_masked_sft");
    let max_dead_rows = p!(ctx, "L2", "max_masked_rows_frac");
    let cfg = model_config(ctx).map(|c| c.1);
    let ign = ignore_index(ctx);
    let ph = phase(ctx);
    over_batches(
        ctx,
        "L2",
        "no batch carries token labels (labels shaped like input_ids)",
        |b| {
            let lt = b.find(LABELS)?;
            // An encoder–decoder's labels are the decoder's targets: judged on their own.
            if is_encoder_decoder(ctx, cfg.as_ref(), b) {
                return seq2seq_mask(ctx, b, cfg.as_ref(), ph.as_deref(), max_dead_rows);
            }
            let ids_t = b.find(INPUT_IDS);
            let attn_t = b.find(ATTN);
            // Token labels only: shaped like input_ids (or the attention mask).
            let shape_ref = ids_t.or(attn_t)?;
            if lt.shape != shape_ref.shape {
                return None;
            }
            let labels = match b.read_ints(lt) {
                Ok(l) => l,
                Err(e) => return Some(Verdict::skip("L2", e)),
            };
            let attn = match attn_t.map(|t| b.read_ints(t)) {
                Some(Ok(a)) => Some(a),
                Some(Err(e)) => return Some(Verdict::skip("L2", e)),
                None => None,
            };
            let ids = ids_t.and_then(|t| b.read_ints(t).ok());
            // Pad positions: attention_mask == 0, else input_ids == pad id (when pad is not EOS).
            let pad_id = ctx
                .facts
                .f64("pad_token_id")
                .map(|v| v as i64)
                .or_else(|| cfg.as_ref().and_then(|c| c.pad_token_id).map(|v| v as i64));
            let eos = eos_ids(ctx, cfg.as_ref());
            let n = labels.v.len();
            let is_pad: Vec<bool> = match (&attn, &ids, pad_id) {
                (Some(a), _, _) => a.v.iter().map(|&x| x == 0).collect(),
                (None, Some(i), Some(p)) if !eos.contains(&p) => {
                    i.v.iter().map(|&x| x == p).collect()
                }
                _ => vec![false; n],
            };
            let pad_source = if attn.is_some() {
                "attention_mask == 0"
            } else if is_pad.iter().any(|&p| p) {
                "input_ids == pad_token_id"
            } else {
                "no attention_mask"
            };
            let (mut masked, mut pad_n, mut pad_scored, mut real_n, mut real_masked) =
                (0usize, 0usize, 0usize, 0usize, 0usize);
            for (i, &l) in labels.v.iter().enumerate() {
                let m = l == ign;
                masked += m as usize;
                if is_pad.get(i).copied().unwrap_or(false) {
                    pad_n += 1;
                    pad_scored += (!m) as usize;
                } else {
                    real_n += 1;
                    real_masked += m as usize;
                }
            }
            // Rows with real tokens whose every label is masked (an all-pad row is not one).
            let l = labels.row_len().max(1);
            let rows_content = labels
                .rows()
                .enumerate()
                .filter(|(r, row)| {
                    (0..row.len()).any(|i| !is_pad.get(r * l + i).copied().unwrap_or(false))
                })
                .count();
            let rows_dead = labels
                .rows()
                .enumerate()
                .filter(|(r, row)| {
                    !row.is_empty()
                        && row.iter().all(|&x| x == ign)
                        && (0..row.len()).any(|i| !is_pad.get(r * l + i).copied().unwrap_or(false))
                })
                .count();
            let dead_frac = rows_dead as f64 / rows_content.max(1) as f64;
            let masked_frac = masked as f64 / n.max(1) as f64;
            let real_masked_frac = real_masked as f64 / real_n.max(1) as f64;
            let measured = format!(
            "{} of labels = {ign}; pad positions ({pad_source}): {pad_n}, scored {pad_scored}; real positions masked: {}{}",
            pct(masked_frac),
            pct(real_masked_frac),
            if rows_dead > 0 { format!("; {rows_dead} of {rows_content} rows with content fully masked ({})", pct(dead_frac)) } else { String::new() }
        );
            let mut evs = vec![b.ev(&labels.name)];
            if let Some(a) = &attn {
                evs.push(b.ev(&a.name));
            }
            let make = |entry: &str, st: Status, out: &str| {
                let mut v = Verdict::new(entry, st, out)
                    .measured(measured.clone())
                    .value("masked_frac", masked_frac)
                    .value("pad_positions", pad_n as f64)
                    .value("pad_scored", pad_scored as f64)
                    .value("real_masked_frac", real_masked_frac)
                    .value("rows_fully_masked", rows_dead as f64)
                    .value("rows_fully_masked_frac", dead_frac);
                for e in &evs {
                    v = v.evidence(e.clone());
                }
                v
            };
            if masked == n {
                return Some(make("L2", Status::Fail, "all_masked").expected(format!("some labels ≠ {ign}")).message(format!(
                "every label in the batch is {ign}: the loss is exactly 0 (or NaN) and nothing is learned — the collator masks everything (the response template is never found, or max_length cut every completion); decode one label row to check"
            )));
            }
            let sft = ph.as_deref() == Some("sft");
            let prompt_scored = sft && real_masked_frac < min_masked;
            if pad_scored > 0 {
                let entry = pad_entry(ph.as_deref());
                let also = if prompt_scored {
                    "; the prompt is not masked either (phase=sft)"
                } else {
                    ""
                };
                return Some(make(entry, Status::Fail, "pad_scored").expected(format!("labels = {ign} at every pad position")).message(format!(
                "{pad_scored} pad position(s) keep a real label: padding is scored, diluting the loss with pad predictions and teaching the model to emit pad — write {ign} into the labels wherever attention_mask == 0 (HF collators do; a hand-made labels = input_ids.clone() does not){also}"
            )));
            }
            if rows_dead > 0 && dead_frac > max_dead_rows {
                let entry = match ph.as_deref() {
                    Some("eval" | "ppl" | "perplexity" | "evaluation") => "L7",
                    _ => "L2",
                };
                return Some(make(entry, Status::Warn, "all_masked").expected(format!("at most {} of rows with every label = {ign}", pct(max_dead_rows))).message(format!(
                    "{rows_dead} of {rows_content} rows ({}) have every label = {ign}: they cost compute and teach nothing — usually a prompt longer than max_length that truncation cut before the response (raise max_length, truncate the prompt side, or drop such examples), or a response template the collator did not find in those rows; decode one of them",
                    pct(dead_frac)
                )));
            }
            if prompt_scored {
                return Some(make("L2", Status::Warn, "prompt_scored").expected(format!("phase=sft: the prompt masked with {ign} (≥ {} of real positions)", pct(min_masked))).message(
                "phase=sft but no real position is masked: labels copy input_ids, so the loss also trains on reproducing the prompt — train on the completion only (TRL completion_only_loss=True / DataCollatorForCompletionOnlyLM) and confirm by decoding one label row",
            ));
            }
            let note = if sft {
                format!(
                    "prompt and pad masked ({} of real positions masked)",
                    pct(real_masked_frac)
                )
            } else if ph.is_none() && real_masked == 0 {
                "pad positions masked; labels copy input_ids elsewhere (fine for pretraining — pass --fact phase=sft to also check prompt masking)".to_string()
            } else {
                "pad positions are masked and some labels are scored".to_string()
            };
            Some(
                make("L2", Status::Pass, "pass")
                    .expected(format!("pad labels = {ign}; not everything masked"))
                    .message(note),
            )
        },
    )
}

/// The entry a scored pad names, by phase: evaluation (L7), SFT (L2), else the loss's
/// denominator (O15).
fn pad_entry(ph: Option<&str>) -> &'static str {
    match ph {
        Some("eval" | "ppl" | "perplexity" | "evaluation") => "L7",
        Some("sft") => "L2",
        _ => "O15",
    }
}

/// L2 / O15 on an encoder–decoder batch: the decoder labels (their own length, beside
/// input_ids of another) must hold the ignore index, not the pad id, past each target's end.
fn seq2seq_mask(
    ctx: &ProbeCtx,
    b: &Batch,
    cfg: Option<&ModelConfig>,
    ph: Option<&str>,
    max_dead_rows: f64,
) -> Option<Verdict> {
    let (labels, dmask) = match decoder_labels(b)? {
        Ok(x) => x,
        Err(e) => return Some(Verdict::skip("L2", e)),
    };
    let ign = ignore_index(ctx);
    let eos = eos_ids(ctx, cfg);
    let pad = decoder_pad_id(ctx, cfg, &eos);
    let l = labels.row_len().max(1);
    let rows: Vec<TargetRow> = labels
        .rows()
        .enumerate()
        .map(|(r, row)| {
            let m = dmask.as_ref().map(|m| &m.v[r * l..r * l + row.len()]);
            target_row(row, m, pad, &eos, ign)
        })
        .collect();
    let n = labels.v.len();
    let masked = labels.v.iter().filter(|&&x| x == ign).count();
    let pad_n: usize = rows.iter().map(|r| r.pad).sum();
    let pad_scored: usize = rows.iter().map(|r| r.pad_scored).sum();
    let rows_scored = rows.iter().filter(|r| r.pad_scored > 0).count();
    let rows_dead = rows.iter().filter(|r| r.all_masked).count();
    let dead_frac = rows_dead as f64 / rows.len().max(1) as f64;
    let masked_frac = masked as f64 / n.max(1) as f64;
    let pad_source = match (&dmask, pad) {
        (Some(_), _) => "decoder_attention_mask == 0".to_string(),
        (None, Some(p)) if eos.contains(&p) => {
            format!("labels == pad id {p} (= EOS) past each row's first EOS")
        }
        (None, Some(p)) => format!("labels == pad id {p}"),
        (None, None) => "pad id unknown".to_string(),
    };
    let measured = format!(
        "encoder–decoder: decoder labels {:?} beside input_ids, judged on their own; {} of labels = {ign}; pad positions ({pad_source}): {pad_n}, scored {pad_scored} in {rows_scored} of {} rows{}",
        labels.shape,
        pct(masked_frac),
        rows.len(),
        if rows_dead > 0 { format!("; {rows_dead} rows fully masked") } else { String::new() }
    );
    let mut evs = vec![b.ev(&labels.name)];
    if let Some(m) = &dmask {
        evs.push(b.ev(&m.name));
    }
    let make = |entry: &str, st: Status, out: &str| {
        let mut v = Verdict::new(entry, st, out)
            .measured(measured.clone())
            .value("masked_frac", masked_frac)
            .value("pad_positions", pad_n as f64)
            .value("pad_scored", pad_scored as f64)
            .value("rows_fully_masked", rows_dead as f64)
            .value("rows_fully_masked_frac", dead_frac);
        for e in &evs {
            v = v.evidence(e.clone());
        }
        v
    };
    if masked == n {
        return Some(make("L2", Status::Fail, "all_masked").expected(format!("some decoder labels ≠ {ign}")).message(format!(
            "every decoder label is {ign}: the loss is 0 (or NaN) and nothing is learned — the targets were never tokenised into labels (text_target= / as_target_tokenizer), or max_target_length cut them to nothing"
        )));
    }
    if pad_scored > 0 {
        let p = pad.map(|p| p.to_string()).unwrap_or_else(|| "?".into());
        return Some(make(pad_entry(ph), Status::Fail, "pad_scored").expected(format!("decoder labels = {ign} at every pad position")).message(format!(
            "{pad_scored} decoder label position(s) in {rows_scored} row(s) hold the pad id {p} instead of {ign}: the padding of the targets is scored, diluting the loss with easy pad predictions and teaching the decoder to emit pad — pad labels with {ign} (DataCollatorForSeq2Seq(label_pad_token_id=-100), ignore_pad_token_for_loss=True, or labels[labels == tokenizer.pad_token_id] = -100)"
        )));
    }
    if rows_dead > 0 && dead_frac > max_dead_rows {
        return Some(make("L2", Status::Warn, "all_masked").expected(format!("at most {} of target rows with every label = {ign}", pct(max_dead_rows))).message(format!(
            "{rows_dead} of {} target rows ({}) have every decoder label = {ign}: those examples cost compute and teach nothing — empty targets in the data, or max_target_length cutting them away; decode one of them",
            rows.len(),
            pct(dead_frac)
        )));
    }
    let note = if pad.is_none() && dmask.is_none() {
        "decoder labels keep real targets (pad id unknown: pass --fact pad_token_id to check their padding)".to_string()
    } else if pad_n == 0 && masked == 0 {
        "decoder labels carry no padding in this batch".to_string()
    } else {
        format!("decoder labels mask their padding with {ign} ({masked} of {n} positions)")
    };
    Some(
        make("L2", Status::Pass, "pass")
            .expected(format!("decoder pad labels = {ign}; not everything masked"))
            .message(note),
    )
}
