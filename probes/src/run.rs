//! Run discovery: walk a run directory (HF Trainer output, a `checkpoint-N/`, a Lightning
//! `version_N/`, any folder of logs and checkpoints, or one file), classify every file into an
//! [`ArtifactKind`], group checkpoints by step, and load metrics lazily into one [`MetricSet`].
//! Unreadable files are recorded as problems, never fatal.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::config::{AdapterConfig, ModelConfig, SchedulerConfig};
use crate::error::{ReadError, Result};
use crate::facts::Facts;
use crate::metrics::trainer_state::TrainerState;
use crate::metrics::{csvlog, tfevents, MetricSet, Series};

/// Directories deeper than this below the root are not walked.
pub const MAX_DEPTH: usize = 8;
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
        )
    }

    /// Model weights (a checkpoint's tensors).
    pub fn is_weights(self) -> bool {
        matches!(
            self,
            ArtifactKind::Safetensors | ArtifactKind::SafetensorsIndex | ArtifactKind::TorchFile
        )
    }
}

impl std::fmt::Display for ArtifactKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn lossy_path<S: serde::Serializer>(p: &Path, s: S) -> std::result::Result<S::Ok, S::Error> {
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

/// One checkpoint: a `checkpoint-N/`-like folder, or a single `epoch=E-step=S.ckpt`-like file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CheckpointDir {
    pub step: u64,
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

/// Metrics loaded once, with the files that failed.
#[derive(Debug, Default)]
struct Loaded {
    set: MetricSet,
    problems: Vec<String>,
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
        run.checkpoints = group_checkpoints(&run);
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

    pub fn of_kind(&self, kind: ArtifactKind) -> Vec<&Artifact> {
        self.artifacts.iter().filter(|a| a.kind == kind).collect()
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
    fn base(&self) -> &Path {
        if self.root.is_file() {
            self.root.parent().unwrap_or(&self.root)
        } else {
            &self.root
        }
    }
}

/// Walk `root` depth-first: hidden entries skipped, symlinked folders followed once (no loops),
/// depth and file count capped. Returns (path, bytes), unsorted.
fn walk(root: &Path, problems: &mut Vec<String>) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    if let Ok(c) = std::fs::canonicalize(root) {
        seen.insert(c);
    }
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut deep_noted = false;
    while let Some((dir, depth)) = stack.pop() {
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) => {
                problems.push(ReadError::io(&dir, e).to_string());
                continue;
            }
        };
        for entry in rd.flatten() {
            let name = entry.file_name();
            if name.as_encoded_bytes().first() == Some(&b'.')
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
                out.push((path, meta.len()));
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
    let kind = classify(&name);
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
        "hparams.yaml" | "hparams.yml" => return K::HParams,
        "training_args.bin" => return K::TrainingArgs,
        "scheduler.pt" | "scheduler.pth" | "scheduler.bin" | "lr_scheduler.pt"
        | "lr_scheduler.bin" => return K::Scheduler,
        "scaler.pt" => return K::Other,
        _ => {}
    }
    if n.starts_with("events.out.tfevents") {
        return K::TfEvents;
    }
    let (stem, ext) = match n.rsplit_once('.') {
        Some((s, e)) => (s, e),
        None => (n.as_str(), ""),
    };
    if stem.starts_with("rng_state") && matches!(ext, "pth" | "pt") {
        return K::RngState;
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
        "json"
            if !stem.contains("config")
                && ["metric", "log", "history", "scalars", "progress"]
                    .iter()
                    .any(|w| stem.contains(w)) =>
        {
            K::Jsonl
        }
        _ => K::Other,
    }
}

/// Index just past `word` where it starts a token (the character before is not a letter).
fn token_ends<'a>(n: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    n.match_indices(word).filter_map(move |(i, _)| {
        let before = n.get(..i).and_then(|s| s.chars().next_back());
        (!before.is_some_and(|c| c.is_ascii_alphabetic())).then_some(i + word.len())
    })
}

