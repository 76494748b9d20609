//! Metric logs normalised into named series: the [`Series`] / [`MetricSet`] model, the
//! canonical metric names (`loss`, `grad_norm`, `learning_rate`, …) every probe asks for, and
//! [`read_metrics_file`], which dispatches to the per-format readers.

pub mod budget;
pub mod csvlog;
pub mod jsonl;
pub mod mlflow;
pub mod stdout_log;
pub mod tfevents;
pub mod trainer_state;
pub mod vocab;
pub mod wandb;

use std::path::{Path, PathBuf};

use crate::error::{ReadError, Result};

/// One logged value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub step: u64,
    pub value: f64,
    /// Seconds since the epoch, when the log records it (TensorBoard does).
    pub wall_time: Option<f64>,
}

/// One metric over steps, sorted by step with one point per step (the last one written wins,
/// as TensorBoard does when a run restarts from a checkpoint).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Canonical name (see [`canonical_name`]), e.g. `loss`.
    pub name: String,
    /// The tag as logged, e.g. `train/loss`.
    pub tag: String,
    /// The file (or, for merged TensorBoard files, the directory) it was read from.
    pub source: PathBuf,
    /// Distributed rank, when the file or folder name says so.
    pub rank: Option<u32>,
    pub points: Vec<Point>,
    /// Where the steps went back in write order (a resumed run appending to its log replays
    /// from its checkpoint): the step logged again, the first time it happens.
    pub restart: Option<u64>,
    /// What a point's `step` counts: optimizer steps, or epochs where the log's only index is
    /// the epoch (Ultralytics `results.csv`, timm `summary.csv`, Keras `epoch_*` tags).
    pub unit: Unit,
}

/// The index of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    #[default]
    Step,
    Epoch,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Step => "step",
            Unit::Epoch => "epoch",
        }
    }
}

impl Series {
    /// An empty series for `tag` (its canonical name is derived from the tag).
    pub fn new(tag: &str, source: &Path) -> Self {
        Series {
            name: canonical_name(tag),
            tag: tag.to_string(),
            source: source.to_path_buf(),
            rank: None,
            points: Vec::new(),
            restart: None,
            unit: if epoch_tag(tag) {
                Unit::Epoch
            } else {
                Unit::Step
            },
        }
    }

    /// A series from points in write order; sorts and de-duplicates them.
    pub fn from_points(tag: &str, source: &Path, points: Vec<Point>) -> Self {
        let mut s = Series::new(tag, source);
        s.points = points;
        s.normalize();
        s
    }

    /// Sort by step (stable) and keep the last written point of each step.
    pub fn normalize(&mut self) {
        if self.points.windows(2).all(|w| w[0].step < w[1].step) {
            return;
        }
        // A step that goes back, then climbs again: the log was appended to after a resume.
        if self.restart.is_none() {
            self.restart = self.points.windows(3).find_map(|w| {
                (w[1].step < w[0].step && w[2].step > w[1].step).then_some(w[1].step)
            });
        }
        self.points.sort_by_key(|p| p.step);
        // `dedup_by` hands (later, kept); copy the later one over the kept one, drop the later.
        self.points.dedup_by(|later, kept| {
            if later.step == kept.step {
                *kept = *later;
                true
            } else {
                false
            }
        });
    }

    /// Whether the points from index `from` on still climb strictly by step after the one
    /// before them: what a follower checks of the points a poll appended, so a series that
    /// stays in order is never walked whole again ([`Series::normalize`] would leave it as it is).
    pub fn ordered_from(&self, from: usize) -> bool {
        self.points
            .get(from.saturating_sub(1)..)
            .is_none_or(|p| p.windows(2).all(|w| w[0].step < w[1].step))
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
    pub fn first(&self) -> Option<&Point> {
        self.points.first()
    }
    pub fn last(&self) -> Option<&Point> {
        self.points.last()
    }
    /// Smallest finite value (NaN and ±inf ignored).
    pub fn min(&self) -> Option<f64> {
        self.finite().reduce(f64::min)
    }
    /// Largest finite value (NaN and ±inf ignored).
    pub fn max(&self) -> Option<f64> {
        self.finite().reduce(f64::max)
    }
    fn finite(&self) -> impl Iterator<Item = f64> + '_ {
        self.points
            .iter()
            .map(|p| p.value)
            .filter(|v| v.is_finite())
    }
    /// The point at `step`, or the latest one before it.
    pub fn value_at_or_before(&self, step: u64) -> Option<&Point> {
        let i = self.points.partition_point(|p| p.step <= step);
        i.checked_sub(1).and_then(|i| self.points.get(i))
    }
    /// The first point at or after `step`.
    pub fn value_at_or_after(&self, step: u64) -> Option<&Point> {
        let i = self.points.partition_point(|p| p.step < step);
        self.points.get(i)
    }
    pub fn values(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.value).collect()
    }
    /// The median gap between consecutive logged steps (the logging interval), `None` with
    /// fewer than two steps.
    pub fn interval(&self) -> Option<u64> {
        let mut gaps: Vec<u64> = self
            .points
            .windows(2)
            .map(|w| w[1].step.saturating_sub(w[0].step))
            .filter(|g| *g > 0)
            .collect();
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_unstable();
        Some(gaps[gaps.len() / 2])
    }
    pub fn steps(&self) -> Vec<u64> {
        self.points.iter().map(|p| p.step).collect()
    }
    /// Points with `lo <= step <= hi`.
    pub fn range(&self, lo: u64, hi: u64) -> &[Point] {
        let a = self.points.partition_point(|p| p.step < lo);
        let b = self.points.partition_point(|p| p.step <= hi);
        self.points.get(a..b.max(a)).unwrap_or(&[])
    }
}

