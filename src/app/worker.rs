//! The job queue (gitui's asyncjob shape): one job runs on a worker thread while at most one
//! waits — a newer request replaces the waiting one — progress is reported through the job
//! as [`Event`]s, and Esc cancels the running job between probes. What a job does is
//! `crate::triage::jobs`; the TUI gives tensor views their own worker so a histogram never
//! waits behind a long `check`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::event::Event;
use crate::triage::jobs::{JobOutput, JobRequest, ProbeRunner};

#[derive(Default)]
struct Slots {
    waiting: Option<JobRequest>,
    shutdown: bool,
}

struct Shared {
    slots: Mutex<Slots>,
    wake: Condvar,
    /// Cancel flag of the running job.
    cancel: Mutex<Arc<AtomicBool>>,
}

/// The worker thread: one job runs, one waits (newest request wins the waiting slot).
pub struct Worker {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    pub fn spawn(mut runner: Box<dyn ProbeRunner>, events: Sender<Event>) -> Worker {
        let shared = Arc::new(Shared {
            slots: Mutex::new(Slots::default()),
            wake: Condvar::new(),
            cancel: Mutex::new(Arc::new(AtomicBool::new(false))),
        });
        let sh = shared.clone();
        let handle = std::thread::Builder::new()
            .name("mltriage-probes".into())
            .spawn(move || loop {
                let job = {
                    let mut s = sh.slots.lock().unwrap_or_else(|p| p.into_inner());
                    loop {
                        if s.shutdown {
                            return;
                        }
                        if let Some(j) = s.waiting.take() {
                            break j;
                        }
                        s = sh.wake.wait(s).unwrap_or_else(|p| p.into_inner());
                    }
                };
                let flag = Arc::new(AtomicBool::new(false));
                *sh.cancel.lock().unwrap_or_else(|p| p.into_inner()) = flag.clone();
                let id = job.id;
                let tx = events.clone();
                let mut last = 255u8;
                let mut progress = |p: u8| {
                    if p != last {
                        last = p;
                        let _ = tx.send(Event::ProbeProgress(id, p));
                    }
                };
                let out = runner.run(&job, &mut progress, &flag);
                let out = if flag.load(Ordering::Relaxed) {
                    JobOutput::Cancelled
                } else {
                    out
                };
                if events.send(Event::ProbeDone(id, out)).is_err() {
                    return;
                }
            })
            .ok();
        Worker { shared, handle }
    }

    /// Queue a job; it replaces a job still waiting (newest request wins).
    pub fn submit(&self, job: JobRequest) {
        let mut s = self.shared.slots.lock().unwrap_or_else(|p| p.into_inner());
        s.waiting = Some(job);
        self.shared.wake.notify_one();
    }

    /// Cancel the running job and drop the waiting one.
    pub fn cancel(&self) {
        self.shared
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .waiting = None;
        self.shared
            .cancel
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .store(true, Ordering::Relaxed);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.cancel();
        self.shared
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .shutdown = true;
        self.shared.wake.notify_all();
        // A probe in flight finishes on its own; don't block the exit on it.
        drop(self.handle.take());
    }
}

/// Run one job on the calling thread (tests, headless mode), returning its events in order.
pub fn run_sync(runner: &mut dyn ProbeRunner, job: &JobRequest) -> Vec<Event> {
    let (tx, rx): (Sender<Event>, Receiver<Event>) = mpsc::channel();
    let flag = AtomicBool::new(false);
    let mut progress = |p: u8| {
        let _ = tx.send(Event::ProbeProgress(job.id, p));
    };
    let out = runner.run(job, &mut progress, &flag);
    let _ = tx.send(Event::ProbeDone(job.id, out));
    drop(tx);
    rx.into_iter().collect()
}

