//! Follow mode: the attached run re-read while it trains. The follower thread
//! (`crate::triage::watch::follow_loop`, started by the TUI driver) sends a
//! [`FollowUpdate`] after each round that changed something; while following (`F` toggles)
//! the charts and findings take the new series and verdicts, the status line names the
//! findings that appeared, changed or cleared, and the header shows the last step seen and
//! how long ago ("no new step for 12 min" when the run went quiet; nothing for a run that was
//! finished long before it was opened). Paused, the newest update waits and is applied when
//! following resumes.

use std::time::{Duration, Instant};

use super::App;
use crate::look::strings as S;
use crate::triage::watch::{Change, FollowUpdate};

/// A run quiet for longer than this says so in the header.
pub const QUIET: Duration = Duration::from_secs(60);

/// A run last written longer than this before it was opened, and not written since, is a
/// finished run: the header says nothing of following it (the follower still polls, and the
/// header comes back the moment the run is written again).
pub const FINISHED: Duration = Duration::from_secs(30 * 60);

#[derive(Debug, Clone, Default)]
pub struct FollowState {
    /// A follower reports on the attached run (the interactive UI with a run).
    pub available: bool,
    /// Paused by `F`: updates wait in `pending`.
    pub paused: bool,
    /// The run was written to since following started.
    pub live: bool,
    pub last_step: Option<u64>,
    /// When the last step was first seen (or, at start, when its file was last written).
    pub last_step_at: Option<Instant>,
    /// The newest update received while paused.
    pub pending: Option<Box<FollowUpdate>>,
    /// Findings (`probe/id`) that appeared, changed or cleared since the user last looked
    /// (cleared by the next key on a findings pane, or `F`).
    pub changed: Vec<String>,
    /// The header's follow text, recomputed on ticks.
    pub header: Option<String>,
}

impl App {
    /// A report from the follower thread. Returns whether anything visible changed.
    pub fn on_follow(&mut self, up: FollowUpdate, now: Instant) -> bool {
        let f = &mut self.follow;
        f.available = true;
        f.live |= up.live;
        if f.paused {
            // Paused, the screen holds still — the header's step included — until `F`.
            if up.summary.is_some()
                || up.findings.is_some()
                || !up.events.is_empty()
                || up.last_step.is_some()
            {
                let mut merged = f.pending.take().map(|b| *b).unwrap_or_default();
                merged.summary = up.summary.or(merged.summary);
                merged.findings = up.findings.or(merged.findings);
                merged.events.extend(up.events);
                merged.last_step = up.last_step.or(merged.last_step);
                merged.age_at_start = merged.age_at_start.or(up.age_at_start);
                f.pending = Some(Box::new(merged));
            }
        } else {
            self.note_step(up.last_step, up.age_at_start, now);
            self.apply_follow(up);
        }
        self.follow_tick(now);
        true
    }

    /// The header's newest step and when it arrived.
    fn note_step(
        &mut self,
        last_step: Option<u64>,
        age_at_start: Option<std::time::Duration>,
        now: Instant,
    ) {
        let f = &mut self.follow;
        if last_step.is_some() && last_step != f.last_step {
            // The first report dates the last step by its file; later ones by their arrival.
            f.last_step_at = match (f.last_step, age_at_start) {
                (None, Some(age)) => now.checked_sub(age).or(Some(now)),
                _ => Some(now),
            };
            f.last_step = last_step;
        }
    }