/// Digits right after `at`, allowing one `-`, `_`, `=` or `.` separator first.
fn number_at(n: &str, at: usize, seps: &[u8]) -> Option<u64> {
    let rest = n.get(at..)?;
    let rest = match rest.as_bytes().first() {
        Some(b) if seps.contains(b) => rest.get(1..)?,
        _ => rest,
    };
    let digits: &str = rest.get(..rest.bytes().take_while(u8::is_ascii_digit).count())?;
    if digits.is_empty() {
        return None;
    }
    digits.parse().ok()
}

/// The training step a file or folder name states: `checkpoint-N`, `global_stepN`,
/// `step_N` / `step-N` / `stepN`, `epoch=E-step=S`, `iter_N` / `iteration_N`.
pub fn step_from_name(name: &str) -> Option<u64> {
    let n = name.to_lowercase();
    for word in ["checkpoint", "ckpt", "step", "iteration", "iter"] {
        if let Some(v) = token_ends(&n, word).find_map(|at| number_at(&n, at, b"-_=")) {
            return Some(v);
        }
    }
    None
}

/// The distributed rank a file or folder name states explicitly: `rank0`, `rank_1`,
/// `rank-2`, `….rank3`, `metrics_rank3.jsonl`.
pub fn rank_from_name(name: &str) -> Option<u32> {
    let n = name.to_lowercase();
    let found = token_ends(&n, "rank").find_map(|at| number_at(&n, at, b"-_=."));
    found.and_then(|v| u32::try_from(v).ok())
}

fn is_init_name(p: &Path) -> bool {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    token_ends(&n, "init").next().is_some() || n.contains("initial") || n.contains("untrained")
}

