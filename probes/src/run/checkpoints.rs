//! Grouping a run's weight files (and their optimizer, scheduler, …) into checkpoints by the
//! step or epoch they hold: from their contents first (`global_step`, `iter_num`,
//! `num_timesteps`, `epoch` among a torch checkpoint's top-level keys; an SB3 archive's
//! `data`), their names second (`checkpoint-N`, `rl_model_N_steps.zip`, `epoch10.pt`).
//! Self-contained single-file checkpoints (`last.pt`, `best.pt`, `epoch_6.pth`, an SB3 `.zip`)
//! are one checkpoint each, never merged by folder. Weights that are not a training step are
//! set aside with the reason: a diffusers pipeline export (`model_index.json` beside `unet/`
//! …), copies of a checkpoint (Lightning's `last.ckpt` as a symlink or a byte copy, TRL's
//! `save_model` folder) recognised by content, a `last`/`best` file holding the same step or
//! epoch as another checkpoint, and a best-metric copy (`best.pt`, `model_best.pth.tar`). A
//! single torch checkpoint that embeds its optimizer (nanoGPT `ckpt.pt`, Lightning `.ckpt`, an
//! SB3 archive) is used for both.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{classify, Artifact, ArtifactKind, CheckpointDir, IndexUnit, Run, SetAside};
use crate::names::{epoch_from_name, is_best_name, is_init_name, is_last_name, step_from_name};
use crate::tensors::{lookup, TorchZip, Value};

/// Files larger than this are compared by size and their first and last 8 MiB.
const FULL_COMPARE_MAX: u64 = 256 << 20;

/// What a torch checkpoint's top-level dict (or an SB3 archive's `data`) says about itself.
#[derive(Default)]
pub(crate) struct Embedded {
    pub(crate) step: Option<u64>,
    /// `epoch` as stored: -1 in a finished Ultralytics `best.pt` / `last.pt`.
    pub(crate) epoch: Option<i64>,
    /// Iterations per epoch, where the loop's state says (Ignite's `trainer.epoch_length`).
    pub(crate) epoch_length: Option<u64>,
    pub(crate) has_optimizer: bool,
}

impl Embedded {
    /// The epoch when it is a real one (not Ultralytics' -1 "finished" marker).
    fn epoch(&self) -> Option<u64> {
        self.epoch.and_then(|e| u64::try_from(e).ok())
    }
}

/// What a single weight file states about itself: read for torch files (any extension, by
/// content) and SB3 archives only; `.bin` / safetensors files (HF layouts) say nothing.
pub(crate) fn embedded(path: &Path, kind: ArtifactKind) -> Embedded {
    if kind == ArtifactKind::Sb3Model {
        return match crate::tensors::sb3::read(path) {
            Ok(a) => Embedded {
                step: a.num_timesteps,
                epoch: None,
                epoch_length: None,
                has_optimizer: a
                    .members
                    .iter()
                    .any(|m| m == crate::tensors::sb3::OPTIMIZER),
            },
            Err(_) => Embedded::default(),
        };
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if kind != ArtifactKind::TorchFile || ext == "bin" {
        return Embedded::default();
    }
    let Ok(z) = TorchZip::open(path) else {
        return Embedded::default();
    };
    let root = z.root();
    let num = |v: &Value| -> Option<u64> {
        match v {
            Value::Tensor(t) => z.scalar(t).ok().map(|f| f as i64),
            other => other.as_i64(),
        }
        .and_then(|i| u64::try_from(i).ok())
    };
    const STEP_KEYS: [&str; 6] = [
        "iter_num",
        "global_step",
        "global_steps",
        "step",
        "iteration",
        "num_timesteps",
    ];
    // The loop's counter sits at the top level (nanoGPT, Lightning, hand-written loops) or one
    // level down, in the state of the object that ran the loop (Ignite's `Checkpoint` saves
    // `{"model", "optimizer", "trainer": {"iteration", "epoch_length", …}}`). Two levels down
    // is an optimizer's per-parameter `step`, not the loop's.
    let find = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| lookup(root, k).and_then(num))
            .or_else(|| {
                let Value::Dict(d) = root else { return None };
                d.iter()
                    .find_map(|(_, v)| keys.iter().find_map(|k| lookup(v, k).and_then(num)))
            })
    };
    let step = find(&STEP_KEYS);
    let epoch_length = find(&["epoch_length"]).filter(|n| *n >= 2);
    let epoch = ["epoch", "current_epoch"]
        .iter()
        .find_map(|k| match lookup(root, k) {
            Some(Value::Tensor(t)) => z.scalar(t).ok().map(|f| f as i64),
            Some(v) => v.as_i64(),
            None => None,
        });
    let has_optimizer = ["optimizer", "optimizer_states", "optimizer_state_dict"]
        .iter()
        .any(|k| {
            lookup(root, k).is_some_and(|v| match v {
                Value::Dict(_) => lookup(v, "param_groups").is_some(),
                other => other
                    .as_seq()
                    .and_then(|s| s.first())
                    .is_some_and(|f| lookup(f, "param_groups").is_some()),
            })
        });
    Embedded {
        step,
        epoch,
        epoch_length,
        has_optimizer,
    }
}

