//! Flow tests: drive the app with key events through [`Headless`], with a synchronous probe
//! runner (the real one on a fixture run, or a scripted one), and check what the screens say.

mod tui_common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mltriage::app::worker::Worker;
use mltriage::app::{Event, Screen};
use mltriage::look::theme::Theme;
use mltriage::triage::jobs::{JobKind, JobOutput, JobRequest, LiveRunner, ProbeRunner};
use mltriage_probes::probe::Status;
use tui_common::*;

#[test]
fn search_map_zero_opens_v3_and_enter_shows_its_fix() {
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('/')).typ("mAP zero");
    assert_eq!(
        h.app.search.results.first().map(|r| r.id.as_str()),
        Some("V3")
    );
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Entry("V3".into()));
    h.key(KeyCode::Enter);
    let text = screen_text(&h.app, 80, 24);
    let cat = catalog();
    let fix = &cat.entry("V3").unwrap().fix;
    let first_words: String = fix.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    assert!(text.contains("Fix"), "{text}");
    assert!(
        text.contains(&first_words),
        "fix text {first_words:?} not on screen:\n{text}"
    );
    // Esc goes back to the results, then home.
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Search);
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Home);
}

#[test]
fn fuzzy_filter_and_domain_filter_narrow_results() {
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('/')).typ("v3");
    h.key(KeyCode::Tab);
    assert!(h.app.search.fuzzy);
    assert_eq!(
        h.app.search.results.first().map(|r| r.id.as_str()),
        Some("V3")
    );
    h.key(KeyCode::Tab);
    h.key(KeyCode::Backspace)
        .key(KeyCode::Backspace)
        .typ("loss nan");
    // ctrl-d cycles the domain filter: stability first.
    h.ctrl('d');
    assert_eq!(
        h.app.search.domain,
        Some(mltriage::catalog::Domain::Stability)
    );
    let cat = catalog();
    assert!(h
        .app
        .search
        .results
        .iter()
        .all(|r| cat.entry(&r.id).unwrap().domain == mltriage::catalog::Domain::Stability));
}

#[test]
fn see_also_links_are_followable() {
    let mut h = headless(app(), scripted(None));
    h.app.open_entry("V3");
    let first = h.app.see_also("V3")[0].clone();
    h.key(KeyCode::Tab).key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Entry(first));
    h.key(KeyCode::Esc);
    assert_eq!(h.app.screen, Screen::Entry("V3".into()));
}

#[test]
fn ctrl_c_quits_even_while_typing_and_q_types_in_search() {
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('/')).typ("q");
    assert!(!h.app.should_quit);
    assert_eq!(h.app.search.query, "q");
    h.ctrl('c');
    assert!(h.app.should_quit);
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('q'));
    assert!(h.app.should_quit);
}

#[test]
fn help_lists_keys_and_filters_by_typing() {
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('?'));
    let text = screen_text(&h.app, 80, 24);
    assert!(text.contains("search the catalog"), "{text}");
    h.typ("export");
    let text = screen_text(&h.app, 80, 24);
    assert!(text.contains("export the transcript as Markdown"));
    assert!(!text.contains("search the catalog"));
    h.key(KeyCode::Esc);
    assert_eq!(h.app.overlay, mltriage::app::Overlay::None);
}

#[test]
fn fixture_lm_bad_init_resolves() {
    let p = fixture("lm_bad_init");
    assert!(p.is_dir(), "{} missing", p.display());
}

