//! `mltriage watch RUN`: follow a run while it trains and print one line (or one JSON line) per
//! finding that appears, changes status or clears; exit 1 on the first finding at the `--until`
//! level, 0 when the run ends cleanly (its final weights written, or no writes for the quiet
//! period), 2 on a bad path or argument. `--exec CMD` runs `sh -c CMD` per event with the
//! finding in its environment.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::json;

use mltriage_probes::follow::Follower;
use mltriage_probes::probe::Status;

use super::run_cmds::{compute, mark, open_run, parse_facts};
use super::style::{escape_controls as esc, Style};
use super::{write_stdout, ExitCode, UsageError};
use crate::catalog::Catalog;
use crate::triage::watch::{Change, Event, Judge};

/// The level that ends a watch with exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Until {
    /// The first fail.
    Fail,
    /// The first warn or fail.
    Warn,
    /// Never: report every event until the run ends.
    Never,
}

impl Until {
    fn stops_at(self, s: Status) -> bool {
        match self {
            Until::Fail => s == Status::Fail,
            Until::Warn => matches!(s, Status::Fail | Status::Warn),
            Until::Never => false,
        }
    }
}

/// What `watch` was asked to do.
#[derive(Debug, Clone)]
pub struct WatchArgs<'a> {
    pub run: &'a Path,
    pub until: Until,
    pub interval: f64,
    pub quiet_after: f64,
    pub json: bool,
    pub exec: Option<&'a str>,
    pub facts: &'a [String],
    pub device: &'a str,
    pub quiet: bool,
}

fn seconds(flag: &str, v: f64, min: f64) -> anyhow::Result<Duration> {
    if !v.is_finite() || v < min || v > 1e9 {
        return Err(UsageError(format!(
            "{flag} {v}: expected a number of seconds of at least {min}"
        ))
        .into());
    }
    Ok(Duration::from_secs_f64(v))
}

pub fn watch_cmd(cat: &Catalog, a: &WatchArgs, st: &Style) -> anyhow::Result<ExitCode> {
    let interval = seconds("--interval", a.interval, 0.01)?;
    let quiet_after = seconds("--quiet-after", a.quiet_after, 0.0)?;
    let facts = parse_facts(a.facts)?;
    let compute = compute(a.device)?;
    // The same checks as `check`: a path that is not there or cannot be read is exit 2.
    open_run(a.run)?;
    let mut follower = Follower::new(a.run, interval).map_err(|e| UsageError(e.to_string()))?;
    let mut judge = Judge::new(cat, facts, compute);
    let mut children: Vec<Child> = Vec::new();
    let run_name = a.run.to_string_lossy().into_owned();
    // Changes not judged yet (judging waits while it is not due).
    let (mut pending, mut pending_heavy) = (false, false);
    if !a.quiet && !a.json {
        eprintln!(
            "watching {} every {}s; ends after {}s without writes (--quiet-after)",
            esc(&run_name),
            a.interval,
            a.quiet_after
        );
    }
    let code = loop {
        let round = follower
            .poll()
            .map_err(|e| UsageError(format!("{e} (the run went away)")))?;
        let first = judge.rounds() == 0;
        pending_heavy |= round.checkpoints_changed || !round.new_files.is_empty();
        pending |= first || round.metrics_changed() || pending_heavy;
        let quiet = follower.quiet_for();
        let ended = if follower.final_checkpoint_done() && quiet >= interval.saturating_mul(3) {
            Some("final checkpoint written")
        } else if quiet >= quiet_after {
            Some("no writes for the quiet period")
        } else {
            None
        };
        // Before the run is called ended, what changed last is judged, due or not.
        if pending && (judge.due() || ended.is_some()) {
            let heavy = std::mem::take(&mut pending_heavy);
            pending = false;
            let run = follower.run().map_err(|e| UsageError(e.to_string()))?;
            let step = follower.last_step().or_else(|| run.max_step());
            let events = judge.round(&run, heavy, step);
            let mut stop = false;
            for ev in &events {
                let line = if a.json {
                    format!("{}\n", event_json(ev, &run_name))
                } else {
                    event_line(ev, st)
                };
                write_stdout(line.as_bytes())?;
                if let Some(cmd) = a.exec {
                    reap(&mut children);
                    match spawn_exec(cmd, ev, &run_name) {
                        Ok(c) => children.push(c),
                        Err(e) => eprintln!("mltriage: --exec: {e}"),
                    }
                }
                stop |= ev.change != Change::Cleared && a.until.stops_at(ev.status);
            }
            if stop {
                break 1;
            }
        }
        if let Some(why) = ended {
            let step = follower.last_step();
            if a.json {
                let v = json!({"event": "end", "reason": why, "step": step, "run": run_name});
                write_stdout(format!("{v}\n").as_bytes())?;
            } else if !a.quiet {
                let at = step.map(|s| format!(" at step {s}")).unwrap_or_default();
                eprintln!(
                    "run ended{at}: {why} ({} findings at fail or warn)",
                    judge
                        .findings
                        .iter()
                        .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
                        .count()
                );
            }
            break 0;
        }
        std::thread::sleep(interval);
    };
    for mut c in children {
        let _ = c.wait();
    }
    Ok(code)
}

