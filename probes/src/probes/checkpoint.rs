//! Probes over checkpoint artifacts: init weight statistics against fan-in expectations,
//! non-finite weights, update-to-weight ratios, byte-identical tensors, drift of declared-frozen
//! prefixes (frozen but still in the optimizer / still decayed), BatchNorm running-stat drift,
//! EMA weights, VLM tower freeze and projector width, LoRA wiring, head and embedding shapes,
//! weight histograms — and over optimizer state: decay groups, a rebuilt optimizer (and a
//! scheduler that was never stepped), eps against the state dtype, params without state.
//!
//! Tensors are read one at a time (never a whole checkpoint); comparisons use the fused
//! two-tensor pass; on CUDA, statistics are computed on the device.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::config::AdapterConfig;
use crate::device::Compute;
use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::{ArtifactKind, CheckpointDir, Run};
use crate::tensors::pass::Pass;
use crate::tensors::{
    lookup, pass, read_pickled_dict, stats_on_device, DType, DiffStats, OptimizerState, TensorFile,
    TensorInfo, TensorStats, Value,
};

use super::util::{fmt, median};

macro_rules! p {
    ($ctx:expr, $entry:expr, $k:expr) => {
        match $ctx.params.f64($k) {
            Ok(v) => v,
            Err(e) => return vec![Verdict::skip($entry, format!("playbook: {e}"))],
        }
    };
}

// =======================================================================================
// Shared helpers: checkpoints as unions of weight files, name classes, statistics.
// =======================================================================================

/// Tokens of a file or folder name split on anything that is not a letter or digit.
fn tokens(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_ascii_lowercase())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// An EMA copy of the weights, by its file or folder name (`ema.safetensors`, `unet_ema/…`,
/// `model_ema.pt`, `diffusion_pytorch_model.ema.bin`).
fn is_ema_path(p: &Path) -> bool {
    let own = file_name(p);
    let parent = p.parent().map(file_name).unwrap_or_default();
    let hit = tokens(&own)
        .chain(tokens(&parent))
        .any(|t| t == "ema" || t == "shadow");
    hit
}

/// PEFT adapter weights (`adapter_model.safetensors`, `adapter_model.bin`).
fn is_adapter_path(p: &Path) -> bool {
    file_name(p)
        .to_ascii_lowercase()
        .starts_with("adapter_model")
}

fn last_component(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

fn module_of(name: &str) -> &str {
    name.rsplit_once('.').map(|(m, _)| m).unwrap_or("")
}

/// Buffers and other tensors no optimizer updates.
fn is_buffer(name: &str, info: &TensorInfo) -> bool {
    let last = last_component(name);
    matches!(last, "running_mean" | "running_var" | "num_batches_tracked" | "position_ids" | "inv_freq" | "masked_bias" | "token_type_ids")
        || name.contains("relative_position_index")
        // GPT-2's causal-mask buffer `attn.bias` is [1, 1, n, n].
        || (last == "bias" && info.shape.len() == 4 && info.shape[0] == 1 && info.shape[1] == 1)
}

/// A float tensor an optimizer may update.
fn is_trainable(name: &str, info: &TensorInfo) -> bool {
    info.dtype.is_float() && !is_buffer(name, info) && info.numel() > 0
}

fn is_lora(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("lora_") || n.contains(".lora.")
}

fn is_lora_b(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("lora_b") || n.contains("lora_up") || n.contains("lora_embedding_b")
}

fn is_lora_a(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("lora_a") || n.contains("lora_down") || n.contains("lora_embedding_a")
}

/// A normalisation layer's parameter by name (`ln_1`, `layernorm`, `norm`, `bn1`, `gamma`).
fn is_norm_name(name: &str) -> bool {
    name.split('.').any(|c| {
        let c = c.to_ascii_lowercase();
        c.starts_with("ln") || c.contains("norm") || c.starts_with("bn") || c == "gamma"
    })
}

/// Strip wrappers that differ between save paths (`module.` from DDP, `_orig_mod.` from
/// torch.compile) so tensors of two checkpoints can be paired.
fn canonical(name: &str) -> &str {
    let mut n = name;
    loop {
        let before = n;
        for pre in ["module.", "_orig_mod.", "base_model.model."] {
            if let Some(r) = n.strip_prefix(pre) {
                n = r;
            }
        }
        if n == before {
            return n;
        }
    }
}

/// A name under a declared prefix (`backbone` covers `backbone.0.weight`).
fn under(name: &str, prefix: &str) -> bool {
    let p = prefix.trim();
    if p.is_empty() {
        return false;
    }
    let check = |n: &str| {
        if p.ends_with('.') {
            n.starts_with(p)
        } else {
            n == p || n.strip_prefix(p).is_some_and(|r| r.starts_with('.'))
        }
    };
    check(name) || check(canonical(name))
}

/// Natural order: digit runs compare as numbers (`h.2` < `h.10`).
fn natural_key(s: &str) -> Vec<(u8, u64, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut digits = false;
    let flush = |cur: &mut String, digits: bool, out: &mut Vec<(u8, u64, String)>| {
        if cur.is_empty() {
            return;
        }
        if digits {
            out.push((0, cur.parse().unwrap_or(u64::MAX), String::new()));
        } else {
            out.push((1, 0, cur.clone()));
        }
        cur.clear();
    };
    for ch in s.chars() {
        let d = ch.is_ascii_digit();
        if d != digits {
            flush(&mut cur, digits, &mut out);
            digits = d;
        }
        cur.push(ch);
    }
    flush(&mut cur, digits, &mut out);
    out
}

/// A step count: an integer when it is one.
fn fstep(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        fmt(x)
    }
}

