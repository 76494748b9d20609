//! Reading batch dumps (one tensor at a time) and the run facts batch probes share: pad,
//! EOS and BOS ids, the phase, the vocabulary and class labels.

use std::path::PathBuf;

use crate::config::ModelConfig;
use crate::probe::{Evidence, ProbeCtx, Verdict};
use crate::tensors::stats::decode_f64;
use crate::tensors::{TensorFile, TensorInfo};

/// Largest integer tensor read whole (elements).
pub(crate) const MAX_INTS: usize = 1 << 24;
/// Elements decoded at a time in the float passes.
pub(crate) const BLOCK: usize = 4096;

pub(crate) const INPUT_IDS: &[&str] = &["input_ids", "token_ids", "tokens"];
pub(crate) const ATTN: &[&str] = &["attention_mask"];
/// Where a batch shows its padding: the plain mask, else a DPO prompt / chosen mask.
pub(crate) const PAD_MASKS: &[&str] = &[
    "attention_mask",
    "prompt_attention_mask",
    "chosen_attention_mask",
];
pub(crate) const LABELS: &[&str] = &["labels", "label", "targets", "target"];
pub(crate) const POSITIONS: &[&str] = &["position_ids"];
pub(crate) const PIXELS: &[&str] = &["pixel_values", "images", "image", "pixels"];
pub(crate) const LATENTS: &[&str] = &["latents", "latent", "model_input", "latent_samples"];

// ---------------------------------------------------------------------------------------
// Reading batches

/// One opened batch dump.
pub(crate) struct Batch {
    pub(crate) path: PathBuf,
    pub(crate) file: TensorFile,
}

/// An integer tensor read whole.
pub(crate) struct Ints {
    pub(crate) name: String,
    pub(crate) shape: Vec<usize>,
    pub(crate) v: Vec<i64>,
}

impl Ints {
    /// Length of the last dimension (1 for a scalar).
    pub(crate) fn row_len(&self) -> usize {
        self.shape.last().copied().unwrap_or(1)
    }
    /// Rows along the last dimension (a 1-D tensor is one row).
    pub(crate) fn rows(&self) -> std::slice::Chunks<'_, i64> {
        self.v.chunks(self.row_len().max(1))
    }
    pub(crate) fn n_rows(&self) -> usize {
        self.v.len().checked_div(self.row_len()).unwrap_or(0)
    }
}

impl Batch {
    /// A tensor named `key` (or ending in `.key`), trying keys in order.
    pub(crate) fn find(&self, keys: &[&str]) -> Option<&TensorInfo> {
        for k in keys {
            if let Some(t) = self.file.get(k) {
                return Some(t);
            }
        }
        for k in keys {
            let suffix = format!(".{k}");
            if let Some(t) = self
                .file
                .tensors()
                .iter()
                .find(|t| t.name.ends_with(&suffix))
            {
                return Some(t);
            }
        }
        None
    }

    /// The integer tensor under one of `keys`: None when absent, Err (a reason) when it is
    /// empty, not integer, or too large.
    pub(crate) fn ints(&self, keys: &[&str]) -> Option<Result<Ints, String>> {
        let t = self.find(keys)?;
        Some(self.read_ints(t))
    }

    pub(crate) fn read_ints(&self, t: &TensorInfo) -> Result<Ints, String> {
        if t.checked_numel() == Some(0) {
            return Err(format!(
                "tensor `{}` is empty (shape {:?})",
                t.name, t.shape
            ));
        }
        if t.dtype.is_float() {
            return Err(format!(
                "tensor `{}` is {} (float), not integer ids/labels",
                t.name, t.dtype
            ));
        }
        match self.file.to_i64_vec(&t.name, MAX_INTS) {
            Ok(v) => Ok(Ints {
                name: t.name.clone(),
                shape: t.shape.clone(),
                v,
            }),
            Err(e) => Err(e.to_string()),
        }
    }

    pub(crate) fn ev(&self, tensor: &str) -> Evidence {
        Evidence::file(&self.path).tensor(tensor)
    }

    /// Calls `f(index, value)` for every element of a tensor (any dtype), decoded in blocks.
    pub(crate) fn for_each_f64(
        &self,
        t: &TensorInfo,
        mut f: impl FnMut(usize, f64),
    ) -> Result<(), String> {
        let dt = t.dtype;
        self.file
            .with_bytes(&t.name, |raw| {
                let es = dt.size();
                let n = raw.len() / es;
                let mut buf = vec![0f64; BLOCK];
                let mut done = 0;
                while done < n {
                    let want = (n - done).min(BLOCK);
                    let k = decode_f64(&raw[done * es..(done + want) * es], dt, &mut buf[..want]);
                    if k == 0 {
                        break;
                    }
                    for (j, &x) in buf[..k].iter().enumerate() {
                        f(done + j, x);
                    }
                    done += k;
                }
            })
            .map_err(|e| e.to_string())
    }

