//! The walk screen's state and keys: a [`Walk`] (the engine in `crate::trees`) with the
//! probe job answering the current node, the override list, a fact typed in; confirm, pick,
//! back, and exporting the transcript.

use std::path::PathBuf;

use crossterm::event::KeyCode;

use super::export::{self, Format};
use super::{Action, App, Effect, Screen};
use crate::catalog::{NodeDef, NodeKind};
use crate::findings::Finding;
use crate::look::strings as S;
use crate::trees::{Source, Step, Walk};
use crate::triage::batch_rows::BatchRows;
use crate::triage::jobs::{JobId, JobKind, JobOutput};
use crate::triage::walk::{numeric_answer, propose_from_findings, run_lead, walk_from, Lead};
use crate::triage::weights::TensorHist;

#[derive(Debug, Clone)]
pub struct WalkState {
    pub walk: Walk,
    pub sel: usize,
    pub override_open: bool,
    /// Typing a fact the node needs.
    pub fact_input: Option<String>,
    pub job: Option<JobId>,
    /// The route above a "walk from here" start is shown in full (Tab), else one line.
    pub path_open: bool,
    /// The current node's probe findings (evidence for the chart).
    pub findings: Vec<Finding>,
    /// What the chart under the verdict draws, and its data when a job reads it.
    pub chart: Option<NodeChart>,
    pub chart_job: Option<JobId>,
    pub hist: Option<TensorHist>,
    pub rows: Option<BatchRows>,
    pub chart_error: Option<String>,
    /// How far the node's text (a conclusion, long evidence) is scrolled (j/k).
    pub scroll: u16,
    /// At a choice node, the option the run's own findings lead to (preselected).
    pub lead: Option<Lead>,
}

impl WalkState {
    fn new(walk: Walk) -> WalkState {
        WalkState {
            walk,
            sel: 0,
            override_open: false,
            fact_input: None,
            job: None,
            path_open: false,
            findings: Vec::new(),
            chart: None,
            chart_job: None,
            hist: None,
            rows: None,
            chart_error: None,
            scroll: 0,
            lead: None,
        }
    }

    /// The first route step above a "walk from here" start where the run said something
    /// other than the branch the route takes: (path index, what the run said).
    pub fn run_disagrees(&self) -> Option<(usize, &Step)> {
        let above = self.walk.from.as_ref().map_or(0, |f| f.above);
        self.walk
            .path
            .iter()
            .take(above)
            .enumerate()
            .find(|(_, s)| s.via.is_some() && !s.answer.is_empty() && s.answer != "skip")
    }
}

/// What the walk screen draws under the verdict: the statistic that answered the question.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeChart {
    /// A metric series (canonical name), over a step window (None: every step), with the
    /// declared LR schedule beside it for LR questions.
    Series {
        metric: &'static str,
        window: Option<(f64, f64)>,
        declared: bool,
    },
    /// The histogram of the checkpoint tensor the verdict names.
    Tensor { tensor: String },
    /// The label-mask fraction per row of the batch the verdict names.
    Batch { file: PathBuf },
}

/// The chart for a numeric node's probe, from its findings' evidence (and the run's steps).
pub fn node_chart(
    probe: &str,
    findings: &[Finding],
    steps: Option<(f64, f64)>,
) -> Option<NodeChart> {
    let series = |metric, window, declared| {
        Some(NodeChart::Series {
            metric,
            window,
            declared,
        })
    };
    if probe == "init_loss" {
        // The first steps: where ln V is the expectation.
        let w = steps.map(|(a, b)| (a, a + ((b - a) / 10.0).max(20.0)));
        return series("loss", w, false);
    }
    if probe.starts_with("lr_") {
        return series("learning_rate", None, true);
    }
    if probe.contains("grad_norm") {
        return series("grad_norm", None, false);
    }
    if probe.starts_with("loss") {
        return series("loss", None, false);
    }
    let ev = findings
        .iter()
        .filter(|f| f.status != mltriage_probes::probe::Status::Skip)
        .flat_map(|f| f.evidence.iter());
    let is_batch = mltriage_probes::probes::batch::SPECS
        .iter()
        .any(|s| s.id == probe);
    if is_batch {
        if probe != "label_mask" {
            return None;
        }
        return ev
            .clone()
            .find_map(|e| e.file.clone())
            .map(|file| NodeChart::Batch { file });
    }
    ev.clone()
        .find_map(|e| e.tensor.clone())
        .map(|tensor| NodeChart::Tensor { tensor })
}

