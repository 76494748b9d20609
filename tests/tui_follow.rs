//! Follow mode in the TUI (TestBackend): the follower's reports move the charts and findings,
//! the header shows the last step and how long ago ("no new step for 12 min" when quiet),
//! `F` pauses and resumes (what arrived meanwhile is applied on resume), and the real follower
//! thread reports a growing run.

mod tui_common;

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::KeyCode;
use mltriage::app::Event;
use mltriage::look::theme::Theme;
use mltriage::triage::jobs::{RunSummary, SeriesView};
use mltriage::triage::watch::{follow_loop, Change, Event as FindingEvent, FollowUpdate};
use mltriage_probes::probe::Status;
use tui_common::*;

fn summary_to(step: u64) -> RunSummary {
    let loss: Vec<(f64, f64)> = (0..=step)
        .map(|i| (i as f64, 9.0 - (i as f64) / 100.0))
        .collect();
    RunSummary {
        root: "fixtures/scripted_run".into(),
        max_step: Some(step),
        metric_names: vec!["loss".into()],
        series: vec![SeriesView {
            name: "loss".into(),
            tag: "train/loss".into(),
            points: loss,
        }],
        ..Default::default()
    }
}

fn header(app: &mltriage::app::App) -> String {
    screen_text(app, 100, 30)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn follow_updates_move_charts_findings_and_header_and_f_pauses() {
    let app = app_with(Some(fixture("hf_trainer_run")), Theme::default(), None);
    let mut h = headless(app, scripted(None));
    let t0 = Instant::now();
    // Without a follower the header says nothing of following.
    assert!(!header(&h.app).contains("follow"), "{}", header(&h.app));

    // First report: the run's last step, written 12 minutes before mltriage started.
    h.app.on_follow(
        FollowUpdate {
            last_step: Some(300),
            age_at_start: Some(Duration::from_secs(12 * 60 + 5)),
            ..Default::default()
        },
        t0,
    );
    let top = header(&h.app);
    assert!(top.contains("step 300"), "{top}");
    assert!(top.contains("no new step for 12 min"), "{top}");

    // The run moves: new series to step 400 and a new fail at step 400.
    let spike = finding(
        "S3.2",
        "grad_norm_spikes",
        Status::Fail,
        "fail",
        "4 spikes",
        "≤ 1",
    );
    h.app.on_follow(
        FollowUpdate {
            summary: Some(summary_to(400)),
            findings: Some(vec![spike.clone()]),
            events: vec![FindingEvent {
                change: Change::New,
                finding: spike.clone(),
                status: Status::Fail,
                previous: None,
                step: Some(400),
            }],
            last_step: Some(400),
            live: true,
            ..Default::default()
        },
        t0 + Duration::from_secs(2),
    );
    h.app.follow_tick(t0 + Duration::from_secs(5));
    let top = header(&h.app);
    assert!(top.contains("following · step 400 · 3 s ago"), "{top}");
    let s = h.app.run.summary.as_ref().unwrap();
    assert_eq!(
        s.series_for("loss").unwrap().points.last(),
        Some(&(400.0, 5.0))
    );
    assert_eq!(h.app.run.findings[0].id, "S3.2");
    let text = screen_text(&h.app, 100, 30);
    assert!(
        text.contains("findings changed at step 400: S3.2 fail"),
        "the status line names the change:\n{text}"
    );
    h.key(KeyCode::Char('r'));
    let text = screen_text(&h.app, 100, 30);
    assert!(
        text.contains("loss (401 pts)") && text.contains("400"),
        "the chart reaches step 400:\n{text}"
    );

    // Paused: a report waits; the header says paused.
    h.key(KeyCode::Char('F'));
    assert!(h.app.follow.paused);
    h.app.on_follow(
        FollowUpdate {
            summary: Some(summary_to(500)),
            findings: Some(Vec::new()),
            events: vec![FindingEvent {
                change: Change::Cleared,
                finding: spike,
                status: Status::Pass,
                previous: Some(Status::Fail),
                step: Some(500),
            }],
            last_step: Some(500),
            live: true,
            ..Default::default()
        },
        t0 + Duration::from_secs(6),
    );
    // Paused, the screen holds still, the header's step included.
    assert!(
        header(&h.app).contains("follow paused (F) · step 400"),
        "{}",
        header(&h.app)
    );
    assert_eq!(h.app.run.findings.len(), 1, "nothing applied while paused");
    assert_eq!(h.app.run.summary.as_ref().unwrap().max_step, Some(400));
    // Resumed: what arrived meanwhile is applied.
    h.key(KeyCode::Char('F'));
    assert!(!h.app.follow.paused);
    assert!(h.app.run.findings.is_empty());
    assert_eq!(h.app.run.summary.as_ref().unwrap().max_step, Some(500));

    // Quiet: no new step for 12 min.
    h.app.follow_tick(t0 + Duration::from_secs(6 + 12 * 60));
    assert!(
        header(&h.app).contains("step 500 · no new step for 12 min"),
        "{}",
        header(&h.app)
    );
}

#[test]
fn f_without_a_follower_says_so() {
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('F'));
    assert!(!h.app.follow.paused);
    assert!(screen_text(&h.app, 100, 30).contains("follow: no run attached"));
}

