//! One metric chart (the run screen draws several, a walk node the one that answered it):
//! the series the probes read (by canonical name, `learning_rate` → `learning_rate/pg1`),
//! the band of the probe that judged it — its own stated expectation, over the steps it
//! judged, never a fixed one — the points a failing or warning probe names (spikes at the
//! steps it lists), exact zeros counted apart (a zero is not a spike), a log y scale when
//! the positive values span more than two decades (or by `L`), and an x axis labelled with
//! what the series counts (step or epoch). Too short for a plot, it says the values in words.

use mltriage_probes::probe::Status;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Widget};

use super::{fmt, pane, strings as S};
use crate::app::series_picker::Scale;
use crate::app::App;
use crate::findings::Finding;
use crate::triage::jobs::SeriesView;

/// One metric chart.
pub struct SeriesChart<'a> {
    /// Canonical metric name (`loss`, `grad_norm`, `learning_rate`, or any series' name).
    pub metric: &'a str,
    pub title: &'a str,
    /// Findings whose verdicts judge this series (band, marked points)…
    pub findings: &'a [Finding],
    /// …when their probe id starts with one of these.
    pub probes: &'a [&'a str],
    /// Only steps in this range (e.g. the first steps for the step-0 loss).
    pub window: Option<(f64, f64)>,
    /// A reference curve drawn beside the series (the declared LR schedule).
    pub reference: Option<(String, Vec<(f64, f64)>)>,
}

/// Probes whose stated expectation (`expected`) is a range of the series' own values, the
/// words the legend gives it, and whether it is about the first steps only.
const BAND_PROBES: [(&str, &str, bool); 3] = [
    ("init_loss", S::BAND_START, true),
    ("first_grad_norm", S::BAND_FIRST_STEP, true),
    ("grad_norm_band", S::BAND_ROLLING, false),
];

/// The band a probe judged a series by, as it stated it.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub lo: f64,
    pub hi: f64,
    /// Steps it is drawn over (`None`: all).
    pub steps: Option<(f64, f64)>,
    pub label: String,
    /// The probe failed or warned: the values outside the band are its claim.
    pub flagged: bool,
}

/// `[a, b]` in a probe's expectation (`6.24 ± 0.5 = [5.74, 6.74]`, `[0.1, 10]; fail > 100`),
/// else `c ± d`, else a single `= x` (`ln 2 = 0.693 (…)`) as a line.
pub fn parse_expected(expected: &str) -> Option<(f64, f64)> {
    if let (Some(a), Some(b)) = (expected.find('['), expected.find(']')) {
        if a < b {
            let inner = &expected[a + 1..b];
            let mut it = inner.split(',').map(|x| x.trim().parse::<f64>());
            if let (Some(Ok(lo)), Some(Ok(hi)), None) = (it.next(), it.next(), it.next()) {
                if lo.is_finite() && hi.is_finite() && lo <= hi {
                    return Some((lo, hi));
                }
            }
        }
        return None;
    }
    // `6.24 ± 0.5`
    if let Some((a, b)) = expected.split_once(" ± ") {
        let c: Option<f64> = a.split_whitespace().last().and_then(|x| x.parse().ok());
        let d: Option<f64> = b
            .split_whitespace()
            .next()
            .and_then(|x| x.trim_end_matches([',', ';', ')']).parse().ok());
        if let (Some(c), Some(d)) = (c, d) {
            if c.is_finite() && d.is_finite() && d >= 0.0 {
                return Some((c - d, c + d));
            }
        }
    }
    let at = expected.find("= ")?;
    let tok = expected[at + 2..].split_whitespace().next()?;
    let v: f64 = tok.trim_end_matches([',', ';', ')']).parse().ok()?;
    v.is_finite().then_some((v, v))
}

/// The band of the probe that judged this chart: the first finding (worst first) of a band
/// probe among `probes` that did not skip.
pub fn judged_band(c: &SeriesChart, x0: f64, x1: f64) -> Option<Band> {
    let f = c.findings.iter().find(|f| {
        f.status != Status::Skip
            && c.probes.iter().any(|p| f.probe.starts_with(p))
            && BAND_PROBES.iter().any(|(b, _, _)| f.probe == *b)
    })?;
    let (_, words, at_start) = BAND_PROBES.iter().find(|(b, _, _)| f.probe == *b)?;
    let (lo, hi) = parse_expected(&f.expected)?;
    let steps = at_start.then(|| {
        let judged = f
            .evidence
            .iter()
            .filter_map(|e| e.steps)
            .map(|(_, b)| b as f64)
            .fold(x0, f64::max);
        (x0, judged.max(x0 + (x1 - x0) / 10.0).min(x1))
    });
    let stated = f
        .expected
        .split(" = [")
        .next()
        .unwrap_or(&f.expected)
        .split(';')
        .next()
        .unwrap_or("")
        .split(" (")
        .next()
        .unwrap_or("")
        .trim();
    Some(Band {
        lo,
        hi,
        steps,
        label: format!("{words} {stated}"),
        flagged: matches!(f.status, Status::Fail | Status::Warn),
    })
}

