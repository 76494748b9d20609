//! How far the tensor pass has got, in process-wide counters that any thread may read — the
//! CLI's progress line and the TUI's status line draw from them; the pass only adds to them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Files and bytes planned and done since the counters were last reset (totals grow as passes
/// are planned; a reader shows `done / total`), and the bytes of the passes running now.
#[derive(Debug, Default)]
pub struct Progress {
    files_total: AtomicU64,
    files_done: AtomicU64,
    bytes_total: AtomicU64,
    bytes_done: AtomicU64,
    live_total: AtomicU64,
    live_done: AtomicU64,
    /// Passes now running.
    running: AtomicU64,
}

/// A consistent-enough reading of [`Progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Snapshot {
    pub files_total: u64,
    pub files_done: u64,
    pub bytes_total: u64,
    pub bytes_done: u64,
    /// Bytes planned and read by the passes running now (0 and 0 when none runs).
    pub live_total: u64,
    pub live_done: u64,
    pub running: bool,
}

impl Progress {
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            files_total: self.files_total.load(Relaxed),
            files_done: self.files_done.load(Relaxed),
            bytes_total: self.bytes_total.load(Relaxed),
            bytes_done: self.bytes_done.load(Relaxed),
            live_total: self.live_total.load(Relaxed),
            live_done: self.live_done.load(Relaxed),
            running: self.running.load(Relaxed) > 0,
        }
    }

    /// Zeroes the totals (a new command); passes running go on counting.
    pub fn reset(&self) {
        for c in [
            &self.files_total,
            &self.files_done,
            &self.bytes_total,
            &self.bytes_done,
        ] {
            c.store(0, Relaxed);
        }
    }

    /// A pass starts that will read `bytes` from `files` files.
    pub(crate) fn begin(&self, files: u64, bytes: u64) {
        self.files_total.fetch_add(files, Relaxed);
        self.bytes_total.fetch_add(bytes, Relaxed);
        self.live_total.fetch_add(bytes, Relaxed);
        self.running.fetch_add(1, Relaxed);
    }

    pub(crate) fn bytes(&self, n: u64) {
        self.bytes_done.fetch_add(n, Relaxed);
        self.live_done.fetch_add(n, Relaxed);
    }

    pub(crate) fn file_done(&self) {
        self.files_done.fetch_add(1, Relaxed);
    }

    /// The pass that began with `bytes` is over (and has counted all of them done).
    pub(crate) fn end(&self, bytes: u64) {
        self.live_total.fetch_sub(bytes, Relaxed);
        self.live_done.fetch_sub(bytes, Relaxed);
        self.running.fetch_sub(1, Relaxed);
    }
}

/// The process's pass progress.
pub fn progress() -> &'static Progress {
    static P: Progress = Progress {
        files_total: AtomicU64::new(0),
        files_done: AtomicU64::new(0),
        bytes_total: AtomicU64::new(0),
        bytes_done: AtomicU64::new(0),
        live_total: AtomicU64::new(0),
        live_done: AtomicU64::new(0),
        running: AtomicU64::new(0),
    };
    &P
}