/// The real runner on a real fixture: the walk either gets the probe's answer or `skip`
/// (probes not implemented yet) and the user can always pick branches down to a leaf.
#[test]
fn walk_stability_on_lm_bad_init_with_the_live_runner_reaches_a_leaf_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixture("lm_bad_init");
    let a = app_with(
        Some(run.clone()),
        Theme::default(),
        Some(dir.path().to_path_buf()),
    );
    let runner = LiveRunner::new(catalog(), Some(run));
    let mut h = headless(a, Box::new(runner));
    assert!(
        h.app.run.summary.is_some(),
        "run attached: {:?}",
        h.app.run.error
    );
    let summary = h.app.run.summary.clone().unwrap();
    assert!(summary.artifacts > 0);
    h.key(KeyCode::Char(':'))
        .typ("walk stability")
        .key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Walk);
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.current, "q1_1");
    let p = w
        .walk
        .proposal
        .clone()
        .expect("the probe (or its skip) proposes a branch");
    assert!(w.job.is_none());
    // Follow proposals; where one leads nowhere, override with the first branch.
    for _ in 0..40 {
        if h.app.walk.as_ref().unwrap().walk.is_leaf() {
            break;
        }
        let before = h.app.walk.as_ref().unwrap().walk.path.len();
        h.key(KeyCode::Enter);
        if h.app.walk.as_ref().unwrap().walk.path.len() == before {
            h.key(KeyCode::Char('1'));
        }
    }
    let w = &h.app.walk.as_ref().unwrap().walk;
    assert!(w.is_leaf(), "stuck at {} after {:?}", w.current, p);
    assert_eq!(w.path[0].source.as_str(), "probe");
    // Export twice: never overwrite.
    h.key(KeyCode::Char('e'));
    h.key(KeyCode::Char('e'));
    h.key(KeyCode::Char('E'));
    let md1 = dir.path().join("mltriage-walk-stability.md");
    let md2 = dir.path().join("mltriage-walk-stability-1.md");
    let js = dir.path().join("mltriage-walk-stability.json");
    assert!(md1.is_file() && md2.is_file() && js.is_file());
    let md = std::fs::read_to_string(&md1).unwrap();
    assert!(md.contains("| 1 | q1_1 |"), "{md}");
    assert!(md.contains("**Fix:**"), "{md}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&js).unwrap()).unwrap();
    assert_eq!(v["tree"], "stability");
    assert_eq!(v["path"][0]["id"], "q1_1");
    assert!(v["conclusion"]["fix"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    let status = h.app.status.clone().unwrap().0;
    assert!(status.contains("mltriage-walk-stability.json"), "{status}");
}

#[test]
fn walk_proposal_from_a_probe_can_be_confirmed_overridden_and_undone() {
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let mut h = headless(
        a,
        scripted(Some(("high", Status::Fail, "loss0 = 9.10", "6.24 ± 0.5"))),
    );
    h.app.start_walk("stability");
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    let p = w.walk.proposal.as_ref().unwrap();
    assert_eq!(p.answer, "high");
    let proposed = p.next.clone();
    // Override: pick `pass` instead.
    h.key(KeyCode::Char('o'));
    let choices = h.app.walk.as_ref().unwrap().walk.choices();
    let pass = choices.iter().position(|(l, _)| l == "pass").unwrap();
    h.key(KeyCode::Char('g'));
    for _ in 0..pass {
        h.key(KeyCode::Char('j'));
    }
    h.key(KeyCode::Enter);
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.path[0].answer, "pass");
    assert_eq!(w.walk.path[0].source.as_str(), "user");
    assert_eq!(w.walk.path[0].measured, "loss0 = 9.10");
    // Back, then confirm the probe's proposal.
    h.key(KeyCode::Char('b'));
    assert_eq!(h.app.walk.as_ref().unwrap().walk.current, "q1_1");
    h.key(KeyCode::Enter);
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.current, proposed);
    assert_eq!(w.walk.path[0].source.as_str(), "probe");
}

