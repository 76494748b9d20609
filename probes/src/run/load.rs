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

/// Series read by one job, with the files that failed and the restarts inside one folder.
type JobResult = (Vec<(Series, Origin)>, Vec<String>, Vec<Restart>);

/// Read every metric artifact once (in parallel) into one set.
pub(super) fn load_metrics(run: &Run) -> Loaded {
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
                Job::Events(files) => read_event_dir(files, &mut problems, &mut restarts)
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
                        K::StdoutLog => stdout_log::read(&a.path).map(|r| r.series),
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
            (series, problems, restarts)
        })
        .collect();
    let mut all: Vec<(Series, Origin)> = Vec::new();
    let mut problems = Vec::new();
    let mut event_restarts = Vec::new();
    for (s, p, r) in results {
        all.extend(s);
        problems.extend(p);
        event_restarts.extend(r);
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
    let (series, mut restarts) = super::segments::join(series);
    restarts.extend(event_restarts);
    restarts.extend(resume_marks);
    restarts.sort_by(|x, y| x.step.cmp(&y.step).then_with(|| x.name.cmp(&y.name)));
    restarts.dedup_by(|x, y| x.step == y.step && x.name == y.name);
    let mut set = MetricSet::new(series);
    set.restarts = restarts;
    Loaded { set, problems }
}

/// Read the event files of one folder (one rank) and merge them by tag in file-name order
/// (their names start with the creation time), later files winning on a repeated step.
fn read_event_dir(
    files: &[&Artifact],
    problems: &mut Vec<String>,
    restarts: &mut Vec<Restart>,
) -> Vec<Series> {
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
            Err(e) => problems.push(e.to_string()),
        }
    }
    merged
}

pub(super) fn config_problems(run: &Run) -> Vec<String> {
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
