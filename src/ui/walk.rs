//! Walk: a breadcrumb of the path; the node's question and threshold; the probe running in
//! the background with a gauge (Esc cancels); the measured value against the threshold and
//! the branch it proposes (Enter confirm, o override, b back); options for choice nodes; a
//! prompt for a missing fact; at a leaf, the conclusion and its fix.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, Paragraph, Widget, Wrap};

use super::{find_words, highlighted, pane, strings as S};
use crate::app::App;
use crate::catalog::NodeKind;
use crate::trees::question;

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let Some(ws) = &app.walk else { return };
    let w = &ws.walk;
    let [crumb, main, path] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(6),
        Constraint::Length((w.path.len() as u16 + 2).clamp(3, 7).min(area.height / 4)),
    ])
    .areas(area);

    // Breadcrumb: keep the tail when it does not fit.
    let mut crumbs = w.tree.id.clone();
    for id in w.breadcrumb() {
        crumbs.push_str(t.sep());
        crumbs.push_str(&id);
    }
    let width = crumb.width as usize;
    let n = crumbs.chars().count();
    if n > width && width > 1 {
        crumbs = format!(
            "…{}",
            crumbs.chars().skip(n - width + 1).collect::<String>()
        );
    }
    Line::styled(crumbs, t.dim()).render(crumb, buf);

    let Some(node) = w.node() else {
        Line::styled(format!("✗ node {} missing", w.current), t.error()).render(main, buf);
        return;
    };
    let title = format!("{} · {}", S::WALK, w.tree.title);
    let block = pane(app, &title, true);
    let inner = block.inner(main);
    block.render(main, buf);

    let entry = node.entry.as_deref().and_then(|e| app.cat.entry(e));
    let mut lines: Vec<Line> = Vec::new();
    if node.kind == NodeKind::Leaf {
        let (id, title) = entry
            .map(|e| (e.id.clone(), e.title.clone()))
            .unwrap_or_default();
        lines.push(Line::from(vec![
            Span::styled(format!("{}: ", S::CONCLUSION), t.heading()),
            Span::styled(format!("{id} "), t.key()),
            Span::raw(title),
        ]));
        if let Some(note) = &node.note {
            lines.push(Line::raw(note.clone()));
        }
        if let Some(e) = entry {
            lines.push(Line::raw(""));
            lines.push(Line::styled(S::FIX, t.heading()));
            let hl = find_words(&e.fix, &e.knobs);
            lines.push(Line::from(highlighted(&e.fix, &hl, Style::new(), t.knob())));
        }
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .render(inner, buf);
        return;
    }

    lines.push(Line::from(vec![
        Span::styled(format!("{} ", node.id), t.key()),
        Span::styled(question(&app.cat, node), t.title()),
    ]));
    if let Some(th) = entry.and_then(|e| e.threshold.clone()) {
        lines.push(Line::from(vec![
            Span::styled(format!("{}: ", S::THRESHOLD), t.heading()),
            Span::raw(th),
        ]));
    }
    if let Some(p) = &node.probe {
        lines.push(Line::styled(format!("probe: {p}"), t.dim()));
    }
    if let Some(f) = &node.fact {
        lines.push(Line::styled(format!("fact: {f}"), t.dim()));
    }
    lines.push(Line::raw(""));

    let running = ws.job.and_then(|id| app.jobs.iter().find(|j| j.id == id));
    if let Some(p) = &w.proposal {
        if running.is_none() {
            let mut spans = Vec::new();
            if let Some(st) = p.status {
                let (m, style) = t.mark(st);
                spans.push(Span::styled(format!("{m} {} ", st.as_str()), style));
            }
            if !p.measured.is_empty() {
                spans.push(Span::raw(format!("{} {}", S::MEASURED, p.measured)));
            }
            if !p.expected.is_empty() {
                spans.push(Span::styled(
                    format!("  {} {}", S::EXPECTED, p.expected),
                    t.dim(),
                ));
            }
            spans.push(Span::styled(format!("  ({})", p.source.as_str()), t.dim()));
            lines.push(Line::from(spans));
            if !p.message.is_empty() {
                lines.push(Line::styled(p.message.clone(), t.dim()));
            }
            let next = if p.next.is_empty() {
                "—".to_string()
            } else {
                p.next.clone()
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{}: ", S::PROPOSED), t.heading()),
                Span::styled(format!("{} {} {next}", p.answer, S::LEADS_TO), t.key()),
                Span::styled(format!("   {}", S::CONFIRM_HINT), t.dim()),
            ]));
        }
    }
    if let Some(input) = &ws.fact_input {
        lines.push(Line::styled(S::FACT_PROMPT, t.heading()));
        lines.push(Line::from(vec![
            Span::styled(
                format!("{} = ", node.fact.clone().unwrap_or_default()),
                t.key(),
            ),
            Span::raw(input.clone()),
            Span::styled("_", t.selected()),
        ]));
    }
    let show_choices = node.kind == NodeKind::Choice || ws.override_open;
    if show_choices {
        lines.push(Line::styled(
            if node.kind == NodeKind::Choice {
                S::PICK_OPTION
            } else {
                S::PICK_BRANCH
            },
            t.heading(),
        ));
        for (i, (label, next)) in w.choices().iter().enumerate() {
            let sel = i == ws.sel;
            let l = Line::from(vec![
                Span::raw(if sel { t.pointer() } else { " " }),
                Span::styled(format!("{}. ", i + 1), t.key()),
                Span::raw(label.clone()),
                Span::styled(format!(" {} {next}", S::LEADS_TO), t.dim()),
            ]);
            lines.push(if sel { l.style(t.selected()) } else { l });
        }
    }

    let gauge_h = u16::from(running.is_some()) * 2;
    let [text, gauge] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(gauge_h)]).areas(inner);
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(text, buf);
    if let Some(j) = running {
        Gauge::default()
            .gauge_style(t.key())
            .percent(j.progress.min(100) as u16)
            .label(format!(
                "{} {}%  (Esc cancels)",
                S::PROBE_RUNNING,
                j.progress
            ))
            .render(Rect { height: 1, ..gauge }, buf);
    }

    // The path so far, with each answer and where it came from.
    let block = pane(app, "Path", false);
    let inner = block.inner(path);
    block.render(path, buf);
    let skip = w.path.len().saturating_sub(inner.height as usize);
    let lines: Vec<Line> = w
        .path
        .iter()
        .skip(skip)
        .map(|s| {
            Line::from(vec![
                Span::styled(format!("{:<16}", s.id), t.key()),
                Span::raw(format!("{} ", s.answer)),
                Span::styled(
                    format!(
                        "{}({})",
                        if s.measured.is_empty() {
                            String::new()
                        } else {
                            format!("{} ", s.measured)
                        },
                        s.source.as_str()
                    ),
                    t.dim(),
                ),
            ])
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}