#[test]
fn esc_cancels_a_running_probe_and_offers_the_branches() {
    let mut a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let _ = a.take_effects();
    a.start_walk("stability");
    assert!(a.walk.as_ref().unwrap().job.is_some());
    let text = screen_text(&a, 80, 24);
    assert!(text.contains("probe running"), "{text}");
    a.on_event(Event::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    let w = a.walk.as_ref().unwrap();
    assert!(w.job.is_none());
    assert_eq!(w.walk.proposal.as_ref().unwrap().answer, "skip");
    assert!(a
        .take_effects()
        .iter()
        .any(|e| matches!(e, mltriage::app::Effect::Cancel)));
    assert_eq!(a.screen, Screen::Walk);
}

#[test]
fn palette_runs_commands() {
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char(':')).typ("show o9").key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Entry("O9".into()));
    h.key(KeyCode::Char(':')).typ("bogus").key(KeyCode::Enter);
    assert!(h.app.status.as_ref().unwrap().1);
    h.key(KeyCode::Char(':'))
        .typ("fact vocab_size=512")
        .key(KeyCode::Enter);
    assert_eq!(h.app.facts.get("vocab_size"), Some("512"));
    h.key(KeyCode::Char(':')).typ("quit").key(KeyCode::Enter);
    assert!(h.app.should_quit);
}

#[test]
fn check_this_runs_the_entry_probes_on_the_attached_run() {
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let mut h = headless(a, scripted(None));
    h.app.open_entry("S1.1");
    h.key(KeyCode::Char('c'));
    assert!(h.app.entry.checked.is_some() || h.app.status.as_ref().is_some_and(|s| s.1));
    // Without a run, "c" explains why.
    let mut h = headless(app(), scripted(None));
    h.app.open_entry("S1.1");
    h.key(KeyCode::Char('c'));
    assert!(h.app.status.as_ref().unwrap().0.contains("no run attached"));
}

/// A slow runner for the worker test: each job sleeps, reporting progress.
struct Slow;
impl ProbeRunner for Slow {
    fn run(
        &mut self,
        _job: &JobRequest,
        progress: &mut dyn FnMut(u8),
        cancel: &AtomicBool,
    ) -> JobOutput {
        for i in 0..10 {
            if cancel.load(Ordering::Relaxed) {
                return JobOutput::Cancelled;
            }
            std::thread::sleep(Duration::from_millis(20));
            progress((i + 1) * 10);
        }
        JobOutput::Findings(Vec::new())
    }
}

#[test]
fn worker_runs_one_job_while_the_newest_waits_and_cancels_on_request() {
    let (tx, rx) = mpsc::channel();
    let w = Worker::spawn(Box::new(Slow), tx);
    let job = |id| JobRequest {
        id,
        kind: JobKind::Check,
        facts: Default::default(),
    };
    w.submit(job(1));
    std::thread::sleep(Duration::from_millis(30));
    w.submit(job(2));
    w.submit(job(3)); // replaces 2
    let mut done = Vec::new();
    let mut progressed = false;
    while done.len() < 2 {
        match rx
            .recv_timeout(Duration::from_secs(5))
            .expect("worker answers")
        {
            Event::ProbeDone(id, _) => done.push(id),
            Event::ProbeProgress(..) => progressed = true,
            _ => {}
        }
    }
    assert_eq!(done, vec![1, 3]);
    assert!(progressed);
    w.submit(job(4));
    std::thread::sleep(Duration::from_millis(30));
    w.cancel();
    loop {
        if let Event::ProbeDone(id, out) = rx.recv_timeout(Duration::from_secs(5)).unwrap() {
            assert_eq!(id, 4);
            assert!(matches!(out, JobOutput::Cancelled));
            break;
        }
    }
}

