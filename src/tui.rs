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
    // Follow mode: a thread re-reads the attached run every second (`app/follow.rs`).
    let follow_stop = Arc::new(AtomicBool::new(false));
    if let Some(path) = opts.run.clone() {
        let (tx, cat, facts, stop) = (
            tx.clone(),
            cat.clone(),
            opts.facts.clone(),
            follow_stop.clone(),
        );
        let device = opts.device;
        std::thread::spawn(move || {
            let compute = mltriage_probes::device::Compute::select(device);
            crate::triage::watch::follow_loop(
                cat,
                path,
                facts,
                compute,
                Duration::from_secs(1),
                stop,
                |up| tx.send(Event::Follow(Box::new(up))).is_ok(),
            );
        });
    }
    // Tensor views (the weight histogram) get their own worker: never behind a `check`.
    let views = Worker::spawn(Box::new(LiveRunner::new(cat, opts.run.clone())), tx.clone());

    let guard = StderrGuard::redirect();
    install_panic_hook();
    abort::save_terminal();
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            drop(guard);
            return Err(anyhow::anyhow!("cannot set up the terminal: {e}"));
        }
    };
    abort::install();
    let _ = crossterm::execute!(std::io::stdout(), ct::EnableBracketedPaste);
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
            // Drain what else is queued (a paste without bracketed-paste support arrives as
            // thousands of keys) and handle it as one batch: one search, one draw.
            let mut batch = vec![ev];
            while batch.len() < 100_000 {
                match rx.try_recv() {
                    Ok(ev) => batch.push(ev),
                    Err(_) => break,
                }
            }
            dirty |= app.on_events(batch);
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
    follow_stop.store(true, Ordering::Relaxed);
    abort::uninstall();
    let _ = crossterm::execute!(std::io::stdout(), ct::DisableBracketedPaste);
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
                    Ok(ct::Event::Paste(s)) => Some(Event::Paste(s)),
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
        let _ = crossterm::execute!(std::io::stdout(), ct::DisableBracketedPaste);
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
/// The log file's descriptor (kept open for the abort handler to copy its tail).
static LOG_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Where the session log goes: `$XDG_STATE_HOME/mltriage/` (else `~/.local/state/mltriage/`,
/// created 0700), else the temp folder; the file itself gets an unpredictable name and is
/// created exclusively (`O_EXCL`, never through a planted symlink) with mode 0600.
pub fn open_private_log() -> std::io::Result<(std::fs::File, PathBuf)> {
    open_private_log_in(None)
}

/// [`open_private_log`] with the state folder given (tests), else from the environment.
pub fn open_private_log_in(state: Option<PathBuf>) -> std::io::Result<(std::fs::File, PathBuf)> {
    let state = state
        .or_else(|| {
            std::env::var_os("XDG_STATE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })
        .map(|d| d.join("mltriage"));
    let private = state.filter(|d| {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let made = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(d)
            .is_ok();
        made && std::fs::symlink_metadata(d)
            .is_ok_and(|m| m.is_dir() && m.permissions().mode() & 0o077 == 0)
    });
    let dir = private.unwrap_or_else(std::env::temp_dir);
    let f = tempfile::Builder::new()
        .prefix("mltriage-tui-")
        .suffix(".log")
        .rand_bytes(12)
        .tempfile_in(&dir)?;
    f.keep().map_err(|e| e.error)
}

/// fd 2 redirected to a log file for the life of the guard.
struct StderrGuard {
    log: Option<PathBuf>,
}

impl StderrGuard {
    fn redirect() -> StderrGuard {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            use std::os::fd::IntoRawFd;
            if let Ok((file, path)) = open_private_log() {
                // SAFETY: plain POSIX calls on descriptors we own (2 and the new file's);
                // `dup` keeps the terminal's stderr to put back in `restore_now`.
                let saved = unsafe { fd::dup(2) };
                if saved >= 0 && unsafe { fd::dup2(file.as_raw_fd(), 2) } >= 0 {
                    SAVED_STDERR.store(saved, Ordering::SeqCst);
                    LOG_FD.store(file.into_raw_fd(), Ordering::SeqCst);
                    return StderrGuard { log: Some(path) };
                }
                let _ = std::fs::remove_file(&path);
            }
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
        let log = LOG_FD.swap(-1, Ordering::SeqCst);
        if log >= 0 {
            // SAFETY: our own descriptor from `into_raw_fd`, closed once (swap).
            unsafe { fd::close(log) };
        }
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

/// An abort (stack overflow, allocation failure, a panic while panicking) skips every Drop and
/// panic hook. While the UI is up, a SIGABRT handler puts the terminal back (saved termios,
/// main screen, cursor, no mouse/paste modes), points stderr at the terminal again and copies
/// the end of the session log there (Rust printed the cause into it), then lets the abort go on.
mod abort {
    use std::sync::atomic::{AtomicBool, Ordering};

    static mut TERMIOS: std::mem::MaybeUninit<libc::termios> = std::mem::MaybeUninit::uninit();
    static HAVE_TERMIOS: AtomicBool = AtomicBool::new(false);

    /// Remember the terminal's settings before raw mode.
    pub fn save_terminal() {
        // SAFETY: tcgetattr fills a termios we own; it is published before the handler exists.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) == 0 {
                std::ptr::addr_of_mut!(TERMIOS).write(std::mem::MaybeUninit::new(t));
                HAVE_TERMIOS.store(true, Ordering::SeqCst);
            }
        }
    }

    fn write_all(fd: i32, b: &[u8]) {
        let mut off = 0;
        while off < b.len() {
            // SAFETY: write(2) on a slice we own; async-signal-safe.
            let n = unsafe { libc::write(fd, b[off..].as_ptr().cast(), b.len() - off) };
            if n <= 0 {
                return;
            }
            off += n as usize;
        }
    }

    extern "C" fn on_abort(_sig: libc::c_int) {
        // Only async-signal-safe calls: tcsetattr, write, dup2, fstat, pread.
        unsafe {
            if HAVE_TERMIOS.load(Ordering::SeqCst) {
                let t = std::ptr::addr_of!(TERMIOS).read().assume_init();
                libc::tcsetattr(0, libc::TCSANOW, &t);
            }
            write_all(
                1,
                b"\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[0m\x1b[?25h\x1b[?1049l\r\n",
            );
            let saved = super::SAVED_STDERR.swap(-1, Ordering::SeqCst);
            if saved >= 0 {
                libc::dup2(saved, 2);
            }
            write_all(
                2,
                b"mltriage: aborted; the terminal was restored. Last messages:\n",
            );
            let log = super::LOG_FD.load(Ordering::SeqCst);
            if log >= 0 {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstat(log, &mut st) == 0 {
                    let mut buf = [0u8; 2048];
                    let size = st.st_size.max(0);
                    let from = (size - buf.len() as libc::off_t).max(0);
                    let n = libc::pread(log, buf.as_mut_ptr().cast(), buf.len(), from);
                    if n > 0 {
                        write_all(2, &buf[..n as usize]);
                    }
                }
            }
            // Die of the abort as intended (delivered when the handler returns).
            libc::signal(libc::SIGABRT, libc::SIG_DFL);
            libc::raise(libc::SIGABRT);
        }
    }

    pub fn install() {
        // SAFETY: installing a plain handler for SIGABRT.
        unsafe {
            libc::signal(
                libc::SIGABRT,
                on_abort as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }

    pub fn uninstall() {
        // SAFETY: back to the default action.
        unsafe {
            libc::signal(libc::SIGABRT, libc::SIG_DFL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_log_is_private_unpredictable_and_never_follows_a_planted_link() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        // The old predictable name, planted as a symlink to a file someone else owns.
        let old = std::env::temp_dir().join(format!("mltriage-tui-{}.log", std::process::id()));
        let _ = std::fs::remove_file(&old);
        std::os::unix::fs::symlink(&victim, &old).unwrap();
        let (_f, path) = open_private_log_in(Some(d.path().join("state"))).unwrap();
        let _ = std::fs::remove_file(&old);
        assert!(
            path.starts_with(d.path().join("state").join("mltriage")),
            "{path:?}"
        );
        assert_ne!(path, old);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{mode:o}");
        let dmode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dmode, 0o700, "{dmode:o}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        let (_g, path2) = open_private_log_in(Some(d.path().join("state"))).unwrap();
        assert_ne!(path, path2, "names are unpredictable, not per-pid");
    }
}