    /// The first `n` elements as f64.
    pub(crate) fn f64_prefix(&self, t: &TensorInfo, n: usize) -> Result<Vec<f64>, String> {
        let dt = t.dtype;
        self.file
            .with_bytes(&t.name, |raw| {
                let es = dt.size();
                let n = n.min(raw.len() / es);
                let mut out = vec![0f64; n];
                let mut done = 0;
                while done < n {
                    let k = decode_f64(&raw[done * es..n * es], dt, &mut out[done..]);
                    if k == 0 {
                        break;
                    }
                    done += k;
                }
                out
            })
            .map_err(|e| e.to_string())
    }
}

/// Opens every batch dump of the run; unreadable ones become `<file>: <why>` lines.
pub(crate) fn open_batches(ctx: &ProbeCtx) -> (Vec<Batch>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for a in ctx.run.batches() {
        match TensorFile::open(&a.path) {
            Ok(file) => out.push(Batch {
                path: a.path.clone(),
                file,
            }),
            Err(e) => problems.push(e.to_string()),
        }
    }
    (out, problems)
}

/// Runs `f` on every batch; returns the worst verdict (fail > warn > pass > skip), or a skip
/// saying what was missing (`need`) and which files could not be read.
pub(crate) fn over_batches(
    ctx: &ProbeCtx,
    entry: &str,
    need: &str,
    mut f: impl FnMut(&Batch) -> Option<Verdict>,
) -> Vec<Verdict> {
    let (batches, problems) = open_batches(ctx);
    let unreadable = if problems.is_empty() {
        String::new()
    } else {
        format!(" (unreadable: {})", problems.join("; "))
    };
    if batches.is_empty() {
        return vec![Verdict::skip(
            entry,
            format!("no batch dump in the run — save one collated batch as batch.safetensors (input_ids, attention_mask, labels / pixel_values …){unreadable}"),
        )];
    }
    let mut verdicts: Vec<Verdict> = batches.iter().filter_map(&mut f).collect();
    if verdicts.is_empty() {
        return vec![Verdict::skip(entry, format!("{need}{unreadable}"))];
    }
    let n = verdicts.len();
    let best = (0..n).min_by_key(|&i| (verdicts[i].status, i)).unwrap_or(0);
    let mut v = verdicts.swap_remove(best);
    if n > 1 {
        let bad = verdicts.iter().filter(|x| x.status == v.status).count() + 1;
        v.message
            .push_str(&format!(" (worst of {n} batch files: {bad} {})", v.status));
    }
    if !problems.is_empty() {
        v.message.push_str(&unreadable);
    }
    vec![v]
}

pub(crate) fn model_config(ctx: &ProbeCtx) -> Option<(PathBuf, ModelConfig)> {
    ctx.run.model_config()
}

pub(crate) fn phase(ctx: &ProbeCtx) -> Option<String> {
    ctx.facts
        .get("phase")
        .map(|p| p.trim().to_ascii_lowercase())
        .filter(|p| !p.is_empty())
}

/// The padding side a phase trains / scores with.
pub(crate) fn wanted_side(phase: &str) -> Option<&'static str> {
    match phase {
        "sft" | "pretrain" | "pretraining" | "pre-train" | "train" | "training" | "finetune"
        | "fine-tune" | "fine_tune" | "clm" | "lm" | "instruct" => Some("right"),
        "dpo" | "orpo" | "ipo" | "kto" | "simpo" | "generation" | "generate" | "inference"
        | "decode" | "decoding" | "sampling" | "ppo" | "grpo" | "rlhf" | "rl" => Some("left"),
        _ => None,
    }
}

pub(crate) fn ignore_index(ctx: &ProbeCtx) -> i64 {
    ctx.facts
        .f64("ignore_index")
        .map(|v| v as i64)
        .unwrap_or(-100)
}

