//! Reading what the walk found, once: every metric artifact into one [`MetricSet`] (rank 0 and
//! the longest copy of a series kept), and the configs that fail to parse.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{Artifact, ArtifactKind, Run};
use crate::config::{AdapterConfig, ModelConfig, SchedulerConfig};
use crate::metrics::trainer_state::TrainerState;
use crate::metrics::{csvlog, mlflow, stdout_log, tfevents, wandb, MetricSet, Restart, Series};

/// Metrics loaded once, with the files that failed.
#[derive(Debug, Default)]
pub(super) struct Loaded {
    pub(super) set: MetricSet,
    pub(super) problems: Vec<String>,
}

/// Where a series came from, for de-duplication.
#[derive(Clone, Copy, PartialEq)]
enum Origin {
    State,
    Events,
    Other,
}

/// Series read by one job, with the files that failed, the restarts inside one folder and the
/// batches per epoch a progress log states.
type JobResult = (
    Vec<(Series, Origin)>,
    Vec<String>,
    Vec<Restart>,
    Option<u64>,
);

/// A metric file's series as read elsewhere (a follower's incremental reads, `follow/`), used
/// in place of reading the file again.
#[derive(Debug, Clone, Default)]
pub struct FileSeries {
    pub series: Vec<Series>,
    /// Batches per epoch, where a progress log states it.
    pub steps_per_epoch: Option<u64>,
}

/// Looks up a metric file's series already read (`Err`: why the file could not be read);
/// `None`: read the file now.
pub type Cached<'a> = &'a (dyn Fn(&Path) -> Option<std::result::Result<FileSeries, String>> + Sync);

/// Read every metric artifact once (in parallel) into one set.
pub(super) fn load_metrics(run: &Run) -> Loaded {
    load_metrics_cached(run, &|_| None)
}

