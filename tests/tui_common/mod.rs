//! Shared helpers for the TUI tests: build an app over the embedded catalog, render it on a
//! `TestBackend`, and a scripted probe runner.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use mltriage::app::{App, AppOptions, Headless, Keymap};
use mltriage::catalog::Catalog;
use mltriage::findings::Finding;
use mltriage::look::theme::Theme;
use mltriage::search::SearchIndex;
use mltriage::triage::jobs::{JobKind, JobOutput, JobRequest, ProbeRunner, RunSummary, SeriesView};
use mltriage::triage::weights::{self, SideInput, TensorHist, TensorList, TensorRow};
use mltriage_probes::probe::Status;
use mltriage_probes::tensors::DType;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

pub fn catalog() -> Arc<Catalog> {
    static CAT: OnceLock<Arc<Catalog>> = OnceLock::new();
    CAT.get_or_init(|| Arc::new(Catalog::embedded().expect("embedded catalog loads")))
        .clone()
}

pub fn index() -> Arc<SearchIndex> {
    static IDX: OnceLock<Arc<SearchIndex>> = OnceLock::new();
    IDX.get_or_init(|| Arc::new(SearchIndex::build(&catalog()).expect("index builds")))
        .clone()
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures")).join(name)
}

pub fn app_with(run: Option<PathBuf>, theme: Theme, export_dir: Option<PathBuf>) -> App {
    App::new(
        catalog(),
        index(),
        Keymap::default(),
        AppOptions {
            run,
            facts: Default::default(),
            theme,
            export_dir,
        },
    )
}

pub fn app() -> App {
    app_with(None, Theme::default(), None)
}

pub fn render(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| f.render_widget(app, f.area())).expect("draw");
    t
}

/// The rendered screen as plain text, one line per row.
pub fn screen_text(app: &App, w: u16, h: u16) -> String {
    let t = render(app, w, h);
    let buf = t.backend().buffer();
    let mut s = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            s.push_str(buf[(x, y)].symbol());
        }
        s.push('\n');
    }
    s
}

/// Answers every job from a script: a fixed run summary, and for probe jobs the finding
/// the test configured (or `skip`).
pub struct ScriptedRunner {
    pub probe_outcome: Option<(String, Status, String, String)>,
}

impl ProbeRunner for ScriptedRunner {
    fn run(
        &mut self,
        job: &JobRequest,
        progress: &mut dyn FnMut(u8),
        _cancel: &AtomicBool,
    ) -> JobOutput {
        progress(50);
        match &job.kind {
            JobKind::Attach => {
                let loss: Vec<(f64, f64)> = (0..300)
                    .map(|i| (i as f64, 9.0 - (i as f64) / 100.0))
                    .collect();
                let gn: Vec<(f64, f64)> = (0..300)
                    .map(|i| {
                        (
                            i as f64,
                            if i == 120 {
                                400.0
                            } else {
                                1.0 + (i % 7) as f64 / 10.0
                            },
                        )
                    })
                    .collect();
                let lr: Vec<(f64, f64)> = (0..300).map(|i| (i as f64, 1e-3)).collect();
                let series = [
                    ("loss", "train/loss", loss),
                    ("grad_norm", "train/grad_norm", gn),
                    ("learning_rate", "train/learning_rate", lr),
                ]
                .into_iter()
                .map(|(n, t, p)| SeriesView {
                    name: n.into(),
                    tag: t.into(),
                    points: p,
                })
                .collect();
                let summary = RunSummary {
                    profile: String::new(),
                    root: "fixtures/scripted_run".into(),
                    artifacts: 7,
                    checkpoints: vec![0, 300],
                    max_step: Some(300),
                    metric_names: vec!["grad_norm".into(), "learning_rate".into(), "loss".into()],
                    series,
                    device: "cpu".into(),
                    ..Default::default()
                };
                JobOutput::Attached(
                    Box::new(summary),
                    vec![finding(
                        "S1.1",
                        "init_loss",
                        Status::Fail,
                        "high",
                        "loss0 = 9.10",
                        "6.24 ± 0.5",
                    )],
                )
            }
            JobKind::Probe { probe } => match &self.probe_outcome {
                Some((outcome, status, measured, expected)) => JobOutput::Findings(vec![finding(
                    "S1.1", probe, *status, outcome, measured, expected,
                )]),
                None => {
                    JobOutput::Findings(vec![finding("S1.1", probe, Status::Skip, "skip", "", "")])
                }
            },
            JobKind::Tensors => JobOutput::Tensors(Box::new(scripted_tensors())),
            JobKind::Histogram { tensor } => match scripted_hist(tensor) {
                Some(h) => JobOutput::Histogram(Box::new(h)),
                None => JobOutput::Failed(format!("{tensor}: no such tensor")),
            },
            _ => JobOutput::Findings(Vec::new()),
        }
    }
}

