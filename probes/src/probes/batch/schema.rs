//! What a dumped batch must carry for its trainer: `batch_schema` (the keys a phase needs,
//! L8), `eos_target` (an EOS the model can learn to stop on, G1) and `image_presence`
//! (images fed to a VLM actually reach the language model, X5).

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;

pub(super) const BATCH_SCHEMA: ProbeSpec = ProbeSpec {
    id: "batch_schema",
    entries: &["L8"],
    inputs: &["batch:keys", "fact:phase"],
    params: &[],
    outcomes: &["pass", "wrong_schema", "skip"],
    run: batch_schema,
};

/// The schema a batch's keys belong to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Schema {
    /// chosen / rejected pairs (DPO, IPO, ORPO, reward models).
    Preference,
    /// Prompts and sampled completions with advantages (GRPO / PPO rollouts).
    Rollout,
    /// Token ids with labels or a completion mask (SFT, pre-training).
    LanguageModeling,
}

impl Schema {
    fn name(self) -> &'static str {
        match self {
            Schema::Preference => "a preference schema (chosen / rejected)",
            Schema::Rollout => "an RL rollout schema (prompt / completion / advantages)",
            Schema::LanguageModeling => "a language-modelling schema (input_ids + labels)",
        }
    }
}

fn schema_of(keys: &[String]) -> Option<Schema> {
    let has = |w: &str| keys.iter().any(|k| k.contains(w));
    if has("chosen") && has("rejected") {
        Some(Schema::Preference)
    } else if has("completion_ids") || has("advantages") || (has("query") && has("response")) {
        Some(Schema::Rollout)
    } else if keys.iter().any(|k| INPUT_IDS.contains(&k.as_str()))
        && keys.iter().any(|k| {
            LABELS.contains(&k.as_str()) || k == "completion_mask" || k == "assistant_masks"
        })
    {
        Some(Schema::LanguageModeling)
    } else {
        None
    }
}

/// The schema a phase's trainer reads.
fn wanted(phase: &str) -> Option<Schema> {
    match phase {
        "dpo" | "ipo" | "orpo" | "simpo" | "cpo" | "reward" | "rm" => Some(Schema::Preference),
        "grpo" | "ppo" | "rloo" | "rlhf" => Some(Schema::Rollout),
        "sft" | "pretrain" | "pretraining" | "clm" | "lm" | "instruct" | "finetune" => {
            Some(Schema::LanguageModeling)
        }
        _ => None,
    }
}

pub fn batch_schema(ctx: &ProbeCtx) -> Vec<Verdict> {
    let Some(phase) = phase(ctx) else {
        return vec![Verdict::skip(
            "L8",
            "needs fact phase (sft | dpo | grpo | ppo | reward) to know which schema the trainer reads",
        )];
    };
    let Some(want) = wanted(&phase) else {
        return vec![Verdict::skip(
            "L8",
            format!("phase {phase:?} has no fixed batch schema to check"),
        )];
    };
    over_batches(ctx, "L8", "no batch dump to read keys from", |b| {
        let keys: Vec<String> = b
            .file
            .tensors()
            .iter()
            .map(|t| t.name.rsplit('.').next().unwrap_or(&t.name).to_string())
            .collect();
        let shown = keys.iter().take(12).cloned().collect::<Vec<_>>().join(", ");
        let got = schema_of(&keys);
        let v = Verdict::new("L8", Status::Pass, "pass")
            .measured(format!("keys: {shown}"))
            .expected(format!("{} for phase {phase}", want.name()))
            .evidence(crate::probe::Evidence::file(&b.path));
        Some(match got {
            Some(g) if g == want => Verdict {
                message: format!("the batch carries {}", g.name()),
                ..v
            },
            Some(g) => Verdict {
                status: Status::Fail,
                outcome: "wrong_schema".into(),
                message: format!(
                    "phase {phase} reads {}, but this batch carries {}: the dataset was built for another trainer — map the columns to the trainer's schema (TRL: prompt/chosen/rejected for DPO, messages or prompt/completion for SFT, prompt for GRPO) before training",
                    want.name(),
                    g.name()
                ),
                ..v
            },
            None => Verdict {
                status: Status::Skip,
                outcome: "skip".into(),
                message: "the batch's keys match no known trainer schema".into(),
                ..v
            },
        })
    })
}