/// `[step 120] new FAIL S3.2 Loss spikes — measured (was warn)`.
fn event_line(ev: &Event, st: &Style) -> String {
    let f = &ev.finding;
    let step = ev
        .step
        .map(|s| format!("step {s}"))
        .unwrap_or_else(|| "step ?".into());
    let what = match ev.change {
        Change::New => format!("new     {}", mark(ev.status, st)),
        Change::Changed => format!("changed {}", mark(ev.status, st)),
        Change::Cleared => format!("cleared {}", mark(ev.status, st)),
    };
    let was = ev
        .previous
        .filter(|_| ev.change != Change::New)
        .map(|p| format!(" (was {})", p.as_str()))
        .unwrap_or_default();
    let measured = if f.measured.is_empty() {
        String::new()
    } else {
        format!(" — {}", esc(&f.measured))
    };
    format!(
        "[{step}] {what} {} {}{measured}{was}  {}\n",
        st.bold(&f.id),
        f.title,
        st.dim(&format!("[{}]", f.probe))
    )
}

fn event_json(ev: &Event, run: &str) -> serde_json::Value {
    let f = &ev.finding;
    json!({
        "event": ev.change.as_str(),
        "step": ev.step,
        "id": f.id,
        "status": ev.status.as_str(),
        "previous": ev.previous.map(|p| p.as_str()),
        "title": f.title,
        "probe": f.probe,
        "measured": f.measured,
        "expected": f.expected,
        "message": f.message,
        "evidence": f.evidence,
        "run": run,
    })
}

fn spawn_exec(cmd: &str, ev: &Event, run: &str) -> std::io::Result<Child> {
    let f = &ev.finding;
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("MLTRIAGE_EVENT", ev.change.as_str())
        .env("MLTRIAGE_ID", &f.id)
        .env("MLTRIAGE_STATUS", ev.status.as_str())
        .env(
            "MLTRIAGE_STEP",
            ev.step.map(|s| s.to_string()).unwrap_or_default(),
        )
        .env("MLTRIAGE_MESSAGE", message(ev))
        .env("MLTRIAGE_PROBE", &f.probe)
        .env("MLTRIAGE_RUN", run)
        .stdin(std::process::Stdio::null())
        .spawn()
}

/// One line for a chat message: the entry, what changed, what was measured.
fn message(ev: &Event) -> String {
    let f = &ev.finding;
    let mut m = format!(
        "{} {} {}: {}",
        ev.change.as_str(),
        ev.status.as_str(),
        f.id,
        f.title
    );
    if !f.measured.is_empty() {
        m.push_str(" — ");
        m.push_str(&f.measured);
    }
    esc(&m).into_owned()
}

/// Collect the `--exec` commands that finished.
fn reap(children: &mut Vec<Child>) {
    children.retain_mut(|c| !matches!(c.try_wait(), Ok(Some(_))));
}
