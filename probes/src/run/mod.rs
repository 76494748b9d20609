//! Run discovery: walk a run directory (HF Trainer output, a `checkpoint-N/`, a Lightning
//! `version_N/`, any folder of logs and checkpoints, or one file), classify every file into an
//! [`ArtifactKind`]; checkpoints grouped by step (`checkpoints.rs`) and metrics loaded lazily into
//! one [`MetricSet`] (`load.rs`). Unreadable files are recorded as problems, never fatal. Facts the
//! artifacts state are extracted in `facts/` (which reads a `Run`); what names say, in `names.rs`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::config::ModelConfig;
use crate::error::{ReadError, Result};
use crate::metrics::trainer_state::TrainerState;
use crate::metrics::MetricSet;
use crate::names::{rank_from_name, step_from_name};

mod checkpoints;
mod epoch_clock;
mod explain;
mod load;
mod pointer;
mod segments;
mod sniff;

pub use explain::{explain, FileUse};
pub use load::{Cached, FileSeries};
pub use pointer::{read_pointer, Pointer};

use checkpoints::group_checkpoints;
use load::{config_problems, load_metrics, load_metrics_cached, Loaded};

/// Directories deeper than this below the root are not walked.
pub const MAX_DEPTH: usize = 8;
/// The walk stops after looking at this many directory entries (files, folders, others).
pub const MAX_ENTRIES: usize = 500_000;
/// The walk stops after this many files.
pub const MAX_FILES: usize = 200_000;

/// What a file is, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactKind {
    TrainerState,
    TfEvents,
    /// Lightning `metrics.csv` or a CSV named like a metric log (`progress.csv`, `*metrics*.csv`).
    MetricsCsv,
    Csv,
    Jsonl,
    Safetensors,
    /// A sharded-weights index (`*.safetensors.index.json`, `pytorch_model.bin.index.json`).
    SafetensorsIndex,
    /// `.pt .bin .pth .ckpt` state dicts.
    TorchFile,
    /// `optimizer.pt`, `optim*.pt`, DeepSpeed `*optim_states.pt`.
    Optimizer,
    /// `scheduler.pt`.
    Scheduler,
    /// `training_args.bin`.
    TrainingArgs,
    RngState,
    /// `config.json`.
    ModelConfig,
    GenerationConfig,
    SchedulerConfig,
    AdapterConfig,
    /// Lightning `hparams.yaml`.
    HParams,
    /// A dumped batch: `batch*.safetensors|.pt`, `*batch*.pt`, `inputs*.pt`.
    Batch,
    /// Captured training stdout: `train.log`, `nohup.out`, `slurm-<job>.out`, `*.log`.
    StdoutLog,
    /// A W&B run record file (`run-<id>.wandb`).
    WandbRecord,
    /// One metric of an MLflow file store (`mlruns/<exp>/<run>/metrics/<key>`).
    MlflowMetric,
    /// One param of an MLflow file store (`…/params/<key>`).
    MlflowParam,
    /// A torch.distributed.checkpoint shard (`__0_0.distcp`).
    DcpShard,
    /// A torch.distributed.checkpoint `.metadata` file.
    DcpMetadata,
    /// A diffusers pipeline index (`model_index.json`): the folder is an export.
    PipelineIndex,
    /// A Stable-Baselines3 model archive (`*.zip` holding `policy.pth`, `policy.optimizer.pth`
    /// and a `data` JSON): weights, optimizer and step in one file.
    Sb3Model,
    /// An SB3 VecNormalize pickle (`vec_normalize.pkl`): observation/return statistics.
    VecNormalize,
    /// HDF5 weights (Keras `.h5`, a `.keras` zip holding `model.weights.h5`): recognised, not
    /// read (no pure-Rust HDF5 reader in the default build).
    Hdf5Weights,
    /// A text file naming the newest checkpoint: DeepSpeed `latest`, TensorFlow `checkpoint`,
    /// Megatron `latest_checkpointed_iteration.txt`, fvcore/detectron2 `last_checkpoint`.
    CheckpointPointer,
    Other,
}