impl App {
    /// A key while a fact node waits for its value to be typed. Returns whether it was taken.
    pub(super) fn walk_fact_key(&mut self, code: KeyCode, plain_char: Option<char>) -> bool {
        let Some(w) = self.walk.as_mut() else {
            return false;
        };
        let Some(buf) = w.fact_input.as_mut() else {
            return false;
        };
        match code {
            KeyCode::Esc => w.fact_input = None,
            KeyCode::Backspace => {
                buf.pop();
            }
            KeyCode::Enter => {
                let v = buf.trim().to_string();
                if !v.is_empty() {
                    w.fact_input = None;
                    if let Some(key) = w.walk.node().and_then(|n| n.fact.clone()) {
                        self.facts.set_user(&key, &v);
                    }
                    if let Some(w) = self.walk.as_mut() {
                        w.walk.propose_fact(&v, Source::User);
                    }
                }
            }
            _ => {
                if let Some(c) = plain_char {
                    buf.push(c);
                }
            }
        }
        true
    }

    pub fn start_walk(&mut self, tree: &str) {
        let Some(t) = self.cat.tree(tree) else {
            let mut msg = format!("{} {tree}", S::NO_SUCH_TREE);
            let ids = self.cat.trees.iter().map(|t| t.id.as_str());
            match super::palette::did_you_mean(tree, ids) {
                Some(m) => msg.push_str(&format!(" — {} :walk {m}?", S::DID_YOU_MEAN)),
                None => {
                    let all: Vec<&str> = self.cat.trees.iter().map(|t| t.id.as_str()).collect();
                    msg.push_str(&format!(" (trees: {})", all.join(", ")));
                }
            }
            self.set_status(msg, true);
            return;
        };
        self.walk = Some(WalkState::new(Walk::new(t)));
        self.go(Screen::Walk);
        self.enter_node();
    }

    /// "Walk from here": start at the question where `id` (an entry, `tree/node`, a node)
    /// lives, the route above it filled in from the run's findings and facts where they
    /// lead the same way.
    pub fn start_walk_from(&mut self, id: &str) {
        let facts = self.all_facts();
        let findings = self.run.findings.clone();
        let cat = self.cat.clone();
        let answer = |n: &NodeDef| -> Option<(String, String, Source)> {
            match n.kind {
                NodeKind::Numeric => {
                    let probe = n.probe.clone()?;
                    let fs: Vec<Finding> = findings
                        .iter()
                        .filter(|f| f.probe == probe)
                        .cloned()
                        .collect();
                    if fs.is_empty() {
                        return None;
                    }
                    let (l, m) = numeric_answer(&fs, n, &probe);
                    Some((l, m, Source::Probe(probe)))
                }
                NodeKind::Fact => {
                    let key = n.fact.clone()?;
                    let v = facts.get(&key)?.to_string();
                    Some((v.clone(), format!("{key} = {v}"), Source::Fact(key)))
                }
                _ => None,
            }
        };
        match walk_from(&cat, id, answer) {
            Ok(w) => {
                let note = w.from.as_ref().map(|f| {
                    format!(
                        "{} {} {} {}",
                        S::WALK_FROM_STARTED,
                        f.id,
                        S::LEADS_TO,
                        f.start
                    )
                });
                self.walk = Some(WalkState::new(w));
                self.go(Screen::Walk);
                self.enter_node();
                if let Some(n) = note {
                    self.set_status(n, false);
                }
            }
            Err(e) => self.set_status(e.to_string(), true),
        }
    }

