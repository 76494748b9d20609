//! The used-by path in the TUI, with the real probes on fixture runs: "walk from here"
//! starts at the symptom's question with the route above collapsed; the walk screen draws
//! the statistic that answered (a series, a tensor histogram, a batch's rows); "check this"
//! puts its findings at the top and Enter walks from one; the first-run hint.

mod tui_common;

use std::sync::Arc;

use crossterm::event::KeyCode;
use mltriage::app::{NodeChart, Overlay, Screen};
use mltriage::look::theme::Theme;
use mltriage::triage::jobs::LiveRunner;
use tui_common::*;

fn live(run: &str) -> mltriage::app::Headless {
    let path = fixture(run);
    let a = app_with(Some(path.clone()), Theme::default(), None);
    headless(
        a,
        Box::new(LiveRunner::new(Arc::clone(&catalog()), Some(path))),
    )
}

fn chart(h: &mltriage::app::Headless) -> Option<NodeChart> {
    h.app.walk.as_ref().and_then(|w| w.chart.clone())
}

#[test]
fn walk_chart_series_step0_loss_with_the_ln_v_band() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("S1.1");
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.current, "q1_1");
    assert!(matches!(
        chart(&h),
        Some(NodeChart::Series { metric: "loss", .. })
    ));
    let s = screen_text(&h.app, 80, 24);
    assert!(s.contains("6.2383 ± 0.5"), "the band from the probe: {s}");
    insta::assert_snapshot!("walk_chart_series", render(&h.app, 80, 24).backend());
}

#[test]
fn walk_chart_tensor_histogram_of_the_tensor_the_verdict_names() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("S5.1");
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.current, "q1_1_init");
    // The route above (q1_1) was answered by the run's init_loss finding.
    assert_eq!(w.walk.path.len(), 1);
    assert_eq!(w.walk.path[0].source.as_str(), "probe");
    let Some(NodeChart::Tensor { tensor }) = chart(&h) else {
        panic!("no tensor chart: {:?}", chart(&h));
    };
    assert!(h.app.walk.as_ref().unwrap().hist.is_some());
    let s = screen_text(&h.app, 80, 24);
    assert!(s.contains(&tensor), "{s}");
    insta::assert_snapshot!("walk_chart_tensor", render(&h.app, 80, 24).backend());
}

#[test]
fn walk_chart_batch_label_mask_fraction_per_row() {
    let mut h = live("llm_left_pad_sft");
    h.app.start_walk_from("L2");
    h.settle();
    assert!(
        matches!(chart(&h), Some(NodeChart::Batch { .. })),
        "{:?}",
        chart(&h)
    );
    let rows = h
        .app
        .walk
        .as_ref()
        .unwrap()
        .rows
        .clone()
        .expect("rows read");
    assert_eq!(rows.masked.len(), 6);
    assert!(rows.masked.iter().all(|m| (0.0..=1.0).contains(m)));
    let s = screen_text(&h.app, 80, 24);
    assert!(s.contains("label-mask fraction per row"), "{s}");
    assert!(s.contains("% masked"), "{s}");
    insta::assert_snapshot!("walk_chart_batch", render(&h.app, 80, 24).backend());
}

#[test]
fn route_above_is_collapsed_and_tab_expands_it() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("stability/q3_1");
    h.settle();
    let s = screen_text(&h.app, 80, 24);
    assert!(
        s.contains("step(s) above, on the way to stability/q3_1"),
        "{s}"
    );
    assert!(!s.contains("q1_2            "), "collapsed:\n{s}");
    h.key(KeyCode::Tab);
    let s = screen_text(&h.app, 100, 40);
    assert!(s.contains("Tab collapses") && s.contains("q1_2"), "{s}");
}