/// A tag that names an epoch-level value logged at the epoch's index (Keras `epoch_loss`,
/// `epoch_learning_rate`, `train/epoch_accuracy`).
fn epoch_tag(tag: &str) -> bool {
    let t = tag.trim().to_ascii_lowercase();
    t.starts_with("epoch_") || t.contains("/epoch_")
}

/// Every series of a run (or of one file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricSet {
    pub series: Vec<Series>,
    /// Where a log restarts part-way through the run (a resumed run's second log segment,
    /// a new event file that starts late): one per restart, earliest first.
    pub restarts: Vec<Restart>,
}

/// A log segment that starts part-way through the run: the mark of a resume.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Restart {
    /// The first step the later segment logs.
    pub step: u64,
    /// The series' canonical name.
    pub name: String,
    /// The later segment's file (or folder).
    #[serde(serialize_with = "crate::run::lossy_path")]
    pub source: PathBuf,
}

impl MetricSet {
    pub fn new(series: Vec<Series>) -> Self {
        MetricSet {
            series,
            restarts: Vec::new(),
        }
    }

    /// The series for a canonical name: rank `None`/0 first, then the longest. A name with no
    /// series of its own falls back to its first param group (`learning_rate` ->
    /// `learning_rate/pg0`, else `/pg1`: Lightning's LearningRateMonitor counts groups from 1),
    /// as Lightning logs per-group learning rates only.
    pub fn get(&self, canonical: &str) -> Option<&Series> {
        let pick = |name: &str| {
            self.series
                .iter()
                .filter(|s| s.name == name && !s.is_empty())
                .max_by_key(|s| (matches!(s.rank, None | Some(0)), s.len()))
        };
        pick(canonical)
            .or_else(|| pick(&format!("{canonical}/pg0")))
            .or_else(|| pick(&format!("{canonical}/pg1")))
    }

    /// Every non-empty series with this canonical name (all ranks, all sources).
    pub fn all(&self, canonical: &str) -> Vec<&Series> {
        self.series
            .iter()
            .filter(|s| s.name == canonical && !s.is_empty())
            .collect()
    }

    /// Distinct canonical names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn is_empty(&self) -> bool {
        self.series.iter().all(|s| s.is_empty())
    }

    /// The largest step of any series.
    pub fn max_step(&self) -> Option<u64> {
        self.series
            .iter()
            .filter_map(|s| s.last())
            .map(|p| p.step)
            .max()
    }
}

/// Map a logged tag to the canonical name probes ask for, by the metric vocabulary
/// (`playbook/metrics.yaml`, see [`vocab`]). Unknown tags are kept, lowercased and trimmed.
/// Evaluation variants stay distinct (`eval/loss` -> `eval_loss`); per-group learning rates
/// keep their group (`lr-Adam/pg1` -> `learning_rate/pg1`).
pub fn canonical_name(tag: &str) -> String {
    vocab::canonical_name(tag)
}

/// Which reader a metric file needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricFormat {
    TrainerState,
    TfEvents,
    Csv,
    Jsonl,
    /// A `.json` file: a trainer state, one object, an array of objects, or JSON lines.
    Json,
    /// A W&B run record file (`run-<id>.wandb`).
    Wandb,
    /// Captured training stdout (`train.log`, `nohup.out`, `slurm-<job>.out`).
    StdoutLog,
}