/// Same file (one target of two links) or same bytes.
fn same_content(a: &Path, b: &Path) -> bool {
    if let (Ok(ca), Ok(cb)) = (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        if ca == cb {
            return true;
        }
    }
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if ma.len() != mb.len() || ma.len() == 0 {
        return false;
    }
    let len = ma.len();
    let read = |p: &Path, from: u64, n: u64| -> Option<Vec<u8>> {
        use std::io::Seek;
        let mut f = crate::limits::open_regular_io(p).ok()?;
        f.seek(std::io::SeekFrom::Start(from)).ok()?;
        let mut buf = Vec::new();
        f.take(n).read_to_end(&mut buf).ok()?;
        Some(buf)
    };
    let ranges: Vec<(u64, u64)> = if len <= FULL_COMPARE_MAX {
        vec![(0, len)]
    } else {
        vec![(0, 8 << 20), (len - (8 << 20), 8 << 20)]
    };
    ranges
        .into_iter()
        .all(|(from, n)| match (read(a, from, n), read(b, from, n)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        })
}

/// Group weight files (and their optimizer, scheduler, …) into checkpoints ordered by step,
/// with the weight files that are no training step set aside.
pub(super) fn group_checkpoints(run: &Run) -> (Vec<CheckpointDir>, Vec<SetAside>) {
    use ArtifactKind as K;
    let base = run.base().to_path_buf();
    let mut set_aside: Vec<SetAside> = Vec::new();
    let export_roots: Vec<PathBuf> = run
        .of_kind(K::PipelineIndex)
        .iter()
        .filter_map(|a| a.path.parent().map(Path::to_path_buf))
        .collect();
    // The folder (or, for `epoch=E-step=S.ckpt` / `epoch10.pt`, the file) that gives an
    // artifact its step or epoch, from names.
    let container = |a: &Artifact| -> Option<(PathBuf, u64, IndexUnit)> {
        if a.kind.is_weights() {
            let own = a.path.file_name().map(|n| n.to_string_lossy().into_owned());
            let own = own.as_deref().unwrap_or("");
            if let Some(s) = step_from_name(own) {
                return Some((a.path.clone(), s, IndexUnit::Step));
            }
            if let Some(e) = epoch_from_name(own) {
                return Some((a.path.clone(), e, IndexUnit::Epoch));
            }
        }
        let mut dir = a.path.parent();
        while let Some(d) = dir {
            if let Some(s) = d
                .file_name()
                .and_then(|n| step_from_name(&n.to_string_lossy()))
            {
                return Some((d.to_path_buf(), s, IndexUnit::Step));
            }
            if d == base || !d.starts_with(&base) {
                break;
            }
            dir = d.parent();
        }
        None
    };
    let mut groups: BTreeMap<PathBuf, CheckpointDir> = BTreeMap::new();
    let mut unstepped: BTreeMap<PathBuf, Vec<&Artifact>> = BTreeMap::new();
    let mut extras: Vec<(&Artifact, PathBuf)> = Vec::new();
    for a in &run.artifacts {
        match (a.kind, container(a)) {
            (k, Some((path, step, unit))) if k.is_weights() || k == K::Optimizer => {
                let own_file = path == a.path;
                let g = groups.entry(path.clone()).or_insert_with(|| CheckpointDir {
                    step,
                    unit,
                    epoch: (unit == IndexUnit::Epoch).then_some(step),
                    path,
                    ..Default::default()
                });
                if k == K::Optimizer {
                    g.optimizer.get_or_insert_with(|| a.path.clone());
                } else {
                    g.weights.push(a.path.clone());
                }
                // A single-file checkpoint's contents outrank its name: timm's
                // `checkpoint-7.pth.tar` holds epoch 7 and no step; Lightning's
                // `epoch=2-step=300.ckpt` holds both.
                if own_file && k != K::Optimizer {
                    let emb = embedded(&a.path, k);
                    g.epoch = emb.epoch().or(g.epoch);
                    if let Some(s) = emb.step {
                        g.step = s;
                        g.unit = IndexUnit::Step;
                    } else if let Some(e) = emb.epoch() {
                        g.step = e;
                        g.unit = IndexUnit::Epoch;
                    }
                    if emb.has_optimizer {
                        g.optimizer.get_or_insert_with(|| a.path.clone());
                    }
                }
            }
            (k, None) if k.is_weights() => {
                if let Some(root) = export_roots.iter().find(|r| a.path.starts_with(r)) {
                    set_aside.push(SetAside {
                        path: a.path.clone(),
                        reason: format!(
                            "part of the pipeline exported with {} (save_pretrained): an export, not a training step",
                            root.join("model_index.json").display()
                        ),
                        start_weights: false,
                    });
                    continue;
                }
                let dir = a.path.parent().unwrap_or(&base).to_path_buf();
                unstepped.entry(dir).or_default().push(a);
            }
            (
                K::Scheduler | K::TrainerState | K::ModelConfig | K::TrainingArgs,
                Some((path, _, _)),
            ) => extras.push((a, path)),
            _ => {}
        }
    }
    for (a, path) in extras {
        if let Some(g) = groups.get_mut(&path) {
            let slot = match a.kind {
                K::Scheduler => &mut g.scheduler,
                K::TrainerState => &mut g.trainer_state,
                K::ModelConfig => &mut g.config,
                _ => &mut g.training_args,
            };
            slot.get_or_insert_with(|| a.path.clone());
        }
    }
    let mut out: Vec<CheckpointDir> = groups.into_values().collect();
    for c in &mut out {
        steps_by_own_state(c);
    }
    // Torch checkpoints that embed their optimizer (Lightning `.ckpt`) are their own optimizer.
    for c in &mut out {
        // (A single-file checkpoint was already read above.)
        if c.optimizer.is_none() && c.weights.len() == 1 && c.path != c.weights[0] {
            let kind = run.kind_of(&c.weights[0]);
            if embedded(&c.weights[0], kind).has_optimizer {
                c.optimizer = Some(c.weights[0].clone());
            }
        }
    }
    // Checkpoints whose index a name or the contents state (not inferred as the final one).
    let mut stated: HashSet<PathBuf> = out.iter().map(|c| c.path.clone()).collect();
    if !unstepped.is_empty() {
        stated.extend(unstepped_checkpoints(run, &base, unstepped, &mut out));
    }
    // A final checkpoint whose every weight file has the content of a stepped one is a copy.
    let stepped: Vec<(String, Vec<PathBuf>)> = out
        .iter()
        .filter(|c| !c.is_final && !c.is_init)
        .map(|c| (c.index_label(), c.weights.clone()))
        .collect();
    out.retain(|c| {
        if !c.is_final || c.weights.is_empty() {
            return true;
        }
        let twin = stepped.iter().rev().find_map(|(step, ws)| {
            let pairs: Option<Vec<&PathBuf>> = c
                .weights
                .iter()
                .map(|w| ws.iter().find(|o| same_content(w, o)))
                .collect();
            pairs.map(|p| (step.clone(), p))
        });
        match twin {
            Some((step, of)) => {
                for (w, o) in c.weights.iter().zip(of) {
                    set_aside.push(SetAside {
                        path: w.clone(),
                        reason: format!(
                            "same content as {} ({step}): a copy of that checkpoint, not a new step",
                            o.display()
                        ),
                        start_weights: false,
                    });
                }
                false
            }
            None => true,
        }
    });
    set_aside_named_copies(&mut out, &stated, &mut set_aside);
    set_aside_start_weights(&base, &mut out, &mut set_aside);
    for c in &mut out {
        // `checkpoint-0` or an explicit step 0 is the init; a placeholder 0 is not, and neither
        // is epoch 0 (saved after the first epoch).
        c.is_init |= c.step == 0 && !c.step_unknown && c.unit == IndexUnit::Step;
        // A sharded checkpoint is named by its index; the shards are not listed separately.
        let indexed: Vec<PathBuf> = c
            .weights
            .iter()
            .filter(|w| classify(&file_name(w)) == K::SafetensorsIndex)
            .cloned()
            .collect();
        if !indexed.is_empty() {
            c.weights = indexed;
        }
        c.weights.sort_by_key(|w| {
            (
                !file_name(w).ends_with(".safetensors") && !file_name(w).ends_with(".json"),
                w.clone(),
            )
        });
    }
    attach_vecnormalize(run, &mut out);
    out.sort_by(|a, b| (a.step, a.is_final, &a.path).cmp(&(b.step, b.is_final, &b.path)));
    (out, set_aside)
}

