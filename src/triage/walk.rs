//! Probes answering a tree walk. [`auto_walk`] (the CLI's `walk`): probes answer numeric
//! nodes, facts answer fact nodes, and `--answer node=label` answers anything (choices, or
//! an override); it stops at the first node nothing can answer, saying what it needs.
//! [`propose_from_findings`] turns a probe job's findings into the TUI's proposal. Both take
//! a node's verdict with [`pick`].

use std::collections::HashMap;

use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::Status;
use mltriage_probes::run::Run;

use super::check::run_one;
use crate::catalog::{Catalog, NodeDef, NodeKind};
use crate::findings::Finding;
use crate::trees::{
    branch_for, branch_label, is_warn_label, question, route, Conclusion, Source, Step, Walk,
    WalkError, WalkFrom,
};

/// Why a walk stopped before a leaf.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stop {
    pub node: String,
    pub question: String,
    /// e.g. `fact phase`, `a choice`, `a run to measure`.
    pub needs: String,
    pub options: Vec<String>,
    /// At a choice, with a run: the option whose subtree holds the entries the run's own
    /// findings name (fail first, then warn), with those entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_leads_to: Option<Lead>,
    /// What the run said at this node when it could not decide it (a skipped probe, a warn
    /// with no branch of its own): `label: measured`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_said: Option<String>,
}

/// Where the run's own findings lead at a choice node.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Lead {
    pub option: String,
    /// `ID status (probe)` of the findings below that option.
    pub because: Vec<String>,
}

/// The option of choice node `n` whose subtree (in tree `tree`) reaches the most entries the
/// run's findings fail, then warn; `None` when no option reaches one.
pub fn run_lead(tree: &crate::catalog::TreeDef, n: &NodeDef, findings: &[Finding]) -> Option<Lead> {
    // Entries and probes below `start`, each with its distance (nodes from `start`).
    let below = |start: &str| {
        let nodes = tree.below(start);
        let entries: Vec<(&str, usize)> = nodes
            .iter()
            .filter_map(|(n, d)| n.entry.as_deref().map(|e| (e, *d)))
            .collect();
        let probes: Vec<(&str, usize)> = nodes
            .iter()
            .filter_map(|(n, d)| n.probe.as_deref().map(|p| (p, *d)))
            .collect();
        (entries, probes)
    };
    // The option that reaches the run's first-ranked finding (root causes come first), then the
    // most failing entries, the nearest fail, the most warned ones, the nearest: an option that
    // asks the run's failing question first beats one that reaches it further down.
    type Key = (
        std::cmp::Reverse<usize>,
        usize,
        std::cmp::Reverse<usize>,
        usize,
        std::cmp::Reverse<usize>,
    );
    let mut best: Option<(Key, Lead)> = None;
    for o in &n.options {
        let (entries, probes) = below(&o.next);
        // A finding is below an option when a node there concludes or asks about its entry,
        // or asks its probe's question (a probe can fail an entry other than the node's). In
        // half-steps: a node about the finding's own entry is half a step nearer than one that
        // asks the same probe about another entry (grpo_signal asks about H3 at one node and
        // H5 at another; an H5 finding leads to the H5 node).
        let dist_of = |f: &Finding| {
            let e = entries
                .iter()
                .find(|(e, _)| *e == f.id)
                .map(|(_, d)| 2 * *d);
            let p = probes
                .iter()
                .find(|(p, _)| *p == f.probe)
                .map(|(_, d)| 2 * *d + 1);
            e.into_iter().chain(p).min()
        };
        // Findings come root causes first: the rank of the first one below this option.
        let hits: Vec<(&Finding, usize)> = findings
            .iter()
            .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
            .filter_map(|f| dist_of(f).map(|d| (f, d)))
            .collect();
        let rank = findings
            .iter()
            .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
            .position(|f| dist_of(f).is_some())
            .unwrap_or(usize::MAX);
        if hits.is_empty() {
            continue;
        }
        let fails = hits
            .iter()
            .filter(|(f, _)| f.status == Status::Fail)
            .count();
        let nearest = |fail: bool| {
            hits.iter()
                .filter(|(f, _)| !fail || f.status == Status::Fail)
                .map(|(_, d)| *d)
                .min()
                .unwrap_or(usize::MAX)
        };
        let key = (
            std::cmp::Reverse(rank),
            fails,
            std::cmp::Reverse(nearest(true)),
            hits.len() - fails,
            std::cmp::Reverse(nearest(false)),
        );
        if best.as_ref().is_none_or(|(k, _)| key > *k) {
            let mut because: Vec<String> = hits
                .iter()
                .map(|(f, _)| format!("{} {} ({})", f.id, f.status.as_str(), f.probe))
                .collect();
            because.dedup();
            best = Some((
                key,
                Lead {
                    option: o.label.clone(),
                    because,
                },
            ));
        }
    }
    best.map(|(_, l)| l)
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct WalkResult {
    pub tree: String,
    pub path: Vec<Step>,
    pub conclusion: Option<Conclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stop>,
    /// `walk --from`: the symptom named, the node started at, the steps above it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<WalkFrom>,
}

pub struct Inputs<'a> {
    pub run: Option<&'a Run>,
    pub facts: &'a Facts,
    pub compute: &'a Compute,
    pub baseline: Option<&'a Run>,
    /// node id -> answer label given by the user.
    pub answers: &'a HashMap<String, String>,
}