impl ArtifactKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactKind::TrainerState => "trainer_state",
            ArtifactKind::TfEvents => "tfevents",
            ArtifactKind::MetricsCsv => "metrics_csv",
            ArtifactKind::Csv => "csv",
            ArtifactKind::Jsonl => "jsonl",
            ArtifactKind::Safetensors => "safetensors",
            ArtifactKind::SafetensorsIndex => "safetensors_index",
            ArtifactKind::TorchFile => "torch_file",
            ArtifactKind::Optimizer => "optimizer",
            ArtifactKind::Scheduler => "scheduler",
            ArtifactKind::TrainingArgs => "training_args",
            ArtifactKind::RngState => "rng_state",
            ArtifactKind::ModelConfig => "model_config",
            ArtifactKind::GenerationConfig => "generation_config",
            ArtifactKind::SchedulerConfig => "scheduler_config",
            ArtifactKind::AdapterConfig => "adapter_config",
            ArtifactKind::HParams => "hparams",
            ArtifactKind::Batch => "batch",
            ArtifactKind::StdoutLog => "stdout_log",
            ArtifactKind::WandbRecord => "wandb_record",
            ArtifactKind::MlflowMetric => "mlflow_metric",
            ArtifactKind::MlflowParam => "mlflow_param",
            ArtifactKind::DcpShard => "dcp_shard",
            ArtifactKind::DcpMetadata => "dcp_metadata",
            ArtifactKind::PipelineIndex => "pipeline_index",
            ArtifactKind::Sb3Model => "sb3_model",
            ArtifactKind::VecNormalize => "vec_normalize",
            ArtifactKind::Hdf5Weights => "hdf5_weights",
            ArtifactKind::CheckpointPointer => "checkpoint_pointer",
            ArtifactKind::Other => "other",
        }
    }

    /// Metric logs read by [`Run::metrics`].
    pub fn is_metrics(self) -> bool {
        matches!(
            self,
            ArtifactKind::TrainerState
                | ArtifactKind::TfEvents
                | ArtifactKind::MetricsCsv
                | ArtifactKind::Csv
                | ArtifactKind::Jsonl
                | ArtifactKind::StdoutLog
                | ArtifactKind::WandbRecord
                | ArtifactKind::MlflowMetric
        )
    }

    /// Model weights (a checkpoint's tensors).
    pub fn is_weights(self) -> bool {
        matches!(
            self,
            ArtifactKind::Safetensors
                | ArtifactKind::SafetensorsIndex
                | ArtifactKind::TorchFile
                | ArtifactKind::DcpMetadata
                | ArtifactKind::Sb3Model
        )
    }
}

impl std::fmt::Display for ArtifactKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A path as JSON text, written lossily (U+FFFD) where it is not UTF-8.
pub(crate) fn lossy_path<S: serde::Serializer>(
    p: &Path,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// One file of a run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Artifact {
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    pub kind: ArtifactKind,
    /// From the file name, else from the nearest folder name (`checkpoint-300/…`).
    pub step: Option<u64>,
    /// From an explicit `rank` in the file or folder names (`…tfevents….rank1`, `rank-2/`).
    pub rank: Option<u32>,
    pub bytes: u64,
}

/// A weight file that discovery found but does not count as a checkpoint, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SetAside {
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    pub reason: String,
    /// The weights the run started from (a pretrained or base model kept in its folder): the
    /// run is a fine-tune.
    #[serde(skip)]
    pub start_weights: bool,
}

/// What a checkpoint's index ([`CheckpointDir::step`]) counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexUnit {
    /// Optimizer steps (or, for an SB3 archive, environment steps: `num_timesteps`).
    #[default]
    Step,
    /// Epochs (timm `checkpoint-7.pth.tar`, Ultralytics `epoch10.pt`): not converted to steps
    /// here (how many steps an epoch has is a metric question).
    Epoch,
}

