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
        // An action no key reaches (unbound, or reached another way: Tab toggles the fuzzy
        // filter while typing) has no row: every row names a key.
        let keys = app.keymap.keys_for(a);
        if keys.is_empty() {
            continue;
        }
        rows.push((keys.join(" "), S::action_help(name).to_string()));
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
    let title = format!(
        "{} — {}: {}_  (Esc closes)",
        S::HELP,
        S::HELP_FILTER,
        filter
    );
    // The box fits its content (the widest row, the title) and the terminal; a description
    // too long for it wraps under itself, never cut.
    let key_w = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 20)
        + 2;
    let content_w = rows
        .iter()
        .map(|(_, d)| key_w + d.chars().count())
        .chain(std::iter::once(title.chars().count() + 2))
        .max()
        .unwrap_or(40) as u16
        + 2;
    let w = content_w
        .min(area.width.saturating_sub(2))
        .max(20.min(area.width));
    let text_w = (w.saturating_sub(2) as usize).saturating_sub(key_w).max(8);
    let mut lines: Vec<Line> = Vec::new();
    for (k, d) in rows {
        let mut first = true;
        for part in wrap_words(&d, text_w) {
            let key = if first {
                format!("{k:<key_w$}")
            } else {
                " ".repeat(key_w)
            };
            first = false;
            lines.push(Line::from(vec![
                Span::styled(key, t.key()),
                Span::raw(part),
            ]));
        }
    }
    let h = area.height.saturating_sub(2).min(lines.len() as u16 + 2);
    let r = centered(area, w, h);
    Clear.render(r, buf);
    let block = pane(app, &title, true);
    let inner = block.inner(r);
    block.render(r, buf);
    Paragraph::new(lines).render(inner, buf);
}

/// Greedy word wrap of `text` to `width` columns (a word longer than that is split).
fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    for word in text.split_whitespace() {
        let cur = out.last_mut().expect("one line");
        let (cl, wl) = (cur.chars().count(), word.chars().count());
        if cl > 0 && cl + 1 + wl > width {
            out.push(String::new());
        }
        if let Some(cur) = out.last_mut().filter(|c| !c.is_empty()) {
            cur.push(' ');
        }
        let mut rest: Vec<char> = word.chars().collect();
        while rest.len() > width {
            let head: String = rest.drain(..width).collect();
            if let Some(cur) = out.last_mut() {
                cur.push_str(&head);
            }
            out.push(String::new());
        }
        let cur = out.last_mut().expect("one line");
        cur.extend(rest);
    }
    out
}