/// A checkpoint folder whose own optimizer or scheduler state has taken more steps than the
/// number in its name: the name counts saves or epochs (accelerate's automatic naming writes
/// `checkpoints/checkpoint_0`, `checkpoint_1`, … at steps 50 and 100), the state counts optimizer
/// steps, so the state gives the step. A name at or above the state's count is kept: it is the
/// step, and a scheduler stepped once per epoch counts less. A folder beside its
/// `trainer_state.json` (HF Trainer's `checkpoint-N`) is named by its global step: its states are
/// not opened (on a multi-GB `optimizer.pt`, that read is most of a cold `inspect`).
fn steps_by_own_state(c: &mut CheckpointDir) {
    if c.unit != IndexUnit::Step || c.weights.contains(&c.path) || c.trainer_state.is_some() {
        return;
    }
    let sched = c.scheduler.as_deref().and_then(|p| {
        let z = TorchZip::open(p).ok()?;
        let v = lookup(z.root(), "last_epoch")?;
        match v {
            Value::Tensor(t) => z.scalar(t).ok(),
            other => other.as_f64(),
        }
    });
    let adam = || {
        crate::tensors::optim::OptimizerState::open(c.optimizer.as_deref()?)
            .ok()?
            .max_step()
    };
    let Some(taken) = sched.filter(|s| *s >= 1.0).or_else(adam) else {
        return;
    };
    if taken.is_finite() && taken > c.step as f64 {
        c.step = taken as u64;
    }
}