/// [`load_metrics`], taking each file's series from `cached` where it has them.
pub(super) fn load_metrics_cached(run: &Run, cached: Cached) -> Loaded {
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
            K::MetricsCsv | K::Csv | K::Jsonl | K::StdoutLog | K::WandbRecord | K::MlflowMetric => {
                jobs.push(Job::File(a))
            }
            _ => {}
        }
    }
    jobs.extend(event_dirs.into_values().map(Job::Events));
    let results: Vec<JobResult> = jobs
        .par_iter()
        .map(|job| {
            let mut problems = Vec::new();
            let mut restarts = Vec::new();
            let mut per_epoch = None;
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
                Job::Events(files) => read_event_dir(files, &mut problems, &mut restarts, cached)
                    .into_iter()
                    .map(|s| (s, Origin::Events))
                    .collect(),
                Job::File(a) if cached(&a.path).is_some() => match cached(&a.path) {
                    Some(Ok(f)) => {
                        per_epoch = f.steps_per_epoch;
                        f.series
                            .into_iter()
                            .map(|mut s| {
                                s.rank = s.rank.or(a.rank);
                                (s, Origin::Other)
                            })
                            .collect()
                    }
                    Some(Err(e)) => {
                        problems.push(e);
                        Vec::new()
                    }
                    None => Vec::new(),
                },
                Job::File(a) => {
                    let read = match a.kind {
                        K::Csv => csvlog::read_log(&a.path).map(|l| {
                            if l.is_training_log() {
                                l.series
                            } else {
                                Vec::new()
                            }
                        }),
                        K::MetricsCsv => csvlog::read(&a.path),
                        K::StdoutLog => stdout_log::read(&a.path).map(|r| {
                            per_epoch = r.steps_per_epoch;
                            r.series
                        }),
                        // JSON lines by content (`log.txt`) or by name: never by extension.
                        K::Jsonl
                            if !a
                                .path
                                .extension()
                                .is_some_and(|e| e.eq_ignore_ascii_case("json")) =>
                        {
                            crate::metrics::jsonl::read(&a.path)
                        }
                        K::WandbRecord => wandb::read(&a.path).map(|r| r.series),
                        K::MlflowMetric => match mlflow::metric_key(&a.path) {
                            Some((_, key)) => mlflow::read_metric(&a.path, &key).map(|s| vec![s]),
                            None => Ok(Vec::new()),
                        },
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
            (series, problems, restarts, per_epoch)
        })
        .collect();
    let mut all: Vec<(Series, Origin)> = Vec::new();
    let mut problems = Vec::new();
    let mut event_restarts = Vec::new();
    let mut per_epoch: Vec<u64> = Vec::new();
    for (s, p, r, n) in results {
        all.extend(s);
        problems.extend(p);
        event_restarts.extend(r);
        per_epoch.extend(n);
    }
    {
        let mut refs: Vec<&mut Series> = all.iter_mut().map(|(s, _)| s).collect();
        super::epoch_clock::epochs_by_clock(&mut refs);
    }
    epochs_by_loop_state(run, &mut all);
    per_epoch.sort_unstable();
    per_epoch.dedup();
    if let [n] = per_epoch[..] {
        epochs_to_steps(&mut all, n);
    }
    // Resume marks are read before copies are dropped: a trainer state that merged both
    // segments hides the resume that its TensorBoard copies (one event folder per start) show.
    let mut resume_marks: Vec<Restart> = all
        .iter()
        .filter_map(|(s, _)| {
            Some(Restart {
                step: s.restart?,
                name: s.name.clone(),
                source: s.source.clone(),
            })
        })
        .collect();
    let every: Vec<&Series> = all.iter().map(|(s, _)| s).collect();
    resume_marks.extend(super::segments::restarts(&every));
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
    let series: Vec<Series> = all
        .into_iter()
        .enumerate()
        .filter(|(i, (s, o))| keep(*i, s, *o))
        .map(|(_, (s, _))| s)
        .collect();
    let (mut series, mut restarts) = super::segments::join(series);
    epoch_units_by_content(&mut series);
    series.extend(sums_of_parts(&series));
    restarts.extend(event_restarts);
    restarts.extend(resume_marks);
    restarts.sort_by(|x, y| x.step.cmp(&y.step).then_with(|| x.name.cmp(&y.name)));
    restarts.dedup_by(|x, y| x.step == y.step && x.name == y.name);
    let mut set = MetricSet::new(series);
    set.restarts = restarts;
    Loaded { set, problems }
}

/// Epoch-indexed series placed at the step their epoch ends, where the run states how many
/// steps an epoch has (one value of batches per epoch across its progress logs): epoch `e`
/// ends at step `(e + 1) × n` when epochs count from 0, `e × n` when from 1.
fn epochs_to_steps(all: &mut [(Series, Origin)], n: u64) {
    use crate::metrics::Unit;
    for (s, _) in all.iter_mut().filter(|(s, _)| s.unit == Unit::Epoch) {
        let from_zero = s.first().is_some_and(|p| p.step == 0);
        for p in &mut s.points {
            let e = if from_zero { p.step + 1 } else { p.step };
            p.step = e.saturating_mul(n);
        }
        s.unit = Unit::Step;
    }
}

/// Series a run logs once per epoch at step = the epoch, where no step series beside them gives
/// a clock (Ignite's handlers attached at `Events.EPOCH_COMPLETED` with `global_step_from_engine`
/// write every tag so): the loop's state in a checkpoint says how far training got, `iteration`
/// I with `epoch_length` L. A step-indexed series ends near I; one that ends at or before I / L,
/// at least two epochs, counts epochs.
fn epochs_by_loop_state(run: &Run, all: &mut [(Series, Origin)]) {
    use crate::metrics::Unit;
    let epochs = run
        .artifacts
        .iter()
        .filter(|a| a.kind == ArtifactKind::TorchFile)
        .map(|a| super::checkpoints::embedded(&a.path, a.kind))
        .filter_map(|e| Some((e.step?, e.epoch_length?)))
        .max()
        .map(|(i, l)| i / l)
        .filter(|e| *e >= 2);
    let Some(epochs) = epochs else { return };
    for (s, _) in all.iter_mut().filter(|(s, _)| {
        s.unit == Unit::Step && s.len() >= 2 && s.last().is_some_and(|p| p.step <= epochs)
    }) {
        s.unit = Unit::Epoch;
    }
}

/// A folder that holds a framework's validation event files (`logs/validation/`).
fn is_eval_folder(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "validation" | "val" | "valid" | "eval" | "evaluation" | "test"
    )
}

