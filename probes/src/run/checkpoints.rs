//! Grouping a run's weight files (and their optimizer, scheduler, …) into checkpoints by step.
//! Weights that are not a training step are set aside with the reason: a diffusers pipeline
//! export (`model_index.json` beside `unet/` …), and copies of a checkpoint (Lightning's
//! `last.ckpt` as a symlink or a byte copy, TRL's `save_model` folder) recognised by content.
//! A single torch checkpoint that states its step (`iter_num`, `global_step`) or embeds its
//! optimizer (nanoGPT `ckpt.pt`, Lightning `.ckpt`) is used for both.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{classify, Artifact, ArtifactKind, CheckpointDir, Run, SetAside};
use crate::names::{is_init_name, step_from_name};
use crate::tensors::{lookup, TorchZip, Value};

/// Files larger than this are compared by size and their first and last 8 MiB.
const FULL_COMPARE_MAX: u64 = 256 << 20;

/// What a torch checkpoint's top-level dict says about itself.
#[derive(Default)]
struct Embedded {
    step: Option<u64>,
    has_optimizer: bool,
}

fn embedded(path: &Path) -> Embedded {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    if !matches!(ext.as_str(), "pt" | "pth" | "ckpt") {
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
    let step = [
        "iter_num",
        "global_step",
        "global_steps",
        "step",
        "iteration",
    ]
    .iter()
    .find_map(|k| lookup(root, k).and_then(num));
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
        let mut f = std::fs::File::open(p).ok()?;
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
    // The folder (or, for `epoch=E-step=S.ckpt`, the file) that gives an artifact its step.
    let container = |a: &Artifact| -> Option<(PathBuf, u64)> {
        let own = a
            .path
            .file_name()
            .and_then(|n| step_from_name(&n.to_string_lossy()));
        if let (Some(s), true) = (own, a.kind.is_weights()) {
            return Some((a.path.clone(), s));
        }
        let mut dir = a.path.parent();
        while let Some(d) = dir {
            if let Some(s) = d
                .file_name()
                .and_then(|n| step_from_name(&n.to_string_lossy()))
            {
                return Some((d.to_path_buf(), s));
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
            (k, Some((path, step))) if k.is_weights() || k == K::Optimizer => {
                let g = groups.entry(path.clone()).or_insert_with(|| CheckpointDir {
                    step,
                    path,
                    ..Default::default()
                });
                if k == K::Optimizer {
                    g.optimizer.get_or_insert_with(|| a.path.clone());
                } else {
                    g.weights.push(a.path.clone());
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
                    });
                    continue;
                }
                let dir = a.path.parent().unwrap_or(&base).to_path_buf();
                unstepped.entry(dir).or_default().push(a);
            }
            (
                K::Scheduler | K::TrainerState | K::ModelConfig | K::TrainingArgs,
                Some((path, _)),
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
    // Torch checkpoints that embed their optimizer (Lightning `.ckpt`) are their own optimizer.
    for c in &mut out {
        if c.optimizer.is_none() && c.weights.len() == 1 && embedded(&c.weights[0]).has_optimizer {
            c.optimizer = Some(c.weights[0].clone());
        }
    }
    let known_max = out.iter().map(|c| c.step).max();
    if !unstepped.is_empty() {
        // Unknown when nothing states it: never 0 by default, which would read as the init.
        let final_step = run
            .trainer_state()
            .and_then(|t| t.global_step)
            .or(known_max.map(|m| m.saturating_add(1)));
        for (dir, files) in unstepped {
            let init =
                files.iter().all(|a| is_init_name(&a.path)) || (dir != base && is_init_name(&dir));
            let sibling = |k: ArtifactKind| {
                run.artifacts
                    .iter()
                    .find(|a| a.kind == k && a.path.parent() == Some(dir.as_path()))
                    .map(|a| a.path.clone())
            };
            let emb = match files.as_slice() {
                [one] => embedded(&one.path),
                _ => Embedded::default(),
            };
            let step = emb.step.or(final_step);
            out.push(CheckpointDir {
                step: if init { 0 } else { step.unwrap_or(0) },
                weights: files.iter().map(|a| a.path.clone()).collect(),
                optimizer: sibling(K::Optimizer).or_else(|| {
                    emb.has_optimizer
                        .then(|| files.first().map(|a| a.path.clone()))
                        .flatten()
                }),
                scheduler: sibling(K::Scheduler),
                trainer_state: sibling(K::TrainerState),
                config: sibling(K::ModelConfig),
                training_args: sibling(K::TrainingArgs),
                is_init: init,
                is_final: !init,
                step_unknown: !init && step.is_none(),
                path: dir,
            });
        }
    }
    // A final checkpoint whose every weight file has the content of a stepped one is a copy.
    let stepped: Vec<(u64, Vec<PathBuf>)> = out
        .iter()
        .filter(|c| !c.is_final && !c.is_init)
        .map(|c| (c.step, c.weights.clone()))
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
            pairs.map(|p| (*step, p))
        });
        match twin {
            Some((step, of)) => {
                for (w, o) in c.weights.iter().zip(of) {
                    set_aside.push(SetAside {
                        path: w.clone(),
                        reason: format!(
                            "same content as {} (step {step}): a copy of that checkpoint, not a new step",
                            o.display()
                        ),
                    });
                }
                false
            }
            None => true,
        }
    });
    for c in &mut out {
        // `checkpoint-0` or an explicit step 0 is the init; a placeholder 0 is not.
        c.is_init |= c.step == 0 && !c.step_unknown;
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
    out.sort_by(|a, b| (a.step, a.is_final, &a.path).cmp(&(b.step, b.is_final, &b.path)));
    (out, set_aside)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