/// Weights the run started from, found in its folder: a checkpoint taken as the final model only
/// because nothing states its step, in a subfolder, that is named for a pretraining
/// (`pretrained/`, `pretrain_weights.pth`) or whose tensors have other shapes than the run's own
/// checkpoints (a pretrained 4-class head beside a fine-tune's 6-class one). The final model of a
/// run has its checkpoints' shapes; a model of other shapes is not a state of this run.
fn set_aside_start_weights(
    base: &Path,
    out: &mut Vec<CheckpointDir>,
    set_aside: &mut Vec<SetAside>,
) {
    let newest_stepped = out
        .iter()
        .filter(|c| !c.is_final && !c.is_init)
        .max_by_key(|c| c.step)
        .and_then(|c| c.weights.first().cloned());
    // A path part naming a pretrained or base model: `pretrained/`, `pretrain_weights.pth`,
    // `base_model/`, `base/`, `foundation_model/` (a word of its own: not "database").
    let pretrain_named = |p: &Path| {
        p.strip_prefix(base).is_ok_and(|rel| {
            rel.iter().any(|n| {
                let n = n.to_string_lossy().to_lowercase();
                n.contains("pretrain")
                    || n.split(|c: char| !c.is_ascii_alphanumeric())
                        .any(|w| w == "base" || w == "foundation")
            })
        })
    };
    out.retain(|c| {
        let subfolder = c.weights.iter().all(|w| w.parent() != Some(base));
        if !c.is_final || !c.step_unknown && c.step == 0 || !subfolder || c.weights.len() != 1 {
            return true;
        }
        let w = &c.weights[0];
        let reason = if pretrain_named(w) {
            Some("named for a pretrained or base model and stating no step: the weights the run started from, not a state of it".to_string())
        } else {
            newest_stepped
                .as_ref()
                .and_then(|n| other_shape(w, n).map(|d| (d, n)))
                .map(|((name, here, there), n)| {
                    format!(
                        "tensor {name} has shape {here:?} here but {there:?} in the run's checkpoint {}: another model (the weights the run started from), not a state of this run",
                        n.display()
                    )
                })
        };
        match reason {
            Some(reason) => {
                set_aside.push(SetAside {
                    path: w.clone(),
                    reason,
                    start_weights: true,
                });
                false
            }
            None => true,
        }
    });
}

/// The first tensor both files hold with different shapes: (name, shape in `a`, shape in `b`).
fn other_shape(a: &Path, b: &Path) -> Option<(String, Vec<usize>, Vec<usize>)> {
    let (fa, fb) = (
        crate::tensors::TensorFile::open(a).ok()?,
        crate::tensors::TensorFile::open(b).ok()?,
    );
    fa.tensors().iter().find_map(|t| {
        let o = fb.get(&t.name)?;
        (o.shape != t.shape).then(|| (t.name.clone(), t.shape.clone(), o.shape.clone()))
    })
}

