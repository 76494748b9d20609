//! A checkpoint as one model (the union of its weight files) and the name classes probes
//! share: buffers, norms, LoRA factors, EMA and adapter files, canonical names, movement.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::device::Compute;
use crate::probe::{Evidence, Verdict};
use crate::run::{CheckpointDir, Run};
use crate::tensors::pass::{self, Pass};
use crate::tensors::{stats_on_device, DiffStats, TensorFile, TensorInfo, TensorStats};

use crate::probes::util::*;

// =======================================================================================
// Shared helpers: checkpoints as unions of weight files, name classes, statistics.
// =======================================================================================

/// Tokens of a file or folder name split on anything that is not a letter or digit.
pub(crate) fn tokens(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_ascii_lowercase())
}

pub(crate) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// An EMA copy of the weights, by its file or folder name (`ema.safetensors`, `unet_ema/…`,
/// `model_ema.pt`, `diffusion_pytorch_model.ema.bin`).
pub(crate) fn is_ema_path(p: &Path) -> bool {
    let own = file_name(p);
    let parent = p.parent().map(file_name).unwrap_or_default();
    let hit = tokens(&own)
        .chain(tokens(&parent))
        .any(|t| t == "ema" || t == "shadow");
    hit
}

/// PEFT adapter weights (`adapter_model.safetensors`, `adapter_model.bin`).
pub(crate) fn is_adapter_path(p: &Path) -> bool {
    file_name(p)
        .to_ascii_lowercase()
        .starts_with("adapter_model")
}

