//! Following a run while it trains: each [`Follower::poll`] walks the run (stat only), reads
//! what every metric file gained since the last poll ([`tail::Tail`]: a byte offset per file,
//! whole records only, half-written tails left for later, replaced or truncated files read
//! again), notices new files (a new event file after a restart, a new `version_N`, a new
//! `checkpoint-N`) and says which checkpoints are complete (files unchanged for two polls,
//! every shard its index names present). [`Follower::run`] is a [`Run`] to judge: the series
//! read so far and the complete checkpoints only. Polling, so network filesystems work.

pub mod tail;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{ReadError, Result};
use crate::run::{ArtifactKind, CheckpointDir, FileSeries, Run};
use tail::{sig_of, Sig, Tail};

/// A file as last seen.
#[derive(Debug, Clone, Copy)]
struct Seen {
    sig: Sig,
    /// Polls in a row that found it unchanged.
    unchanged: u32,
}

/// What one poll found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Round {
    /// Metric points read this poll (after a reset: the points the file now holds).
    pub new_points: usize,
    /// Metric files read again from their start (replaced, truncated or rewritten).
    pub resets: Vec<PathBuf>,
    /// Files that appeared since the last poll.
    pub new_files: Vec<PathBuf>,
    /// A metric file that is read whole (W&B, MLflow, `.json`) changed.
    pub whole_changed: bool,
    /// The set of complete checkpoints changed (one finished, one went away).
    pub checkpoints_changed: bool,
    /// Something in the run was written, created or removed.
    pub wrote: bool,
}

impl Round {
    /// Whether the metric series may have changed.
    pub fn metrics_changed(&self) -> bool {
        self.new_points > 0 || !self.resets.is_empty() || self.whole_changed
    }
}

/// A run being followed.
#[derive(Debug)]
pub struct Follower {
    root: PathBuf,
    interval: Duration,
    seen: HashMap<PathBuf, Seen>,
    tails: BTreeMap<PathBuf, Tail>,
    /// Metric files read whole by the loader at each judgement.
    whole: BTreeSet<PathBuf>,
    /// The trainer state file the run reads (the root one, else the newest checkpoint's).
    state_path: Option<PathBuf>,
    checkpoints: Vec<CheckpointDir>,
    complete: BTreeSet<PathBuf>,
    /// Files discovery saw empty (classified by name only): discovery looks again once they
    /// have bytes.
    empty_at_discovery: BTreeSet<PathBuf>,
    problems: Vec<String>,
    polls: u64,
    last_write: Instant,
    last_point: Option<Instant>,
    started: Instant,
}

