//! Run: the metric charts — loss, grad norm and learning rate as the probes read them
//! (`learning_rate` is Lightning's `lr-AdamW/pg1` when that is what the run logs), and first
//! the series chosen in the picker (`s`), each drawn by [`super::chart`] with the band of the
//! probe that judged it; the weights pane beside them (a checkpoint tensor's histogram, init
//! vs now); the findings list below (Tab cycles charts → findings → tensors, Enter opens a
//! finding's entry). As many charts as fit (at least one, with its values in words when even
//! that is short); narrower than 60 columns the weights replace the charts while their pane
//! has the focus.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

pub use super::chart::{series_chart, SeriesChart};
use super::{home::findings_pane, pane, series_picker, strings as S, weights};
use crate::app::App;

/// The default charts: canonical metric name, title, probe-id prefixes whose findings
/// judge it.
const CHARTS: [(&str, &str, &[&str]); 3] = [
    ("loss", "loss", &["init_loss", "loss_"]),
    (
        "grad_norm",
        "grad norm",
        &["first_grad_norm", "grad_norm_band", "grad_norm_spikes"],
    ),
    ("learning_rate", "learning rate", &["lr_"]),
];

/// Rows a chart needs to show its curve, its value labels and its legend.
const CHART_ROWS: u16 = 5;

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
        .min(area.height / 3);
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
        let summary = app.run.summary.as_ref();
        // The default chart drawing the picked series (the one the probes read), if any.
        let picked = app.run.picked.as_deref();
        let default_of = |p: &str| {
            CHARTS.iter().position(|(m, _, _)| {
                summary
                    .and_then(|s| s.series_for(m))
                    .is_some_and(|s| s.name == p)
            })
        };
        let mut slots: Vec<(&str, &str, &[&str])> = Vec::new();
        let mut rest: Vec<(&str, &str, &[&str])> = CHARTS.to_vec();
        match picked.map(|p| (p, default_of(p))) {
            // A default chart the picker chose moves to the top.
            Some((_, Some(i))) => slots.push(rest.remove(i)),
            Some((p, None)) => {
                let tag = summary
                    .and_then(|s| s.series_for(p))
                    .map_or(p, |s| s.tag.as_str());
                slots.push((p, tag, &[]));
            }
            None => {}
        }
        slots.extend(rest);
        let n = (charts.height / CHART_ROWS).clamp(1, 3) as usize;
        let rows = Layout::vertical(vec![Constraint::Ratio(1, n as u32); n]).split(charts);
        for (i, (m, title, probes)) in slots.iter().take(n).enumerate() {
            let c = SeriesChart {
                metric: m,
                title,
                findings: &app.run.findings,
                probes,
                window: None,
                reference: None,
            };
            series_chart(app, &c, rows[i], buf);
        }
    }
    if weights_area.width > 0 {
        weights::render(app, weights_focused, weights_area, buf);
    }
    findings_pane(app, app.run.pane == 1, below, buf);
    if app.run.picker.is_some() {
        series_picker::render(app, area, buf);
    }
}
