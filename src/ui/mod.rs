//! Rendering: `impl Widget for &App` reads the state and never changes it (ratatui demo2).
//! One module per screen, plus the overlays (help, palette) and the footer; the words and
//! styles come from `crate::look`. Below 40×10 only a "terminal too small" notice is drawn.

pub mod chart;
pub mod entry;
pub mod footer;
pub mod help;
pub mod home;
pub mod palette;
pub mod run;
pub mod search;
pub mod series_picker;
pub mod walk;
pub mod weights;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::app::{App, Overlay, Screen};
use crate::look::{strings, theme};
use strings as S;

pub const MIN_W: u16 = 40;
pub const MIN_H: u16 = 10;

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width == 0 || area.height == 0 {
            return;
        }
        if area.width < MIN_W || area.height < MIN_H {
            too_small(area, buf);
        } else {
            let status_h = u16::from(self.status.is_some());
            let [header, body, status, foot] = Layout::vertical([
                Constraint::Length(1),
                Constraint::Min(1),
                Constraint::Length(status_h),
                Constraint::Length(1),
            ])
            .areas(area);
            self.render_header(header, buf);
            match &self.screen {
                Screen::Home => home::render(self, body, buf),
                Screen::Search => search::render(self, body, buf),
                Screen::Entry(id) => entry::render(self, id, body, buf),
                Screen::Walk => walk::render(self, body, buf),
                Screen::Run => run::render(self, body, buf),
            }
            if let Some((msg, err)) = &self.status {
                let st = if *err {
                    self.theme.error()
                } else {
                    Style::new()
                };
                let mark = if *err { "✗ " } else { "" };
                Line::from(vec![Span::styled(mark, st), Span::styled(msg.as_str(), st)])
                    .render(status, buf);
            }
            footer::render(self, foot, buf);
            match &self.overlay {
                Overlay::None => {}
                Overlay::Help { filter } => help::render(self, filter, body, buf),
                Overlay::Palette { input, sel } => palette::render(self, input, *sel, body, buf),
                Overlay::FirstRun => first_run(self, body, buf),
            }
        }
        if self.theme.ascii {
            asciify(area, buf);
        }
    }
}

impl App {
    fn render_header(&self, area: Rect, buf: &mut Buffer) {
        let t = &self.theme;
        let screen = match &self.screen {
            Screen::Home => "home".to_string(),
            Screen::Search => S::SEARCH.to_lowercase(),
            Screen::Entry(id) => id.clone(),
            Screen::Walk => format!(
                "walk {}",
                self.walk
                    .as_ref()
                    .map(|w| w.walk.tree.id.as_str())
                    .unwrap_or("")
            ),
            Screen::Run => S::RUN.to_lowercase(),
        };
        let mut spans = vec![
            Span::styled(S::APP, t.title()),
            Span::styled(t.sep(), t.dim()),
            Span::raw(screen),
        ];
        if let Some(j) = self.job_running() {
            let spin = if t.ascii {
                ["|", "/", "-", "\\"][(self.ticks % 4) as usize]
            } else {
                ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"][(self.ticks % 10) as usize]
            };
            spans.push(Span::styled(
                format!("   {spin} {} {}%", S::PROBE_RUNNING, j.progress),
                t.key(),
            ));
        }
        // Checkpoint bytes being read by the tensor pass (a check, a weights view).
        // The whole plan's bytes since this app's jobs began, never going backwards.
        if let Some((pct, total)) = self.pass.shown() {
            spans.push(Span::styled(
                format!("   {} {pct}% of {}", S::TENSOR_PASS, bytes_text(total)),
                t.dim(),
            ));
        }
        // Follow mode: the last step seen and how long ago (`app/follow.rs`).
        if let Some(f) = &self.follow.header {
            spans.push(Span::styled(t.sep(), t.dim()));
            spans.push(Span::styled(f.clone(), t.dim()));
        }
        Line::from(spans).render(area, buf);
    }
}

/// `2.1 GB`, `340 MB`, `12 kB`.
pub fn bytes_text(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.1} GB", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.0} MB", n / 1e6)
    } else {
        format!("{:.0} kB", (n / 1e3).max(1.0))
    }
}