/// A file that is a whole checkpoint by itself: a torch file or SB3 archive that states its
/// step or epoch, embeds its optimizer, or is named `last`/`best` — never one part of an HF or
/// diffusers folder (`pytorch_model.bin`, shards, `adapter_model.bin`).
fn self_contained(a: &Artifact, emb: &Embedded) -> bool {
    use ArtifactKind as K;
    match a.kind {
        K::Sb3Model => true,
        K::TorchFile => {
            emb.step.is_some()
                || emb.epoch.is_some()
                || emb.has_optimizer
                || is_best_name(&a.path)
                || is_last_name(&a.path)
        }
        _ => false,
    }
}

/// Weights with no step or epoch in their names: self-contained files one checkpoint each
/// (their contents give the index), the rest grouped by folder as the run's final model.
/// Returns the paths of the checkpoints whose contents stated their index.
fn unstepped_checkpoints(
    run: &Run,
    base: &Path,
    unstepped: BTreeMap<PathBuf, Vec<&Artifact>>,
    out: &mut Vec<CheckpointDir>,
) -> Vec<PathBuf> {
    let mut stated_paths = Vec::new();
    use ArtifactKind as K;
    // The init (step 0) says nothing of where training stopped: with only it, the end is unknown.
    let known_max = out.iter().map(|c| c.step).filter(|s| *s > 0).max();
    // Unknown when nothing states it: never 0 by default, which would read as the init.
    let final_step = run
        .trainer_state()
        .and_then(|t| t.global_step)
        .or(known_max.map(|m| m.saturating_add(1)));
    let unit_of_run = out
        .iter()
        .find(|c| !c.is_final)
        .map_or(IndexUnit::Step, |c| c.unit);
    let sibling = |dir: &Path, k: ArtifactKind| {
        run.artifacts
            .iter()
            .find(|a| a.kind == k && a.path.parent() == Some(dir))
            .map(|a| a.path.clone())
    };
    for (dir, files) in unstepped {
        let mut rest: Vec<&Artifact> = Vec::new();
        let mut singles: Vec<(&Artifact, Embedded)> = Vec::new();
        for a in files {
            let emb = embedded(&a.path, a.kind);
            if self_contained(a, &emb) {
                singles.push((a, emb));
            } else {
                rest.push(a);
            }
        }
        // One lone file keeps the folder's extras (a nanoGPT `ckpt.pt` beside its config).
        let lone = singles.len() == 1 && rest.is_empty();
        for (a, emb) in singles {
            let init = is_init_name(&a.path);
            let (step, unit) = match (emb.step, emb.epoch()) {
                (Some(s), _) => (Some(s), IndexUnit::Step),
                (None, Some(e)) => (Some(e), IndexUnit::Epoch),
                (None, None) => (final_step, unit_of_run),
            };
            let stated = emb.step.is_some() || emb.epoch().is_some();
            let path = if lone { dir.clone() } else { a.path.clone() };
            if stated {
                stated_paths.push(path.clone());
            }
            out.push(CheckpointDir {
                step: if init { 0 } else { step.unwrap_or(0) },
                unit,
                epoch: emb.epoch(),
                weights: vec![a.path.clone()],
                optimizer: emb
                    .has_optimizer
                    .then(|| a.path.clone())
                    .or_else(|| lone.then(|| sibling(&dir, K::Optimizer)).flatten()),
                scheduler: lone.then(|| sibling(&dir, K::Scheduler)).flatten(),
                trainer_state: lone.then(|| sibling(&dir, K::TrainerState)).flatten(),
                config: lone.then(|| sibling(&dir, K::ModelConfig)).flatten(),
                training_args: lone.then(|| sibling(&dir, K::TrainingArgs)).flatten(),
                is_init: init,
                is_final: !init,
                step_unknown: !init && step.is_none(),
                path,
                vecnormalize: None,
            });
        }
        if rest.is_empty() {
            continue;
        }
        let init =
            rest.iter().all(|a| is_init_name(&a.path)) || (dir != base && is_init_name(&dir));
        let step = final_step;
        out.push(CheckpointDir {
            step: if init { 0 } else { step.unwrap_or(0) },
            unit: if init { IndexUnit::Step } else { unit_of_run },
            epoch: None,
            weights: rest.iter().map(|a| a.path.clone()).collect(),
            optimizer: sibling(&dir, K::Optimizer),
            scheduler: sibling(&dir, K::Scheduler),
            trainer_state: sibling(&dir, K::TrainerState),
            config: sibling(&dir, K::ModelConfig),
            training_args: sibling(&dir, K::TrainingArgs),
            is_init: init,
            is_final: !init,
            step_unknown: !init && step.is_none(),
            path: dir,
            vecnormalize: None,
        });
    }
    stated_paths
}