    /// A walk node's probe answered: propose its branch and ask for the chart's data.
    pub(super) fn on_walk_findings(&mut self, f: Vec<Finding>) {
        let steps = self.run.summary.as_ref().and_then(|s| {
            let xs = s.series.iter().flat_map(|x| x.points.iter().map(|p| p.0));
            let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(x), b.max(x))
            });
            (lo <= hi).then_some((lo, hi))
        });
        let Some(w) = self.walk.as_mut() else { return };
        w.job = None;
        propose_from_findings(&mut w.walk, &f);
        w.override_open = false;
        let unmeasured = w
            .walk
            .proposal
            .as_ref()
            .is_some_and(|p| w.walk.concludes_unmeasured(p));

        let probe = w
            .walk
            .node()
            .and_then(|n| n.probe.clone())
            .unwrap_or_default();
        w.chart = node_chart(&probe, &f, steps);
        w.findings = f;
        if unmeasured {
            // Nothing measured this node and its branch would conclude: Enter will not take
            // it; the user picks (o).
            self.set_status(S::SKIPPED_STOP, true);
        }
        let Some(w) = self.walk.as_mut() else { return };
        let kind = match &w.chart {
            // The checkpoints the finding compared or measured, not always init vs newest.
            Some(NodeChart::Tensor { tensor }) => {
                Some(crate::triage::jobs::tensor_view(tensor, &w.findings))
            }
            Some(NodeChart::Batch { file }) => Some(JobKind::BatchRows { file: file.clone() }),
            _ => None,
        };
        if let Some(k) = kind {
            let id = self.submit(k);
            if let Some(w) = self.walk.as_mut() {
                w.chart_job = Some(id);
            }
        }
    }

    /// A view job for the walk chart came back. Returns false when it was not the walk's.
    pub(super) fn on_walk_view_done(&mut self, id: JobId, out: JobOutput) -> Result<(), JobOutput> {
        let Some(w) = self.walk.as_mut().filter(|w| w.chart_job == Some(id)) else {
            return Err(out);
        };
        w.chart_job = None;
        match out {
            JobOutput::Histogram(h) => w.hist = Some(*h),
            JobOutput::Rows(r) => w.rows = Some(*r),
            JobOutput::Failed(e) => w.chart_error = Some(e),
            _ => {}
        }
        Ok(())
    }

    /// Arrive at the walk's current node: ask its probe, read its fact, or wait for a pick.
    pub(super) fn enter_node(&mut self) {
        let attached = self.run.attached.is_some();
        let facts = self.all_facts();
        let Some(w) = self.walk.as_mut() else { return };
        w.sel = 0;
        w.override_open = false;
        w.fact_input = None;
        w.findings.clear();
        w.chart = None;
        w.chart_job = None;
        w.hist = None;
        w.rows = None;
        w.chart_error = None;
        w.scroll = 0;
        w.lead = None;
        let Some(n) = w.walk.node().cloned() else {
            return;
        };
        if n.kind == NodeKind::Choice && !self.run.findings.is_empty() {
            // Where the run's own findings lead among the options: preselected, said so.
            w.lead = run_lead(&w.walk.tree, &n, &self.run.findings);
            if let Some(l) = &w.lead {
                w.sel = n
                    .options
                    .iter()
                    .position(|o| o.label == l.option)
                    .unwrap_or(0);
            }
        }
        match n.kind {
            NodeKind::Numeric => match n.probe.clone() {
                Some(p) if attached => {
                    let id = self.submit(JobKind::Probe { probe: p });
                    if let Some(w) = self.walk.as_mut() {
                        w.job = Some(id);
                    }
                }
                Some(_) => w.walk.propose_skip(S::NO_RUN_FOR_PROBE),
                None => w.walk.propose_skip(S::NO_PROBE),
            },
            NodeKind::Fact => {
                let key = n.fact.clone().unwrap_or_default();
                match facts.fact(&key) {
                    Some(f) => {
                        let src = match f.source {
                            mltriage_probes::facts::FactSource::User => Source::User,
                            _ => Source::Fact(key.clone()),
                        };
                        w.walk.propose_fact(&f.value.clone(), src)
                    }
                    None if self.run.loading => {}
                    None => w.fact_input = Some(String::new()),
                }
            }
            NodeKind::Choice | NodeKind::Leaf => {}
        }
    }

    pub(super) fn walk_pick(&mut self, i: usize) {
        let cat = self.cat.clone();
        let Some(w) = self.walk.as_mut() else { return };
        if let Some(j) = w.job.take() {
            self.jobs.retain(|x| x.id != j);
            self.effects.push(Effect::Cancel);
        }
        let Some(w) = self.walk.as_mut() else { return };
        if w.walk.pick(&cat, i) {
            self.enter_node();
        }
    }

    pub(super) fn update_walk(&mut self, a: Action) {
        let cat = self.cat.clone();
        let Some(w) = self.walk.as_mut() else {
            self.back();
            return;
        };
        let is_choice = w.walk.node().is_some_and(|n| n.kind == NodeKind::Choice);
        let n_choices = w.walk.choices().len();
        match a {
            Action::Back => {
                if let Some(j) = w.job.take() {
                    // Esc cancels a running probe; the user can then pick a branch.
                    self.jobs.retain(|x| x.id != j);
                    self.effects.push(Effect::Cancel);
                    w.walk.propose_skip(S::CANCELLED);
                    self.set_status(S::CANCELLED, false);
                } else if w.override_open {
                    w.override_open = false;
                } else {
                    self.back();
                }
            }
            Action::Up
            | Action::Down
            | Action::Top
            | Action::Bottom
            | Action::PageUp
            | Action::PageDown
                if is_choice || w.override_open =>
            {
                Self::move_sel(&mut w.sel, n_choices, a)
            }
            // Elsewhere (a conclusion, a verdict with long evidence) the keys scroll the text.
            Action::Up => w.scroll = w.scroll.saturating_sub(1),
            Action::Down => w.scroll = w.scroll.saturating_add(1).min(500),
            Action::PageUp => w.scroll = w.scroll.saturating_sub(10),
            Action::PageDown => w.scroll = w.scroll.saturating_add(10).min(500),
            Action::Top => w.scroll = 0,
            Action::Bottom => w.scroll = 500,
            Action::Override if !w.walk.is_leaf() => {
                w.override_open = !w.override_open;
                // Start the override list at the proposed branch.
                if let Some(p) = &w.walk.proposal {
                    w.sel = w
                        .walk
                        .choices()
                        .iter()
                        .position(|(l, _)| *l == p.answer)
                        .unwrap_or(0);
                }
            }
            Action::Select => {
                if w.walk.is_leaf() {
                    if let Some(e) = w.walk.node().and_then(|n| n.entry.clone()) {
                        self.open_entry(&e);
                    }
                } else if is_choice || w.override_open {
                    let i = w.sel;
                    self.walk_pick(i);
                } else if w.job.is_some() {
                    self.set_status(S::WAIT_PROBE, false);
                } else if w.walk.confirm(&cat) {
                    self.enter_node();
                } else if w
                    .walk
                    .proposal
                    .as_ref()
                    .is_some_and(|p| w.walk.concludes_unmeasured(p))
                {
                    w.override_open = true;
                    self.set_status(S::SKIPPED_STOP, true);
                } else if w.walk.proposal.is_some() {
                    w.override_open = true;
                    self.set_status(S::BRANCH_MISSING, true);
                }
            }
            Action::WalkBack => {
                if let Some(j) = w.job.take() {
                    self.jobs.retain(|x| x.id != j);
                    self.effects.push(Effect::Cancel);
                }
                let Some(w) = self.walk.as_mut() else { return };
                if w.walk.back() {
                    self.enter_node();
                } else {
                    self.set_status(S::AT_ROOT, false);
                }
            }
            Action::NextPane => w.path_open = !w.path_open,
            Action::WalkFrom => self.walk_where_the_run_leads(),
            Action::ExportMd => self.export(Format::Markdown, None),
            Action::ExportJson => self.export(Format::Json, None),
            // Re-ask the probe of this node.
            Action::Check if w.job.is_none() => self.enter_node(),
            _ => {}
        }
    }

    /// `w` in a walk: go where the run's own answers lead — back to the first route step
    /// above the start where the run said otherwise, taking the run's branch there; at a
    /// choice node, the option the run's findings lead to.
    pub(super) fn walk_where_the_run_leads(&mut self) {
        let cat = self.cat.clone();
        let Some(w) = self.walk.as_mut() else { return };
        if let Some((i, st)) = w.run_disagrees() {
            let (answer, source) = (st.answer.clone(), st.source.clone());
            let measured = st.measured.clone();
            let probe = w
                .walk
                .node_by_id(&st.id)
                .and_then(|n| n.probe.clone())
                .map(Source::Probe)
                .unwrap_or(source);
            while w.walk.path.len() > i {
                w.walk.back();
            }
            if let Some(f) = w.walk.from.as_mut() {
                f.above = f.above.min(i);
            }
            let measured = measured
                .split_once(": ")
                .map(|(_, m)| m.to_string())
                .unwrap_or(measured);
            match w.walk.answer(&cat, &answer, &measured, probe) {
                Ok(()) => {
                    let at = w.walk.current.clone();
                    self.enter_node();
                    self.set_status(format!("{} {at}", S::RUN_LEADS), false);
                }
                Err(e) => self.set_status(e.to_string(), true),
            }
            return;
        }
        if let Some(l) = w.lead.clone() {
            if let Some(i) = w.walk.choices().iter().position(|(o, _)| *o == l.option) {
                self.walk_pick(i);
                return;
            }
        }
        self.set_status(S::RUN_LEADS_NOWHERE, false);
    }

    /// A fact was set (`:fact k=v`): the walk's nodes that use it are asked again — the
    /// first such node on the path (a fact node asking it, or a probe that reads it) becomes
    /// the current node, or the current node when it is one.
    pub(super) fn rerun_for_fact(&mut self, key: &str) {
        let Some(w) = self.walk.as_ref() else { return };
        let needs = |id: &str| {
            w.walk.node_by_id(id).is_some_and(|n| {
                n.fact.as_deref() == Some(key)
                    || n.probe
                        .as_deref()
                        .and_then(crate::triage::check::spec)
                        .is_some_and(|sp| {
                            sp.inputs.iter().any(|i| {
                                i.strip_prefix("fact:")
                                    .is_some_and(|alts| alts.split('|').any(|a| a == key))
                            })
                        })
            })
        };
        let at = w.walk.path.iter().position(|s| needs(&s.id));
        let here = needs(&w.walk.current);
        if at.is_none() && !here {
            return;
        }
        if let Some(i) = at {
            if let Some(w) = self.walk.as_mut() {
                while w.walk.path.len() > i {
                    w.walk.back();
                }
                if let Some(f) = w.walk.from.as_mut() {
                    f.above = f.above.min(i);
                }
            }
        }
        let node = self
            .walk
            .as_ref()
            .map(|w| w.walk.current.clone())
            .unwrap_or_default();
        self.enter_node();
        self.set_status(format!("{} {node}", S::FACT_RERUN), false);
    }

    /// Queue a transcript of the current walk for writing.
    pub fn export(&mut self, fmt: Format, target: Option<PathBuf>) {
        let Some(w) = &self.walk else {
            self.set_status(S::NOTHING_TO_EXPORT, true);
            return;
        };
        let run = self.run.attached.as_ref().map(|p| p.display().to_string());
        // The facts the user set (`--fact`, `:fact`, typed at a node) go with the transcript.
        let facts: Vec<(String, String)> = self
            .facts
            .iter()
            .filter(|(_, f)| f.source == mltriage_probes::facts::FactSource::User)
            .map(|(k, f)| (k.to_string(), f.value.clone()))
            .collect();
        let content = match fmt {
            Format::Markdown => export::to_markdown(&self.cat, &w.walk, run.as_deref(), &facts),
            Format::Json => {
                serde_json::to_string_pretty(&export::to_json(
                    &self.cat,
                    &w.walk,
                    run.as_deref(),
                    &facts,
                ))
                .unwrap_or_default()
                    + "\n"
            }
        };
        let (dir, stem, ext) = match target {
            Some(p) => {
                let p = if p.is_relative() {
                    self.export_dir.join(p)
                } else {
                    p
                };
                export::split_target(&p, fmt)
            }
            None => (
                self.export_dir.clone(),
                format!("mltriage-walk-{}", w.walk.tree.id),
                fmt.ext().to_string(),
            ),
        };
        self.effects.push(Effect::Write(export::Transcript {
            dir,
            stem,
            ext,
            content,
        }));
    }
}