/// A step-indexed series that holds the same points as an epoch-indexed one (Ultralytics writes
/// its per-epoch values to `results.csv` with an `epoch` column and to TensorBoard at step =
/// epoch) counts epochs too.
fn epoch_units_by_content(series: &mut [Series]) {
    use crate::metrics::Unit;
    let epochs: Vec<(String, Vec<u64>, Vec<f64>)> = series
        .iter()
        .filter(|s| s.unit == Unit::Epoch && s.len() >= 2)
        .map(|s| (s.name.clone(), s.steps(), s.values()))
        .collect();
    if epochs.is_empty() {
        return;
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(1e-12);
    for s in series.iter_mut().filter(|s| s.unit == Unit::Step) {
        let same = epochs.iter().any(|(name, steps, values)| {
            let shift = |d: i64| {
                *name == s.name
                    && steps.len() == s.len()
                    && s.points
                        .iter()
                        .zip(steps.iter().zip(values))
                        .all(|(p, (st, v))| p.step as i64 == *st as i64 + d && close(p.value, *v))
            };
            // Logged at the epoch's index, or one off (epochs counted from 1 in one file).
            shift(0) || shift(-1) || shift(1)
        });
        if same {
            s.unit = Unit::Epoch;
        }
    }
}

/// A loss logged only in parts (a detector's `box_loss`, `cls_loss`, `dfl_loss`): their sum at
/// each step where every part is logged, as the loss itself, per source, where no total is.
fn sums_of_parts(series: &[Series]) -> Vec<Series> {
    use crate::metrics::vocab::part_of;
    let mut groups: BTreeMap<(String, PathBuf, Option<u32>), Vec<&Series>> = BTreeMap::new();
    for s in series {
        if let Some(whole) = part_of(&s.name) {
            groups
                .entry((whole, s.source.clone(), s.rank))
                .or_default()
                .push(s);
        }
    }
    let mut out = Vec::new();
    for ((whole, source, rank), parts) in groups {
        if parts.len() < 2 || series.iter().any(|s| s.name == whole && s.source == source) {
            continue;
        }
        let Some(first) = parts.first() else { continue };
        let points = first
            .points
            .iter()
            .filter_map(|p| {
                let mut sum = 0.0;
                for q in &parts {
                    let at = q.range(p.step, p.step).first()?;
                    sum += at.value;
                }
                Some(crate::metrics::Point {
                    step: p.step,
                    value: sum,
                    wall_time: p.wall_time,
                })
            })
            .collect();
        let tags: Vec<&str> = parts.iter().map(|s| s.tag.as_str()).collect();
        let mut s = Series::from_points(&tags.join(" + "), &source, points);
        s.name = whole;
        s.rank = rank;
        s.unit = first.unit;
        if !s.is_empty() {
            out.push(s);
        }
    }
    out
}

/// Read the event files of one folder (one rank) and merge them by tag in file-name order
/// (their names start with the creation time), later files winning on a repeated step.
fn read_event_dir(
    files: &[&Artifact],
    problems: &mut Vec<String>,
    restarts: &mut Vec<Restart>,
    cached: Cached,
) -> Vec<Series> {
    let mut sorted: Vec<&Artifact> = files.to_vec();
    sorted.sort_by(|a, b| a.path.file_name().cmp(&b.path.file_name()));
    let mut merged: Vec<Series> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for a in sorted {
        let eval_folder = a
            .path
            .parent()
            .and_then(|d| d.file_name())
            .is_some_and(|n| is_eval_folder(&n.to_string_lossy()));
        let read = match cached(&a.path) {
            Some(r) => r.map(|f| f.series),
            None => tfevents::read(&a.path).map_err(|e| e.to_string()),
        };
        match read {
            Ok(series) => {
                for mut s in series {
                    s.rank = s.rank.or(a.rank);
                    if eval_folder && !s.name.starts_with("eval_") {
                        // Keras' TensorBoard callback writes `logs/train/` and
                        // `logs/validation/` with the same tags: two different series.
                        let unit = s.unit;
                        let tag = format!("val/{}", s.tag);
                        let (points, source) = (std::mem::take(&mut s.points), s.source.clone());
                        let rank = s.rank;
                        s = Series::new(&tag, &source);
                        s.points = points;
                        s.rank = rank;
                        s.unit = unit;
                    }
                    match index.get(&s.tag) {
                        Some(&i) => {
                            if let Some(m) = merged.get_mut(i) {
                                if m.len() >= 2 && s.len() >= 2 && super::segments::continues(m, &s)
                                {
                                    restarts.push(Restart {
                                        step: s.first().map(|p| p.step).unwrap_or(0),
                                        name: s.name.clone(),
                                        source: a.path.clone(),
                                    });
                                }
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
            Err(e) => problems.push(e),
        }
    }
    merged
}

pub(super) fn config_problems(run: &Run) -> Vec<String> {
    let mut out = Vec::new();
    // A Keras v3 archive is read for its config (its head and loss): one that does not open is
    // unreadable, not merely HDF5 weights left unread.
    for a in run.of_kind(ArtifactKind::Hdf5Weights) {
        if a.path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("keras"))
        {
            if let Err(e) = crate::tensors::keras::read(&a.path) {
                out.push(e.to_string());
            }
        }
    }
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