/// Single-file checkpoints named as copies (`last`, `best`, or no index in the name: SB3's
/// final `ppo.zip`) that hold the same stated step or epoch as another checkpoint, and
/// best-metric copies whose epoch is not stated, are set aside: the other checkpoint (or the
/// `last` one) stands for them.
fn set_aside_named_copies(
    out: &mut Vec<CheckpointDir>,
    stated: &HashSet<PathBuf>,
    set_aside: &mut Vec<SetAside>,
) {
    fn single(c: &CheckpointDir) -> Option<&Path> {
        (c.weights.len() == 1).then(|| c.weights[0].as_path())
    }
    let best = |c: &CheckpointDir| single(c).is_some_and(is_best_name);
    // 2: best, 1: last or unnamed, 0: named by its index.
    let copy_rank = |c: &CheckpointDir| -> u8 {
        let Some(w) = single(c) else { return 0 };
        if is_best_name(w) {
            2
        } else if is_last_name(w)
            || !c.path.ancestors().take(2).chain([w]).any(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    step_from_name(&n).is_some() || epoch_from_name(&n).is_some()
                })
            })
        {
            1
        } else {
            0
        }
    };
    let mut drop = vec![false; out.len()];
    for i in 0..out.len() {
        let c = &out[i];
        let rank = copy_rank(c);
        if rank == 0 || !stated.contains(&c.path) {
            continue;
        }
        let twin = out.iter().enumerate().find(|(j, o)| {
            *j != i
                && !drop[*j]
                && stated.contains(&o.path)
                && o.unit == c.unit
                && o.step == c.step
                && copy_rank(o) < rank
        });
        if let Some((_, o)) = twin {
            let what = match c.unit {
                IndexUnit::Epoch => "epoch",
                IndexUnit::Step => "step",
            };
            let reason = format!(
                "holds the same {what} ({}) as {}: a copy of that checkpoint, not a new {what}",
                c.step,
                o.weights.first().unwrap_or(&o.path).display()
            );
            set_aside.extend(c.weights.iter().map(|w| SetAside {
                path: w.clone(),
                reason: reason.clone(),
                start_weights: false,
            }));
            drop[i] = true;
        }
    }
    // A best-metric copy that states no epoch, beside other checkpoints: a copy of one of them.
    let others = out.len() - drop.iter().filter(|d| **d).count();
    for (i, c) in out.iter().enumerate() {
        if !drop[i] && others > 1 && best(c) && !stated.contains(&c.path) {
            set_aside.push(SetAside {
                path: c.weights[0].clone(),
                reason: "the best-scoring copy of an earlier checkpoint (its epoch is not stated): not a new step; the last checkpoint is the final one".into(),
                start_weights: false,
            });
            drop[i] = true;
        }
    }
    let mut k = drop.iter();
    out.retain(|_| !*k.next().unwrap_or(&false));
}

/// SB3 VecNormalize statistics saved with a checkpoint: the pickle of the same step
/// (`rl_model_vecnormalize_N_steps.pkl` beside `rl_model_N_steps.zip`), or for a final model
/// the unstepped `vec_normalize.pkl` beside it.
fn attach_vecnormalize(run: &Run, out: &mut [CheckpointDir]) {
    let pkls = run.of_kind(ArtifactKind::VecNormalize);
    if pkls.is_empty() {
        return;
    }
    for c in out.iter_mut() {
        let dir = if c.path.is_file() {
            c.path.parent()
        } else {
            Some(c.path.as_path())
        };
        let hit = pkls.iter().find(|a| {
            a.path.parent() == dir
                && match a.step {
                    Some(s) => !c.is_final && c.unit == IndexUnit::Step && s == c.step,
                    None => {
                        c.is_final
                            || c.weights
                                .iter()
                                .all(|w| step_from_name(&file_name(w)).is_none())
                    }
                }
        });
        c.vecnormalize = hit.map(|a| a.path.clone());
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
