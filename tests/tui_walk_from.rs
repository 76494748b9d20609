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
    assert!(s.contains("band ln V = 6.24"), "{s}");
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
