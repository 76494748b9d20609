//! Home: the trees to walk, the catalog by domain, and — with a run attached — a one-line
//! summary of what was found in it (and the user's `--fact`s) and the `check` findings,
//! marked `✗ ! ✓ ·` plus a word.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::{pane, scroll_for, strings as S};
use crate::app::{App, CatRow};
use crate::findings::Finding;

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let attached = app.run.attached.is_some();
    let findings_h = if attached {
        (app.run.findings.len() as u16 + 2)
            .clamp(3, 8)
            .min(area.height / 3)
    } else {
        0
    };
    let [summary, findings, body] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(findings_h),
        Constraint::Min(3),
    ])
    .areas(area);
    summary_line(app, summary, buf);
    if attached {
        findings_pane(app, app.home.pane == 2, findings, buf);
    }
    let tree_w = (body.width / 3).clamp(20, 40);
    let [trees, cat] =
        Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(10)]).areas(body);
    trees_pane(app, trees, buf);
    catalog_pane(app, cat, buf);
}

fn summary_line(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let line = match (&app.run.attached, &app.run.summary) {
        (None, _) => Line::styled(S::NO_RUN_ATTACHED, t.dim()),
        (Some(p), None) => {
            let what = match &app.run.error {
                Some(e) => Span::styled(format!("✗ {e}"), t.error()),
                None => Span::styled(S::LOADING_RUN, t.dim()),
            };
            Line::from(vec![Span::raw(format!("{}  ", p.display())), what])
        }
        (Some(_), Some(s)) => {
            let count = |st| {
                app.run
                    .findings
                    .iter()
                    .filter(|f: &&Finding| f.status == st)
                    .count()
            };
            use mltriage_probes::probe::Status;
            let mut spans = vec![Span::styled(s.root.clone(), t.title())];
            for st in [Status::Fail, Status::Warn, Status::Pass] {
                let (m, style) = t.mark(st);
                spans.push(Span::styled(format!("  {m} {} {st}", count(st)), style));
            }
            if !s.profile.is_empty() {
                spans.push(Span::styled(format!("  · {}", s.profile), t.dim()));
            }
            let steps = match s.max_step {
                Some(m) => format!("steps ≤ {m}"),
                None => S::NO_STEPS.to_string(),
            };
            // A single file with nothing to judge (a config.json): say what was given and
            // what to give instead, first, where a narrow terminal does not cut it.
            let one_file = s.max_step.is_none()
                && s.series.is_empty()
                && s.checkpoints.is_empty()
                && app.run.attached.as_deref().is_some_and(|p| p.is_file());
            if one_file {
                spans.insert(1, Span::styled(format!("  {}", S::RUN_ONE_FILE), t.error()));
            }
            spans.push(Span::raw(format!(
                "  · {} artifacts · {} checkpoints · {steps} · {} series · {} ({})",
                s.artifacts,
                s.checkpoints.len(),
                s.series.len(),
                s.device,
                mltriage_probes::device::BuildInfo::current().label()
            )));
            Line::from(spans)
        }
    };
    let mut line = line;
    if let Some(f) = user_facts(app) {
        // Before the artifact counts, which are the first thing a narrow terminal cuts.
        let at = if app.run.summary.is_some() {
            line.spans.len().saturating_sub(1)
        } else {
            line.spans.len()
        };
        line.spans
            .insert(at, Span::styled(format!("  · {} {f}", S::FACTS), t.key()));
    }
    line.render(area, buf);
}

/// The facts the user gave (`--fact`, `:fact`), as `k=v k=v`.
pub fn user_facts(app: &App) -> Option<String> {
    let v: Vec<String> = app
        .facts
        .iter()
        .filter(|(_, f)| f.source == mltriage_probes::facts::FactSource::User)
        .map(|(k, f)| format!("{k}={}", f.value))
        .collect();
    (!v.is_empty()).then(|| v.join(" "))
}

