//! The progress line of long tensor passes (`check`, `inspect`): files and bytes read of the
//! total, rate and time left, drawn on stderr by `indicatif` from the pass's counters while a
//! command runs and cleared when it ends. Drawn only when stderr is a terminal, never with
//! `--json` or `--quiet` (or `MLTRIAGE_QUIET` set), and only once the work has taken a moment.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mltriage_probes::tensors::pass::progress;

/// Work shorter than this shows no line at all.
const SHOW_AFTER: Duration = Duration::from_millis(300);
const TICK: Duration = Duration::from_millis(100);

/// Whether a command may draw a progress line.
pub fn wanted(json: bool, quiet: bool) -> bool {
    !json
        && !quiet
        && std::env::var_os("MLTRIAGE_QUIET").is_none_or(|v| v.is_empty())
        && std::io::stderr().is_terminal()
}

/// A running progress line; dropping it clears the line.
pub struct ProgressLine {
    stop: Arc<AtomicBool>,
    ticker: Option<JoinHandle<()>>,
}

impl ProgressLine {
    /// Starts following the pass counters (reset now) when `enabled`; otherwise does nothing.
    pub fn start(enabled: bool) -> ProgressLine {
        let stop = Arc::new(AtomicBool::new(false));
        if !enabled {
            return ProgressLine { stop, ticker: None };
        }
        progress().reset();
        let flag = stop.clone();
        let ticker = std::thread::spawn(move || follow(&flag));
        ProgressLine {
            stop,
            ticker: Some(ticker),
        }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

fn follow(stop: &AtomicBool) {
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(TICK);
        let s = progress().snapshot();
        if s.bytes_total == 0 || started.elapsed() < SHOW_AFTER {
            continue;
        }
        let b = bar.get_or_insert_with(|| {
            // Built hidden at the bytes already read, so the rate counts from now on.
            let b =
                ProgressBar::with_draw_target(Some(s.bytes_total), ProgressDrawTarget::hidden());
            b.set_style(
                ProgressStyle::with_template(
                    "reading tensors {msg} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.set_position(s.bytes_done.min(s.bytes_total));
            b.reset_eta();
            b.set_draw_target(ProgressDrawTarget::stderr());
            b
        });
        b.set_length(s.bytes_total);
        b.set_position(s.bytes_done.min(s.bytes_total));
        b.set_message(format!("files {}/{}", s.files_done, s.files_total));
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}
