//! The terminal side of the TUI: set up and restore the terminal (also on panic), one
//! thread polling crossterm into the [`Event`] channel, the probe worker, and the loop that
//! redraws only when something changed. While the UI is up, file descriptor 2 goes to a log
//! file so that no library (candle's pickle reader prints "skipping" lines) writes over it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event as ct;
use mltriage_probes::device::DeviceRequest;
use mltriage_probes::facts::Facts;

use crate::app::action::load_keymap;
use crate::app::worker::Worker;
use crate::app::{App, AppOptions, Effect, Event};
use crate::catalog::Catalog;
use crate::look::theme::Theme;
use crate::search::SearchIndex;
use crate::triage::jobs::LiveRunner;

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    pub run: Option<PathBuf>,
    pub facts: Facts,
    /// `--device`: where the probes compute.
    pub device: DeviceRequest,
    pub color: bool,
    pub ascii: bool,
    /// When the process started, for the time-to-first-frame measurement.
    pub started: Instant,
}

const TICK: Duration = Duration::from_millis(100);

/// Build the app (index once, key map, options) without touching the terminal.
pub fn build_app(cat: Arc<Catalog>, opts: &TuiOptions) -> anyhow::Result<App> {
    let index = Arc::new(SearchIndex::build(&cat)?);
    let (keymap, problems) = load_keymap();
    let mut app = App::new(
        cat,
        index,
        keymap,
        AppOptions {
            run: opts.run.clone(),
            facts: opts.facts.clone(),
            theme: Theme {
                color: opts.color,
                ascii: opts.ascii,
            },
            export_dir: None,
        },
    );
    if let Some(p) = problems.first() {
        let more = if problems.len() > 1 {
            format!(" (+{} more)", problems.len() - 1)
        } else {
            String::new()
        };
        app.set_status(format!("{p}{more}"), true);
    }
    Ok(app)
}

/// Run the interactive UI until the user quits. Returns the exit code.
pub fn run(cat: Catalog, opts: TuiOptions) -> anyhow::Result<i32> {
    let cat = Arc::new(cat);
    let mut app = build_app(cat.clone(), &opts)?;
    let (tx, rx) = mpsc::channel::<Event>();
    let runner = LiveRunner::new(cat.clone(), opts.run.clone()).with_device(opts.device);
    let worker = Worker::spawn(Box::new(runner), tx.clone());
    // Tensor views (the weight histogram) get their own worker: never behind a `check`.
    let views = Worker::spawn(Box::new(LiveRunner::new(cat, opts.run.clone())), tx.clone());

    let guard = StderrGuard::redirect();
    install_panic_hook();
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            drop(guard);
            return Err(anyhow::anyhow!("cannot set up the terminal: {e}"));
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let input = spawn_input(tx, stop.clone());

    let mut first_frame: Option<Duration> = None;
    let mut dirty = true;
    let result: anyhow::Result<()> = (|| {
        loop {
            if dirty {
                terminal.draw(|f| f.render_widget(&app, f.area()))?;
                first_frame.get_or_insert_with(|| opts.started.elapsed());
                dirty = false;
            }
            let ev = match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(ev) => ev,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            dirty |= app.on_event(ev);
            // Drain what else is queued before drawing once.
            while let Ok(ev) = rx.try_recv() {
                dirty |= app.on_event(ev);
            }
            for e in app.take_effects() {
                dirty = true;
                match e {
                    Effect::Submit(job) if job.kind.is_view() => views.submit(job),
                    Effect::Submit(job) => worker.submit(job),
                    Effect::Cancel => worker.cancel(),
                    Effect::Write(t) => app.on_written(t.write()),
                }
            }
            if app.should_quit {
                break;
            }
        }
        Ok(())
    })();
    stop.store(true, Ordering::Relaxed);
    ratatui::restore();
    drop(guard);
    drop(worker);
    drop(views);
    let _ = input.join();
    if let (Some(t), Some(path)) = (first_frame, std::env::var_os("MLTRIAGE_FIRST_FRAME_FILE")) {
        let _ = std::fs::write(path, format!("{}\n", t.as_micros()));
    }
    result.map(|_| 0)
}

/// The one thread that polls crossterm: keys and resizes become [`Event`]s; a tick every
/// 100 ms animates running jobs (the loop redraws on a tick only while one runs).
fn spawn_input(tx: Sender<Event>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut last_tick = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let timeout = TICK.saturating_sub(last_tick.elapsed());
            if ct::poll(timeout).unwrap_or(false) {
                let ev = match ct::read() {
                    Ok(ct::Event::Key(k)) => Some(Event::Key(k)),
                    Ok(ct::Event::Resize(w, h)) => Some(Event::Resize(w, h)),
                    _ => None,
                };
                if let Some(ev) = ev {
                    if tx.send(ev).is_err() {
                        return;
                    }
                }
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                if tx.send(Event::Tick).is_err() {
                    return;
                }
            }
        }
    })
}

/// Put stderr back before the panic message is printed (ratatui's hook, installed by
/// `try_init`, restores the terminal; ours runs first and restores fd 2).
fn install_panic_hook() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        StderrGuard::restore_now();
        prev(info);
    }));
}

#[cfg(unix)]
mod fd {
    extern "C" {
        pub fn dup(fd: i32) -> i32;
        pub fn dup2(src: i32, dst: i32) -> i32;
        pub fn close(fd: i32) -> i32;
    }
}

static SAVED_STDERR: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// fd 2 redirected to a log file for the life of the guard.
struct StderrGuard {
    log: Option<PathBuf>,
}

impl StderrGuard {
    fn redirect() -> StderrGuard {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let path =
                std::env::temp_dir().join(format!("mltriage-tui-{}.log", std::process::id()));
            if let Ok(file) = std::fs::File::create(&path) {
                // SAFETY: plain POSIX calls on descriptors we own (2 and the new file's);
                // `dup` keeps the terminal's stderr to put back in `restore_now`.
                let saved = unsafe { fd::dup(2) };
                if saved >= 0 && unsafe { fd::dup2(file.as_raw_fd(), 2) } >= 0 {
                    SAVED_STDERR.store(saved, Ordering::SeqCst);
                    return StderrGuard { log: Some(path) };
                }
            }
            let _ = std::fs::remove_file(&path);
        }
        StderrGuard { log: None }
    }

    fn restore_now() {
        let saved = SAVED_STDERR.swap(-1, Ordering::SeqCst);
        #[cfg(unix)]
        if saved >= 0 {
            // SAFETY: `saved` came from `dup(2)` above and is closed exactly once (swap).
            unsafe {
                fd::dup2(saved, 2);
                fd::close(saved);
            }
        }
        let _ = saved;
    }
}

impl Drop for StderrGuard {
    fn drop(&mut self) {
        Self::restore_now();
        if let Some(p) = self.log.take() {
            match std::fs::metadata(&p) {
                Ok(m) if m.len() > 0 => {
                    eprintln!(
                        "mltriage: messages printed during the session are in {}",
                        p.display()
                    )
                }
                _ => {
                    let _ = std::fs::remove_file(&p);
                }
            }
        }
    }
}
