//! The series picker over the run screen (`s`): the filter typed so far, then every series
//! of the run that matches — its tag as logged, its canonical name when another, its points
//! and steps — the selected one highlighted; Enter draws it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};

use super::{centered, pane, scroll_for, strings as S};
use crate::app::App;

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let Some(p) = app.run.picker.as_ref() else {
        return;
    };
    let rows = app.picker_rows();
    let w = area.width.min(72);
    let h = (rows.len().min(200) as u16 + 4).max(6).min(area.height);
    let r = centered(area, w, h);
    Clear.render(r, buf);
    let block = pane(app, format!("{} ({})", S::SERIES, rows.len()), true);
    let inner = block.inner(r);
    block.render(r, buf);
    if inner.height == 0 {
        return;
    }
    let mut lines = vec![Line::from(vec![
        Span::styled("/ ", t.key()),
        Span::raw(p.filter.clone()),
        Span::styled("▏", t.key()),
    ])];
    if inner.height >= 4 {
        lines.push(Line::styled(S::SERIES_FILTER, t.dim()));
    }
    let room = (inner.height as usize).saturating_sub(lines.len());
    if rows.is_empty() {
        let none = if app
            .run
            .summary
            .as_ref()
            .is_some_and(|s| !s.series.is_empty())
        {
            S::NO_SERIES_MATCH
        } else {
            S::SERIES_NONE
        };
        lines.push(Line::styled(none, t.dim()));
    }
    let sel = p.sel.min(rows.len().saturating_sub(1));
    let skip = scroll_for(sel, room);
    for (i, s) in rows.iter().enumerate().skip(skip).take(room) {
        let mut spans = vec![
            Span::raw(if i == sel { t.pointer() } else { " " }),
            Span::raw(s.tag.clone()),
        ];
        if s.name != s.tag {
            spans.push(Span::styled(format!("  {}", s.name), t.dim()));
        }
        let (a, b) = (
            s.points.first().map_or(0.0, |p| p.0),
            s.points.last().map_or(0.0, |p| p.0),
        );
        spans.push(Span::styled(
            format!("  {} pts {}..{}", s.points.len(), a as i64, b as i64),
            t.dim(),
        ));
        let l = Line::from(spans);
        lines.push(if i == sel { l.style(t.selected()) } else { l });
    }
    Paragraph::new(lines).render(inner, buf);
}