/// Group weight files (and their optimizer, scheduler, …) into checkpoints ordered by step.
fn group_checkpoints(run: &Run) -> Vec<CheckpointDir> {
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

/// Where a series came from, for de-duplication.
#[derive(Clone, Copy, PartialEq)]
enum Origin {
    State,
    Events,
    Other,
}

/// Series read by one job, with the files that failed.
type JobResult = (Vec<(Series, Origin)>, Vec<String>);

/// Read every metric artifact once (in parallel) into one set.
fn load_metrics(run: &Run) -> Loaded {
    use ArtifactKind as K;
    enum Job<'a> {
        State(&'a Path),
        Events(Vec<&'a Artifact>),
        File(&'a Artifact),
    }
    let mut jobs: Vec<Job> = Vec::new();
    if let Some(p) = run.trainer_state_path() {
        jobs.push(Job::State(p));
    }
    let mut event_dirs: BTreeMap<(PathBuf, Option<u32>), Vec<&Artifact>> = BTreeMap::new();
    for a in &run.artifacts {
        match a.kind {
            K::TfEvents => event_dirs
                .entry((
                    a.path.parent().unwrap_or(Path::new("")).to_path_buf(),
                    a.rank,
                ))
                .or_default()
                .push(a),
            K::MetricsCsv | K::Csv | K::Jsonl => jobs.push(Job::File(a)),
            _ => {}
        }
    }
    jobs.extend(event_dirs.into_values().map(Job::Events));
    let results: Vec<JobResult> = jobs
        .par_iter()
        .map(|job| {
            let mut problems = Vec::new();
            let series = match job {
                Job::State(p) => match run.trainer_state() {
                    Some(st) => st
                        .series
                        .iter()
                        .map(|s| (s.clone(), Origin::State))
                        .collect(),
                    None => {
                        if let Err(e) = TrainerState::read(p) {
                            problems.push(e.to_string());
                        }
                        Vec::new()
                    }
                },
                Job::Events(files) => read_event_dir(files, &mut problems)
                    .into_iter()
                    .map(|s| (s, Origin::Events))
                    .collect(),
                Job::File(a) => {
                    let read = match a.kind {
                        K::Csv => csvlog::read_log(&a.path).map(|l| {
                            if l.step_column.is_some() {
                                l.series
                            } else {
                                Vec::new()
                            }
                        }),
                        K::MetricsCsv => csvlog::read(&a.path),
                        _ => crate::metrics::read_metrics_file(&a.path),
                    };
                    match read {
                        Ok(s) => s
                            .into_iter()
                            .map(|mut s| {
                                s.rank = s.rank.or(a.rank);
                                (s, Origin::Other)
                            })
                            .collect(),
                        Err(e) => {
                            problems.push(e.to_string());
                            Vec::new()
                        }
                    }
                }
            };
            (series, problems)
        })
        .collect();
    let mut all: Vec<(Series, Origin)> = Vec::new();
    let mut problems = Vec::new();
    for (s, p) in results {
        all.extend(s);
        problems.extend(p);
    }
    // A series in both the trainer state and TensorBoard: keep the longer (the state on a tie).
    let mut best: HashMap<(String, Option<u32>), (usize, usize, Origin)> = HashMap::new();
    for (i, (s, o)) in all.iter().enumerate() {
        if *o == Origin::Other {
            continue;
        }
        let key = (s.name.clone(), s.rank);
        let better = match best.get(&key) {
            None => true,
            Some(&(_, len, prev)) => {
                s.len() > len || (s.len() == len && *o == Origin::State && prev == Origin::Events)
            }
        };
        if better {
            best.insert(key, (i, s.len(), *o));
        }
    }
    let keep = |i: usize, s: &Series, o: Origin| -> bool {
        if o == Origin::Other {
            return true;
        }
        match best.get(&(s.name.clone(), s.rank)) {
            // Drop only the other source's copy; two series of one source both stay.
            Some(&(bi, _, bo)) => bi == i || bo == o,
            None => true,
        }
    };
    let series = all
        .into_iter()
        .enumerate()
        .filter(|(i, (s, o))| keep(*i, s, *o))
        .map(|(_, (s, _))| s)
        .collect();
    Loaded {
        set: MetricSet::new(series),
        problems,
    }
}

/// Read the event files of one folder (one rank) and merge them by tag in file-name order
/// (their names start with the creation time), later files winning on a repeated step.
fn read_event_dir(files: &[&Artifact], problems: &mut Vec<String>) -> Vec<Series> {
    let mut sorted: Vec<&Artifact> = files.to_vec();
    sorted.sort_by(|a, b| a.path.file_name().cmp(&b.path.file_name()));
    let mut merged: Vec<Series> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for a in sorted {
        match tfevents::read(&a.path) {
            Ok(series) => {
                for mut s in series {
                    s.rank = s.rank.or(a.rank);
                    match index.get(&s.tag) {
                        Some(&i) => {
                            if let Some(m) = merged.get_mut(i) {
                                m.points.extend(s.points);
                                m.source = a.path.parent().unwrap_or(&a.path).to_path_buf();
                                m.normalize();
                            }
                        }
                        None => {
                            index.insert(s.tag.clone(), merged.len());
                            merged.push(s);
                        }
                    }
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    merged
}

fn config_problems(run: &Run) -> Vec<String> {
    let mut out = Vec::new();
    for a in run.configs() {
        let r = match a.kind {
            ArtifactKind::ModelConfig | ArtifactKind::GenerationConfig => {
                ModelConfig::read(&a.path).map(|_| ())
            }
            ArtifactKind::SchedulerConfig => SchedulerConfig::read(&a.path).map(|_| ()),
            ArtifactKind::AdapterConfig => AdapterConfig::read(&a.path).map(|_| ()),
            _ => Ok(()),
        };
        if let Err(e) = r {
            out.push(e.to_string());
        }
    }
    out
}

/// Facts the artifacts state: `vocab_size`, `num_classes`, token ids, context length, rope
/// scaling from `config.json`; `total_steps` and cadence from `trainer_state.json`; `lr_max`,
/// `warmup_steps`, `schedule`, `accum_steps` from HF's `training_args.bin`; `lr_max` from a
/// `scheduler.pt`'s `base_lrs` when nothing else says; a few hyper-parameters from Lightning's
/// `hparams.yaml`; LoRA rank/alpha (and `from_scratch=false`) from `adapter_config.json`.
/// Each fact names its file; user facts set later still win.
pub fn facts_from_artifacts(run: &Run) -> Facts {
    let mut f = Facts::new();
    if let Some((path, c)) = run.model_config() {
        let file = path.display().to_string();
        let mut set = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                f.set_artifact(k, &v, &file);
            }
        };
        set("vocab_size", c.vocab_size.map(|v| v.to_string()));
        set("num_classes", c.num_labels.map(|v| v.to_string()));
        set(
            "architectures",
            Some(c.architectures.join(",")).filter(|a| !a.is_empty()),
        );
        set("pad_token_id", c.pad_token_id.map(|v| v.to_string()));
        set("eos_token_id", c.eos_token_id.map(|v| v.to_string()));
        set("bos_token_id", c.bos_token_id.map(|v| v.to_string()));
        set("hidden_size", c.hidden_size.map(|v| v.to_string()));
        set(
            "max_position_embeddings",
            c.max_position_embeddings.map(|v| v.to_string()),
        );
        set("model_type", c.model_type.clone());
        set("image_token_id", c.image_token_id.map(|v| v.to_string()));
        set("rope_type", c.rope_type().map(str::to_string));
        set("rope_factor", c.rope_factor().map(|v| v.to_string()));
        set(
            "rope_original_max_position_embeddings",
            c.rope_original_max_position_embeddings()
                .map(|v| v.to_string()),
        );
        set(
            "tie_word_embeddings",
            c.tie_word_embeddings.map(|v| v.to_string()),
        );
        let domain = if c.has_vision_config {
            Some("vlm")
        } else if c.class_name.is_some() {
            Some("diffusion")
        } else if c.vocab_size.is_some() {
            Some("llm")
        } else if c.num_labels.is_some() {
            Some("vision")
        } else {
            None
        };
        if let Some(d) = domain {
            f.set_artifact_if_absent("domain", d, &file);
        }
    }
    if let Some(st) = run.trainer_state() {
        let file = st.path.display().to_string();
        let mut set = |k: &str, v: Option<u64>| {
            if let Some(v) = v {
                f.set_artifact(k, &v.to_string(), &file);
            }
        };
        set("total_steps", st.max_steps.filter(|m| *m > 0));
        set("max_steps", st.max_steps.filter(|m| *m > 0));
        set("global_step", st.global_step);
        set("logging_steps", st.logging_steps);
        set("eval_steps", st.eval_steps);
        set("train_batch_size", st.train_batch_size);
    }
    if let Some(p) = newest_of_kind(run, ArtifactKind::TrainingArgs) {
        training_args_facts(p, &mut f);
    }
    if let Some(p) = newest_of_kind(run, ArtifactKind::Scheduler) {
        scheduler_facts(p, &mut f);
    }
    if let Some(a) = run.of_kind(ArtifactKind::AdapterConfig).first() {
        if let Ok(c) = AdapterConfig::read(&a.path) {
            let file = a.path.display().to_string();
            if let Some(r) = c.r {
                f.set_artifact("lora_r", &r.to_string(), &file);
            }
            if let Some(al) = c.lora_alpha {
                f.set_artifact("lora_alpha", &al.to_string(), &file);
            }
            // A PEFT adapter trains on top of pretrained weights.
            f.set_artifact_if_absent("from_scratch", "false", &file);
        }
    }
    if let Some(a) = run.of_kind(ArtifactKind::HParams).first() {
        hparams_facts(&a.path, &mut f);
    }
    f
}

/// The root folder's file of this kind, else the one with the largest step (the newest
/// checkpoint's).
fn newest_of_kind(run: &Run, kind: ArtifactKind) -> Option<&Path> {
    let all = run.of_kind(kind);
    let base = run.base();
    all.iter()
        .find(|a| a.path.parent() == Some(base))
        .or_else(|| {
            all.iter()
                .max_by_key(|a| (a.step, std::cmp::Reverse(&a.path)))
        })
        .map(|a| a.path.as_path())
}

/// HF `lr_scheduler_type` → the `schedule` fact (None where no fact value fits).
fn schedule_of_hf(kind: &str, kwargs: Option<&crate::tensors::Value>) -> Option<&'static str> {
    use crate::tensors::lookup;
    let kw = |k: &str| kwargs.and_then(|v| lookup(v, k)).and_then(|v| v.as_f64());
    match kind {
        "linear" => Some("warmup_linear"),
        // One cosine cycle down to 0 (restarts default to a single cycle).
        "cosine" => Some("warmup_cosine"),
        "cosine_with_restarts" if kw("num_cycles").unwrap_or(1.0) == 1.0 => Some("warmup_cosine"),
        // Power 1 down to lr_end ≈ 0 is the linear schedule.
        "polynomial" if kw("power").unwrap_or(1.0) == 1.0 => Some("warmup_linear"),
        // HF's constant_with_warmup is a linear ramp then lr_max: a constant schedule with
        // warmup_steps (fitting it this way also passes logs that miss the short ramp).
        "constant" | "constant_with_warmup" => Some("constant"),
        _ => None,
    }
}

/// Facts from HF's `training_args.bin` (a pickled `TrainingArguments`, read without running
/// it): `learning_rate` → lr_max, `warmup_steps` (or `warmup_ratio` × max_steps) →
/// warmup_steps, `lr_scheduler_type` → schedule, `gradient_accumulation_steps` → accum_steps,
/// `max_grad_norm`, `max_steps` → total_steps. Facts already set (trainer state) are kept.
fn training_args_facts(path: &Path, f: &mut Facts) {
    if let Ok(v) = crate::tensors::read_pickled_dict(path) {
        training_args_value_facts(&v, &path.display().to_string(), f);
    }
}

fn training_args_value_facts(v: &crate::tensors::Value, file: &str, f: &mut Facts) {
    use crate::tensors::lookup;
    let num = |k: &str| {
        lookup(v, k)
            .and_then(|x| x.as_f64())
            .filter(|x| x.is_finite())
    };
    if num("learning_rate").is_none() && lookup(v, "lr_scheduler_type").is_none() {
        return; // not a TrainingArguments
    }
    let args_max = num("max_steps").filter(|x| *x > 0.0);
    let total = args_max.or_else(|| f.f64("total_steps").filter(|x| *x > 0.0));
    let mut set = |k: &str, val: String| f.set_artifact_if_absent(k, &val, file);
    if let Some(lr) = num("learning_rate").filter(|x| *x > 0.0) {
        set("lr_max", lr.to_string());
    }
    if let Some(a) = num("gradient_accumulation_steps").filter(|x| *x >= 1.0) {
        set("accum_steps", (a as u64).to_string());
    }
    if let Some(g) = num("max_grad_norm").filter(|x| *x > 0.0) {
        set("max_grad_norm", g.to_string());
    }
    if let Some(m) = args_max {
        set("total_steps", (m as u64).to_string());
    }
    let kind = lookup(v, "lr_scheduler_type")
        .and_then(|x| x.as_str())
        .map(|s| s.trim().to_ascii_lowercase());
    let schedule = kind
        .as_deref()
        .and_then(|k| schedule_of_hf(k, lookup(v, "lr_scheduler_kwargs")));
    if let Some(s) = schedule {
        set("schedule", s.to_string());
    }
    // HF: warmup_steps ≥ 1 counts steps; in (0, 1) (transformers 5) or warmup_ratio (4.x) is
    // a fraction of the total steps, rounded up. A plain constant schedule ignores warmup.
    let ws = num("warmup_steps").filter(|x| *x >= 0.0);
    let ratio = num("warmup_ratio").filter(|x| *x > 0.0);
    let warmup = if kind.as_deref() == Some("constant") {
        Some(0.0)
    } else {
        match (ws, ratio) {
            (Some(w), _) if w >= 1.0 => Some(w.floor()),
            (Some(w), _) if w > 0.0 => total.map(|t| (t * w).ceil()),
            (_, Some(r)) => total.map(|t| (t * r).ceil()),
            (Some(_), None) => Some(0.0),
            (None, None) => None,
        }
    };
    if let Some(w) = warmup {
        set("warmup_steps", (w as u64).to_string());
    }
}

/// `lr_max` from a torch LR scheduler's state (`scheduler.pt`): its `base_lrs` (the LR each
/// param group was built with), when all groups share one; CyclicLR's `max_lrs`. Skipped for
/// OneCycleLR, whose base LR is max_lr / div_factor.
fn scheduler_facts(path: &Path, f: &mut Facts) {
    if f.get("lr_max").is_some() {
        return;
    }
    if let Ok(v) = crate::tensors::read_pickled_dict(path) {
        scheduler_value_facts(&v, &path.display().to_string(), f);
    }
}

fn scheduler_value_facts(v: &crate::tensors::Value, file: &str, f: &mut Facts) {
    use crate::tensors::lookup;
    if lookup(v, "_schedule_phases").is_some() {
        return;
    }
    let lrs: Vec<f64> = lookup(v, "max_lrs")
        .or_else(|| lookup(v, "base_lrs"))
        .and_then(|x| x.as_seq())
        .map(|s| s.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default();
    let Some(&first) = lrs.first() else { return };
    if first > 0.0
        && first.is_finite()
        && lrs.iter().all(|x| (x - first).abs() <= 1e-12 * first.abs())
    {
        f.set_artifact_if_absent("lr_max", &first.to_string(), file);
    }
}

/// Top-level `key: scalar` lines of a Lightning `hparams.yaml` (no YAML parser needed for
/// these few keys); nested blocks are ignored.
fn hparams_facts(path: &Path, f: &mut Facts) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let file = path.display().to_string();
    for line in text
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '-', '#']))
    {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().trim_matches(['"', '\'']);
        if v.is_empty() || v.parse::<f64>().is_err() {
            continue;
        }
        let key = match k.trim() {
            "lr" | "learning_rate" => "lr_max",
            "warmup_steps" => "warmup_steps",
            "max_steps" if !v.starts_with('-') => "total_steps",
            "accumulate_grad_batches" | "gradient_accumulation_steps" => "accum_steps",
            "vocab_size" => "vocab_size",
            "num_classes" | "num_labels" => "num_classes",
            "gradient_clip_val" | "max_grad_norm" => "max_grad_norm",
            _ => continue,
        };
        f.set_artifact_if_absent(key, v, &file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensors::Value;

    /// A pickled `TrainingArguments`-like object: a class with a BUILD state dict.
    fn args_object(fields: &[(&str, Value)]) -> Value {
        Value::Object {
            class: (
                "transformers.training_args".into(),
                "TrainingArguments".into(),
            ),
            args: Vec::new(),
            state: Some(Box::new(Value::Dict(
                fields
                    .iter()
                    .map(|(k, v)| (Value::Str(k.to_string()), v.clone()))
                    .collect(),
            ))),
        }
    }

    fn sched_type(s: &str) -> Value {
        Value::Object {
            class: ("transformers.trainer_utils".into(), "SchedulerType".into()),
            args: vec![Value::Str(s.into())],
            state: None,
        }
    }

    #[test]
    fn training_args_give_lr_warmup_schedule_accum() {
        // transformers 4.x: warmup_ratio × max_steps, rounded up; linear → warmup_linear.
        let v = args_object(&[
            ("learning_rate", Value::Float(3e-4)),
            ("lr_scheduler_type", sched_type("linear")),
            ("warmup_steps", Value::Int(0)),
            ("warmup_ratio", Value::Float(0.03)),
            ("max_steps", Value::Int(1000)),
            ("gradient_accumulation_steps", Value::Int(8)),
        ]);
        let mut f = Facts::new();
        training_args_value_facts(&v, "training_args.bin", &mut f);
        assert_eq!(f.f64("lr_max"), Some(3e-4));
        assert_eq!(f.get("schedule"), Some("warmup_linear"));
        assert_eq!(f.u64("warmup_steps"), Some(30));
        assert_eq!(f.u64("accum_steps"), Some(8));
        assert_eq!(f.u64("total_steps"), Some(1000));

        // transformers 5: a fractional warmup_steps is a ratio of the trainer state's total.
        let v = args_object(&[
            ("learning_rate", Value::Float(1e-3)),
            ("lr_scheduler_type", sched_type("cosine")),
            ("warmup_steps", Value::Float(0.1)),
            ("max_steps", Value::Int(-1)),
        ]);
        let mut f = Facts::new();
        f.set_artifact("total_steps", "450", "trainer_state.json");
        training_args_value_facts(&v, "training_args.bin", &mut f);
        assert_eq!(f.get("schedule"), Some("warmup_cosine"));
        assert_eq!(f.u64("warmup_steps"), Some(45));

        // constant_with_warmup → constant with its warmup; plain constant ignores warmup;
        // an unknown scheduler sets no schedule; user facts still win.
        for (kind, sched, warm) in [
            ("constant_with_warmup", Some("constant"), 100),
            ("constant", Some("constant"), 0),
            ("inverse_sqrt", None, 100),
        ] {
            let v = args_object(&[
                ("learning_rate", Value::Float(2e-5)),
                ("lr_scheduler_type", sched_type(kind)),
                ("warmup_steps", Value::Int(100)),
            ]);
            let mut f = Facts::from_args(&["lr_max=0.5"]).unwrap();
            training_args_value_facts(&v, "training_args.bin", &mut f);
            assert_eq!(f.get("schedule"), sched, "{kind}");
            assert_eq!(f.u64("warmup_steps"), Some(warm), "{kind}");
            assert_eq!(f.f64("lr_max"), Some(0.5), "{kind}: the user's fact wins");
        }
        // Not a TrainingArguments: nothing.
        let mut f = Facts::new();
        training_args_value_facts(&Value::Dict(Vec::new()), "x.bin", &mut f);
        assert_eq!(f.iter().count(), 0);
    }

    #[test]
    fn scheduler_base_lrs_give_lr_max_when_unambiguous() {
        let lrs = |xs: &[f64]| Value::List(xs.iter().map(|x| Value::Float(*x)).collect());
        let dict = |kv: Vec<(&str, Value)>| {
            Value::Dict(
                kv.into_iter()
                    .map(|(k, v)| (Value::Str(k.into()), v))
                    .collect(),
            )
        };
        let mut f = Facts::new();
        scheduler_value_facts(
            &dict(vec![("base_lrs", lrs(&[1e-3, 1e-3]))]),
            "s.pt",
            &mut f,
        );
        assert_eq!(f.f64("lr_max"), Some(1e-3));
        // Groups with different LRs: which one the logs show is unknown.
        let mut f = Facts::new();
        scheduler_value_facts(
            &dict(vec![("base_lrs", lrs(&[1e-5, 1e-3]))]),
            "s.pt",
            &mut f,
        );
        assert_eq!(f.get("lr_max"), None);
        // OneCycleLR: base_lrs are max_lr / div_factor.
        let mut f = Facts::new();
        let one_cycle = dict(vec![
            ("base_lrs", lrs(&[4e-5])),
            ("_schedule_phases", Value::List(Vec::new())),
        ]);
        scheduler_value_facts(&one_cycle, "s.pt", &mut f);
        assert_eq!(f.get("lr_max"), None);
        // CyclicLR: the top of the cycle.
        let mut f = Facts::new();
        let cyclic = dict(vec![("base_lrs", lrs(&[1e-4])), ("max_lrs", lrs(&[1e-2]))]);
        scheduler_value_facts(&cyclic, "s.pt", &mut f);
        assert_eq!(f.f64("lr_max"), Some(1e-2));
    }

    #[test]
    fn steps_from_names() {
        for (n, s) in [
            ("checkpoint-300", Some(300)),
            ("checkpoint_5", Some(5)),
            ("global_step1200", Some(1200)),
            ("step_7", Some(7)),
            ("step-8", Some(8)),
            ("step9", Some(9)),
            ("model_step100.pt", Some(100)),
            ("epoch=2-step=300.ckpt", Some(300)),
            ("iter_0001000", Some(1000)),
            ("iteration-12", Some(12)),
            ("last.ckpt", None),
            ("steps_per_epoch", None),
            ("checkpoint-", None),
            ("checkpoint-99999999999999999999999", None),
            ("runs", None),
            ("events.out.tfevents.1795316046.vm.16510.0", None),
        ] {
            assert_eq!(step_from_name(n), s, "{n}");
        }
    }

    #[test]
    fn ranks_only_from_explicit_names() {
        for (n, r) in [
            ("events.out.tfevents.1.host.rank1", Some(1)),
            ("metrics_rank3.jsonl", Some(3)),
            ("rank-2", Some(2)),
            ("rank_0", Some(0)),
            ("RANK4", Some(4)),
            ("events.out.tfevents.1795316046.vm.16510.0", None),
            ("frank1", None),
            ("rank", None),
        ] {
            assert_eq!(rank_from_name(n), r, "{n}");
        }
    }

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
        ] {
            assert_eq!(classify(n), k, "{n}");
        }
    }
}
