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
use crate::catalog::{Catalog, NodeKind};
use crate::findings::Finding;
use crate::trees::{question, Conclusion, Source, Step, Walk, WalkError};

/// Why a walk stopped before a leaf.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stop {
    pub node: String,
    pub question: String,
    /// e.g. `fact phase`, `a choice`, `a run to measure`.
    pub needs: String,
    pub options: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct WalkResult {
    pub tree: String,
    pub path: Vec<Step>,
    pub conclusion: Option<Conclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stop>,
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

pub fn auto_walk(cat: &Catalog, tree: &str, inp: &Inputs) -> Result<WalkResult, WalkError> {
    let mut w = Walk::start(cat, tree)?;
    let mut cache: HashMap<String, Vec<Finding>> = HashMap::new();
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
        if let Some(a) = inp.answers.get(&n.id) {
            w.answer(cat, a, "", Source::User)?;
            continue;
        }
        let (q, opts, nid) = (question(cat, &n), w.answers(), n.id.clone());
        let stop = |needs: String| Stop {
            node: nid.clone(),
            question: q.clone(),
            needs,
            options: opts.clone(),
        };
        match n.kind {
            NodeKind::Numeric => {
                let Some(run) = inp.run else {
                    return Ok(WalkResult {
                        tree: w.tree.id.clone(),
                        path: w.path.clone(),
                        conclusion: None,
                        stopped: Some(stop("a run to measure (walk TREE RUN)".into())),
                    });
                };
                let probe = n.probe.clone().unwrap_or_default();
                let fs = cache.entry(probe.clone()).or_insert_with(|| {
                    run_one(cat, &probe, run, inp.facts, inp.compute, inp.baseline)
                        .unwrap_or_default()
                });
                let (label, measured) = match pick(fs, n.entry.as_deref()) {
                    Some(f) if f.status == Status::Skip => {
                        ("skip".to_string(), format!("not measured: {}", f.message))
                    }
                    Some(f) => (
                        f.outcome.clone(),
                        if f.expected.is_empty() {
                            f.measured.clone()
                        } else {
                            format!("{} (expected {})", f.measured, f.expected)
                        },
                    ),
                    None => (
                        "skip".to_string(),
                        format!("probe {probe} is not implemented"),
                    ),
                };
                match w.answer(cat, &label, &measured, Source::Probe(probe.clone())) {
                    Ok(()) => {}
                    Err(WalkError::NoBranch { .. }) => {
                        return Ok(WalkResult { tree: w.tree.id.clone(), path: w.path.clone(), conclusion: None, stopped: Some(stop(format!("an answer: probe {probe} said {label:?}, which this node has no branch for"))) });
                    }
                    Err(e) => return Err(e),
                }
            }
            NodeKind::Fact => {
                let key = n.fact.clone().unwrap_or_default();
                match inp.facts.get(&key) {
                    Some(v) => {
                        let v = v.to_string();
                        match w.answer(cat, &v, &format!("{key} = {v}"), Source::Fact(key.clone()))
                        {
                            Ok(()) => {}
                            Err(WalkError::NoBranch { .. }) => {
                                return Ok(WalkResult {
                                    tree: w.tree.id.clone(),
                                    path: w.path.clone(),
                                    conclusion: None,
                                    stopped: Some(stop(format!(
                                        "fact {key} to be one of the listed values (got {v:?})"
                                    ))),
                                })
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    None => {
                        return Ok(WalkResult {
                            tree: w.tree.id.clone(),
                            path: w.path.clone(),
                            conclusion: None,
                            stopped: Some(stop(format!("fact {key}"))),
                        })
                    }
                }
            }
            NodeKind::Choice => {
                return Ok(WalkResult {
                    tree: w.tree.id.clone(),
                    path: w.path.clone(),
                    conclusion: None,
                    stopped: Some(stop("a choice".into())),
                });
            }
            NodeKind::Leaf => break,
        }
    }
    Ok(WalkResult {
        tree: w.tree.id.clone(),
        path: w.path.clone(),
        conclusion: w.conclusion(cat),
        stopped: None,
    })
}

/// The TUI's proposal for the current numeric node from its probe's findings: the verdict
/// the CLI's `walk` would take ([`pick`]: the node's entry, else the most severe) picks the
/// branch.
pub fn propose_from_findings(w: &mut Walk, findings: &[Finding]) {
    let Some(n) = w.node() else { return };
    let source = Source::Probe(n.probe.clone().unwrap_or_default());
    let (answer, measured, expected, status, message) = match pick(findings, n.entry.as_deref()) {
        Some(f) => (
            if f.outcome.is_empty() {
                f.status.as_str().to_string()
            } else {
                f.outcome.clone()
            },
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
