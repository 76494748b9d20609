//! Findings: probe verdicts joined with the catalog (titles, priorities, causal order) and
//! ordered most important first — fails, then warns; within them root causes before the
//! symptoms they explain. Shared by `check`, `probe`, `walk` and the TUI.

use std::collections::{HashMap, HashSet};

use mltriage_probes::probe::{Evidence, Status, Verdict};

use crate::catalog::Catalog;

/// One line of a `check` report (DESIGN.md §4.4 `findings[]`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Finding {
    /// Catalog entry id.
    pub id: String,
    pub status: Status,
    pub title: String,
    pub probe: String,
    pub measured: String,
    pub expected: String,
    pub evidence: Vec<Evidence>,
    pub message: String,
    /// Branch label the probe proposes for tree nodes.
    pub outcome: String,
    /// Probe ids of failing/warning findings this one is likely explained by.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explained_by: Vec<String>,
    /// Tree nodes (`tree/node`) that ask this probe's question.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// For a pass on an entry another probe failed or warned: that probe. One entry has one
    /// verdict — the worst — and this pass is shown as context under it, never beside it as
    /// a contradicting "pass".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_for: Option<String>,
    #[serde(skip)]
    pub priority: i32,
}

impl Finding {
    pub fn from_verdict(cat: &Catalog, probe: &str, v: Verdict) -> Finding {
        let title = cat
            .entry(&v.entry)
            .map(|e| e.title.clone())
            .unwrap_or_default();
        let priority = cat.probe(probe).map(|p| p.priority).unwrap_or(50);
        let nodes = cat
            .trees
            .iter()
            .flat_map(|t| {
                t.nodes
                    .iter()
                    .filter(|n| n.probe.as_deref() == Some(probe))
                    .map(move |n| format!("{}/{}", t.id, n.id))
            })
            .collect();
        Finding {
            id: v.entry,
            status: v.status,
            title,
            probe: probe.to_string(),
            measured: v.measured,
            expected: v.expected,
            evidence: v.evidence,
            message: v.message,
            outcome: v.outcome,
            explained_by: Vec::new(),
            nodes,
            context_for: None,
            priority,
        }
    }
}

/// Order findings: fail < warn < pass < skip; within a status, a failing probe that explains
/// another goes first, then by playbook priority, then by id. Annotates `explained_by`, and
/// marks each pass on an entry that another probe failed or warned as that verdict's context
/// (`context_for`), placed right after it.
pub fn order(cat: &Catalog, findings: &mut Vec<Finding>) {
    order_by_cause(cat, findings);
    fold_passes_into_entry_verdicts(findings);
}

/// One verdict per entry: a pass whose entry another probe failed or warned is re-placed
/// right after the worst finding of that entry and marked as its context.
fn fold_passes_into_entry_verdicts(findings: &mut Vec<Finding>) {
    let mut worst: HashMap<String, String> = HashMap::new();
    for f in findings.iter() {
        if matches!(f.status, Status::Fail | Status::Warn) {
            // Sorted worst first: the first bad finding of an entry is its verdict.
            worst.entry(f.id.clone()).or_insert_with(|| f.probe.clone());
        }
    }
    if worst.is_empty() {
        return;
    }
    let mut context: Vec<Finding> = Vec::new();
    let mut rest: Vec<Finding> = Vec::with_capacity(findings.len());
    for mut f in findings.drain(..) {
        match worst.get(&f.id) {
            Some(p) if f.status == Status::Pass => {
                f.context_for = Some(p.clone());
                context.push(f);
            }
            _ => rest.push(f),
        }
    }
    for f in rest {
        let anchor =
            matches!(f.status, Status::Fail | Status::Warn) && worst.get(&f.id) == Some(&f.probe);
        let id = f.id.clone();
        findings.push(f);
        if anchor {
            findings.extend(context.iter().filter(|c| c.id == id).cloned());
        }
    }
}

fn order_by_cause(cat: &Catalog, findings: &mut [Finding]) {
    let bad: HashSet<&str> = findings
        .iter()
        .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
        .map(|f| f.probe.as_str())
        .collect();
    let mut explained_by: HashMap<String, Vec<String>> = HashMap::new();
    for p in &cat.probes {
        if !bad.contains(p.id.as_str()) {
            continue;
        }
        for x in &p.explains {
            if bad.contains(x.as_str()) && x != &p.id {
                explained_by
                    .entry(x.clone())
                    .or_default()
                    .push(p.id.clone());
            }
        }
    }
    for f in findings.iter_mut() {
        if matches!(f.status, Status::Fail | Status::Warn) {
            if let Some(c) = explained_by.get(&f.probe) {
                f.explained_by = c.clone();
            }
        }
    }
    // A symptom sorts after its causes: depth in the "explained by" relation.
    let depth = |p: &str| -> usize {
        let mut d = 0;
        let mut frontier = vec![p.to_string()];
        let mut seen = HashSet::new();
        while let Some(x) = frontier.pop() {
            if let Some(cs) = explained_by.get(&x) {
                for c in cs {
                    if seen.insert(c.clone()) {
                        d += 1;
                        frontier.push(c.clone());
                    }
                }
            }
        }
        d
    };
    let depths: HashMap<String, usize> = findings
        .iter()
        .map(|f| (f.probe.clone(), depth(&f.probe)))
        .collect();
    findings.sort_by(|a, b| {
        let (da, db) = (
            depths.get(&a.probe).copied().unwrap_or(0),
            depths.get(&b.probe).copied().unwrap_or(0),
        );
        // Causal depth only reorders within fail/warn; a warn never overtakes a fail.
        a.status
            .cmp(&b.status)
            .then_with(|| {
                if matches!(a.status, Status::Fail | Status::Warn) {
                    da.cmp(&db)
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .then_with(|| a.priority.cmp(&b.priority))
            .then_with(|| a.id.cmp(&b.id))
    });
}
