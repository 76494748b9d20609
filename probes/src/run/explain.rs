//! What mltriage made of each file of a run: read as what (weights of step N, optimizer state,
//! a metric log with these series, facts …) or ignored and why (an export, a copy of a
//! checkpoint, RNG state, code, a format not read). Used by `inspect RUN` and by `check`, which
//! names the files it could not use.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{ArtifactKind, Run};

/// One file and what became of it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FileUse {
    #[serde(serialize_with = "super::lossy_path")]
    pub path: PathBuf,
    pub kind: ArtifactKind,
    /// Whether any probe can use it.
    pub used: bool,
    /// `read as …` or `ignored: …` / `unreadable: …`.
    pub what: String,
}

/// Every artifact of the run with what was made of it, in path order.
pub fn explain(run: &Run) -> Vec<FileUse> {
    let problems = run.problems();
    let metrics = run.metrics();
    // Which checkpoint reads each file (the first that lists it, weights before optimizer),
    // looked up once per file instead of scanning every checkpoint for every file.
    let mut roles: HashMap<&Path, Role> = HashMap::new();
    for (i, c) in run.checkpoints.iter().enumerate() {
        for w in &c.weights {
            roles.entry(w.as_path()).or_insert(Role::Weights(i));
        }
        if let Some(o) = &c.optimizer {
            roles.entry(o.as_path()).or_insert(Role::Optimizer(i));
        }
    }
    // The Keras archive whose config the facts and probes read (once: it stats every archive).
    let keras = run
        .artifacts
        .iter()
        .any(|a| a.kind == ArtifactKind::Hdf5Weights)
        .then(|| run.keras_model())
        .flatten();
    run.artifacts
        .iter()
        .map(|a| {
            let p = a.path.as_path();
            let (used, what) = match &keras {
                // Read when its config states a head or a loss; an empty one is only named.
                Some(m) if m.path == p && (m.output_units.is_some() || m.loss.is_some()) => {
                    (true, keras_use(m))
                }
                _ => describe(run, p, a.kind, metrics, roles.get(p).copied()),
            };
            let bad = problems
                .iter()
                .find(|m| m.starts_with(&format!("{}:", p.display())));
            let (used, what) = match bad {
                Some(m) => (false, format!("unreadable: {m}")),
                None => (used, what),
            };
            FileUse {
                path: a.path.clone(),
                kind: a.kind,
                used,
                what,
            }
        })
        .collect()
}

/// The part a file plays in a checkpoint (by the checkpoint's index).
#[derive(Clone, Copy)]
enum Role {
    Weights(usize),
    Optimizer(usize),
}

