//! Judging a run while it trains: each [`Judge::round`] re-runs the metric probes (fast) on the
//! series read so far, and the probes that read checkpoints, optimizer state, batches or the
//! device only when asked (a new complete checkpoint, new files); the findings are compared with
//! the previous round's, and a finding that appears, changes status or clears is an [`Event`]
//! with the step the run had reached.

use std::collections::BTreeMap;

use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::Status;
use mltriage_probes::profile::Profile;
use mltriage_probes::run::Run;

use crate::catalog::Catalog;
use crate::findings::{order, Finding};
use crate::triage::check::{effective_facts, run_one, spec};

/// What happened to a finding between two rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// A fail or warn that was not there (or passed, or was skipped).
    New,
    /// A fail that is now a warn, or a warn now a fail.
    Changed,
    /// A fail or warn that now passes, skips or is gone.
    Cleared,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::New => "new",
            Change::Changed => "changed",
            Change::Cleared => "cleared",
        }
    }
}

/// One finding that appeared, changed status or cleared.
#[derive(Debug, Clone)]
pub struct Event {
    pub change: Change,
    /// The finding now (for a cleared one: as it was last seen failing or warning, with
    /// `status` its status now: pass, skip, or skip when it is gone).
    pub finding: Finding,
    pub status: Status,
    /// Its status in the previous round, when it was a fail or warn.
    pub previous: Option<Status>,
    /// The step the run had reached when it happened.
    pub step: Option<u64>,
}

/// Whether a probe reads only metric series and facts (re-run at every round).
pub fn is_metric_probe(id: &str) -> bool {
    spec(id).is_some_and(|s| {
        s.inputs.iter().all(|i| {
            let kind = i.split(':').next().unwrap_or(i);
            matches!(
                kind,
                "metrics" | "fact" | "trainer_state" | "log" | "baseline"
            )
        })
    })
}

fn alarming(s: Status) -> bool {
    matches!(s, Status::Fail | Status::Warn)
}

/// The judge of a followed run: the previous round's findings, by probe and entry.
pub struct Judge<'c> {
    cat: &'c Catalog,
    user_facts: Facts,
    compute: Compute,
    /// Findings of the probes that read more than metrics, from the last round that ran them.
    heavy: Vec<Finding>,
    prev: BTreeMap<(String, String, usize), Finding>,
    rounds: u64,
    /// How long the last round took, and when it ended (see [`Judge::due`]).
    last_cost: std::time::Duration,
    last_end: Option<std::time::Instant>,
    /// The findings of the last round, ordered as `check` orders them.
    pub findings: Vec<Finding>,
}

/// Judging takes at most about 1/`DUTY` of a core: after a round that took `t`, the next one
/// waits at least `DUTY × t` (a long run's series take longer to judge; a short run's next
/// round is due at the next poll).
pub const DUTY: u32 = 50;

impl<'c> Judge<'c> {
    pub fn new(cat: &'c Catalog, user_facts: Facts, compute: Compute) -> Self {
        Judge {
            cat,
            user_facts,
            compute,
            heavy: Vec::new(),
            prev: BTreeMap::new(),
            rounds: 0,
            last_cost: std::time::Duration::ZERO,
            last_end: None,
            findings: Vec::new(),
        }
    }

    /// Whether a round may run now without judging taking more than 1/[`DUTY`] of a core.
    pub fn due(&self) -> bool {
        self.last_end
            .is_none_or(|t| t.elapsed() >= self.last_cost.saturating_mul(DUTY))
    }

    /// Rounds judged so far.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Judge the run again: every metric probe, and the other probes when `heavy` (always on
    /// the first round). Returns the findings that appeared, changed status or cleared.
    pub fn round(&mut self, run: &Run, heavy: bool, step: Option<u64>) -> Vec<Event> {
        let started = std::time::Instant::now();
        let events = self.judge(run, heavy, step);
        self.last_cost = started.elapsed();
        self.last_end = Some(std::time::Instant::now());
        events
    }

    fn judge(&mut self, run: &Run, heavy: bool, step: Option<u64>) -> Vec<Event> {
        let facts = effective_facts(run, &self.user_facts);
        let profile = Profile::of(run, &facts);
        let heavy = heavy || self.rounds == 0;
        if heavy {
            mltriage_probes::probes::checkpoint::model::prefetch(run, &self.compute);
        }
        let mut light = Vec::new();
        let mut fresh_heavy = Vec::new();
        for def in &self.cat.probes {
            let metric = is_metric_probe(&def.id);
            if !metric && !heavy {
                continue;
            }
            if let Some(f) = run_one(
                self.cat,
                &def.id,
                run,
                &facts,
                &profile,
                &self.compute,
                None,
            ) {
                if metric {
                    light.extend(f);
                } else {
                    fresh_heavy.extend(f);
                }
            }
        }
        if heavy {
            self.heavy = fresh_heavy;
        }
        let mut findings = light;
        findings.extend(self.heavy.iter().cloned());
        order(self.cat, &mut findings);
        self.rounds += 1;
        let events = self.diff(&findings, step);
        self.findings = findings;
        events
    }

