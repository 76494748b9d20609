//! One-shot triage: run every implemented probe the playbook defines over a run (with the
//! user's and the artifacts' facts, on the chosen device) and collect ordered findings.

use std::path::Path;

use mltriage_probes::device::Compute;
use mltriage_probes::facts::facts_from_artifacts;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::{run_probe, ProbeCtx, ProbeSpec, Status, Verdict};
use mltriage_probes::profile::Profile;
use mltriage_probes::run::{ArtifactKind, Run};
use mltriage_probes::tensors::{OptimizerState, TensorFile};

use crate::catalog::Catalog;
use crate::findings::{order, Finding};

/// What `check` produced (DESIGN.md §4.4 `check --json`).
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub run: String,
    pub device: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_note: Option<String>,
    /// What the binary was built with: `cpu-only build`, `cuda build, kernels sm_90`.
    pub build: String,
    pub artifacts: Vec<mltriage_probes::run::Artifact>,
    pub facts: Facts,
    /// What kind of run this is, with the evidence (computed once, before any probe).
    pub profile: Profile,
    /// Files that could not be read (`<file>: <why>`).
    pub problems: Vec<String>,
    /// Files no probe could use, with why (`inspect RUN` lists every file).
    pub unused: Vec<mltriage_probes::run::FileUse>,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn has_fail(&self) -> bool {
        self.findings.iter().any(|f| f.status == Status::Fail)
    }
    pub fn count(&self, s: Status) -> usize {
        self.findings.iter().filter(|f| f.status == s).count()
    }
}

/// The implemented probe spec for an id.
pub fn spec(id: &str) -> Option<&'static ProbeSpec> {
    mltriage_probes::probes::all().iter().find(|s| s.id == id)
}

/// User facts merged over the facts the run's artifacts state.
pub fn effective_facts(run: &Run, user: &Facts) -> Facts {
    let mut f = facts_from_artifacts(run);
    f.merge(user);
    f
}

/// Run one probe by id with the playbook's thresholds — or, outside the runs its `applies:`
/// declaration names, a `skip` saying why it does not apply.
pub fn run_one(
    cat: &Catalog,
    id: &str,
    run: &Run,
    facts: &Facts,
    profile: &Profile,
    compute: &Compute,
    baseline: Option<&Run>,
) -> Option<Vec<Finding>> {
    let spec = spec(id)?;
    let def = cat.probe(id)?;
    let params = def.params();
    if let Some(Err(why)) = def.applies.as_ref().map(|a| a.judge(profile)) {
        let v = Verdict::skip(spec.entries[0], format!("not applicable: {why}"));
        return Some(vec![Finding::from_verdict(cat, id, v)]);
    }
    let ctx = ProbeCtx {
        run,
        facts,
        profile,
        params: &params,
        compute,
        baseline,
    };
    let verdicts: Vec<Verdict> = run_probe(spec, &ctx);
    Some(
        verdicts
            .into_iter()
            .map(|v| Finding::from_verdict(cat, id, v))
            .collect(),
    )
}

/// Every implemented probe the playbook defines, in playbook order, then ordered findings.
pub fn check(
    cat: &Catalog,
    run: &Run,
    user_facts: &Facts,
    compute: &Compute,
    baseline: Option<&Run>,
) -> Report {
    let facts = effective_facts(run, user_facts);
    let profile = Profile::of(run, &facts);
    // Every checkpoint file read once, on every core, before the probes ask their questions.
    mltriage_probes::probes::checkpoint::model::prefetch(run, compute);
    let mut findings = Vec::new();
    for def in &cat.probes {
        if let Some(mut f) = run_one(cat, &def.id, run, &facts, &profile, compute, baseline) {
            findings.append(&mut f);
        }
    }
    order(cat, &mut findings);
    let mut problems = run.problems();
    problems.extend(unreadable_tensor_files(run));
    problems.dedup();
    Report {
        run: display(&run.root),
        device: compute.label.clone(),
        device_note: compute.note.clone(),
        build: mltriage_probes::device::BuildInfo::current().label(),
        artifacts: run.artifacts.clone(),
        facts,
        profile,
        problems,
        unused: mltriage_probes::run::explain(run)
            .into_iter()
            .filter(|u| !u.used)
            .collect(),
        findings,
    }
}

/// Tensor-bearing files (weights, batches, optimizer state) whose headers do not open, as
/// `<file>: <why>` — probes skip them, and the report names them.
pub fn unreadable_tensor_files(run: &Run) -> Vec<String> {
    use ArtifactKind::*;
    run.artifacts
        .iter()
        .filter_map(|a| {
            let opened = match a.kind {
                Safetensors | SafetensorsIndex | TorchFile | DcpMetadata | Batch => {
                    TensorFile::open(&a.path).map(|_| ())
                }
                Optimizer => OptimizerState::open(&a.path).map(|_| ()),
                _ => return None,
            };
            opened.err().map(|e| e.to_string().replace('\n', " "))
        })
        .collect()
}

pub fn display(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