impl Follower {
    /// Follow the run at `root` (a folder or one file), polling every `interval`. A path that
    /// does not exist is an error naming it.
    pub fn new(root: &Path, interval: Duration) -> Result<Follower> {
        std::fs::metadata(root).map_err(|e| ReadError::io(root, e))?;
        let now = Instant::now();
        Ok(Follower {
            root: root.to_path_buf(),
            interval,
            seen: HashMap::new(),
            tails: BTreeMap::new(),
            whole: BTreeSet::new(),
            state_path: None,
            checkpoints: Vec::new(),
            complete: BTreeSet::new(),
            empty_at_discovery: BTreeSet::new(),
            problems: Vec::new(),
            polls: 0,
            last_write: now,
            last_point: None,
            started: now,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Look at the run once: stat every file, read what the metric files gained.
    pub fn poll(&mut self) -> Result<Round> {
        let meta = std::fs::metadata(&self.root).map_err(|e| ReadError::io(&self.root, e))?;
        let mut walk_problems = Vec::new();
        let files: Vec<(PathBuf, std::fs::Metadata)> = if meta.is_dir() {
            crate::run::walk_meta(&self.root, &mut walk_problems)
        } else {
            vec![(self.root.clone(), meta)]
        };
        let mut round = Round::default();
        let mut changed: BTreeSet<PathBuf> = BTreeSet::new();
        let mut present: HashMap<PathBuf, Seen> = HashMap::with_capacity(files.len());
        for (path, meta) in files {
            let sig = sig_of(&meta);
            let seen = match self.seen.get(&path) {
                Some(old) if old.sig == sig => Seen {
                    sig,
                    unchanged: old.unchanged.saturating_add(1),
                },
                Some(_) => {
                    changed.insert(path.clone());
                    Seen { sig, unchanged: 0 }
                }
                None => {
                    changed.insert(path.clone());
                    round.new_files.push(path.clone());
                    Seen { sig, unchanged: 0 }
                }
            };
            present.insert(path, seen);
        }
        let removed = self.seen.keys().any(|p| !present.contains_key(p));
        self.seen = present;
        round.wrote = !changed.is_empty() || removed;
        if round.wrote {
            self.last_write = Instant::now();
        }
        let grew_from_empty = self
            .empty_at_discovery
            .iter()
            .any(|p| self.seen.get(p).is_some_and(|s| s.sig.0 > 0));
        if self.polls == 0 || !round.new_files.is_empty() || removed || grew_from_empty {
            self.rediscover(&mut changed);
        }
        self.problems = walk_problems;
        for (path, t) in &mut self.tails {
            // Changed, or not read to its end yet (more than one chunk was added, or a
            // half-written record waits).
            let behind = self
                .seen
                .get(path)
                .is_some_and(|s| t.offset() < s.sig.0 && t.kind != ArtifactKind::TrainerState);
            if changed.contains(path) || behind || t.kind == ArtifactKind::TrainerState {
                let u = t.poll();
                round.new_points += u.points;
                if u.reset && t.kind != ArtifactKind::TrainerState && self.polls > 0 {
                    round.resets.push(path.clone());
                }
            }
        }
        round.whole_changed = self.whole.iter().any(|p| changed.contains(p));
        if round.new_points > 0 {
            self.last_point = Some(Instant::now());
        }
        let complete: BTreeSet<PathBuf> = self
            .checkpoints
            .iter()
            .filter(|c| self.is_complete(c))
            .map(|c| c.path.clone())
            .collect();
        round.checkpoints_changed = complete != self.complete;
        self.complete = complete;
        self.polls += 1;
        Ok(round)
    }

    /// Classify the run's files again (files came or went) and follow its metric files.
    fn rediscover(&mut self, changed: &mut BTreeSet<PathBuf>) {
        let Ok(run) = Run::discover(&self.root) else {
            return;
        };
        self.state_path = run.trainer_state_path().map(Path::to_path_buf);
        let mut keep: BTreeSet<PathBuf> = BTreeSet::new();
        self.whole.clear();
        self.empty_at_discovery.clear();
        for a in &run.artifacts {
            if a.bytes == 0 {
                self.empty_at_discovery.insert(a.path.clone());
            }
            if !a.kind.is_metrics() {
                continue;
            }
            if a.kind == ArtifactKind::TrainerState
                && self.state_path.as_deref() != Some(a.path.as_path())
            {
                continue;
            }
            match self.tails.get(&a.path) {
                Some(t) if t.kind == a.kind => {
                    keep.insert(a.path.clone());
                }
                _ => match Tail::new(&a.path, a.kind) {
                    Some(t) => {
                        self.tails.insert(a.path.clone(), t);
                        changed.insert(a.path.clone());
                        keep.insert(a.path.clone());
                    }
                    None => {
                        self.whole.insert(a.path.clone());
                    }
                },
            }
        }
        self.tails.retain(|p, _| keep.contains(p));
        self.checkpoints = run.checkpoints;
    }

    /// Whether every file of a checkpoint stopped changing (two polls, or a modification
    /// time two intervals old) and every shard its index names is there.
    fn is_complete(&self, c: &CheckpointDir) -> bool {
        let settled = self
            .interval
            .saturating_mul(2)
            .max(Duration::from_millis(500));
        let now = SystemTime::now();
        let mut any = false;
        for (p, s) in &self.seen {
            if p != &c.path && !(p.starts_with(&c.path) && c.path != self.root) {
                continue;
            }
            any = true;
            let old = s.sig.1.and_then(|m| now.duration_since(m).ok()) >= Some(settled);
            if s.unchanged < 2 && !old {
                return false;
            }
        }
        if !any && !c.path.exists() {
            return false;
        }
        c.weights
            .iter()
            .filter(|w| w.to_string_lossy().ends_with(".index.json"))
            .all(|w| index_complete(w))
    }

    /// A run to judge: the series read so far and the complete checkpoints only (files of a
    /// checkpoint still being written are left out).
    pub fn run(&self) -> Result<Run> {
        let mut run = Run::discover(&self.root)?;
        let incomplete: Vec<PathBuf> = run
            .checkpoints
            .iter()
            .filter(|c| !self.complete.contains(&c.path))
            .map(|c| c.path.clone())
            .collect();
        if !incomplete.is_empty() {
            run.checkpoints.retain(|c| self.complete.contains(&c.path));
            let root = self.root.clone();
            run.artifacts.retain(|a| {
                a.kind.is_metrics()
                    || !incomplete
                        .iter()
                        .any(|c| a.path == *c || (*c != root && a.path.starts_with(c)))
            });
        }
        let state = match (run.trainer_state_path(), &self.state_path) {
            (Some(p), Some(q)) if p == q => {
                self.tails.get(q).and_then(|t| t.trainer_state()).cloned()
            }
            (Some(p), _) => crate::metrics::trainer_state::TrainerState::read(p).ok(),
            (None, _) => None,
        };
        let cached = |p: &Path| -> Option<std::result::Result<FileSeries, String>> {
            self.tails.get(p).and_then(Tail::series)
        };
        run.seed_metrics(state, &cached);
        Ok(run)
    }

    /// How long since anything in the run was written.
    pub fn quiet_for(&self) -> Duration {
        self.last_write.elapsed()
    }

    /// When the last new metric point was read (`None`: none since following started).
    pub fn last_point_at(&self) -> Option<Instant> {
        self.last_point
    }

    /// When following started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The largest step among the series followed.
    pub fn last_step(&self) -> Option<u64> {
        self.tails.values().filter_map(Tail::last_step).max()
    }

    /// Checkpoints judged complete.
    pub fn complete_checkpoints(&self) -> usize {
        self.complete.len()
    }

    /// Whether the run's final weights (no step in their name: what a trainer saves at the
    /// end) are there and complete.
    pub fn final_checkpoint_done(&self) -> bool {
        self.checkpoints
            .iter()
            .any(|c| c.is_final && self.complete.contains(&c.path))
    }

    /// Followed files that cannot be read (`<file>: <why>`), and what the walk could not read.
    pub fn problems(&self) -> Vec<String> {
        let mut out = self.problems.clone();
        out.extend(self.tails.values().filter_map(|t| t.error.clone()));
        out
    }

    /// The files followed incrementally, with their offsets (for tests and diagnostics).
    pub fn offsets(&self) -> Vec<(PathBuf, u64)> {
        self.tails
            .iter()
            .map(|(p, t)| (p.clone(), t.offset()))
            .collect()
    }

    /// Points held per followed file.
    pub fn points(&self) -> usize {
        self.tails.values().map(Tail::points).sum()
    }
}

/// Whether every shard a sharded checkpoint's index names exists beside it.
fn index_complete(index: &Path) -> bool {
    let Ok(bytes) = crate::limits::read_text_file(index) else {
        return false;
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return false;
    };
    let Some(map) = v.get("weight_map").and_then(|m| m.as_object()) else {
        return true;
    };
    let dir = index.parent().unwrap_or(Path::new(""));
    let shards: BTreeSet<&str> = map.values().filter_map(|f| f.as_str()).collect();
    shards.iter().all(|f| dir.join(f).is_file())
}

#[cfg(test)]
mod tests;