fn shape_str(s: &[usize]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Up to `n` items, then `… (+k more)`.
fn list_some(items: &[String], n: usize) -> String {
    let mut s = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n {
        s.push_str(&format!(" … (+{} more)", items.len() - n));
    }
    s
}

/// Statistics of one tensor: the fused CPU pass, or candle ops on the GPU.
fn tstats(tf: &TensorFile, name: &str, compute: &Compute) -> Result<TensorStats, String> {
    if compute.is_cuda() {
        let t = tf.load(name, &compute.device).map_err(|e| e.to_string())?;
        return stats_on_device(&t).map_err(|e| format!("{}: {name}: {e}", tf.path().display()));
    }
    tf.stats(name).map_err(|e| e.to_string())
}

/// One checkpoint's model weights: the union of its weight files (shards without an index,
/// diffusers sub-folders), EMA copies and PEFT adapters left out unless they are all there is.
struct Model {
    step: u64,
    /// False for a lone model folder whose step nothing states (`step` is then a placeholder).
    step_known: bool,
    files: Vec<TensorFile>,
    /// Tensor names in file order with the file holding each.
    names: Vec<(String, usize)>,
    index: HashMap<String, usize>,
    canon: HashMap<String, usize>,
}

impl Model {
    fn open(c: &CheckpointDir) -> Result<Model, String> {
        let main: Vec<&PathBuf> = c
            .weights
            .iter()
            .filter(|p| !is_ema_path(p) && !is_adapter_path(p))
            .collect();
        let list: Vec<&PathBuf> = if main.is_empty() {
            c.weights.iter().collect()
        } else {
            main
        };
        let mut m = Self::open_paths(&list, c.step)?;
        m.step_known = !c.step_unknown;
        Ok(m)
    }

    fn open_paths(paths: &[&PathBuf], step: u64) -> Result<Model, String> {
        let mut m = Model {
            step,
            step_known: true,
            files: Vec::new(),
            names: Vec::new(),
            index: HashMap::new(),
            canon: HashMap::new(),
        };
        let mut errors = Vec::new();
        for p in paths {
            match TensorFile::open(p) {
                Ok(tf) => {
                    // The same weights in a second format (model.safetensors + pytorch_model.bin).
                    let fresh = tf
                        .tensors()
                        .iter()
                        .filter(|t| !m.canon.contains_key(canonical(&t.name)))
                        .count();
                    if fresh == 0 && !m.files.is_empty() {
                        continue;
                    }
                    let fi = m.files.len();
                    for t in tf.tensors() {
                        if m.index.contains_key(&t.name) {
                            continue;
                        }
                        let pos = m.names.len();
                        m.index.insert(t.name.clone(), pos);
                        m.canon.entry(canonical(&t.name).to_string()).or_insert(pos);
                        m.names.push((t.name.clone(), fi));
                    }
                    m.files.push(tf);
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        if m.files.is_empty() {
            return Err(if errors.is_empty() {
                "no weight files".into()
            } else {
                errors.join("; ")
            });
        }
        Ok(m)
    }

    fn path(&self) -> &Path {
        self.files[0].path()
    }

    fn ev(&self) -> Evidence {
        let e = Evidence::file(self.path());
        if self.step_known {
            e.steps(self.step, self.step)
        } else {
            e
        }
    }

    /// `step N`, or `an unknown step` for a lone model folder.
    fn at(&self) -> String {
        if self.step_known {
            format!("step {}", self.step)
        } else {
            "an unknown step".to_string()
        }
    }

    fn file(&self, name: &str) -> Option<&TensorFile> {
        self.index.get(name).map(|&i| &self.files[self.names[i].1])
    }

    fn info(&self, name: &str) -> Option<&TensorInfo> {
        self.file(name)?.get(name)
    }

    /// Every tensor with its info, in file order.
    fn infos(&self) -> impl Iterator<Item = (&str, &TensorInfo)> {
        self.names
            .iter()
            .filter_map(|(n, fi)| self.files[*fi].get(n).map(|i| (n.as_str(), i)))
    }

    /// This model's name for a tensor named `name` in another checkpoint.
    fn find(&self, name: &str) -> Option<&str> {
        if self.index.contains_key(name) {
            return Some(self.names[self.index[name]].0.as_str());
        }
        self.canon
            .get(canonical(name))
            .map(|&i| self.names[i].0.as_str())
    }

    /// From the tensor pass (read once per process), or on the GPU with candle.
    fn stats(&self, name: &str, compute: &Compute) -> Result<TensorStats, String> {
        let f = self
            .file(name)
            .ok_or_else(|| format!("no tensor {name:?}"))?;
        if compute.is_cuda() {
            return tstats(f, name, compute);
        }
        pass::stats(f, name).map_err(|e| e.to_string())
    }

    /// Compares `name` here (the earlier weights) with `other_name` in `other`.
    fn diff(&self, name: &str, other: &Model, other_name: &str) -> Result<DiffStats, String> {
        let a = self
            .file(name)
            .ok_or_else(|| format!("no tensor {name:?}"))?;
        let b = other
            .file(other_name)
            .ok_or_else(|| format!("no tensor {other_name:?}"))?;
        pass::diff(a, name, b, other_name).map_err(|e| e.to_string())
    }

    fn has_lora(&self) -> bool {
        self.names.iter().any(|(n, _)| is_lora(n))
    }
}

/// Plans and runs the tensor pass of a whole check: every figure the checkpoint probes ask for
/// in the usual case, read in one go — statistics of every tensor of the first, the init and
/// the newest checkpoints, and how each tensor moved between consecutive checkpoints among the
/// last four — so each checkpoint file is read once. Anything else a probe asks is read then.
pub fn prefetch(run: &Run, compute: &Compute) {
    let cks = weight_ckpts(run);
    let Some(last) = cks.len().checked_sub(1) else {
        return;
    };
    let start = cks.len().saturating_sub(4);
    let init = cks.iter().position(|c| is_init_ckpt(c)).unwrap_or(0);
    let mut models: Vec<(usize, Model)> = Vec::new();
    for i in 0..cks.len() {
        if i == 0 || i == init || i >= start {
            if let Ok(m) = Model::open(cks[i]) {
                models.push((i, m));
            }
        }
    }
    let mut plan = Pass::new();
    if !compute.is_cuda() {
        for (i, m) in &models {
            if *i == 0 || *i == init || *i == last {
                for (name, _) in m.infos() {
                    if let Some(f) = m.file(name) {
                        plan.stats(f, name);
                    }
                }
            }
        }
    }
    for w in models.windows(2) {
        let ((ia, a), (ib, b)) = (&w[0], &w[1]);
        if *ia < start || *ib != ia + 1 {
            continue;
        }
        for (name, _) in b.infos() {
            if let (Some(an), Some(fb)) = (a.find(name), b.file(name)) {
                if let Some(fa) = a.file(an) {
                    plan.diff(fa, an, fb, name);
                }
            }
        }
    }
    plan.run();
}

/// Checkpoints with weights, ordered by step, one per step (a checkpoint folder wins over the
/// final export of the same step). A final model whose step is unknown is not merged into a
/// step-0 init.
fn weight_ckpts(run: &Run) -> Vec<&CheckpointDir> {
    let mut out: Vec<&CheckpointDir> = Vec::new();
    for c in run.checkpoints.iter().filter(|c| !c.weights.is_empty()) {
        if out
            .last()
            .is_some_and(|l| l.step == c.step && l.step_unknown == c.step_unknown)
        {
            continue;
        }
        out.push(c);
    }
    out
}

/// The last two checkpoints (earlier, later), opened.
fn last_two(run: &Run, entry: &str) -> Result<(Model, Model), Vec<Verdict>> {
    let cks = weight_ckpts(run);
    if cks.len() < 2 {
        return Err(vec![Verdict::skip(
            entry,
            format!(
                "needs two checkpoints with weights at different steps; found {}",
                cks.len()
            ),
        )]);
    }
    let (a, b) = (cks[cks.len() - 2], cks[cks.len() - 1]);
    let ma = Model::open(a).map_err(|e| {
        vec![Verdict::skip(
            entry,
            format!("cannot read checkpoint {}: {e}", a.path.display()),
        )]
    })?;
    let mb = Model::open(b).map_err(|e| {
        vec![Verdict::skip(
            entry,
            format!("cannot read checkpoint {}: {e}", b.path.display()),
        )]
    })?;
    Ok((ma, mb))
}

fn newest_model(run: &Run, entry: &str) -> Result<Model, Vec<Verdict>> {
    let cks = weight_ckpts(run);
    let Some(c) = cks.last() else {
        return Err(vec![Verdict::skip(
            entry,
            "no checkpoint weights in the run",
        )]);
    };
    Model::open(c).map_err(|e| {
        vec![Verdict::skip(
            entry,
            format!("cannot read checkpoint {}: {e}", c.path.display()),
        )]
    })
}

/// `‖b − a‖ / ‖a‖`, with a zero `a` counting as moved when anything changed.
fn rel_change(d: &DiffStats) -> f64 {
    if d.identical_bytes || d.norm_diff == 0.0 {
        0.0
    } else if d.norm_a > 0.0 {
        d.norm_diff / d.norm_a
    } else {
        f64::INFINITY
    }
}

/// How tensors moved between two checkpoints.
struct Movement {
    name: String,
    shape: Vec<usize>,
    diff: DiffStats,
    rel: f64,
}

/// Compares every tensor of `b` accepted by `keep` with its counterpart in `a`.
fn movements(
    a: &Model,
    b: &Model,
    keep: impl Fn(&str, &TensorInfo) -> bool,
) -> (Vec<Movement>, Vec<String>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (name, info) in b.infos() {
        if !keep(name, info) {
            continue;
        }
        let Some(an) = a.find(name) else { continue };
        match a.diff(an, b, name) {
            Ok(d) => {
                let rel = rel_change(&d);
                out.push(Movement {
                    name: name.to_string(),
                    shape: info.shape.clone(),
                    diff: d,
                    rel,
                });
            }
            Err(e) => errors.push(e),
        }
    }
    (out, errors)
}

fn step_ev(a: &Model, b: &Model) -> Evidence {
    let e = Evidence::file(b.path());
    if a.step_known && b.step_known {
        e.steps(a.step, b.step)
    } else {
        e
    }
}

/// The run's initial weights: `checkpoint-0`, an explicit step 0, or named as the init — never a
/// lone model folder whose step is unknown.
fn is_init_ckpt(c: &CheckpointDir) -> bool {
    c.is_init || (c.step == 0 && !c.step_unknown)
}

/// The newest optimizer state of the run (an `optimizer.pt`, else a Lightning `.ckpt`), with
/// the checkpoint it belongs to.
fn newest_optimizer<'a>(
    run: &'a Run,
    entry: &str,
) -> Result<(OptimizerState, Option<&'a CheckpointDir>), Vec<Verdict>> {
    let mut errors = Vec::new();
    for c in run.checkpoints.iter().rev() {
        if let Some(p) = &c.optimizer {
            match OptimizerState::read(p) {
                Ok(o) => return Ok((o, Some(c))),
                Err(e) => errors.push(e.to_string()),
            }
        }
    }
    for a in run.of_kind(ArtifactKind::Optimizer).iter().rev() {
        if let Ok(o) = OptimizerState::read(&a.path) {
            return Ok((o, None));
        }
    }
    // Lightning keeps the optimizer inside the .ckpt.
    for c in run.checkpoints.iter().rev() {
        for w in c.weights.iter().filter(|w| file_name(w).ends_with(".ckpt")) {
            if let Ok(o) = OptimizerState::read(w) {
                return Ok((o, Some(c)));
            }
        }
    }
    Err(vec![Verdict::skip(
        entry,
        if errors.is_empty() {
            "no optimizer state (optimizer.pt) in the run".to_string()
        } else {
            format!("optimizer state unreadable: {}", errors.join("; "))
        },
    )])
}

/// The model weights that go with an optimizer state: the same checkpoint's, else the newest.
fn model_for(run: &Run, c: Option<&CheckpointDir>) -> Option<Model> {
    if let Some(c) = c.filter(|c| !c.weights.is_empty()) {
        if let Ok(m) = Model::open(c) {
            return Some(m);
        }
    }
    weight_ckpts(run).last().and_then(|c| Model::open(c).ok())
}

/// Optimizer parameter index → tensor name, where it is unambiguous: `param_names` in the
/// groups; else a torch state dict whose trainable tensors, in order, match the state shapes
/// index by index; else a shape that occurs once on both sides.
fn param_names(opt: &OptimizerState, model: Option<&Model>) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    for g in &opt.groups {
        if let Some(names) = &g.param_names {
            if names.len() == g.params.len() {
                for (id, n) in g.params.iter().zip(names) {
                    out.insert(*id, n.clone());
                }
            }
        }
    }
    let Some(m) = model else { return out };
    let all_ids: Vec<u64> = opt
        .groups
        .iter()
        .flat_map(|g| g.params.iter().copied())
        .collect();
    let trainable: Vec<(&str, &TensorInfo)> =
        m.infos().filter(|(n, i)| is_trainable(n, i)).collect();
    let torch_order = m.files.len() == 1 && m.files[0].kind() == crate::tensors::FileKind::TorchZip;
    if torch_order && trainable.len() == all_ids.len() {
        let mut sorted = all_ids.clone();
        sorted.sort_unstable();
        let dense = sorted.iter().enumerate().all(|(i, id)| *id == i as u64);
        let shapes_match = opt.state.values().all(|s| {
            s.shape.is_empty()
                || trainable
                    .get(s.id as usize)
                    .is_some_and(|(_, i)| i.shape == s.shape)
        });
        let any_state = opt.state.values().any(|s| !s.shape.is_empty());
        if dense && shapes_match && any_state {
            for id in sorted {
                out.entry(id)
                    .or_insert_with(|| trainable[id as usize].0.to_string());
            }
            return out;
        }
    }
    let mut by_shape: HashMap<&[usize], Vec<&str>> = HashMap::new();
    for (n, i) in &trainable {
        by_shape.entry(i.shape.as_slice()).or_default().push(n);
    }
    let mut state_by_shape: HashMap<&[usize], Vec<u64>> = HashMap::new();
    for s in opt.state.values().filter(|s| !s.shape.is_empty()) {
        state_by_shape
            .entry(s.shape.as_slice())
            .or_default()
            .push(s.id);
    }
    for (shape, ids) in state_by_shape {
        if let (Some(names), [id]) = (by_shape.get(shape), ids.as_slice()) {
            if names.len() == 1 {
                out.entry(*id).or_insert_with(|| names[0].to_string());
            }
        }
    }
    out
}

fn describe_param(id: u64, names: &HashMap<u64, String>, opt: &OptimizerState) -> String {
    match names.get(&id) {
        Some(n) => n.clone(),
        None => match opt.state.get(&id).filter(|s| !s.shape.is_empty()) {
            Some(s) => format!("param #{id} {}", shape_str(&s.shape)),
            None => format!("param #{id}"),
        },
    }
}

fn opt_ev(opt: &OptimizerState, c: Option<&CheckpointDir>) -> Evidence {
    let e = Evidence::file(&opt.path);
    match c {
        Some(c) => e.steps(c.step, c.step),
        None => e,
    }
}

fn max_state_step(opt: &OptimizerState) -> Option<f64> {
    opt.state
        .values()
        .filter_map(|s| s.step)
        .filter(|s| s.is_finite())
        .reduce(f64::max)
}

// =======================================================================================
// S5.1 — init weight statistics
// =======================================================================================

/// Expected init stds for a weight of this shape: `floor` (0.02, the transformers convention),
/// PyTorch's default kaiming_uniform(a=√5) (1/√(3·fan_in)), LeCun √(1/fan_in), Kaiming
/// √(2/fan_in), Xavier √(2/(fan_in+fan_out)) — over both fan-in conventions of a 2-D weight
/// (nn.Linear (out, in), GPT-2 Conv1D (in, out)).
/// Returns (largest expectation, largest Kaiming).
fn expected_std(shape: &[usize], floor: f64) -> Option<(f64, f64)> {
    if shape.len() < 2 {
        return None;
    }
    let fans: Vec<(f64, f64)> = if shape.len() == 2 {
        vec![
            (shape[1] as f64, shape[0] as f64),
            (shape[0] as f64, shape[1] as f64),
        ]
    } else {
        let rf: f64 = shape[2..].iter().map(|&d| d as f64).product();
        vec![(shape[1] as f64 * rf, shape[0] as f64 * rf)]
    };
    let mut best = floor;
    let mut kaiming = 0.0f64;
    for (fi, fo) in fans {
        if fi < 1.0 {
            continue;
        }
        let k = (2.0 / fi).sqrt();
        kaiming = kaiming.max(k);
        for e in [
            1.0 / (3.0 * fi).sqrt(),
            (1.0 / fi).sqrt(),
            k,
            (2.0 / (fi + fo)).sqrt(),
        ] {
            best = best.max(e);
        }
    }
    (kaiming > 0.0).then_some((best, kaiming))
}

/// An embedding-like tensor. These follow their own init conventions — 0.02 (GPT, BERT, ViT),
/// N(0,1) (nn.Embedding's default, torch.randn position/cls tokens in many ViTs), d^-0.5, fixed
/// sin-cos tables — not fan-in ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EmbedKind {
    /// A token lookup table [V, d] (what a tied output head shares).
    Token,
    /// Positions, token types, cls / dist / mask / register tokens.
    Other,
}

/// Module names of output heads (never an embedding, even when shaped like one).
const HEAD_MODULES: &[&str] = &[
    "lm_head",
    "output",
    "embed_out",
    "head",
    "classifier",
    "score",
    "proj_out",
    "decoder",
];

/// What kind of embedding `name` is, from its name (`wte`, `wpe`, `embed_tokens`,
/// `word_embeddings`, `position_embeddings`, `tok_embeddings`, `embed_positions`, `shared`,
/// `pos_embed`, `cls_token`, `register_tokens` …) and shape; a 2-D `weight` with `vocab` rows
/// counts as a token table too. Projections inside embedding blocks (`patch_embed.proj`,
/// `time_emb_proj`) are weight matrices, not embeddings.
fn embedding_kind(name: &str, shape: &[usize], vocab: Option<u64>) -> Option<EmbedKind> {
    if shape.is_empty() {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split('.').collect();
    let last = *parts.last()?;
    let positional = |s: &str| {
        s.contains("pos") || s == "wpe" || s.contains("token_type") || s.contains("segment")
    };
    let embed_word = |s: &str| s.contains("emb") || matches!(s, "wte" | "wpe" | "shared");
    let layer_word = |s: &str| {
        [
            "proj", "linear", "fc", "mlp", "conv", "norm", "dense", "head",
        ]
        .iter()
        .any(|w| s.contains(w))
    };
    let vocab_rows = shape.len() == 2 && vocab.is_some_and(|v| v == shape[0] as u64);
    // A parameter that is the tensor itself: `pos_embed`, `cls_token`, `register_tokens`.
    if last != "weight" && last != "bias" {
        let token_param = last.ends_with("_token") || last.ends_with("_tokens");
        if (embed_word(last) || token_param) && !layer_word(last) {
            return Some(if vocab_rows && !positional(last) {
                EmbedKind::Token
            } else {
                EmbedKind::Other
            });
        }
        return None;
    }
    if last != "weight" || shape.len() != 2 || parts.len() < 2 {
        return None;
    }
    let owner = parts[parts.len() - 2];
    if HEAD_MODULES.contains(&owner) || layer_word(owner) {
        return None;
    }
    if embed_word(owner) {
        return Some(if positional(owner) {
            EmbedKind::Other
        } else {
            EmbedKind::Token
        });
    }
    vocab_rows.then_some(EmbedKind::Token)
}

/// The output head saved as a byte-identical copy of the token table `name` (a tied head that
/// the save kept under both names), if any.
fn tied_head_copy(m: &Model, name: &str, info: &TensorInfo) -> Option<String> {
    m.infos()
        .filter(|(n, i)| {
            *n != name
                && last_component(n) == "weight"
                && HEAD_MODULES.contains(&last_component(module_of(n)))
                && i.shape == info.shape
        })
        .find(|(hn, _)| {
            // Byte-identical tensors have identical statistics (already read): compare bytes
            // only when those agree.
            let f = |n: &str| m.file(n).and_then(|f| pass::stats(f, n).ok());
            let same = match (f(name), f(hn)) {
                (Some(x), Some(y)) => x.count == y.count && x.hist == y.hist && x.l2 == y.l2,
                _ => true,
            };
            same && m.diff(name, m, hn).is_ok_and(|d| d.identical_bytes)
        })
        .map(|(hn, _)| hn.to_string())
}

/// The BatchNorm / LayerNorm gain of a module: a 1-D `weight` next to running stats, or named
/// like a norm layer.
fn is_norm_gain(name: &str, info: &TensorInfo, m: &Model) -> bool {
    if info.shape.len() != 1 || !info.dtype.is_float() {
        return false;
    }
    let last = last_component(name);
    if !(last == "weight" || last == "gamma" || last == "scale") {
        return false;
    }
    let module = module_of(name);
    let bn_sibling = m.index.contains_key(&format!("{module}.running_var"));
    bn_sibling || is_norm_name(module)
}

/// Where a fact came from, for messages: `--fact`, or the file.
fn fact_origin(ctx: &ProbeCtx, key: &str) -> String {
    match ctx.facts.fact(key).map(|f| &f.source) {
        Some(crate::facts::FactSource::Artifact(file)) => format!("from {file}"),
        _ => "--fact".to_string(),
    }
}

/// Signs outside the weights that the first checkpoint holds pretrained weights: config.json's
/// `_name_or_path` (set by from_pretrained), LoRA tensors (an adapter trains on a pretrained base).
fn pretrained_hints(ctx: &ProbeCtx, c: &CheckpointDir, m: &Model) -> Vec<String> {
    let mut out = Vec::new();
    let cfg = c
        .config
        .as_ref()
        .and_then(|p| {
            crate::config::ModelConfig::read(p)
                .ok()
                .map(|c| (p.clone(), c))
        })
        .or_else(|| ctx.run.model_config());
    if let Some((path, cfg)) = cfg {
        if let Some(n) = cfg
            .raw
            .get("_name_or_path")
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            out.push(format!(
                "{} has _name_or_path {n:?} (the model was loaded with from_pretrained)",
                file_name(&path)
            ));
        }
    }
    if m.has_lora() {
        out.push("the weights hold LoRA tensors (an adapter trains on a pretrained base)".into());
    }
    out
}

pub fn init_weight_stats(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "S5.1";
    let (max_ratio, mean_abs, mean_sigmas, gain_tol) = (
        p!(ctx, E, "max_ratio"),
        p!(ctx, E, "mean_abs"),
        p!(ctx, E, "mean_sigmas"),
        p!(ctx, E, "norm_gain_tol"),
    );
    let (floor, embed_max, off_min, off_frac, pre_std, pre_frac) = (
        p!(ctx, E, "std_floor"),
        p!(ctx, E, "embed_max_std"),
        p!(ctx, E, "off_center_fail_min"),
        p!(ctx, E, "off_center_fail_frac"),
        p!(ctx, E, "pretrained_gain_std"),
        p!(ctx, E, "pretrained_gain_frac"),
    );
    let scratch = ctx.facts.bool("from_scratch");
    if scratch == Some(false) {
        return vec![Verdict::skip(
            E,
            format!(
                "from_scratch=false ({}): the first weights are pretrained, not an init",
                fact_origin(ctx, "from_scratch")
            ),
        )];
    }
    let cks = weight_ckpts(ctx.run);
    let Some(c) = cks
        .iter()
        .find(|c| is_init_ckpt(c))
        .or(cks.first())
        .copied()
    else {
        return vec![Verdict::skip(E, "no checkpoint weights in the run")];
    };
    let true_init = is_init_ckpt(c);
    let m = match Model::open(c) {
        Ok(m) => m,
        Err(e) => {
            return vec![Verdict::skip(
                E,
                format!("cannot read {}: {e}", c.path.display()),
            )]
        }
    };
    let which = if true_init {
        format!("step-{} weights", m.step)
    } else if m.step_known {
        format!("earliest weights (step {}; no step-0 checkpoint)", m.step)
    } else {
        "weights (a model folder with no step and no init checkpoint)".to_string()
    };
    let mut errors = Vec::new();
    // Norm gains first (small): a fresh init sets every gain to one constant (1, or 0 for
    // zero-initialised residual gains); gains that vary were trained — pretrained weights.
    let mut gains: Vec<String> = Vec::new();
    let (mut gain_total, mut gain_varied) = (0usize, 0usize);
    for (name, info) in m.infos() {
        if !is_trainable(name, info) || !is_norm_gain(name, info, &m) {
            continue;
        }
        match m.stats(name, ctx.compute) {
            Ok(s) if s.finite > 0 => {
                gain_total += 1;
                if s.std > pre_std {
                    gain_varied += 1;
                }
                if (s.mean - 1.0).abs() > gain_tol {
                    gains.push(format!("{name} mean {}", fmt(s.mean)));
                }
            }
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    if scratch != Some(true) {
        let hints = pretrained_hints(ctx, c, &m);
        let hint_text = if hints.is_empty() {
            String::new()
        } else {
            format!("; also {}", hints.join("; "))
        };
        if gain_varied > 0 && gain_varied as f64 >= pre_frac * gain_total as f64 {
            return vec![Verdict::skip(
                E,
                format!(
                    "the {which} look trained, not initialised: {gain_varied} of {gain_total} norm gains vary (std > {pre_std}) where a fresh init sets each gain to a constant{hint_text} — init statistics only apply to a from-scratch init (pass --fact from_scratch=true to judge them anyway)"
                ),
            )];
        }
        if gain_total == 0 && !hints.is_empty() {
            return vec![Verdict::skip(
                E,
                format!(
                    "the {which} are probably pretrained, not an init: {} (no norm gains to confirm from the weights) — pass --fact from_scratch=true to judge them as an init",
                    hints.join("; ")
                ),
            )];
        }
    }
    struct Big {
        name: String,
        std: f64,
        ratio: f64,
        /// (Kaiming expectation) for a weight matrix; None for an embedding.
        kaiming: Option<f64>,
    }
    let mut big: Vec<Big> = Vec::new();
    let mut off: Vec<String> = Vec::new();
    // N(0,1)-like embeddings: tied to the output head (warn), or not (noted).
    let mut unit_tied: Vec<String> = Vec::new();
    let mut unit_free: Vec<String> = Vec::new();
    let mut sincos: Vec<String> = Vec::new();
    let mut checked = 0usize;
    let mut embeds = 0usize;
    let mut worst_ratio = 0.0f64;
    let vocab = ctx.facts.u64("vocab_size");
    // Token tables tied to the output head: the config fact, else a head saved as a
    // byte-identical copy (judged once, as the embedding).
    let tie_fact = ctx.facts.bool("tie_word_embeddings");
    let mut head_copies: HashMap<String, String> = HashMap::new();
    for (name, info) in m.infos() {
        if tie_fact != Some(false)
            && is_trainable(name, info)
            && embedding_kind(name, &info.shape, vocab) == Some(EmbedKind::Token)
        {
            if let Some(h) = tied_head_copy(&m, name, info) {
                head_copies.insert(h, name.to_string());
            }
        }
    }
    let tied = |name: &str| tie_fact.unwrap_or_else(|| head_copies.values().any(|e| e == name));
    for (name, info) in m.infos() {
        if !is_trainable(name, info) || is_lora_b(name) || head_copies.contains_key(name) {
            continue;
        }
        let embed = embedding_kind(name, &info.shape, vocab);
        let weight_like = info.shape.len() >= 2 && !is_norm_name(module_of(name));
        if embed.is_none() && !weight_like {
            continue;
        }
        let s = match m.stats(name, ctx.compute) {
            Ok(s) => s,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if s.finite == 0 {
            continue;
        }
        if let Some(kind) = embed {
            embeds += 1;
            let d = info.shape.last().copied().unwrap_or(1).max(1) as f64;
            let exp = floor.max(1.0 / d.sqrt());
            // Within the usual conventions: go on to the centring check.
            if s.std > max_ratio * exp {
                if s.absmax <= 1.0 + 1e-6 {
                    // Bounded by 1 with a large spread: a fixed sin-cos table (std ≈ 0.7).
                    sincos.push(format!("{name} std {}", fmt(s.std)));
                } else if s.std <= embed_max {
                    let item = format!("{name} std {}", fmt(s.std));
                    if kind == EmbedKind::Token && tied(name) {
                        unit_tied.push(item);
                    } else {
                        unit_free.push(item);
                    }
                } else {
                    big.push(Big {
                        name: name.to_string(),
                        std: s.std,
                        ratio: s.std / exp,
                        kaiming: None,
                    });
                }
                continue;
            }
        } else {
            let Some((exp_max, kaiming)) = expected_std(&info.shape, floor) else {
                continue;
            };
            checked += 1;
            let ratio = s.std / exp_max;
            worst_ratio = worst_ratio.max(ratio);
            if s.std > max_ratio * exp_max {
                big.push(Big {
                    name: name.to_string(),
                    std: s.std,
                    ratio,
                    kaiming: Some(kaiming),
                });
            }
        }
        let se = s.std / (s.finite as f64).sqrt();
        if s.mean.abs() > mean_abs && s.mean.abs() > mean_sigmas * se {
            off.push(format!(
                "{name} mean {} ({:.1} s.e.)",
                fmt(s.mean),
                s.mean.abs() / se.max(f64::MIN_POSITIVE)
            ));
        }
    }
    if checked == 0 && embeds == 0 && gains.is_empty() {
        let why = if errors.is_empty() {
            "no weight matrix (≥ 2-D float tensor) in the checkpoint".to_string()
        } else {
            format!("unreadable tensors: {}", list_some(&errors, 2))
        };
        return vec![Verdict::skip(E, why)];
    }
    big.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    let where_ = if true_init {
        format!("init weights (step {})", c.step)
    } else if m.step_known {
        format!(
            "earliest checkpoint (step {}) — no step-0 checkpoint",
            c.step
        )
    } else {
        "model folder at an unknown step — no init checkpoint".to_string()
    };
    // Notes on embeddings that are not findings by themselves.
    let mut notes = Vec::new();
    if !unit_free.is_empty() && big.is_empty() {
        notes.push(format!("N(0,1)-scale embeddings (nn.Embedding's / torch.randn's default; harmless unless tied to the output head): {}", list_some(&unit_free, 2)));
    }
    if !sincos.is_empty() {
        notes.push(format!(
            "fixed sin-cos tables (bounded by 1): {}",
            list_some(&sincos, 2)
        ));
    }
    let mut v;
    if !big.is_empty() {
        let st = if true_init {
            Status::Fail
        } else {
            Status::Warn
        };
        let worst: Vec<String> = big
            .iter()
            .map(|b| match b.kaiming {
                Some(k) => format!(
                    "{} std {} = {:.1}× Kaiming √(2/fan_in) {}, {:.0}× {floor}",
                    b.name,
                    fmt(b.std),
                    b.std / k,
                    fmt(k),
                    b.std / floor
                ),
                None => format!(
                    "{} std {} (embedding: above {embed_max}, past even an N(0,1) init)",
                    b.name,
                    fmt(b.std)
                ),
            })
            .collect();
        let matrices = big.iter().filter(|b| b.kaiming.is_some()).count();
        let mut msg = if matrices > 0 {
            format!(
                "{matrices} of {checked} weight matrices are initialised far too large: {}",
                list_some(&worst, 3)
            )
        } else {
            format!(
                "embeddings are initialised far too large: {}",
                list_some(&worst, 3)
            )
        };
        msg.push_str(&format!(". Expect std ≈ {floor} (transformers) or ≈ √(1/fan_in)…√(2/fan_in); a std near 1 on a weight matrix is an N(0,1) init (torch.randn) — apply the model's init (e.g. post_init / _init_weights) before training"));
        let mut emb: Vec<String> = unit_tied.clone();
        emb.extend(unit_free.iter().cloned());
        if matrices > 0 && !emb.is_empty() {
            msg.push_str(&format!("; embeddings too: {}", list_some(&emb, 2)));
        }
        if !true_init {
            msg.push_str(&format!(
                " (measured at {}, not at init: training may have grown them)",
                m.at()
            ));
        }
        v = Verdict::new(E, st, "too_large")
            .message(msg)
            .measured(format!(
                "worst std {} = {:.1}× the largest expectation ({where_})",
                fmt(big[0].std),
                big[0].ratio
            ));
        for b in big.iter().take(3) {
            v = v.evidence(m.ev().tensor(&b.name).note(format!("std {}", fmt(b.std))));
        }
        v = v
            .value("too_large", big.len() as f64)
            .value("worst_std", big[0].std);
    } else if !off.is_empty() {
        let many = off.len() as f64 >= off_min && off.len() as f64 >= off_frac * checked as f64;
        let st = if many && true_init {
            Status::Fail
        } else {
            Status::Warn
        };
        v = Verdict::new(E, st, "off_center")
            .measured(format!("{} of {checked} weight matrices have a non-zero mean ({where_})", off.len()))
            .message(format!("weights should start centred on 0: {} — a uniform(0, a) init or a constant offset biases every unit the same way", list_some(&off, 3)));
        v = v.evidence(m.ev()).value("off_center", off.len() as f64);
    } else if !unit_tied.is_empty() {
        v = Verdict::new(E, Status::Warn, "too_large")
            .measured(format!("{} token embedding(s) at N(0,1) scale, tied to the output head ({where_})", unit_tied.len()))
            .message(format!("{} — nn.Embedding's default N(0,1) init is a known PyTorch default and fine for an input table, but tied to the output head it makes the first logits ~√d× too large (init loss far above ln V); init it with std {floor} (as transformers' _init_weights does) or untie the head", list_some(&unit_tied, 2)))
            .evidence(m.ev());
    } else if !gains.is_empty() {
        v = Verdict::new(E, Status::Warn, "off_center")
            .measured(format!("{} norm gain(s) away from 1 ({where_})", gains.len()))
            .message(format!("LayerNorm/BatchNorm gains start at 1: {} (zero-initialised residual gains are a deliberate exception)", list_some(&gains, 3)))
            .evidence(m.ev());
    } else {
        v = Verdict::new(E, Status::Pass, "pass")
            .measured(format!("{checked} weight matrices and {embeds} embedding tensor(s), largest std/expectation {:.2} ({where_})", worst_ratio))
            .message(format!("init scales match the {floor} / Kaiming / Xavier expectations for their fan-in and are centred"))
            .evidence(m.ev());
    }
    if !notes.is_empty() {
        v.message.push_str(&format!(" [{}]", notes.join("; ")));
    }
    if !errors.is_empty() {
        v.message
            .push_str(&format!(" [unreadable: {}]", list_some(&errors, 2)));
    }
    vec![v
        .expected(format!("weight matrices: std ≤ {max_ratio}× max({floor}, 1/√(3·fan_in), √(1/fan_in), √(2/fan_in), √(2/(fan_in+fan_out))), |mean| ≤ {mean_abs} or ≤ {mean_sigmas} s.e.; embeddings: std ≤ {max_ratio}× max({floor}, 1/√d), N(0,1) scale (≤ {embed_max}) tolerated unless tied to the head; norm gains 1 ± {gain_tol}"))
        .value("checked", checked as f64)
        .value("embeddings", embeds as f64)
        .value("worst_ratio", worst_ratio)]
}

// =======================================================================================
// L6 — non-finite weights
// =======================================================================================

fn nonfinite_in(
    m: &Model,
    compute: &Compute,
    only: Option<&HashSet<String>>,
) -> (Vec<(String, u64, u64)>, Vec<String>) {
    let mut bad = Vec::new();
    let mut errors = Vec::new();
    for (name, info) in m.infos() {
        if !info.dtype.is_float() || only.is_some_and(|o| !o.contains(canonical(name))) {
            continue;
        }
        match m.stats(name, compute) {
            Ok(s) if s.nan + s.inf > 0 => bad.push((name.to_string(), s.nan, s.inf)),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    (bad, errors)
}

pub fn nonfinite_weights(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "L6";
    let max_bad = p!(ctx, E, "max_nonfinite");
    let cks = weight_ckpts(ctx.run);
    let Some(newest) = cks.last() else {
        return vec![Verdict::skip(E, "no checkpoint weights in the run")];
    };
    let m = match Model::open(newest) {
        Ok(m) => m,
        Err(e) => {
            return vec![Verdict::skip(
                E,
                format!("cannot read {}: {e}", newest.path.display()),
            )]
        }
    };
    let (mut bad, mut errors) = nonfinite_in(&m, ctx.compute, None);
    let mut checked = vec![m.step];
    // The init (first) checkpoint too, when it is another one.
    let mut first_bad: Option<u64> = (!bad.is_empty()).then_some(m.step);
    if let Some(first) = cks.first().filter(|c| c.step != newest.step) {
        if let Ok(f) = Model::open(first) {
            let (b0, e0) = nonfinite_in(&f, ctx.compute, None);
            checked.push(f.step);
            errors.extend(e0);
            if !b0.is_empty() {
                first_bad = Some(f.step);
                for x in b0 {
                    if !bad.iter().any(|(n, _, _)| canonical(n) == canonical(&x.0)) {
                        bad.push(x);
                    }
                }
            }
        }
    }
    // Where it started: the earliest checkpoint whose named tensors hold NaN/Inf.
    if first_bad == Some(m.step) && cks.len() > 2 {
        let names: HashSet<String> = bad
            .iter()
            .map(|(n, _, _)| canonical(n).to_string())
            .collect();
        for c in &cks[1..cks.len() - 1] {
            if let Ok(mm) = Model::open(c) {
                let (b, _) = nonfinite_in(&mm, ctx.compute, Some(&names));
                if !b.is_empty() {
                    first_bad = Some(c.step);
                    break;
                }
            }
        }
    }
    let total: u64 = bad.iter().map(|(_, n, i)| n + i).sum();
    let steps = checked
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut v = if total as f64 > max_bad {
        let names: Vec<String> = bad
            .iter()
            .map(|(n, nan, inf)| format!("{n} ({nan} NaN, {inf} Inf)"))
            .collect();
        let mut v = Verdict::new(E, Status::Fail, "nonfinite")
            .measured(format!("{total} non-finite values in {} tensor(s)", bad.len()))
            .message(format!(
                "the weights hold NaN/Inf: {}{} — training diverged (loss spike → overflow); resume from an earlier checkpoint with a lower LR, gradient clipping, bf16 instead of fp16, or z-loss on the logits",
                list_some(&names, 4),
                first_bad.map(|s| format!("; first seen at step {s}")).unwrap_or_default()
            ));
        for (n, _, _) in bad.iter().take(3) {
            v = v.evidence(m.ev().tensor(n));
        }
        v
    } else {
        Verdict::new(E, Status::Pass, "pass")
            .measured(format!(
                "no NaN/Inf in the weights (checkpoint step(s) {steps})"
            ))
            .message("every weight is finite")
            .evidence(m.ev())
    };
    if !errors.is_empty() {
        v.message
            .push_str(&format!(" [unreadable: {}]", list_some(&errors, 2)));
    }
    vec![v
        .expected(format!("≤ {max_bad} non-finite values"))
        .value("nonfinite", total as f64)]
}

// =======================================================================================
// O22 — update-to-weight ratio
// =======================================================================================

pub fn update_ratio(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O22";
    let (target, low, high) = (p!(ctx, E, "target"), p!(ctx, E, "low"), p!(ctx, E, "high"));
    let (outlier, fail_factor) = (p!(ctx, E, "outlier_ratio"), p!(ctx, E, "fail_factor"));
    let cks = weight_ckpts(ctx.run);
    if cks.len() < 2 {
        return vec![Verdict::skip(
            E,
            format!("needs two checkpoints with weights; found {}", cks.len()),
        )];
    }
    // The last few consecutive pairs (each pair reads both checkpoints once).
    let start = cks.len().saturating_sub(4);
    let mut models: Vec<Model> = Vec::new();
    for c in &cks[start..] {
        match Model::open(c) {
            Ok(m) => models.push(m),
            Err(e) => {
                return vec![Verdict::skip(
                    E,
                    format!("cannot read {}: {e}", c.path.display()),
                )]
            }
        }
    }
    struct Pair {
        a: u64,
        b: u64,
        lb: f64,
        ub: f64,
        n: usize,
        outliers: Vec<String>,
    }
    let mut pairs = Vec::new();
    for w in models.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let k = (b.step - a.step).max(1) as f64;
        let (mv, _) = movements(a, b, |n, i| is_trainable(n, i) && i.shape.len() >= 2);
        let rs: Vec<(String, f64)> = mv
            .iter()
            .filter(|m| {
                !m.diff.identical_bytes && m.diff.norm_a > 0.0 && m.rel.is_finite() && m.rel > 0.0
            })
            .map(|m| (m.name.clone(), m.rel))
            .collect();
        let Some(med) = median(&rs.iter().map(|(_, r)| *r).collect::<Vec<_>>()) else {
            continue;
        };
        let outliers: Vec<String> = rs
            .iter()
            .filter(|(_, r)| *r > outlier * med)
            .map(|(n, r)| format!("{n} ({:.0}× the median)", r / med))
            .collect();
        pairs.push(Pair {
            a: a.step,
            b: b.step,
            lb: med / k,
            ub: med / k.sqrt(),
            n: rs.len(),
            outliers,
        });
    }
    let Some(last) = pairs.last() else {
        return vec![Verdict::skip(
            E,
            "no weight matrix moved between checkpoints (see identical_tensors)",
        )];
    };
    let too_high = pairs
        .iter()
        .filter(|p| p.lb > high)
        .max_by(|x, y| x.lb.total_cmp(&y.lb));
    let too_low = pairs
        .iter()
        .filter(|p| p.ub < low)
        .min_by(|x, y| x.ub.total_cmp(&y.ub));
    let render = |p: &Pair| {
        format!(
            "steps {}..{}: median ‖ΔW‖/‖W‖ per step ∈ [{}, {}] over {} tensors",
            p.a,
            p.b,
            fmt(p.lb),
            fmt(p.ub),
            p.n
        )
    };
    let measured = pairs.iter().map(render).collect::<Vec<_>>().join("; ");
    let ev = Evidence::file(models.last().map(|m| m.path().to_path_buf()).unwrap_or_default()).steps(pairs[0].a, last.b).note("per-step range: net change / Δsteps (consistent direction) … net change / √Δsteps (random walk)");
    let (st, out, msg) = if let Some(p) = too_high {
        let st = if p.lb > fail_factor * high {
            Status::Fail
        } else {
            Status::Warn
        };
        (st, "high", format!("even the lower bound of the per-step update ratio exceeds {high} (steps {}..{}): steps this large churn the weights — lower the LR or check that it is not scaled up (accumulation, batch-size scaling)", p.a, p.b))
    } else if let Some(p) = too_low {
        let st = if p.ub < low / fail_factor {
            Status::Fail
        } else {
            Status::Warn
        };
        (st, "low", format!("even the upper bound of the per-step update ratio is below {low} (steps {}..{}): the weights barely move — the LR is too small, mostly zero, or updates are lost", p.a, p.b))
    } else if let Some(p) = pairs.iter().rev().find(|p| !p.outliers.is_empty()) {
        (Status::Warn, "high", format!("most tensors update normally but some move over {outlier}× faster than the median (steps {}..{}): {} — a per-parameter LR multiplier or an unnormalised layer", p.a, p.b, list_some(&p.outliers, 3)))
    } else {
        (
            Status::Pass,
            "pass",
            format!("update-to-weight ratios are plausible around the {target} rule of thumb"),
        )
    };
    vec![Verdict::new(E, st, out)
        .measured(measured)
        .expected(format!("per step ≈ {target}; warn outside [{low}, {high}], fail beyond {fail_factor}× past either; a tensor over {outlier}× the median warns"))
        .message(msg)
        .evidence(ev)
        .value("median_per_step_lb", last.lb)
        .value("median_per_step_ub", last.ub)]
}

// =======================================================================================
// O2/O3/O4 — byte-identical tensors
// =======================================================================================

/// Tensors expected not to train: declared frozen, a LoRA base, a tower frozen by the stage.
fn expected_static(ctx: &ProbeCtx, m: &Model) -> impl Fn(&str) -> bool {
    let frozen = ctx.facts.list("frozen");
    let lora = m.has_lora();
    let stage = ctx.facts.u64("stage");
    move |name: &str| {
        if frozen.iter().any(|p| under(name, p)) {
            return true;
        }
        if lora && !is_lora(name) && !name.contains("modules_to_save") {
            return true;
        }
        matches!(
            (stage, tower_of(name)),
            (Some(1), Some(Tower::Vision | Tower::Llm)) | (Some(2), Some(Tower::Vision))
        )
    }
}

pub fn identical_tensors(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O2";
    let moved_rel = p!(ctx, E, "moved_rel");
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let excluded = expected_static(ctx, &b);
    let (mv, errors) = movements(&a, &b, |n, i| is_trainable(n, i) && !excluded(n));
    if mv.is_empty() {
        return vec![Verdict::skip(
            E,
            format!(
                "no trainable float tensors to compare between steps {} and {}{}",
                a.step,
                b.step,
                if errors.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", list_some(&errors, 2))
                }
            ),
        )];
    }
    let static_: Vec<&Movement> = mv.iter().filter(|m| m.rel <= moved_rel).collect();
    let moved = mv.len() - static_.len();
    let names: Vec<String> = static_
        .iter()
        .map(|m| format!("{} {}", m.name, shape_str(&m.shape)))
        .collect();
    let measured = format!(
        "{} of {} trainable tensors unchanged between steps {} and {}",
        static_.len(),
        mv.len(),
        a.step,
        b.step
    );
    let mut v = if static_.is_empty() {
        Verdict::new(E, Status::Pass, "pass").message("every trainable tensor moved")
    } else if moved == 0 {
        Verdict::new("O4", Status::Fail, "all_identical").message(format!(
            "no weight changed between steps {} and {}: no update landed — optimizer.step() is never called (or before backward/after zero_grad), the loss is detached from the graph (O3: .item()/.detach()/torch.no_grad), or the LR is 0",
            a.step, b.step
        ))
    } else {
        Verdict::new(E, Status::Fail, "some_identical").message(format!(
            "{} tensor(s) are byte-identical while {moved} others moved: {} — they are not in the optimizer (built before the layer was added/replaced, or from a filtered parameter list) or have requires_grad=False by accident; declare --fact frozen=PREFIX if they are frozen on purpose",
            static_.len(),
            list_some(&names, 4)
        ))
    };
    for m in static_.iter().take(3) {
        v = v.evidence(step_ev(&a, &b).tensor(&m.name).note("byte-identical"));
    }
    if static_.is_empty() {
        v = v.evidence(step_ev(&a, &b));
    }
    if !errors.is_empty() {
        v.message
            .push_str(&format!(" [not compared: {}]", list_some(&errors, 2)));
    }
    vec![v
        .measured(measured)
        .expected(format!(
            "every trainable tensor changes (‖ΔW‖/‖W‖ > {moved_rel})"
        ))
        .value("unchanged", static_.len() as f64)
        .value("moved", moved as f64)]
}

// =======================================================================================
// O17 — declared-frozen prefixes that moved / gradient stopped but still in the optimizer
// =======================================================================================

pub fn frozen_drift(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O17";
    let (moved_rel, shrink_cos, stopped) = (
        p!(ctx, E, "moved_rel"),
        p!(ctx, E, "shrink_cos"),
        p!(ctx, E, "grad_stopped_ratio"),
    );
    let frozen = ctx.facts.list("frozen");
    if !frozen.is_empty() && weight_ckpts(ctx.run).len() >= 2 {
        return frozen_by_weights(ctx, &frozen, moved_rel, shrink_cos);
    }
    match newest_optimizer(ctx.run, E) {
        Ok((opt, c)) => frozen_by_optimizer(ctx, &opt, c, stopped),
        Err(_) if !frozen.is_empty() => vec![Verdict::skip(
            E,
            "fact frozen is set but the run has fewer than two checkpoints and no optimizer state",
        )],
        Err(_) => vec![Verdict::skip(
            E,
            "needs fact frozen=PREFIX[,PREFIX] and two checkpoints, or an optimizer.pt",
        )],
    }
}

fn frozen_by_weights(
    ctx: &ProbeCtx,
    frozen: &[String],
    moved_rel: f64,
    shrink_cos: f64,
) -> Vec<Verdict> {
    const E: &str = "O17";
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let (mv, errors) = movements(&a, &b, |n, i| {
        is_trainable(n, i) && frozen.iter().any(|p| under(n, p))
    });
    if mv.is_empty() {
        return vec![Verdict::skip(
            E,
            format!(
                "no trainable tensor under the frozen prefix(es) {}{}",
                frozen.join(", "),
                if errors.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", list_some(&errors, 2))
                }
            ),
        )];
    }
    let moved: Vec<&Movement> = mv.iter().filter(|m| m.rel > moved_rel).collect();
    let shrink = |m: &Movement| m.diff.cosine() >= shrink_cos && m.diff.norm_b < m.diff.norm_a;
    let measured = format!(
        "{} of {} tensors under {} changed between steps {} and {}",
        moved.len(),
        mv.len(),
        frozen.join(", "),
        a.step,
        b.step
    );
    let expected = format!("byte-identical (‖ΔW‖/‖W‖ ≤ {moved_rel})");
    if moved.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .message("the declared-frozen tensors did not change")
            .evidence(step_ev(&a, &b))
            .value("moved", 0.0)];
    }
    let max_rel = moved.iter().map(|m| m.rel).fold(0.0, f64::max);
    let min_rel = moved.iter().map(|m| m.rel).fold(f64::INFINITY, f64::min);
    let all_shrink = moved.iter().all(|m| shrink(m));
    let names: Vec<String> = moved
        .iter()
        .map(|m| {
            format!(
                "{} (Δ {:.2}%, cos {:.6})",
                m.name,
                100.0 * m.rel,
                m.diff.cosine()
            )
        })
        .collect();
    let (out, why) = if all_shrink {
        ("decayed", "Every change is a pure shrink (same direction, smaller norm): the tensors are frozen but still in a weight-decayed param group and still carry a .grad tensor — zeros kept by optimizer.zero_grad(set_to_none=False), or a stale gradient never cleared — so AdamW applies its decoupled decay with a zero gradient (torch optimizers skip only params whose .grad is None, which is what zero_grad(set_to_none=True), the default since torch 2.0, leaves on a frozen param)")
    } else {
        ("moved", "They get updates: they still receive gradients (never actually frozen), or they are still in the optimizer with a .grad that is not None — zero tensors from zero_grad(set_to_none=False), or a stale gradient — so AdamW keeps applying its momentum tail and weight decay after requires_grad=False")
    };
    let mut v = Verdict::new(E, Status::Fail, out)
        .measured(format!("{measured} (Δ {:.2}%…{:.2}%)", 100.0 * min_rel, 100.0 * max_rel))
        .expected(expected)
        .message(format!("declared-frozen tensors changed: {}. {why}. requires_grad=False alone does not take a param out of the optimizer — build the optimizer only over trainable params (filter(lambda p: p.requires_grad, model.parameters())) or rebuild it after freezing, and keep zero_grad(set_to_none=True) so a frozen param's .grad stays None", list_some(&names, 3)));
    for m in moved.iter().take(3) {
        v = v.evidence(
            step_ev(&a, &b)
                .tensor(&m.name)
                .note(format!("Δ {:.2}%", 100.0 * m.rel)),
        );
    }
    vec![v
        .value("moved", moved.len() as f64)
        .value("max_rel", max_rel)]
}

fn frozen_by_optimizer(
    ctx: &ProbeCtx,
    opt: &OptimizerState,
    c: Option<&CheckpointDir>,
    stopped: f64,
) -> Vec<Verdict> {
    const E: &str = "O17";
    // Per parameter: RMS(m) / √RMS(v) — about |E[g]|/RMS(g), far below 1 only when the gradient
    // stopped long ago while v (β₂ ≈ 0.999) still remembers it.
    let mut rows: Vec<(u64, f64, f64)> = Vec::new();
    for s in opt.state.values() {
        let (Some(m), Some(vv)) = (&s.exp_avg, &s.exp_avg_sq) else {
            continue;
        };
        let n = m.shape.iter().product::<usize>().max(1) as f64;
        let (Ok(mn), Ok(vn)) = (opt.l2_norm(m), opt.l2_norm(vv)) else {
            continue;
        };
        let m_rms = mn / n.sqrt();
        let g_rms = (vn / n.sqrt()).sqrt();
        rows.push((s.id, m_rms, g_rms));
    }
    if rows.is_empty() {
        return vec![Verdict::skip(
            E,
            "needs fact frozen=PREFIX (the optimizer keeps no Adam moments to inspect)",
        )];
    }
    let med_g = median(&rows.iter().map(|r| r.2).collect::<Vec<_>>()).unwrap_or(0.0);
    let model = model_for(ctx.run, c);
    let names = param_names(opt, model.as_ref());
    let flagged: Vec<&(u64, f64, f64)> = rows
        .iter()
        .filter(|(_, m, g)| *g > stopped * med_g && *g > 0.0 && m / g < stopped)
        .collect();
    let ev = opt_ev(opt, c);
    if flagged.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(format!("{} params with Adam state; none with a vanished first moment", rows.len()))
            .expected(format!("RMS(m)/√RMS(v) ≥ {stopped} wherever v is not ~0"))
            .message("no parameter looks frozen while left in the optimizer (declare --fact frozen=PREFIX to check the weights directly)")
            .evidence(ev)];
    }
    let list: Vec<String> = flagged
        .iter()
        .map(|(id, m, g)| format!("{} (m/√v {:.1e})", describe_param(*id, &names, opt), m / g))
        .collect();
    vec![Verdict::new(E, Status::Warn, "moved")
        .measured(format!("{} of {} params have Adam's first moment ~0 while the second moment is not", flagged.len(), rows.len()))
        .expected(format!("RMS(m)/√RMS(v) ≥ {stopped}"))
        .message(format!(
            "Adam kept stepping them after their gradient stopped (m decays toward 0 while v still remembers it): {} — they are in the optimizer with .grad zero tensors (frozen with requires_grad=False while zero_grad(set_to_none=False) keeps zero grads), so AdamW still moves them (momentum tail, decoupled weight decay); with zero_grad(set_to_none=True), the default since torch 2.0, their .grad is None and the optimizer skips them. Exclude them from the optimizer, and declare --fact frozen=PREFIX to measure the drift",
            list_some(&list, 4)
        ))
        .evidence(ev)
        .value("flagged", flagged.len() as f64)]
}