fn describe(
    run: &Run,
    p: &Path,
    kind: ArtifactKind,
    metrics: &crate::metrics::MetricSet,
    role: Option<Role>,
) -> (bool, String) {
    use ArtifactKind as K;
    if let Some(s) = run.set_aside.iter().find(|s| s.path == p) {
        return (false, format!("ignored: {}", s.reason));
    }
    if let Some(role) = role {
        let c = match role {
            Role::Weights(i) | Role::Optimizer(i) => &run.checkpoints[i],
        };
        let step = c.index_label();
        if matches!(role, Role::Weights(_)) {
            let also = if c.optimizer.as_deref() == Some(p) {
                " and its optimizer state"
            } else {
                ""
            };
            let what = if is_ema_path(p) {
                "EMA weights"
            } else {
                "weights"
            };
            let what = if kind == K::Sb3Model {
                "a Stable-Baselines3 model archive: weights (policy.pth)"
            } else {
                what
            };
            let also = if kind == K::Sb3Model && !also.is_empty() {
                " and its optimizer state (policy.optimizer.pth)"
            } else {
                also
            };
            let note = weights_note(p, kind);
            return (
                true,
                format!("read as {what} of the checkpoint at {step}{also}{note}"),
            );
        }
        if c.optimizer.as_deref() == Some(p) {
            return (true, format!("read as optimizer state ({step})"));
        }
    }
    let own_series: Vec<&str> = metrics
        .series
        .iter()
        .filter(|s| s.source == p || (kind == K::TfEvents && p.parent() == Some(&s.source)))
        .map(|s| s.tag.as_str())
        .collect();
    let series_msg = |what: &str| -> (bool, String) {
        if own_series.is_empty() {
            (
                false,
                format!("ignored: read as {what}, but no series with steps found in it"),
            )
        } else {
            let mut names: Vec<&str> = own_series.clone();
            names.sort_unstable();
            names.dedup();
            let shown: Vec<&str> = names.iter().take(6).copied().collect();
            let more = names.len().saturating_sub(shown.len());
            (
                true,
                format!(
                    "read as {what}: {} series ({}{})",
                    names.len(),
                    shown.join(", "),
                    if more > 0 {
                        format!(", +{more}")
                    } else {
                        String::new()
                    }
                ),
            )
        }
    };
    match kind {
        K::TrainerState => series_msg("HF trainer state"),
        K::TfEvents => series_msg("TensorBoard events"),
        K::MetricsCsv | K::Csv => series_msg("a CSV metric log"),
        K::Jsonl => series_msg("a JSON-lines metric log"),
        K::StdoutLog => series_msg("captured training stdout"),
        K::WandbRecord => series_msg("a W&B run record (history rows; config as facts)"),
        K::MlflowMetric => series_msg("an MLflow metric"),
        K::MlflowParam => (true, "read as an MLflow param (facts)".into()),
        K::Safetensors | K::SafetensorsIndex | K::TorchFile | K::DcpMetadata | K::Sb3Model => (
            false,
            "ignored: weights that belong to no checkpoint".into(),
        ),
        K::VecNormalize => match crate::tensors::vecnorm::read(p) {
            Ok(v) => {
                let of = run
                    .checkpoints
                    .iter()
                    .find(|c| c.vecnormalize.as_deref() == Some(p))
                    .map(|c| format!(" of the checkpoint at {}", c.index_label()))
                    .unwrap_or_default();
                (
                    true,
                    format!("read as SB3 VecNormalize statistics{of}: {}", v.summary()),
                )
            }
            Err(e) => (false, format!("unreadable: {e}")),
        },
        K::Hdf5Weights => (false, format!("ignored: {}", hdf5_reason(p))),
        K::CheckpointPointer => pointer_use(run, p),
        K::Optimizer => match run
            .checkpoints
            .iter()
            .find(|c| c.optimizer.as_deref().and_then(Path::parent) == p.parent())
        {
            Some(c) => (
                false,
                format!(
                    "ignored: another rank's optimizer shard of the checkpoint at step {} (one shard is read)",
                    c.step
                ),
            ),
            None => (
                false,
                "ignored: optimizer state of no checkpoint (no weights beside it)".into(),
            ),
        },
        K::Scheduler => (true, "read as LR scheduler state (facts: lr_max)".into()),
        K::TrainingArgs => (true, "read as training arguments (facts)".into()),
        K::RngState => (false, "ignored: RNG state (nothing to triage in it)".into()),
        K::ModelConfig => (true, "read as model config (vocab, labels, context)".into()),
        K::GenerationConfig => (true, "read as generation config".into()),
        K::SchedulerConfig => (true, "read as diffusion scheduler config".into()),
        K::AdapterConfig => (true, "read as adapter (LoRA) config".into()),
        K::HParams => (true, "read as hyper-parameters (facts)".into()),
        K::Batch => (true, "read as a dumped batch".into()),
        K::PipelineIndex => (
            true,
            "read as a pipeline index: the folder beside it is an export, not a training step"
                .into(),
        ),
        K::DcpShard => (
            true,
            "read as a torch.distributed.checkpoint shard, through the .metadata beside it".into(),
        ),
        K::Other => match p
            .file_name()
            .filter(|n| *n == "README.md")
            .and_then(|_| crate::facts::extract::model_card_base(p))
        {
            Some(base) => (
                true,
                format!("read as a model card (facts: from_scratch=false, base_model={base})"),
            ),
            None if crate::facts::extract::is_capture_file(p, "facts.json") => (
                true,
                "read as the run's facts, stated by the training code (mltriage.capture)".into(),
            ),
            None if crate::facts::extract::is_capture_file(p, "capture.json") => (
                false,
                "ignored: mltriage.capture's manifest (what it wrote and what it left out)".into(),
            ),
            None if crate::facts::extract::is_capture_file(p, "param_groups.json") => (
                false,
                "ignored: the optimizer's param groups as mltriage.capture saw them (no check reads them yet; optimizer.pt's groups are read)".into(),
            ),
            None => (false, format!("ignored: {}", other_reason(p))),
        },
    }
}