fn append(path: &std::path::Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(bytes).unwrap();
}

fn steps(path: &std::path::Path, range: std::ops::RangeInclusive<u64>) {
    use mltriage_probes::metrics::tfevents::encode::{record, scalar_event, Style};
    let mut out = Vec::new();
    for s in range {
        let loss = 2.0 - s as f64 / 100.0;
        record(
            &mut out,
            &scalar_event(
                s as i64,
                1.7e9 + s as f64,
                b"train/loss",
                loss,
                Style::SimpleValue,
            ),
        );
    }
    append(path, &out);
}

/// Wait (bounded) for a report that satisfies `want`, applying every report to the app.
fn wait_for(
    rx: &std::sync::mpsc::Receiver<FollowUpdate>,
    app: &mut mltriage::app::App,
    want: impl Fn(&FollowUpdate) -> bool,
) -> FollowUpdate {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let up = rx.recv_timeout(left).expect("a follower report");
        let ok = want(&up);
        app.on_event(Event::Follow(Box::new(up.clone())));
        if ok {
            return up;
        }
    }
}

#[test]
fn the_follower_thread_reports_a_growing_run() {
    let d = tempfile::tempdir().unwrap();
    let ev = d.path().join("events.out.tfevents.1.host");
    steps(&ev, 1..=10);
    let (tx, rx) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (stop, path) = (stop.clone(), d.path().to_path_buf());
        std::thread::spawn(move || {
            follow_loop(
                catalog(),
                path,
                Default::default(),
                mltriage_probes::device::Compute::select(
                    mltriage_probes::device::DeviceRequest::Cpu,
                ),
                Duration::from_millis(100),
                stop,
                |up| tx.send(up).is_ok(),
            )
        })
    };
    let mut app = app();
    let first = wait_for(&rx, &mut app, |_| true);
    assert_eq!(first.last_step, Some(10));
    assert!(
        first.summary.is_none(),
        "the attach job has the first series"
    );
    assert!(!app.follow.live);
    steps(&ev, 11..=20);
    let up = wait_for(&rx, &mut app, |u| {
        u.summary.is_some() && u.last_step == Some(20)
    });
    assert!(up.live);
    let loss = app
        .run
        .summary
        .as_ref()
        .unwrap()
        .series_for("loss")
        .unwrap();
    assert_eq!(loss.points.len(), 20);
    assert!(app
        .follow
        .header
        .as_deref()
        .unwrap()
        .starts_with("following · step 20"));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    drop(rx);
    thread.join().unwrap();
}

/// A run finished long before it was opened is not "followed" in the header (no "no new step
/// for 6 h" on every screen of an old run); the moment it is written again, the header shows.
#[test]
fn a_run_finished_long_ago_shows_no_follow_header_until_it_is_written() {
    let app = app_with(Some(fixture("hf_trainer_run")), Theme::default(), None);
    let mut h = headless(app, scripted(None));
    let t0 = Instant::now();
    h.app.on_follow(
        FollowUpdate {
            last_step: Some(300),
            age_at_start: Some(Duration::from_secs(6 * 3600)),
            ..Default::default()
        },
        t0,
    );
    assert!(!header(&h.app).contains("follow"), "{}", header(&h.app));
    h.app.on_follow(
        FollowUpdate {
            summary: Some(summary_to(310)),
            last_step: Some(310),
            live: true,
            ..Default::default()
        },
        t0 + Duration::from_secs(2),
    );
    let top = header(&h.app);
    assert!(top.contains("following · step 310"), "{top}");
}

/// The findings pane marks what changed since the user last looked (•), and a key on the
/// pane clears the marks.
#[test]
fn changed_findings_are_marked_until_the_user_looks() {
    let app = app_with(Some(fixture("hf_trainer_run")), Theme::default(), None);
    let mut h = headless(app, scripted(None));
    let t0 = Instant::now();
    let a = finding(
        "S3.2",
        "grad_norm_spikes",
        Status::Fail,
        "fail",
        "4 spikes",
        "≤ 1",
    );
    let b = finding(
        "S4.1",
        "loss_trend",
        Status::Warn,
        "slow",
        "EMA flat",
        "falling",
    );
    let ev = |f: &mltriage::findings::Finding| FindingEvent {
        change: Change::New,
        finding: f.clone(),
        status: f.status,
        previous: None,
        step: Some(400),
    };
    h.app.on_follow(
        FollowUpdate {
            summary: Some(summary_to(400)),
            findings: Some(vec![a.clone(), b.clone()]),
            events: vec![ev(&a), ev(&b)],
            last_step: Some(400),
            live: true,
            ..Default::default()
        },
        t0,
    );
    let marked = |h: &mltriage::app::Headless| {
        screen_text(&h.app, 100, 30)
            .lines()
            .any(|l| l.contains("•") && l.contains("S4.1"))
    };
    assert!(marked(&h), "{}", screen_text(&h.app, 100, 30));
    h.key(KeyCode::Char('j'));
    assert!(!marked(&h), "{}", screen_text(&h.app, 100, 30));
}
