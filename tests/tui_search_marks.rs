//! With a run attached, search hits carry the run's mark for their entry (✗ fail, ! warn,
//! ✓ pass; ASCII X ! v), entries that fail or warn rank first, and opening one shows the
//! run's verdict for it without pressing `c`.

mod tui_common;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mltriage::app::App;
use mltriage::look::theme::Theme;
use mltriage_probes::probe::Status;
use tui_common::{app_with, finding, screen_text};

fn key(app: &mut App, c: KeyCode) {
    app.on_key(KeyEvent::new(c, KeyModifiers::NONE));
}

fn search(app: &mut App, q: &str) {
    key(app, KeyCode::Char('/'));
    for c in q.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// An app whose attached run fails O7, warns on V5 and passes P1 (all hits for the query).
fn app(theme: Theme) -> App {
    let mut app = app_with(None, theme, None);
    app.run.findings = vec![
        finding("O7", "lr_range", Status::Fail, "", "lr 1e-6", "≥ 1e-4"),
        finding("V5", "seg_ignore", Status::Warn, "", "ignore 255", "set"),
        finding("P1", "fp16_overflow", Status::Pass, "", "finite", "finite"),
    ];
    app
}

/// The row (line index) of the first screen line holding `needle`.
fn row(screen: &str, needle: &str) -> usize {
    screen
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not on screen:\n{screen}"))
}

#[test]
fn hits_carry_the_runs_marks_and_failing_entries_rank_first() {
    let mut plain = tui_common::app();
    search(&mut plain, "loss is nan");
    let ids: Vec<String> = plain.search.results.iter().map(|r| r.id.clone()).collect();
    for id in ["O7", "V5", "P1"] {
        assert!(ids.contains(&id.to_string()), "{id} not a hit: {ids:?}");
    }
    assert!(plain.search.results.iter().all(|r| r.mark.is_none()));

    let mut app = app(Theme::default());
    search(&mut app, "loss is nan");
    let got: Vec<&str> = app.search.results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(&got[..2], ["O7", "V5"], "fail, then warn, first: {got:?}");
    let s = screen_text(&app, 110, 40);
    assert!(row(&s, "✗ O7") < row(&s, "! V5"), "{s}");
    assert!(row(&s, "! V5") < row(&s, "✓ P1"), "{s}");
    // Hits the run did not judge keep their place after the judged ones, unmarked.
    let unjudged = got
        .iter()
        .find(|id| !["O7", "V5", "P1"].contains(id))
        .unwrap();
    assert!(!s.contains(&format!("✓ {unjudged} ")), "{s}");

    let mut ascii = app_ascii();
    search(&mut ascii, "loss is nan");
    let s = screen_text(&ascii, 110, 40);
    assert!(s.contains("X O7"), "{s}");
    assert!(s.contains("v P1"), "{s}");
}

fn app_ascii() -> App {
    app(Theme {
        ascii: true,
        ..Theme::default()
    })
}

#[test]
fn opening_a_hit_shows_the_runs_verdict_without_checking() {
    let mut app = app(Theme::default());
    search(&mut app, "loss is nan");
    key(&mut app, KeyCode::Enter);
    let checked = app
        .entry
        .checked
        .as_ref()
        .expect("the run's verdict is on the page");
    assert_eq!(checked.0, "O7");
    assert_eq!(checked.1[0].status, Status::Fail);
    let s = screen_text(&app, 110, 40);
    assert!(s.contains("lr 1e-6"), "{s}");
}

#[test]
fn no_confident_match_names_the_nearest_entries_and_offers_the_catalog() {
    let mut app = tui_common::app();
    search(
        &mut app,
        "how do I merge a lora adapter into the base model",
    );
    assert!(app.search.weak, "a usage question is not a confident match");
    assert!(
        !app.search.results.is_empty(),
        "the nearest entries are still listed"
    );
    let s = screen_text(&app, 110, 40);
    assert!(s.contains("no confident match"), "{s}");
    assert!(s.contains("browse the catalog"), "{s}");
    key(&mut app, KeyCode::Esc);
    assert!(screen_text(&app, 110, 40).contains("Catalog"));
}