// =======================================================================================
// O18 — BatchNorm running statistics drifting under frozen weights
// =======================================================================================

pub fn bn_drift(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O18";
    let moved_rel = p!(ctx, E, "moved_rel");
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let frozen = ctx.facts.list("frozen");
    let mut modules: Vec<String> = b
        .infos()
        .filter(|(n, _)| matches!(last_component(n), "running_mean" | "running_var"))
        .map(|(n, _)| module_of(n).to_string())
        .collect();
    modules.dedup();
    if modules.is_empty() {
        return vec![Verdict::skip(
            E,
            "no BatchNorm running statistics in the checkpoints",
        )];
    }
    let moved_of = |name: &str| -> Option<bool> {
        let an = a.find(name)?;
        let d = a.diff(an, &b, name).ok()?;
        let denom = d.norm_a.max(d.norm_b);
        Some(
            !d.identical_bytes
                && d.norm_diff > 0.0
                && (denom == 0.0 || d.norm_diff / denom > moved_rel),
        )
    };
    let mut drift = Vec::new();
    let mut checked = 0;
    for m in &modules {
        let stats_moved = ["running_mean", "running_var"]
            .iter()
            .filter_map(|s| moved_of(&format!("{m}.{s}")))
            .any(|x| x);
        let declared = frozen.iter().any(|p| under(&format!("{m}.weight"), p));
        let params: Vec<bool> = ["weight", "bias"]
            .iter()
            .filter_map(|s| moved_of(&format!("{m}.{s}")))
            .collect();
        let params_static = !params.is_empty() && params.iter().all(|x| !x);
        if !declared && !params_static {
            continue;
        }
        checked += 1;
        if stats_moved {
            drift.push(format!(
                "{m}{}",
                if declared {
                    " (declared frozen)"
                } else {
                    " (weight/bias unchanged)"
                }
            ));
        }
    }
    let measured = format!(
        "{} of {} frozen BatchNorm layers changed running stats between steps {} and {}",
        drift.len(),
        checked,
        a.step,
        b.step
    );
    let expected = "running_mean/var constant where the layer is frozen".to_string();
    if checked == 0 {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(format!(
                "{} BatchNorm layers, all training (weights moved)",
                modules.len()
            ))
            .expected(expected)
            .message("no frozen BatchNorm layer: running statistics are expected to move")
            .evidence(step_ev(&a, &b))];
    }
    if drift.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .message("frozen BatchNorm layers keep their running statistics (eval mode)")
            .evidence(step_ev(&a, &b))];
    }
    let mut v = Verdict::new(E, Status::Fail, "drift")
        .measured(measured)
        .expected(expected)
        .message(format!(
            "BatchNorm running statistics keep updating in frozen layers: {} — requires_grad=False does not stop them; put the frozen backbone's BN modules in eval() after every model.train() (or use FrozenBatchNorm2d)",
            list_some(&drift, 4)
        ));
    v = v.evidence(step_ev(&a, &b).tensor(format!(
        "{}.running_mean",
        drift[0].split(' ').next().unwrap_or("")
    )));
    vec![v.value("drifting", drift.len() as f64)]
}