#[test]
fn check_this_shows_findings_at_the_top_and_enter_walks_from_one() {
    let mut h = live("lm_bad_init");
    h.app.open_entry("S5.1");
    h.key(KeyCode::Char('c'));
    let s = screen_text(&h.app, 80, 24);
    // The results are the first thing on the page, with their evidence.
    let top: String = s.lines().take(6).collect::<Vec<_>>().join("\n");
    assert!(top.contains("Check on the attached run"), "{s}");
    assert!(top.contains("init_weight_stats"), "{s}");
    assert!(s.contains("stability/q1_1_init"), "{s}");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.screen, Screen::Walk);
    assert_eq!(h.app.walk.as_ref().unwrap().walk.current, "q1_1_init");
}

#[test]
fn search_hit_walk_from_here_then_on_to_a_conclusion() {
    let mut h = live("lm_bad_init");
    h.key(KeyCode::Char('/')).typ("initial weight statistics");
    let hit = h.app.search.results.first().map(|r| r.id.clone());
    assert_eq!(hit.as_deref(), Some("S5.1"));
    h.ctrl('w');
    assert_eq!(h.app.screen, Screen::Walk);
    h.key(KeyCode::Enter);
    let w = h.app.walk.as_ref().unwrap();
    assert!(w.walk.is_leaf(), "at {}", w.walk.current);
    assert_eq!(w.walk.conclusion(&catalog()).unwrap().id, "S5.1");
}

#[test]
fn first_run_hint_without_a_run_and_findings_first_with_one() {
    let a = app();
    assert_eq!(a.overlay, Overlay::FirstRun);
    let s = screen_text(&a, 80, 24);
    for w in [
        "Getting started",
        "search a symptom",
        "walk from here",
        "mltriage RUN",
        "?",
    ] {
        assert!(s.contains(w), "{w}:\n{s}");
    }
    // Any key closes it and acts: `/` opens the search.
    let mut h = headless(a, scripted(None));
    h.key(KeyCode::Char('/'));
    assert_eq!(h.app.overlay, Overlay::None);
    assert_eq!(h.app.screen, Screen::Search);

    // On a run: the findings have the focus, the worst selected, `w` walks from it.
    let mut h = live("lm_bad_init");
    assert_eq!(h.app.overlay, Overlay::None);
    assert_eq!(h.app.home.pane, 2);
    assert_eq!(h.app.home.finding_sel, 0);
    assert_eq!(
        h.app.run.findings[0].status,
        mltriage_probes::probe::Status::Fail
    );
    let s = screen_text(&h.app, 80, 24);
    assert!(s.contains("walk from here"), "{s}");
    h.key(KeyCode::Char('w'));
    assert_eq!(h.app.screen, Screen::Walk);
}

#[test]
fn tiny_terminals_never_panic_on_the_new_screens() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("S5.1");
    h.settle();
    for (w, ht) in [(20, 6), (40, 10), (80, 24), (200, 60)] {
        let _ = screen_text(&h.app, w, ht);
    }
    let s = screen_text(&h.app, 20, 6);
    assert!(s.contains("too small"), "{s}");
}

// ---- issue 27: the walk follows the run; issue 30: words and sizes -----------------------

#[test]
fn route_steps_say_what_the_run_says_and_w_walks_where_it_leads() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("stability/q2_1");
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    // q1_1's own probe said high: the route row says so, never "pass".
    let first = &w.walk.path[0];
    assert_eq!(first.id, "q1_1");
    assert_eq!(first.answer, "high", "{first:?}");
    assert_eq!(first.via.as_deref(), Some("pass"));
    h.key(KeyCode::Tab);
    let s = screen_text(&h.app, 120, 40);
    assert!(s.contains("high (route takes pass)"), "{s}");
    assert!(!s.contains("q1_1            pass"), "{s}");
    // The walk offers to go where the run's answers lead, and `w` goes there.
    assert!(s.contains("the run's answers lead to"), "{s}");
    h.key(KeyCode::Char('w'));
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.current, "q1_1_init", "{:?}", w.walk.path);
    assert_eq!(w.walk.path[0].answer, "high");
    assert!(w.walk.path[0].via.is_none());
}

#[test]
fn override_choices_name_the_branch_in_words_not_node_ids() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("S5.1");
    h.settle();
    h.key(KeyCode::Char('o'));
    let s = screen_text(&h.app, 100, 40);
    assert!(s.contains("too_large → Init std far above"), "{s}");
    assert!(!s.contains("→ leaf_s5_1_large"), "{s}");
}