/// One checkpoint: a `checkpoint-N/`-like folder, or a single `epoch=E-step=S.ckpt`-like file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CheckpointDir {
    /// The checkpoint's index, counted in [`CheckpointDir::unit`]s; checkpoints of one run
    /// order by it.
    pub step: u64,
    /// Whether `step` counts steps or epochs.
    pub unit: IndexUnit,
    /// The epoch the checkpoint states (its contents, else its name), when known.
    pub epoch: Option<u64>,
    /// The folder, or the file for single-file checkpoints.
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    /// `model.safetensors`, the index json of a sharded checkpoint, `pytorch_model.bin`, a
    /// `.ckpt` … (never optimizer / scheduler / rng / training args / batches).
    #[serde(serialize_with = "lossy_paths")]
    pub weights: Vec<PathBuf>,
    #[serde(serialize_with = "lossy_opt")]
    pub optimizer: Option<PathBuf>,
    #[serde(serialize_with = "lossy_opt")]
    pub scheduler: Option<PathBuf>,
    #[serde(serialize_with = "lossy_opt")]
    pub trainer_state: Option<PathBuf>,
    #[serde(serialize_with = "lossy_opt")]
    pub config: Option<PathBuf>,
    #[serde(serialize_with = "lossy_opt")]
    pub training_args: Option<PathBuf>,
    /// Step 0 (`checkpoint-0`) or named as the initial weights (`init/`, `model_init.pt`).
    pub is_init: bool,
    /// Weights with no step in their names (the run's final model): `step` was inferred from
    /// the trainer state's global step, else the largest known step + 1.
    pub is_final: bool,
    /// No step could be read or inferred (a lone model folder with no trainer state and no
    /// other checkpoint): `step` is a placeholder 0 that says nothing — in particular not that
    /// these are the initial weights.
    pub step_unknown: bool,
    /// SB3 VecNormalize statistics saved with this checkpoint (`vec_normalize.pkl`).
    #[serde(serialize_with = "lossy_opt")]
    pub vecnormalize: Option<PathBuf>,
}

impl CheckpointDir {
    /// The weights from before the first update: step 0, or named as the initial weights —
    /// never a lone model folder whose step is unknown.
    pub fn before_training(&self) -> bool {
        self.is_init || (self.step == 0 && !self.step_unknown && self.unit == IndexUnit::Step)
    }

    /// `step 300`, `epoch 7`, or `step unknown`.
    pub fn index_label(&self) -> String {
        match (self.step_unknown, self.unit) {
            (true, _) => "step unknown".to_string(),
            (false, IndexUnit::Step) => format!("step {}", self.step),
            (false, IndexUnit::Epoch) => format!("epoch {}", self.step),
        }
    }
}

fn lossy_paths<S: serde::Serializer>(p: &[PathBuf], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(p.iter().map(|p| p.to_string_lossy()))
}