/// The format a file name says, if any.
pub fn format_from_name(path: &Path) -> Option<MetricFormat> {
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    if name == "trainer_state.json" {
        Some(MetricFormat::TrainerState)
    } else if name.starts_with("events.out.tfevents") {
        Some(MetricFormat::TfEvents)
    } else if name.ends_with(".csv") || name.ends_with(".tsv") {
        Some(MetricFormat::Csv)
    } else if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
        Some(MetricFormat::Jsonl)
    } else if name.ends_with(".json") {
        Some(MetricFormat::Json)
    } else if name.ends_with(".wandb") {
        Some(MetricFormat::Wandb)
    } else if stdout_log::is_stdout_log_name(&name) {
        Some(MetricFormat::StdoutLog)
    } else {
        None
    }
}

/// Read one metric log, choosing the reader from the file name, else from the first bytes.
/// Series get the rank the file name states (`…rank1`, `metrics_rank3.jsonl`).
pub fn read_metrics_file(path: &Path) -> Result<Vec<Series>> {
    if let Some((_, key)) = mlflow::metric_key(path) {
        return Ok(vec![mlflow::read_metric(path, &key)?]);
    }
    let format = match format_from_name(path) {
        Some(f) => f,
        None => sniff(path)?,
    };
    let mut series = match format {
        MetricFormat::TrainerState => trainer_state::TrainerState::read(path)?.series,
        MetricFormat::TfEvents => tfevents::read(path)?,
        MetricFormat::Csv => csvlog::read(path)?,
        MetricFormat::Jsonl => jsonl::read(path)?,
        MetricFormat::Json => jsonl::read_json_or_lines(path)?,
        MetricFormat::Wandb => {
            let r = wandb::read(path)?;
            if r.history_rows == 0 {
                return Err(ReadError::empty(
                    path,
                    "W&B record file with no history rows",
                ));
            }
            r.series
        }
        MetricFormat::StdoutLog => {
            let r = stdout_log::read(path)?;
            if r.series.is_empty() {
                let long = match r.long_lines {
                    0 => String::new(),
                    n => format!(
                        "; {n} line(s) longer than the {} MiB line cap skipped",
                        crate::limits::MAX_LINE >> 20
                    ),
                };
                return Err(ReadError::empty(
                    path,
                    format!(
                        "no line of {} names its step (`step N`, `iter N:`, `step=N`){long}",
                        r.lines.saturating_sub(1)
                    ),
                ));
            }
            r.series
        }
    };
    if let Some(rank) = path
        .file_name()
        .and_then(|n| crate::names::rank_from_name(&n.to_string_lossy()))
    {
        for s in &mut series {
            s.rank.get_or_insert(rank);
        }
    }
    Ok(series)
}

