//! The one event enum the TUI loop consumes: terminal input from the crossterm polling
//! thread, ticks, and progress/results from the background probe worker, all over one
//! `std::sync::mpsc` channel.

use crossterm::event::KeyEvent;

use crate::triage::jobs::{JobId, JobOutput};

/// Everything the main loop reacts to.
#[derive(Debug)]
pub enum Event {
    Key(KeyEvent),
    Resize(u16, u16),
    /// Text pasted into the terminal (bracketed paste): one event, not one key per character.
    Paste(String),
    /// Periodic wake-up (animates a running probe's gauge).
    Tick,
    /// A background job reports progress in percent.
    ProbeProgress(JobId, u8),
    /// A background job finished (or was cancelled).
    ProbeDone(JobId, JobOutput),
    /// The follower thread re-read the attached run (follow mode).
    Follow(Box<crate::triage::watch::FollowUpdate>),
}