// =======================================================================================
// DF2 — EMA weights
// =======================================================================================

fn ema_prefix(name: &str) -> Option<&str> {
    let first = name.split('.').next().unwrap_or("");
    let f = first.to_ascii_lowercase();
    let is_ema = f == "ema"
        || f == "shadow"
        || f.starts_with("ema_")
        || f.ends_with("_ema")
        || f == "model_ema"
        || f == "shadow_params";
    is_ema.then(|| name.get(first.len() + 1..).unwrap_or(""))
}

fn is_diffusion(ctx: &ProbeCtx) -> bool {
    if ctx
        .facts
        .get("domain")
        .is_some_and(|d| d.eq_ignore_ascii_case("diffusion"))
    {
        return true;
    }
    if ctx
        .run
        .model_config()
        .and_then(|(_, c)| c.class_name)
        .is_some_and(|c| {
            let c = c.to_ascii_lowercase();
            c.contains("unet")
                || c.contains("transformer2d")
                || c.contains("dit")
                || c.contains("sd3")
                || c.contains("flux")
        })
    {
        return true;
    }
    ctx.run
        .artifacts
        .iter()
        .any(|a| a.kind.is_weights() && file_name(&a.path).starts_with("diffusion_pytorch_model"))
}

pub fn ema_weights(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "DF2";
    let identical_rel = p!(ctx, E, "identical_rel");
    let diffusion = is_diffusion(ctx);
    let cks = weight_ckpts(ctx.run);
    let ema_files: Vec<&PathBuf> = ctx
        .run
        .artifacts
        .iter()
        .filter(|a| a.kind.is_weights() && is_ema_path(&a.path))
        .map(|a| &a.path)
        .collect();
    if cks.is_empty() && ema_files.is_empty() {
        return vec![Verdict::skip(E, "no checkpoint weights in the run")];
    }
    // EMA tensors inside the newest model file, or an EMA file.
    let newest = cks.last().and_then(|c| Model::open(c).ok());
    let in_file: Vec<(String, String)> = newest
        .as_ref()
        .map(|m| {
            m.infos()
                .filter_map(|(n, i)| {
                    if i.dtype.is_float() {
                        ema_prefix(n)
                            .filter(|r| !r.is_empty())
                            .map(|r| (n.to_string(), r.to_string()))
                    } else {
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if in_file.is_empty() && ema_files.is_empty() {
        if !diffusion {
            return vec![Verdict::skip(E, "not a diffusion run (no --fact domain=diffusion, no UNet config) and no EMA weights")];
        }
        let mut v = Verdict::new(E, Status::Warn, "missing")
            .measured("no EMA weights (no ema* file, no ema./shadow tensors)")
            .expected("an EMA copy of the weights saved with each checkpoint")
            .message("diffusion models are sampled from an EMA of the weights (decay ~0.9999); without one, samples from the raw weights look worse than the loss suggests — keep an EMAModel, step it after optimizer.step(), and save it");
        if let Some(m) = &newest {
            v = v.evidence(m.ev());
        }
        return vec![v];
    }
    // Pair EMA tensors with the raw ones.
    let mut compared = 0usize;
    let mut same = 0usize;
    let mut ev = None;
    const MAX_PAIRS: usize = 64;
    if let Some(m) = &newest {
        for (en, raw) in in_file.iter().take(MAX_PAIRS) {
            if let Some(rn) = m.find(raw) {
                if let Ok(d) = m.diff(rn, m, en) {
                    compared += 1;
                    if d.identical_bytes
                        || d.norm_diff <= identical_rel * d.norm_a.max(f64::MIN_POSITIVE)
                    {
                        same += 1;
                    }
                }
            }
        }
        ev = Some(m.ev());
    }
    if in_file.is_empty() {
        // Separate EMA file(s): pair with the newest raw weights of the same checkpoint, else the newest.
        let ef = ema_files.iter().max_by_key(|p| {
            ctx.run
                .artifacts
                .iter()
                .find(|a| &a.path == **p)
                .and_then(|a| a.step)
                .unwrap_or(0)
        });
        if let (Some(ef), Some(m)) = (ef, &newest) {
            if let Ok(e) = Model::open_paths(&[*ef], m.step) {
                for (en, info) in e
                    .infos()
                    .filter(|(_, i)| i.dtype.is_float())
                    .take(MAX_PAIRS)
                {
                    let key = ema_prefix(en).filter(|r| !r.is_empty()).unwrap_or(en);
                    if let Some(rn) = m.find(key) {
                        if m.info(rn).map(|i| i.numel()) != Some(info.numel()) {
                            continue;
                        }
                        if let Ok(d) = m.diff(rn, &e, en) {
                            compared += 1;
                            if d.identical_bytes
                                || d.norm_diff <= identical_rel * d.norm_a.max(f64::MIN_POSITIVE)
                            {
                                same += 1;
                            }
                        }
                    }
                }
                ev = Some(Evidence::file(ef.as_path()));
            }
        }
    }
    let step = newest.as_ref().map(|m| m.step).unwrap_or(0);
    let mut v = if compared > 0 && same == compared && step > 0 {
        Verdict::new(E, Status::Warn, "identical")
            .measured(format!("EMA equals the raw weights in all {compared} compared tensors (step {step})"))
            .message("the EMA copy is identical to the raw weights: it is never updated (ema.step() not called), its decay is 0, or the raw weights were saved under the EMA name")
    } else {
        Verdict::new(E, Status::Pass, "pass")
            .measured(if compared > 0 {
                format!(
                    "EMA differs from the raw weights in {} of {compared} compared tensors",
                    compared - same
                )
            } else {
                "EMA weights present".to_string()
            })
            .message("an EMA copy of the weights is saved — sample from it")
    };
    if let Some(e) = ev {
        v = v.evidence(e);
    }
    vec![v
        .expected(format!(
            "EMA present and different from the raw weights (‖Δ‖/‖W‖ > {identical_rel})"
        ))
        .value("compared", compared as f64)
        .value("identical", same as f64)]
}

// =======================================================================================
// X1 — VLM towers: which moved against the declared stage
// =======================================================================================

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Tower {
    Vision,
    Projector,
    Llm,
}

impl Tower {
    fn label(self) -> &'static str {
        match self {
            Tower::Vision => "vision",
            Tower::Projector => "projector",
            Tower::Llm => "llm",
        }
    }
}

fn tower_of(name: &str) -> Option<Tower> {
    let comps: Vec<String> = canonical(name)
        .split('.')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let has = |set: &[&str]| {
        comps.iter().any(|c| {
            set.iter()
                .any(|s| c == s || c.starts_with(&format!("{s}_")))
        })
    };
    if has(&[
        "mm_projector",
        "multi_modal_projector",
        "projector",
        "connector",
        "merger",
        "mlp1",
        "vision_proj",
        "visual_projection",
    ]) {
        return Some(Tower::Projector);
    }
    if has(&[
        "vision_tower",
        "vision_model",
        "visual",
        "image_encoder",
        "vit",
        "vision_encoder",
        "vision",
    ]) {
        return Some(Tower::Vision);
    }
    let n = comps.join(".");
    if has(&[
        "language_model",
        "llm",
        "lm_head",
        "embed_tokens",
        "text_model",
    ]) || n.starts_with("model.layers")
        || n.starts_with("model.norm")
    {
        return Some(Tower::Llm);
    }
    None
}

pub fn tower_freeze(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "X1";
    let moved_rel = p!(ctx, E, "moved_rel");
    let newest = match newest_model(ctx.run, E) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let towers: HashSet<Tower> = newest.infos().filter_map(|(n, _)| tower_of(n)).collect();
    if !towers.contains(&Tower::Vision) && !towers.contains(&Tower::Projector) {
        return vec![Verdict::skip(
            E,
            "no VLM towers (vision encoder / projector) in the weights",
        )];
    }
    drop(newest);
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let (mv, _) = movements(&a, &b, |n, i| is_trainable(n, i) && tower_of(n).is_some());
    let mut counts: BTreeMap<Tower, (usize, usize)> = BTreeMap::new();
    for m in &mv {
        if let Some(t) = tower_of(&m.name) {
            let e = counts.entry(t).or_default();
            e.1 += 1;
            if m.rel > moved_rel {
                e.0 += 1;
            }
        }
    }
    let moved = |t: Tower| counts.get(&t).is_some_and(|c| c.0 > 0);
    let present = |t: Tower| counts.contains_key(&t);
    let measured = counts
        .iter()
        .map(|(t, (m, n))| format!("{} {m}/{n} moved", t.label()))
        .collect::<Vec<_>>()
        .join(", ")
        + &format!(" (steps {}..{})", a.step, b.step);
    let stage = ctx.facts.get("stage").map(|s| s.trim().to_string());
    let mut wrong = Vec::new();
    let expected = match stage.as_deref() {
        Some("1") => {
            if moved(Tower::Vision) {
                wrong.push("the vision encoder moved");
            }
            if moved(Tower::Llm) {
                wrong.push("the LLM moved");
            }
            if present(Tower::Projector) && !moved(Tower::Projector) {
                wrong.push("the projector did not move");
            }
            "stage 1: only the projector trains"
        }
        Some("2") => {
            if moved(Tower::Vision) {
                wrong.push("the vision encoder moved");
            }
            if present(Tower::Llm) && !moved(Tower::Llm) {
                wrong.push("the LLM did not move");
            }
            "stage 2: LLM (+ projector) train, vision encoder frozen"
        }
        _ => "declare --fact stage=1|2 to check the freeze schedule",
    };
    let ev = step_ev(&a, &b);
    let mut v = if stage.is_none() {
        Verdict::new(E, Status::Pass, "pass").message(
            "towers that moved are listed; no stage declared, so nothing to compare against",
        )
    } else if wrong.is_empty() {
        Verdict::new(E, Status::Pass, "pass")
            .message("the towers that moved match the declared stage")
    } else {
        Verdict::new(E, Status::Fail, "wrong_towers").message(format!(
            "{} — the freeze schedule does not match stage {}: set requires_grad per tower AND build the optimizer over the trainable towers only (stage 1: projector; stage 2: projector + LLM, vision frozen)",
            wrong.join("; "),
            stage.clone().unwrap_or_default()
        ))
    };
    v = v.measured(measured).expected(expected).evidence(ev);
    for (t, (m, n)) in &counts {
        v = v
            .value(&format!("{}_moved", t.label()), *m as f64)
            .value(&format!("{}_tensors", t.label()), *n as f64);
    }
    vec![v]
}

// =======================================================================================
// X2 — projector output width vs the LLM hidden size
// =======================================================================================

pub fn projector_dim(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "X2";
    let m = match newest_model(ctx.run, E) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let mut proj: Vec<(&str, &TensorInfo)> = m
        .infos()
        .filter(|(n, i)| {
            tower_of(n) == Some(Tower::Projector)
                && i.shape.len() == 2
                && i.dtype.is_float()
                && last_component(n) == "weight"
                && !is_lora(n)
        })
        .collect();
    if proj.is_empty() {
        return vec![Verdict::skip(E, "no projector weights (mm_projector / multi_modal_projector / merger …) in the checkpoint")];
    }
    proj.sort_by_key(|(n, _)| natural_key(n));
    let (first_name, first) = proj[0];
    let (last_name, last) = proj[proj.len() - 1];
    let out_dim = last.shape[0] as u64;
    let in_dim = first.shape[1] as u64;
    let cfg = ctx.run.model_config();
    let text_hidden = cfg.as_ref().and_then(|(_, c)| {
        c.raw
            .get("text_config")
            .and_then(|t| t.get("hidden_size"))
            .and_then(|v| v.as_u64())
    });
    let embed_width = m
        .infos()
        .find(|(n, i)| {
            n.contains("embed_tokens") && tower_of(n) != Some(Tower::Vision) && i.shape.len() == 2
        })
        .map(|(_, i)| i.shape[1] as u64);
    let (hidden, source) = match (text_hidden, ctx.facts.u64("hidden_size"), embed_width) {
        (Some(h), _, _) => (h, "config text_config.hidden_size".to_string()),
        (None, Some(h), _) => (h, "hidden_size".to_string()),
        (None, None, Some(w)) => (w, "embed_tokens width".to_string()),
        _ => return vec![Verdict::skip(E, format!("projector found ({last_name} out {out_dim}) but no LLM hidden size: needs config.json text_config.hidden_size, --fact hidden_size, or embed_tokens in the weights"))],
    };
    let vision_hidden = cfg.as_ref().and_then(|(_, c)| {
        c.mm_hidden_size.or_else(|| {
            c.raw
                .get("vision_config")
                .and_then(|t| t.get("hidden_size"))
                .and_then(|v| v.as_u64())
        })
    });
    let mut problems = Vec::new();
    if out_dim != hidden {
        problems.push(format!(
            "{last_name} outputs {out_dim} but the LLM hidden size is {hidden} ({source})"
        ));
    }
    if let Some(w) = embed_width.filter(|w| *w != hidden && *w != out_dim) {
        problems.push(format!("embed_tokens width {w} differs from both"));
    }
    if let Some(vh) =
        vision_hidden.filter(|vh| *vh != in_dim && proj.len() > 1 && *vh * 4 != in_dim)
    {
        problems.push(format!(
            "{first_name} takes {in_dim} inputs but the vision hidden size is {vh}"
        ));
    }
    let measured = format!(
        "projector {} → … → {out_dim}; LLM hidden {hidden} ({source})",
        in_dim
    );
    let v = if problems.is_empty() {
        Verdict::new(E, Status::Pass, "pass")
            .message("the projector maps into the LLM's hidden size")
    } else {
        Verdict::new(E, Status::Fail, "mismatch").message(format!("{} — the projector was built for another LLM/vision tower (check mm_hidden_size / text_config.hidden_size and the projector_type)", problems.join("; ")))
    };
    vec![v
        .measured(measured)
        .expected(format!("last projector out-dim = {hidden}"))
        .evidence(m.ev().tensor(last_name))
        .value("out_dim", out_dim as f64)
        .value("hidden", hidden as f64)]
}

// =======================================================================================
// O21 — LoRA wiring
// =======================================================================================

pub fn lora_wiring(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O21";
    let zero_abs = p!(ctx, E, "zero_abs");
    let cfg_art = ctx
        .run
        .of_kind(ArtifactKind::AdapterConfig)
        .last()
        .map(|a| a.path.clone());
    let cfg = cfg_art.as_ref().and_then(|p| AdapterConfig::read(p).ok());
    // The newest checkpoint holding LoRA tensors (adapter files or merged into the weights).
    let mut found: Option<(Model, bool)> = None;
    for c in ctx.run.checkpoints.iter().rev() {
        let adapters: Vec<&PathBuf> = c.weights.iter().filter(|p| is_adapter_path(p)).collect();
        let model = if adapters.is_empty() {
            Model::open(c)
        } else {
            Model::open_paths(&adapters, c.step).map(|mut m| {
                m.step_known = !c.step_unknown;
                m
            })
        };
        if let Ok(m) = model {
            if m.has_lora() {
                let trained = !is_init_ckpt(c);
                found = Some((m, trained));
                break;
            }
        }
    }
    let Some((m, trained)) = found else {
        if let Some(p) = &cfg_art {
            let adapter_files = ctx
                .run
                .artifacts
                .iter()
                .filter(|a| is_adapter_path(&a.path))
                .count();
            return vec![Verdict::new(E, Status::Fail, "no_adapters")
                .measured(format!("adapter_config.json present, no lora_A/lora_B tensors ({adapter_files} adapter file(s))"))
                .expected("LoRA tensors for the target_modules")
                .message(format!(
                    "no LoRA weights were saved although an adapter config exists: target_modules {} matched nothing in the model (names differ, e.g. c_attn vs q_proj), or the base model was saved instead of the adapter",
                    cfg.as_ref().map(|c| format!("{:?}", c.target_modules)).unwrap_or_else(|| "(unreadable)".into())
                ))
                .evidence(Evidence::file(p))];
        }
        return vec![Verdict::skip(
            E,
            "no LoRA adapters (adapter_config.json, lora_A/lora_B tensors) in the run",
        )];
    };
    let bs: Vec<&str> = m
        .infos()
        .filter(|(n, i)| is_lora_b(n) && i.dtype.is_float())
        .map(|(n, _)| n)
        .collect();
    let a_count = m.infos().filter(|(n, _)| is_lora_a(n)).count();
    let mut zero_b = Vec::new();
    for n in &bs {
        if let Ok(s) = m.stats(n, ctx.compute) {
            if s.finite > 0 && s.absmax <= zero_abs {
                zero_b.push(n.to_string());
            }
        }
    }
    let mut warns = Vec::new();
    if let Some(c) = &cfg {
        if !c.target_modules_is_regex {
            let missing: Vec<&String> = c
                .target_modules
                .iter()
                .filter(|t| {
                    t.as_str() != "all-linear"
                        && !m
                            .names
                            .iter()
                            .any(|(n, _)| is_lora(n) && n.split('.').any(|p| p == t.as_str()))
                })
                .collect();
            if !missing.is_empty() && !bs.is_empty() {
                warns.push(format!("target_modules without adapters: {missing:?}"));
            }
        }
        if c.task_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("SEQ_CLS"))
        {
            let head_in_cfg = c.modules_to_save.iter().any(|s| {
                ["classifier", "score", "head", "fc"]
                    .iter()
                    .any(|h| s.contains(h))
            });
            let head_saved = m
                .names
                .iter()
                .any(|(n, _)| ["classifier", "score"].iter().any(|h| n.contains(h)));
            if !head_in_cfg && !head_saved {
                warns.push("task_type SEQ_CLS but modules_to_save has no classifier/score: the new head stays random and is not saved".to_string());
            }
        }
    }
    let measured = format!(
        "{} lora_A, {} lora_B tensors; {} lora_B all zero ({})",
        a_count,
        bs.len(),
        zero_b.len(),
        m.at()
    );
    // A lone adapter folder has no step, but saved adapters are trained ones.
    let when = if m.step_known {
        format!("at step {}", m.step)
    } else {
        "in the saved (not initial) weights".to_string()
    };
    let expected = format!("lora_B leaves zero after training (max |B| > {zero_abs})");
    let mut v = if bs.is_empty() {
        Verdict::new(E, Status::Fail, "no_adapters")
            .message("LoRA A tensors but no B tensors: the adapter is incomplete")
    } else if trained && zero_b.len() == bs.len() {
        Verdict::new(E, Status::Fail, "b_zero").message(format!(
            "every lora_B is still exactly zero {when}: the adapters never trained (the LoRA params are not in the optimizer, requires_grad is off, or the LR is 0) — the model is the base model"
        ))
    } else if trained && !zero_b.is_empty() {
        Verdict::new(E, Status::Warn, "b_zero").message(format!(
            "{} of {} lora_B tensors are still zero {when}: {} — those adapters get no gradient",
            zero_b.len(),
            bs.len(),
            list_some(&zero_b, 3)
        ))
    } else if !warns.is_empty() {
        Verdict::new(E, Status::Warn, "pass").message(warns.join("; "))
    } else if !trained {
        Verdict::new(E, Status::Pass, "pass")
            .message("LoRA adapters present; lora_B is zero at init by design")
    } else {
        Verdict::new(E, Status::Pass, "pass")
            .message("LoRA adapters present and trained (lora_B left zero)")
    };
    if !warns.is_empty() && v.status == Status::Fail {
        v.message.push_str(&format!("; also: {}", warns.join("; ")));
    }
    let mut v = v.measured(measured).expected(expected).evidence(m.ev());
    if let Some(z) = zero_b.first() {
        v = v.evidence(m.ev().tensor(z));
    }
    vec![v
        .value("lora_b", bs.len() as f64)
        .value("lora_b_zero", zero_b.len() as f64)]
}

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
                let classifier = c.architectures.iter().any(|a| a.contains("Classification"));
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

// =======================================================================================
// O26 — weight histograms: collapse toward 0
// =======================================================================================

/// 10th–90th percentile of floor(log2|x|) from the log histogram, as powers of ten.
fn hist_span(s: &TensorStats) -> Option<String> {
    let h = &s.hist;
    let nonzero: u64 = h.pos.iter().chain(&h.neg).sum();
    if nonzero == 0 {
        return None;
    }
    let mut bins = vec![0u64; h.pos.len()];
    for (i, b) in bins.iter_mut().enumerate() {
        *b = h.pos[i] + h.neg.get(i).copied().unwrap_or(0);
    }
    let q = |f: f64| {
        let target = (f * nonzero as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, b) in bins.iter().enumerate() {
            acc += b;
            if acc >= target {
                return crate::tensors::LogHist::bin_exponent(i);
            }
        }
        crate::tensors::LogHist::bin_exponent(bins.len() - 1)
    };
    let (lo, hi) = (q(0.1), q(0.9));
    Some(format!(
        "|x| 10–90%: {}…{}",
        fmt(2f64.powi(lo)),
        fmt(2f64.powi(hi + 1))
    ))
}

pub fn weight_histograms(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O26";
    let (zero_warn, collapse, zero_growth) = (
        p!(ctx, E, "zero_frac_warn"),
        p!(ctx, E, "std_collapse"),
        p!(ctx, E, "zero_frac_growth"),
    );
    let cks = weight_ckpts(ctx.run);
    if cks.len() < 2 {
        return vec![Verdict::skip(
            E,
            format!("needs two checkpoints with weights; found {}", cks.len()),
        )];
    }
    let (a, b) = match (Model::open(cks[0]), Model::open(cks[cks.len() - 1])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return vec![Verdict::skip(E, format!("cannot read a checkpoint: {e}"))]
        }
    };
    let mut flagged = Vec::new();
    let mut checked = 0usize;
    for (name, info) in b.infos() {
        if !is_trainable(name, info) || info.numel() < 16 {
            continue;
        }
        let Some(an) = a.find(name) else { continue };
        let (Ok(sa), Ok(sb)) = (a.stats(an, ctx.compute), b.stats(name, ctx.compute)) else {
            continue;
        };
        if sa.finite == 0 || sb.finite == 0 || sa.std <= 0.0 {
            continue;
        }
        checked += 1;
        let (za, zb) = (sa.zero_frac(), sb.zero_frac());
        let zero_grew = zb > zero_warn && zb > za + zero_growth;
        let shrunk = sb.std > 0.0 && sa.std / sb.std >= collapse || sb.std == 0.0;
        if zero_grew || shrunk {
            let shape = match (hist_span(&sa), hist_span(&sb)) {
                (Some(x), Some(y)) => format!("; {x} → {y}"),
                _ => String::new(),
            };
            flagged.push((
                name.to_string(),
                format!(
                    "{name}: std {} → {}, zeros {:.0}% → {:.0}%{shape}",
                    fmt(sa.std),
                    fmt(sb.std),
                    100.0 * za,
                    100.0 * zb
                ),
            ));
        }
    }
    if checked == 0 {
        return vec![Verdict::skip(
            E,
            "no tensor with a non-degenerate distribution in both the first and last checkpoint",
        )];
    }
    let measured = format!(
        "{} of {checked} tensors collapsed between steps {} and {}",
        flagged.len(),
        a.step,
        b.step
    );
    let expected = format!(
        "zero fraction ≤ {zero_warn}, or grown by ≤ {zero_growth} since the first checkpoint; std shrinks < {collapse}×"
    );
    if flagged.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .message("no weight distribution collapsed toward 0")
            .evidence(step_ev(&a, &b))];
    }
    let texts: Vec<String> = flagged.iter().map(|(_, t)| t.clone()).collect();
    let mut v = Verdict::new(E, Status::Warn, "collapsed")
        .measured(measured)
        .expected(expected)
        .message(format!("weights collapsed toward a spike at 0: {} — dead units (ReLU, O25), weight decay far stronger than the gradient, or an LR that drove them to 0", list_some(&texts, 3)));
    for (n, _) in flagged.iter().take(3) {
        v = v.evidence(step_ev(&a, &b).tensor(n));
    }
    vec![v.value("collapsed", flagged.len() as f64)]
}