/// A findings list (shared with the run screen).
pub fn findings_pane(app: &App, focused: bool, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let sel = if app.screen == crate::app::Screen::Run {
        app.run.sel
    } else {
        app.home.finding_sel
    };
    let block = pane(app, S::FINDINGS, focused);
    let inner = block.inner(area);
    block.render(area, buf);
    let lines: Vec<Line> = if app.run.findings.is_empty() {
        vec![Line::styled(
            if app.run.loading {
                S::LOADING_RUN
            } else {
                S::NO_FINDINGS
            },
            t.dim(),
        )]
    } else {
        let skip = scroll_for(sel, inner.height as usize);
        app.run
            .findings
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(i, f)| {
                let (m, st) = t.mark(f.status);
                // Follow mode: a finding that appeared or changed since the user last looked.
                let changed = app
                    .follow
                    .changed
                    .iter()
                    .any(|k| *k == format!("{}/{}", f.probe, f.id));
                let mut l = Line::from(vec![
                    if focused && i == sel {
                        Span::raw(t.pointer())
                    } else if changed {
                        Span::styled(if t.ascii { "*" } else { "•" }, t.highlight())
                    } else {
                        Span::raw(" ")
                    },
                    Span::styled(format!("{m} {:<4} ", f.status.as_str()), st),
                    Span::styled(format!("{:<6}", f.id), t.key()),
                    // The measured value first: on a narrow terminal the row's end is cut,
                    // and the title is what the entry screen repeats.
                    Span::raw(if f.measured.is_empty() {
                        String::new()
                    } else {
                        format!("{}  ", crate::look::numbers::tame_numbers(&f.measured))
                    }),
                    Span::styled(format!("{} · {}", f.title, f.message), t.dim()),
                ]);
                if focused && i == sel {
                    l = l.style(t.selected());
                }
                l
            })
            .collect()
    };
    Paragraph::new(lines).render(inner, buf);
}

fn trees_pane(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let focused = app.home.pane == 0;
    let block = pane(app, S::TREES, focused);
    let inner = block.inner(area);
    block.render(area, buf);
    let skip = scroll_for(app.home.tree_sel, inner.height as usize);
    let lines: Vec<Line> = app
        .cat
        .trees
        .iter()
        .enumerate()
        .skip(skip)
        .map(|(i, tr)| {
            let sel = i == app.home.tree_sel;
            let l = Line::from(vec![
                Span::raw(if sel { t.pointer() } else { " " }),
                Span::styled(format!("{:<12}", tr.id), t.key()),
                Span::styled(format!("{} nodes", tr.nodes.len()), t.dim()),
            ]);
            if sel && focused {
                l.style(t.selected())
            } else {
                l
            }
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

fn catalog_pane(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let focused = app.home.pane == 1;
    let title = format!("{} ({})", S::CATALOG, app.cat.entries.len());
    let block = pane(app, &title, focused);
    let inner = block.inner(area);
    block.render(area, buf);
    let rows = app.cat_rows();
    // The row index of the selected entry.
    let mut n = 0;
    let mut sel_row = 0;
    for (r, row) in rows.iter().enumerate() {
        if let CatRow::Entry(_) = row {
            if n == app.home.cat_sel {
                sel_row = r;
            }
            n += 1;
        }
    }
    let skip = scroll_for(sel_row, inner.height as usize);
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(skip)
        .take(inner.height as usize)
        .map(|(r, row)| match row {
            CatRow::Domain(d) => {
                Line::styled(format!("{} ({})", d.label(), d.as_str()), t.heading())
            }
            CatRow::Entry(i) => {
                let e = &app.cat.entries[*i];
                let sel = r == sel_row;
                let l = Line::from(vec![
                    Span::raw(if sel { t.pointer() } else { " " }),
                    Span::styled(format!("{:<6}", e.id), t.key()),
                    Span::styled(e.title.clone(), Style::new()),
                ]);
                if sel && focused {
                    l.style(t.selected())
                } else {
                    l
                }
            }
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}