#[test]
fn a_warn_takes_its_own_warn_branch_never_a_fail_branch_or_the_pass_leaf() {
    let cat = catalog();
    let t = cat.tree("stability").unwrap();
    let n = t.nodes.iter().find(|n| n.id == "q1_1_init").unwrap();
    use mltriage::trees::branch_label;
    let label = branch_label(n, mltriage_probes::probe::Status::Warn, "too_large");
    assert_eq!(label, "warn_too_large");
    let to = &n.branches[&label];
    assert_ne!(
        to, &n.branches["too_large"],
        "a warn never reaches the fail leaf"
    );
    assert_ne!(
        to, &n.branches["pass"],
        "nor the pass leaf (zero the head bias)"
    );
}

#[test]
fn a_skipped_probe_whose_branch_is_a_leaf_stops_and_asks() {
    // q_late_spikes: skip → leaf_l6 ("add z-loss"). With nothing measured, Enter must not
    // conclude there.
    let a = app_with(
        Some(fixture("scripted_run")),
        mltriage::look::theme::Theme::default(),
        None,
    );
    let mut h = headless(a, scripted(None));
    h.settle();
    h.app.start_walk("convergence");
    let w = h.app.walk.as_mut().unwrap();
    w.walk.current = "q_late_spikes".into();
    h.key(KeyCode::Char('c'));
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.proposal.as_ref().unwrap().next, "leaf_l6");
    h.key(KeyCode::Enter);
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.current, "q_late_spikes", "concluded on a skip");
    assert!(w.override_open, "the branches are offered instead");
    let status = h.app.status.clone().unwrap_or_default().0;
    assert!(status.contains("does not conclude"), "{status}");
}

#[test]
fn a_fact_set_in_the_tui_asks_the_nodes_that_read_it_again() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("stability/q2_1");
    h.settle();
    assert_eq!(h.app.walk.as_ref().unwrap().walk.current, "q2_1");
    // init_loss (q1_1) reads vocab_size: setting it goes back there and asks again.
    h.app.run_command("fact vocab_size=50257");
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.current, "q1_1", "{:?}", w.walk.path);
    let p = w.walk.proposal.as_ref().expect("asked again");
    assert!(p.measured.contains("50257"), "{p:?}");
}

#[test]
fn help_has_a_key_on_every_row_and_fits_its_text_on_a_wide_terminal() {
    let mut h = live("lm_bad_init");
    h.key(KeyCode::Char('?'));
    let rows = mltriage::ui::help::help_rows(&h.app, "");
    assert!(
        rows.iter()
            .all(|(k, _)| !k.is_empty() && !k.starts_with('(')),
        "{rows:?}"
    );
    let s = screen_text(&h.app, 160, 50);
    for (_, d) in &rows {
        assert!(s.contains(d.as_str()), "cut: {d:?}\n{s}");
    }
}

#[test]
fn palette_typos_get_did_you_mean() {
    let mut h = live("lm_bad_init");
    h.app.run_command("wlak stability");
    let st = h.app.status.clone().unwrap().0;
    assert!(st.contains("did you mean :walk stability"), "{st}");
    h.app.run_command("walk stablity");
    let st = h.app.status.clone().unwrap().0;
    assert!(st.contains("did you mean :walk stability"), "{st}");
}

#[test]
fn small_terminals_keep_the_measured_value_and_the_quit_key() {
    let mut h = live("lm_bad_init");
    h.settle();
    let s = screen_text(&h.app, 80, 24);
    assert!(s.contains("q quit"), "{s}");
    assert!(
        s.contains("worst std 1.2113"),
        "finding row lost its value:\n{s}"
    );
    h.app.start_walk_from("S5.1");
    h.settle();
    let s = screen_text(&h.app, 40, 12);
    assert!(s.contains("worst std"), "walk node at 40×12:\n{s}");
}

