//! The logging part of the profile: which steps the training loss covers, how often it is
//! logged, and whether a logged point is one step's loss or a mean over the logging window.

use crate::metrics::Series;
use crate::run::{ArtifactKind, Run};

/// How the run was logged (from its training-loss series, else the first training series).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Logging {
    /// The series these numbers describe (`loss`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_step: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_step: Option<u64>,
    pub points: usize,
    /// The median distance between logged points, in steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<u64>,
    /// `step` (the default) or `epoch` when the log's only index is the epoch.
    pub unit: String,
    /// A logged point is the mean of the losses over this many steps (HF Trainer and TRL log
    /// the mean since the last log; Lightning's `*_epoch` series the epoch's mean).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_over: Option<u64>,
    /// Log segments of the run (a resumed run writes a second one).
    pub segments: usize,
}

const TRAIN_SERIES: &[&str] = &["loss", "grad_norm", "learning_rate", "reward"];

pub(super) fn logging(run: &Run) -> Logging {
    let m = run.metrics();
    let Some((name, s)) = TRAIN_SERIES
        .iter()
        .find_map(|n| m.get(n).map(|s| (*n, s)))
        .filter(|(_, s)| !s.is_empty())
    else {
        return Logging {
            unit: "step".into(),
            ..Default::default()
        };
    };
    let interval = s.interval();
    let unit = s.unit.as_str();
    Logging {
        series: Some(name.to_string()),
        first_step: s.first().map(|p| p.step),
        last_step: s.last().map(|p| p.step),
        points: s.len(),
        interval,
        unit: unit.into(),
        mean_over: mean_over(run, s, interval),
        segments: 1 + m.restarts.iter().filter(|r| r.name == name).count(),
    }
}

impl Logging {
    /// The first logged step is within the first logging intervals (or nothing is logged).
    pub fn starts_early(&self) -> bool {
        match self.first_step {
            Some(f) => f <= 20 || f <= 2 * self.interval.unwrap_or(1).max(1) + 1,
            None => true,
        }
    }

    /// The median gap between a series' consecutive logged steps.
    pub fn interval_of(s: &Series) -> Option<u64> {
        s.interval()
    }
}

/// Steps a logged point averages: HF Trainer / TRL (a trainer state, or the `train/` tags HF
/// writes to TensorBoard) log the mean since the last log; Lightning's `_epoch` series average
/// an epoch. Unknown (a loop of the user's own) is `None`.
fn mean_over(run: &Run, s: &Series, interval: Option<u64>) -> Option<u64> {
    let hf = run.artifacts.iter().any(|a| {
        matches!(
            a.kind,
            ArtifactKind::TrainerState | ArtifactKind::TrainingArgs
        )
    });
    let from_hf_log = s
        .source
        .file_name()
        .is_some_and(|n| n == "trainer_state.json")
        || (hf && s.tag.starts_with("train/"));
    if from_hf_log {
        // The first log covers steps 1..first_step; later ones the interval.
        let first = s.first().map(|p| p.step).unwrap_or(1);
        return Some(first.max(interval.unwrap_or(1))).filter(|k| *k > 1);
    }
    if s.tag.to_ascii_lowercase().ends_with("_epoch") {
        return interval.filter(|k| *k > 1);
    }
    None
}
