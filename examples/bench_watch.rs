//! What `mltriage watch` costs on a run being written: a writer thread appends 10 scalars per
//! step at 10 steps/s to a TensorBoard event file (and one metrics.csv row per step), and the
//! watcher's CPU (utime + stime from /proc/PID/stat, as % of one core), resident memory
//! (VmRSS at the start and end of the window, VmHWM) are read over the window; then it idles
//! (the writer stopped) for a second window; then, in fresh runs, the time from a NaN loss being
//! written to its event line.
//!
//! `cargo run --release --example bench_watch -- [--bin target/release/mltriage]
//! [--secs 60] [--idle-secs 30] [--interval 1] [--trials 5] [--prefill STEPS]` (Linux: reads
//! /proc). `--prefill 36000` starts watching an hour into a run (10 steps/s).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mltriage_probes::metrics::tfevents::encode::{file_version_event, record, scalar_event, Style};

const TAGS: [&str; 10] = [
    "train/loss",
    "train/grad_norm",
    "train/learning_rate",
    "train/epoch",
    "train/tokens_per_second",
    "train/accuracy",
    "train/perplexity",
    "train/loss_scale",
    "train/weight_norm",
    "train/throughput",
];

fn value(tag: usize, step: u64) -> f64 {
    let s = step as f64;
    match tag {
        0 => 0.6 + 2.0 * (-s / 3000.0).exp() + 0.01 * (s * 0.7).sin(),
        1 => 0.9 + 0.05 * (s * 0.3).sin(),
        2 => 1e-4,
        3 => s / 1000.0,
        _ => 1.0 + 0.01 * ((s + tag as f64) * 0.1).sin(),
    }
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open for append");
    f.write_all(bytes).expect("append");
}

struct Writer {
    events: PathBuf,
    csv: PathBuf,
}

impl Writer {
    fn new(dir: &Path) -> Writer {
        std::fs::create_dir_all(dir.join("runs")).expect("mkdir");
        let events = dir.join("runs/events.out.tfevents.1700000000.host.1.0");
        let mut out = Vec::new();
        record(&mut out, &file_version_event(1.7e9));
        append(&events, &out);
        let csv = dir.join("metrics.csv");
        let header: Vec<String> = TAGS.iter().map(|t| t.replace("train/", "")).collect();
        append(&csv, format!("step,{}\n", header.join(",")).as_bytes());
        Writer { events, csv }
    }

    fn step(&self, step: u64, nan: bool) {
        let mut out = Vec::new();
        let mut row = format!("{step}");
        for (i, tag) in TAGS.iter().enumerate() {
            let v = if nan && i == 0 {
                f64::NAN
            } else {
                value(i, step)
            };
            record(
                &mut out,
                &scalar_event(
                    step as i64,
                    1.7e9 + step as f64 / 10.0,
                    tag.as_bytes(),
                    v,
                    Style::SimpleValue,
                ),
            );
            row.push_str(&format!(",{v}"));
        }
        row.push('\n');
        append(&self.events, &out);
        append(&self.csv, row.as_bytes());
    }
}

fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the `(comm)`: state is field 3; utime and stime are fields 14 and 15.
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    get(11) + get(12)
}

