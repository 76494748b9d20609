//! Run: loss, grad-norm and learning-rate charts from the run's metric logs, with the
//! playbook's threshold bands drawn as lines and anomalies (points the findings name, or
//! outside the band) marked; the weights pane beside them (a checkpoint tensor's histogram,
//! init vs now); the findings list below (Tab cycles charts → findings → tensors, Enter
//! opens a finding's entry). Narrower than 60 columns the weights replace the charts while
//! their pane has the focus.

use mltriage_probes::probe::Status;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Widget};

use super::{fmt, home::findings_pane, pane, strings as S, weights};
use crate::app::App;
use crate::catalog::Threshold;
use crate::triage::jobs::SeriesView;

/// One chart: canonical metric name, title, probe-id prefixes whose findings mark it.
const CHARTS: [(&str, &str, &[&str]); 3] = [
    ("loss", "loss", &["init_loss", "loss_"]),
    ("grad_norm", "grad norm", &["first_grad_norm", "grad_norm"]),
    ("learning_rate", "learning rate", &["lr_"]),
];

fn threshold(app: &App, probe: &str, key: &str) -> Option<f64> {
    match app.cat.probe(probe)?.thresholds.get(key)? {
        Threshold::Num(v) => Some(*v),
        Threshold::Text(s) => s.parse().ok(),
    }
}

/// (low, high) band for a metric, when the playbook and facts give one.
fn band(app: &App, metric: &str) -> Option<(f64, f64, String)> {
    match metric {
        "grad_norm" => Some((
            threshold(app, "first_grad_norm", "pass_lo")?,
            threshold(app, "first_grad_norm", "pass_hi")?,
            "first-step band".into(),
        )),
        "loss" => {
            let v = app
                .all_facts()
                .f64("vocab_size")
                .or_else(|| app.all_facts().f64("num_classes"))?;
            let l = v.max(2.0).ln();
            Some((l - 0.5, l + 0.5, format!("ln V = {l:.2} ± 0.5")))
        }
        "learning_rate" => {
            let m = app.all_facts().f64("lr_max")?;
            Some((m * 0.95, m * 1.05, "lr_max ± 5%".into()))
        }
        _ => None,
    }
}