    fn apply_follow(&mut self, up: FollowUpdate) {
        if let Some(s) = up.summary {
            // The loaded facts and problems stay as the attach job read them; the series and
            // steps move on.
            match self.run.summary.as_mut() {
                Some(old) => {
                    if !s.profile.is_empty() {
                        old.profile = s.profile;
                    }
                    old.series = s.series;
                    old.metric_names = s.metric_names;
                    old.epoch_series = s.epoch_series;
                    old.max_step = s.max_step;
                    old.checkpoints = s.checkpoints;
                    old.artifacts = s.artifacts;
                }
                None => self.run.summary = Some(s),
            }
        }
        if let Some(findings) = up.findings {
            // Keep the selection on the same finding where it is still there.
            let key = |f: &crate::findings::Finding| format!("{}/{}", f.probe, f.id);
            let sel = self.run.findings.get(self.run.sel).map(key);
            self.run.findings = findings;
            self.run.sel = sel
                .and_then(|k| self.run.findings.iter().position(|f| key(f) == k))
                .unwrap_or(0)
                .min(self.run.findings.len().saturating_sub(1));
            self.home.finding_sel = self
                .home
                .finding_sel
                .min(self.run.findings.len().saturating_sub(1));
        }
        if !up.events.is_empty() {
            let words: Vec<String> = up
                .events
                .iter()
                .map(|e| {
                    let what = match e.change {
                        Change::New => e.status.as_str().to_string(),
                        Change::Changed => format!("now {}", e.status.as_str()),
                        Change::Cleared => "cleared".to_string(),
                    };
                    format!("{} {what}", e.finding.id)
                })
                .collect();
            for e in &up.events {
                let k = format!("{}/{}", e.finding.probe, e.finding.id);
                if !self.follow.changed.contains(&k) {
                    self.follow.changed.push(k);
                }
            }
            let step = up
                .events
                .first()
                .and_then(|e| e.step)
                .map(|s| format!(" at step {s}"))
                .unwrap_or_default();
            let alarm = up
                .events
                .iter()
                .any(|e| e.change != Change::Cleared && e.status.as_str() == "fail");
            self.set_status(
                format!("{}{step}: {}", S::FOLLOW_CHANGED, words.join(", ")),
                alarm,
            );
        }
    }

    /// `F`: pause or resume following; resuming applies what arrived meanwhile.
    pub(super) fn toggle_follow(&mut self) {
        if !self.follow.available {
            self.set_status(S::FOLLOW_UNAVAILABLE, false);
            return;
        }
        self.follow.paused = !self.follow.paused;
        self.follow.changed.clear();
        if !self.follow.paused {
            if let Some(up) = self.follow.pending.take() {
                self.note_step(up.last_step, up.age_at_start, Instant::now());
                self.apply_follow(*up);
            }
        }
        let msg = if self.follow.paused {
            S::FOLLOW_PAUSED
        } else {
            S::FOLLOW_RESUMED
        };
        self.set_status(msg, false);
        self.follow_tick(Instant::now());
    }

    /// Recompute the header's follow text at `now`; returns whether it changed.
    pub fn follow_tick(&mut self, now: Instant) -> bool {
        let text = self.follow_text(now);
        let changed = text != self.follow.header;
        self.follow.header = text;
        changed
    }

    fn follow_text(&self, now: Instant) -> Option<String> {
        let f = &self.follow;
        if !f.available {
            return None;
        }
        let mode = if f.paused {
            S::FOLLOW_PAUSED_MARK
        } else if f.live {
            S::FOLLOW_MARK
        } else {
            S::FOLLOW_WAITING_MARK
        };
        let Some(step) = f.last_step else {
            return Some(mode.to_string());
        };
        let ago = f
            .last_step_at
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default();
        if !f.live && !f.paused && ago >= FINISHED {
            return None;
        }
        let when = if ago >= QUIET {
            format!("{} {}", S::FOLLOW_QUIET, duration_words(ago))
        } else {
            format!("{} s ago", ago.as_secs())
        };
        Some(format!("{mode} · step {step} · {when}"))
    }
}

/// `45 s`, `12 min`, `3 h 5 min`, `2 d`.
pub fn duration_words(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s / 60)
    } else if s < 86_400 {
        let m = (s % 3600) / 60;
        if m == 0 {
            format!("{} h", s / 3600)
        } else {
            format!("{} h {m} min", s / 3600)
        }
    } else {
        format!("{} d", s / 86_400)
    }
}