/// vocab_size from facts, else config.json.
pub(crate) fn vocab_size(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Option<u64> {
    ctx.facts
        .u64("vocab_size")
        .or_else(|| cfg.and_then(|c| c.vocab_size))
        .filter(|v| *v > 0)
}

/// num_classes from facts, else config.json's num_labels.
pub(crate) fn num_classes(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Option<u64> {
    ctx.facts
        .u64("num_classes")
        .or_else(|| cfg.and_then(|c| c.num_labels))
        .filter(|v| *v > 0)
}

/// EOS ids: the fact (comma list allowed) together with config.json's list (a chat model's
/// config lists several — Llama-3's `<|eot_id|>` beside `<|end_of_text|>` —, while the fact
/// read from the config keeps only the first).
pub(crate) fn eos_ids(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Vec<i64> {
    let mut out: Vec<i64> = ctx
        .facts
        .list("eos_token_id")
        .iter()
        .filter_map(|s| s.parse::<f64>().ok())
        .map(|v| v as i64)
        .collect();
    for &v in cfg.map(|c| c.eos_token_ids.as_slice()).unwrap_or_default() {
        if !out.contains(&(v as i64)) {
            out.push(v as i64);
        }
    }
    out
}

/// The image placeholder's token id: the fact, else config.json's `image_token_id`.
pub(crate) fn image_token_id(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Option<i64> {
    ctx.facts
        .f64("image_token_id")
        .map(|v| v as i64)
        .or_else(|| cfg.and_then(|c| c.image_token_id).map(|v| v as i64))
}

pub(crate) fn bos_id(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Option<i64> {
    ctx.facts
        .f64("bos_token_id")
        .map(|v| v as i64)
        .or_else(|| cfg.and_then(|c| c.bos_token_id).map(|v| v as i64))
}

/// What is known of the pad id: the fact, else config.json's (null there = unset).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum PadId {
    /// A pad id from the fact or the config.
    Id(i64),
    /// The config says `pad_token_id: null` (or has none), and no fact gives one.
    Unset,
    /// The user says the tokenizer has no pad token (`--fact pad_token_id=none`).
    Absent,
    /// Neither a config.json nor a fact to read it from.
    Unknown,
}

impl PadId {
    pub(crate) fn of(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> PadId {
        if let Some(v) = ctx.facts.f64("pad_token_id") {
            return PadId::Id(v as i64);
        }
        if let Some(s) = ctx.facts.get("pad_token_id") {
            if matches!(
                s.trim().to_ascii_lowercase().as_str(),
                "none" | "null" | "unset" | "no" | "false"
            ) {
                return PadId::Absent;
            }
        }
        match cfg {
            Some(c) => c.pad_token_id.map_or(PadId::Unset, |v| PadId::Id(v as i64)),
            None => PadId::Unknown,
        }
    }
    pub(crate) fn id(self) -> Option<i64> {
        match self {
            PadId::Id(v) => Some(v),
            _ => None,
        }
    }
}

pub(crate) fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// Whether the batch's `labels` are class labels (per sample or per pixel), not token labels.
pub(crate) fn class_labels<'a>(ctx: &ProbeCtx, b: &'a Batch) -> Option<&'a TensorInfo> {
    let l = b.find(LABELS)?;
    match b.find(INPUT_IDS) {
        Some(ids) => {
            if l.shape == ids.shape {
                return None;
            }
            // Sequence classification: labels (N,) beside input_ids (N, L).
            let cfg = model_config(ctx);
            let seqcls =
                l.shape.len() == 1 && ids.shape.len() == 2 && l.shape.first() == ids.shape.first();
            (seqcls && num_classes(ctx, cfg.as_ref().map(|c| &c.1)).is_some()).then_some(l)
        }
        None => Some(l),
    }
}

/// Segmentation labels: per pixel (more than one dimension per sample, matching the image).
pub(crate) fn is_segmentation(b: &Batch, l: &TensorInfo) -> bool {
    if l.shape.len() >= 3 {
        return true;
    }
    if l.shape.len() == 2 {
        if let Some(px) = b.find(PIXELS) {
            // (N, H, W) labels vs (N, C, H, W) pixels — a 2-D label is (H, W) of one image.
            return px.shape.len() == 3 && px.shape[1..] == l.shape[..];
        }
    }
    false
}

// ---------------------------------------------------------------------------------------
// Encoder–decoder batches: labels on the decoder side, judged on their own

pub(crate) const DECODER_IDS: &[&str] = &["decoder_input_ids"];
pub(crate) const DECODER_ATTN: &[&str] = &["decoder_attention_mask"];

/// Model types whose `*ForConditionalGeneration` is an encoder–decoder (for a config.json that
/// does not say `is_encoder_decoder`).
const SEQ2SEQ_TYPES: &[&str] = &[
    "t5",
    "mt5",
    "umt5",
    "longt5",
    "switch_transformers",
    "bart",
    "mbart",
    "plbart",
    "pegasus",
    "pegasus_x",
    "bigbird_pegasus",
    "marian",
    "led",
    "blenderbot",
    "blenderbot-small",
    "prophetnet",
    "xlm-prophetnet",
    "fsmt",
    "m2m_100",
    "nllb-moe",
    "whisper",
    "speech_to_text",
    "encoder-decoder",
];

/// Whether the model is an encoder–decoder, so `labels` are the decoder's targets (their own
/// length, not input_ids'): the fact `is_encoder_decoder`, config.json's `is_encoder_decoder`,
/// a seq2seq model type's `*ForConditionalGeneration`, or a batch carrying decoder inputs.
pub(crate) fn is_encoder_decoder(ctx: &ProbeCtx, cfg: Option<&ModelConfig>, b: &Batch) -> bool {
    if let Some(v) = ctx.facts.bool("is_encoder_decoder") {
        return v;
    }
    if let Some(c) = cfg {
        if let Some(v) = c
            .raw
            .get("is_encoder_decoder")
            .and_then(serde_json::Value::as_bool)
        {
            if v {
                return true;
            }
        } else if c
            .model_type
            .as_deref()
            .is_some_and(|t| SEQ2SEQ_TYPES.contains(&t.to_ascii_lowercase().as_str()))
            && (c.architectures.is_empty()
                || c.architectures
                    .iter()
                    .any(|a| a.ends_with("ForConditionalGeneration")))
        {
            return true;
        }
    }
    b.find(DECODER_IDS).is_some() || b.find(DECODER_ATTN).is_some()
}

/// The id the decoder pads its targets with: the pad id (fact or config), else config.json's
/// `decoder_start_token_id` unless that is an EOS id (BART starts the decoder with EOS).
pub(crate) fn decoder_pad_id(
    ctx: &ProbeCtx,
    cfg: Option<&ModelConfig>,
    eos: &[i64],
) -> Option<i64> {
    PadId::of(ctx, cfg).id().or_else(|| {
        cfg.and_then(|c| c.raw.get("decoder_start_token_id"))
            .and_then(serde_json::Value::as_i64)
            .filter(|d| !eos.contains(d))
    })
}

/// One row of decoder labels, read apart from the encoder's input_ids.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct TargetRow {
    /// Index of the last real target (not the ignore index, not padding), if any.
    pub(crate) last: Option<usize>,
    /// Positions holding padding that keep a label other than the ignore index.
    pub(crate) pad_scored: usize,
    /// Positions that are padding (decoder_attention_mask == 0, or the pad id's trailing run).
    pub(crate) pad: usize,
    /// Every label is the ignore index.
    pub(crate) all_masked: bool,
}

/// Reads one row of decoder labels: padding is where `dmask` is 0, else the pad id — all of
/// it when the pad id is not an EOS id (T5 pads with 0, BART with 1), only past the first of
/// the trailing run when it is (pad = EOS: the first one is the real EOS).
pub(crate) fn target_row(
    labels: &[i64],
    dmask: Option<&[i64]>,
    pad: Option<i64>,
    eos: &[i64],
    ign: i64,
) -> TargetRow {
    let n = labels.len();
    let pad_is_eos = pad.is_some_and(|p| eos.contains(&p));
    let mut is_pad = vec![false; n];
    match (dmask, pad) {
        (Some(m), _) => {
            for (i, &x) in m.iter().enumerate().take(n) {
                is_pad[i] = x == 0;
            }
        }
        (None, Some(p)) if !pad_is_eos => {
            for (i, &x) in labels.iter().enumerate() {
                is_pad[i] = x == p;
            }
        }
        (None, Some(p)) => {
            // The trailing run of the pad (= EOS) id, -100s in it included; its first EOS is real.
            let end = labels.iter().rposition(|&x| x != p && x != ign);
            let start = end.map_or(0, |e| e + 1);
            if let Some(first) = (start..n).find(|&i| labels[i] == p) {
                for (i, flag) in is_pad.iter_mut().enumerate().skip(first + 1) {
                    *flag = labels[i] == p;
                }
            }
        }
        _ => {}
    }
    TargetRow {
        last: (0..n).rev().find(|&i| labels[i] != ign && !is_pad[i]),
        pad_scored: (0..n).filter(|&i| is_pad[i] && labels[i] != ign).count(),
        pad: is_pad.iter().filter(|&&p| p).count(),
        all_masked: n > 0 && labels.iter().all(|&x| x == ign),
    }
}

/// The decoder labels of an encoder–decoder batch (and its decoder_attention_mask when shaped
/// like them): None when the batch has no labels or they are not token rows.
pub(crate) fn decoder_labels(b: &Batch) -> Option<Result<(Ints, Option<Ints>), String>> {
    let lt = b.find(LABELS)?;
    if lt.shape.len() < 2 {
        return None;
    }
    let labels = match b.read_ints(lt) {
        Ok(l) => l,
        Err(e) => return Some(Err(e)),
    };
    let dmask = b
        .ints(DECODER_ATTN)
        .and_then(Result::ok)
        .filter(|m| m.shape == labels.shape);
    Some(Ok((labels, dmask)))
}
