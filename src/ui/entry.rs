//! Entry: symptom, cause and fix (knobs highlighted), the question and threshold of a
//! stability check, references, see-also links to follow (Tab, Enter), and "check this"
//! (`c`): the entry's probes run on the attached run, results listed at the end.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{find_words, highlighted, pane, strings as S};
use crate::app::App;
use crate::catalog::Entry;
use crate::findings::Finding;

fn section(app: &App, lines: &mut Vec<Line<'static>>, title: &str, body: &str, knobs: &[String]) {
    let t = &app.theme;
    lines.push(Line::styled(title.to_string(), t.heading()));
    for para in body.split('\n') {
        let hl = find_words(para, knobs);
        let mut spans = vec![Span::raw("  ")];
        spans.extend(highlighted(para, &hl, Style::new(), t.knob()));
        lines.push(Line::from(spans));
    }
    lines.push(Line::raw(""));
}

/// The entry's text as lines; from the Fix section on when `at_fix`.
pub fn entry_lines(app: &App, e: &Entry, at_fix: bool) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    if !at_fix {
        if let Some(q) = &e.question {
            section(app, &mut lines, S::QUESTION, q, &[]);
        }
        if let Some(th) = &e.threshold {
            section(app, &mut lines, S::THRESHOLD, th, &[]);
        }
        section(app, &mut lines, S::SYMPTOM, &e.symptom, &[]);
        section(app, &mut lines, S::CAUSE, &e.cause, &e.knobs);
    }
    section(app, &mut lines, S::FIX, &e.fix, &e.knobs);
    if !e.knobs.is_empty() {
        lines.push(Line::styled(S::KNOBS, t.heading()));
        for k in &e.knobs {
            lines.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(k.clone(), t.knob()),
            ]));
        }
        lines.push(Line::raw(""));
    }
    if !e.leaves.is_empty() {
        for l in &e.leaves {
            lines.push(Line::from(vec![
                Span::styled(format!("  {} ", l.when), t.key()),
                Span::raw(format!("{} {}", S::LEADS_TO, l.then)),
            ]));
        }
        lines.push(Line::raw(""));
    }
    if !e.errors.is_empty() {
        lines.push(Line::styled(S::ERRORS, t.heading()));
        for x in &e.errors {
            lines.push(Line::raw(format!("  {x}")));
        }
        lines.push(Line::raw(""));
    }
    if !e.refs.is_empty() {
        lines.push(Line::styled(S::REFS, t.heading()));
        for r in &e.refs {
            lines.push(Line::from(vec![
                Span::raw(format!("  {} ", r.title)),
                Span::styled(r.url.clone(), t.dim()),
            ]));
        }
        lines.push(Line::raw(""));
    }
    if let Some(src) = &e.source {
        lines.push(Line::styled(
            format!("{} — {} ({})", src.author, src.title, src.url),
            t.dim(),
        ));
    }
    lines
}

/// The findings of "check this", each with its evidence: (finding index, line).
fn check_lines(app: &App, fs: &[Finding]) -> Vec<(usize, Line<'static>)> {
    let t = &app.theme;
    let focused = app.entry.pane == 2;
    let mut out = Vec::new();
    for (i, f) in fs.iter().enumerate() {
        let sel = focused && i == app.entry.finding_sel;
        let (m, st) = t.mark(f.status);
        let mut l = Line::from(vec![
            Span::raw(if sel { t.pointer() } else { " " }),
            Span::styled(format!("{m} {:<4} ", f.status.as_str()), st),
            Span::styled(format!("{} ", f.probe), t.key()),
            Span::raw(if f.measured.is_empty() {
                f.message.clone()
            } else {
                f.measured.clone()
            }),
        ]);
        if sel {
            l = l.style(t.selected());
        }
        out.push((i, l));
        let mut ev: Vec<String> = Vec::new();
        if let Some(n) = f.nodes.first() {
            ev.push(format!("{} {n}", S::LEADS_TO));
        }
        if !f.expected.is_empty() {
            ev.push(format!("{} {}", S::EXPECTED, f.expected));
        }
        for e in f.evidence.iter().take(2) {
            let mut parts = Vec::new();
            if let Some(p) = &e.file {
                parts.push(
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                );
            }
            if let Some((a, b)) = e.steps {
                parts.push(format!("steps {a}–{b}"));
            }
            if let Some(tn) = &e.tensor {
                parts.push(tn.clone());
            }
            if !parts.is_empty() {
                ev.push(parts.join(" · "));
            }
        }
        if !ev.is_empty() {
            out.push((
                i,
                Line::styled(format!("        {}", ev.join("  ")), t.dim()),
            ));
        }
    }
    out
}

pub fn render(app: &App, id: &str, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let Some(e) = app.cat.entry(id) else { return };
    let links = app.see_also(id);
    let probes: Vec<String> = app.cat.probes_for_entry(id).map(|p| p.id.clone()).collect();
    let side_w = if links.is_empty() && probes.is_empty() {
        0
    } else {
        (area.width / 4).clamp(14, 24)
    };
    let [main, side] =
        Layout::horizontal([Constraint::Min(20), Constraint::Length(side_w)]).areas(area);
    // "check this" results at the top of the page, with their evidence.
    let checked = match &app.entry.checked {
        Some((cid, f)) if cid == id => Some(f),
        _ => None,
    };
    let main = match checked {
        Some(fs) => {
            let lines = check_lines(app, fs);
            let h = (lines.len() as u16 + 2).min(main.height / 2).max(3);
            let [top, rest] =
                Layout::vertical([Constraint::Length(h), Constraint::Min(3)]).areas(main);
            let block = pane(app, S::CHECK_RESULTS, app.entry.pane == 2);
            let inner = block.inner(top);
            block.render(top, buf);
            // Keep the selected finding in view.
            let first = lines
                .iter()
                .position(|(i, _)| *i == app.entry.finding_sel)
                .unwrap_or(0);
            let skip = first.saturating_sub((inner.height as usize).saturating_sub(2));
            let shown: Vec<Line> = lines.into_iter().skip(skip).map(|(_, l)| l).collect();
            Paragraph::new(shown).render(inner, buf);
            rest
        }
        None => main,
    };

    let title = format!("{}  {}  [{}]", e.id, e.title, e.domain.label());
    let block = pane(app, &title, app.entry.pane == 0);
    Paragraph::new(entry_lines(app, e, app.entry.at_fix))
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((app.entry.scroll, 0))
        .render(main, buf);

    if side_w > 0 {
        let focused = app.entry.pane == 1;
        let block = pane(app, S::SEE_ALSO, focused);
        let inner = block.inner(side);
        block.render(side, buf);
        let mut lines: Vec<Line> = links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let sel = focused && i == app.entry.link_sel;
                let title = app
                    .cat
                    .entry(l)
                    .map(|e| e.title.clone())
                    .unwrap_or_default();
                let line = Line::from(vec![
                    Span::raw(if sel { t.pointer() } else { " " }),
                    Span::styled(format!("{l:<5} "), t.key()),
                    Span::raw(title),
                ]);
                if sel {
                    line.style(t.selected())
                } else {
                    line
                }
            })
            .collect();
        if !probes.is_empty() {
            lines.push(Line::raw(""));
            lines.push(Line::styled(S::PROBES, t.heading()));
            for p in probes {
                lines.push(Line::styled(format!(" {p}"), t.dim()));
            }
        }
        Paragraph::new(lines).render(inner, buf);
    }
}