/// The header's "reading tensors N% of X GB" while this app's jobs run: bytes read of the
/// whole plan since the jobs began (the same counters the CLI's progress line draws, taken
/// relative to where they stood when the app was last idle), never going backwards — the
/// percentage and the total only grow until the jobs are done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassMeter {
    /// Counters (bytes planned, bytes read) when no job was running.
    base: (u64, u64),
    pct: u8,
    total: u64,
}

impl PassMeter {
    /// Take a reading of the pass counters; `busy` says whether a job of this app is running
    /// or waiting. Returns whether what is shown changed.
    pub fn observe(&mut self, s: mltriage_probes::tensors::pass::Snapshot, busy: bool) -> bool {
        let before = *self;
        if !busy {
            *self = PassMeter {
                base: (s.bytes_total, s.bytes_done),
                pct: 0,
                total: 0,
            };
            return self.shown() != before.shown();
        }
        let total = s.bytes_total.saturating_sub(self.base.0);
        let done = s.bytes_done.saturating_sub(self.base.1).min(total);
        if total > 0 {
            self.total = self.total.max(total);
            // 100% only once nothing is being read.
            let cap = if s.running { 99 } else { 100 };
            let pct = ((done as u128 * 100) / total as u128).min(cap) as u8;
            self.pct = self.pct.max(pct);
        }
        self.shown() != before.shown()
    }

    /// (percent, bytes of the plan) while tensors are being read for this app's jobs.
    pub fn shown(&self) -> Option<(u8, u64)> {
        (self.total > 0).then_some((self.pct, self.total))
    }
}

#[cfg(test)]
mod tests {
    use super::PassMeter;
    use mltriage_probes::tensors::pass::Snapshot;

    fn snap(total: u64, done: u64, running: bool) -> Snapshot {
        Snapshot {
            bytes_total: total,
            bytes_done: done,
            running,
            ..Default::default()
        }
    }

    const GB: u64 = 1_000_000_000;

    /// A 2 GB run: the whole plan is counted, a later small pass neither shrinks the total
    /// nor takes the percentage back (the TUI once read "51% of 0.0 GB" → "29% of 0.1 GB").
    #[test]
    fn whole_plan_total_and_never_backwards() {
        let mut m = PassMeter::default();
        // Counters left over from an earlier command: the idle reading is the base.
        m.observe(snap(5 * GB, 5 * GB, false), false);
        assert_eq!(m.shown(), None);
        m.observe(snap(7 * GB, 5 * GB + GB, true), true);
        assert_eq!(m.shown(), Some((50, 2 * GB)));
        m.observe(snap(7 * GB, 5 * GB + 2 * GB, false), true);
        assert_eq!(m.shown(), Some((100, 2 * GB)));
        // A probe plans a small pass of 0.1 GB after the big one: still 100% of 2.1 GB.
        m.observe(snap(7 * GB + GB / 10, 7 * GB, true), true);
        let (pct, total) = m.shown().unwrap();
        assert_eq!(total, 2 * GB + GB / 10);
        assert_eq!(pct, 100, "the percentage never goes back");
        // Done: nothing shown, and the next job counts from here.
        m.observe(snap(7 * GB + GB / 10, 7 * GB + GB / 10, false), false);
        assert_eq!(m.shown(), None);
        m.observe(
            snap(8 * GB + GB / 10, 7 * GB + GB / 10 + GB / 4, true),
            true,
        );
        assert_eq!(m.shown(), Some((25, GB)));
    }

    #[test]
    fn percentages_only_grow_while_busy() {
        let mut m = PassMeter::default();
        m.observe(snap(0, 0, false), false);
        let mut last = 0;
        for (t, d) in [(100, 10), (100, 60), (400, 70), (400, 390), (500, 400)] {
            m.observe(snap(t, d, true), true);
            let (p, total) = m.shown().unwrap();
            assert!(p >= last, "{p} < {last}");
            assert!(p <= 99, "not 100% while a pass runs");
            assert_eq!(total, t);
            last = p;
        }
    }
}