fn lossy_opt<S: serde::Serializer>(
    p: &Option<PathBuf>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

/// A discovered run.
#[derive(Debug, Default)]
pub struct Run {
    pub root: PathBuf,
    /// Every file found, sorted by path.
    pub artifacts: Vec<Artifact>,
    /// Checkpoints ordered by step (init first, final last).
    pub checkpoints: Vec<CheckpointDir>,
    /// What the walk could not read or chose to stop at (`<path>: <why>`).
    pub walk_problems: Vec<String>,
    /// Weight files that are not a training step (exports, copies of a checkpoint), with why.
    pub set_aside: Vec<SetAside>,
    metrics: OnceLock<Loaded>,
    state: OnceLock<Option<TrainerState>>,
    config_problems: OnceLock<Vec<String>>,
}

impl Run {
    /// Discover the run at `path` (a folder or one file). A path that does not exist is an
    /// error naming it; an empty folder is a run with no artifacts.
    pub fn discover(path: &Path) -> Result<Run> {
        let meta = std::fs::metadata(path).map_err(|e| ReadError::io(path, e))?;
        let mut run = Run {
            root: path.to_path_buf(),
            ..Run::default()
        };
        let files = if meta.is_dir() {
            walk(path, &mut run.walk_problems)
        } else {
            vec![(path.to_path_buf(), meta.len())]
        };
        let base = if meta.is_dir() {
            path
        } else {
            path.parent().unwrap_or(path)
        };
        run.artifacts = files
            .into_iter()
            .map(|(p, bytes)| artifact(base, p, bytes))
            .collect();
        run.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
        let (checkpoints, set_aside) = group_checkpoints(&run);
        run.checkpoints = checkpoints;
        run.set_aside = set_aside;
        Ok(run)
    }

    /// A run made of metrics alone (for tests and for callers that read logs themselves).
    pub fn from_metrics(root: &Path, set: MetricSet) -> Run {
        let run = Run {
            root: root.to_path_buf(),
            ..Run::default()
        };
        let _ = run.metrics.set(Loaded {
            set,
            problems: Vec::new(),
        });
        run
    }

    /// Load the metrics from series read elsewhere (a follower's incremental reads): `cached`
    /// gives a metric file's series, files it does not know are read now; `state` is the
    /// trainer state already parsed. Does nothing to what was already loaded.
    pub fn seed_metrics(&self, state: Option<TrainerState>, cached: Cached) {
        let _ = self.state.set(state);
        let _ = self.metrics.set(load_metrics_cached(self, cached));
    }

    pub fn of_kind(&self, kind: ArtifactKind) -> Vec<&Artifact> {
        self.artifacts.iter().filter(|a| a.kind == kind).collect()
    }

    /// The kind discovery gave the file at `p` (`Other` when it is not one of the run's).
    /// The artifacts are sorted by path, so this is a binary search: a scan per checkpoint
    /// made a run of 10,000 checkpoints quadratic.
    pub fn kind_of(&self, p: &Path) -> ArtifactKind {
        self.artifacts
            .binary_search_by(|a| a.path.as_path().cmp(p))
            .ok()
            .and_then(|i| self.artifacts.get(i))
            .map_or(ArtifactKind::Other, |a| a.kind)
    }

    /// The newest Stable-Baselines3 model archive: the newest checkpoint's, else the last
    /// archive found.
    pub fn newest_sb3_archive(&self) -> Option<&Path> {
        self.checkpoints
            .iter()
            .rev()
            .flat_map(|c| c.weights.iter())
            .map(|w| w.as_path())
            .find(|w| self.kind_of(w) == ArtifactKind::Sb3Model)
            .or_else(|| {
                self.of_kind(ArtifactKind::Sb3Model)
                    .last()
                    .map(|a| a.path.as_path())
            })
    }

    /// The Keras v3 archive (`*.keras`) written last (by modification time), described: its
    /// head and compiled loss (see [`crate::tensors::keras`]). Archives that do not read are
    /// passed over; none gives `None`.
    pub fn keras_model(&self) -> Option<crate::tensors::keras::KerasModel> {
        let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let mut archives: Vec<&Path> = self
            .of_kind(ArtifactKind::Hdf5Weights)
            .into_iter()
            .map(|a| a.path.as_path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("keras"))
            })
            .collect();
        archives.sort_by_key(|p| mtime(p));
        archives
            .into_iter()
            .rev()
            .find_map(|p| crate::tensors::keras::read(p).ok())
    }

    /// Dumped batches.
    pub fn batches(&self) -> Vec<&Artifact> {
        self.of_kind(ArtifactKind::Batch)
    }

    /// Config files of every kind (model, generation, scheduler, adapter, hparams).
    pub fn configs(&self) -> Vec<&Artifact> {
        self.artifacts
            .iter()
            .filter(|a| {
                matches!(
                    a.kind,
                    ArtifactKind::ModelConfig
                        | ArtifactKind::GenerationConfig
                        | ArtifactKind::SchedulerConfig
                        | ArtifactKind::AdapterConfig
                        | ArtifactKind::HParams
                )
            })
            .collect()
    }

    /// Every metric series of the run, read once. The root `trainer_state.json` is preferred,
    /// else the newest checkpoint's; TensorBoard files in one folder are merged as TensorBoard
    /// does; a series carried by both the trainer state and TensorBoard is kept once.
    pub fn metrics(&self) -> &MetricSet {
        &self.loaded().set
    }

    fn loaded(&self) -> &Loaded {
        self.metrics.get_or_init(|| load_metrics(self))
    }

    /// One line per file that could not be read: `<file>: <why>`.
    pub fn problems(&self) -> Vec<String> {
        let mut out = self.walk_problems.clone();
        out.extend(self.loaded().problems.iter().cloned());
        out.extend(
            self.config_problems
                .get_or_init(|| config_problems(self))
                .iter()
                .cloned(),
        );
        out
    }

    /// The trainer state file used: the root one, else the newest checkpoint's.
    pub fn trainer_state_path(&self) -> Option<&Path> {
        let states = self.of_kind(ArtifactKind::TrainerState);
        let base = self.base();
        states
            .iter()
            .find(|a| a.path.parent() == Some(base))
            .or_else(|| {
                states
                    .iter()
                    .max_by_key(|a| (a.step, std::cmp::Reverse(a.path.components().count())))
            })
            .map(|a| a.path.as_path())
    }

    /// The parsed trainer state (see [`Run::trainer_state_path`]), read once.
    pub fn trainer_state(&self) -> Option<&TrainerState> {
        self.state
            .get_or_init(|| {
                self.trainer_state_path()
                    .and_then(|p| TrainerState::read(p).ok())
            })
            .as_ref()
    }

    /// The model config: the root `config.json`, else the newest checkpoint's, else the
    /// shallowest one found.
    pub fn model_config(&self) -> Option<(PathBuf, ModelConfig)> {
        let base = self.base();
        let configs = self.of_kind(ArtifactKind::ModelConfig);
        let root = configs
            .iter()
            .find(|a| a.path.parent() == Some(base))
            .map(|a| a.path.clone());
        let newest = || self.checkpoints.iter().rev().find_map(|c| c.config.clone());
        let shallowest = || {
            configs
                .iter()
                .min_by_key(|a| a.path.components().count())
                .map(|a| a.path.clone())
        };
        let path = root.or_else(newest).or_else(shallowest)?;
        ModelConfig::read(&path).ok().map(|c| (path, c))
    }

    /// The largest step the run reached: metrics, trainer state, checkpoints.
    pub fn max_step(&self) -> Option<u64> {
        let m = self.metrics().max_step();
        let t = self.trainer_state().and_then(|t| t.global_step);
        let c = self.checkpoints.iter().map(|c| c.step).max();
        [m, t, c].into_iter().flatten().max()
    }

    /// The folder file names are relative to (the root, or a single file's folder).
    pub(crate) fn base(&self) -> &Path {
        if self.root.is_file() {
            self.root.parent().unwrap_or(&self.root)
        } else {
            &self.root
        }
    }
}