/// A run whose checkpoints hold odd tensors: zero-size, all-NaN, integer, bool, ±inf.
fn odd_run() -> tempfile::TempDir {
    fn safetensors(path: &std::path::Path, tensors: &[(&str, &str, Vec<usize>, Vec<u8>)]) {
        let mut header = serde_json::Map::new();
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in tensors {
            let start = data.len();
            data.extend_from_slice(bytes);
            header.insert(
                name.to_string(),
                serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        let h = serde_json::to_vec(&serde_json::Value::Object(header)).unwrap();
        let mut out = (h.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(&h);
        out.extend_from_slice(&data);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, out).unwrap();
    }
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let dir = tempfile::tempdir().unwrap();
    let common = |scale: f32| {
        vec![
            ("empty", "F32", vec![0, 4], Vec::new()),
            ("nans", "F32", vec![4], f32s(&[f32::NAN; 4])),
            ("flags", "BOOL", vec![2], vec![0u8, 1]),
            (
                "w",
                "F32",
                vec![2, 2],
                f32s(&[-scale, f32::INFINITY, 0.0, scale]),
            ),
        ]
    };
    safetensors(
        &dir.path().join("checkpoint-0/model.safetensors"),
        &common(1.0),
    );
    let mut now = common(100.0);
    now.push((
        "ids",
        "I64",
        vec![3],
        [1i64, 2, 3].iter().flat_map(|x| x.to_le_bytes()).collect(),
    ));
    safetensors(&dir.path().join("checkpoint-5/model.safetensors"), &now);
    dir
}

#[test]
fn run_screen_lists_tensors_and_j_selects_one_whose_stats_show() {
    let run = fixture("lm_bad_init");
    let a = app_with(Some(run.clone()), Theme::default(), None);
    let mut h = headless(a, Box::new(LiveRunner::new(catalog(), Some(run))));
    h.key(KeyCode::Char('r'));
    let list = h.app.run.tensors.clone().expect("tensor list");
    assert_eq!((list.now_step, list.init_step), (Some(300), Some(0)));
    assert!(list.rows.iter().all(|r| r.in_now && r.in_init));
    let target = list
        .rows
        .iter()
        .position(|r| r.name == "transformer.h.0.ln_1.weight")
        .unwrap();
    // j/k move the tensor list only when its pane has the focus (Tab twice).
    h.key(KeyCode::Char('j'));
    assert_eq!(h.app.run.tensor_sel, list.default_sel());
    h.key(KeyCode::Tab)
        .key(KeyCode::Tab)
        .key(KeyCode::Char('g'));
    for _ in 0..target {
        h.key(KeyCode::Char('j'));
    }
    assert_eq!(
        h.app.run.selected_tensor(),
        Some("transformer.h.0.ln_1.weight")
    );
    let hist = h.app.run.hist.clone().unwrap();
    assert_eq!(hist.tensor, "transformer.h.0.ln_1.weight");
    let init = hist.sides[0].stats.as_ref().unwrap();
    assert_eq!(
        (hist.sides[0].label.as_str(), init.mean, init.std),
        ("init", 1.0, 0.0)
    );
    let now = hist.sides[1].stats.as_ref().unwrap();
    assert!(now.std > 0.0 && now.count == 64);
    let text = screen_text(&h.app, 80, 24);
    for want in [
        "transformer.h.0.ln_1.weight",
        "F32 [64] · 64 values",
        "init @0",
        "now @300",
        "mean 1.00",
        "std 0",
        "non-finite 0",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    // The help-free path: the footer says what j/k do here.
    assert!(text.contains("tensor"), "{text}");
}

#[test]
fn odd_tensors_render_at_every_size_without_panicking() {
    let dir = odd_run();
    let run = dir.path().to_path_buf();
    let a = app_with(Some(run.clone()), Theme::default(), None);
    let mut h = headless(a, Box::new(LiveRunner::new(catalog(), Some(run))));
    h.key(KeyCode::Char('r'))
        .key(KeyCode::Tab)
        .key(KeyCode::Tab);
    let list = h.app.run.tensors.clone().expect("tensor list");
    assert_eq!(list.rows.len(), 5, "{list:?}");
    let ids = list.rows.iter().find(|r| r.name == "ids").unwrap();
    assert!(ids.in_now && !ids.in_init);
    h.key(KeyCode::Char('g'));
    for i in 0..list.rows.len() {
        let name = list.rows[i].name.clone();
        let hist = h.app.run.hist.clone().unwrap();
        assert_eq!(hist.tensor, name);
        assert!(h.app.run.hist_error.is_none());
        for (w, ht) in [(80, 24), (40, 10), (59, 12), (200, 60), (120, 14)] {
            let _ = render(&h.app, w, ht);
        }
        let text = screen_text(&h.app, 200, 60);
        match name.as_str() {
            "empty" => assert!(text.contains("empty tensor"), "{text}"),
            "nans" => assert!(text.contains("non-finite 4 (nan 4, inf 0)"), "{text}"),
            "ids" => {
                assert!(text.contains("not in step 0"), "{text}");
                assert!(text.contains("I64 [3]"), "{text}");
            }
            "w" => {
                assert!(text.contains("non-finite 1 (nan 0, inf 1)"), "{text}");
                // One range for both: -100 .. 100.
                assert!(text.contains("-100.00"), "{text}");
            }
            _ => {}
        }
        h.key(KeyCode::Char('j'));
    }
}

#[test]
fn histogram_answers_to_superseded_requests_are_dropped() {
    let mut a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let _ = a.take_effects();
    let submitted = |a: &mut mltriage::app::App| -> Vec<JobRequest> {
        a.take_effects()
            .into_iter()
            .filter_map(|e| match e {
                mltriage::app::Effect::Submit(j) => Some(j),
                _ => None,
            })
            .collect()
    };
    let key = |a: &mut mltriage::app::App, c: KeyCode| {
        a.on_event(Event::Key(KeyEvent::new(c, KeyModifiers::NONE)));
    };
    key(&mut a, KeyCode::Char('r'));
    let jobs = submitted(&mut a);
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].kind, JobKind::Tensors);
    a.on_event(Event::ProbeDone(
        jobs[0].id,
        JobOutput::Tensors(Box::new(scripted_tensors())),
    ));
    let first = submitted(&mut a);
    assert!(
        matches!(&first[0].kind, JobKind::Histogram { tensor } if tensor == "model.embed.weight")
    );
    key(&mut a, KeyCode::Tab);
    key(&mut a, KeyCode::Tab);
    key(&mut a, KeyCode::Char('j'));
    let second = submitted(&mut a);
    assert!(
        matches!(&second[0].kind, JobKind::Histogram { tensor } if tensor == "model.norm.weight")
    );
    // The probe lane is untouched: the attach job still runs, both views are queued.
    assert!(a.job_running().is_some_and(|j| j.kind == JobKind::Attach));
    assert_eq!(a.jobs.iter().filter(|j| j.kind.is_view()).count(), 2);
    // The older answer arrives first and is dropped; the newest is shown.
    a.on_event(Event::ProbeDone(
        first[0].id,
        JobOutput::Histogram(Box::new(scripted_hist("model.embed.weight").unwrap())),
    ));
    assert!(a.run.hist.is_none());
    a.on_event(Event::ProbeDone(
        second[0].id,
        JobOutput::Histogram(Box::new(scripted_hist("model.norm.weight").unwrap())),
    ));
    assert_eq!(a.run.hist.as_ref().unwrap().tensor, "model.norm.weight");
    let text = screen_text(&a, 80, 24);
    assert!(text.contains("non-finite 8 (nan 8, inf 0)"), "{text}");
}

#[test]
fn user_facts_show_on_the_home_summary_line() {
    let mut facts = mltriage_probes::facts::Facts::new();
    facts.set_user("vocab_size", "512");
    let a = mltriage::app::App::new(
        catalog(),
        index(),
        mltriage::app::Keymap::default(),
        mltriage::app::AppOptions {
            run: Some("fixtures/scripted_run".into()),
            facts,
            theme: Theme::default(),
            export_dir: None,
        },
    );
    let h = headless(a, scripted(None));
    let text = screen_text(&h.app, 80, 24);
    assert!(text.contains("facts vocab_size=512"), "{text}");
    // The probes get them too.
    assert_eq!(h.app.all_facts().get("vocab_size"), Some("512"));
}

#[test]
fn live_runner_computes_on_the_requested_device() {
    use mltriage_probes::device::DeviceRequest;
    let dir = tempfile::tempdir().unwrap();
    let mut r =
        LiveRunner::new(catalog(), Some(dir.path().to_path_buf())).with_device(DeviceRequest::Cpu);
    let job = JobRequest {
        id: 1,
        kind: JobKind::Attach,
        facts: Default::default(),
    };
    let out = r.run(&job, &mut |_| {}, &AtomicBool::new(false));
    match out {
        JobOutput::Attached(s, _) => assert_eq!(s.device, "cpu"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_huge_paste_searches_once_and_the_query_is_capped() {
    // Bracketed paste: one event for 100 kB of text (a traceback with newlines).
    let mut a = app();
    a.on_event(Event::Key(KeyEvent::new(
        KeyCode::Char('/'),
        KeyModifiers::NONE,
    )));
    assert_eq!(a.screen, Screen::Search);
    let before = a.search.runs;
    let text = "CUDA error: device-side assert triggered\n".repeat(2500);
    a.on_events(vec![Event::Paste(text)]);
    assert_eq!(a.search.runs - before, 1, "one search for one paste");
    assert_eq!(
        a.search.query.chars().count(),
        mltriage::app::MAX_QUERY_CHARS
    );
    assert!(!a.search.query.contains('\n'));
    // Without bracketed paste the same text arrives as 100k keys, drained as one batch: one
    // search, not one per key; a key that acts on the results (Enter) sees them fresh.
    let mut a = app();
    a.on_event(Event::Key(KeyEvent::new(
        KeyCode::Char('/'),
        KeyModifiers::NONE,
    )));
    let before = a.search.runs;
    let mut batch: Vec<Event> = "mAP zero "
        .repeat(11_000)
        .chars()
        .map(|c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)))
        .collect();
    batch.push(Event::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)));
    a.on_events(batch);
    assert!(
        a.search.runs - before <= 2,
        "{} searches",
        a.search.runs - before
    );
    assert!(!a.search.results.is_empty());
    // A paste on the home screen opens the search with it.
    let mut a = app();
    a.on_events(vec![Event::Paste("mAP is zero".into())]);
    assert_eq!(a.screen, Screen::Search);
    assert_eq!(a.search.results.first().map(|r| r.id.as_str()), Some("V3"));
}

