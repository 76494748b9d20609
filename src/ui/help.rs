//! The `?` overlay: every action with its keys and what it does, filtered by what is typed.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::{centered, pane, strings as S};
use crate::app::{Action, App};

/// (keys, description) rows of the help, after filtering.
pub fn help_rows(app: &App, filter: &str) -> Vec<(String, String)> {
    let f = filter.to_lowercase();
    let mut rows: Vec<(String, String)> = vec![("ctrl-c".into(), "quit, always".into())];
    for (a, name) in Action::ALL {
        let keys = app.keymap.keys_for(a);
        let keys = if keys.is_empty() {
            format!("({name})")
        } else {
            keys.join(" ")
        };
        rows.push((keys, S::action_help(name).to_string()));
    }
    rows.push((
        "1-9".into(),
        "walk: pick a branch / option by number".into(),
    ));
    rows.push((
        "typing".into(),
        "search: query; Tab fuzzy; ctrl-d domain; ↑↓ move".into(),
    ));
    rows.retain(|(k, d)| {
        f.is_empty() || k.to_lowercase().contains(&f) || d.to_lowercase().contains(&f)
    });
    rows
}

pub fn render(app: &App, filter: &str, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let rows = help_rows(app, filter);
    let w = area.width.saturating_sub(4).min(76);
    let h = area.height.saturating_sub(2).min(rows.len() as u16 + 4);
    let r = centered(area, w, h);
    Clear.render(r, buf);
    let title = format!(
        "{} — {}: {}_  (Esc closes)",
        S::HELP,
        S::HELP_FILTER,
        filter
    );
    let block = pane(app, &title, true);
    let inner = block.inner(r);
    block.render(r, buf);
    let lines: Vec<Line> = rows
        .into_iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(format!("{k:<16}"), t.key()),
                Span::raw(d),
            ])
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}
