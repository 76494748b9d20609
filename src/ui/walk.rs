//! Walk: a breadcrumb of the path; the node's question and threshold; the probe running in
//! the background with a gauge (Esc cancels); the measured value against the threshold and
//! the branch it proposes (Enter confirm, o override, b back); options for choice nodes; a
//! prompt for a missing fact; at a leaf, the conclusion and its fix.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, Paragraph, Widget, Wrap};

use super::run::{series_chart, SeriesChart};
use super::{find_words, highlighted, pane, strings as S, weights};
use crate::app::{App, NodeChart, WalkState};
use crate::catalog::NodeKind;
use crate::trees::{question, target_words};
use crate::triage::batch_rows::BatchRows;
use mltriage_probes::probe::Status;

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let Some(ws) = &app.walk else { return };
    let w = &ws.walk;
    let [crumb, main, path] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(6),
        // Tab opens the path: then it may take half the screen.
        Constraint::Length({
            let rows = w.path.len() as u16 + 2 + u16::from(w.from.is_some());
            let cap = if ws.path_open {
                area.height / 2
            } else {
                7.min(area.height / 4)
            };
            rows.min(cap).max(3)
        }),
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
        // The claim's evidence: what the run's failing or warning probes measured for this
        // entry, with the files, steps and tensors they read.
        let found: Vec<&crate::findings::Finding> = app
            .run
            .findings
            .iter()
            .filter(|f| f.id == id && matches!(f.status, Status::Fail | Status::Warn))
            .collect();
        if !found.is_empty() {
            lines.push(Line::raw(""));
            lines.push(Line::styled(S::EVIDENCE, t.heading()));
            for f in found.iter().take(3) {
                let (m, style) = t.mark(f.status);
                lines.push(Line::from(vec![
                    Span::styled(format!("{m} {} ", f.probe), style),
                    Span::raw(crate::look::numbers::tame_numbers(&f.measured)),
                ]));
                for ev in f.evidence.iter().take(3) {
                    lines.push(Line::styled(format!("  {}", ev.render()), t.dim()));
                }
            }
        }
        if let Some(e) = entry {
            lines.push(Line::raw(""));
            lines.push(Line::styled(S::FIX, t.heading()));
            let hl = find_words(&e.fix, &e.knobs);
            lines.push(Line::from(highlighted(&e.fix, &hl, Style::new(), t.knob())));
        }
        scrolled(app, lines, ws.scroll, inner, buf);
        path_pane(app, ws, path, buf);
        return;
    }

    lines.push(Line::from(vec![
        Span::styled(format!("{} ", node.id), t.key()),
        Span::styled(question(&app.cat, node), t.title()),
    ]));
    // The threshold and where the answer comes from go after the verdict on a small
    // terminal, so the measured value stays on screen; before it otherwise.
    let small = area.height < 20 || ws.chart.is_some();
    let mut detail: Vec<Line> = Vec::new();
    if let Some(th) = entry.and_then(|e| e.threshold.clone()) {
        detail.push(Line::from(vec![
            Span::styled(format!("{}: ", S::THRESHOLD), t.heading()),
            Span::raw(th),
        ]));
    }
    if let Some(p) = &node.probe {
        detail.push(Line::styled(format!("probe: {p}"), t.dim()));
    }
    if let Some(f) = &node.fact {
        detail.push(Line::styled(format!("fact: {f}"), t.dim()));
    }
    if !small {
        lines.append(&mut detail);
        lines.push(Line::raw(""));
    }

    let running = ws.job.and_then(|id| app.jobs.iter().find(|j| j.id == id));
    if let Some(p) = &w.proposal {
        if running.is_none() {
            let mut spans = Vec::new();
            if let Some(st) = p.status {
                let (m, style) = t.mark(st);
                spans.push(Span::styled(format!("{m} {} ", st.as_str()), style));
            }
            if !p.measured.is_empty() {
                spans.push(Span::raw(format!(
                    "{} {}",
                    S::MEASURED,
                    crate::look::numbers::tame_numbers(&p.measured)
                )));
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
                target_words(&app.cat, &w.tree, &p.next)
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{}: ", S::PROPOSED), t.heading()),
                Span::styled(format!("{} {} {next}", p.answer, S::LEADS_TO), t.key()),
                Span::styled(format!("   {}", S::CONFIRM_HINT), t.dim()),
            ]));
        }
    }
    lines.append(&mut detail);
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
                Span::styled(
                    format!(" {} {}", S::LEADS_TO, target_words(&app.cat, &w.tree, next)),
                    t.dim(),
                ),
            ]);
            lines.push(if sel { l.style(t.selected()) } else { l });
        }
    }

    if let Some(l) = &ws.lead {
        lines.push(Line::from(vec![
            Span::styled(format!("{}: ", S::RUN_LEADS), t.heading()),
            Span::styled(l.option.clone(), t.key()),
            Span::styled(format!(" ({})", l.because.join(", ")), t.dim()),
        ]));
    }
    if let Some((_, st)) = ws.run_disagrees() {
        lines.push(Line::from(vec![
            Span::styled(format!("{}: ", S::RUN_LEADS), t.heading()),
            Span::raw(format!(
                "{} {} {} {} ",
                st.id,
                S::RUN_SAID,
                st.answer,
                S::LEADS_TO
            )),
            Span::raw(
                w.node_by_id(&st.id)
                    .and_then(|n| crate::trees::branch_for(n, &st.answer))
                    .map(|(_, to)| target_words(&app.cat, &w.tree, to))
                    .unwrap_or_default(),
            ),
            Span::styled(format!("  {}", S::RUN_LEADS_KEY), t.dim()),
        ]));
    }

    let gauge_h = u16::from(running.is_some()) * 2;
    let wrapped_h = |ls: &[Line]| -> u16 {
        ls.iter()
            .map(|l| (l.width() as u16).div_ceil(inner.width.max(1)).max(1))
            .sum()
    };
    // With a chart to draw, the question wraps (at most 3 rows) and every other line takes
    // one row, so the statistic that answered gets the rest (at least 5 rows).
    let with_chart = ws.chart.is_some() && running.is_none() && !show_choices;
    let q_h = wrapped_h(&lines[..1]).min(if small { 2 } else { 3 });
    let compact_h = q_h + wrapped_h(&lines[1..]);
    // The chart keeps at least half the panel on a terminal tall enough for both; the text
    // above it scrolls (j/k) when it does not fit.
    let chart_h = if with_chart {
        let rest = inner.height.saturating_sub(compact_h + gauge_h);
        if inner.height >= 12 {
            rest.max(inner.height / 2)
        } else {
            rest
        }
    } else {
        0
    };
    let chart_h = if chart_h >= 5 { chart_h } else { 0 };
    let [text, chart_area, gauge] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(chart_h),
        Constraint::Length(gauge_h),
    ])
    .areas(inner);
    if chart_h > 0 || text.height < 8 {
        // The question keeps at most a few rows (one on a tiny terminal), so the verdict with
        // its measured value comes next; the rest scrolls.
        let q_h = if text.height < 8 { 1 } else { q_h };
        let [q, rest] = Layout::vertical([Constraint::Length(q_h), Constraint::Min(0)]).areas(text);
        let mut lines = lines;
        let rest_lines = lines.split_off(1);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .render(q, buf);
        // Evidence and fix text wrap at the panel edge, as in the override list.
        scrolled(app, rest_lines, ws.scroll, rest, buf);
        if chart_h > 0 {
            node_chart(app, ws, chart_area, buf);
        }
    } else {
        scrolled(app, lines, ws.scroll, text, buf);
    }
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

    path_pane(app, ws, path, buf);
}