// =======================================================================================
// S6.1 — decay groups holding 1-D tensors
// =======================================================================================

pub fn decay_groups(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "S6.1";
    let decay_min = p!(ctx, E, "decay_min");
    let mixed = match ctx.params.text("mixed_status") {
        Ok(t) if t.eq_ignore_ascii_case("fail") => Status::Fail,
        Ok(_) => Status::Warn,
        Err(e) => return vec![Verdict::skip(E, format!("playbook: {e}"))],
    };
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let model = model_for(ctx.run, c);
    let names = param_names(&opt, model.as_ref());
    let mut decayed_1d: Vec<String> = Vec::new();
    let mut groups_desc = Vec::new();
    let mut unknown = 0usize;
    let mut any_decay = false;
    for g in &opt.groups {
        let wd = g.weight_decay.unwrap_or(0.0);
        let mut n1 = 0;
        let mut n2 = 0;
        for id in &g.params {
            let shape = opt
                .state
                .get(id)
                .map(|s| s.shape.clone())
                .filter(|s| !s.is_empty())
                .or_else(|| {
                    names
                        .get(id)
                        .and_then(|n| model.as_ref()?.info(n).map(|i| i.shape.clone()))
                });
            match shape {
                Some(s) if s.len() <= 1 => {
                    n1 += 1;
                    if wd > decay_min {
                        decayed_1d.push(describe_param(*id, &names, &opt));
                    }
                }
                Some(_) => n2 += 1,
                None => unknown += 1,
            }
        }
        any_decay |= wd > decay_min;
        groups_desc.push(format!(
            "group {} wd {}: {} params ({} 1-D, {} ≥2-D)",
            g.index,
            fmt(wd),
            g.params.len(),
            n1,
            n2
        ));
    }
    let measured = groups_desc.join("; ");
    let ev = opt_ev(&opt, c);
    let expected = "1-D tensors (biases, norm gains) only in weight_decay = 0 groups".to_string();
    // A BatchNorm conv net (running stats, no LayerNorm) that decays every parameter follows
    // the classic CNN recipe; the playbook decides how loudly to say so (`batchnorm_status`).
    let cnn = model.as_ref().is_some_and(|m| {
        let mut bn = false;
        let mut ln = false;
        for (n, _) in m.infos() {
            let l = n.to_ascii_lowercase();
            bn |= l.ends_with("running_mean");
            ln |= l.contains("layernorm")
                || l.contains("layer_norm")
                || l.contains(".ln_")
                || l.contains(".ln1")
                || l.contains(".ln2")
                || l.contains("rmsnorm")
                || l.ends_with("ln_f.weight");
        }
        bn && !ln
    });
    if !decayed_1d.is_empty() && cnn {
        let st = match ctx.params.text("batchnorm_status") {
            Ok(t) if t.eq_ignore_ascii_case("fail") => Status::Fail,
            Ok(t) if t.eq_ignore_ascii_case("warn") => Status::Warn,
            Ok(_) => Status::Pass,
            Err(e) => return vec![Verdict::skip(E, format!("playbook: {e}"))],
        };
        let outcome = if st == Status::Pass {
            "pass"
        } else {
            "decayed_1d"
        };
        return vec![Verdict::new(E, st, outcome)
            .measured(measured)
            .expected(expected)
            .message(format!(
                "BatchNorm conv net: {} 1-D tensors (BN gains/biases, conv biases) are decayed, as the classic CNN recipes do; excluding them (torchvision norm_weight_decay=0.0) is optional here — for a transformer's LayerNorm gains this would be flagged",
                decayed_1d.len()
            ))
            .evidence(ev)
            .value("decayed_1d", decayed_1d.len() as f64)];
    }
    if !decayed_1d.is_empty() {
        return vec![Verdict::new(E, mixed, "decayed_1d")
            .measured(measured)
            .expected(expected)
            .message(format!(
                "{} 1-D tensors (biases, LayerNorm/BatchNorm gains) sit in a weight-decayed group: {} — decay pulls norm gains toward 0 and biases toward 0; split param_groups by p.ndim (ndim < 2 → weight_decay 0.0) and use AdamW",
                decayed_1d.len(),
                list_some(&decayed_1d, 4)
            ))
            .evidence(ev)
            .value("decayed_1d", decayed_1d.len() as f64)];
    }
    if unknown > 0 && opt.state.is_empty() {
        return vec![Verdict::skip(
            E,
            "the optimizer has no state yet: parameter shapes unknown",
        )];
    }
    vec![Verdict::new(E, Status::Pass, "pass")
        .measured(measured)
        .expected(expected)
        .message(if any_decay {
            "decayed groups hold only ≥2-D tensors"
        } else {
            "no param group applies weight decay"
        })
        .evidence(ev)
        .value("decayed_1d", 0.0)]
}