// ---- issue 30: words on the search screen and the first-run overlay -----------------------

#[test]
fn fuzzy_empty_result_does_not_offer_fuzzy_and_a_kept_query_says_ctrl_u() {
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('/')).typ("qqqzzzxxx");
    h.key(KeyCode::Tab);
    assert!(h.app.search.fuzzy);
    let s = screen_text(&h.app, 100, 24);
    assert!(!s.contains("Tab for the fuzzy"), "{s}");
    assert!(s.contains("Tab for the full-text"), "{s}");
    // Leave and come back with `/`: the old query is kept, and the status says ctrl-u.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('/'));
    let st = h.app.status.clone().unwrap_or_default().0;
    assert!(st.contains("ctrl-u clears"), "{st}");
}

#[test]
fn first_run_overlay_says_esc_closes_and_other_keys_act() {
    let a = app();
    let s = screen_text(&a, 100, 30);
    assert!(s.contains("Esc closes this"), "{s}");
    assert!(!s.contains("any key closes"), "{s}");
}

#[test]
fn a_single_config_file_says_what_was_given_in_the_header() {
    let cfg = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/field/hf_healthy/checkpoint-300/config.json"
    ));
    let a = app_with(Some(cfg.clone()), Theme::default(), None);
    let mut h = headless(a, Box::new(LiveRunner::new(catalog(), Some(cfg))));
    h.settle();
    let s = screen_text(&h.app, 200, 24);
    assert!(!s.contains("steps ≤ ?"), "{s}");
    assert!(s.contains("a single file"), "{s}");
}