pub(super) const EOS_TARGET: ProbeSpec = ProbeSpec {
    id: "eos_target",
    entries: &["G1"],
    inputs: &[
        "batch:input_ids",
        "batch:labels",
        "batch:decoder_attention_mask",
        "config:eos_token_id",
        "config:is_encoder_decoder",
        "fact:phase",
    ],
    params: &["min_rows"],
    outcomes: &["pass", "no_eos", "skip"],
    run: eos_target,
};

pub fn eos_target(ctx: &ProbeCtx) -> Vec<Verdict> {
    let min_rows = p!(ctx, "G1", "min_rows") as usize;
    let cfg = model_config(ctx);
    let eos = eos_ids(ctx, cfg.as_ref().map(|c| &c.1));
    if eos.is_empty() {
        return vec![Verdict::skip(
            "G1",
            "needs the EOS id (config.json eos_token_id or fact eos_token_id)",
        )];
    }
    let ph = phase(ctx);
    if ph
        .as_deref()
        .is_some_and(|p| wanted(p) != Some(Schema::LanguageModeling))
    {
        return vec![Verdict::skip(
            "G1",
            "not a supervised fine-tune (phase): the EOS target is checked on SFT batches",
        )];
    }
    let ign = ignore_index(ctx);
    let c = cfg.as_ref().map(|c| &c.1);
    over_batches(ctx, "G1", "no batch carries input_ids and labels", |b| {
        // An encoder–decoder's labels are the decoder's targets: every one ends in EOS.
        if is_encoder_decoder(ctx, c, b) {
            return seq2seq_eos(ctx, b, c, &eos, min_rows);
        }
        let ids = match b.ints(INPUT_IDS)? {
            Ok(i) => i,
            Err(e) => return Some(Verdict::skip("G1", e)),
        };
        let lab = match b.find(LABELS).filter(|l| l.shape == ids.shape) {
            Some(t) => match b.read_ints(t) {
                Ok(l) => l,
                Err(e) => return Some(Verdict::skip("G1", e)),
            },
            None => return None,
        };
        let l = ids.row_len().max(1);
        // Rows of a supervised fine-tune (phase sft, or the prompt at the row's start masked):
        // some target scored, the row ending before its full length (not cut by max_length).
        let sft = ph.as_deref() == Some("sft");
        let (mut rows, mut with_eos) = (0usize, 0usize);
        for r in 0..ids.n_rows() {
            let lrow = &lab.v[r * l..(r + 1) * l];
            let Some(last) = lrow.iter().rposition(|&x| x != ign) else {
                continue;
            };
            let prompt_masked = lrow[0] == ign;
            if !(prompt_masked || sft) || last + 1 >= l {
                continue;
            }
            rows += 1;
            if lrow.iter().any(|x| eos.contains(x)) {
                with_eos += 1;
            }
        }
        if rows == 0 {
            return None;
        }
        let v = Verdict::new("G1", Status::Pass, "pass")
            .measured(format!(
                "{with_eos} of {rows} prompt-masked, padded rows score an EOS ({})",
                eos.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            ))
            .expected("every completion's target ends in EOS")
            .evidence(b.ev(&lab.name))
            .value("rows", rows as f64)
            .value("rows_with_eos", with_eos as f64);
        Some(eos_verdict(
            v,
            with_eos,
            rows,
            min_rows,
            "no completion in this batch keeps an EOS in its labels: the model is never taught to stop, so it generates until max_new_tokens — append tokenizer.eos_token to each completion (or let the chat template add it) and mask pads by attention_mask, not by pad_token_id == eos_token_id (which also masks the real EOS, see L3)".into(),
            "SFT rows",
            "completions keep their EOS in the loss",
        ))
    })
}