/// Pick the verdict for a node: the one about the node's entry, else the most severe.
pub fn pick<'f>(findings: &'f [Finding], entry: Option<&str>) -> Option<&'f Finding> {
    if let Some(e) = entry {
        if let Some(f) = findings
            .iter()
            .find(|f| f.id == e && f.status != Status::Skip)
        {
            return Some(f);
        }
    }
    findings.iter().min_by_key(|f| f.status)
}

/// A numeric node's answer from its probe's findings: (branch label, measured text). A warn
/// walks on unless the node has a branch for it ([`branch_label`]); the text says so.
pub fn numeric_answer(fs: &[Finding], n: &NodeDef, probe: &str) -> (String, String) {
    match pick(fs, n.entry.as_deref()) {
        Some(f) if f.status == Status::Skip => {
            ("skip".to_string(), format!("not measured: {}", f.message))
        }
        Some(f) => {
            let label = branch_label(n, f.status, &f.outcome);
            let mut text = if f.expected.is_empty() {
                f.measured.clone()
            } else {
                format!("{} (expected {})", f.measured, f.expected)
            };
            if f.status == Status::Warn && !is_warn_label(&label) {
                text.push_str(&format!(
                    " — warning ({}), {}",
                    f.outcome,
                    crate::trees::WALKED_ON
                ));
            }
            (label, text)
        }
        None => (
            "skip".to_string(),
            format!("probe {probe} is not implemented"),
        ),
    }
}

/// A walk started at the symptom `id` names (an entry id, `tree/node` or a node id; see
/// [`route::start_for`]), the route above it filled in: each node on the way is answered
/// by `answer` (a probe, a fact, the user) when that answer leads the same way, else it is
/// recorded as [`Source::Route`] with what the answer said, if anything.
pub fn walk_from(
    cat: &Catalog,
    id: &str,
    mut answer: impl FnMut(&NodeDef) -> Option<(String, String, Source)>,
) -> Result<Walk, WalkError> {
    let start = route::start_for(cat, id).ok_or_else(|| WalkError::NotInTrees(id.to_string()))?;
    let tree = cat
        .tree(&start.tree)
        .ok_or_else(|| WalkError::NoTree(start.tree.clone()))?;
    let steps =
        route::route(tree, &start.node).ok_or_else(|| WalkError::NotInTrees(id.to_string()))?;
    let probe_walk = Walk::new(tree);
    let mut above = Vec::new();
    for (i, (node_id, label)) in steps.iter().enumerate() {
        let n = probe_walk
            .node_by_id(node_id)
            .ok_or_else(|| WalkError::Dangling(node_id.clone()))?;
        let next = steps
            .get(i + 1)
            .map(|s| s.0.as_str())
            .unwrap_or(start.node.as_str());
        let said = answer(n);
        let agrees = said.as_ref().is_some_and(|(l, _, _)| match n.kind {
            NodeKind::Choice => n
                .options
                .iter()
                .any(|o| o.label.eq_ignore_ascii_case(l) && o.next == next),
            _ => branch_for(n, l).is_some_and(|(_, to)| to == next),
        });
        // A route step states what the run says at that node (the probe's verdict and its
        // value, a fact), never the route's branch as if someone had answered it; the branch
        // the route takes is kept beside it (`via`).
        let step = match said {
            Some((l, m, src)) if agrees => Step {
                id: n.id.clone(),
                question: question(cat, n),
                answer: l,
                measured: m,
                source: src,
                entry: n.entry.clone(),
                via: None,
                proposed: None,
            },
            other => {
                let (answer, measured) = other
                    .map(|(l, m, src)| {
                        let m = if m.is_empty() {
                            String::new()
                        } else {
                            format!(": {m}")
                        };
                        (l.clone(), format!("{} said {l}{m}", src.label()))
                    })
                    .unwrap_or_default();
                Step {
                    id: n.id.clone(),
                    question: question(cat, n),
                    answer,
                    measured,
                    source: Source::Route,
                    entry: n.entry.clone(),
                    via: Some(label.clone()),
                    proposed: None,
                }
            }
        };
        above.push(step);
    }
    Ok(Walk::starting_at(tree, &start.node, above, id))
}

