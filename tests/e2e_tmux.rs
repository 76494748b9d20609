//! End to end in a real terminal: the binary runs in a detached tmux session (80×24); we
//! type into it and read the screen with `capture-pane`. Skipped, with a note, when tmux is
//! not installed.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs")
    }
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "e2e"]).stdout).into_owned()
    }
    fn keys(&self, keys: &[&str]) {
        let mut a = vec!["send-keys", "-t", "e2e"];
        a.extend_from_slice(keys);
        self.cmd(&a);
    }
    fn literal(&self, text: &str) {
        self.cmd(&["send-keys", "-t", "e2e", "-l", text]);
    }
    /// Wait until the screen satisfies `pred`; panic with the screen otherwise.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            if t0.elapsed() > Duration::from_secs(15) {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

fn wait_file(p: &Path) -> String {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Ok(s) = std::fs::read_to_string(p) {
            if s.ends_with('\n') {
                return s;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never written", p.display());
}

#[test]
fn tui_in_tmux_search_open_fix_help_resize_quit() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("note: tmux is not installed; skipping the end-to-end TUI test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exit_file = dir.path().join("exit");
    let ff_file = dir.path().join("first_frame_us");
    let bin = env!("CARGO_BIN_EXE_mltriage");
    let script = format!(
        "cd '{d}' && XDG_CONFIG_HOME='{d}' MLTRIAGE_FIRST_FRAME_FILE='{ff}' '{bin}'; echo EXIT=$? > '{ex}'",
        d = dir.path().display(),
        ff = ff_file.display(),
        ex = exit_file.display()
    );
    let tmux = Tmux {
        socket: format!("mltriage-e2e-{}", std::process::id()),
    };
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "80",
        "-y",
        "24",
        "sh",
        "-c",
        &script,
    ]);
    assert!(
        out.status.success(),
        "tmux new-session: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmux.cmd(&["set", "-s", "escape-time", "0"]);

    tmux.wait_for("the home screen", |s| {
        s.contains("mltriage") && s.contains("Trees")
    });
    tmux.literal("/");
    tmux.wait_for("the search box", |s| s.contains("Search ["));
    tmux.literal("mAP zero");
    tmux.wait_for("V3 in the results", |s| s.contains("V3    Detection mAP"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the V3 entry", |s| {
        s.contains("mltriage › V3") && s.contains("Symptom")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("V3's fix", |s| {
        s.contains("Fix") && s.contains("box_convert") && !s.contains("Symptom")
    });
    tmux.literal("?");
    tmux.wait_for("the help overlay", |s| {
        s.contains("Keys") && s.contains("search the catalog")
    });
    tmux.keys(&["Escape"]);
    tmux.wait_for("help closed", |s| !s.contains("search the catalog"));
    tmux.cmd(&["resize-window", "-t", "e2e", "-x", "20", "-y", "6"]);
    tmux.wait_for("the too-small notice", |s| s.contains("too small"));
    tmux.cmd(&["resize-window", "-t", "e2e", "-x", "80", "-y", "24"]);
    tmux.wait_for("the entry again", |s| s.contains("mltriage › V3"));
    tmux.literal("q");
    let exit = wait_file(&exit_file);
    assert_eq!(exit.trim(), "EXIT=0");
    let ff: u64 = wait_file(&ff_file).trim().parse().unwrap();
    eprintln!(
        "time to first frame (debug build, process start to first draw): {:.1} ms",
        ff as f64 / 1000.0
    );
    // Nothing left in the temp dir but our files: the stderr log is removed when empty.
    let extra: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "exit" && n != "first_frame_us")
        .collect();
    assert!(extra.is_empty(), "{extra:?}");
}

#[test]
fn an_abort_in_the_tui_restores_the_terminal_and_prints_the_cause() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("note: tmux is not installed; skipping the end-to-end TUI test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exit_file = dir.path().join("exit");
    let bin = env!("CARGO_BIN_EXE_mltriage");
    let script = format!(
        "cd '{d}' && XDG_CONFIG_HOME='{d}' XDG_STATE_HOME='{d}/state' '{bin}'; echo EXIT=$? > '{ex}'; sleep 20",
        d = dir.path().display(),
        ex = exit_file.display()
    );
    let tmux = Tmux {
        socket: format!("mltriage-abort-{}", std::process::id()),
    };
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "80",
        "-y",
        "24",
        "sh",
        "-c",
        &script,
    ]);
    assert!(out.status.success());
    tmux.wait_for("the home screen", |s| {
        s.contains("mltriage") && s.contains("Trees")
    });
    let on = String::from_utf8_lossy(
        &tmux
            .cmd(&["display", "-p", "-t", "e2e", "#{alternate_on}"])
            .stdout,
    )
    .trim()
    .to_string();
    assert_eq!(on, "1", "the UI runs on the alternate screen");
    // The shell's child is our mltriage: abort it as a stack overflow or OOM would.
    let shell = String::from_utf8_lossy(
        &tmux
            .cmd(&["display", "-p", "-t", "e2e", "#{pane_pid}"])
            .stdout,
    )
    .trim()
    .to_string();
    let kids =
        std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap_or_default();
    let pid: i32 = kids
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("mltriage pid");
    // SAFETY: signalling the process this test started.
    unsafe { libc::kill(pid, libc::SIGABRT) };
    let exit = wait_file(&exit_file);
    assert!(exit.contains("EXIT=134"), "{exit}");
    let s = tmux.wait_for("the abort note", |s| s.contains("mltriage: aborted"));
    let on = String::from_utf8_lossy(
        &tmux
            .cmd(&["display", "-p", "-t", "e2e", "#{alternate_on}"])
            .stdout,
    )
    .trim()
    .to_string();
    assert_eq!(on, "0", "left the alternate screen:\n{s}");
    assert!(!s.contains("Trees"), "the UI is gone from the screen:\n{s}");
}