    fn diff(&mut self, findings: &[Finding], step: Option<u64>) -> Vec<Event> {
        let mut now: BTreeMap<(String, String, usize), Finding> = BTreeMap::new();
        for f in findings {
            let mut n = 0;
            while now.contains_key(&(f.probe.clone(), f.id.clone(), n)) {
                n += 1;
            }
            now.insert((f.probe.clone(), f.id.clone(), n), f.clone());
        }
        let mut events = Vec::new();
        for (key, f) in &now {
            let before = self
                .prev
                .get(key)
                .map(|p| p.status)
                .filter(|s| alarming(*s));
            let change = match (before, alarming(f.status)) {
                (None, true) => Some(Change::New),
                (Some(b), true) if b != f.status => Some(Change::Changed),
                (Some(_), false) => Some(Change::Cleared),
                _ => None,
            };
            if let Some(change) = change {
                let finding = if change == Change::Cleared {
                    self.prev.get(key).cloned().unwrap_or_else(|| f.clone())
                } else {
                    f.clone()
                };
                events.push(Event {
                    change,
                    finding,
                    status: f.status,
                    previous: before,
                    step,
                });
            }
        }
        for (key, f) in &self.prev {
            if alarming(f.status) && !now.contains_key(key) {
                events.push(Event {
                    change: Change::Cleared,
                    finding: f.clone(),
                    status: Status::Skip,
                    previous: Some(f.status),
                    step,
                });
            }
        }
        // Most important first: fails, then warns, then what cleared.
        let rank = |e: &Event| match (e.change, e.status) {
            (Change::Cleared, _) => 2,
            (_, Status::Fail) => 0,
            _ => 1,
        };
        events.sort_by_key(rank);
        self.prev = now;
        events
    }
}

/// What the TUI's follower thread reports after a round.
#[derive(Debug, Clone, Default)]
pub struct FollowUpdate {
    /// The run's series and summary again, when its metrics changed.
    pub summary: Option<crate::triage::jobs::RunSummary>,
    /// Every finding, when the run was judged again.
    pub findings: Option<Vec<Finding>>,
    /// Findings that appeared, changed status or cleared this round.
    pub events: Vec<Event>,
    /// The largest step the followed series hold.
    pub last_step: Option<u64>,
    /// How long before following started the newest metric point was written (from the
    /// files' modification times; first report only).
    pub age_at_start: Option<std::time::Duration>,
    /// The run was written to since following started.
    pub live: bool,
}

/// The TUI's follower: poll the run every `interval` until `stop`, judge it again when it
/// changed, and hand each round that changed something to `send` (which returns false when
/// nobody listens any more). The first report carries no series: the attach job has them.
#[allow(clippy::too_many_arguments)]
pub fn follow_loop(
    cat: std::sync::Arc<Catalog>,
    path: std::path::PathBuf,
    facts: Facts,
    compute: Compute,
    interval: std::time::Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    mut send: impl FnMut(FollowUpdate) -> bool,
) {
    use std::sync::atomic::Ordering;
    let Ok(mut follower) = mltriage_probes::follow::Follower::new(&path, interval) else {
        return;
    };
    let device = compute.label.clone();
    let mut judge = Judge::new(&cat, facts.clone(), compute);
    let mut live = false;
    let mut first = true;
    // Changes not judged yet (judging waits while it is not due).
    let (mut pending, mut pending_heavy) = (false, false);
    while !stop.load(Ordering::Relaxed) {
        let Ok(round) = follower.poll() else { return };
        let mut up = FollowUpdate {
            last_step: follower.last_step(),
            ..FollowUpdate::default()
        };
        if first {
            up.age_at_start = newest_metric_age(&path);
            first = false;
            if !send(up) {
                return;
            }
        } else {
            live |= round.wrote;
            up.live = live;
            pending_heavy |= round.checkpoints_changed || !round.new_files.is_empty();
            pending |= round.metrics_changed() || pending_heavy;
            if pending && judge.due() {
                let heavy = std::mem::take(&mut pending_heavy);
                pending = false;
                let Ok(run) = follower.run() else { return };
                up.events = judge.round(&run, heavy, up.last_step);
                up.findings = Some(judge.findings.clone());
                up.summary = Some(crate::triage::jobs::summarize(&run, &facts, &device));
            }
            if (round.wrote || !up.events.is_empty()) && !send(up) {
                return;
            }
        }
        // Sleep in short slices so quitting the TUI is not held up by a long interval.
        let until = std::time::Instant::now() + interval;
        while !stop.load(Ordering::Relaxed) {
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(100)));
        }
    }
}

/// How long ago the newest metric file of a run was modified.
fn newest_metric_age(path: &std::path::Path) -> Option<std::time::Duration> {
    let run = Run::discover(path).ok()?;
    let newest = run
        .artifacts
        .iter()
        .filter(|a| a.kind.is_metrics())
        .filter_map(|a| std::fs::metadata(&a.path).ok()?.modified().ok())
        .max()?;
    std::time::SystemTime::now().duration_since(newest).ok()
}
