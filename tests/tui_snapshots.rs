//! One insta snapshot per screen on an 80×24 `TestBackend`, plus the small-terminal notice
//! and renders at extreme sizes that must never panic.

mod tui_common;

use crossterm::event::KeyCode;
use mltriage::look::theme::Theme;
use mltriage_probes::probe::Status;
use tui_common::*;

/// The tensor pass reports progress process-wide and the header shows it: screens rendered
/// while another test's pass runs would show its progress. These tests take turns.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn home_screen_without_a_run() {
    let _serial = serial();
    let a = app();
    insta::assert_snapshot!("home", render(&a, 80, 24).backend());
}

#[test]
fn home_screen_with_a_run_lists_summary_and_findings() {
    let _serial = serial();
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let h = headless(a, scripted(None));
    insta::assert_snapshot!("home_with_run", render(&h.app, 80, 24).backend());
}

#[test]
fn search_screen_shows_results_for_map_zero() {
    let _serial = serial();
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('/')).typ("mAP zero");
    insta::assert_snapshot!("search_map_zero", render(&h.app, 80, 24).backend());
}

#[test]
fn entry_screen_v3() {
    let _serial = serial();
    let mut a = app();
    a.open_entry("V3");
    insta::assert_snapshot!("entry_v3", render(&a, 80, 24).backend());
}

#[test]
fn help_overlay() {
    let _serial = serial();
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char('?'));
    insta::assert_snapshot!("help", render(&h.app, 80, 24).backend());
}

#[test]
fn walk_at_a_numeric_node_with_a_measured_value() {
    let _serial = serial();
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let mut h = headless(
        a,
        scripted(Some((
            "high",
            Status::Fail,
            "loss0 = 9.10",
            "ln V = 6.24 ± 0.5",
        ))),
    );
    h.key(KeyCode::Char(':'))
        .typ("walk stability")
        .key(KeyCode::Enter);
    insta::assert_snapshot!("walk_node", render(&h.app, 80, 24).backend());
}

#[test]
fn run_screen_charts_and_findings() {
    let _serial = serial();
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let mut h = headless(a, scripted(None));
    h.key(KeyCode::Char('r'));
    insta::assert_snapshot!("run", render(&h.app, 80, 24).backend());
}

#[test]
fn too_small_notice() {
    let _serial = serial();
    let a = app();
    insta::assert_snapshot!("too_small", render(&a, 30, 8).backend());
}

#[test]
fn palette_overlay() {
    let _serial = serial();
    let mut h = headless(app(), scripted(None));
    h.key(KeyCode::Char(':')).typ("wa");
    insta::assert_snapshot!("palette", render(&h.app, 80, 24).backend());
}

#[test]
fn every_screen_renders_at_any_size_without_panicking() {
    let _serial = serial();
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let mut h = headless(a, scripted(Some(("high", Status::Fail, "9.1", "6.2"))));
    let sizes = [
        (1, 1),
        (2, 1),
        (20, 6),
        (39, 9),
        (40, 10),
        (80, 24),
        (200, 60),
        (1, 60),
        (300, 2),
    ];
    let check = |h: &mltriage::app::Headless| {
        for (w, ht) in sizes {
            let _ = render(&h.app, w, ht);
        }
    };
    check(&h);
    h.key(KeyCode::Char('/')).typ("nan loss");
    check(&h);
    h.key(KeyCode::Enter);
    check(&h);
    h.key(KeyCode::Tab).key(KeyCode::Enter);
    check(&h);
    h.key(KeyCode::Char('?'));
    check(&h);
    h.key(KeyCode::Esc)
        .key(KeyCode::Char(':'))
        .typ("walk stability");
    check(&h);
    h.key(KeyCode::Enter);
    check(&h);
    h.key(KeyCode::Char('o'));
    check(&h);
    h.key(KeyCode::Char('r'));
    check(&h);
}

#[test]
fn ascii_mode_draws_only_ascii() {
    let _serial = serial();
    let theme = Theme {
        color: false,
        ascii: true,
    };
    let a = app_with(Some("fixtures/scripted_run".into()), theme, None);
    let mut h = headless(a, scripted(Some(("high", Status::Fail, "9.1", "6.2"))));
    for keys in [
        &[][..],
        &[KeyCode::Char('r')][..],
        &[KeyCode::Esc, KeyCode::Char('/')][..],
    ] {
        for k in keys {
            h.key(*k);
        }
        let text = screen_text(&h.app, 80, 24);
        assert!(text.is_ascii(), "non-ASCII cell in:\n{text}");
    }
    let text = screen_text(&h.app, 80, 24);
    assert!(text.is_ascii());
}

#[test]
fn no_color_theme_uses_no_colours_but_keeps_marks() {
    let _serial = serial();
    use ratatui::style::Color;
    let theme = Theme {
        color: false,
        ascii: false,
    };
    let a = app_with(Some("fixtures/scripted_run".into()), theme, None);
    let h = headless(a, scripted(None));
    let t = render(&h.app, 80, 24);
    let buf = t.backend().buffer();
    assert!(buf
        .content
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    let text = screen_text(&h.app, 80, 24);
    assert!(text.contains("✗ fail"), "{text}");
}

#[test]
fn run_screen_weights_histogram_on_lm_bad_init() {
    let _serial = serial();
    use mltriage::triage::jobs::LiveRunner;
    let run = fixture("lm_bad_init");
    let a = app_with(Some(run.clone()), Theme::default(), None);
    let mut h = headless(a, Box::new(LiveRunner::new(catalog(), Some(run))));
    h.key(KeyCode::Char('r'))
        .key(KeyCode::Tab)
        .key(KeyCode::Tab);
    assert_eq!(h.app.run.pane, 2);
    let hist = h.app.run.hist.as_ref().expect("the histogram was computed");
    // The largest tensor is shown first.
    assert_eq!(hist.tensor, "transformer.wte.weight");
    assert_eq!(hist.sides.len(), 2, "init and now");
    insta::assert_snapshot!("run_weights_lm_bad_init", render(&h.app, 80, 24).backend());
    // Wide: init and now side by side, every statistic on one line.
    let text = screen_text(&h.app, 200, 60);
    for want in [
        "init @0 ",
        "now @300",
        "F32 [512, 64]",
        "zero 0.0%",
        "non-finite 0",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
}