/// The used-by path: attach a fixture run, search a symptom, open the hit, walk from there
/// with the probes answering, reach the conclusion and export the transcript.
#[test]
fn tui_in_tmux_symptom_to_conclusion_with_probes_and_export() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("note: tmux is not installed; skipping the end-to-end TUI test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exit_file = dir.path().join("exit");
    let run = format!(
        "{}/../shared/fixtures/lm_bad_init",
        env!("CARGO_MANIFEST_DIR")
    );
    let bin = env!("CARGO_BIN_EXE_mltriage");
    let script = format!(
        "cd '{d}' && XDG_CONFIG_HOME='{d}' '{bin}' '{run}'; echo EXIT=$? > '{ex}'",
        d = dir.path().display(),
        ex = exit_file.display()
    );
    let tmux = Tmux {
        socket: format!("mltriage-e2e-walk-{}", std::process::id()),
    };
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "80",
        "-y",
        "24",
        "sh",
        "-c",
        &script,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmux.cmd(&["set", "-s", "escape-time", "0"]);

    // Started on a run: the findings first, the worst selected.
    tmux.wait_for("the findings", |s| {
        s.contains("Findings") && s.contains("›✗ fail")
    });
    tmux.literal("/");
    tmux.wait_for("the search box", |s| s.contains("Search ["));
    tmux.literal("initial weight statistics");
    tmux.wait_for("S5.1 in the results", |s| s.contains("S5.1"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the S5.1 entry", |s| {
        s.contains("mltriage › S5.1") && s.contains("walk from here")
    });
    tmux.literal("w");
    // The walk starts at the init-weights question, the step-0 loss above it answered by
    // the run, and the probe's verdict and histogram on screen.
    // At 80×24 the measured value comes first; the proposed branch is below, j scrolls to it.
    let s = tmux.wait_for("the probe's verdict", |s| {
        s.contains("q1_1_init") && s.contains("fail measured worst std")
    });
    assert!(s.contains("1 answered by the run"), "{s}");
    for _ in 0..40 {
        if tmux.screen().contains("proposed branch: too_large") {
            break;
        }
        tmux.keys(&["j"]);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    tmux.wait_for("the proposed branch", |s| {
        s.contains("proposed branch: too_large")
    });
    tmux.keys(&["Enter"]);
    tmux.wait_for("the conclusion", |s| s.contains("Conclusion: S5.1"));
    tmux.literal("e");
    let md = wait_file(&dir.path().join("mltriage-walk-stability.md"));
    assert!(md.contains("S5.1"), "{md}");
    assert!(md.contains("init_weight_stats"), "{md}");
    assert!(md.contains("q1_1"), "{md}");
    tmux.literal("q");
    assert_eq!(wait_file(&exit_file).trim(), "EXIT=0");
}

/// Charts of a run's own series: a DPO run and a Lightning run open on the run screen, the
/// series picker (`s`) filters every series the run logs, Enter draws the chosen one
/// (`rewards/margins`, a Lightning per-layer `grad_2.0_norm/…`), the default charts show the
/// series the probes read (`grad_2.0_norm_total`, `lr-AdamW/pg1`), then a walk starts from
/// the selected finding and `q` leaves with the terminal restored.
#[test]
fn tui_in_tmux_charts_of_a_dpo_and_a_lightning_run() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("note: tmux is not installed; skipping the end-to-end TUI test");
        return;
    }
    let field = format!("{}/tests/field", env!("CARGO_MANIFEST_DIR"));
    let cases: [(&str, &str, &str, &[&str]); 2] = [
        (
            "trl_dpo_healthy",
            "margins",
            "rewards/margins (20 pts",
            &["rewards/margins"],
        ),
        (
            "lightning_healthy",
            "wte",
            "grad_2.0_norm/model.transformer.wte.weight (30 pts",
            &["grad_2.0_norm_total", "lr-AdamW/pg1"],
        ),
    ];
    for (i, (name, filter, drawn, own)) in cases.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let exit_file = dir.path().join("exit");
        let bin = env!("CARGO_BIN_EXE_mltriage");
        let script = format!(
            "cd '{d}' && XDG_CONFIG_HOME='{d}' XDG_STATE_HOME='{d}/state' '{bin}' '{field}/{name}'; echo EXIT=$? > '{ex}'; sleep 20",
            d = dir.path().display(),
            ex = exit_file.display()
        );
        let tmux = Tmux {
            socket: format!("mltriage-e2e-charts-{}-{i}", std::process::id()),
        };
        let out = tmux.cmd(&[
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            "120",
            "-y",
            "36",
            "sh",
            "-c",
            &script,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux.cmd(&["set", "-s", "escape-time", "0"]);
        tmux.wait_for("the findings", |s| {
            s.contains("Findings") && !s.contains("reading the run")
        });
        tmux.literal("r");
        // Wait for the whole screen, not its first paint: under load the capture can land
        // between frames (the weights pane still reading, the chart titles half drawn).
        let s = tmux.wait_for("the run screen's charts", |s| {
            s.contains("mltriage › run")
                && s.contains("loss (")
                && (name != "lightning_healthy" || own.iter().all(|o| s.contains(o)))
        });
        if name == "lightning_healthy" {
            for o in own {
                assert!(s.contains(o), "{name}: {o} missing:\n{s}");
            }
            assert!(!s.contains("not logged"), "{name}:\n{s}");
        }
        tmux.literal("s");
        tmux.wait_for("the series picker", |s| s.contains("Series ("));
        tmux.literal(filter);
        tmux.wait_for("the filtered list", |s| s.contains("Series (1)"));
        tmux.keys(&["Enter"]);
        let s = tmux.wait_for("the chosen series drawn", |s| {
            s.contains(drawn) && !s.contains("Series (")
        });
        if name == "trl_dpo_healthy" {
            for o in own {
                assert!(s.contains(o), "{name}: {o} missing:\n{s}");
            }
            assert!(!s.contains("ln V ="), "{name}:\n{s}");
        }
        // Walk from the selected finding, then quit.
        tmux.keys(&["Tab"]);
        tmux.literal("w");
        tmux.wait_for("the walk", |s| s.contains("mltriage › walk"));
        tmux.literal("q");
        assert_eq!(wait_file(&exit_file).trim(), "EXIT=0", "{name}");
        let on = String::from_utf8_lossy(
            &tmux
                .cmd(&["display", "-p", "-t", "e2e", "#{alternate_on}"])
                .stdout,
        )
        .trim()
        .to_string();
        assert_eq!(on, "0", "{name}: the terminal is restored");
    }
}

