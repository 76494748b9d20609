//! The TUI's run header names the device the probes compute on and what the binary was built
//! with, as `check`'s header does.

mod tui_common;

use mltriage::look::theme::Theme;
use tui_common::{app_with, headless, screen_text, scripted};

#[test]
fn home_header_names_device_and_build() {
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let h = headless(a, scripted(None));
    let text = screen_text(&h.app, 200, 24);
    let build = if cfg!(feature = "cuda") {
        "cuda build"
    } else {
        "cpu-only build"
    };
    let line = text
        .lines()
        .find(|l| l.contains("series ·"))
        .unwrap_or_else(|| panic!("no run header in:\n{text}"));
    assert!(line.contains(&format!("· cpu ({build}")), "{line}");
}

/// The run line carries the run profile of a live run, and `:fact` re-reads the run: the
/// profile and the findings follow the fact.
#[test]
fn home_header_shows_the_profile_and_a_fact_rejudges_the_run() {
    use crossterm::event::KeyCode;
    use mltriage::triage::jobs::LiveRunner;
    use tui_common::{catalog, fixture};
    let run = fixture("lm_healthy_tb");
    if !run.is_dir() {
        eprintln!("note: shared fixtures absent; skipped");
        return;
    }
    let a = app_with(Some(run.clone()), Theme::default(), None);
    let mut h = headless(a, Box::new(LiveRunner::new(catalog(), Some(run))));
    let text = screen_text(&h.app, 400, 24);
    assert!(
        text.contains("Language-model training from scratch"),
        "{text}"
    );
    h.key(KeyCode::Char(':'));
    for c in "fact phase=dpo".chars() {
        h.key(KeyCode::Char(c));
    }
    h.key(KeyCode::Enter);
    let text = screen_text(&h.app, 400, 24);
    assert!(text.contains("DPO-family preference tuning"), "{text}");
    // Re-judged under the new profile: the LM-only probes no longer apply.
    let init = h
        .app
        .run
        .findings
        .iter()
        .find(|f| f.probe == "init_loss")
        .expect("init_loss finding");
    assert!(
        init.message.starts_with("not applicable"),
        "{}",
        init.message
    );
}