/// The CLI's answer for one node: `--answer`, a probe's verdict, a fact. None when nothing
/// can answer it (a choice, a missing fact, no run).
fn cli_answer(
    cat: &Catalog,
    n: &NodeDef,
    inp: &Inputs,
    cache: &mut HashMap<String, Vec<Finding>>,
) -> Option<(String, String, Source)> {
    if let Some(a) = inp.answers.get(&n.id) {
        return Some((a.clone(), String::new(), Source::User));
    }
    match n.kind {
        NodeKind::Numeric => {
            let run = inp.run?;
            let probe = n.probe.clone().unwrap_or_default();
            let fs = cache.entry(probe.clone()).or_insert_with(|| {
                let profile = mltriage_probes::profile::Profile::of(run, inp.facts);
                run_one(
                    cat,
                    &probe,
                    run,
                    inp.facts,
                    &profile,
                    inp.compute,
                    inp.baseline,
                )
                .unwrap_or_default()
            });
            let (l, m) = numeric_answer(fs, n, &probe);
            // A node whose own probe passes or cannot judge still follows another probe that
            // failed its entry: the walk never passes what `check` fails.
            if l == "skip" || l == "pass" {
                if let Some(a) = answered_elsewhere(cat, n, run, inp, cache) {
                    return Some(a);
                }
            }
            Some((l, m, Source::Probe(probe)))
        }
        NodeKind::Fact => {
            let key = n.fact.clone().unwrap_or_default();
            let v = inp.facts.get(&key)?.to_string();
            Some((v.clone(), format!("{key} = {v}"), Source::Fact(key)))
        }
        NodeKind::Choice | NodeKind::Leaf => None,
    }
}

/// A numeric node its own probe could not measure or passed, answered by another probe that
/// *failed* the node's entry on this run (a log that names the schema error answers "does the batch
/// carry the trainer's keys?"): the branch other than pass and skip that leads nearest to a
/// leaf of that entry. Warnings never answer for another probe (DESIGN §7).
fn answered_elsewhere(
    cat: &Catalog,
    n: &NodeDef,
    run: &Run,
    inp: &Inputs,
    cache: &mut HashMap<String, Vec<Finding>>,
) -> Option<(String, String, Source)> {
    let entry = n.entry.as_deref()?;
    let tree = cat.trees.iter().find(|t| {
        t.nodes
            .iter()
            .any(|x| x.id == n.id && x.branches == n.branches && x.probe == n.probe)
    })?;
    let all = cache.entry(ALL_FINDINGS.to_string()).or_insert_with(|| {
        super::check::check(cat, run, inp.facts, inp.compute, inp.baseline).findings
    });
    let f = all.iter().find(|f| {
        f.id == entry && f.status == Status::Fail && Some(f.probe.as_str()) != n.probe.as_deref()
    })?;
    // Distance from `start` to the nearest leaf concluding `entry`.
    let to_entry = |start: &str| {
        tree.below(start)
            .into_iter()
            .find(|(x, _)| x.kind == NodeKind::Leaf && x.entry.as_deref() == Some(entry))
            .map(|(_, d)| d)
    };
    let (label, _) = n
        .branches
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "pass" | "skip" | "default") && !is_warn_label(k))
        .filter_map(|(k, to)| to_entry(to).map(|d| (k.clone(), d)))
        .min_by_key(|(_, d)| *d)?;
    Some((
        label,
        format!(
            "answered by probe {}, which failed {entry} on this run: {}",
            f.probe, f.measured
        ),
        Source::Probe(f.probe.clone()),
    ))
}

/// The cache key under which a walk keeps the whole run's findings (no probe has this id).
const ALL_FINDINGS: &str = " all findings";

pub fn auto_walk(cat: &Catalog, tree: &str, inp: &Inputs) -> Result<WalkResult, WalkError> {
    auto_walk_on(cat, Walk::start(cat, tree)?, inp, &mut HashMap::new())
}

