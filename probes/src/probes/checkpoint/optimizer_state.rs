//! The newest optimizer state beside a checkpoint and the parameter names it maps to, and how
//! many optimizer steps a checkpoint's index stands for.

use std::collections::HashMap;
use std::sync::Arc;

use crate::probe::{Evidence, Verdict};
use crate::run::{ArtifactKind, CheckpointDir, Run};
use crate::tensors::{OptimizerState, TensorInfo};

use crate::probes::checkpoint::model::*;

/// The newest optimizer state of the run (an `optimizer.pt`, else a Lightning `.ckpt`), with
/// the checkpoint it belongs to. Parsed once per file for the process ([`OptimizerState::open`]):
/// every probe that asks shares it, and its moments' statistics.
pub(crate) fn newest_optimizer<'a>(
    run: &'a Run,
    entry: &str,
) -> Result<(Arc<OptimizerState>, Option<&'a CheckpointDir>), Vec<Verdict>> {
    let mut errors = Vec::new();
    for c in run.checkpoints.iter().rev() {
        if let Some(p) = &c.optimizer {
            match OptimizerState::open(p) {
                Ok(o) => return Ok((o, Some(c))),
                Err(e) => errors.push(e.to_string()),
            }
        }
    }
    for a in run.of_kind(ArtifactKind::Optimizer).iter().rev() {
        if let Ok(o) = OptimizerState::open(&a.path) {
            return Ok((o, None));
        }
    }
    // Lightning keeps the optimizer inside the .ckpt.
    for c in run.checkpoints.iter().rev() {
        for w in c.weights.iter().filter(|w| file_name(w).ends_with(".ckpt")) {
            if let Ok(o) = OptimizerState::open(w) {
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
pub(crate) fn model_for(run: &Run, c: Option<&CheckpointDir>) -> Option<Model> {
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
pub(crate) fn param_names(opt: &OptimizerState, model: Option<&Model>) -> HashMap<u64, String> {
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

pub(crate) fn describe_param(
    id: u64,
    names: &HashMap<u64, String>,
    opt: &OptimizerState,
) -> String {
    match names.get(&id) {
        Some(n) => n.clone(),
        None => match opt.state.get(&id).filter(|s| !s.shape.is_empty()) {
            Some(s) => format!("param #{id} {}", shape_str(&s.shape)),
            None => format!("param #{id}"),
        },
    }
}

pub(crate) fn opt_ev(opt: &OptimizerState, c: Option<&CheckpointDir>) -> Evidence {
    let e = Evidence::file(&opt.path);
    match c {
        Some(c) => e.steps(c.step, c.step),
        None => e,
    }
}

/// Whether checkpoint `c`'s index counts optimizer steps. It does not for an epoch (timm,
/// Ultralytics) or for a Stable-Baselines3 archive's environment timesteps (each PPO rollout of
/// n_steps feeds n_epochs × n_steps / batch_size optimizer steps; DQN and SAC take
/// gradient_steps per train_freq).
pub(crate) fn index_counts_optimizer_steps(run: &Run, c: &CheckpointDir) -> bool {
    c.unit == crate::run::IndexUnit::Step
        && !c
            .weights
            .iter()
            .any(|w| run.kind_of(w) == ArtifactKind::Sb3Model)
}

/// The optimizer's own step count saved with checkpoint `c` (Adam's `step`, the largest over
/// its parameters); `None` without an optimizer state or a counter in it (SGD).
pub(crate) fn saved_optimizer_step(c: &CheckpointDir) -> Option<f64> {
    OptimizerState::open(c.optimizer.as_ref()?)
        .ok()
        .and_then(|o| o.max_step())
}

/// The optimizer steps from checkpoint `a` to the later `b`: the difference of their indices
/// where those count optimizer steps, else of the step counters saved with them; `None` when
/// neither tells (a rate per step cannot be formed). `saved` gives a checkpoint's saved counter
/// (`saved_optimizer_step`, or a cache of it: each read opens the optimizer file).
pub(crate) fn optimizer_steps_between(
    run: &Run,
    a: &CheckpointDir,
    b: &CheckpointDir,
    saved: impl Fn(&CheckpointDir) -> Option<f64>,
) -> Option<f64> {
    if index_counts_optimizer_steps(run, a) && index_counts_optimizer_steps(run, b) {
        return Some(b.step.saturating_sub(a.step).max(1) as f64);
    }
    let d = saved(b)? - saved(a)?;
    (d >= 1.0).then_some(d)
}