// =======================================================================================
// S6.2 — optimizer rebuilt (and S2.1 from scheduler.pt)
// =======================================================================================

/// `last_epoch` and `_step_count` of a scheduler state (scheduler.pt, or a Lightning .ckpt's
/// `lr_schedulers[0]`).
fn scheduler_state(c: &CheckpointDir) -> Option<(f64, Option<f64>, PathBuf)> {
    let read = |v: &Value, p: &Path| -> Option<(f64, Option<f64>, PathBuf)> {
        let le = lookup(v, "last_epoch")?.as_f64()?;
        Some((
            le,
            lookup(v, "_step_count").and_then(Value::as_f64),
            p.to_path_buf(),
        ))
    };
    if let Some(p) = &c.scheduler {
        if let Ok(v) = read_pickled_dict(p) {
            if let Some(x) = read(&v, p) {
                return Some(x);
            }
        }
    }
    for w in c.weights.iter().filter(|w| file_name(w).ends_with(".ckpt")) {
        if let Ok(v) = read_pickled_dict(w) {
            if let Some(s) = lookup(&v, "lr_schedulers").and_then(|l| l.as_seq()?.first()) {
                if let Some(x) = read(s, w) {
                    return Some(x);
                }
            }
        }
    }
    None
}

pub fn optimizer_rebuilt(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "S6.2";
    let (step_ratio, v_zero, min_step) = (
        p!(ctx, E, "step_ratio"),
        p!(ctx, E, "v_zero"),
        p!(ctx, E, "min_step"),
    );
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let Some(opt_step) = max_state_step(&opt) else {
        return vec![Verdict::skip(
            E,
            "the optimizer state has no `step` (not Adam-like, or no state yet)",
        )];
    };
    // The run's step at this checkpoint.
    let ts_step = c
        .and_then(|c| c.trainer_state.as_ref())
        .and_then(|p| crate::metrics::trainer_state::TrainerState::read(p).ok())
        .and_then(|t| t.global_step);
    let sched = c.and_then(scheduler_state);
    let accum = ctx.facts.f64("accum_steps").filter(|a| *a >= 1.0);
    let (run_step, src) = match (ts_step, c.map(|c| c.step).filter(|s| *s > 0)) {
        (Some(s), _) => (s as f64, "trainer_state global_step".to_string()),
        (None, Some(s)) => match accum {
            Some(a) => (
                s as f64 / a,
                format!("checkpoint step {s} / accum_steps {a}"),
            ),
            None => (s as f64, format!("checkpoint step {s}")),
        },
        _ => match sched.as_ref().filter(|s| s.0 > 0.0) {
            Some(s) => (s.0, "scheduler last_epoch".to_string()),
            None => (f64::NAN, String::new()),
        },
    };
    let names = param_names(&opt, model_for(ctx.run, c).as_ref());
    let mut zero_v = Vec::new();
    let mut low_steps = 0usize;
    for s in opt.state.values() {
        let st = s.step.unwrap_or(0.0);
        if st < opt_step {
            low_steps += 1;
        }
        if st >= min_step {
            if let Some(v) = &s.exp_avg_sq {
                if opt.l2_norm(v).is_ok_and(|n| n <= v_zero) {
                    zero_v.push(describe_param(s.id, &names, &opt));
                }
            }
        }
    }
    let ev = opt_ev(&opt, c);
    let mut out = Vec::new();
    let ratio = opt_step / run_step;
    let measured = if run_step.is_finite() {
        format!(
            "optimizer step {} vs run step {} ({src}): ratio {:.2}",
            fstep(opt_step),
            fstep(run_step),
            ratio
        )
    } else {
        format!("optimizer step {}", fstep(opt_step))
    };
    let expected = format!(
        "step ratio ≥ {step_ratio}; ‖v‖ > {} after {min_step} steps",
        fmt(v_zero)
    );
    if run_step.is_finite() && run_step >= min_step && ratio < step_ratio {
        out.push(
            Verdict::new(E, Status::Fail, "rebuilt")
                .measured(measured.clone())
                .expected(expected.clone())
                .message(format!(
                    "Adam's step count ({}) is far below the run's step ({}): the optimizer was re-created mid-run (inside the loop, on resume, or after unfreezing) — its moments and bias correction restart, and a scheduler attached to the old optimizer stops acting on the new one",
                    fstep(opt_step),
                    fstep(run_step)
                ))
                .evidence(ev.clone())
                .value("opt_step", opt_step)
                .value("run_step", run_step),
        );
    } else if !zero_v.is_empty() {
        out.push(
            Verdict::new(E, Status::Fail, "rebuilt")
                .measured(format!("{} params with ‖v‖ ≈ 0 after ≥ {min_step} steps", zero_v.len()))
                .expected(expected.clone())
                .message(format!("Adam's second moment is ~0 for {} — the state was reset (optimizer rebuilt or state cleared) or those params never get a gradient", list_some(&zero_v, 4)))
                .evidence(ev.clone())
                .value("zero_v", zero_v.len() as f64),
        );
    } else {
        let mut msg =
            "Adam's step count and moments match the run: the optimizer persisted".to_string();
        if low_steps > 0 {
            msg.push_str(&format!(
                " ({low_steps} params have a lower step: added or unfrozen later)"
            ));
        }
        out.push(
            Verdict::new(E, Status::Pass, "pass")
                .measured(measured)
                .expected(expected)
                .message(msg)
                .evidence(ev.clone())
                .value("opt_step", opt_step),
        );
    }
    // The scheduler never stepped.
    if let Some((last_epoch, step_count, path)) = sched {
        if last_epoch == 0.0 && opt_step >= min_step {
            out.push(
                Verdict::new("S2.1", Status::Fail, "constant_nonzero")
                    .measured(format!("scheduler last_epoch 0{} after {} optimizer steps", step_count.map(|s| format!(" (_step_count {})", fstep(s))).unwrap_or_default(), fstep(opt_step)))
                    .expected(format!("last_epoch ≈ {} (one scheduler.step() per optimizer step)", fstep(opt_step)))
                    .message(format!(
                        "scheduler.pt says last_epoch 0 after {} optimizer steps: the scheduler was never stepped — call scheduler.step() after each optimizer.step() (if it is stepped per epoch, this is expected only inside the first epoch)",
                        fstep(opt_step)
                    ))
                    .evidence(Evidence::file(&path).steps(c.map(|c| c.step).unwrap_or(0), c.map(|c| c.step).unwrap_or(0)))
                    .value("last_epoch", last_epoch)
                    .value("opt_step", opt_step),
            );
        }
    }
    out
}