/// Wrapped text scrolled by `scroll` rows (j/k), clamped so the last row stays on screen;
/// when more lies below, the last row says so.
fn scrolled(app: &App, lines: Vec<Line>, scroll: u16, area: Rect, buf: &mut Buffer) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let total: u16 = lines
        .iter()
        .map(|l| (l.width() as u16).div_ceil(area.width).max(1))
        .sum();
    let max = total.saturating_sub(area.height);
    let scroll = scroll.min(max);
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0))
        .render(area, buf);
    if scroll < max && area.height > 1 {
        let hint = if area.width >= 60 {
            format!("↓ {} · {}", S::MORE_BELOW, S::SCROLL_HINT)
        } else {
            format!("↓ {}", S::SCROLL_HINT)
        };
        let w = (hint.chars().count() as u16).min(area.width);
        let r = Rect {
            x: area.x + area.width - w,
            y: area.y + area.height - 1,
            width: w,
            height: 1,
        };
        ratatui::widgets::Clear.render(r, buf);
        Line::styled(hint, app.theme.dim()).render(r, buf);
    }
}

/// The path so far, with each answer and where it came from; the route above a "walk from
/// here" start is one line until Tab opens it.
fn path_pane(app: &App, ws: &WalkState, path: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let w = &ws.walk;
    let block = pane(app, S::PATH, false);
    let inner = block.inner(path);
    block.render(path, buf);
    let step_line = |s: &crate::trees::Step| {
        Line::from(vec![
            Span::styled(format!("{:<16}", s.id), t.key()),
            Span::raw(format!("{} ", s.shown_answer())),
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
    };
    let above = w.from.as_ref().map_or(0, |f| f.above.min(w.path.len()));
    let mut lines: Vec<Line> = Vec::new();
    if above > 0 && !ws.path_open {
        let f = w.from.as_ref().expect("above > 0");
        let answered = w.path[..above]
            .iter()
            .filter(|s| !matches!(s.source, crate::trees::Source::Route))
            .count();
        lines.push(Line::from(vec![
            Span::styled("▸ ", t.key()),
            Span::raw(format!("{above} {} {} ", S::ROUTE_ABOVE, f.id)),
            Span::styled(
                format!("({answered} answered by the run) · {}", S::ROUTE_EXPAND),
                t.dim(),
            ),
        ]));
        lines.extend(w.path[above..].iter().map(step_line));
    } else {
        if above > 0 {
            lines.push(Line::styled(format!("▾ {}", S::ROUTE_COLLAPSE), t.dim()));
        }
        lines.extend(w.path.iter().map(step_line));
    }
    let skip = lines.len().saturating_sub(inner.height as usize);
    let keep_head = usize::from(above > 0 && skip > 0);
    let lines: Vec<Line> = lines
        .iter()
        .take(keep_head)
        .cloned()
        .chain(lines.iter().skip(skip + keep_head).cloned())
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

/// The chart under the verdict: the series, tensor or batch statistic that answered.
fn node_chart(app: &App, ws: &WalkState, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let probe = ws
        .walk
        .node()
        .and_then(|n| n.probe.clone())
        .unwrap_or_default();
    let probes = [probe.as_str()];
    match &ws.chart {
        Some(NodeChart::Series {
            metric,
            window,
            declared,
        }) => {
            let reference = declared.then(|| declared_lr(app)).flatten();
            let title = match *metric {
                "learning_rate" => "learning rate",
                "grad_norm" => "grad norm",
                m => m,
            };
            let c = SeriesChart {
                metric,
                title,
                findings: &ws.findings,
                probes: &probes,
                window: *window,
                reference,
            };
            series_chart(app, &c, area, buf);
        }
        Some(NodeChart::Tensor { tensor }) => {
            let block = pane(app, tensor, false);
            let inner = block.inner(area);
            block.render(area, buf);
            match (&ws.hist, &ws.chart_error) {
                (Some(h), _) => weights::tensor_hist(app, h, inner, buf),
                (None, Some(e)) => Line::styled(format!("✗ {e}"), t.error()).render(inner, buf),
                (None, None) => Line::styled(S::CHART_READING, t.dim()).render(inner, buf),
            }
        }
        Some(NodeChart::Batch { file }) => {
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let block = pane(app, format!("{} · {name}", S::ROWS_TITLE), false);
            let inner = block.inner(area);
            block.render(area, buf);
            match (&ws.rows, &ws.chart_error) {
                (Some(r), _) => batch_rows(app, r, inner, buf),
                (None, Some(e)) => Line::styled(format!("✗ {e}"), t.error()).render(inner, buf),
                (None, None) => Line::styled(S::CHART_READING, t.dim()).render(inner, buf),
            }
        }
        None => {}
    }
}

/// The declared LR schedule at the logged LR steps, when the facts declare one.
fn declared_lr(app: &App) -> Option<(String, Vec<(f64, f64)>)> {
    let s = app
        .run
        .summary
        .as_ref()?
        .series
        .iter()
        .find(|s| s.name == "learning_rate")?;
    let steps: Vec<u64> = s.points.iter().map(|p| p.0.max(0.0) as u64).collect();
    let facts = app.all_facts();
    let v = mltriage_probes::probes::metric::lr::declared_curve(&facts, &steps)?;
    let name = format!("declared {}", facts.get("schedule").unwrap_or_default());
    Some((name, steps.iter().map(|&x| x as f64).zip(v).collect()))
}

/// One line per row: `row  ████░░░░  62% masked  (pad 30%)`.
fn batch_rows(app: &App, r: &BatchRows, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let mut lines = vec![Line::styled(
        format!("{} · labels == {} per row", r.tensor, r.ignore),
        t.dim(),
    )];
    let bar_w = (area.width as usize).saturating_sub(28).clamp(4, 40);
    let rows = (area.height as usize).saturating_sub(1);
    for (i, m) in r.masked.iter().enumerate().take(rows) {
        let filled = (m * bar_w as f64).round() as usize;
        let mut spans = vec![
            Span::styled(format!("{i:>4} "), t.key()),
            Span::styled("█".repeat(filled), t.series(0)),
            Span::styled("░".repeat(bar_w - filled.min(bar_w)), t.dim()),
            Span::raw(format!(" {:>4.0}% masked", m * 100.0)),
        ];
        if let Some(p) = r.padded.as_ref().and_then(|p| p.get(i)) {
            spans.push(Span::styled(
                format!("  {} {:.0}%", S::ROWS_PAD, p * 100.0),
                t.dim(),
            ));
        }
        lines.push(Line::from(spans));
    }
    if r.masked.len() > rows && rows > 0 {
        if let Some(last) = lines.last_mut() {
            *last = Line::styled(format!("… {} rows", r.masked.len()), t.dim());
        }
    }
    Paragraph::new(lines).render(area, buf);
}