/// Guess a metric log's format from its first bytes.
fn sniff(path: &Path) -> Result<MetricFormat> {
    let head = crate::limits::read_head(path, 512)?;
    let n = head.len();
    let head = head.as_slice();
    if n == 0 {
        return Err(ReadError::empty(path, "empty file"));
    }
    if tfevents::looks_like_tfrecord(head) {
        return Ok(MetricFormat::TfEvents);
    }
    let text = head.iter().copied().find(|b| !b.is_ascii_whitespace());
    match text {
        Some(b'{') | Some(b'[') => Ok(MetricFormat::Json),
        _ if head.contains(&b',') && std::str::from_utf8(head).is_ok() => Ok(MetricFormat::Csv),
        _ => Err(ReadError::format(path, "not a recognised metric log (TensorBoard events, trainer_state.json, CSV or JSON lines)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(step: u64, value: f64) -> Point {
        Point {
            step,
            value,
            wall_time: None,
        }
    }

    #[test]
    fn canonical_names_cover_the_common_aliases() {
        for (tag, want) in [
            ("loss", "loss"),
            ("train/loss", "loss"),
            ("train_loss", "loss"),
            ("training_loss", "loss"),
            ("train/loss_step", "loss"),
            ("trainer/loss", "loss"),
            (" Train/Loss ", "loss"),
            ("train/train_loss", "train/train_loss"),
            ("train_loss_epoch", "train_loss_epoch"),
            ("grad_norm", "grad_norm"),
            ("train/grad_norm", "grad_norm"),
            ("gradient_norm", "grad_norm"),
            ("grad-norm", "grad_norm"),
            ("total_norm", "grad_norm"),
            ("learning_rate", "learning_rate"),
            ("lr", "learning_rate"),
            ("train/learning_rate", "learning_rate"),
            ("lr-AdamW", "learning_rate"),
            ("lr-Adam/pg1", "learning_rate/pg1"),
            ("lr-Adam-momentum", "momentum"),
            ("eval_loss", "eval_loss"),
            ("val_loss", "eval_loss"),
            ("eval/loss", "eval_loss"),
            ("validation/loss", "eval_loss"),
            ("val/loss", "eval_loss"),
            ("valid_loss", "eval_loss"),
            ("loss_scale", "loss_scale"),
            ("grad_scale", "loss_scale"),
            ("scaler/scale", "loss_scale"),
            ("train/loss_scale", "loss_scale"),
            ("rewards/margins", "rewards/margins"),
            ("train/rewards/accuracies", "rewards/accuracies"),
            ("eval_rewards/margins", "eval_rewards/margins"),
            ("eval/rewards/margins", "eval_rewards/margins"),
            ("logps/chosen", "logps/chosen"),
            ("train/logps/rejected", "logps/rejected"),
            ("kl", "kl"),
            ("objective/kl", "kl"),
            ("ppo/mean_kl", "kl"),
            ("train/kl", "kl"),
            ("reward", "reward"),
            ("env/reward_mean", "reward"),
            ("objective/scores", "reward"),
            ("ppo/mean_scores", "reward"),
            ("rollout/ep_rew_mean", "reward"),
            ("episode_reward", "reward"),
            ("epoch", "epoch"),
            ("train/epoch", "epoch"),
            ("eval/runtime", "eval/runtime"),
            ("  My/Custom_Metric ", "my/custom_metric"),
        ] {
            assert_eq!(canonical_name(tag), want, "tag {tag:?}");
        }
    }

    #[test]
    fn a_log_appended_after_a_resume_marks_where_it_restarted() {
        // Logged to 450, resumed from the checkpoint at 400: 410, 420 … written again.
        let steps = [10u64, 20, 400, 410, 420, 430, 440, 450, 410, 420, 430, 460];
        let s = Series::from_points(
            "loss",
            Path::new("x"),
            steps.iter().map(|&st| p(st, 1.0)).collect(),
        );
        assert_eq!(s.restart, Some(410));
        assert_eq!(s.last().map(|p| p.step), Some(460));
        // An ordered log marks nothing.
        let s = Series::from_points("loss", Path::new("x"), vec![p(1, 1.0), p(2, 1.0)]);
        assert_eq!(s.restart, None);
    }

    #[test]
    fn series_sorts_and_keeps_the_last_write_of_a_step() {
        let s = Series::from_points(
            "loss",
            Path::new("x"),
            vec![p(1, 1.0), p(3, 3.0), p(2, 2.0), p(3, 30.0), p(2, 20.0)],
        );
        assert_eq!(s.steps(), vec![1, 2, 3]);
        assert_eq!(s.values(), vec![1.0, 20.0, 30.0]);
        assert_eq!(s.value_at_or_before(0), None);
        assert_eq!(s.value_at_or_before(2).map(|p| p.value), Some(20.0));
        assert_eq!(s.value_at_or_before(99).map(|p| p.step), Some(3));
        assert_eq!(s.value_at_or_after(0).map(|p| p.step), Some(1));
        assert_eq!(s.range(2, 3).len(), 2);
        assert_eq!(s.range(5, 1).len(), 0);
    }

    #[test]
    fn min_max_ignore_non_finite_values() {
        let s = Series::from_points(
            "loss",
            Path::new("x"),
            vec![p(1, f64::NAN), p(2, 4.0), p(3, f64::INFINITY), p(4, -1.0)],
        );
        assert_eq!(s.min(), Some(-1.0));
        assert_eq!(s.max(), Some(4.0));
        let e = Series::new("loss", Path::new("x"));
        assert_eq!(
            (e.min(), e.max(), e.first(), e.len()),
            (None, None, None, 0)
        );
    }

    #[test]
    fn metric_set_prefers_rank_zero_then_the_longest() {
        let mk = |rank, n: u64| {
            let mut s = Series::from_points(
                "train/loss",
                Path::new("x"),
                (0..n).map(|i| p(i, 1.0)).collect(),
            );
            s.rank = rank;
            s
        };
        let set = MetricSet::new(vec![mk(Some(1), 50), mk(None, 10), mk(Some(0), 20)]);
        assert_eq!(
            set.get("loss").map(|s| (s.rank, s.len())),
            Some((Some(0), 20))
        );
        assert_eq!(set.all("loss").len(), 3);
        assert_eq!(set.names(), vec!["loss"]);
        assert!(set.get("grad_norm").is_none());
        let lr = MetricSet::new(vec![Series::from_points(
            "lr-Adam/pg0",
            Path::new("x"),
            vec![p(1, 0.1)],
        )]);
        assert_eq!(
            lr.get("learning_rate").map(|s| s.name.as_str()),
            Some("learning_rate/pg0")
        );
    }
}
