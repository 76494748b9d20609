//! The TUI's jobs and the work behind them: what a job asks ([`JobKind`]), what it gives back
//! ([`JobOutput`]), and [`LiveRunner`], which attaches the run and runs probes (through
//! [`super::check`]) or reads tensors (through [`super::weights`]). The work sits behind
//! [`ProbeRunner`] so tests inject a synchronous runner and the UI never touches candle.
//! Tensor views (the run screen's weight histogram) are a second lane ([`JobKind::is_view`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mltriage_probes::device::{Compute, DeviceRequest};
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::Status;
use mltriage_probes::run::Run;

use super::batch_rows::{label_mask_rows, BatchRows};
use super::check;
use super::weights::{RunWeights, TensorHist, TensorList};
use crate::catalog::Catalog;
use crate::findings::{order, Finding};

pub type JobId = u64;

/// What to compute.
#[derive(Debug, Clone, PartialEq)]
pub enum JobKind {
    /// Discover the run, read its metrics, then run every probe (`check`).
    Attach,
    /// Every probe again (after the user added facts).
    Check,
    /// One probe, for a walk node.
    Probe { probe: String },
    /// The probes answering one entry ("check this").
    EntryCheck { entry: String },
    /// The tensors of the newest (and the init) checkpoint.
    Tensors,
    /// One tensor's statistics and histogram, init vs now.
    Histogram { tensor: String },
    /// A batch's label-mask fraction per row (the walk chart of a batch question).
    BatchRows { file: PathBuf },
    /// One tensor in the checkpoints at these steps: the two a finding compared (before,
    /// after) or the one it measured.
    HistogramAt { tensor: String, steps: Vec<u64> },
}

impl JobKind {
    /// Reads tensors for display rather than running probes: its own lane.
    pub fn is_view(&self) -> bool {
        matches!(
            self,
            JobKind::Tensors
                | JobKind::Histogram { .. }
                | JobKind::BatchRows { .. }
                | JobKind::HistogramAt { .. }
        )
    }
}

/// The histogram a walk node's tensor chart asks for: the checkpoints its finding compared
/// (`before @320 / after @384`) or measured (`measured @100`), where the evidence naming
/// the tensor says which steps; else the init and the newest checkpoint.
pub fn tensor_view(tensor: &str, findings: &[Finding]) -> JobKind {
    let steps = findings
        .iter()
        .filter(|f| f.status != Status::Skip)
        .flat_map(|f| f.evidence.iter())
        .filter(|e| e.tensor.as_deref() == Some(tensor))
        .chain(findings.iter().flat_map(|f| f.evidence.iter()))
        .find_map(|e| e.steps);
    match steps {
        Some((a, b)) if a == b => JobKind::HistogramAt {
            tensor: tensor.to_string(),
            steps: vec![a],
        },
        Some((a, b)) => JobKind::HistogramAt {
            tensor: tensor.to_string(),
            steps: vec![a.min(b), a.max(b)],
        },
        None => JobKind::Histogram {
            tensor: tensor.to_string(),
        },
    }
}

#[derive(Debug, Clone)]
pub struct JobRequest {
    pub id: JobId,
    pub kind: JobKind,
    /// The user's facts at the time of the request (typed in the TUI or `--fact`).
    pub facts: Facts,
}

/// One metric series as the charts need it.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesView {
    pub name: String,
    pub tag: String,
    pub points: Vec<(f64, f64)>,
}

/// What the run holds, for the home screen's one-line summary and the run screen.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Series (canonical names) whose points count epochs, not optimizer steps.
    pub epoch_series: Vec<String>,
    pub root: String,
    pub artifacts: usize,
    pub checkpoints: Vec<u64>,
    pub max_step: Option<u64>,
    pub metric_names: Vec<String>,
    pub series: Vec<SeriesView>,
    pub facts: Facts,
    pub problems: Vec<String>,
    pub device: String,
    /// The run profile's one-line summary ("GRPO of a pretrained model, bf16, TRL; …").
    pub profile: String,
}

impl RunSummary {
    /// The series the probes read for a canonical name, resolved as
    /// `mltriage_probes::metrics::MetricSet::get` does: the name itself, else its first param
    /// group (`learning_rate` -> `learning_rate/pg0`, else `/pg1`: Lightning's
    /// `lr-AdamW/pg1`). Empty series do not count.
    pub fn series_for(&self, canonical: &str) -> Option<&SeriesView> {
        let pick = |name: &str| {
            self.series
                .iter()
                .find(|s| s.name == name && !s.points.is_empty())
        };
        pick(canonical)
            .or_else(|| pick(&format!("{canonical}/pg0")))
            .or_else(|| pick(&format!("{canonical}/pg1")))
    }

    /// What the x axis of a series counts: `epoch` or `step`.
    pub fn unit_of(&self, name: &str) -> &'static str {
        if self.epoch_series.iter().any(|n| n == name) {
            "epoch"
        } else {
            "step"
        }
    }
}

