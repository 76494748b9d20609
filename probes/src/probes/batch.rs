//! Probes over dumped batches (`batch*.safetensors|.pt`: input_ids, attention_mask, labels,
//! position_ids, pixel_values, latents …) and over configs: pad side vs phase, -100 masking,
//! pad token, packed-row position resets, class-label range and void 255, per-channel input
//! statistics, class balance, latent scale, image tokens per row, rope_scaling vs context,
//! training vs inference diffusion scheduler, and a tiny overfit-one-batch smoke on the device.
//!
//! Every batch file of the run is read; a probe answers with the worst verdict over the files
//! that carry its inputs (and says how many it looked at).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use candle_core::{DType as CDType, Tensor};

use crate::config::{ModelConfig, SchedulerConfig, VaeConfig};
use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::ArtifactKind;
use crate::tensors::stats::decode_f64;
use crate::tensors::{TensorFile, TensorInfo};

use super::util::fmt;

macro_rules! p {
    ($ctx:expr, $entry:expr, $k:expr) => {
        match $ctx.params.f64($k) {
            Ok(v) => v,
            Err(e) => return vec![Verdict::skip($entry, format!("playbook: {e}"))],
        }
    };
}

/// Largest integer tensor read whole (elements).
const MAX_INTS: usize = 1 << 24;
/// Elements decoded at a time in the float passes.
const BLOCK: usize = 4096;

const INPUT_IDS: &[&str] = &["input_ids", "token_ids", "tokens"];
const ATTN: &[&str] = &["attention_mask"];
/// Where a batch shows its padding: the plain mask, else a DPO prompt / chosen mask.
const PAD_MASKS: &[&str] = &[
    "attention_mask",
    "prompt_attention_mask",
    "chosen_attention_mask",
];
const LABELS: &[&str] = &["labels", "label", "targets", "target"];
const POSITIONS: &[&str] = &["position_ids"];
const PIXELS: &[&str] = &["pixel_values", "images", "image", "pixels"];
const LATENTS: &[&str] = &["latents", "latent", "model_input", "latent_samples"];

// ---------------------------------------------------------------------------------------
// Reading batches

/// One opened batch dump.
struct Batch {
    path: PathBuf,
    file: TensorFile,
}

/// An integer tensor read whole.
struct Ints {
    name: String,
    shape: Vec<usize>,
    v: Vec<i64>,
}

impl Ints {
    /// Length of the last dimension (1 for a scalar).
    fn row_len(&self) -> usize {
        self.shape.last().copied().unwrap_or(1)
    }
    /// Rows along the last dimension (a 1-D tensor is one row).
    fn rows(&self) -> std::slice::Chunks<'_, i64> {
        self.v.chunks(self.row_len().max(1))
    }
    fn n_rows(&self) -> usize {
        self.v.len().checked_div(self.row_len()).unwrap_or(0)
    }
}

