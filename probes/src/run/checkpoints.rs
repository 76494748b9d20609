//! Grouping a run's weight files (and their optimizer, scheduler, …) into checkpoints by step.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{classify, Artifact, ArtifactKind, CheckpointDir, Run};
use crate::names::{is_init_name, step_from_name};

/// Group weight files (and their optimizer, scheduler, …) into checkpoints ordered by step.
pub(super) fn group_checkpoints(run: &Run) -> Vec<CheckpointDir> {
    use ArtifactKind as K;
    let base = run.base().to_path_buf();
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
            out.push(CheckpointDir {
                step: if init { 0 } else { final_step.unwrap_or(0) },
                weights: files.iter().map(|a| a.path.clone()).collect(),
                optimizer: sibling(K::Optimizer),
                scheduler: sibling(K::Scheduler),
                trainer_state: sibling(K::TrainerState),
                config: sibling(K::ModelConfig),
                training_args: sibling(K::TrainingArgs),
                is_init: init,
                is_final: !init,
                step_unknown: !init && final_step.is_none(),
                path: dir,
            });
        }
    }
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
    out
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