#[derive(Debug, Clone)]
pub enum JobOutput {
    Attached(Box<RunSummary>, Vec<Finding>),
    Findings(Vec<Finding>),
    Tensors(Box<TensorList>),
    Histogram(Box<TensorHist>),
    Rows(Box<BatchRows>),
    Cancelled,
    Failed(String),
}

/// Does the work of a job. `progress` takes percent; `cancel` is polled between steps.
pub trait ProbeRunner: Send {
    fn run(
        &mut self,
        job: &JobRequest,
        progress: &mut dyn FnMut(u8),
        cancel: &AtomicBool,
    ) -> JobOutput;
}

/// The real runner: the catalog, the attached run (discovered on the worker thread) and the
/// device, chosen once on first use.
pub struct LiveRunner {
    cat: Arc<Catalog>,
    path: Option<PathBuf>,
    run: Option<Run>,
    device: DeviceRequest,
    compute: Option<Compute>,
    weights: Option<RunWeights>,
}

impl LiveRunner {
    pub fn new(cat: Arc<Catalog>, path: Option<PathBuf>) -> Self {
        LiveRunner {
            cat,
            path,
            run: None,
            device: DeviceRequest::Auto,
            compute: None,
            weights: None,
        }
    }

    /// Compute on this device (`--device`); the default is `auto`.
    pub fn with_device(mut self, device: DeviceRequest) -> Self {
        self.device = device;
        self.compute = None;
        self
    }

    /// The run's checkpoint weights, opened once (headers only).
    fn weights(&mut self) -> Result<&RunWeights, String> {
        if self.weights.is_none() {
            let w = RunWeights::open(self.ensure_run()?);
            self.weights = Some(w);
        }
        Ok(self.weights.as_ref().expect("set above"))
    }

    fn ensure_run(&mut self) -> Result<&Run, String> {
        if self.run.is_none() {
            let p = self
                .path
                .as_ref()
                .ok_or_else(|| "no run attached".to_string())?;
            let run = Run::discover(p).map_err(|e| e.to_string())?;
            self.run = Some(run);
        }
        Ok(self.run.as_ref().expect("set above"))
    }

    fn compute(&mut self) -> Compute {
        self.compute
            .get_or_insert_with(|| Compute::select(self.device))
            .clone()
    }

    /// Runs `ids`, reporting progress from `from`% to 100%. With `whole_run`, every
    /// checkpoint file is first read once in one planned pass, as `check` does, so the bytes
    /// the TUI shows are the whole plan's and the probes after it hit the cache.
    fn probes(
        &mut self,
        ids: &[String],
        facts: &Facts,
        from: u8,
        whole_run: bool,
        progress: &mut dyn FnMut(u8),
        cancel: &AtomicBool,
    ) -> Result<Vec<Finding>, JobOutput> {
        let compute = self.compute();
        let cat = self.cat.clone();
        let run = self.ensure_run().map_err(JobOutput::Failed)?;
        let facts = check::effective_facts(run, facts);
        let profile = mltriage_probes::profile::Profile::of(run, &facts);
        let mut at = Monotonic::new(from, progress);
        if whole_run {
            mltriage_probes::probes::checkpoint::model::prefetch(run, &compute);
            at.report(from.saturating_add((100 - from.min(100)) / 2));
        }
        let base = at.last;
        let mut out = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            if cancel.load(Ordering::Relaxed) {
                return Err(JobOutput::Cancelled);
            }
            match check::run_one(&cat, id, run, &facts, &profile, &compute, None) {
                Some(mut f) => out.append(&mut f),
                None => out.push(not_implemented(&cat, id)),
            }
            at.report(scaled(base, i + 1, ids.len()));
        }
        order(&cat, &mut out);
        Ok(out)
    }
}

/// `base`% plus `done / total` of what is left to 100%.
pub fn scaled(base: u8, done: usize, total: usize) -> u8 {
    let base = base.min(100) as usize;
    (base + done.min(total) * (100 - base) / total.max(1)) as u8
}

/// Forwards progress that only goes up: a job's percentage never goes backwards.
pub struct Monotonic<'a> {
    pub last: u8,
    out: &'a mut dyn FnMut(u8),
}

impl<'a> Monotonic<'a> {
    pub fn new(from: u8, out: &'a mut dyn FnMut(u8)) -> Self {
        Monotonic {
            last: from.min(100),
            out,
        }
    }

    pub fn report(&mut self, p: u8) {
        let p = p.min(100);
        if p > self.last {
            self.last = p;
            (self.out)(p);
        }
    }
}