impl Batch {
    /// A tensor named `key` (or ending in `.key`), trying keys in order.
    fn find(&self, keys: &[&str]) -> Option<&TensorInfo> {
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
    fn ints(&self, keys: &[&str]) -> Option<Result<Ints, String>> {
        let t = self.find(keys)?;
        Some(self.read_ints(t))
    }

    fn read_ints(&self, t: &TensorInfo) -> Result<Ints, String> {
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

    fn ev(&self, tensor: &str) -> Evidence {
        Evidence::file(&self.path).tensor(tensor)
    }

    /// Calls `f(index, value)` for every element of a tensor (any dtype), decoded in blocks.
    fn for_each_f64(&self, t: &TensorInfo, mut f: impl FnMut(usize, f64)) -> Result<(), String> {
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
    fn f64_prefix(&self, t: &TensorInfo, n: usize) -> Result<Vec<f64>, String> {
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
fn open_batches(ctx: &ProbeCtx) -> (Vec<Batch>, Vec<String>) {
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
fn over_batches(
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

fn model_config(ctx: &ProbeCtx) -> Option<(PathBuf, ModelConfig)> {
    ctx.run.model_config()
}

fn phase(ctx: &ProbeCtx) -> Option<String> {
    ctx.facts
        .get("phase")
        .map(|p| p.trim().to_ascii_lowercase())
        .filter(|p| !p.is_empty())
}

/// The padding side a phase trains / scores with.
fn wanted_side(phase: &str) -> Option<&'static str> {
    match phase {
        "sft" | "pretrain" | "pretraining" | "pre-train" | "train" | "training" | "finetune"
        | "fine-tune" | "fine_tune" | "clm" | "lm" | "instruct" => Some("right"),
        "dpo" | "orpo" | "ipo" | "kto" | "simpo" | "generation" | "generate" | "inference"
        | "decode" | "decoding" | "sampling" | "ppo" | "grpo" | "rlhf" | "rl" => Some("left"),
        _ => None,
    }
}

fn ignore_index(ctx: &ProbeCtx) -> i64 {
    ctx.facts
        .f64("ignore_index")
        .map(|v| v as i64)
        .unwrap_or(-100)
}

/// vocab_size from facts, else config.json.
fn vocab_size(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Option<u64> {
    ctx.facts
        .u64("vocab_size")
        .or_else(|| cfg.and_then(|c| c.vocab_size))
        .filter(|v| *v > 0)
}

/// num_classes from facts, else config.json's num_labels.
fn num_classes(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Option<u64> {
    ctx.facts
        .u64("num_classes")
        .or_else(|| cfg.and_then(|c| c.num_labels))
        .filter(|v| *v > 0)
}

/// EOS ids: the fact (comma list allowed) together with config.json's list (a chat model's
/// config lists several — Llama-3's `<|eot_id|>` beside `<|end_of_text|>` —, while the fact
/// read from the config keeps only the first).
fn eos_ids(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Vec<i64> {
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

fn bos_id(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> Option<i64> {
    ctx.facts
        .f64("bos_token_id")
        .map(|v| v as i64)
        .or_else(|| cfg.and_then(|c| c.bos_token_id).map(|v| v as i64))
}

/// What is known of the pad id: the fact, else config.json's (null there = unset).
#[derive(Clone, Copy, PartialEq, Debug)]
enum PadId {
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
    fn of(ctx: &ProbeCtx, cfg: Option<&ModelConfig>) -> PadId {
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
    fn id(self) -> Option<i64> {
        match self {
            PadId::Id(v) => Some(v),
            _ => None,
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// Whether the batch's `labels` are class labels (per sample or per pixel), not token labels.
fn class_labels<'a>(ctx: &ProbeCtx, b: &'a Batch) -> Option<&'a TensorInfo> {
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
fn is_segmentation(b: &Batch, l: &TensorInfo) -> bool {
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
// L1: pad side

/// Padding layout of an attention mask.
#[derive(Default)]
struct PadLayout {
    rows: usize,
    padded: usize,
    left: usize,
    right: usize,
    both: usize,
    middle: usize,
    empty: usize,
    pad_positions: usize,
    positions: usize,
}

impl PadLayout {
    fn of(m: &Ints) -> PadLayout {
        let mut p = PadLayout::default();
        for row in m.rows() {
            p.rows += 1;
            p.positions += row.len();
            let z = row.iter().filter(|&&x| x == 0).count();
            p.pad_positions += z;
            if z == 0 || row.is_empty() {
                continue;
            }
            p.padded += 1;
            if z == row.len() {
                p.empty += 1;
                continue;
            }
            match (row[0] == 0, row[row.len() - 1] == 0) {
                (true, false) => p.left += 1,
                (false, true) => p.right += 1,
                (true, true) => p.both += 1,
                (false, false) => p.middle += 1,
            }
        }
        p
    }

    fn side(&self) -> &'static str {
        match (self.left + self.both > 0, self.right + self.both > 0) {
            (true, false) => "left",
            (false, true) => "right",
            (true, true) => "mixed",
            (false, false) if self.middle > 0 => "inside rows",
            _ => "none",
        }
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "{} of {} rows padded ({} pad positions)",
            self.padded,
            self.rows,
            pct(self.pad_positions as f64 / self.positions.max(1) as f64)
        );
        let mut parts = Vec::new();
        for (n, what) in [
            (self.left, "left"),
            (self.right, "right"),
            (self.both, "both ends"),
            (self.middle, "zeros inside the row"),
            (self.empty, "all-pad"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if !parts.is_empty() {
            s.push_str(&format!(": {}", parts.join(", ")));
        }
        s
    }
}

/// Pads found without an attention mask: runs of the pad id at the row ends.
struct InferredPads {
    /// 1 = real, 0 = pad, shaped like input_ids.
    mask: Ints,
    /// How they were found, for the evidence.
    how: String,
    /// Found as runs of an EOS id (pad = EOS or pad unknown): a real EOS can look like a pad.
    via_eos: bool,
}

/// Pad positions of rows without an attention mask: a run of the pad id at either end of a
/// row (or, when pad == EOS or the pad id is unknown, a run of an EOS id of at least
/// `min_eos_run`, keeping the first EOS of a trailing run as the real end of the text).
fn infer_pads(ids: &Ints, pad: PadId, eos: &[i64], min_eos_run: usize) -> Option<InferredPads> {
    let (cands, via_eos): (Vec<i64>, bool) = match pad.id() {
        Some(p) if !eos.contains(&p) => (vec![p], false),
        Some(p) => (vec![p], true),
        None if !eos.is_empty() => (eos.to_vec(), true),
        None => return None,
    };
    let min_run = if via_eos { min_eos_run.max(1) } else { 1 };
    let mut v = vec![1i64; ids.v.len()];
    let l = ids.row_len().max(1);
    for (r, row) in ids.rows().enumerate() {
        let n = row.len();
        if n == 0 {
            continue;
        }
        let run_of = |it: &mut dyn Iterator<Item = &i64>, first: i64| {
            it.take_while(|&&x| x == first).count()
        };
        let (a, z) = (row[0], row[n - 1]);
        if cands.contains(&a) {
            let k = run_of(&mut row.iter(), a);
            if k == n {
                v[r * l..r * l + n].iter_mut().for_each(|x| *x = 0);
                continue;
            }
            if k >= min_run {
                v[r * l..r * l + k].iter_mut().for_each(|x| *x = 0);
            }
        }
        if cands.contains(&z) {
            let k = run_of(&mut row.iter().rev(), z);
            // With EOS as the pad, the first EOS of the run ends the text.
            let pads = if via_eos { k.saturating_sub(1) } else { k };
            if k >= min_run && pads > 0 {
                v[r * l + n - pads..r * l + n]
                    .iter_mut()
                    .for_each(|x| *x = 0);
            }
        }
    }
    let ids_txt: Vec<String> = cands.iter().map(i64::to_string).collect();
    let how = if via_eos {
        format!(
            "inferred from input_ids (no attention_mask): runs of ≥ {min_run} EOS id {} at the row ends{}",
            ids_txt.join("/"),
            if pad.id().is_some() { " (pad == EOS)" } else { " (pad id unknown)" }
        )
    } else {
        format!(
            "inferred from input_ids (no attention_mask): runs of pad id {} at the row ends",
            ids_txt.join("/")
        )
    };
    Some(InferredPads {
        mask: Ints {
            name: ids.name.clone(),
            shape: ids.shape.clone(),
            v,
        },
        how,
        via_eos,
    })
}

pub fn pad_side(ctx: &ProbeCtx) -> Vec<Verdict> {
    let min_eos_run = p!(ctx, "L1", "min_eos_run").max(1.0) as usize;
    let cfg = model_config(ctx).map(|c| c.1);
    let pad = PadId::of(ctx, cfg.as_ref());
    let eos = eos_ids(ctx, cfg.as_ref());
    over_batches(
        ctx,
        "L1",
        "no batch carries an attention_mask or input_ids (needed to see where the pads are)",
        |b| {
            let (m, inferred) = match b.ints(PAD_MASKS) {
                Some(Ok(m)) => (m, None),
                Some(Err(e)) => return Some(Verdict::skip("L1", e)),
                None => {
                    let ids = match b.ints(INPUT_IDS)? {
                        Ok(i) => i,
                        Err(e) => return Some(Verdict::skip("L1", e)),
                    };
                    match infer_pads(&ids, pad, &eos, min_eos_run) {
                        Some(inf) => (inf.mask, Some((inf.how, inf.via_eos))),
                        None => return Some(Verdict::skip("L1", "no attention_mask, and no pad or EOS id (config.json or --fact pad_token_id / eos_token_id) to find the pad runs in input_ids").evidence(b.ev(&ids.name))),
                    }
                }
            };
            let lay = PadLayout::of(&m);
            let side = lay.side();
            let mut measured = if side == "none" {
                format!("no padding ({} rows, all full length)", lay.rows)
            } else {
                format!("{side}-padded — {}", lay.describe())
            };
            if let Some((how, _)) = &inferred {
                measured.push_str(&format!(" [{how}]"));
            }
            // Pads seen only as runs of EOS may be real EOS tokens: never more than a warning.
            let via_eos = inferred.as_ref().is_some_and(|i| i.1);
            let fail_or_warn = if via_eos { Status::Warn } else { Status::Fail };
            let ev = match &inferred {
                Some((how, _)) => b.ev(&m.name).note(how.clone()),
                None => b.ev(&m.name),
            };
            let base = |st: Status, out: &str| {
                Verdict::new("L1", st, out)
                    .measured(measured.clone())
                    .evidence(ev.clone())
                    .value("rows", lay.rows as f64)
                    .value("left_rows", (lay.left + lay.both) as f64)
                    .value("right_rows", (lay.right + lay.both) as f64)
                    .value(
                        "pad_frac",
                        lay.pad_positions as f64 / lay.positions.max(1) as f64,
                    )
                    .value("pads_inferred", if inferred.is_some() { 1.0 } else { 0.0 })
            };
            if side == "none" {
                return Some(
                    base(Status::Pass, "pass")
                        .expected("right for sft/pretrain, left for generation/dpo")
                        .message("no padding in this batch: the padding side does not matter here"),
                );
            }
            let Some(ph) = phase(ctx) else {
                // A left-padded batch that carries token labels is a training batch: SFT or
                // pretraining wants right padding. Warn, asking for the phase.
                let token_labels = b.find(LABELS).is_some_and(|l| l.shape == m.shape);
                if token_labels && lay.left + lay.both > 0 {
                    return Some(
                        base(Status::Warn, "wrong_side")
                            .expected("right padding for a training batch (phase not given)")
                            .message(format!("{} of {} padded rows carry their pads at the start of a batch with labels (a training batch): SFT/pretraining collate with right padding — set tokenizer.padding_side = \"right\" (pass --fact phase=… to confirm: left is right only for generation / DPO)", lay.left + lay.both, lay.padded)),
                    );
                }
                return Some(Verdict::skip("L1", "needs fact phase (sft | pretrain | dpo | generation) to know which side is right").measured(measured).evidence(ev));
            };
            let Some(want) = wanted_side(&ph) else {
                return Some(Verdict::skip("L1", format!("phase={ph} not understood (expected sft | pretrain | dpo | generation)")).measured(measured).evidence(ev));
            };
            let wrong = if want == "right" {
                lay.left + lay.both
            } else {
                lay.right + lay.both
            };
            let expected = format!("{want} padding for phase={ph}");
            if wrong == 0 {
                let note = if lay.middle > 0 {
                    " (some rows have zeros inside: packed or custom masks)"
                } else {
                    ""
                };
                return Some(
                    base(Status::Pass, "pass")
                        .expected(expected)
                        .message(format!("padded on the {want}, as phase={ph} needs{note}")),
                );
            }
            let msg = if want == "right" {
                format!("{wrong} of {} padded rows carry their pads at the start, but phase={ph} trains a causal LM with right padding: set tokenizer.padding_side = \"right\" when collating training batches (left only for batched generation / DPO scoring)", lay.padded)
            } else {
                format!("{wrong} of {} padded rows carry their pads at the end, but phase={ph} needs left padding (each row's last real token at the same index for the next decode step): set tokenizer.padding_side = \"left\" before generation / DPO scoring", lay.padded)
            };
            let msg = if via_eos {
                format!("{msg} (pads inferred from runs of EOS at the row ends — no attention_mask in the batch; confirm by decoding one row)")
            } else {
                msg
            };
            Some(
                base(fail_or_warn, "wrong_side")
                    .expected(expected)
                    .message(msg)
                    .value("wrong_rows", wrong as f64),
            )
        },
    )
}

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
                let entry = match ph.as_deref() {
                    Some("eval" | "ppl" | "perplexity" | "evaluation") => "L7",
                    Some("sft") => "L2",
                    _ => "O15",
                };
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

// ---------------------------------------------------------------------------------------
// L3: pad token

/// A `*ForSequenceClassification` model (config architectures), or a batch shaped like one
/// (labels (N,) beside input_ids (N, L)).
fn is_seq_cls(cfg: Option<&ModelConfig>, b: &Batch, ids: &Ints) -> bool {
    if cfg.is_some_and(|c| {
        c.architectures
            .iter()
            .any(|a| a.ends_with("ForSequenceClassification"))
    }) {
        return true;
    }
    ids.shape.len() == 2
        && b.find(LABELS)
            .is_some_and(|l| l.shape.len() == 1 && l.shape.first() == ids.shape.first())
}

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
        let labels = b
            .find(LABELS)
            .filter(|l| l.shape == ids.shape)
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

// ---------------------------------------------------------------------------------------
// L4: packed rows and position resets

pub fn packing_positions(ctx: &ProbeCtx) -> Vec<Verdict> {
    let cfg = model_config(ctx).map(|c| c.1);
    let eos = eos_ids(ctx, cfg.as_ref());
    // A BOS that is also an EOS (GPT-2's <|endoftext|>) cannot mark a document start.
    let bos = bos_id(ctx, cfg.as_ref()).filter(|b| !eos.contains(b));
    let ids_known = !eos.is_empty() || bos.is_some();
    let packing = ctx.facts.bool("packing");
    over_batches(ctx, "L4", "no batch carries input_ids", |b| {
        let ids = match b.ints(INPUT_IDS)? {
            Ok(i) => i,
            Err(e) => return Some(Verdict::skip("L4", e)),
        };
        let attn = b
            .ints(ATTN)
            .and_then(Result::ok)
            .filter(|a| a.shape == ids.shape);
        let pos = match b.ints(POSITIONS) {
            Some(Ok(p)) if p.v.len() == ids.v.len() => Some(p),
            Some(Ok(p)) => {
                return Some(Verdict::skip(
                    "L4",
                    format!(
                        "position_ids shape {:?} differs from input_ids {:?}",
                        p.shape, ids.shape
                    ),
                ))
            }
            Some(Err(e)) => return Some(Verdict::skip("L4", e)),
            None => None,
        };
        let l = ids.row_len().max(1);
        // Per row, inside its real tokens: strong document starts (an EOS immediately followed
        // by a BOS), weak ones (an EOS followed by another token — every chat turn ends with
        // one: Llama-3 <|eot_id|>, Qwen <|im_end|> — or a BOS alone), and position resets.
        let mut strong: Vec<Vec<usize>> = Vec::new();
        let mut weak: Vec<Vec<usize>> = Vec::new();
        let mut resets = 0usize;
        let mut rows_reset = 0usize;
        for (r, row) in ids.rows().enumerate() {
            let mask = attn.as_ref().map(|a| &a.v[r * l..r * l + row.len()]);
            let real = |i: usize| mask.is_none_or(|m| m[i] != 0);
            let first = (0..row.len()).find(|&i| real(i));
            let last = (0..row.len()).rev().find(|&i| real(i));
            let (mut s, mut w) = (Vec::new(), Vec::new());
            if let (Some(first), Some(last)) = (first, last) {
                for i in first + 1..=last {
                    if !real(i) {
                        continue;
                    }
                    let after_eos = real(i - 1) && eos.contains(&row[i - 1]);
                    let is_bos = Some(row[i]) == bos;
                    if after_eos && is_bos {
                        s.push(i);
                    } else if after_eos || is_bos {
                        w.push(i);
                    }
                }
                if let Some(p) = &pos {
                    let prow = &p.v[r * l..r * l + row.len()];
                    let n = (first + 1..=last)
                        .filter(|&i| real(i) && real(i - 1))
                        .filter(|&i| prow[i] == 0 || prow[i] < prow[i - 1])
                        .count();
                    resets += n;
                    rows_reset += (n > 0) as usize;
                }
            }
            strong.push(s);
            weak.push(w);
        }
        let n_strong: usize = strong.iter().map(Vec::len).sum();
        let n_weak: usize = weak.iter().map(Vec::len).sum();
        let max_docs = strong
            .iter()
            .zip(&weak)
            .map(|(s, w)| s.len() + w.len() + 1)
            .max()
            .unwrap_or(1);
        let mut ev = vec![b.ev(&ids.name)];
        if let Some(p) = &pos {
            ev.push(b.ev(&p.name));
        }
        let seen = format!(
            "{n_strong} EOS→BOS boundaries, {n_weak} other EOS/BOS inside rows{}",
            if pos.is_some() {
                format!("; {resets} position_ids resets in {rows_reset} rows")
            } else {
                "; no position_ids".into()
            }
        );
        let make = |st: Status, out: &str, measured: String| {
            let mut v = Verdict::new("L4", st, out)
                .measured(measured)
                .value("max_docs_per_row", max_docs as f64)
                .value("boundaries", n_strong as f64)
                .value("weak_boundaries", n_weak as f64)
                .value("resets", resets as f64);
            for e in &ev {
                v = v.evidence(e.clone());
            }
            v
        };
        let (packed, why) = match packing {
            Some(true) => (true, "fact packing=true".to_string()),
            Some(false) => (false, "fact packing=false".to_string()),
            None if resets > 0 => (
                true,
                format!("inferred: position_ids restart inside {rows_reset} row(s)"),
            ),
            None if n_strong > 0 => (
                true,
                format!("inferred: {n_strong} EOS→BOS document boundaries inside rows"),
            ),
            None if n_weak > 0 || !ids_known => {
                let what = if ids_known {
                    format!("{n_weak} EOS/BOS token(s) inside rows but no EOS→BOS boundary and no position reset: multi-turn chat rows (every turn ends with an EOS such as <|eot_id|> / <|im_end|>) look the same as documents packed without BOS")
                } else {
                    "no EOS/BOS id known (config.json or --fact eos_token_id) and no position reset to see document boundaries".to_string()
                };
                return Some(
                    Verdict::skip("L4", format!("cannot tell whether rows are packed: {what} — pass --fact packing=true|false"))
                        .measured(seen)
                        .evidence(ev[0].clone()),
                );
            }
            None => (false, "no EOS or BOS inside any row".to_string()),
        };
        if !packed {
            return Some(
                make(Status::Pass, "pass", format!("not packed ({why}); {seen}"))
                    .expected("position_ids reset at each document start when packing")
                    .message("rows hold one document each: nothing to reset"),
            );
        }
        let expected = "position_ids drop to 0 at every document start".to_string();
        let declared = packing == Some(true);
        let Some(p) = pos else {
            let (st, chat) = if declared {
                (Status::Fail, "")
            } else {
                (Status::Warn, " (if these are single multi-turn conversations — Llama-2-chat puts </s><s> between turns — pass --fact packing=false)")
            };
            return Some(make(st, "no_reset", format!("packed ({why}); {seen}")).expected(expected).message(format!(
                "packed rows without position_ids: positions keep counting across documents and a plain causal mask lets each document attend to its neighbours — use DataCollatorWithFlattening (position_ids restart at 0 per example) with attn_implementation=\"flash_attention_2\" (varlen), or disable packing{chat}",
            )));
        };
        let reset_at = |r: usize, s: usize| {
            let prow = &p.v[r * l..];
            s > 0 && s < ids.row_len() && (prow[s] == 0 || prow[s] < prow[s - 1])
        };
        let missing: Vec<(usize, usize)> = strong
            .iter()
            .enumerate()
            .flat_map(|(r, s)| s.iter().map(move |&s| (r, s)))
            .filter(|&(r, s)| !reset_at(r, s))
            .collect();
        if resets > 0 {
            let note = if missing.is_empty() {
                String::new()
            } else {
                format!(" ({} EOS→BOS boundaries inside one segment: turns of one example, e.g. Llama-2-chat's </s><s> — if they separate documents, those leak)", missing.len())
            };
            return Some(make(Status::Pass, "pass", format!("packed ({why}); {seen}")).expected(expected).message(format!("position_ids restart at each packed document{note} — make sure the attention kernel uses them (flash_attention_2 varlen)")).value("missing_resets", missing.len() as f64));
        }
        // Positions never restart inside a row.
        let first = missing.first().copied().or_else(|| {
            weak.iter()
                .enumerate()
                .find_map(|(r, w)| w.first().map(|&s| (r, s)))
                .filter(|_| declared)
        });
        if declared && first.is_none() && ids_known {
            return Some(make(Status::Pass, "pass", format!("packed ({why}); {seen}")).expected(expected).message("packing declared, but no row of this batch holds a document boundary: nothing to reset here"));
        }
        let at = first
            .map(|(r, s)| format!(" (first boundary at row {r}, position {s})"))
            .unwrap_or_default();
        let chat = if declared {
            ""
        } else {
            " (if each row is one multi-turn conversation — Llama-2-chat puts </s><s> between turns — pass --fact packing=false)"
        };
        Some(make(Status::Fail, "no_reset", format!("packed ({why}); {seen}")).expected(expected).message(format!(
            "position_ids never restart inside a row, so they keep counting across packed documents{at}: documents contaminate each other — emit position_ids that restart at 0 per document (DataCollatorWithFlattening) and use an attention kernel that honours them (flash_attention_2 varlen){chat}"
        )).value("missing_resets", if missing.is_empty() && declared { n_weak } else { missing.len() } as f64))
    })
}

// ---------------------------------------------------------------------------------------
// O14, V5: class-label range and void 255

pub fn label_range(ctx: &ProbeCtx) -> Vec<Verdict> {
    let void = p!(ctx, "O14", "void_label") as i64;
    let cfg = model_config(ctx);
    let c = num_classes(ctx, cfg.as_ref().map(|c| &c.1));
    let ign = ignore_index(ctx);
    over_batches(
        ctx,
        "O14",
        "no batch carries class labels (labels beside pixel_values, or without input_ids)",
        |b| {
            let lt = class_labels(ctx, b)?;
            let seg = is_segmentation(b, lt);
            let entry = if seg { "V5" } else { "O14" };
            let labels = match b.read_ints(lt) {
                Ok(l) => l,
                Err(e) => {
                    return Some(Verdict::skip(
                        entry,
                        format!("{e} — the range check applies to integer class indices"),
                    ))
                }
            };
            let ev = b.ev(&labels.name);
            let vals: Vec<i64> = labels.v.iter().copied().filter(|&x| x != ign).collect();
            if vals.is_empty() {
                return Some(
                    Verdict::skip(entry, format!("every label is the ignore index {ign}"))
                        .evidence(ev),
                );
            }
            let void_ignored = ign == void;
            let void_n = if void_ignored {
                0
            } else {
                vals.iter().filter(|&&x| x == void).count()
            };
            let non_void = || vals.iter().copied().filter(|&x| void_ignored || x != void);
            let lo = non_void().min();
            let hi = non_void().max();
            let range = match (lo, hi) {
                (Some(a), Some(b)) => format!("[{a}, {b}]"),
                _ => "only void".into(),
            };
            let mut measured = format!("{} labels in {range}", vals.len());
            if void_n > 0 {
                measured.push_str(&format!(", {void_n} = {void}"));
            }
            let Some(c) = c else {
                return Some(
                    Verdict::skip(
                        entry,
                        "needs fact num_classes (or num_labels / id2label in config.json)",
                    )
                    .measured(measured)
                    .evidence(ev),
                );
            };
            let ci = c as i64;
            measured.push_str(&format!(" vs num_classes {c}"));
            let make = |e: &str, st: Status, out: &str| {
                Verdict::new(e, st, out)
                    .measured(measured.clone())
                    .expected(format!(
                        "0 ≤ label < {c}{}",
                        if seg {
                            format!(", void {void} ignored")
                        } else {
                            String::new()
                        }
                    ))
                    .evidence(ev.clone())
                    .value("num_classes", c as f64)
                    .value("min", lo.unwrap_or(0) as f64)
                    .value("max", hi.unwrap_or(0) as f64)
                    .value("void", void_n as f64)
            };
            // One-hot targets (N, C) of 0/1 for class-index losses.
            if !seg
                && labels.shape.len() == 2
                && labels.row_len() == c as usize
                && c > 1
                && labels
                    .rows()
                    .all(|r| r.iter().all(|&x| x == 0 || x == 1) && r.iter().sum::<i64>() == 1)
            {
                return Some(make("O14", Status::Warn, "out_of_range").message(format!(
                "labels are one-hot {:?}: CrossEntropyLoss reads a (N, C) integer target as multi-target — pass class indices labels.argmax(-1) (long, shape (N,)) or float probabilities",
                labels.shape
            )));
            }
            let neg = vals.iter().filter(|&&x| x < 0).count();
            let void_counts_as_class = void >= ci;
            let over = non_void().filter(|&x| x >= ci).count();
            if neg > 0 {
                return Some(make(entry, Status::Fail, "out_of_range").message(format!("{neg} negative label(s) other than the ignore index {ign}: CrossEntropyLoss asserts t >= 0 (a device-side assert on GPU) — map them to {ign} or a real class")).value("out_of_range", neg as f64));
            }
            if over > 0 {
                let hint = if lo.is_some_and(|l| l >= 1) && hi == Some(ci) {
                    " — labels run 1..C (1-indexed): subtract 1 so classes are 0..C-1".to_string()
                } else if hi == Some(ci) {
                    " — an off-by-one: the largest label equals num_classes".to_string()
                } else {
                    " — raw ids with gaps, or num_labels too small for the dataset: remap labels to 0..C-1 (or enlarge the head)".to_string()
                };
                let void_note = if void_n > 0 {
                    format!("; {void_n} void ({void}) labels as well")
                } else {
                    String::new()
                };
                return Some(make(entry, Status::Fail, "out_of_range").message(format!("{over} label(s) ≥ num_classes {c}{hint}; on GPU this is a device-side assert, on some paths silent corruption{void_note}")).value("out_of_range", over as f64));
            }
            if void_n > 0 && void_counts_as_class {
                return Some(make("V5", Status::Fail, "void_unmasked").message(format!(
                "{void_n} label(s) hold the void value {void}, which is ≥ num_classes {c}: unless it is excluded the loss is out of range / NaN and mIoU is corrupted — set CrossEntropyLoss(ignore_index={void}) in the loss AND mask label != {void} in the metric (or pass --fact ignore_index={void} if already done)"
            )));
            }
            Some(make(entry, Status::Pass, "pass").message(format!(
                "labels within [0, {c}){}",
                if void_ignored {
                    format!(" (void {void} is the declared ignore_index)")
                } else {
                    String::new()
                }
            )))
        },
    )
}

// ---------------------------------------------------------------------------------------
// V1: per-channel input statistics

#[derive(Clone, Default)]
struct ChanAcc {
    n: u64,
    sum: f64,
    sumsq: f64,
    min: f64,
    max: f64,
}

impl ChanAcc {
    fn push(&mut self, x: f64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.n += 1;
        self.sum += x;
        self.sumsq += x * x;
    }
    fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum / self.n as f64
        }
    }
    fn std(&self) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let m = self.mean();
        (self.sumsq / self.n as f64 - m * m).max(0.0).sqrt()
    }
}

/// (channels, inner elements per channel block, channels-last).
fn channel_layout(shape: &[usize]) -> (usize, usize, bool) {
    let is_ch = |d: usize| matches!(d, 1 | 3 | 4);
    match shape.len() {
        4 if is_ch(shape[1]) => (shape[1], shape[2] * shape[3], false),
        4 if is_ch(shape[3]) => (shape[3], 1, true),
        3 if is_ch(shape[0]) => (shape[0], shape[1] * shape[2], false),
        3 if is_ch(shape[2]) => (shape[2], 1, true),
        5 if is_ch(shape[2]) => (shape[2], shape[3] * shape[4], false),
        _ => (1, 1, true),
    }
}

pub fn input_norm(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (max_mean, std_lo, std_hi, raw_max) = (
        p!(ctx, "V1", "max_abs_mean"),
        p!(ctx, "V1", "std_lo"),
        p!(ctx, "V1", "std_hi"),
        p!(ctx, "V1", "raw_max"),
    );
    let (unit_tol, raw_255_min) = (
        p!(ctx, "V1", "unit_range_tol"),
        p!(ctx, "V1", "raw_255_min"),
    );
    // Pooled (mean, std) of every batch that passes its own checks, to compare paths.
    let mut seen: Vec<(PathBuf, f64, f64)> = Vec::new();
    let mut out = over_batches(ctx, "V1", "no batch carries pixel_values (images)", |b| {
        let t = b.find(PIXELS)?;
        if t.checked_numel() == Some(0) {
            return Some(Verdict::skip(
                "V1",
                format!("tensor `{}` is empty (shape {:?})", t.name, t.shape),
            ));
        }
        let (c, inner, last) = channel_layout(&t.shape);
        let mut acc = vec![ChanAcc::default(); c];
        let mut nonfinite = 0u64;
        let r = b.for_each_f64(t, |i, x| {
            if !x.is_finite() {
                nonfinite += 1;
                return;
            }
            let ch = if last { i % c } else { (i / inner.max(1)) % c };
            acc[ch].push(x);
        });
        if let Err(e) = r {
            return Some(Verdict::skip("V1", e));
        }
        let lo = acc
            .iter()
            .filter(|a| a.n > 0)
            .map(|a| a.min)
            .fold(f64::INFINITY, f64::min);
        let hi = acc
            .iter()
            .filter(|a| a.n > 0)
            .map(|a| a.max)
            .fold(f64::NEG_INFINITY, f64::max);
        let chans: Vec<String> = acc
            .iter()
            .enumerate()
            .map(|(i, a)| format!("ch{i} mean {} std {}", fmt(a.mean()), fmt(a.std())))
            .collect();
        let mut measured = format!(
            "{} {:?} {}: {}; range [{}, {}]",
            t.name,
            t.shape,
            t.dtype,
            chans.join(" · "),
            fmt(lo),
            fmt(hi)
        );
        if nonfinite > 0 {
            measured.push_str(&format!("; {nonfinite} non-finite"));
        }
        let expected = format!("|mean| ≤ {max_mean}, std in [{std_lo}, {std_hi}] over all channels; each channel's std in band");
        let knob = "Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]) for ImageNet weights (or the backbone's own image processor), identically in the train and eval transforms";
        let mut v = Verdict::new("V1", Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .evidence(b.ev(&t.name))
            .value("min", lo)
            .value("max", hi)
            .value("nonfinite", nonfinite as f64);
        for (i, a) in acc.iter().enumerate() {
            v = v
                .value(&format!("mean_c{i}"), a.mean())
                .value(&format!("std_c{i}"), a.std());
        }
        let set = |mut v: Verdict, st: Status, out: &str, msg: String| {
            v.status = st;
            v.outcome = out.to_string();
            v.message = msg;
            v
        };
        if acc.iter().all(|a| a.n == 0) {
            return Some(set(
                v,
                Status::Fail,
                "unnormalized",
                "no finite pixel value: the input pipeline produced NaN/Inf".into(),
            ));
        }
        if nonfinite > 0 {
            return Some(set(v, Status::Fail, "unnormalized", format!("{nonfinite} non-finite pixel value(s): a division by a zero std or a corrupt image in the pipeline")));
        }
        if lo >= 0.0 && hi > raw_max {
            let what = if hi > raw_255_min {
                "raw 0..255 pixels"
            } else {
                "unscaled, non-negative pixels"
            };
            return Some(set(v, Status::Fail, "unnormalized", format!("{what} (max {}): the tensor was never scaled and normalised — ToTensor()/255 then {knob}", fmt(hi))));
        }
        if lo >= 0.0 && hi <= 1.0 + unit_tol {
            return Some(set(v, Status::Warn, "unnormalized", format!("pixels scaled to [0, 1] but not mean/std-normalised: fine for a model trained from scratch this way, wrong for a pretrained backbone — add {knob}")));
        }
        // Pooled over channels: the mean/std band decides; a single channel's std outside the
        // band too. A single channel's mean off zero is common in small, colour-biased batches
        // (ImageNet-normalised values reach 2.64), so it is only noted.
        let mut pooled = ChanAcc::default();
        for a in acc.iter().filter(|a| a.n > 0) {
            if pooled.n == 0 {
                pooled.min = a.min;
                pooled.max = a.max;
            }
            pooled.n += a.n;
            pooled.sum += a.sum;
            pooled.sumsq += a.sumsq;
        }
        let (pm, ps) = (pooled.mean(), pooled.std());
        v = v.value("mean", pm).value("std", ps);
        seen.push((b.path.clone(), pm, ps));
        let in_band = |s: f64| (std_lo..=std_hi).contains(&s);
        let bad_std: Vec<String> = acc
            .iter()
            .enumerate()
            .filter(|(_, a)| !in_band(a.std()))
            .map(|(i, a)| format!("ch{i} std {}", fmt(a.std())))
            .collect();
        if pm.abs() > max_mean || !in_band(ps) || !bad_std.is_empty() {
            let mut what = format!("all channels: mean {}, std {}", fmt(pm), fmt(ps));
            if !bad_std.is_empty() {
                what.push_str(&format!("; {}", bad_std.join(", ")));
            }
            return Some(set(v, Status::Fail, "unnormalized", format!("inputs far from mean 0 / std 1 ({what}): wrong mean/std for the data, normalisation applied twice, or a different transform in this path — use {knob}")));
        }
        let off_mean: Vec<String> = acc
            .iter()
            .enumerate()
            .filter(|(_, a)| a.mean().abs() > max_mean)
            .map(|(i, a)| format!("ch{i} mean {}", fmt(a.mean())))
            .collect();
        if !off_mean.is_empty() {
            return Some(set(v, Status::Pass, "pass", format!("normalised overall (mean {}, std {}); {} off zero — a colour-biased batch, or a wrong per-channel mean / BGR order: confirm on a larger sample", fmt(pm), fmt(ps), off_mean.join(", "))));
        }
        Some(set(v, Status::Pass, "pass", "inputs normalised per channel to about mean 0, std 1 (check eval uses the same transform)".into()))
    });
    // Several image batches (train / eval dumps): the same normalisation in every path.
    if seen.len() >= 2 && out.first().is_some_and(|v| v.status != Status::Fail) {
        let mut worst: Option<(f64, f64, usize, usize)> = None;
        for i in 0..seen.len() {
            for j in i + 1..seen.len() {
                let (a, b) = (&seen[i], &seen[j]);
                let ratio = if b.2 > 0.0 { a.2 / b.2 } else { f64::INFINITY };
                let dmean = (a.1 - b.1).abs();
                let off = |r: f64| if r < 1.0 { 1.0 / r } else { r };
                if worst.is_none_or(|w| {
                    off(ratio) > off(w.0) || (off(ratio) == off(w.0) && dmean > w.1)
                }) {
                    worst = Some((ratio, dmean, i, j));
                }
            }
        }
        if let Some((ratio, dmean, i, j)) = worst {
            let std_bad = !(std_lo..=std_hi).contains(&ratio);
            if std_bad || dmean > max_mean {
                let name = |k: usize| {
                    seen[k]
                        .0
                        .strip_prefix(&ctx.run.root)
                        .unwrap_or(&seen[k].0)
                        .display()
                        .to_string()
                };
                let mut v = Verdict::new("V1", if std_bad { Status::Fail } else { Status::Warn }, "unnormalized")
                    .measured(format!("{}: mean {}, std {} · {}: mean {}, std {} (std ratio {})", name(i), fmt(seen[i].1), fmt(seen[i].2), name(j), fmt(seen[j].1), fmt(seen[j].2), fmt(ratio)))
                    .expected(format!("the same normalisation in every path: std ratio in [{std_lo}, {std_hi}], mean difference ≤ {max_mean}"))
                    .message("the batch dumps are normalised differently (train vs eval transform): apply exactly the same Normalize(mean, std), scaling and channel order in both paths — otherwise validation accuracy sits near chance while training looks fine")
                    .evidence(Evidence::file(&seen[i].0))
                    .evidence(Evidence::file(&seen[j].0))
                    .value("std_ratio", ratio)
                    .value("mean_diff", dmean);
                v.values.insert("batches".into(), seen.len() as f64);
                out = vec![v];
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// V6: class balance

pub fn class_balance(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (maj, min_labels) = (p!(ctx, "V6", "majority_frac"), p!(ctx, "V6", "min_labels"));
    let cfg = model_config(ctx);
    let c = num_classes(ctx, cfg.as_ref().map(|c| &c.1));
    over_batches(ctx, "V6", "no batch carries class labels", |b| {
        let lt = class_labels(ctx, b)?;
        let labels = match b.read_ints(lt) {
            Ok(l) => l,
            Err(e) => return Some(Verdict::skip("V6", e)),
        };
        let mut hist: BTreeMap<i64, u64> = BTreeMap::new();
        for &x in &labels.v {
            if x >= 0 && c.is_none_or(|c| x < c as i64) {
                *hist.entry(x).or_default() += 1;
            }
        }
        let n: u64 = hist.values().sum();
        let ev = b.ev(&labels.name);
        if n == 0 {
            return Some(
                Verdict::skip("V6", "no valid class label (all ignored or out of range)")
                    .evidence(ev),
            );
        }
        let (top, top_n) = hist
            .iter()
            .max_by_key(|(k, v)| (**v, std::cmp::Reverse(**k)))
            .map(|(k, v)| (*k, *v))
            .unwrap_or((0, 0));
        let frac = top_n as f64 / n as f64;
        let present = hist.len();
        let of = c.map(|c| format!(" of {c}")).unwrap_or_default();
        let measured = format!(
            "majority class {top} = {} of {n} labels; {present}{of} classes present",
            pct(frac)
        );
        let expected = format!(
            "majority ≤ {} (judged with ≥ {min_labels} labels)",
            pct(maj)
        );
        let v = Verdict::new("V6", Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .evidence(ev)
            .value("majority_frac", frac)
            .value("labels", n as f64)
            .value("classes_present", present as f64);
        if (n as f64) < min_labels {
            return Some(Verdict { message: format!("only {n} labels in the dump: too few to judge the class balance (dump a larger batch or pass the dataset's label histogram)"), ..v });
        }
        if frac > maj {
            return Some(Verdict {
                status: Status::Warn,
                outcome: "imbalanced".into(),
                message: format!("class {top} dominates ({}): an unweighted loss can settle on always predicting it — weight the loss by inverse frequency (CrossEntropyLoss(weight=…)), focal loss, or a class-balanced sampler, and report per-class / macro metrics", pct(frac)),
                ..v
            });
        }
        Some(Verdict {
            message: "no single class dominates this batch".into(),
            ..v
        })
    })
}

// ---------------------------------------------------------------------------------------
// DF3: latent scale

/// The VAE config of the run (a `config.json` with `scaling_factor` / an Autoencoder class).
fn vae_config(ctx: &ProbeCtx) -> Option<(PathBuf, VaeConfig)> {
    for a in ctx.run.of_kind(ArtifactKind::ModelConfig) {
        if let Ok(c) = ModelConfig::read(&a.path) {
            if c.is_vae() {
                return Some((a.path.clone(), VaeConfig::from_value(c.raw)));
            }
        }
    }
    None
}

pub fn latent_std(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (lo, hi, sd) = (
        p!(ctx, "DF3", "std_lo"),
        p!(ctx, "DF3", "std_hi"),
        p!(ctx, "DF3", "sd_factor"),
    );
    let factor_tol = p!(ctx, "DF3", "factor_tol");
    let vae = vae_config(ctx);
    over_batches(ctx, "DF3", "no batch carries a latents tensor", |b| {
        let t = b.find(LATENTS)?;
        if t.checked_numel() == Some(0) {
            return Some(Verdict::skip(
                "DF3",
                format!("tensor `{}` is empty (shape {:?})", t.name, t.shape),
            ));
        }
        let s = match b.file.stats(&t.name) {
            Ok(s) => s,
            Err(e) => return Some(Verdict::skip("DF3", e.to_string())),
        };
        let factor = if s.std > 0.0 { 1.0 / s.std } else { f64::NAN };
        let mut measured = format!(
            "latent std {}, mean {} over {} values → factor 1/std = {}",
            fmt(s.std),
            fmt(s.mean),
            s.count,
            fmt(factor)
        );
        if s.nonfinite() > 0 {
            measured.push_str(&format!("; {} non-finite", s.nonfinite()));
        }
        let mut v = Verdict::new("DF3", Status::Pass, "pass")
            .measured(measured)
            .expected(format!("std in [{lo}, {hi}] (about unit variance)"))
            .evidence(b.ev(&t.name))
            .value("std", s.std)
            .value("mean", s.mean)
            .value("factor", factor);
        let vae_sf = vae.as_ref().and_then(|(_, c)| c.scaling_factor);
        if let Some((p, c)) = &vae {
            v = v.evidence(Evidence::file(p).note(format!(
                "scaling_factor {}",
                c.scaling_factor.map(fmt).unwrap_or_else(|| "absent".into())
            )));
        }
        let near = |a: f64, b: f64| a.is_finite() && b > 0.0 && (a / b - 1.0).abs() <= factor_tol;
        if s.finite == 0 || s.nonfinite() > 0 {
            v.status = Status::Fail;
            v.outcome = "off_scale".into();
            v.message = "non-finite latents: the VAE encode overflowed (fp16 VAE — run it in fp32) or the inputs were NaN".into();
            return Some(v);
        }
        if (lo..=hi).contains(&s.std) {
            v.message = "latents are about unit variance".into();
            return Some(v);
        }
        v.status = Status::Fail;
        v.outcome = "off_scale".into();
        let sf = vae_sf.unwrap_or(sd);
        let src = if vae_sf.is_some() {
            "vae.config.scaling_factor"
        } else {
            "the SD-VAE scaling_factor"
        };
        v.message = if near(s.std * sf, 1.0) {
            format!("unscaled VAE latents (std ≈ 1/{sf}): multiply by {src} = {sf} when encoding (latents = vae.encode(x).latent_dist.sample() * {sf}) and divide by it before decoding")
        } else if near(s.std, sf) {
            format!(
                "latents scaled twice (std ≈ {src} {}): multiply by the factor once",
                fmt(sf)
            )
        } else if s.std > hi {
            format!("latents far from unit variance: a custom VAE needs its own factor — measure the std over a data sample and set scaling_factor = 1/std ≈ {} rather than copying {}", fmt(factor), fmt(sd))
        } else {
            format!("latents much smaller than unit variance: the factor is applied twice or is too small — set scaling_factor = 1/std ≈ {} (measured on data)", fmt(factor))
        };
        Some(v)
    })
}

// ---------------------------------------------------------------------------------------
// X4: image tokens per row

pub fn image_tokens(ctx: &ProbeCtx) -> Vec<Verdict> {
    let cfg = model_config(ctx).map(|c| c.1);
    let img_id = ctx
        .facts
        .f64("image_token_id")
        .map(|v| v as i64)
        .or_else(|| {
            cfg.as_ref()
                .and_then(|c| c.image_token_id)
                .map(|v| v as i64)
        });
    let per_image = ctx.facts.u64("image_tokens_per_image").or_else(|| {
        cfg.as_ref().and_then(|c| {
            [
                "image_seq_length",
                "mm_tokens_per_image",
                "num_image_tokens",
            ]
            .iter()
            .find_map(|k| c.raw.get(*k).and_then(serde_json::Value::as_u64))
        })
    });
    let (Some(img_id), Some(k)) = (img_id, per_image.filter(|k| *k > 0)) else {
        let mut missing = Vec::new();
        if img_id.is_none() {
            missing.push("image_token_id");
        }
        if per_image.is_none_or(|k| k == 0) {
            missing.push("image_tokens_per_image");
        }
        return vec![Verdict::skip(
            "X4",
            format!(
                "needs fact {} (tokens one image expands into)",
                missing.join(" and ")
            ),
        )];
    };
    over_batches(ctx, "X4", "no batch carries input_ids", |b| {
        let ids = match b.ints(INPUT_IDS)? {
            Ok(i) => i,
            Err(e) => return Some(Verdict::skip("X4", e)),
        };
        let counts: Vec<u64> = ids
            .rows()
            .map(|r| r.iter().filter(|&&x| x == img_id).count() as u64)
            .collect();
        // One image per row when the pixel batch has as many images as rows.
        let one_per_row = b
            .find(PIXELS)
            .is_some_and(|p| p.shape.len() == 4 && p.shape.first() == Some(&counts.len()));
        let bad: Vec<(usize, u64)> = counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n % k != 0 || (one_per_row && n < k))
            .map(|(i, &n)| (i, n))
            .collect();
        let with = counts.iter().filter(|&&n| n > 0).count();
        let shown: Vec<String> = counts.iter().take(16).map(|n| n.to_string()).collect();
        let measured = format!(
            "image-token ({img_id}) counts per row: [{}{}]; {with} of {} rows carry images",
            shown.join(", "),
            if counts.len() > 16 { ", …" } else { "" },
            counts.len()
        );
        let expected = format!(
            "a positive multiple of {k} in each row with images{}",
            if one_per_row {
                " (one image per row)"
            } else {
                ""
            }
        );
        let v = Verdict::new("X4", Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .evidence(b.ev(&ids.name))
            .value("rows_bad", bad.len() as f64)
            .value("tokens_per_image", k as f64);
        if with == 0 && !one_per_row {
            return Some(Verdict {
                message: "no image placeholder in this batch (text-only rows)".into(),
                ..v
            });
        }
        if !bad.is_empty() {
            let list: Vec<String> = bad
                .iter()
                .take(6)
                .map(|(r, n)| format!("row {r}: {n}"))
                .collect();
            return Some(Verdict {
                status: Status::Fail,
                outcome: "truncated".into(),
                message: format!("{} row(s) hold a count of image tokens that is not a multiple of {k} ({}): truncation to max_length cut the placeholders, so image features and tokens no longer match — set max_length=None for VLM training (or large enough), and truncate text only", bad.len(), list.join(", ")),
                ..v
            });
        }
        Some(Verdict {
            message: "every row carries whole images' worth of image tokens".into(),
            ..v
        })
    })
}

// ---------------------------------------------------------------------------------------
// L5: rope_scaling vs context

pub fn rope_scaling(ctx: &ProbeCtx) -> Vec<Verdict> {
    let linear_max = p!(ctx, "L5", "linear_max_factor");
    let cfg = model_config(ctx);
    let c = cfg.as_ref().map(|c| &c.1);
    let Some(max_pos) = ctx
        .facts
        .u64("max_position_embeddings")
        .or_else(|| c.and_then(|c| c.max_position_embeddings))
        .filter(|m| *m > 0)
    else {
        return vec![Verdict::skip("L5", "needs max_position_embeddings: no config.json in the run (or pass --fact max_position_embeddings=…)")];
    };
    let (context, ctx_src, ctx_ev) = match ctx.facts.u64("context").filter(|c| *c > 0) {
        Some(v) => (v, "fact context".to_string(), None),
        None => {
            let (batches, _) = open_batches(ctx);
            let best = batches
                .iter()
                .filter_map(|b| {
                    b.find(INPUT_IDS).map(|t| {
                        (
                            t.shape.last().copied().unwrap_or(0) as u64,
                            b.path.clone(),
                            t.name.clone(),
                        )
                    })
                })
                .max_by_key(|x| x.0);
            match best.filter(|b| b.0 > 0) {
                Some((len, p, name)) => (len, "batch sequence length".to_string(), Some(Evidence::file(p).tensor(name))),
                None => return vec![Verdict::skip("L5", "needs fact context (the sequence length trained or inferred at): no batch with input_ids either")],
            }
        }
    };
    let rope_type = ctx
        .facts
        .get("rope_type")
        .map(str::to_string)
        .or_else(|| c.and_then(|c| c.rope_type().map(str::to_string)));
    let factor = ctx
        .facts
        .f64("rope_factor")
        .or_else(|| c.and_then(|c| c.rope_factor()));
    let scaled = rope_type.is_some() || factor.is_some();
    let orig = ctx
        .facts
        .u64("rope_original_max_position_embeddings")
        .or_else(|| c.and_then(|c| c.rope_original_max_position_embeddings()))
        .filter(|o| *o > 0)
        .unwrap_or(max_pos);
    let absolute = c.is_some_and(|c| c.rope_theta.is_none() && c.raw.get("n_positions").is_some());
    let rope_txt = if scaled {
        format!(
            "rope_scaling {} ×{}",
            rope_type.as_deref().unwrap_or("?"),
            factor.map(fmt).unwrap_or_else(|| "?".into())
        )
    } else {
        "no rope_scaling".into()
    };
    let measured =
        format!("context {context} ({ctx_src}) vs max_position_embeddings {max_pos}; {rope_txt}");
    let mut v = Verdict::new("L5", Status::Pass, "pass")
        .measured(measured)
        .value("context", context as f64)
        .value("max_position_embeddings", max_pos as f64);
    if let Some((p, _)) = &cfg {
        v = v.evidence(Evidence::file(p));
    }
    if let Some(e) = ctx_ev {
        v = v.evidence(e);
    }
    if let Some(f) = factor {
        v = v.value("rope_factor", f);
    }
    if !scaled {
        v.expected =
            format!("context ≤ {max_pos}, or rope_scaling with factor ≥ context / {max_pos}");
        if context <= max_pos {
            v.message = "the context fits the pretrained positions".into();
            return vec![v];
        }
        v.status = Status::Fail;
        v.outcome = "missing".into();
        let need = context as f64 / max_pos as f64;
        v.message = if absolute {
            format!("context {context} exceeds the {max_pos} learned absolute positions (n_positions): positions past the table index out of range — shorten the context (this model has no RoPE to scale)")
        } else {
            format!("training past the pretrained length without rope_scaling: positions beyond {max_pos} give rotation angles the model never saw — set rope_scaling {{\"rope_type\": \"yarn\", \"factor\": {}, \"original_max_position_embeddings\": {max_pos}}} (linear only up to ×{linear_max}) and keep it at inference", fmt(need.ceil()))
        };
        return vec![v];
    }
    let need = context as f64 / orig as f64;
    v.expected = format!(
        "factor ≥ context / original = {context} / {orig} = {}",
        fmt(need)
    );
    v = v.value("needed_factor", need);
    let Some(f) = factor else {
        v.message = format!(
            "rope_scaling type {} without a factor: cannot check it against the context",
            rope_type.as_deref().unwrap_or("?")
        );
        v.status = Status::Warn;
        return vec![v];
    };
    if f + 1e-9 < need {
        v.status = Status::Fail;
        v.outcome = "too_small".into();
        v.message = format!("rope_scaling factor {} covers {} positions, but the context is {context}: raise factor to ≥ {} (target length / original length)", fmt(f), (f * orig as f64).round(), fmt(need));
        return vec![v];
    }
    if rope_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("linear"))
        && f > linear_max
    {
        v.status = Status::Warn;
        v.message = format!("linear interpolation ×{} degrades beyond about ×{linear_max}: use rope_type \"yarn\" for large extensions", fmt(f));
        return vec![v];
    }
    v.message = "rope_scaling covers the context (keep the same rope_scaling at inference)".into();
    vec![v]
}

// ---------------------------------------------------------------------------------------
// DF4, DF6: training vs inference scheduler

pub fn diffusion_scheduler(ctx: &ProbeCtx) -> Vec<Verdict> {
    // `scheduler_config.json` files, plus JSON copies named like one (`train_scheduler_config.json`).
    let files: Vec<_> = ctx
        .run
        .artifacts
        .iter()
        .filter(|a| {
            let n = a
                .path
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            a.kind == ArtifactKind::SchedulerConfig
                || (n.ends_with(".json") && n.contains("scheduler") && !n.contains("lr_scheduler"))
        })
        .collect();
    let mut cfgs: Vec<(PathBuf, SchedulerConfig)> = Vec::new();
    let mut problems = Vec::new();
    for a in files {
        match SchedulerConfig::read(&a.path) {
            Ok(c) => cfgs.push((a.path.clone(), c)),
            Err(e) => problems.push(e.to_string()),
        }
    }
    if cfgs.len() < 2 {
        let extra = if problems.is_empty() {
            String::new()
        } else {
            format!(" (unreadable: {})", problems.join("; "))
        };
        return vec![Verdict::skip("DF4", format!("needs both the training and the inference scheduler config (found {} scheduler_config.json){extra}", cfgs.len()))];
    }
    // Keys compared, with diffusers' defaults for absent ones; the first three decide.
    type Get = fn(&SchedulerConfig) -> Option<String>;
    let keys: [(&str, Get, &str, bool); 6] = [
        ("beta_schedule", |c| c.beta_schedule.clone(), "linear", true),
        (
            "num_train_timesteps",
            |c| c.num_train_timesteps.map(|v| v.to_string()),
            "1000",
            true,
        ),
        (
            "prediction_type",
            |c| c.prediction_type.clone(),
            "epsilon",
            true,
        ),
        (
            "beta_start",
            |c| c.beta_start.map(|v| format!("{v}")),
            "0.0001",
            false,
        ),
        (
            "beta_end",
            |c| c.beta_end.map(|v| format!("{v}")),
            "0.02",
            false,
        ),
        (
            "rescale_betas_zero_snr",
            |c| c.rescale_betas_zero_snr.map(|v| v.to_string()),
            "false",
            false,
        ),
    ];
    let name = |p: &Path| {
        p.strip_prefix(&ctx.run.root)
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let mut hard: Vec<String> = Vec::new();
    let mut soft: Vec<String> = Vec::new();
    let (p0, c0) = &cfgs[0];
    for (p, c) in &cfgs[1..] {
        for (k, get, default, decisive) in &keys {
            let a = get(c0).unwrap_or_else(|| format!("{default} (default)"));
            let b = get(c).unwrap_or_else(|| format!("{default} (default)"));
            if a.trim_end_matches(" (default)") != b.trim_end_matches(" (default)") {
                let line = format!("{k}: {a} in {} vs {b} in {}", name(p0), name(p));
                if *decisive {
                    hard.push(line);
                } else {
                    soft.push(line);
                }
            }
        }
    }
    let files_txt: Vec<String> = cfgs
        .iter()
        .map(|(p, c)| format!("{} ({})", name(p), c.class_name.as_deref().unwrap_or("?")))
        .collect();
    let mut v = Verdict::new("DF4", Status::Pass, "pass")
        .expected("identical beta_schedule, num_train_timesteps, prediction_type")
        .value("configs", cfgs.len() as f64)
        .value("differences", (hard.len() + soft.len()) as f64);
    for (p, _) in &cfgs {
        v = v.evidence(Evidence::file(p));
    }
    if hard.is_empty() && soft.is_empty() {
        v.measured = format!(
            "{} scheduler configs agree: {}",
            cfgs.len(),
            files_txt.join(", ")
        );
        v.message =
            "training and inference schedulers agree on the noise schedule and prediction type"
                .into();
        return vec![v];
    }
    let all: Vec<String> = hard.iter().chain(&soft).cloned().collect();
    v.measured = all.join("; ");
    v.status = if hard.is_empty() {
        Status::Warn
    } else {
        Status::Fail
    };
    v.outcome = "mismatch".into();
    v.message = format!(
        "the schedulers disagree ({}): build the inference scheduler from the training one — Scheduler.from_config(train_scheduler.config) — instead of defaults; a prediction_type mismatch ruins samples without any error",
        files_txt.join(" vs ")
    );
    vec![v]
}

// ---------------------------------------------------------------------------------------
// O1: overfit one batch on the device

/// Samples and features used at most by the smoke test.
const SMOKE_MAX_N: usize = 256;
const SMOKE_MAX_D: usize = 16384;

/// Trains a linear softmax classifier by plain gradient descent; returns (initial, final) loss.
fn overfit_linear(
    x: &[f32],
    y: &[usize],
    c: usize,
    steps: usize,
    lr: f64,
    dev: &candle_core::Device,
) -> candle_core::Result<(f64, f64)> {
    let n = y.len().max(1);
    let d = x.len() / n;
    let xt = Tensor::from_slice(x, (n, d), dev)?;
    let xtt = xt.t()?.contiguous()?;
    let mut oh = vec![0f32; n * c];
    for (i, &k) in y.iter().enumerate() {
        oh[i * c + k] = 1.0;
    }
    let y1h = Tensor::from_vec(oh, (n, c), dev)?;
    let mut w = Tensor::zeros((d, c), CDType::F32, dev)?;
    let mut b = Tensor::zeros((1, c), CDType::F32, dev)?;
    let inv_n = 1.0 / n as f64;
    let loss_of = |w: &Tensor, b: &Tensor| -> candle_core::Result<f64> {
        let z = xt.matmul(w)?.broadcast_add(b)?;
        let zs = z.broadcast_sub(&z.max_keepdim(1)?)?;
        let lse = zs.exp()?.sum_keepdim(1)?.log()?;
        let logp = zs.broadcast_sub(&lse)?;
        let l = (logp * &y1h)?
            .sum_all()?
            .to_dtype(CDType::F64)?
            .to_scalar::<f64>()?;
        Ok(-l * inv_n)
    };
    let l0 = loss_of(&w, &b)?;
    for _ in 0..steps {
        let z = xt.matmul(&w)?.broadcast_add(&b)?;
        let e = z.broadcast_sub(&z.max_keepdim(1)?)?.exp()?;
        let p = e.broadcast_div(&e.sum_keepdim(1)?)?;
        let g = ((p - &y1h)? * inv_n)?;
        let gw = xtt.matmul(&g)?;
        let gb = g.sum_keepdim(0)?;
        w = (w - (gw * lr)?)?;
        b = (b - (gb * lr)?)?;
    }
    let l1 = loss_of(&w, &b)?;
    Ok((l0, l1))
}

pub fn overfit_smoke(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (steps, target, lr) = (
        p!(ctx, "O1", "steps"),
        p!(ctx, "O1", "target_frac"),
        p!(ctx, "O1", "lr"),
    );
    let cfg = model_config(ctx);
    let nc = num_classes(ctx, cfg.as_ref().map(|c| &c.1));
    over_batches(
        ctx,
        "O1",
        "needs a batch with float features (pixel_values) and integer class labels",
        |b| {
            let lt = class_labels(ctx, b)?;
            if lt.shape.len() != 1 || lt.dtype.is_float() {
                return None;
            }
            let n_all = lt.shape[0];
            let ft = b
                .find(PIXELS)
                .filter(|t| t.dtype.is_float() && t.shape.first() == Some(&n_all))
                .or_else(|| {
                    b.file.tensors().iter().find(|t| {
                        t.dtype.is_float()
                            && t.shape.len() >= 2
                            && t.shape.first() == Some(&n_all)
                            && !LATENTS.contains(&t.name.as_str())
                    })
                })?;
            let labels = match b.read_ints(lt) {
                Ok(l) => l,
                Err(e) => return Some(Verdict::skip("O1", e)),
            };
            let d_all: usize = ft.shape[1..].iter().product();
            if n_all < 2 || d_all == 0 {
                return Some(Verdict::skip(
                    "O1",
                    format!("too small a batch to overfit ({n_all} samples × {d_all} features)"),
                ));
            }
            let n = n_all.min(SMOKE_MAX_N);
            let stride = d_all.div_ceil(SMOKE_MAX_D);
            let d = d_all.div_ceil(stride);
            let raw = match b.f64_prefix(ft, n * d_all) {
                Ok(r) => r,
                Err(e) => return Some(Verdict::skip("O1", e)),
            };
            // Keep samples with a valid label; standardise each feature (non-finite → 0).
            let keep: Vec<usize> = (0..n)
                .filter(|&i| labels.v[i] >= 0 && nc.is_none_or(|c| labels.v[i] < c as i64))
                .collect();
            if keep.len() < 2 {
                return Some(Verdict::skip(
                    "O1",
                    "fewer than two samples with a valid class label",
                ));
            }
            let c = nc
                .map(|c| c as usize)
                .unwrap_or(0)
                .max(
                    keep.iter()
                        .map(|&i| labels.v[i] as usize + 1)
                        .max()
                        .unwrap_or(2),
                )
                .max(2);
            let m = keep.len();
            let mut x = vec![0f32; m * d];
            for j in 0..d {
                let col = j * stride;
                let vals: Vec<f64> = keep
                    .iter()
                    .map(|&i| raw.get(i * d_all + col).copied().unwrap_or(0.0))
                    .map(|v| if v.is_finite() { v } else { 0.0 })
                    .collect();
                let mean = vals.iter().sum::<f64>() / m as f64;
                let sd =
                    (vals.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / m as f64).sqrt();
                for (r, v) in vals.iter().enumerate() {
                    x[r * d + j] = if sd > 1e-12 {
                        ((v - mean) / sd) as f32
                    } else {
                        0.0
                    };
                }
            }
            let y: Vec<usize> = keep.iter().map(|&i| labels.v[i] as usize).collect();
            let t0 = std::time::Instant::now();
            let res = overfit_linear(&x, &y, c, steps.max(1.0) as usize, lr, &ctx.compute.device);
            let secs = t0.elapsed().as_secs_f64();
            let dev = &ctx.compute.label;
            let ev = vec![b.ev(&ft.name), b.ev(&labels.name)];
            let (l0, l1) = match res {
                Ok(r) => r,
                Err(e) => {
                    return Some(
                        Verdict::new("O1", Status::Warn, "cannot_overfit")
                            .measured(format!("{dev}: candle error"))
                            .message(format!("the device could not run the smoke test: {e}"))
                            .evidence(ev[0].clone()),
                    )
                }
            };
            let frac = l1 / l0;
            let measured = format!("{dev}: loss {} → {} in {} steps ({} of ln {c}) on {m} samples × {d} features, {:.0} ms", fmt(l0), fmt(l1), steps, pct(frac), 1000.0 * secs);
            let mut v = Verdict::new("O1", Status::Pass, "pass")
                .measured(measured)
                .expected(format!(
                    "final loss ≤ {} × initial (ln {c} = {})",
                    target,
                    fmt((c as f64).ln())
                ))
                .value("loss_initial", l0)
                .value("loss_final", l1)
                .value("frac", frac)
                .value("seconds", secs);
            for e in ev {
                v = v.evidence(e);
            }
            if l1.is_finite() && frac <= target {
                v.message = format!("a linear probe memorises this batch on {dev}: the batch is learnable and the device math works — if the real model cannot overfit it, the training loop is broken (params not in the optimizer, detached loss, zero_grad/step order)");
            } else {
                v.status = Status::Warn;
                v.outcome = "cannot_overfit".into();
                v.message = if l1.is_finite() {
                    "even a linear classifier cannot memorise this batch: labels inconsistent with the inputs (shuffled separately, identical inputs with different labels) or a degenerate batch (constant features)".into()
                } else {
                    format!("the loss became non-finite on {dev}: the device math or the batch values are broken")
                };
            }
            Some(v)
        },
    )
}

// ---------------------------------------------------------------------------------------

pub const SPECS: &[ProbeSpec] = &[
    ProbeSpec { id: "pad_side", question: "Is the batch padded on the side the phase needs (right for SFT/pretrain, left for generation/DPO)?", entries: &["L1"], inputs: &["batch:attention_mask", "batch:input_ids", "fact:phase"], params: &["min_eos_run"], outcomes: &["pass", "wrong_side", "skip"], run: pad_side },
    ProbeSpec { id: "label_mask", question: "Are pad (and, for SFT, prompt) positions masked with -100 — and is anything left unmasked?", entries: &["L2", "L7", "O15"], inputs: &["batch:labels", "batch:attention_mask", "batch:input_ids", "fact:phase"], params: &["min_masked_sft", "max_masked_rows_frac"], outcomes: &["pass", "pad_scored", "prompt_scored", "all_masked", "skip"], run: label_mask },
    ProbeSpec { id: "pad_token", question: "Is a pad token set, distinct from real content, and are all ids inside the vocabulary?", entries: &["L3"], inputs: &["batch:input_ids", "batch:attention_mask", "batch:labels", "config:pad_token_id", "config:architectures", "fact:vocab_size"], params: &[], outcomes: &["pass", "unset", "out_of_range", "skip"], run: pad_token },
    ProbeSpec { id: "packing_positions", question: "Do packed rows reset position_ids at each document boundary?", entries: &["L4"], inputs: &["batch:input_ids", "batch:position_ids", "fact:packing", "config:eos_token_id", "config:bos_token_id"], params: &[], outcomes: &["pass", "no_reset", "skip"], run: packing_positions },
    ProbeSpec { id: "label_range", question: "Are class labels inside [0, C) with the void value (255) excluded?", entries: &["O14", "V5"], inputs: &["batch:labels", "fact:num_classes"], params: &["void_label"], outcomes: &["pass", "out_of_range", "void_unmasked", "skip"], run: label_range },
    ProbeSpec { id: "input_norm", question: "Are the input images normalised per channel to about mean 0, std 1?", entries: &["V1"], inputs: &["batch:pixel_values"], params: &["max_abs_mean", "std_lo", "std_hi", "raw_max", "unit_range_tol", "raw_255_min"], outcomes: &["pass", "unnormalized", "skip"], run: input_norm },
    ProbeSpec { id: "class_balance", question: "Does one class dominate the labels?", entries: &["V6"], inputs: &["batch:labels"], params: &["majority_frac", "min_labels"], outcomes: &["pass", "imbalanced", "skip"], run: class_balance },
    ProbeSpec { id: "latent_std", question: "Are the diffusion latents ~unit variance (else scale by 1/std)?", entries: &["DF3"], inputs: &["batch:latents", "config:vae.scaling_factor"], params: &["std_lo", "std_hi", "sd_factor", "factor_tol"], outcomes: &["pass", "off_scale", "skip"], run: latent_std },
    ProbeSpec { id: "image_tokens", question: "Does every row carry the expected number of image tokens (none truncated)?", entries: &["X4"], inputs: &["batch:input_ids", "fact:image_token_id", "fact:image_tokens_per_image"], params: &[], outcomes: &["pass", "truncated", "skip"], run: image_tokens },
    ProbeSpec { id: "rope_scaling", question: "Is the training context within max_position_embeddings, or is rope_scaling set with a large enough factor?", entries: &["L5"], inputs: &["config:max_position_embeddings", "config:rope_scaling", "fact:context"], params: &["linear_max_factor"], outcomes: &["pass", "missing", "too_small", "skip"], run: rope_scaling },
    ProbeSpec { id: "diffusion_scheduler", question: "Do the training and inference schedulers agree on beta_schedule, num_train_timesteps and prediction_type?", entries: &["DF4", "DF6"], inputs: &["config:scheduler_config.json (two or more)"], params: &[], outcomes: &["pass", "mismatch", "skip"], run: diffusion_scheduler },
    ProbeSpec { id: "overfit_smoke", question: "Can a small model on the chosen device drive the dumped batch's loss to ~0 (overfit one batch)?", entries: &["O1"], inputs: &["batch:pixel_values", "batch:labels", "device"], params: &["steps", "target_frac", "lr"], outcomes: &["pass", "cannot_overfit", "skip"], run: overfit_smoke },
];
