//! `mltriage watch` against a fake trainer: a thread that appends to a TensorBoard event file,
//! rewrites a trainer_state.json, appends to a metrics.csv and a captured stdout log (with `\r`
//! progress bars), writes a checkpoint half-way and restarts once with a new event file. The
//! watcher stops (exit 1) at the step a divergence is written, a healthy stream ends with 0
//! after the quiet period, and half-written records are never read as points.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mltriage_probes::metrics::tfevents::encode::{file_version_event, record, scalar_event, Style};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mltriage"))
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
    f.flush().unwrap();
}

/// A healthy loss curve: falls from about 2.6 towards 0.6.
fn healthy_loss(step: u64) -> f64 {
    0.6 + 2.0 * (-(step as f64) / 60.0).exp() + 0.01 * ((step as f64) * 0.7).sin()
}

fn lr(step: u64) -> f64 {
    if step < 10 {
        1e-4 * (step + 1) as f64 / 10.0
    } else {
        1e-4
    }
}

fn grad_norm(step: u64) -> f64 {
    0.9 + 0.05 * ((step as f64) * 0.3).sin()
}

/// A tiny valid safetensors file: one F32 tensor.
fn safetensors(values: &[f32]) -> Vec<u8> {
    let header = format!(
        r#"{{"linear.weight":{{"dtype":"F32","shape":[{}],"data_offsets":[0,{}]}}}}"#,
        values.len(),
        values.len() * 4
    );
    let mut h = header.into_bytes();
    while h.len() % 8 != 0 {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// The fake trainer: one call per step writes every log.
struct Trainer {
    dir: PathBuf,
    events: PathBuf,
    history: Vec<String>,
}

impl Trainer {
    fn new(dir: &Path) -> Trainer {
        let runs = dir.join("runs");
        std::fs::create_dir_all(&runs).unwrap();
        let mut t = Trainer {
            dir: dir.to_path_buf(),
            events: PathBuf::new(),
            history: Vec::new(),
        };
        t.new_event_file(1_700_000_000);
        append(&dir.join("metrics.csv"), b"step,train_loss,lr\n");
        append(&dir.join("train.log"), b"loading data\nstarting training\n");
        t
    }

    /// A (re)start: TensorBoard's writer opens a new file named by the start time.
    fn new_event_file(&mut self, t: u64) {
        self.events = self
            .dir
            .join("runs")
            .join(format!("events.out.tfevents.{t}.host.1.0"));
        let mut out = Vec::new();
        record(&mut out, &file_version_event(t as f64));
        append(&self.events, &out);
    }

    fn event_records(&self, step: u64, loss: f64) -> Vec<u8> {
        let mut out = Vec::new();
        let wall = 1.7e9 + step as f64;
        for (tag, v) in [
            ("train/loss", loss),
            ("train/grad_norm", grad_norm(step)),
            ("train/learning_rate", lr(step)),
        ] {
            record(
                &mut out,
                &scalar_event(step as i64, wall, tag.as_bytes(), v, Style::SimpleValue),
            );
        }
        out
    }

    fn step(&mut self, step: u64, loss: f64) {
        append(&self.events, &self.event_records(step, loss));
        let l = if loss.is_finite() {
            format!("{loss:.6}")
        } else {
            "nan".into()
        };
        append(
            &self.dir.join("metrics.csv"),
            format!("{step},{l},{}\n", lr(step)).as_bytes(),
        );
        append(
            &self.dir.join("train.log"),
            format!(
                " {}%|##  | {step}/200\rstep {step} | loss {l} | lr {:e}\n",
                step / 2,
                lr(step)
            )
            .as_bytes(),
        );
        let l_json = if loss.is_finite() {
            format!("{loss:.6}")
        } else {
            "NaN".into()
        };
        self.history.push(format!(
            r#"{{"step": {step}, "loss": {l_json}, "learning_rate": {}, "grad_norm": {}}}"#,
            lr(step),
            grad_norm(step)
        ));
        if step % 10 == 0 {
            self.save_state(step);
        }
    }

    /// trainer_state.json rewritten whole, in two writes (as `json.dump` to an open file does).
    fn save_state(&self, step: u64) {
        let text = format!(
            r#"{{"global_step": {step}, "max_steps": 400, "logging_steps": 1, "log_history": [{}]}}"#,
            self.history.join(", ")
        );
        let path = self.dir.join("trainer_state.json");
        let (a, b) = text.as_bytes().split_at(text.len() / 2);
        std::fs::write(&path, a).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        append(&path, b);
    }

    /// `checkpoint-N/`: its weights written in two halves with a pause between.
    fn checkpoint(&self, step: u64, pause: Duration) {
        let ck = self.dir.join(format!("checkpoint-{step}"));
        std::fs::create_dir_all(&ck).unwrap();
        let w: Vec<f32> = (0..64).map(|i| ((i as f32) * 0.37).sin() * 0.05).collect();
        let bytes = safetensors(&w);
        let (a, b) = bytes.split_at(bytes.len() / 2);
        let p = ck.join("model.safetensors");
        append(&p, a);
        std::thread::sleep(pause);
        append(&p, b);
        std::fs::copy(
            self.dir.join("trainer_state.json"),
            ck.join("trainer_state.json"),
        )
        .unwrap();
    }
}

/// Start `watch` with stdout read line by line on a thread.
fn spawn_watch(
    dir: &Path,
    extra: &[&str],
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = bin()
        .arg("watch")
        .arg(dir)
        .args(["--interval", "0.2", "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn wait_exit(child: &mut std::process::Child, limit: Duration) -> i32 {
    let start = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("watch did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn watch_until_fail_stops_within_two_seconds_of_the_diverging_step() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_path_buf();
    let mut t = Trainer::new(&dir);
    for s in 1..=20 {
        t.step(s, healthy_loss(s));
    }
    let hook = dir.join("hook.txt");
    let exec = format!(
        "echo \"$MLTRIAGE_STATUS $MLTRIAGE_ID $MLTRIAGE_STEP $MLTRIAGE_RUN\" >> '{}'",
        hook.display()
    );
    let (mut child, rx) = spawn_watch(&dir, &["--until", "fail", "--exec", &exec]);
    // The trainer: 10 steps a second; a checkpoint at 40, a restart (new event file) that
    // resumes from it at step 50, and the loss blowing up at step 90.
    let stop = Arc::new(AtomicBool::new(false));
    let last = Arc::new(AtomicU64::new(0));
    const DIVERGE: u64 = 90;
    let trainer = {
        let (stop, last) = (stop.clone(), last.clone());
        std::thread::spawn(move || {
            let mut s = 21;
            let mut restarted = false;
            while !stop.load(Ordering::SeqCst) && s < 400 {
                let loss = if s >= DIVERGE {
                    healthy_loss(s) * 40.0 * (s - DIVERGE + 1) as f64
                } else {
                    healthy_loss(s)
                };
                t.step(s, loss);
                last.store(s, Ordering::SeqCst);
                if s == 40 {
                    t.checkpoint(40, Duration::from_millis(300));
                }
                if s == 50 && !restarted {
                    restarted = true;
                    t.new_event_file(1_700_000_500);
                    s = 41;
                    continue;
                }
                s += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let code = wait_exit(&mut child, Duration::from_secs(120));
    stop.store(true, Ordering::SeqCst);
    trainer.join().unwrap();
    let lines: Vec<String> = rx.try_iter().collect();
    assert_eq!(code, 1, "exit 1 at the first fail; lines: {lines:#?}");
    let events: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let fail = events
        .iter()
        .find(|e| e["status"] == "fail")
        .unwrap_or_else(|| panic!("a fail event: {events:#?}"));
    assert_eq!(fail["event"], "new");
    let step = fail["step"].as_u64().unwrap();
    // 10 steps a second: within 2 s of the diverging step is within 20 steps of it.
    assert!(
        (DIVERGE..=DIVERGE + 20).contains(&step),
        "fail reported at step {step}, diverged at {DIVERGE}: {fail}"
    );
    assert!(
        events
            .iter()
            .all(|e| e["status"] != "warn" || e["step"].as_u64() >= Some(DIVERGE)),
        "no warning before the divergence: {events:#?}"
    );
    let hook = std::fs::read_to_string(&hook).unwrap();
    assert!(
        hook.lines().any(|l| l.starts_with(&format!(
            "fail {} {step} {}",
            fail["id"].as_str().unwrap(),
            dir.display()
        ))),
        "--exec ran with the finding in its environment: {hook}"
    );
}

#[test]
fn healthy_stream_with_half_written_records_ends_cleanly_after_the_quiet_period() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_path_buf();
    let mut t = Trainer::new(&dir);
    for s in 1..=10 {
        t.step(s, healthy_loss(s));
    }
    let (mut child, rx) = spawn_watch(&dir, &["--until", "warn", "--quiet-after", "2"]);
    let trainer = std::thread::spawn(move || {
        let pause = Duration::from_millis(700);
        for s in 11..=120 {
            if s == 60 {
                // Half a TFRecord, half a CSV line and half a log line, then the rest: the
                // loss written as `13.35…e-1`, whose first half `13` would be a ×10 jump if
                // read early.
                let loss = healthy_loss(s);
                let ev = t.event_records(s, loss);
                let (a, b) = ev.split_at(ev.len() / 2 + 3);
                let cell = format!("{:.5}e-1", loss * 10.0);
                let (c1, c2) = cell.split_at(2);
                append(&t.events, a);
                append(&dir.join("metrics.csv"), format!("{s},{c1}").as_bytes());
                append(
                    &dir.join("train.log"),
                    format!("step {s} | loss {c1}").as_bytes(),
                );
                std::thread::sleep(pause);
                append(&t.events, b);
                append(
                    &dir.join("metrics.csv"),
                    format!("{c2},{}\n", lr(s)).as_bytes(),
                );
                append(&dir.join("train.log"), format!("{c2}\n").as_bytes());
                continue;
            }
            t.step(s, healthy_loss(s));
            if s == 40 {
                t.checkpoint(40, pause);
            }
            if s == 80 {
                t.new_event_file(1_700_000_800);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let code = wait_exit(&mut child, Duration::from_secs(120));
    trainer.join().unwrap();
    let lines: Vec<String> = rx.try_iter().collect();
    assert_eq!(code, 0, "a healthy run ends with 0; lines: {lines:#?}");
    let events: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events.len(),
        1,
        "no finding on a healthy stream, only the end: {events:#?}"
    );
    assert_eq!(events[0]["event"], "end");
    assert_eq!(events[0]["reason"], "no writes for the quiet period");
    assert_eq!(events[0]["step"], 120);
}

#[test]
fn watch_on_a_missing_run_is_one_line_and_exit_2() {
    let out = bin()
        .args(["watch", "/no/such/run", "--interval", "0.2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/no/such/run"), "{err}");
    let out = bin()
        .args(["watch", ".", "--interval", "-1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