/// Follow mode in a real terminal: the TUI opened on a run that is still being written shows
/// the newest step in its header as lines are appended, `F` pauses and resumes, and quitting
/// restores the terminal.
#[test]
fn tui_in_tmux_follows_a_run_being_written() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("note: tmux is not installed; skipping the end-to-end TUI test");
        return;
    }
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let log = run.join("metrics.jsonl");
    let line = |s: u64| {
        let loss = 4.0 - (s as f64) * 0.001;
        format!(
            "{{\"step\": {s}, \"loss\": {loss}, \"learning_rate\": 0.001, \"grad_norm\": 1.0}}\n"
        )
    };
    std::fs::write(&log, (1..=50).map(line).collect::<String>()).unwrap();
    let exit_file = dir.path().join("exit");
    let bin = env!("CARGO_BIN_EXE_mltriage");
    let script = format!(
        "cd '{d}' && XDG_CONFIG_HOME='{d}' '{bin}' '{run}'; echo EXIT=$? > '{ex}'",
        d = dir.path().display(),
        run = run.display(),
        ex = exit_file.display()
    );
    let tmux = Tmux {
        socket: format!("mltriage-e2e-follow-{}", std::process::id()),
    };
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "100",
        "-y",
        "30",
        "sh",
        "-c",
        &script,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmux.cmd(&["set", "-s", "escape-time", "0"]);
    tmux.wait_for("the header's step 50", |s| s.contains("step 50 "));
    // The trainer goes on: new lines reach the header within a few polls.
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all((51..=120).map(line).collect::<String>().as_bytes())
        .unwrap();
    f.flush().unwrap();
    tmux.wait_for("the header's step 120", |s| {
        s.contains("following") && s.contains("step 120 ")
    });
    // Paused, new steps wait; resumed, they show.
    tmux.literal("F");
    tmux.wait_for("follow paused", |s| s.contains("follow paused"));
    f.write_all((121..=150).map(line).collect::<String>().as_bytes())
        .unwrap();
    f.flush().unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!tmux.screen().contains("step 150 "), "{}", tmux.screen());
    tmux.literal("F");
    tmux.wait_for("the header's step 150", |s| s.contains("step 150 "));
    tmux.literal("q");
    assert_eq!(wait_file(&exit_file).trim(), "EXIT=0");
}
