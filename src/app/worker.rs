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
