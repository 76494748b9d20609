//! The run screen's charts on real runs and scripted ones: the series the probes read
//! (Lightning's `grad_2.0_norm_total`, `lr-AdamW/pg1`), the series picker over every series
//! of a run (DPO's `rewards/margins`), bands from the probe that judged a series (never
//! "ln V" on a DPO loss), zeros that are not anomalies, spikes that are called spikes, the
//! log scale, the x axis unit, and small terminals that keep the values.

mod tui_common;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use crossterm::event::KeyCode;
use mltriage::app::series_picker::Scale;
use mltriage::look::theme::Theme;
use mltriage::triage::jobs::{
    JobKind, JobOutput, JobRequest, LiveRunner, ProbeRunner, RunSummary, SeriesView,
};
use mltriage::ui::run::{series_chart, SeriesChart};
use mltriage_probes::probe::{Evidence, Status};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tui_common::*;

fn field(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/field")).join(name)
}

fn live(run: PathBuf) -> mltriage::app::Headless {
    let a = app_with(Some(run.clone()), Theme::default(), None);
    headless(a, Box::new(LiveRunner::new(catalog(), Some(run))))
}

/// The buffer's text, one line per row.
fn text_of(buf: &Buffer) -> String {
    let mut s = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

/// The screen down to the findings pane (drawn by another screen's code, snapshotted there).
fn charts_part(app: &mltriage::app::App, w: u16, h: u16) -> String {
    let text = screen_text(app, w, h);
    text.lines()
        .take_while(|l| !l.starts_with("┌ Findings") && !l.starts_with("┌› Findings"))
        .map(|l| format!("{}\n", l.trim_end()))
        .collect()
}

#[test]
fn lightning_run_charts_the_series_the_probes_read() {
    let mut h = live(field("lightning_healthy"));
    h.key(KeyCode::Char('r'));
    let text = screen_text(&h.app, 120, 40);
    assert!(!text.contains("not logged"), "{text}");
    for want in ["grad_2.0_norm_total", "lr-AdamW/pg1", "train_loss_step"] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    // S2.1 reads the same series the chart draws.
    let s21 = h
        .app
        .run
        .findings
        .iter()
        .find(|f| f.probe == "lr_schedule")
        .expect("lr_schedule answered");
    assert_ne!(s21.status, Status::Skip, "{s21:?}");
    insta::assert_snapshot!("lightning_run_100x30", charts_part(&h.app, 100, 30));
}

#[test]
fn picker_lists_every_series_and_draws_the_chosen_one() {
    let mut h = live(field("trl_dpo_healthy"));
    h.key(KeyCode::Char('r')).key(KeyCode::Char('s'));
    let all = h.app.picker_rows().len();
    let logged = h.app.run.summary.as_ref().unwrap().series.len();
    assert!(all >= 20 && all == logged, "{all} of {logged}");
    let text = screen_text(&h.app, 100, 30);
    assert!(text.contains("logps/chosen"), "{text}");
    h.typ("margins");
    assert_eq!(h.app.picker_rows().len(), 1);
    insta::assert_snapshot!("dpo_picker_margins", charts_part(&h.app, 100, 30));
    h.key(KeyCode::Enter);
    assert!(h.app.run.picker.is_none());
    assert_eq!(h.app.run.picked.as_deref(), Some("rewards/margins"));
    let text = screen_text(&h.app, 100, 30);
    assert!(text.contains("rewards/margins (20 pts"), "{text}");
    // The DPO loss is not judged against ln V of the vocabulary.
    assert!(!text.contains("ln V ="), "{text}");
    assert!(!text.contains("± 0.5"), "{text}");
    // Esc in the picker closes it without choosing; ctrl-u clears the filter.
    h.key(KeyCode::Char('s')).typ("zzz");
    assert!(h.app.picker_rows().is_empty());
    h.ctrl('u');
    assert_eq!(h.app.picker_rows().len(), all);
    h.key(KeyCode::Esc);
    assert!(h.app.run.picker.is_none());
    assert_eq!(h.app.run.picked.as_deref(), Some("rewards/margins"));
}

/// A runner whose run logs a grad norm with 17 exact zeros and one spike, judged by the
/// scripted findings.
struct Zeros {
    findings: Vec<mltriage::findings::Finding>,
}

impl ProbeRunner for Zeros {
    fn run(&mut self, job: &JobRequest, _: &mut dyn FnMut(u8), _: &AtomicBool) -> JobOutput {
        match job.kind {
            JobKind::Attach => {
                let gn: Vec<(f64, f64)> = (0..200)
                    .map(|i| {
                        let v = match i {
                            0..=16 => 0.0,
                            120 => 68.0,
                            _ => 1.0 + (i % 5) as f64 / 20.0,
                        };
                        (i as f64, v)
                    })
                    .collect();
                let loss: Vec<(f64, f64)> = (0..200)
                    .map(|i| (i as f64, 0.69 - i as f64 / 1000.0))
                    .collect();
                let series = vec![
                    SeriesView {
                        name: "grad_norm".into(),
                        tag: "train/grad_norm".into(),
                        points: gn,
                    },
                    SeriesView {
                        name: "loss".into(),
                        tag: "train/loss".into(),
                        points: loss,
                    },
                ];
                JobOutput::Attached(
                    Box::new(RunSummary {
                        root: "scripted".into(),
                        series,
                        ..Default::default()
                    }),
                    self.findings.clone(),
                )
            }
            _ => JobOutput::Findings(Vec::new()),
        }
    }
}

fn zeros_app(findings: Vec<mltriage::findings::Finding>) -> mltriage::app::Headless {
    let a = app_with(Some("scripted".into()), Theme::default(), None);
    let mut h = headless(a, Box::new(Zeros { findings }));
    h.key(KeyCode::Char('r'));
    h
}

#[test]
fn zero_grad_norms_are_not_anomalies_and_spikes_are_spikes() {
    // The first-step probe passed (its band is the first step's), the spike probe warned
    // at step 120.
    let first = finding(
        "S1.2",
        "first_grad_norm",
        Status::Pass,
        "pass",
        "grad_norm(step 17) = 1.1",
        "[0.1, 10]; fail > 100 or < 0.001",
    );
    let mut spikes = finding(
        "S3.2",
        "grad_norm_spikes",
        Status::Warn,
        "once",
        "1 step(s) above 100 or 10× the rolling median (or non-finite) (steps 120)",
        "≤ 1 per 200 steps; fail above 3 in any 200",
    );
    spikes.evidence = vec![Evidence::default().steps(0, 199)];
    let h = zeros_app(vec![spikes.clone(), first]);
    let text = screen_text(&h.app, 120, 40);
    assert!(text.contains("zero ×17"), "{text}");
    assert!(!text.contains("anomaly"), "{text}");
    assert!(text.contains("spike ×1"), "{text}");
    assert!(text.contains("spike at step 120"), "{text}");
    // A 68× spike over the rest: the auto scale is log.
    assert!(text.contains("· log"), "{text}");
    assert!(text.contains("first step [0.1, 10]"), "{text}");

    // The spikes node alone (as the walk draws it): no band, never "first-step band".
    let c = SeriesChart {
        metric: "grad_norm",
        title: "grad norm",
        findings: std::slice::from_ref(&spikes),
        probes: &["grad_norm_spikes"],
        window: None,
        reference: None,
    };
    let area = Rect::new(0, 0, 90, 14);
    let mut buf = Buffer::empty(area);
    series_chart(&h.app, &c, area, &mut buf);
    let chart = text_of(&buf);
    assert!(chart.contains("spike ×1"), "{chart}");
    assert!(!chart.contains("band"), "{chart}");
    assert!(!chart.contains("first step"), "{chart}");
    assert!(
        chart.contains("step"),
        "the x axis says what it counts:\n{chart}"
    );
    insta::assert_snapshot!("spikes_node_chart", text_of(&buf));
}

#[test]
fn log_scale_toggles_auto_log_linear() {
    let mut h = zeros_app(Vec::new());
    assert_eq!(h.app.run.scale, Scale::Auto);
    h.key(KeyCode::Char('L'));
    assert_eq!(h.app.run.scale, Scale::Log);
    let text = screen_text(&h.app, 120, 40);
    assert!(text.contains("loss (200 pts) · log"), "{text}");
    h.key(KeyCode::Char('L'));
    assert_eq!(h.app.run.scale, Scale::Linear);
    let text = screen_text(&h.app, 120, 40);
    assert!(text.contains("grad norm (200 pts) · lin"), "{text}");
    assert!(!text.contains("· log"), "{text}");
    h.key(KeyCode::Char('L'));
    assert_eq!(h.app.run.scale, Scale::Auto);
}

#[test]
fn a_failed_init_loss_band_is_the_probes_own() {
    // The scripted run: init_loss failed with "6.24 ± 0.5": the band is drawn as the probe
    // stated it, over the first steps only, and the failing point is marked.
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let mut h = headless(a, scripted(None));
    h.key(KeyCode::Char('r'));
    let text = screen_text(&h.app, 120, 40);
    assert!(text.contains("start 6.24 ± 0.5"), "{text}");
    assert!(
        text.contains("anomaly ×1"),
        "only the step the probe judged:\n{text}"
    );
    assert!(!text.contains("ln V ="), "{text}");
}

#[test]
fn small_terminals_keep_the_values() {
    let a = app_with(Some("fixtures/scripted_run".into()), Theme::default(), None);
    let mut h = headless(a, scripted(None));
    h.key(KeyCode::Char('r'));
    for (w, hgt) in [(80u16, 24u16), (40, 12)] {
        let text = screen_text(&h.app, w, hgt);
        // The loss runs 9 → 6.01 against the probe's band down to 5.74: both ends of the
        // axis are labelled, and the failing step-0 point is marked.
        assert!(text.contains("9.00"), "{w}×{hgt}:\n{text}");
        assert!(text.contains("5.74"), "{w}×{hgt}:\n{text}");
        assert!(text.contains("anomaly at step 0"), "{w}×{hgt}:\n{text}");
    }
    insta::assert_snapshot!("run_40x12", charts_part(&h.app, 40, 12));
    insta::assert_snapshot!("run_80x24", charts_part(&h.app, 80, 24));
    // The picker fits a small terminal too.
    h.key(KeyCode::Char('s'));
    for (w, hgt) in [(80u16, 24u16), (40, 12), (40, 10)] {
        let text = screen_text(&h.app, w, hgt);
        assert!(text.contains("Series"), "{w}×{hgt}:\n{text}");
    }
}

/// A safetensors file holding one F32 tensor.
fn write_safetensors(path: &std::path::Path, name: &str, vals: &[f32]) {
    let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let header = format!(
        "{{\"{name}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[0,{}]}}}}",
        vals.len(),
        data.len()
    );
    let mut h = header.into_bytes();
    while h.len() % 8 != 0 {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend(data);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, out).unwrap();
}

#[test]
fn drift_chart_shows_before_and_after_at_the_steps_compared() {
    use mltriage::triage::jobs::tensor_view;
    let dir = tempfile::tempdir().unwrap();
    let t = "backbone.bn1.running_mean";
    let before: Vec<f32> = (0..64).map(|i| i as f32 / 64.0).collect();
    let after: Vec<f32> = (0..64).map(|i| 2.0 + i as f32 / 16.0).collect();
    let newest: Vec<f32> = vec![9.0; 64];
    write_safetensors(&dir.path().join("step_100/model.safetensors"), t, &newest);
    write_safetensors(&dir.path().join("step_320/model.safetensors"), t, &before);
    write_safetensors(&dir.path().join("step_384/model.safetensors"), t, &after);
    write_safetensors(&dir.path().join("step_400/model.safetensors"), t, &newest);
    // The finding compared 320 and 384: the chart asks for those two checkpoints.
    let mut f = finding(
        "O5",
        "bn_drift",
        Status::Fail,
        "drift",
        "1 of 1 frozen BatchNorm layers changed running stats between steps 320 and 384",
        "running_mean/var constant where the layer is frozen",
    );
    f.evidence = vec![Evidence::default().steps(320, 384).tensor(t)];
    let kind = tensor_view(t, std::slice::from_ref(&f));
    assert_eq!(
        kind,
        JobKind::HistogramAt {
            tensor: t.into(),
            steps: vec![320, 384]
        }
    );
    let req = JobRequest {
        id: 1,
        kind,
        facts: Default::default(),
    };
    let mut runner = LiveRunner::new(catalog(), Some(dir.path().to_path_buf()));
    let out = runner.run(&req, &mut |_| {}, &AtomicBool::new(false));
    let JobOutput::Histogram(h) = out else {
        panic!("{out:?}")
    };
    let a = app();
    let area = Rect::new(0, 0, 100, 16);
    let mut buf = Buffer::empty(area);
    mltriage::ui::weights::tensor_hist(&a, &h, area, &mut buf);
    let text = text_of(&buf);
    assert!(text.contains("before @320"), "{text}");
    assert!(text.contains("after @384"), "{text}");
    assert!(!text.contains("now"), "{text}");
    assert!(!text.contains("@100") && !text.contains("@400"), "{text}");
    // Measured at one step: that checkpoint, not the newest.
    f.evidence = vec![Evidence::default().steps(100, 100).tensor(t)];
    let kind = tensor_view(t, std::slice::from_ref(&f));
    let req = JobRequest {
        id: 2,
        kind,
        facts: Default::default(),
    };
    let JobOutput::Histogram(h) = runner.run(&req, &mut |_| {}, &AtomicBool::new(false)) else {
        panic!("no histogram")
    };
    let mut buf = Buffer::empty(area);
    mltriage::ui::weights::tensor_hist(&a, &h, area, &mut buf);
    let text = text_of(&buf);
    assert!(text.contains("measured @100"), "{text}");
    assert!(!text.contains("@400"), "{text}");
}

#[test]
fn the_x_axis_says_epoch_for_a_series_counted_in_epochs() {
    let mut h = zeros_app(Vec::new());
    let text = screen_text(&h.app, 120, 40);
    assert!(text.contains(" step "), "{text}");
    assert!(!text.contains(" epoch "), "{text}");
    h.app
        .run
        .summary
        .as_mut()
        .unwrap()
        .epoch_series
        .push("loss".into());
    let text = screen_text(&h.app, 120, 40);
    let loss: String = text.lines().take(12).collect::<Vec<_>>().join("\n");
    assert!(loss.contains(" epoch "), "{loss}");
}

#[test]
fn picking_a_second_lr_group_draws_that_group() {
    let mut h = live(field("lightning_healthy"));
    h.key(KeyCode::Char('r')).key(KeyCode::Char('s')).typ("pg2");
    assert_eq!(h.app.picker_rows().len(), 1);
    h.key(KeyCode::Enter);
    let text = screen_text(&h.app, 120, 40);
    assert!(text.contains("━ lr-AdamW/pg2"), "{text}");
    // Its own chart, at the top: not the default chart of the group the probes read.
    assert!(text.contains("┌ lr-AdamW/pg2 (30 pts"), "{text}");
    assert!(!text.contains("━ lr-AdamW/pg1"), "{text}");
}

#[test]
fn the_picker_and_charts_render_at_any_size_without_panicking() {
    let mut h = live(field("trl_dpo_healthy"));
    h.key(KeyCode::Char('r'));
    for picker in [false, true] {
        if picker {
            h.key(KeyCode::Char('s'));
        }
        for w in [1u16, 20, 39, 40, 41, 59, 60, 61, 80, 200] {
            for hgt in [1u16, 5, 9, 10, 11, 12, 13, 24, 60] {
                let _ = screen_text(&h.app, w, hgt);
            }
        }
    }
}

#[test]
fn a_tensor_finding_at_a_step_with_no_checkpoint_falls_back_to_init_and_newest() {
    let dir = tempfile::tempdir().unwrap();
    let t = "fc.weight";
    write_safetensors(&dir.path().join("step_0/model.safetensors"), t, &[0.5; 16]);
    write_safetensors(&dir.path().join("step_50/model.safetensors"), t, &[1.5; 16]);
    let req = JobRequest {
        id: 1,
        kind: JobKind::HistogramAt {
            tensor: t.into(),
            steps: vec![7],
        },
        facts: Default::default(),
    };
    let mut runner = LiveRunner::new(catalog(), Some(dir.path().to_path_buf()));
    let JobOutput::Histogram(h) = runner.run(&req, &mut |_| {}, &AtomicBool::new(false)) else {
        panic!("no histogram")
    };
    let labels: Vec<(String, Option<u64>)> =
        h.sides.iter().map(|s| (s.label.clone(), s.step)).collect();
    assert_eq!(
        labels,
        vec![("init".to_string(), Some(0)), ("now".to_string(), Some(50))]
    );
}