/// `(steps 12, 40, 41)` in a probe's measurement: the steps it counted.
fn listed_steps(measured: &str) -> Vec<u64> {
    let Some(at) = measured.find("(steps ") else {
        return Vec::new();
    };
    measured[at + 7..]
        .split(')')
        .next()
        .unwrap_or("")
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect()
}

/// Points a failing or warning probe of this chart names, with the word for them: the steps
/// a spike probe lists, the points of a narrow evidence range (the step a first-step probe
/// judged). A point is marked because a probe flagged it, never for being 0 or far out.
fn flagged(c: &SeriesChart, data: &[(f64, f64)]) -> (Vec<(f64, f64)>, &'static str) {
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut word = S::ANOMALY;
    let (x0, x1) = (
        data.first().map_or(0.0, |p| p.0),
        data.last().map_or(0.0, |p| p.0),
    );
    let span = (x1 - x0).max(1.0);
    for f in c.findings {
        if !matches!(f.status, Status::Fail | Status::Warn)
            || !c.probes.iter().any(|p| f.probe.starts_with(p))
        {
            continue;
        }
        if f.probe.contains("spike") {
            word = S::SPIKE;
            for s in listed_steps(&f.measured) {
                out.extend(data.iter().find(|p| p.0 == s as f64));
            }
            continue;
        }
        for (a, b) in f.evidence.iter().filter_map(|e| e.steps) {
            if (b as f64 - a as f64) <= span / 20.0 {
                out.extend(
                    data.iter()
                        .filter(|p| p.0 >= a as f64 && p.0 <= b as f64)
                        .take(50),
                );
            }
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.dedup();
    (out, word)
}

/// Whether to draw on a log scale: asked for, or (auto) when every value is ≥ 0 and the
/// positive ones span more than two decades, or a spike stands over 20× above nine tenths
/// of the points (on a linear axis it would flatten them).
pub fn wants_log(scale: Scale, ys: &[f64]) -> bool {
    let finite = || ys.iter().copied().filter(|y| y.is_finite());
    if finite().any(|y| y < 0.0) {
        return false;
    }
    let pos: Vec<f64> = finite().filter(|y| *y > 0.0).collect();
    if pos.len() < 2 {
        return false;
    }
    let (mn, mx) = pos
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
            (a.min(*y), b.max(*y))
        });
    // The bulk of the points: a spike far above it would press them onto the axis.
    let mut sorted = pos.clone();
    sorted.sort_by(f64::total_cmp);
    let p90 = sorted[(sorted.len() - 1) * 9 / 10];
    match scale {
        Scale::Log => mx > mn,
        Scale::Linear => false,
        Scale::Auto => mx / mn > 100.0 || mx / p90 > 20.0,
    }
}

/// A step as an integer label.
fn step_label(x: f64) -> String {
    format!("{}", x.round() as i64)
}

