//! Search: the query line (full-text with highlighted snippets, or the fuzzy id/title
//! filter with Tab), the domain filter, and the results as you type; with a run attached each
//! hit carries the run's mark for its entry (✗ fail, ! warn, ✓ pass; blank when unjudged).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{highlighted, pane, scroll_for, strings as S};
use crate::app::App;

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let s = &app.search;
    let [input, results] =
        Layout::vertical([Constraint::Length(3), Constraint::Min(1)]).areas(area);
    let mode = if s.fuzzy { S::MODE_FUZZY } else { S::MODE_TEXT };
    let domain = s.domain.map(|d| d.as_str()).unwrap_or(S::ALL_DOMAINS);
    let title = format!("{} [{mode} · {domain}]", S::SEARCH);
    let block = pane(app, &title, true);
    let inner = block.inner(input);
    block.render(input, buf);
    let query_line = if s.query.is_empty() {
        Line::from(vec![
            Span::styled("/ ", t.key()),
            Span::styled(S::SEARCH_HINT, t.dim()),
        ])
    } else {
        Line::from(vec![
            Span::styled("/ ", t.key()),
            Span::raw(s.query.clone()),
            Span::styled("_", t.selected()),
        ])
    };
    query_line.render(inner, buf);

    let block = pane(app, format!("{} ({})", S::RESULTS, s.results.len()), false);
    let inner = block.inner(results);
    block.render(results, buf);
    if let Some(e) = &s.error {
        Line::styled(format!("✗ {e}"), t.error()).render(inner, buf);
        return;
    }
    if s.results.is_empty() {
        if !s.query.trim().is_empty() {
            let none = if s.fuzzy {
                S::NO_RESULTS_FUZZY
            } else {
                S::NO_RESULTS
            };
            Line::styled(none, t.dim()).render(inner, buf);
        }
        return;
    }
    // Nothing fits well: say so above the closest entries.
    let mut inner = inner;
    if s.weak && !s.fuzzy && inner.height > 2 {
        Line::styled(S::NO_CONFIDENT_MATCH, t.dim()).render(inner, buf);
        inner.y += 1;
        inner.height -= 1;
        if inner.height > 4 {
            Line::styled(S::BROWSE_CATALOG_HINT, t.dim()).render(inner, buf);
            inner.y += 1;
            inner.height -= 1;
        }
    }
    // Two rows per full-text hit (title, snippet); one per fuzzy row.
    let per = if s.fuzzy { 1 } else { 2 };
    let marked = s.results.iter().any(|r| r.mark.is_some());
    let mark = |r: &crate::app::ResultRow| -> Option<Span<'static>> {
        if !marked {
            return None;
        }
        Some(match r.mark {
            Some(st) => {
                let (m, style) = t.mark(st);
                Span::styled(format!("{m} "), style)
            }
            None => Span::raw("  "),
        })
    };
    let visible = (inner.height as usize / per).max(1);
    let skip = scroll_for(s.sel, visible);
    let mut lines = Vec::new();
    for (i, r) in s.results.iter().enumerate().skip(skip).take(visible) {
        let sel = i == s.sel;
        let Some(e) = app.cat.entry(&r.id) else {
            continue;
        };
        let ptr = Span::raw(if sel { t.pointer() } else { " " });
        if s.fuzzy {
            let mut spans = vec![ptr];
            spans.extend(mark(r));
            spans.extend(highlighted(
                &r.text,
                &r.highlights,
                Style::new(),
                t.highlight(),
            ));
            spans.push(Span::styled(format!("  [{}]", e.domain), t.dim()));
            let l = Line::from(spans);
            lines.push(if sel { l.style(t.selected()) } else { l });
        } else {
            let mut spans = vec![ptr];
            spans.extend(mark(r));
            spans.push(Span::styled(format!("{:<6}", e.id), t.key()));
            spans.push(Span::raw(e.title.clone()));
            spans.push(Span::styled(format!("  [{}]", e.domain), t.dim()));
            let l = Line::from(spans);
            lines.push(if sel { l.style(t.selected()) } else { l });
            let indent = if marked { "         " } else { "       " };
            let mut spans = vec![Span::raw(indent)];
            spans.extend(highlighted(&r.text, &r.highlights, t.dim(), t.highlight()));
            lines.push(Line::from(spans));
        }
    }
    Paragraph::new(lines).render(inner, buf);
}