#[test]
fn the_conclusion_scrolls_with_j_on_a_small_terminal() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("S5.1");
    h.settle();
    h.key(KeyCode::Enter);
    assert!(h.app.walk.as_ref().unwrap().walk.is_leaf());
    let before = screen_text(&h.app, 40, 12);
    h.key(KeyCode::Char('j')).key(KeyCode::Char('j'));
    let after = screen_text(&h.app, 40, 12);
    assert_ne!(before, after, "j did not scroll:\n{before}");
    assert!(before.contains("j/k scroll"), "{before}");
}

#[test]
fn exports_keep_skips_facts_overrides_and_never_invent_route_answers() {
    let cat = catalog();
    let mut h = live("lm_bad_init");
    h.app.run_command("fact from_scratch=true");
    h.app.start_walk_from("stability/q2_1");
    h.settle();
    // Override the probe's proposal at q2_1.
    let w = h.app.walk.as_mut().unwrap();
    let proposed = w.walk.proposal.clone().expect("a proposal");
    let other = w
        .walk
        .choices()
        .iter()
        .position(|(l, _)| *l != proposed.answer)
        .unwrap();
    w.walk.pick(&cat, other);
    let w = h.app.walk.as_ref().unwrap();
    let facts = vec![("from_scratch".to_string(), "true".to_string())];
    let md = mltriage::app::export::to_markdown(&cat, &w.walk, Some("run"), &facts);
    assert!(md.contains("from_scratch=true"), "{md}");
    assert!(
        md.contains(&format!("the run proposed {}", proposed.answer)),
        "{md}"
    );
    assert!(md.contains("high (route takes pass)"), "{md}");
    let js = mltriage::app::export::to_json(&cat, &w.walk, None, &facts);
    assert_eq!(js["facts"]["from_scratch"], "true");
    assert_eq!(js["path"][0]["answer"], "high");
    assert_eq!(js["path"][0]["via"], "pass");
    // A skipped probe keeps its reason in the transcript.
    let mut w2 = mltriage::trees::Walk::start(&cat, "stability").unwrap();
    w2.propose_skip("no loss series in this run");
    assert!(w2.confirm(&cat));
    assert!(
        w2.path[0].measured.contains("no loss series"),
        "{:?}",
        w2.path[0]
    );
}

#[test]
fn at_a_choice_the_option_the_runs_findings_lead_to_is_offered_and_w_takes_it() {
    let run = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/field/ultralytics_val_class_swapped"
    ));
    let a = app_with(Some(run.clone()), Theme::default(), None);
    let mut h = headless(a, Box::new(LiveRunner::new(catalog(), Some(run))));
    h.settle();
    h.app.start_walk("vision");
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    let lead = w.lead.clone().expect("the run's findings lead somewhere");
    assert_eq!(lead.option, "mAP is 0 while the loss falls");
    let s = screen_text(&h.app, 120, 40);
    assert!(s.contains("the run's answers lead to: mAP is 0"), "{s}");
    h.key(KeyCode::Char('w'));
    let w = h.app.walk.as_ref().unwrap();
    assert_eq!(w.walk.path[0].answer, "mAP is 0 while the loss falls");
}

/// A conclusion shows its evidence: what the run's failing probes measured for the entry, with
/// the tensors and steps they read (issue 30: "conclusions show their evidence").
#[test]
fn a_conclusion_shows_the_runs_evidence_for_its_entry() {
    let mut h = live("lm_bad_init");
    h.app.start_walk_from("S5.1");
    h.settle();
    h.key(KeyCode::Enter);
    h.settle();
    let w = h.app.walk.as_ref().unwrap();
    assert!(w.walk.is_leaf(), "at {}", w.walk.current);
    let want = h
        .app
        .run
        .findings
        .iter()
        .find(|f| f.id == "S5.1" && f.status == mltriage_probes::probe::Status::Fail)
        .expect("the run fails S5.1")
        .clone();
    let s = screen_text(&h.app, 120, 40);
    assert!(s.contains("Evidence in this run"), "{s}");
    assert!(s.contains(&want.probe), "{s}");
    let first_words: String = want.measured.chars().take(20).collect();
    assert!(s.contains(&first_words), "{first_words:?} in\n{s}");
}