// =======================================================================================
// O10 — eps against the state dtype
// =======================================================================================

/// `eps` after a round trip through `dt` on the compute device (0 when it underflows).
fn round_trip(eps: f64, dt: DType, compute: &Compute) -> Result<f64, String> {
    let t = candle_core::Tensor::new(&[eps as f32], &compute.device).map_err(|e| e.to_string())?;
    let back = t
        .to_dtype(dt.candle())
        .and_then(|x| x.to_dtype(candle_core::DType::F32))
        .and_then(|x| x.to_vec1::<f32>())
        .map_err(|e| e.to_string())?;
    Ok(back.first().copied().unwrap_or(0.0) as f64)
}

pub fn adam_eps(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O10";
    let (fp16_min, bf16_min) = (p!(ctx, E, "fp16_min_eps"), p!(ctx, E, "bf16_min_eps"));
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let ev = opt_ev(&opt, c);
    let mut out = Vec::new();
    let mut seen = false;
    for g in &opt.groups {
        let Some(eps) = g.eps else { continue };
        let dt = g
            .params
            .iter()
            .filter_map(|id| opt.state.get(id))
            .find_map(|s| s.exp_avg_sq.as_ref().map(|t| t.dtype).or(s.dtype));
        let Some(dt) = dt else { continue };
        seen = true;
        let label = format!("group {}: eps {} with {dt} state", g.index, fmt(eps));
        let v = match dt {
            DType::F16 | DType::BF16 => {
                let back = match round_trip(eps, dt, ctx.compute) {
                    Ok(b) => b,
                    Err(e) => return vec![Verdict::skip(E, format!("device check failed: {e}"))],
                };
                let min = if dt == DType::F16 { fp16_min } else { bf16_min };
                if back == 0.0 {
                    Verdict::new(E, Status::Fail, "underflow").measured(format!("{label}: rounds to 0 in {dt} on {}", ctx.compute.label)).message(format!("eps {} is not representable in {dt}: v̂ + eps divides by ~0 when v is small, and updates explode — use eps ≥ {} (1e-6…1e-4 in {dt}) or keep the optimizer state in fp32", fmt(eps), fmt(min)))
                } else if eps < min {
                    Verdict::new(E, Status::Warn, "underflow").measured(format!("{label}: stored as {}", fmt(back))).message(format!("eps {} is below {} for {dt} state: it barely regularises the division — raise it or keep the state in fp32", fmt(eps), fmt(min)))
                } else {
                    Verdict::new(E, Status::Pass, "pass")
                        .measured(label.clone())
                        .message(format!("eps is representable in {dt}"))
                }
            }
            _ => Verdict::new(E, Status::Pass, "pass")
                .measured(label.clone())
                .message(format!(
                    "{dt} optimizer state: eps {} is representable",
                    fmt(eps)
                )),
        };
        out.push(
            v.expected(format!(
                "fp16: eps ≥ {fp16_min}; bf16: eps ≥ {bf16_min}; never 0 after rounding"
            ))
            .evidence(ev.clone())
            .value("eps", eps),
        );
    }
    if !seen {
        return vec![Verdict::skip(
            E,
            "no param group with both eps and Adam state (not Adam, or no state yet)",
        )];
    }
    // One verdict: the worst group.
    out.sort_by_key(|v| v.status);
    out.truncate(1);
    out
}