pub(crate) fn last_component(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

pub(crate) fn module_of(name: &str) -> &str {
    name.rsplit_once('.').map(|(m, _)| m).unwrap_or("")
}

/// Buffers and other tensors no optimizer updates: registered buffers (known from a pickled
/// module's `_buffers`), and by name: norm statistics, position ids, rotary frequencies,
/// detection anchors and strides (YOLO `anchors`, `anchor_grid`, `strides`, `stride`).
/// An attention or pruning mask saved with the weights (`mask`, `attn_mask`, `causal_mask`,
/// `weight_mask`): a buffer by its name.
pub(crate) fn is_mask_name(name: &str) -> bool {
    let last = last_component(name).to_ascii_lowercase();
    last == "mask" || last.ends_with("_mask")
}

pub(crate) fn is_buffer(name: &str, info: &TensorInfo) -> bool {
    let last = last_component(name);
    info.buffer
        || is_mask_name(name)
        || matches!(last, "running_mean" | "running_var" | "num_batches_tracked" | "position_ids" | "inv_freq" | "masked_bias" | "token_type_ids" | "anchors" | "anchor_grid" | "strides" | "stride")
        || name.contains("relative_position_index")
        // GPT-2's causal-mask buffer `attn.bias` is [1, 1, n, n].
        || (last == "bias" && info.shape.len() == 4 && info.shape[0] == 1 && info.shape[1] == 1)
}

/// A float tensor an optimizer may update.
pub(crate) fn is_trainable(name: &str, info: &TensorInfo) -> bool {
    info.dtype.is_float() && !is_buffer(name, info) && info.numel() > 0
}

pub(crate) fn is_lora(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("lora_") || n.contains(".lora.")
}

pub(crate) fn is_lora_b(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("lora_b") || n.contains("lora_up") || n.contains("lora_embedding_b")
}

pub(crate) fn is_lora_a(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("lora_a") || n.contains("lora_down") || n.contains("lora_embedding_a")
}

/// A normalisation layer's parameter by name (`ln_1`, `layernorm`, `norm`, `bn1`, `gamma`).
pub(crate) fn is_norm_name(name: &str) -> bool {
    name.split('.').any(|c| {
        let c = c.to_ascii_lowercase();
        c.starts_with("ln") || c.contains("norm") || c.starts_with("bn") || c == "gamma"
    })
}

/// Strip wrappers that differ between save paths (`module.` from DDP, `_orig_mod.` from
/// torch.compile) so tensors of two checkpoints can be paired.
pub(crate) fn canonical(name: &str) -> &str {
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
pub(crate) fn under(name: &str, prefix: &str) -> bool {
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
pub(crate) fn natural_key(s: &str) -> Vec<(u8, u64, String)> {
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
pub(crate) fn fstep(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        fmt(x)
    }
}

pub(crate) fn shape_str(s: &[usize]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Up to `n` items, then `… (+k more)`.
pub(crate) fn list_some(items: &[String], n: usize) -> String {
    let mut s = items.iter().take(n).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > n {
        s.push_str(&format!(" … (+{} more)", items.len() - n));
    }
    s
}

/// Statistics of one tensor: the fused CPU pass, or candle ops on the GPU.
pub(crate) fn tstats(
    tf: &TensorFile,
    name: &str,
    compute: &Compute,
) -> Result<TensorStats, String> {
    // A DCP tensor's chunks stream through the CPU statistics (loading one whole onto the
    // device would assemble it).
    if compute.is_cuda() && tf.kind() != crate::tensors::FileKind::Dcp {
        let t = tf.load(name, &compute.device).map_err(|e| e.to_string())?;
        return stats_on_device(&t).map_err(|e| format!("{}: {name}: {e}", tf.path().display()));
    }
    tf.stats(name).map_err(|e| e.to_string())
}

/// One checkpoint's model weights: the union of its weight files (shards without an index,
/// diffusers sub-folders), EMA copies and PEFT adapters left out unless they are all there is.
pub(crate) struct Model {
    pub(crate) step: u64,
    /// False for a lone model folder whose step nothing states (`step` is then a placeholder).
    pub(crate) step_known: bool,
    pub(crate) files: Vec<TensorFile>,
    /// Tensor names in file order with the file holding each.
    pub(crate) names: Vec<(String, usize)>,
    pub(crate) index: HashMap<String, usize>,
    pub(crate) canon: HashMap<String, usize>,
}

impl Model {
    pub(crate) fn open(c: &CheckpointDir) -> Result<Model, String> {
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

    pub(crate) fn open_paths(paths: &[&PathBuf], step: u64) -> Result<Model, String> {
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
                    m.push_file(tf);
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

    /// The copy of the model a checkpoint keeps under its own top-level key beside the weights
    /// (timm's `state_dict_ema`, a `model_ema` or `ema` entry), opened as a model; None when no
    /// weight file holds that key.
    pub(crate) fn open_part(c: &CheckpointDir, key: &str) -> Option<Model> {
        let mut m = Model {
            step: c.step,
            step_known: !c.step_unknown,
            files: Vec::new(),
            names: Vec::new(),
            index: HashMap::new(),
            canon: HashMap::new(),
        };
        for p in c
            .weights
            .iter()
            .filter(|p| !is_ema_path(p) && !is_adapter_path(p))
        {
            if let Ok(tf) = TensorFile::open_part(p, key) {
                m.push_file(tf);
            }
        }
        (!m.names.is_empty()).then_some(m)
    }

    /// Adds a file's tensors (a name already held keeps its first file).
    fn push_file(&mut self, tf: TensorFile) {
        let fi = self.files.len();
        for t in tf.tensors() {
            if self.index.contains_key(&t.name) {
                continue;
            }
            let pos = self.names.len();
            self.index.insert(t.name.clone(), pos);
            self.canon
                .entry(canonical(&t.name).to_string())
                .or_insert(pos);
            self.names.push((t.name.clone(), fi));
        }
        self.files.push(tf);
    }

    pub(crate) fn path(&self) -> &Path {
        self.files[0].path()
    }

    pub(crate) fn ev(&self) -> Evidence {
        let e = Evidence::file(self.path());
        if self.step_known {
            e.steps(self.step, self.step)
        } else {
            e
        }
    }

    /// `step N`, or `an unknown step` for a lone model folder.
    pub(crate) fn at(&self) -> String {
        if self.step_known {
            format!("step {}", self.step)
        } else {
            "an unknown step".to_string()
        }
    }

    pub(crate) fn file(&self, name: &str) -> Option<&TensorFile> {
        self.index.get(name).map(|&i| &self.files[self.names[i].1])
    }

    pub(crate) fn info(&self, name: &str) -> Option<&TensorInfo> {
        self.file(name)?.get(name)
    }

    /// Every tensor with its info, in file order.
    pub(crate) fn infos(&self) -> impl Iterator<Item = (&str, &TensorInfo)> {
        self.names
            .iter()
            .filter_map(|(n, fi)| self.files[*fi].get(n).map(|i| (n.as_str(), i)))
    }

    /// This model's name for a tensor named `name` in another checkpoint.
    pub(crate) fn find(&self, name: &str) -> Option<&str> {
        if self.index.contains_key(name) {
            return Some(self.names[self.index[name]].0.as_str());
        }
        self.canon
            .get(canonical(name))
            .map(|&i| self.names[i].0.as_str())
    }

    /// From the tensor pass (each tensor read once per process), or on the GPU with candle.
    pub(crate) fn stats(&self, name: &str, compute: &Compute) -> Result<TensorStats, String> {
        let f = self
            .file(name)
            .ok_or_else(|| format!("no tensor {name:?}"))?;
        if compute.is_cuda() {
            return tstats(f, name, compute);
        }
        pass::stats(f, name).map_err(|e| e.to_string())
    }

    /// Compares `name` here (the earlier weights) with `other_name` in `other`.
    pub(crate) fn diff(
        &self,
        name: &str,
        other: &Model,
        other_name: &str,
    ) -> Result<DiffStats, String> {
        let a = self
            .file(name)
            .ok_or_else(|| format!("no tensor {name:?}"))?;
        let b = other
            .file(other_name)
            .ok_or_else(|| format!("no tensor {other_name:?}"))?;
        pass::diff(a, name, b, other_name).map_err(|e| e.to_string())
    }

    pub(crate) fn has_lora(&self) -> bool {
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
    for (i, c) in cks.iter().enumerate() {
        if i == 0 || i == init || i >= start {
            if let Ok(m) = Model::open(c) {
                models.push((i, m));
            }
        }
    }
    // The newest optimizer state's moments are read in the same pass (its parse is shared
    // with the optimizer probes).
    let opt = crate::probes::checkpoint::optimizer_state::newest_optimizer(run, "").ok();
    let mut plan = Pass::new();
    if let Some((o, _)) = &opt {
        o.plan(&mut plan);
    }
    // On a GPU the statistics are computed there, tensor by tensor; comparisons stay here.
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
            let (Some(an), Some(fb)) = (a.find(name), b.file(name)) else {
                continue;
            };
            if let Some(fa) = a.file(an) {
                plan.diff(fa, an, fb, name);
            }
        }
    }
    plan.run();
}

/// Checkpoints with weights, ordered by step, one per step (a checkpoint folder wins over the
/// final export of the same step). A final model whose step is unknown is not merged into a
/// step-0 init.
pub(crate) fn weight_ckpts(run: &Run) -> Vec<&CheckpointDir> {
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

/// Below this relative change a tensor is the same tensor: the final weights written again
/// in the same dtype are bit-identical, and any optimizer step moves a trained tensor further.
const SAVED_AGAIN_REL: f64 = 1.0e-7;

/// The last two checkpoints (earlier, later), opened: the span of training the checkpoint
/// probes judge. The run's final weights under a name that states no step (Ultralytics'
/// `last.pt` / `best.pt`, a final `model.pt` written after the last periodic save) are placed
/// one step after the last checkpoint; when every float tensor equals that checkpoint's, they
/// are the same weights saved again and the pair spans no training at all (nothing moved,
/// not even BatchNorm statistics), so the pair before them is the span judged. With no pair
/// before them there is nothing to judge.
pub(crate) fn last_two(run: &Run, entry: &str) -> Result<(Model, Model), Vec<Verdict>> {
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
    let open = |c: &CheckpointDir| open_or_skip(c, entry);
    let n = cks.len();
    let (ma, mb) = (open(cks[n - 2])?, open(cks[n - 1])?);
    if !(cks[n - 1].is_final && saved_again(&ma, &mb)) {
        return Ok((ma, mb));
    }
    if n < 3 {
        return Err(vec![Verdict::skip(
            entry,
            format!(
                "the final weights ({}) equal the checkpoint of {} tensor for tensor: the same weights saved again, and no other pair of checkpoints to compare",
                cks[n - 1].path.display(),
                cks[n - 2].index_label()
            ),
        )]);
    }
    Ok((open(cks[n - 3])?, ma))
}

/// Does `b` hold exactly `a`'s float tensors (none moved past [`SAVED_AGAIN_REL`])?
fn saved_again(a: &Model, b: &Model) -> bool {
    let (mv, errors) = movements(a, b, |_, i| i.dtype.is_float() && i.numel() > 0);
    errors.is_empty() && !mv.is_empty() && mv.iter().all(|m| m.rel <= SAVED_AGAIN_REL)
}

pub(crate) fn newest_model(run: &Run, entry: &str) -> Result<Model, Vec<Verdict>> {
    let cks = weight_ckpts(run);
    let Some(c) = cks.last() else {
        return Err(vec![Verdict::skip(
            entry,
            "no checkpoint weights in the run",
        )]);
    };
    open_or_skip(c, entry)
}

/// The checkpoint's model, or `entry`'s skip naming the file that could not be read.
fn open_or_skip(c: &CheckpointDir, entry: &str) -> Result<Model, Vec<Verdict>> {
    Model::open(c).map_err(|e| {
        vec![Verdict::skip(
            entry,
            format!("cannot read checkpoint {}: {e}", c.path.display()),
        )]
    })
}

/// `‖b − a‖ / ‖a‖`, with a zero `a` counting as moved when anything changed.
pub(crate) fn rel_change(d: &DiffStats) -> f64 {
    if d.identical_bytes || d.norm_diff == 0.0 {
        0.0
    } else if d.norm_a > 0.0 {
        d.norm_diff / d.norm_a
    } else {
        f64::INFINITY
    }
}

/// How tensors moved between two checkpoints.
pub(crate) struct Movement {
    pub(crate) name: String,
    pub(crate) shape: Vec<usize>,
    pub(crate) diff: DiffStats,
    pub(crate) rel: f64,
}

/// Compares every tensor of `b` accepted by `keep` with its counterpart in `a`.
pub(crate) fn movements(
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

pub(crate) fn step_ev(a: &Model, b: &Model) -> Evidence {
    let e = Evidence::file(b.path());
    if a.step_known && b.step_known {
        e.steps(a.step, b.step)
    } else {
        e
    }
}

/// The run's initial weights: `checkpoint-0`, an explicit step 0, or named as the init — never a
/// lone model folder whose step is unknown.
pub(crate) fn is_init_ckpt(c: &CheckpointDir) -> bool {
    c.before_training()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Tower {
    Vision,
    Projector,
    Llm,
}

impl Tower {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Tower::Vision => "vision",
            Tower::Projector => "projector",
            Tower::Llm => "llm",
        }
    }
}

pub(crate) fn tower_of(name: &str) -> Option<Tower> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensors::DType;

    fn info(shape: &[usize], buffer: bool) -> TensorInfo {
        TensorInfo {
            name: String::new(),
            dtype: DType::F32,
            shape: shape.to_vec(),
            buffer,
        }
    }

    #[test]
    fn detection_anchors_and_registered_buffers_are_not_weights() {
        // YOLOv5's Detect registers `anchors`; Ultralytics keeps `stride`/`strides`.
        for n in [
            "model.24.anchors",
            "model.24.anchor_grid",
            "model.22.strides",
            "stride",
        ] {
            assert!(!is_trainable(n, &info(&[3, 3, 2], false)), "{n}");
        }
        // A pickled module said it was a buffer, whatever its name.
        assert!(!is_trainable("model.1.custom_table", &info(&[4, 4], true)));
        assert!(is_trainable(
            "model.0.conv.weight",
            &info(&[4, 3, 3, 3], false)
        ));
    }
}