/// What was read from a weight file beyond its role: an SB3 archive's step and
/// hyper-parameters, a pickled module's part (`ema` when `model` is None), the epoch stored.
fn weights_note(p: &Path, kind: ArtifactKind) -> String {
    use crate::tensors::{modgraph, sb3, TensorFile};
    if kind == ArtifactKind::Sb3Model {
        return match sb3::read(p) {
            Ok(a) => {
                let mut parts = Vec::new();
                if let Some(t) = a.num_timesteps {
                    parts.push(format!("num_timesteps {t}"));
                }
                if let Some(u) = a.n_updates {
                    parts.push(format!("{u} updates"));
                }
                let hp: Vec<String> = a
                    .hyperparameters
                    .iter()
                    .take(8)
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                if !hp.is_empty() {
                    parts.push(hp.join(" "));
                }
                if parts.is_empty() {
                    String::new()
                } else {
                    format!("; data: {}", parts.join(", "))
                }
            }
            Err(e) => format!("; its data member is unreadable ({e})"),
        };
    }
    if kind != ArtifactKind::TorchFile {
        return String::new();
    }
    let Ok(tf) = TensorFile::open(p) else {
        return String::new();
    };
    let buffers = tf.tensors().iter().filter(|t| t.buffer).count();
    let mut parts = vec![format!("{} tensors", tf.tensors().len())];
    if let Some(root) = tf.torch_root() {
        let keys = modgraph::module_keys(root);
        if !keys.is_empty() {
            let ks: Vec<String> = keys
                .iter()
                .map(|(k, has)| format!("{k}: {}", if *has { "module" } else { "None" }))
                .collect();
            parts.push(format!(
                "pickled modules ({}), read from {:?}",
                ks.join(", "),
                tf.wrapper().unwrap_or("")
            ));
        } else if let Some(w) = tf.wrapper() {
            parts.push(format!("under {w:?}"));
        }
        if buffers > 0 {
            parts.push(format!("{buffers} of them buffers"));
        }
        if let Some(e) = crate::tensors::lookup(root, "epoch").and_then(|v| v.as_i64()) {
            parts.push(if e < 0 {
                format!("epoch {e} (a finished, stripped checkpoint)")
            } else {
                format!("epoch {e}")
            });
        }
    }
    format!(" ({})", parts.join(", "))
}

/// What is read from the Keras archive the run saved last: its config's head and loss.
fn keras_use(m: &crate::tensors::keras::KerasModel) -> String {
    let mut head = Vec::new();
    if let Some(l) = &m.output_layer {
        head.push(format!("output layer {l}"));
    }
    if let Some(u) = m.output_units {
        head.push(format!("{u} units"));
    }
    if let Some(a) = &m.output_activation {
        head.push(a.clone());
    }
    if let Some(l) = &m.loss {
        head.push(format!(
            "loss {l}{}",
            m.from_logits
                .map(|f| format!(" (from_logits={f})"))
                .unwrap_or_default()
        ));
    }
    format!(
        "read as a Keras v3 archive: its config.json ({}); the HDF5 weights inside are not read",
        if head.is_empty() {
            "no single output described".to_string()
        } else {
            head.join(", ")
        }
    )
}

