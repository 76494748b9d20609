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
