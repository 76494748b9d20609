//! The footer: the current screen's main keys (from the live key map, so rebinding shows).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::app::{Action, App, Overlay, Screen};

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let k = |a: Action| app.keymap.key_for(a);
    let items: Vec<(String, &str)> = match (&app.overlay, &app.screen) {
        (Overlay::Help { .. }, _) => vec![("type".into(), "filter"), ("Esc".into(), "close")],
        (Overlay::FirstRun, _) => vec![
            ("Esc".into(), "close"),
            ("other keys".into(), "close and act"),
            (k(Action::Search), "search"),
            (k(Action::Help), "help"),
        ],
        (Overlay::Palette { .. }, _) => vec![
            ("Tab".into(), "complete"),
            ("Enter".into(), "run"),
            ("Esc".into(), "close"),
        ],
        (_, Screen::Home) => vec![
            (k(Action::Search), "search"),
            (k(Action::Select), "open"),
            (k(Action::WalkFrom), "walk from here"),
            (k(Action::NextPane), "pane"),
            (format!("{}/{}", k(Action::Down), k(Action::Up)), "move"),
            (k(Action::RunScreen), "run"),
            (k(Action::Palette), "cmd"),
            (k(Action::Help), "help"),
            (k(Action::Quit), "quit"),
        ],
        (_, Screen::Search) => vec![
            ("type".into(), "query"),
            ("Enter".into(), "open"),
            ("ctrl-w".into(), "walk from here"),
            ("↑↓".into(), "move"),
            (
                "Tab".into(),
                if app.search.fuzzy {
                    "full-text"
                } else {
                    "fuzzy"
                },
            ),
            ("ctrl-d".into(), "domain"),
            ("Esc".into(), "back"),
        ],
        (_, Screen::Entry(_)) => vec![
            (k(Action::WalkFrom), "walk from here"),
            (k(Action::Check), "check this"),
            (
                k(Action::Select),
                if app.entry.pane == 2 {
                    "walk finding"
                } else {
                    "fix/follow"
                },
            ),
            (k(Action::NextPane), "pane"),
            (format!("{}/{}", k(Action::Down), k(Action::Up)), "scroll"),
            (k(Action::Back), "back"),
            (k(Action::Help), "help"),
        ],
        (_, Screen::Walk) => {
            let leaf = app.walk.as_ref().is_some_and(|w| w.walk.is_leaf());
            if leaf {
                vec![
                    (format!("{}/{}", k(Action::Down), k(Action::Up)), "scroll"),
                    (k(Action::ExportMd), "export md"),
                    (k(Action::ExportJson), "json"),
                    (k(Action::Select), "entry"),
                    (k(Action::WalkBack), "back"),
                    (k(Action::Back), "leave"),
                    (k(Action::Help), "help"),
                ]
            } else {
                let leads = app
                    .walk
                    .as_ref()
                    .is_some_and(|w| w.lead.is_some() || w.run_disagrees().is_some());
                let mut v = vec![
                    (k(Action::Select), "confirm"),
                    (k(Action::Override), "override"),
                    (k(Action::WalkBack), "back"),
                    (k(Action::NextPane), "path"),
                    ("Esc".into(), "cancel/leave"),
                    (k(Action::ExportMd), "export"),
                    (k(Action::Help), "help"),
                ];
                if leads {
                    v.insert(2, (k(Action::WalkFrom), "run leads"));
                }
                v
            }
        }
        (_, Screen::Run) => vec![
            (k(Action::NextPane), "pane"),
            (
                format!("{}/{}", k(Action::Down), k(Action::Up)),
                if app.run.pane == 2 { "tensor" } else { "move" },
            ),
            (k(Action::Select), "open"),
            (k(Action::WalkFrom), "walk from"),
            (k(Action::Series), "series"),
            (k(Action::Check), "re-check"),
            (k(Action::LogScale), "log scale"),
            (k(Action::Back), "back"),
            (k(Action::Help), "help"),
        ],
    };
    // Too wide for the terminal: drop the items just before the last two (help and quit, or
    // back and help), which must stay reachable at any width.
    let mut items = items;
    let width = |items: &[(String, &str)]| -> usize {
        items
            .iter()
            .map(|(k, w)| k.chars().count() + w.chars().count() + 3)
            .sum()
    };
    while width(&items) > area.width as usize && items.len() > 3 {
        let at = items.len() - 3;
        items.remove(at);
    }
    let mut spans = Vec::new();
    for (key, what) in items {
        spans.push(Span::styled(key, t.key()));
        spans.push(Span::styled(format!(" {what}  "), t.dim()));
    }
    Line::from(spans).render(area, buf);
}