/// A `/proc/PID/status` field in kB.
fn status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn spawn(
    bin: &Path,
    dir: &Path,
    interval: f64,
) -> (Child, std::sync::mpsc::Receiver<(Instant, String)>) {
    let mut child = Command::new(bin)
        .arg("watch")
        .arg(dir)
        .args(["--json", "--until", "never", "--quiet-after", "3600"])
        .args(["--interval", &interval.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mltriage watch");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Writes `prefill` steps at once, then 10 steps a second until stopped; `nan_at` makes the
/// loss NaN from that step.
fn writer(
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    nan_at: Arc<AtomicU64>,
    steps: Arc<AtomicU64>,
    prefill: u64,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let w = Writer::new(&dir);
        for s in 1..=prefill {
            w.step(s, false);
        }
        steps.store(prefill, Ordering::SeqCst);
        let start = Instant::now() - Duration::from_millis(100 * prefill);
        let mut step = prefill;
        while !stop.load(Ordering::SeqCst) {
            step += 1;
            w.step(step, step >= nan_at.load(Ordering::SeqCst));
            steps.store(step, Ordering::SeqCst);
            let due = start + Duration::from_millis(100 * step);
            if let Some(d) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
        }
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| default.to_string())
    };
    let bin = PathBuf::from(arg("--bin", "target/release/mltriage"));
    let secs: f64 = arg("--secs", "60").parse().expect("--secs");
    let idle_secs: f64 = arg("--idle-secs", "30").parse().expect("--idle-secs");
    let interval: f64 = arg("--interval", "1").parse().expect("--interval");
    let trials: usize = arg("--trials", "5").parse().expect("--trials");
    // Steps already logged when watching starts (36000: an hour at 10 steps/s).
    let prefill: u64 = arg("--prefill", "0").parse().expect("--prefill");
    let tck = clk_tck();

    // 1. Cost while the run is written, then while it is idle.
    let d = tempfile::tempdir().expect("tempdir");
    let stop = Arc::new(AtomicBool::new(false));
    let steps = Arc::new(AtomicU64::new(0));
    let w = writer(
        d.path().to_path_buf(),
        stop.clone(),
        Arc::new(AtomicU64::new(u64::MAX)),
        steps.clone(),
        prefill,
    );
    std::thread::sleep(Duration::from_millis(300));
    let (mut child, _rx) = spawn(&bin, d.path(), interval);
    let pid = child.id();
    std::thread::sleep(Duration::from_secs(5)); // start-up and the first full judgement
    let (t0, c0, rss0, s0) = (
        Instant::now(),
        cpu_ticks(pid),
        status_kb(pid, "VmRSS:"),
        steps.load(Ordering::SeqCst),
    );
    // RSS every 30 s of the window: what the watcher holds beyond the series it reads.
    let mut samples = vec![rss0];
    let end = t0 + Duration::from_secs_f64(secs);
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        std::thread::sleep(left.min(Duration::from_secs(30)));
        samples.push(status_kb(pid, "VmRSS:"));
    }
    let (t1, c1, rss1, s1) = (
        Instant::now(),
        cpu_ticks(pid),
        status_kb(pid, "VmRSS:"),
        steps.load(Ordering::SeqCst),
    );
    stop.store(true, Ordering::SeqCst);
    let _ = w.join();
    std::thread::sleep(Duration::from_secs(2));
    let (t2, c2) = (Instant::now(), cpu_ticks(pid));
    std::thread::sleep(Duration::from_secs_f64(idle_secs));
    let (t3, c3, rss3) = (Instant::now(), cpu_ticks(pid), status_kb(pid, "VmRSS:"));
    let hwm = status_kb(pid, "VmHWM:");
    let _ = child.kill();
    let _ = child.wait();
    let busy = (c1 - c0) as f64 / tck / (t1 - t0).as_secs_f64() * 100.0;
    let idle = (c3 - c2) as f64 / tck / (t3 - t2).as_secs_f64() * 100.0;
    println!("run pre-filled with {prefill} steps before watching");
    println!(
        "writing: {:.1} s, steps {s0}..{s1} ({} scalars/step, {:.1} steps/s), watch --interval {interval}: CPU {busy:.2}% of one core; RSS {} kB -> {} kB",
        (t1 - t0).as_secs_f64(),
        TAGS.len(),
        (s1 - s0) as f64 / (t1 - t0).as_secs_f64(),
        rss0,
        rss1
    );
    println!(
        "RSS every 30 s while writing (kB): {}",
        samples
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "idle: {:.1} s after the writer stopped: CPU {idle:.2}% of one core; RSS {rss3} kB; peak RSS (VmHWM) {hwm} kB",
        (t3 - t2).as_secs_f64()
    );

    // 2. Latency: a NaN loss written -> its event line.
    let mut lat = Vec::new();
    for trial in 0..trials {
        let d = tempfile::tempdir().expect("tempdir");
        let stop = Arc::new(AtomicBool::new(false));
        let nan_at = Arc::new(AtomicU64::new(u64::MAX));
        let steps = Arc::new(AtomicU64::new(0));
        let w = writer(
            d.path().to_path_buf(),
            stop.clone(),
            nan_at.clone(),
            steps.clone(),
            prefill,
        );
        std::thread::sleep(Duration::from_millis(300));
        let (mut child, rx) = spawn(&bin, d.path(), interval);
        // Trials spread over the poll's phase: the NaN lands anywhere in an interval.
        let phase = interval * trial as f64 / trials.max(1) as f64;
        std::thread::sleep(Duration::from_secs_f64(4.0 + phase));
        while rx.try_recv().is_ok() {}
        // The NaN goes into the next step the writer writes.
        let at = steps.load(Ordering::SeqCst) + 1;
        nan_at.store(at, Ordering::SeqCst);
        while steps.load(Ordering::SeqCst) < at {
            std::thread::sleep(Duration::from_millis(1));
        }
        let written = Instant::now();
        let deadline = written + Duration::from_secs(30);
        let mut got = None;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok((t, line)) if line.contains("\"status\":\"fail\"") => {
                    got = Some(t.saturating_duration_since(written));
                    break;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        stop.store(true, Ordering::SeqCst);
        let _ = w.join();
        let _ = child.kill();
        let _ = child.wait();
        match got {
            Some(l) => lat.push(l.as_secs_f64()),
            None => println!("latency trial: no fail line within 30 s"),
        }
    }
    if !lat.is_empty() {
        let mut s = lat.clone();
        s.sort_by(f64::total_cmp);
        println!(
            "latency NaN written -> event line (--interval {interval}, {} trials): median {:.2} s, max {:.2} s ({})",
            s.len(),
            s[s.len() / 2],
            s[s.len() - 1],
            s.iter().map(|v| format!("{v:.2}")).collect::<Vec<_>>().join(", ")
        );
    }
}