/// Walk `root` depth-first: hidden entries skipped, symlinked folders never followed (no
/// loops, no escape to `/`), only regular files kept (symlinks to regular files followed),
/// depth, entries looked at ([`MAX_ENTRIES`]) and file count capped. Returns (path, bytes),
/// unsorted.
fn walk(root: &Path, problems: &mut Vec<String>) -> Vec<(PathBuf, u64)> {
    walk_meta(root, problems)
        .into_iter()
        .map(|(p, m)| (p, m.len()))
        .collect()
}

/// The files discovery walks (same rules, depth and budgets), with their metadata (a
/// follower's poll compares sizes, times and inodes between two walks).
pub fn walk_meta(root: &Path, problems: &mut Vec<String>) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    if let Ok(c) = std::fs::canonicalize(root) {
        seen.insert(c);
    }
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut deep_noted = false;
    let mut entries = 0usize;
    while let Some((dir, depth)) = stack.pop() {
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) => {
                problems.push(ReadError::io(&dir, e).to_string());
                continue;
            }
        };
        for entry in rd.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                problems.push(format!(
                    "{}: more than {MAX_ENTRIES} entries looked at (walk budget), the rest ignored",
                    root.display()
                ));
                return out;
            }
            let name = entry.file_name();
            if (name.as_encoded_bytes().first() == Some(&b'.') && name != ".metadata")
                || name == "__pycache__"
                || name == "node_modules"
            {
                continue;
            }
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            // Follow symlinks to what they point at; a broken link is skipped.
            let meta = if ft.is_symlink() {
                match std::fs::metadata(&path) {
                    Ok(m) => m,
                    Err(_) => continue,
                }
            } else {
                match entry.metadata() {
                    Ok(m) => m,
                    Err(_) => continue,
                }
            };
            if meta.is_dir() && ft.is_symlink() {
                // Never followed: walks stay inside the run (no loops, no escape to `/`).
                continue;
            }
            if meta.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    if !deep_noted {
                        problems.push(format!(
                            "{}: deeper than {MAX_DEPTH} folders, not searched",
                            path.display()
                        ));
                        deep_noted = true;
                    }
                    continue;
                }
                if std::fs::canonicalize(&path).is_ok_and(|c| seen.insert(c)) {
                    stack.push((path, depth + 1));
                }
            } else if meta.is_file() {
                if out.len() >= MAX_FILES {
                    problems.push(format!(
                        "{}: more than {MAX_FILES} files, the rest ignored",
                        root.display()
                    ));
                    return out;
                }
                out.push((path, meta));
            }
        }
    }
    out
}