/// A `skip` finding for a probe the playbook names but the probes crate does not implement yet.
pub fn not_implemented(cat: &Catalog, probe: &str) -> Finding {
    let entry = cat
        .probe(probe)
        .and_then(|p| p.entries.first().cloned())
        .unwrap_or_default();
    Finding {
        title: cat
            .entry(&entry)
            .map(|e| e.title.clone())
            .unwrap_or_default(),
        id: entry,
        status: Status::Skip,
        probe: probe.to_string(),
        measured: String::new(),
        expected: String::new(),
        evidence: Vec::new(),
        message: "probe not implemented yet".into(),
        outcome: "skip".into(),
        explained_by: Vec::new(),
        nodes: Vec::new(),
        context_for: None,
        priority: 100,
    }
}

/// What the run holds, for the header, the charts and the follower's updates.
pub fn summarize(run: &Run, facts: &Facts, device: &str) -> RunSummary {
    let m = run.metrics();
    let mut names: Vec<String> = m.names().into_iter().map(String::from).collect();
    names.sort();
    names.dedup();
    let picked: Vec<&mltriage_probes::metrics::Series> =
        names.iter().filter_map(|n| m.get(n)).collect();
    let epoch_series = picked
        .iter()
        .filter(|s| s.unit == mltriage_probes::metrics::Unit::Epoch)
        .map(|s| s.name.clone())
        .collect();
    let series = picked
        .into_iter()
        .map(|s| SeriesView {
            name: s.name.clone(),
            tag: s.tag.clone(),
            points: s.points.iter().map(|p| (p.step as f64, p.value)).collect(),
        })
        .collect();
    let mut problems = run.problems();
    problems.dedup();
    let facts = check::effective_facts(run, facts);
    RunSummary {
        epoch_series,
        root: run.root.display().to_string(),
        artifacts: run.artifacts.len(),
        checkpoints: run.checkpoints.iter().map(|c| c.step).collect(),
        max_step: run.max_step(),
        metric_names: names,
        series,
        profile: mltriage_probes::profile::Profile::of(run, &facts).summary(),
        facts,
        problems,
        device: device.to_string(),
    }
}

impl ProbeRunner for LiveRunner {
    fn run(
        &mut self,
        job: &JobRequest,
        progress: &mut dyn FnMut(u8),
        cancel: &AtomicBool,
    ) -> JobOutput {
        let all: Vec<String> = self.cat.probes.iter().map(|p| p.id.clone()).collect();
        let result = match &job.kind {
            JobKind::Attach => {
                if let Err(e) = self.ensure_run() {
                    return JobOutput::Failed(e);
                }
                progress(10);
                let device = self.compute().label;
                let summary = summarize(self.run.as_ref().expect("attached"), &job.facts, &device);
                let findings = match self.probes(&all, &job.facts, 10, true, progress, cancel) {
                    Ok(f) => f
                        .into_iter()
                        .filter(|f| f.message != "probe not implemented yet")
                        .collect(),
                    Err(JobOutput::Cancelled) => Vec::new(),
                    Err(e) => return e,
                };
                return JobOutput::Attached(Box::new(summary), findings);
            }
            JobKind::Check => self
                .probes(&all, &job.facts, 0, true, progress, cancel)
                .map(|f| {
                    f.into_iter()
                        .filter(|f| f.message != "probe not implemented yet")
                        .collect()
                }),
            JobKind::Probe { probe } => self.probes(
                std::slice::from_ref(probe),
                &job.facts,
                0,
                false,
                progress,
                cancel,
            ),
            JobKind::EntryCheck { entry } => {
                let ids: Vec<String> = self
                    .cat
                    .probes_for_entry(entry)
                    .map(|p| p.id.clone())
                    .collect();
                if ids.is_empty() {
                    return JobOutput::Failed(format!("no probe answers {entry}"));
                }
                self.probes(&ids, &job.facts, 0, false, progress, cancel)
            }
            JobKind::Tensors => {
                return match self.weights() {
                    Ok(w) => JobOutput::Tensors(Box::new(w.list())),
                    Err(e) => JobOutput::Failed(e),
                }
            }
            JobKind::Histogram { tensor } => {
                return match self.weights() {
                    Ok(w) => JobOutput::Histogram(Box::new(w.histogram(tensor))),
                    Err(e) => JobOutput::Failed(e),
                }
            }
            JobKind::HistogramAt { tensor, steps } => {
                let at = match self.ensure_run() {
                    Ok(run) => super::weights::histogram_at(run, tensor, steps),
                    Err(e) => return JobOutput::Failed(e),
                };
                // Steps with no checkpoint saved (a metric step): init vs newest instead.
                return match at {
                    Ok(h) => JobOutput::Histogram(Box::new(h)),
                    Err(_) => match self.weights() {
                        Ok(w) => JobOutput::Histogram(Box::new(w.histogram(tensor))),
                        Err(e) => JobOutput::Failed(e),
                    },
                };
            }
            JobKind::BatchRows { file } => {
                return match label_mask_rows(file, &job.facts) {
                    Ok(r) => JobOutput::Rows(Box::new(r)),
                    Err(e) => JobOutput::Failed(e),
                }
            }
        };
        match result {
            Ok(f) => JobOutput::Findings(f),
            Err(e) => e,
        }
    }
}