/// A deterministic N(0, 1)-looking sample (sum of uniforms from an LCG).
fn gaussianish(n: usize, scale: f32) -> Vec<f32> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            let mut s = 0.0f32;
            for _ in 0..12 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s += (x >> 40) as f32 / (1u64 << 24) as f32;
            }
            (s - 6.0) * scale
        })
        .collect()
}

fn le(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Two tensors: an embedding that collapsed from std 1 to a spike at 0, and a norm weight.
pub fn scripted_tensors() -> TensorList {
    TensorList {
        now_step: Some(300),
        init_step: Some(0),
        rows: vec![
            TensorRow {
                name: "model.embed.weight".into(),
                dtype: "F32".into(),
                shape: vec![512, 8],
                in_now: true,
                in_init: true,
            },
            TensorRow {
                name: "model.norm.weight".into(),
                dtype: "F32".into(),
                shape: vec![8],
                in_now: true,
                in_init: true,
            },
        ],
        problems: Vec::new(),
    }
}

pub fn scripted_hist(tensor: &str) -> Option<TensorHist> {
    let (init, now, shape) = match tensor {
        "model.embed.weight" => (
            gaussianish(4096, 1.0),
            gaussianish(4096, 0.01),
            vec![512, 8],
        ),
        "model.norm.weight" => (vec![1.0; 8], vec![f32::NAN; 8], vec![8]),
        _ => return None,
    };
    let (init, now) = (le(&init), le(&now));
    Some(weights::from_bytes(
        tensor,
        &[
            SideInput {
                label: "init",
                step: 0,
                dtype: DType::F32,
                shape: shape.clone(),
                bytes: &init,
            },
            SideInput {
                label: "now",
                step: 300,
                dtype: DType::F32,
                shape,
                bytes: &now,
            },
        ],
    ))
}

pub fn finding(
    id: &str,
    probe: &str,
    status: Status,
    outcome: &str,
    measured: &str,
    expected: &str,
) -> Finding {
    let cat = catalog();
    Finding {
        id: id.into(),
        status,
        title: cat.entry(id).map(|e| e.title.clone()).unwrap_or_default(),
        probe: probe.into(),
        measured: measured.into(),
        expected: expected.into(),
        evidence: vec![mltriage_probes::probe::Evidence::default().steps(0, 0)],
        message: "scripted".into(),
        outcome: outcome.into(),
        explained_by: Vec::new(),
        nodes: Vec::new(),
        context_for: None,
        priority: 1,
    }
}

pub fn scripted(outcome: Option<(&str, Status, &str, &str)>) -> Box<ScriptedRunner> {
    Box::new(ScriptedRunner {
        probe_outcome: outcome.map(|(o, s, m, e)| (o.into(), s, m.into(), e.into())),
    })
}

pub fn headless(app: App, runner: Box<dyn ProbeRunner>) -> Headless {
    Headless::new(app, runner)
}