fn artifact(base: &Path, path: PathBuf, bytes: u64) -> Artifact {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut kind = classify(&name);
    if matches!(kind, ArtifactKind::Other | ArtifactKind::StdoutLog) && bytes > 0 {
        if let Some(k) = sniff::text_kind(&path, &name) {
            kind = k;
        }
    }
    if kind == ArtifactKind::Other && bytes > 0 {
        kind = weights_by_content(&path, &name).unwrap_or(kind);
    }
    let in_dir = |d: &str| {
        path.ancestors()
            .skip(1)
            .take(9)
            .any(|a| a.file_name().is_some_and(|n| n == d))
    };
    if in_dir("metrics") && crate::metrics::mlflow::metric_key(&path).is_some() {
        kind = ArtifactKind::MlflowMetric;
    } else if in_dir("params") && crate::metrics::mlflow::param_key(&path).is_some() {
        kind = ArtifactKind::MlflowParam;
    }
    // Names from the file up to the root folder's own name.
    let mut names = vec![name.clone()];
    let mut dir = path.parent();
    while let Some(d) = dir {
        if let Some(n) = d.file_name() {
            names.push(n.to_string_lossy().into_owned());
        }
        if d == base || !d.starts_with(base) {
            break;
        }
        dir = d.parent();
    }
    let step = names.iter().find_map(|n| step_from_name(n));
    let rank = names.iter().find_map(|n| rank_from_name(n));
    Artifact {
        path,
        kind,
        step,
        rank,
        bytes,
    }
}

/// A weight-like file whose name did not say, by its content ([`crate::tensors::sniff`]): a
/// torch zip under any extension (`.pth.tar`, `.cleanrl_model`), an SB3 model zip, HDF5, a
/// VecNormalize pickle. Files with a text, code or media extension are never opened.
fn weights_by_content(path: &Path, name: &str) -> Option<ArtifactKind> {
    use crate::tensors::sniff::{sniff, Sniffed};
    let n = name.to_ascii_lowercase();
    let ext = n.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if matches!(
        ext,
        "txt"
            | "log"
            | "out"
            | "json"
            | "yaml"
            | "yml"
            | "csv"
            | "tsv"
            | "md"
            | "rst"
            | "py"
            | "sh"
            | "ipynb"
            | "png"
            | "jpg"
            | "jpeg"
            | "gif"
            | "svg"
            | "mp4"
            | "html"
            | "toml"
            | "cfg"
            | "ini"
            | "jsonl"
            | "xml"
            | "webp"
            | "jsonnet"
            | "lock"
    ) {
        return None;
    }
    Some(match sniff(path) {
        Sniffed::TorchZip | Sniffed::LegacyTorch => {
            let stem = n.split('.').next().unwrap_or("");
            if stem.starts_with("optim") || stem.ends_with("_optimizer") {
                ArtifactKind::Optimizer
            } else {
                ArtifactKind::TorchFile
            }
        }
        Sniffed::Sb3Zip => ArtifactKind::Sb3Model,
        Sniffed::VecNormalize => ArtifactKind::VecNormalize,
        Sniffed::Hdf5 | Sniffed::KerasZip => ArtifactKind::Hdf5Weights,
        Sniffed::Pickle | Sniffed::Zip | Sniffed::Unknown => return None,
    })
}