/// `walk --from ID`: start at the symptom, the route above filled in by the same answers,
/// then walk on as [`auto_walk`] does.
pub fn auto_walk_from(cat: &Catalog, id: &str, inp: &Inputs) -> Result<WalkResult, WalkError> {
    let mut cache = HashMap::new();
    let w = walk_from(cat, id, |n| cli_answer(cat, n, inp, &mut cache))?;
    auto_walk_on(cat, w, inp, &mut cache)
}

fn auto_walk_on(
    cat: &Catalog,
    mut w: Walk,
    inp: &Inputs,
    cache: &mut HashMap<String, Vec<Finding>>,
) -> Result<WalkResult, WalkError> {
    let result = |w: &Walk, conclusion, stopped| WalkResult {
        tree: w.tree.id.clone(),
        path: w.path.clone(),
        conclusion,
        stopped,
        from: w.from.clone(),
    };
    let mut guard = 0;
    while !w.is_leaf() {
        guard += 1;
        if guard > 10_000 {
            break;
        }
        let n = w
            .node()
            .cloned()
            .ok_or_else(|| WalkError::Dangling(w.current.clone()))?;
        let (q, opts, nid) = (question(cat, &n), w.answers(), n.id.clone());
        let stop = |needs: String| Stop {
            node: nid.clone(),
            question: q.clone(),
            needs,
            options: opts.clone(),
            run_leads_to: None,
            run_said: None,
        };
        let Some((label, measured, source)) = cli_answer(cat, &n, inp, cache) else {
            let needs = match n.kind {
                NodeKind::Numeric => "a run to measure (walk TREE RUN)".to_string(),
                NodeKind::Fact => format!("fact {}", n.fact.clone().unwrap_or_default()),
                _ => "a choice".to_string(),
            };
            let mut st = stop(needs);
            if n.kind == NodeKind::Choice {
                if let Some(run) = inp.run {
                    let report =
                        super::check::check(cat, run, inp.facts, inp.compute, inp.baseline);
                    st.run_leads_to = run_lead(&w.tree, &n, &report.findings);
                }
            }
            return Ok(result(&w, None, Some(st)));
        };
        // A skipped probe (or a warn walking on as pass) whose branch is a leaf would
        // conclude on nothing measured: stop and ask instead.
        if let Source::Probe(p) = &source {
            let next = branch_for(&n, &label).map(|(_, to)| to.to_string());
            let skipped = label == "skip";
            let warned_on = measured.contains(crate::trees::WALKED_ON);
            if next.is_some_and(|to| w.ends_unmeasured(&to, skipped, warned_on)) {
                let why = if skipped {
                    format!(
                        "probe {p} could not measure it ({})",
                        measured.trim_start_matches("not measured: ")
                    )
                } else {
                    format!(
                        "probe {p} warned ({measured}) but this node has no branch for a warning"
                    )
                };
                let mut st = stop(format!(
                    "an answer: {why}, and its branch would conclude on that — answer it with --answer {}=LABEL",
                    n.id
                ));
                st.run_said = Some(format!("{label}: {measured}"));
                return Ok(result(&w, None, Some(st)));
            }
        }
        match w.answer(cat, &label, &measured, source.clone()) {
            Ok(()) => {}
            Err(WalkError::NoBranch { .. }) => {
                let needs = match source {
                    Source::Fact(key) => {
                        format!("fact {key} to be one of the listed values (got {label:?})")
                    }
                    Source::Probe(p) => format!(
                        "an answer: probe {p} said {label:?}, which this node has no branch for"
                    ),
                    _ => format!("an answer this node has a branch for (got {label:?})"),
                };
                return Ok(result(&w, None, Some(stop(needs))));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(result(&w, w.conclusion(cat), None))
}

/// The TUI's proposal for the current numeric node from its probe's findings: the verdict
/// the CLI's `walk` would take ([`pick`]: the node's entry, else the most severe) picks the
/// branch.
pub fn propose_from_findings(w: &mut Walk, findings: &[Finding]) {
    let Some(n) = w.node() else { return };
    let source = Source::Probe(n.probe.clone().unwrap_or_default());
    let (answer, measured, expected, status, message) = match pick(findings, n.entry.as_deref()) {
        Some(f) => (
            branch_label(n, f.status, &f.outcome),
            f.measured.clone(),
            f.expected.clone(),
            Some(f.status),
            f.message.clone(),
        ),
        None => (
            "skip".to_string(),
            String::new(),
            String::new(),
            Some(Status::Skip),
            "no answer".to_string(),
        ),
    };
    w.propose(answer, measured, expected, status, message, source);
}