/// G1 on an encoder–decoder batch: each decoder target row (labels of their own length) ends,
/// at its last position that is neither the ignore index nor padding, in EOS. Rows filling the
/// whole label length without one may have been cut by max_target_length: not judged.
fn seq2seq_eos(
    ctx: &ProbeCtx,
    b: &Batch,
    cfg: Option<&crate::config::ModelConfig>,
    eos: &[i64],
    min_rows: usize,
) -> Option<Verdict> {
    let (labels, dmask) = match decoder_labels(b)? {
        Ok(x) => x,
        Err(e) => return Some(Verdict::skip("G1", e)),
    };
    let ign = ignore_index(ctx);
    let pad = decoder_pad_id(ctx, cfg, eos);
    let l = labels.row_len().max(1);
    let (mut rows, mut with_eos, mut cut) = (0usize, 0usize, 0usize);
    for (r, row) in labels.rows().enumerate() {
        let m = dmask.as_ref().map(|m| &m.v[r * l..r * l + row.len()]);
        let Some(last) = target_row(row, m, pad, eos, ign).last else {
            continue;
        };
        let ends = eos.contains(&row[last]);
        if !ends && last + 1 >= row.len() {
            cut += 1;
            continue;
        }
        rows += 1;
        with_eos += ends as usize;
    }
    if rows == 0 {
        return None;
    }
    let ids = eos
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("/");
    let v = Verdict::new("G1", Status::Pass, "pass")
        .measured(format!(
            "encoder–decoder: {with_eos} of {rows} decoder target rows {:?} end in EOS ({ids}){}",
            labels.shape,
            if cut > 0 {
                format!("; {cut} rows fill the label length without one (cut by max_target_length?), not judged")
            } else {
                String::new()
            }
        ))
        .expected("every decoder target ends in EOS")
        .evidence(b.ev(&labels.name))
        .value("rows", rows as f64)
        .value("rows_with_eos", with_eos as f64);
    Some(eos_verdict(
        v,
        with_eos,
        rows,
        min_rows,
        format!("no decoder target in this batch ends in EOS ({ids}): the decoder is never taught to stop, so generation runs to max_length — tokenise the targets with their special tokens (text_target=…, add_special_tokens=True; T5/BART tokenizers append </s>) and keep the EOS unmasked"),
        "target rows",
        "decoder targets end in EOS",
    ))
}

/// G1's verdict from the rows that keep their EOS: none of at least `min_rows` fails with
/// `fail_msg`, too few rows skip, any row with an EOS passes.
fn eos_verdict(
    v: Verdict,
    with_eos: usize,
    rows: usize,
    min_rows: usize,
    fail_msg: String,
    what_rows: &str,
    pass_msg: &str,
) -> Verdict {
    if with_eos == 0 && rows >= min_rows {
        Verdict {
            status: Status::Fail,
            outcome: "no_eos".into(),
            message: fail_msg,
            ..v
        }
    } else if with_eos == 0 {
        Verdict {
            status: Status::Skip,
            outcome: "skip".into(),
            message: format!("fewer than {min_rows} {what_rows} to judge"),
            ..v
        }
    } else {
        Verdict {
            message: pass_msg.into(),
            ..v
        }
    }
}

pub(super) const IMAGE_PRESENCE: ProbeSpec = ProbeSpec {
    id: "image_presence",
    entries: &["X5"],
    inputs: &[
        "batch:input_ids",
        "batch:pixel_values",
        "config:image_token_id",
    ],
    params: &[],
    outcomes: &["pass", "text_only", "skip"],
    run: image_presence,
};

pub fn image_presence(ctx: &ProbeCtx) -> Vec<Verdict> {
    let cfg = model_config(ctx).map(|c| c.1);
    let Some(img_id) = image_token_id(ctx, cfg.as_ref()) else {
        return vec![Verdict::skip(
            "X5",
            "needs image_token_id (config.json or fact)",
        )];
    };
    over_batches(
        ctx,
        "X5",
        "no batch carries both input_ids and pixel_values",
        |b| {
            let ids = match b.ints(INPUT_IDS)? {
                Ok(i) => i,
                Err(e) => return Some(Verdict::skip("X5", e)),
            };
            let pixels = b.find(PIXELS)?;
            let images = pixels.shape.first().copied().unwrap_or(0);
            let tokens = ids.v.iter().filter(|&&x| x == img_id).count();
            let v = Verdict::new("X5", Status::Pass, "pass")
            .measured(format!(
                "`{}` holds {images} image(s) {:?}; input_ids hold {tokens} image-token ({img_id}) placeholder(s)",
                pixels.name, pixels.shape
            ))
            .expected("image placeholders in the text wherever images are fed")
            .evidence(b.ev(&ids.name))
            .evidence(b.ev(&pixels.name))
            .value("image_tokens", tokens as f64);
            Some(if images > 0 && tokens == 0 {
                Verdict {
                status: Status::Fail,
                outcome: "text_only".into(),
                message: format!("the batch feeds {images} image(s) but no row carries the image token {img_id}: the processor was bypassed (text tokenised alone, or a chat template without the image entry), so the vision features have nowhere to go and the LLM trains on text alone — build inputs with processor(text=…, images=…) / apply_chat_template with {{\"type\": \"image\"}} entries"),
                ..v
            }
            } else {
                Verdict {
                    message: "images in the batch reach the text as placeholders".into(),
                    ..v
                }
            })
        },
    )
}