fn chart(app: &App, metric: &str, title: &str, probes: &[&str], area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let series: Option<&SeriesView> = app
        .run
        .summary
        .as_ref()
        .and_then(|s| s.series.iter().find(|x| x.name == metric));
    let block = pane(app, title, false);
    let Some(s) = series.filter(|s| !s.points.is_empty()) else {
        let inner = block.inner(area);
        block.render(area, buf);
        Line::styled(S::NO_SERIES, t.dim()).render(inner, buf);
        return;
    };
    let data: Vec<(f64, f64)> = s
        .points
        .iter()
        .copied()
        .filter(|p| p.1.is_finite())
        .collect();
    let nonfinite = s.points.len() - data.len();
    let (x0, x1) = (
        data.first().map(|p| p.0).unwrap_or(0.0),
        data.last()
            .map(|p| p.0)
            .unwrap_or(1.0)
            .max(data.first().map(|p| p.0 + 1.0).unwrap_or(1.0)),
    );
    let mut y0 = data.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let mut y1 = data.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let band = band(app, metric);
    if let Some((lo, hi, _)) = &band {
        y0 = y0.min(*lo);
        y1 = y1.max(*hi);
    }
    if !y0.is_finite() || !y1.is_finite() {
        (y0, y1) = (0.0, 1.0);
    }
    if y1 - y0 <= y0.abs() * 1e-9 {
        let pad = if y0 == 0.0 { 1.0 } else { y0.abs() * 0.1 };
        y1 = y0 + pad;
        y0 -= pad;
    }
    // Anomalies: steps named by failing/warning findings of this chart's probes, and
    // points outside the band.
    let mut anomalies: Vec<(f64, f64)> = Vec::new();
    for f in &app.run.findings {
        if !matches!(f.status, Status::Fail | Status::Warn)
            || !probes.iter().any(|p| f.probe.starts_with(p))
        {
            continue;
        }
        for ev in &f.evidence {
            if let Some((a, _)) = ev.steps {
                if let Some(p) = data.iter().find(|p| p.0 >= a as f64) {
                    anomalies.push(*p);
                }
            }
        }
    }
    if let Some((lo, hi, _)) = &band {
        if metric == "grad_norm" {
            anomalies.extend(
                data.iter()
                    .filter(|p| p.1 > *hi * 10.0 || p.1 < *lo / 10.0)
                    .take(50),
            );
        }
    }
    let band_lines: Vec<[(f64, f64); 2]> = band
        .iter()
        .flat_map(|(lo, hi, _)| [[(x0, *lo), (x1, *lo)], [(x0, *hi), (x1, *hi)]])
        .collect();
    let mut datasets = vec![Dataset::default()
        .name(s.tag.clone())
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(t.series(0))
        .data(&data)];
    for (i, l) in band_lines.iter().enumerate() {
        let ds = Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(t.band())
            .data(l);
        datasets.push(if i == 0 {
            ds.name(format!(
                "{} {}",
                S::BAND,
                band.as_ref().map(|b| b.2.as_str()).unwrap_or("")
            ))
        } else {
            ds
        });
    }
    if !anomalies.is_empty() {
        datasets.push(
            Dataset::default()
                .name(format!("× {}", S::ANOMALY))
                .marker(Marker::Block)
                .graph_type(GraphType::Scatter)
                .style(t.error())
                .data(&anomalies),
        );
    }
    let mut title = format!("{title} ({} pts", s.points.len());
    if nonfinite > 0 {
        title.push_str(&format!(", ✗ {nonfinite} non-finite"));
    }
    if let Some(a) = anomalies.first() {
        title.push_str(&format!(", █ {} at step {}", S::ANOMALY, a.0));
    }
    title.push(')');
    let block = pane(app, &title, false);
    // Small charts drop the x labels to keep room for the curve.
    let x_labels = if area.height >= 8 {
        vec![Span::raw(fmt(x0)), Span::raw(fmt(x1))]
    } else {
        Vec::new()
    };
    Chart::new(datasets)
        .block(block)
        .x_axis(
            Axis::default()
                .bounds([x0, x1])
                .labels(x_labels)
                .style(t.dim()),
        )
        .y_axis(
            Axis::default()
                .bounds([y0, y1])
                .labels([Span::raw(fmt(y0)), Span::raw(fmt(y1))])
                .style(t.dim()),
        )
        .hidden_legend_constraints((Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)))
        .render(area, buf);
}

pub fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    if app.run.attached.is_none() {
        let block = pane(app, S::RUN, true);
        let inner = block.inner(area);
        block.render(area, buf);
        Paragraph::new(Line::styled(S::NO_RUN_ATTACHED, t.dim())).render(inner, buf);
        return;
    }
    let findings_h = (app.run.findings.len() as u16 + 2)
        .clamp(3, 8)
        .min(area.height / 4);
    let [top, below] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(findings_h)]).areas(area);
    // Weights beside the charts; a narrow terminal shows one or the other (the focus picks).
    let weights_focused = app.run.pane == 2;
    let weights_w = if top.width >= 60 {
        (top.width / 2).max(38).min(top.width - 20)
    } else if weights_focused {
        top.width
    } else {
        0
    };
    let [charts, weights_area] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(weights_w)]).areas(top);
    if charts.width > 0 {
        let rows = Layout::vertical([Constraint::Ratio(1, 3); 3]).split(charts);
        for (i, (m, title, probes)) in CHARTS.iter().enumerate() {
            chart(app, m, title, probes, rows[i], buf);
        }
    }
    if weights_area.width > 0 {
        weights::render(app, weights_focused, weights_area, buf);
    }
    findings_pane(app, app.run.pane == 1, below, buf);
}