/// The one-screen hint shown when mltriage starts without a run.
fn first_run(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let w = S::HINT_LINES
        .iter()
        .map(|l| l.chars().count() as u16)
        .max()
        .unwrap_or(40)
        + 4;
    let r = centered(
        area,
        w.min(area.width),
        (S::HINT_LINES.len() as u16 + 2).min(area.height),
    );
    Clear.render(r, buf);
    let lines: Vec<Line> = S::HINT_LINES
        .iter()
        .map(|l| match l.split_once("  ") {
            Some((k, rest)) if !k.is_empty() && !k.contains(' ') || k.starts_with("mltriage ") => {
                Line::from(vec![
                    Span::styled(k.to_string(), t.key()),
                    Span::raw(format!("  {rest}")),
                ])
            }
            _ => Line::raw(*l),
        })
        .collect();
    Paragraph::new(lines)
        .block(pane(app, S::HINT_TITLE, true))
        .wrap(Wrap { trim: false })
        .render(r, buf);
}

fn too_small(area: Rect, buf: &mut Buffer) {
    Clear.render(area, buf);
    let text = vec![
        Line::from(S::TOO_SMALL),
        Line::from(format!("{}×{}", area.width, area.height)),
        Line::from(S::TOO_SMALL_NEED),
    ];
    let y = area.y + area.height.saturating_sub(3) / 2;
    let h = area.height.min(3);
    Paragraph::new(text)
        .alignment(ratatui::layout::Alignment::Center)
        .wrap(Wrap { trim: true })
        .render(Rect::new(area.x, y, area.width, h), buf);
}

/// Replace every non-ASCII symbol in the area (the `--ascii` fallback).
fn asciify(area: Rect, buf: &mut Buffer) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            if let Some(cell) = buf.cell_mut((x, y)) {
                if let Some(r) = theme::ascii_symbol(cell.symbol()) {
                    cell.set_symbol(r);
                }
            }
        }
    }
}

/// A bordered block with a title, highlighted when it has the focus.
pub fn pane(app: &App, title: impl AsRef<str>, focused: bool) -> Block<'static> {
    let t = &app.theme;
    let title = title.as_ref();
    let title = if focused {
        format!("{} {title} ", t.pointer())
    } else {
        format!(" {title} ")
    };
    Block::default()
        .borders(Borders::ALL)
        .border_style(t.border(focused))
        .title(Span::styled(
            title,
            if focused { t.title() } else { Style::new() },
        ))
}

/// A line of `text` with the byte ranges in `hl` emphasised.
pub fn highlighted(
    text: &str,
    hl: &[(usize, usize)],
    base: Style,
    emph: Style,
) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut at = 0;
    let mut ranges = hl.to_vec();
    ranges.sort();
    for (a, b) in ranges {
        if a < at
            || b > text.len()
            || a >= b
            || !text.is_char_boundary(a)
            || !text.is_char_boundary(b)
        {
            continue;
        }
        if a > at {
            spans.push(Span::styled(text[at..a].to_string(), base));
        }
        spans.push(Span::styled(text[a..b].to_string(), emph));
        at = b;
    }
    if at < text.len() {
        spans.push(Span::styled(text[at..].to_string(), base));
    }
    spans
}

/// Byte ranges of every occurrence of any of `words` (case-sensitive, longest first).
pub fn find_words(text: &str, words: &[String]) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut ws: Vec<&String> = words.iter().filter(|w| !w.trim().is_empty()).collect();
    ws.sort_by_key(|w| std::cmp::Reverse(w.len()));
    for w in ws {
        for (i, _) in text.match_indices(w.as_str()) {
            let r = (i, i + w.len());
            if !out.iter().any(|&(a, b)| r.0 < b && a < r.1) {
                out.push(r);
            }
        }
    }
    out.sort();
    out
}

/// Center a `w`×`h` box in `area` (clamped).
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// Axis labels use the one label formatter of the probes crate (`util::fmt_label`).
pub use mltriage_probes::probes::util::fmt_label as fmt;

/// Scroll offset so that `sel` stays visible in a list of `height` rows.
pub fn scroll_for(sel: usize, height: usize) -> usize {
    if height == 0 {
        0
    } else {
        sel.saturating_sub(height - 1)
    }
}