// =======================================================================================
// O2/O17 — params in the optimizer without state
// =======================================================================================

pub fn params_without_state(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O2";
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let total: usize = opt.groups.iter().map(|g| g.params.len()).sum();
    let missing = opt.params_without_state();
    let step = max_state_step(&opt)
        .unwrap_or(0.0)
        .max(c.map(|c| c.step as f64).unwrap_or(0.0));
    let adam_like = opt.groups.iter().any(|g| g.betas.is_some());
    let ev = opt_ev(&opt, c);
    if step <= 0.0 {
        return vec![Verdict::skip(E, "the optimizer has not stepped yet")];
    }
    if opt.state.is_empty() && !adam_like {
        return vec![Verdict::skip(
            E,
            "the optimizer keeps no per-parameter state (plain SGD)",
        )];
    }
    let measured = format!(
        "{} of {total} params have no optimizer state at step {}",
        missing.len(),
        fstep(step)
    );
    if missing.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected("every param in a group has state")
            .message("every parameter in the optimizer received a gradient")
            .evidence(ev)];
    }
    let names = param_names(&opt, model_for(ctx.run, c).as_ref());
    let list: Vec<String> = missing
        .iter()
        .map(|id| describe_param(*id, &names, &opt))
        .collect();
    vec![Verdict::new(E, Status::Warn, "missing_state")
        .measured(measured)
        .expected("every param in a group has state")
        .message(format!(
            "{} params in the optimizer never received a gradient: {} — they are frozen (requires_grad=False) or unused in forward; if they should train, their graph is cut (detach, no_grad, an unused branch); if frozen, leave them out of the optimizer",
            missing.len(),
            list_some(&list, 6)
        ))
        .evidence(ev)
        .value("missing", missing.len() as f64)]
}

// =======================================================================================

pub const SPECS: &[ProbeSpec] = &[
    ProbeSpec {
        id: "init_weight_stats",
        question: "At init, is each weight's std within the Kaiming / Xavier / 0.02 expectations for its fan-in, and its mean near 0?",
        entries: &["S5.1"],
        inputs: &["checkpoint:init", "fact:from_scratch", "fact:tie_word_embeddings", "config"],
        params: &[
            "max_ratio",
            "mean_abs",
            "mean_sigmas",
            "norm_gain_tol",
            "std_floor",
            "off_center_fail_min",
            "off_center_fail_frac",
            "embed_max_std",
            "pretrained_gain_std",
            "pretrained_gain_frac",
        ],
        outcomes: &["pass", "too_large", "off_center", "skip"],
        run: init_weight_stats,
    },
    ProbeSpec {
        id: "nonfinite_weights",
        question: "Does any checkpoint tensor hold NaN or Inf?",
        entries: &["L6"],
        inputs: &["checkpoint"],
        params: &["max_nonfinite"],
        outcomes: &["pass", "nonfinite", "skip"],
        run: nonfinite_weights,
    },
    ProbeSpec {
        id: "update_ratio",
        question: "Is the per-step update-to-weight ratio ||ΔW||/||W|| near 1e-3?",
        entries: &["O22"],
        inputs: &["checkpoint:2"],
        params: &["target", "low", "high", "outlier_ratio", "fail_factor"],
        outcomes: &["pass", "low", "high", "skip"],
        run: update_ratio,
    },
    ProbeSpec {
        id: "identical_tensors",
        question: "Are some trainable tensors byte-identical between checkpoints while others moved?",
        entries: &["O2", "O3", "O4"],
        inputs: &["checkpoint:2", "fact:frozen"],
        params: &["moved_rel"],
        outcomes: &["pass", "some_identical", "all_identical", "skip"],
        run: identical_tensors,
    },
    ProbeSpec {
        id: "frozen_drift",
        question: "Did tensors that should be frozen change between the last two checkpoints (frozen but still in the optimizer / still decayed)?",
        entries: &["O17", "X1"],
        inputs: &["checkpoint:2", "fact:frozen", "optimizer"],
        params: &["moved_rel", "shrink_cos", "grad_stopped_ratio"],
        outcomes: &["pass", "moved", "decayed", "skip"],
        run: frozen_drift,
    },
    ProbeSpec {
        id: "bn_drift",
        question: "Do BatchNorm running statistics drift while their layer is frozen?",
        entries: &["O18", "V7"],
        inputs: &["checkpoint:2", "fact:frozen"],
        params: &["moved_rel"],
        outcomes: &["pass", "drift", "skip"],
        run: bn_drift,
    },
    ProbeSpec {
        id: "ema_weights",
        question: "Is an EMA copy of the weights saved, and does it differ from the raw weights?",
        entries: &["DF2", "DF1"],
        inputs: &["checkpoint", "fact:domain", "config"],
        params: &["identical_rel"],
        outcomes: &["pass", "missing", "identical", "skip"],
        run: ema_weights,
    },
    ProbeSpec {
        id: "tower_freeze",
        question: "Which towers (vision encoder, projector, LLM) moved between checkpoints, against the declared VLM stage?",
        entries: &["X1", "X2", "X3"],
        inputs: &["checkpoint:2", "fact:stage"],
        params: &["moved_rel"],
        outcomes: &["pass", "wrong_towers", "skip"],
        run: tower_freeze,
    },
    ProbeSpec {
        id: "projector_dim",
        question: "Does the projector's output dimension equal the LLM hidden size?",
        entries: &["X2"],
        inputs: &["checkpoint", "config"],
        params: &[],
        outcomes: &["pass", "mismatch", "skip"],
        run: projector_dim,
    },
    ProbeSpec {
        id: "lora_wiring",
        question: "Are LoRA adapters present on the intended modules, and did lora_B leave zero?",
        entries: &["O21"],
        inputs: &["checkpoint", "adapter_config"],
        params: &["zero_abs"],
        outcomes: &["pass", "no_adapters", "b_zero", "skip"],
        run: lora_wiring,
    },
    ProbeSpec {
        id: "head_shape",
        question: "Does the classifier head match num_labels and the embedding match the vocabulary size?",
        entries: &["O20", "L3"],
        inputs: &["checkpoint", "fact:num_classes", "fact:vocab_size"],
        params: &[],
        outcomes: &["pass", "mismatch", "skip"],
        run: head_shape,
    },
    ProbeSpec {
        id: "weight_histograms",
        question: "Did any weight distribution collapse toward a spike at 0 or shrink its spread by 10× over training?",
        entries: &["O26", "O25"],
        inputs: &["checkpoint:2"],
        params: &["zero_frac_warn", "std_collapse", "zero_frac_growth"],
        outcomes: &["pass", "collapsed", "skip"],
        run: weight_histograms,
    },
    ProbeSpec {
        id: "decay_groups",
        question: "Do the weight-decayed param groups hold 1-D tensors (biases, norm gains)?",
        entries: &["S6.1", "O6"],
        inputs: &["optimizer"],
        params: &["decay_min", "mixed_status", "batchnorm_status"],
        outcomes: &["pass", "decayed_1d", "skip"],
        run: decay_groups,
    },
    ProbeSpec {
        id: "optimizer_rebuilt",
        question: "Do Adam's step count and second moments match the run's step (or was the optimizer rebuilt)?",
        entries: &["S6.2"],
        inputs: &["optimizer", "scheduler", "trainer_state"],
        params: &["step_ratio", "v_zero", "min_step"],
        outcomes: &["pass", "rebuilt", "skip"],
        run: optimizer_rebuilt,
    },
    ProbeSpec {
        id: "adam_eps",
        question: "Is Adam's eps representable and meaningful in the optimizer state's dtype?",
        entries: &["O10"],
        inputs: &["optimizer", "device"],
        params: &["fp16_min_eps", "bf16_min_eps"],
        outcomes: &["pass", "underflow", "skip"],
        run: adam_eps,
    },
    ProbeSpec {
        id: "params_without_state",
        question: "Are there parameters in the optimizer that never received state (never got a gradient)?",
        entries: &["O2", "O17"],
        inputs: &["optimizer"],
        params: &[],
        outcomes: &["pass", "missing_state", "skip"],
        run: params_without_state,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedding_names_are_read_generally() {
        use EmbedKind::{Other, Token};
        for (name, shape, kind) in [
            ("transformer.wte.weight", &[512, 64][..], Some(Token)),
            ("transformer.wpe.weight", &[128, 64], Some(Other)),
            ("model.embed_tokens.weight", &[32000, 4096], Some(Token)),
            (
                "bert.embeddings.word_embeddings.weight",
                &[30522, 768],
                Some(Token),
            ),
            (
                "bert.embeddings.position_embeddings.weight",
                &[512, 768],
                Some(Other),
            ),
            (
                "bert.embeddings.token_type_embeddings.weight",
                &[2, 768],
                Some(Other),
            ),
            ("tok_embeddings.weight", &[32000, 4096], Some(Token)),
            (
                "model.decoder.embed_positions.weight",
                &[2050, 768],
                Some(Other),
            ),
            ("shared.weight", &[32128, 512], Some(Token)),
            ("pos_embed", &[1, 197, 768], Some(Other)),
            ("cls_token", &[1, 1, 768], Some(Other)),
            ("register_tokens", &[4, 768], Some(Other)),
            (
                "vision_model.embeddings.class_embedding",
                &[768],
                Some(Other),
            ),
            // Layers inside embedding blocks are weight matrices; heads are heads.
            ("patch_embed.proj.weight", &[768, 3, 16, 16], None),
            (
                "vit.embeddings.patch_embeddings.projection.weight",
                &[768, 3, 16, 16],
                None,
            ),
            ("down.0.resnets.0.time_emb_proj.weight", &[320, 1280], None),
            ("time_embed.0.weight", &[1280, 320], None),
            ("lm_head.weight", &[512, 64], None),
            ("h.0.attn.c_attn.weight", &[64, 192], None),
            ("model.embed_tokens.bias", &[4096], None),
        ] {
            assert_eq!(embedding_kind(name, shape, None), kind, "{name}");
        }
        // Any 2-D table with vocab_size rows is a token table.
        assert_eq!(
            embedding_kind("tok.weight", &[512, 64], Some(512)),
            Some(Token)
        );
        assert_eq!(
            embedding_kind("lm_head.weight", &[512, 64], Some(512)),
            None
        );
    }
}