/// Classify a file by its name.
pub fn classify(name: &str) -> ArtifactKind {
    use ArtifactKind as K;
    let n = name.to_lowercase();
    match n.as_str() {
        "trainer_state.json" => return K::TrainerState,
        "config.json" => return K::ModelConfig,
        "generation_config.json" => return K::GenerationConfig,
        "scheduler_config.json" => return K::SchedulerConfig,
        "adapter_config.json" => return K::AdapterConfig,
        // A run's saved configuration: Lightning `hparams.yaml`, Ultralytics and timm
        // `args.yaml`, YOLOv5 `opt.yaml`.
        "hparams.yaml" | "hparams.yml" | "args.yaml" | "args.yml" | "opt.yaml" => {
            return K::HParams
        }
        "training_args.bin" => return K::TrainingArgs,
        "scheduler.pt" | "scheduler.pth" | "scheduler.bin" | "lr_scheduler.pt"
        | "lr_scheduler.bin" => return K::Scheduler,
        "scaler.pt" => return K::Other,
        "model_index.json" => return K::PipelineIndex,
        ".metadata" => return K::DcpMetadata,
        "latest" | "checkpoint" | "latest_checkpointed_iteration.txt" | "last_checkpoint" => {
            return K::CheckpointPointer
        }
        _ => {}
    }
    if n.starts_with("events.out.tfevents") {
        return K::TfEvents;
    }
    let (stem, ext) = match n.rsplit_once('.') {
        Some((s, e)) => (s, e),
        None => (n.as_str(), ""),
    };
    if (stem.starts_with("rng_state") && matches!(ext, "pth" | "pt"))
        || (stem.starts_with("random_states") && ext == "pkl")
    {
        return K::RngState;
    }
    if matches!(ext, "pkl" | "pickle")
        && (stem.contains("vecnormalize") || stem.contains("vec_normalize"))
    {
        return K::VecNormalize;
    }
    if matches!(ext, "h5" | "hdf5" | "keras") {
        return K::Hdf5Weights;
    }
    if ext == "json"
        && stem.ends_with(".index")
        && (stem.contains(".safetensors") || stem.contains(".bin"))
    {
        return K::SafetensorsIndex;
    }
    let tensor_ext = matches!(ext, "safetensors" | "pt" | "pth" | "bin" | "ckpt");
    if matches!(ext, "safetensors" | "pt" | "pth")
        && (stem.starts_with("batch") || stem.starts_with("inputs") || stem.contains("batch"))
    {
        return K::Batch;
    }
    if tensor_ext
        && (stem.starts_with("optim")
            || stem.contains("optim_states")
            || stem.ends_with("_optimizer"))
    {
        return K::Optimizer;
    }
    match ext {
        "safetensors" => K::Safetensors,
        "pt" | "pth" | "bin" | "ckpt" => K::TorchFile,
        "csv" | "tsv" => {
            if ["metric", "progress", "log", "history", "scalars"]
                .iter()
                .any(|w| stem.contains(w))
            {
                K::MetricsCsv
            } else {
                K::Csv
            }
        }
        "jsonl" | "ndjson" => K::Jsonl,
        "wandb" => K::WandbRecord,
        "distcp" => K::DcpShard,
        "json"
            if !stem.contains("config")
                && ["metric", "log", "history", "scalars", "progress"]
                    .iter()
                    .any(|w| stem.contains(w)) =>
        {
            K::Jsonl
        }
        _ if crate::metrics::stdout_log::is_stdout_log_name(&n) => K::StdoutLog,
        _ => K::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_common_names() {
        use ArtifactKind as K;
        for (n, k) in [
            ("trainer_state.json", K::TrainerState),
            ("events.out.tfevents.1.vm.2.0", K::TfEvents),
            ("metrics.csv", K::MetricsCsv),
            ("data.csv", K::Csv),
            ("log.jsonl", K::Jsonl),
            ("metrics.json", K::Jsonl),
            ("model.safetensors", K::Safetensors),
            ("model.safetensors.index.json", K::SafetensorsIndex),
            ("pytorch_model.bin.index.json", K::SafetensorsIndex),
            ("pytorch_model.bin", K::TorchFile),
            ("epoch=1-step=10.ckpt", K::TorchFile),
            ("optimizer.pt", K::Optimizer),
            (
                "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt",
                K::Optimizer,
            ),
            ("scheduler.pt", K::Scheduler),
            ("training_args.bin", K::TrainingArgs),
            ("rng_state.pth", K::RngState),
            ("rng_state_3.pth", K::RngState),
            ("config.json", K::ModelConfig),
            ("generation_config.json", K::GenerationConfig),
            ("scheduler_config.json", K::SchedulerConfig),
            ("adapter_config.json", K::AdapterConfig),
            ("hparams.yaml", K::HParams),
            ("batch.safetensors", K::Batch),
            ("batch_000.pt", K::Batch),
            ("train_batch.pt", K::Batch),
            ("inputs_0.pt", K::Batch),
            ("tokenizer.json", K::Other),
            ("README.md", K::Other),
            ("train_results.json", K::Other),
            ("vec_normalize.pkl", K::VecNormalize),
            ("rl_model_vecnormalize_64_steps.pkl", K::VecNormalize),
            ("model.h5", K::Hdf5Weights),
            ("model.keras", K::Hdf5Weights),
            ("latest", K::CheckpointPointer),
            ("checkpoint", K::CheckpointPointer),
            ("latest_checkpointed_iteration.txt", K::CheckpointPointer),
        ] {
            assert_eq!(classify(n), k, "{n}");
        }
    }
}