pub fn series_chart(app: &App, c: &SeriesChart, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let summary = app.run.summary.as_ref();
    let series: Option<&SeriesView> = summary.and_then(|s| s.series_for(c.metric));
    let Some(s) = series else {
        let block = pane(app, c.title, false);
        let inner = block.inner(area);
        block.render(area, buf);
        Line::styled(S::NO_SERIES, t.dim()).render(inner, buf);
        return;
    };
    let unit = summary.map_or("step", |x| x.unit_of(&s.name));
    let in_window = |x: f64| c.window.is_none_or(|(a, b)| x >= a && x <= b);
    let data: Vec<(f64, f64)> = s
        .points
        .iter()
        .copied()
        .filter(|p| p.1.is_finite() && in_window(p.0))
        .collect();
    let shown = s.points.iter().filter(|p| in_window(p.0)).count();
    let nonfinite = shown - data.len();
    let (x0, x1) = (
        data.first().map(|p| p.0).unwrap_or(0.0),
        data.last()
            .map(|p| p.0)
            .unwrap_or(1.0)
            .max(data.first().map(|p| p.0 + 1.0).unwrap_or(1.0)),
    );
    let reference: Vec<(f64, f64)> = c
        .reference
        .as_ref()
        .map(|(_, v)| {
            v.iter()
                .copied()
                .filter(|p| p.1.is_finite() && in_window(p.0))
                .collect()
        })
        .unwrap_or_default();
    let band = judged_band(c, x0, x1);
    let (marks, mark_word) = flagged(c, &data);
    let zeros = data.iter().filter(|p| p.1 == 0.0).count();
    let all_ys: Vec<f64> = data.iter().chain(&reference).map(|p| p.1).collect();
    let log = wants_log(app.run.scale, &all_ys);
    // On a log scale zeros (and a band edge at 0) sit on the floor, half a decade down.
    let min_pos = all_ys
        .iter()
        .copied()
        .filter(|y| *y > 0.0)
        .fold(f64::INFINITY, f64::min);
    let floor = if log { min_pos.log10() - 0.5 } else { 0.0 };
    let ty = |y: f64| {
        if !log {
            y
        } else if y > 0.0 {
            y.log10()
        } else {
            floor
        }
    };
    let tr = |v: &[(f64, f64)]| -> Vec<(f64, f64)> { v.iter().map(|p| (p.0, ty(p.1))).collect() };
    let (data_t, reference_t, marks_t) = (tr(&data), tr(&reference), tr(&marks));
    let mut y0 = data_t
        .iter()
        .chain(&reference_t)
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min);
    let mut y1 = data_t
        .iter()
        .chain(&reference_t)
        .map(|p| p.1)
        .fold(f64::NEG_INFINITY, f64::max);
    // A band edge widens the axis only when that keeps the curve at least half the height
    // (a band far from the values must not press them flat; its legend still says it), or
    // when the probe flagged the values outside it: then that distance is the claim.
    if let Some(b) = band.as_ref().filter(|_| y0.is_finite() && y1.is_finite()) {
        let span = if b.flagged {
            f64::INFINITY
        } else {
            (y1 - y0).max(y1.abs().max(y0.abs()) * 1e-3)
        };
        let (lo, hi) = (ty(b.lo), ty(b.hi));
        for e in [lo, hi] {
            if e < y0 && y0 - e <= span {
                y0 = e;
            } else if e > y1 && e - y1 <= span {
                y1 = e;
            }
        }
    }
    if !y0.is_finite() || !y1.is_finite() {
        (y0, y1) = (0.0, 1.0);
    }
    if y1 - y0 <= y0.abs() * 1e-9 {
        let pad = if y0 == 0.0 { 1.0 } else { y0.abs() * 0.1 };
        y1 = y0 + pad;
        y0 -= pad;
    }
    let band_lines: Vec<[(f64, f64); 2]> = band
        .iter()
        .flat_map(|b| {
            let (a, z) = b.steps.unwrap_or((x0, x1));
            let mut v = vec![[(a, ty(b.lo)), (z, ty(b.lo))]];
            if b.hi > b.lo {
                v.push([(a, ty(b.hi)), (z, ty(b.hi))]);
            }
            v
        })
        .collect();
    let mut datasets = vec![Dataset::default()
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(t.series(0))
        .data(&data_t)];
    // The legend sits on its own line under the plot: it never covers the curve.
    let mut legend = vec![Span::styled(format!("━ {}", s.tag), t.series(0))];
    if !reference_t.is_empty() {
        datasets.push(
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(t.series(1))
                .data(&reference_t),
        );
        let name = c.reference.as_ref().map(|r| r.0.as_str()).unwrap_or("");
        legend.push(Span::styled(format!("  ━ {name}"), t.series(1)));
    }
    for l in &band_lines {
        datasets.push(
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(t.band())
                .data(l),
        );
    }
    if let Some(b) = &band {
        legend.push(Span::styled(format!("  ─ {}", b.label), t.band()));
    }
    if !marks_t.is_empty() {
        datasets.push(
            Dataset::default()
                .marker(Marker::Block)
                .graph_type(GraphType::Scatter)
                .style(t.error())
                .data(&marks_t),
        );
        legend.push(Span::styled(
            format!("  █ {mark_word} ×{}", marks.len()),
            t.error(),
        ));
    }
    if zeros > 0 {
        legend.push(Span::styled(format!("  {} ×{zeros}", S::ZERO), t.dim()));
    }
    let mut title = format!("{} ({shown} pts", c.title);
    if nonfinite > 0 {
        title.push_str(&format!(", ✗ {nonfinite} non-finite"));
    }
    if let Some(a) = marks.first() {
        title.push_str(&format!(", █ {mark_word} at {unit} {}", step_label(a.0)));
    }
    title.push(')');
    if log {
        title.push_str(&format!(" · {}", S::SCALE_LOG));
    } else if app.run.scale == Scale::Linear {
        title.push_str(&format!(" · {}", S::SCALE_LINEAR));
    }
    let block = pane(app, &title, false);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    // Too short for a plot: the values in words, so no number is lost.
    if inner.height < 3 || inner.width < 20 {
        let (mn, mx) = data
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.1), b.max(p.1))
            });
        let mut spans = vec![Span::styled(format!("{} ", s.tag), t.series(0))];
        if let Some(l) = data.last() {
            spans.push(Span::raw(format!(
                "{} {} @{} · min {} · max {}",
                S::LAST,
                fmt(l.1),
                step_label(l.0),
                fmt(mn),
                fmt(mx)
            )));
        }
        if let Some(b) = &band {
            spans.push(Span::styled(format!(" · {}", b.label), t.band()));
        }
        if !marks.is_empty() {
            spans.push(Span::styled(
                format!(" · █ {mark_word} ×{}", marks.len()),
                t.error(),
            ));
        }
        ratatui::widgets::Paragraph::new(Line::from(spans))
            .wrap(ratatui::widgets::Wrap { trim: true })
            .render(inner, buf);
        return;
    }
    // The legend wraps onto a second line when it is wider than the chart and there is room.
    let legend_w: usize = legend.iter().map(|s| s.width()).sum();
    let legend_h = match inner.height {
        0..=4 => 0,
        5..=9 => 1,
        _ => 1 + u16::from(legend_w > inner.width as usize),
    };
    let [plot, legend_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(legend_h)]).areas(inner);
    // Small charts drop the x labels to keep room for the curve; the unit sits between.
    let x_labels = if plot.height >= 4 {
        vec![
            Span::raw(step_label(x0)),
            Span::raw(unit),
            Span::raw(step_label(x1)),
        ]
    } else {
        Vec::new()
    };
    let yv = |y: f64| if log { 10f64.powf(y) } else { y };
    let y_labels = if plot.height >= 6 {
        vec![
            Span::raw(fmt(yv(y0))),
            Span::raw(fmt(yv((y0 + y1) / 2.0))),
            Span::raw(fmt(yv(y1))),
        ]
    } else {
        vec![Span::raw(fmt(yv(y0))), Span::raw(fmt(yv(y1)))]
    };
    Chart::new(datasets)
        .x_axis(
            Axis::default()
                .bounds([x0, x1])
                .labels(x_labels)
                .style(t.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds([y0, y1])
                .labels(y_labels)
                .style(t.dim()),
        )
        .legend_position(None)
        .render(plot, buf);
    if legend_h > 0 {
        ratatui::widgets::Paragraph::new(Line::from(legend))
            .wrap(ratatui::widgets::Wrap { trim: true })
            .render(legend_area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_ranges_and_lines() {
        assert_eq!(
            parse_expected("6.24 ± 0.5 = [5.74, 6.74]"),
            Some((5.74, 6.74))
        );
        assert_eq!(
            parse_expected("[0.1, 10]; fail > 100 or < 0.001"),
            Some((0.1, 10.0))
        );
        assert_eq!(
            parse_expected("ln 2 = 0.693 (DPO: loss_type sigmoid)"),
            Some((0.693, 0.693))
        );
        assert_eq!(
            parse_expected("≤ 1 per 200 steps; fail above 3 in any 200"),
            None
        );
        assert_eq!(parse_expected("[a, b]"), None);
        assert_eq!(parse_expected("6.24 ± 0.5"), Some((5.74, 6.74)));
    }

    #[test]
    fn log_only_when_the_range_spans_decades() {
        let flat: Vec<f64> = (0..50).map(|i| 1.0 + (i % 3) as f64 * 0.1).collect();
        assert!(!wants_log(Scale::Auto, &flat));
        let mut spiky = flat.clone();
        spiky[20] = 68.0 * 1.1; // a 68× spike
        assert!(wants_log(Scale::Auto, &spiky));
        let decades: Vec<f64> = (0..50).map(|i| 10f64.powf(-(i as f64) / 10.0)).collect();
        assert!(wants_log(Scale::Auto, &decades));
        assert!(!wants_log(Scale::Linear, &spiky));
        assert!(wants_log(Scale::Log, &flat));
        let neg = vec![-1.0, 0.5, 300.0];
        assert!(
            !wants_log(Scale::Log, &neg),
            "no log scale with negative values"
        );
    }

    #[test]
    fn spike_steps_from_the_measurement() {
        assert_eq!(
            listed_steps("3 step(s) above 100 or 10× the rolling median (steps 12, 40, 41)"),
            vec![12, 40, 41]
        );
        assert!(listed_steps("no spikes").is_empty());
    }
}
