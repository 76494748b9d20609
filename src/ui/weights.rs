//! The run screen's weights pane: the checkpoint tensors (j/k when focused) and the selected
//! tensor's dtype, shape, mean, std, min, max, zero% and non-finite counts, with a histogram
//! per checkpoint (init vs now) over one shared range so a collapse to a spike at 0 or a
//! blown-up init shows. Shrinks to fit: fewer list rows, stats on one line or two, and the
//! bars only when there is room for them.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::bar;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline, Widget};

use super::{fmt, pane, scroll_for, strings as S};
use crate::app::App;
use crate::triage::weights::{resample, HistSide, TensorHist, TensorRow};

/// The tallest histogram drawn, in rows.
const MAX_BARS_H: u16 = 12;

/// Bars in ASCII mode (`--ascii`).
const ASCII_BARS: bar::Set<'static> = bar::Set {
    full: "#",
    seven_eighths: "#",
    three_quarters: "#",
    five_eighths: "=",
    half: "=",
    three_eighths: "-",
    one_quarter: "-",
    one_eighth: ".",
    empty: " ",
};

fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

pub fn render(app: &App, focused: bool, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let r = &app.run;
    let title = match r.tensors.as_ref() {
        Some(l) => match (l.now_step, l.init_step) {
            (Some(n), Some(i)) => format!("{} · step {n} vs init {i}", S::WEIGHTS),
            (Some(n), None) => format!("{} · step {n}", S::WEIGHTS),
            _ => S::WEIGHTS.to_string(),
        },
        None => S::WEIGHTS.to_string(),
    };
    let block = pane(app, title, focused);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let Some(list) = r.tensors.as_ref() else {
        let line = match (&r.tensors_error, r.tensors_job) {
            (Some(e), _) => Line::styled(format!("✗ {e}"), t.error()),
            (None, Some(_)) => Line::styled(S::READING_TENSORS, t.dim()),
            (None, None) => Line::styled(S::NO_TENSORS, t.dim()),
        };
        Paragraph::new(line).render(inner, buf);
        return;
    };
    if list.rows.is_empty() {
        let mut lines = vec![Line::styled(S::NO_CHECKPOINT, t.dim())];
        lines.extend(
            list.problems
                .iter()
                .map(|p| Line::styled(format!("✗ {p}"), t.error())),
        );
        Paragraph::new(lines).render(inner, buf);
        return;
    }
    let list_h = (list.rows.len() as u16)
        .min((inner.height / 4).max(1))
        .min(inner.height);
    let [list_area, head, hist_area] = Layout::vertical([
        Constraint::Length(list_h),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(inner);
    tensor_list(
        app,
        &list.rows,
        focused,
        list.init_step.is_some(),
        list_area,
        buf,
    );
    let Some(row) = list.rows.get(r.tensor_sel) else {
        return;
    };
    Line::from(vec![
        Span::styled(format!("{} {}", row.dtype, shape_text(&row.shape)), t.key()),
        Span::styled(format!(" · {} values", row.numel()), t.dim()),
    ])
    .render(head, buf);
    if hist_area.height == 0 {
        return;
    }
    match r.hist.as_ref().filter(|h| h.tensor == row.name) {
        Some(h) => hist(app, h, row, hist_area, buf),
        None => {
            let line = match &r.hist_error {
                Some(e) if r.hist_job.is_none() => Line::styled(format!("✗ {e}"), t.error()),
                _ => Line::styled(S::COMPUTING_HIST, t.dim()),
            };
            line.render(hist_area, buf);
        }
    }
}

fn tensor_list(
    app: &App,
    rows: &[TensorRow],
    focused: bool,
    has_init: bool,
    area: Rect,
    buf: &mut Buffer,
) {
    let t = &app.theme;
    let sel = app.run.tensor_sel;
    let skip = scroll_for(sel, area.height as usize);
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(skip)
        .take(area.height as usize)
        .map(|(i, r)| {
            let mut spans = vec![
                Span::raw(if i == sel { t.pointer() } else { " " }),
                Span::raw(r.name.clone()),
                Span::styled(format!(" {}", shape_text(&r.shape)), t.dim()),
            ];
            if has_init && !r.in_init {
                spans.push(Span::styled(" (not in init)", t.dim()));
            } else if !r.in_now {
                spans.push(Span::styled(" (init only)", t.dim()));
            }
            let l = Line::from(spans);
            if focused && i == sel {
                l.style(t.selected())
            } else {
                l
            }
        })
        .collect();
    Paragraph::new(lines).render(area, buf);
}

/// `init @0` / `now @300` (or `before @320` / `after @384`, the two checkpoints a finding
/// compared), padded to the same width.
fn side_label(h: &TensorHist, s: &HistSide) -> String {
    let w = h
        .sides
        .iter()
        .map(|x| labelled(x).chars().count())
        .max()
        .unwrap_or(0);
    format!("{:<w$}", labelled(s))
}

/// `now @300`, or `now @?` when the checkpoint's step is unknown.
fn labelled(s: &HistSide) -> String {
    match s.step {
        Some(step) => format!("{} @{step}", s.label),
        None => format!("{} @?", s.label),
    }
}

/// The statistics of one side, packed into as many lines of `width` as they need (the
/// first starts with the side's label, the others are indented).
fn stats_lines(
    app: &App,
    h: &TensorHist,
    s: &HistSide,
    row: &TensorRow,
    width: u16,
) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut label = side_label(h, s);
    if !s.dtype.is_empty() && (s.dtype != row.dtype || s.shape != row.shape) {
        label.push_str(&format!(" {} {}", s.dtype, shape_text(&s.shape)));
    }
    let head = Span::styled(format!("{label} "), t.heading());
    let Some(st) = s.stats.as_ref() else {
        let why = s.error.clone().unwrap_or_else(|| S::NO_HIST.to_string());
        return vec![Line::from(vec![
            head,
            Span::styled(format!("✗ {why}"), t.error()),
        ])];
    };
    if st.count == 0 {
        return vec![Line::from(vec![
            head,
            Span::styled(S::EMPTY_TENSOR, t.dim()),
        ])];
    }
    let mut items: Vec<Span<'static>> = Vec::new();
    if st.finite > 0 {
        for (k, v) in [
            ("mean", st.mean),
            ("std", st.std),
            ("min", st.min),
            ("max", st.max),
        ] {
            items.push(Span::raw(format!("{k} {}", fmt(v))));
        }
    }
    items.push(Span::raw(format!("zero {:.1}%", st.zero_frac() * 100.0)));
    let nonfinite = st.nonfinite();
    items.push(if nonfinite > 0 {
        Span::styled(
            format!("✗ non-finite {nonfinite} (nan {}, inf {})", st.nan, st.inf),
            t.error(),
        )
    } else {
        Span::raw("non-finite 0")
    });
    let width = width as usize;
    let mut lines: Vec<Vec<Span<'static>>> = vec![vec![head]];
    let mut used = lines[0][0].width();
    for it in items {
        let w = it.width();
        let cur = lines.last_mut().expect("one line at least");
        let fresh = cur.len() <= 1;
        if !fresh && used + 2 + w > width {
            lines.push(vec![Span::raw("  "), it]);
            used = 2 + w;
        } else {
            if !fresh {
                cur.push(Span::raw("  "));
                used += 2;
            }
            cur.push(it);
            used += w;
        }
    }
    lines.into_iter().map(Line::from).collect()
}

/// Every side (init, now) with its statistics, bars and axis.
/// A tensor's histogram without the list (the walk chart of a checkpoint question).
pub fn tensor_hist(app: &App, h: &TensorHist, area: Rect, buf: &mut Buffer) {
    let first = h.sides.last();
    let row = TensorRow {
        name: h.tensor.clone(),
        dtype: first.map(|s| s.dtype.clone()).unwrap_or_default(),
        shape: first.map(|s| s.shape.clone()).unwrap_or_default(),
        in_now: true,
        in_init: h.sides.len() > 1,
    };
    hist(app, h, &row, area, buf);
}

fn hist(app: &App, h: &TensorHist, row: &TensorRow, area: Rect, buf: &mut Buffer) {
    let n = h.sides.len().max(1) as u32;
    let side_by_side = h.sides.len() > 1 && area.width >= 90;
    let areas = if side_by_side {
        Layout::horizontal(vec![Constraint::Ratio(1, n); n as usize])
            .spacing(1)
            .split(area)
    } else {
        Layout::vertical(vec![Constraint::Ratio(1, n); n as usize]).split(area)
    };
    for (s, a) in h.sides.iter().zip(areas.iter()) {
        side(app, h, s, row, *a, buf);
    }
}

fn side(app: &App, h: &TensorHist, s: &HistSide, row: &TensorRow, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    if area.height == 0 || area.width == 0 {
        return;
    }
    let lines = stats_lines(app, h, s, row, area.width);
    let stats_h = (lines.len() as u16).min(area.height);
    let [stats, rest] =
        Layout::vertical([Constraint::Length(stats_h), Constraint::Min(0)]).areas(area);
    Paragraph::new(lines).render(stats, buf);
    if rest.height == 0 || s.stats.is_none() {
        return;
    }
    let total: u64 = s.bins.iter().sum();
    if total == 0 {
        if s.stats.as_ref().is_some_and(|st| st.count > 0) {
            Line::styled(S::NO_FINITE, t.dim()).render(rest, buf);
        }
        return;
    }
    // Bars above (at most MAX_BARS_H rows: taller says no more), the range (and where 0
    // is) below when there are two rows or more.
    let axis_h = u16::from(rest.height >= 2);
    let bars_h = (rest.height - axis_h).min(MAX_BARS_H);
    let [bars, axis] =
        Layout::vertical([Constraint::Length(bars_h), Constraint::Length(axis_h)]).areas(rest);
    let cols = bars.width as usize;
    let data = resample(&s.bins, cols);
    let spark = Sparkline::default()
        .data(&data)
        .style(t.series(if matches!(s.label.as_str(), "init" | "before") {
            1
        } else {
            0
        }))
        .bar_set(if t.ascii {
            ASCII_BARS
        } else {
            bar::NINE_LEVELS
        });
    spark.render(bars, buf);
    if axis_h > 0 {
        axis_line(h.lo, h.hi, cols).render(axis, buf);
    }
}

/// `lo … 0 … hi` under the bars.
fn axis_line(lo: f64, hi: f64, cols: usize) -> Line<'static> {
    let mut cells: Vec<char> = vec![' '; cols];
    let mut put = |at: usize, s: &str| {
        for (i, c) in s.chars().enumerate() {
            if let Some(cell) = cells.get_mut(at + i) {
                *cell = c;
            }
        }
    };
    let (l, r) = (fmt(lo), fmt(hi));
    let r_at = cols.saturating_sub(r.chars().count());
    if lo < 0.0 && hi > 0.0 && hi > lo {
        let z = ((-lo / (hi - lo)) * cols as f64) as usize;
        let z = z.min(cols.saturating_sub(1));
        if z > l.chars().count() + 1 && z + 2 < r_at {
            put(z, "0");
        }
    }
    put(0, &l);
    put(r_at, &r);
    Line::raw(cells.into_iter().collect::<String>())
}