/// Why HDF5 weights are not read, and how to make them readable.
fn hdf5_reason(p: &Path) -> String {
    let zip = crate::tensors::sniff::sniff(p) == crate::tensors::sniff::Sniffed::KerasZip;
    format!(
        "HDF5 weights{}: not read — mltriage has no pure-Rust HDF5 reader in its default build; convert them to safetensors (e.g. `keras.saving.load_model(path)` then `safetensors.numpy.save_file({{w.path: w.numpy() for w in model.weights}}, \"model.safetensors\")`) and inspect that",
        if zip { " (a Keras v3 .keras archive holding model.weights.h5)" } else { "" }
    )
}

/// A pointer file: what it names and whether that checkpoint is in the run.
fn pointer_use(run: &Run, p: &Path) -> (bool, String) {
    let ptr = match super::read_pointer(p) {
        Ok(ptr) => ptr,
        Err(e) => return (false, format!("unreadable: {e}")),
    };
    let dir = p.parent().unwrap_or(Path::new(""));
    let by_path = run.checkpoints.iter().find(|c| {
        c.path == dir.join(&ptr.target) || c.weights.iter().any(|w| *w == dir.join(&ptr.target))
    });
    let by_step = || {
        ptr.step.and_then(|s| {
            run.checkpoints
                .iter()
                .find(|c| c.step == s && !c.step_unknown && c.unit == super::IndexUnit::Step)
        })
    };
    match by_path.or_else(by_step) {
        Some(c) => (
            true,
            format!(
                "read as a pointer to the newest checkpoint: {:?} → {} ({})",
                ptr.target,
                c.path.display(),
                c.index_label()
            ),
        ),
        None => (
            false,
            format!(
                "read as a pointer to the newest checkpoint {:?}, which is not in this run{}",
                ptr.target,
                ptr.step.map(|s| format!(" (step {s})")).unwrap_or_default()
            ),
        ),
    }
}

/// An EMA copy by its file or folder name (`unet_ema/`, `ema.safetensors`, `model_ema.pt`).
fn is_ema_path(p: &Path) -> bool {
    p.components().rev().take(2).any(|c| {
        let n = c.as_os_str().to_string_lossy().to_lowercase();
        let stem = n.split('.').next().unwrap_or("");
        stem == "ema"
            || stem.starts_with("ema_")
            || stem.ends_with("_ema")
            || stem.contains("_ema_")
    })
}

/// Why a file of no known kind is ignored, from its name.
fn other_reason(p: &Path) -> String {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let parent = p
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if name == "meta.yaml" {
        return "MLflow run/experiment metadata".into();
    }
    if parent == "tags" {
        return "an MLflow tag".into();
    }
    if name.starts_with("tokenizer")
        || name.contains("special_tokens")
        || name == "vocab.json"
        || name == "merges.txt"
    {
        return "tokenizer files".into();
    }
    if name == "scaler.pt" {
        return "AMP GradScaler state (its scale is read from logs)".into();
    }
    if name == "requirements.txt"
        || name.starts_with("wandb-metadata")
        || name == "conda-environment.yaml"
    {
        return "environment listing".into();
    }
    if name == "evaluations.npz" {
        return "Stable-Baselines3 EvalCallback's results (timesteps, returns, episode lengths as NumPy arrays): not read; the same evaluation's eval/mean_reward is read from the logger's files".into();
    }
    match ext {
        "npz" | "npy" => "NumPy arrays of unknown role (not read)".into(),
        "py" | "sh" | "ipynb" => "code".into(),
        "md" | "txt" | "rst" => "documentation or notes".into(),
        "png" | "jpg" | "jpeg" | "gif" | "svg" | "mp4" => "media".into(),
        "pkl" | "pickle" => "a pickle of unknown content (not unpickled)".into(),
        "yaml" | "yml" => "a YAML file of unknown role".into(),
        "json" => "a JSON file of unknown role".into(),
        _ => "not a format mltriage reads".into(),
    }
}
