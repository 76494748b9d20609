//! The one walk engine, pure (no I/O, no probe runs): a [`Walk`] over a declarative tree
//! ([`TreeDef`]) holds the current node, the answers so far (each with its measured value and
//! [`Source`]) and, for the TUI, a [`Proposal`] the user confirms or overrides; back and
//! override are supported. Answers come from outside: `crate::triage` runs the probes (the
//! CLI's `walk`, the TUI's jobs), the front ends read facts and the user's picks.

pub mod route;

use mltriage_probes::probe::Status;

use crate::catalog::{Catalog, NodeDef, NodeKind, TreeDef};

/// Who answered a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A probe measured it (probe id).
    Probe(String),
    /// A fact gave it (`--fact`, an artifact, or typed in): the fact's key.
    Fact(String),
    /// The user picked or overrode it.
    User,
    /// Taken on the way down to the symptom the user started from (`walk --from`): nothing
    /// answered it, or what answered it disagrees (its `measured` says so).
    Route,
}

impl Source {
    /// `probe`, `fact` or `user` (the TUI and its transcripts).
    pub fn as_str(&self) -> &'static str {
        match self {
            Source::Probe(_) => "probe",
            Source::Fact(_) => "fact",
            Source::User => "user",
            Source::Route => "route",
        }
    }

    /// `probe ID`, `fact KEY` or `user` (`walk --json`).
    pub fn label(&self) -> String {
        match self {
            Source::Probe(p) => format!("probe {p}"),
            Source::Fact(k) => format!("fact {k}"),
            Source::User => "user".into(),
            Source::Route => "route".into(),
        }
    }
}

fn source_label<S: serde::Serializer>(s: &Source, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(&s.label())
}

/// One answered node (DESIGN.md §4.4 `walk --json` `path[]`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Step {
    /// Node id.
    pub id: String,
    pub question: String,
    /// The branch label taken (outcome, fact value, or choice label).
    pub answer: String,
    pub measured: String,
    #[serde(serialize_with = "source_label")]
    pub source: Source,
    /// Catalog entry the node asks about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// A route step of "walk from here" whose answer (what the run says, or nothing) is not
    /// the branch the route to the start takes: that branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The user overrode a proposal: what was proposed (`label: measured (source)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposed: Option<String>,
}

impl Step {
    /// The answer as a transcript states it: a route step nothing answered says so instead
    /// of naming a branch no one gave.
    pub fn shown_answer(&self) -> String {
        match (&self.via, self.answer.is_empty()) {
            (Some(v), true) => format!("not answered (route takes {v})"),
            (Some(v), false) => format!("{} (route takes {v})", self.answer),
            (None, _) => self.answer.clone(),
        }
    }
}

/// Marks a step answered from a warning that walked on (a warn never takes a fail branch).
pub const WALKED_ON: &str = "walked on";
/// The note of a tree's end where every configuration check passed.
const ALL_PASSED: &str = "no configuration problem found";

/// The answer proposed for the current node, waiting for the user's confirmation (TUI).
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// Branch label (outcome, fact value or option label).
    pub answer: String,
    /// The node it leads to; empty when the node has no such branch.
    pub next: String,
    pub measured: String,
    pub expected: String,
    pub status: Option<Status>,
    pub message: String,
    pub source: Source,
}

/// A branch the user can pick at the current node: (label, next node).
pub type Choice = (String, String);

/// Where a walk ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Conclusion {
    /// Catalog entry id (root cause).
    pub id: String,
    pub title: String,
    pub fix: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub knobs: Vec<String>,
    /// Leaf node id.
    pub node: String,
    /// Set when the walk found nothing wrong but could not measure most of its checks: an
    /// all-clear that is not established (DESIGN §7: inconclusive is an answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<Inconclusive>,
}

/// Why an all-clear walk is inconclusive.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Inconclusive {
    /// Probe checks on the path that could not be measured.
    pub skipped: usize,
    /// Probe checks on the path.
    pub checks: usize,
    /// What each skipped check lacked: "node: reason".
    pub missing: Vec<String>,
}

/// A walk that ended without any check taking a failure's branch, with more than half of its
/// probe checks skipped, is inconclusive.
fn inconclusive(path: &[Step]) -> Option<Inconclusive> {
    let checks: Vec<&Step> = path
        .iter()
        .filter(|s| matches!(s.source, Source::Probe(_)))
        .collect();
    let found = path.iter().any(|s| {
        matches!(s.source, Source::Probe(_))
            && !matches!(s.answer.as_str(), "pass" | "skip")
            && !is_warn_label(&s.answer)
    });
    let missing: Vec<String> = checks
        .iter()
        .filter(|s| s.answer == "skip")
        .map(|s| {
            let why = s.measured.trim_start_matches("not measured: ");
            format!("{}: {}", s.id, why)
        })
        .collect();
    if found || checks.is_empty() || missing.len() * 2 <= checks.len() {
        return None;
    }
    Some(Inconclusive {
        skipped: missing.len(),
        checks: checks.len(),
        missing,
    })
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WalkError {
    #[error("tree {0:?}: no such tree")]
    NoTree(String),
    #[error("node {node:?}: no branch for answer {answer:?} (expected one of: {expected})")]
    NoBranch {
        node: String,
        answer: String,
        expected: String,
    },
    #[error("node {0:?}: target node does not exist")]
    Dangling(String),
    #[error("the walk is finished")]
    Finished,
    #[error("{0:?}: no tree leads to it (not an entry or node any tree reaches)")]
    NotInTrees(String),
}

/// The branch of a numeric or fact node for an answer: the exact key, else a key equal up
/// to case and surrounding blanks, else `default`. Returns (key, next node).
pub fn branch_for<'a>(node: &'a NodeDef, answer: &str) -> Option<(&'a str, &'a str)> {
    node.branches
        .get_key_value(answer)
        .or_else(|| {
            node.branches
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(answer.trim()))
        })
        .or_else(|| node.branches.get_key_value("default"))
        .map(|(k, v)| (k.as_str(), v.as_str()))
}

/// The branch a probe's verdict takes at numeric node `n`. Fail, pass and skip go by their
/// outcome label; a warn goes to `warn_<outcome>` or `warn` when the node has such a branch,
/// else the walk goes on as `pass`, the warning kept on the step (DESIGN §7: a warn never
/// routes to a failure's branch; `mltriage lint` checks that no `warn*` branch reaches a
/// leaf that a failure reaches).
pub fn branch_label(n: &NodeDef, status: Status, outcome: &str) -> String {
    match status {
        Status::Skip => "skip".to_string(),
        Status::Warn => {
            let specific = format!("warn_{outcome}");
            if n.branches.contains_key(&specific) {
                specific
            } else if n.branches.contains_key("warn") {
                "warn".to_string()
            } else {
                "pass".to_string()
            }
        }
        _ if outcome.is_empty() => status.as_str().to_string(),
        _ => outcome.to_string(),
    }
}

/// Is `label` a branch a warn takes (`warn` or `warn_<outcome>`)?
pub fn is_warn_label(label: &str) -> bool {
    label == "warn" || label.starts_with("warn_")
}

/// The question shown for a node (its own, else its entry's question or title, else its
/// probe's question, else its id).
pub fn question(cat: &Catalog, n: &NodeDef) -> String {
    if let Some(q) = &n.question {
        return q.clone();
    }
    if let Some(e) = n.entry.as_deref().and_then(|e| cat.entry(e)) {
        return e.question.clone().unwrap_or_else(|| e.title.clone());
    }
    n.probe
        .as_deref()
        .and_then(|p| cat.probe(p))
        .map(|p| p.question.clone())
        .unwrap_or_else(|| n.id.clone())
}

/// What a branch leads to, in words (override lists, proposals): a leaf's entry title (its
/// note when it has no entry), a question node's question; the id when neither exists.
pub fn target_words(cat: &Catalog, tree: &TreeDef, id: &str) -> String {
    let Some(n) = tree.nodes.iter().find(|n| n.id == id) else {
        return id.to_string();
    };
    if n.kind == NodeKind::Leaf {
        let entry = n.entry.as_deref().and_then(|e| cat.entry(e));
        // The leaf's own note says what this branch concludes; its first sentence, with
        // the entry it names.
        let first = n.note.as_deref().map(|t| match t.find(". ") {
            Some(i) => &t[..i + 1],
            None => t,
        });
        return match (entry, first) {
            (Some(e), Some(f)) => format!("{f} ({})", e.id),
            (Some(e), None) => format!("{} ({})", e.title, e.id),
            (None, Some(f)) => f.to_string(),
            (None, None) => n.id.clone(),
        };
    }
    question(cat, n)
}

/// A walk in progress over one tree.
#[derive(Debug, Clone)]
pub struct Walk {
    pub tree: TreeDef,
    /// The current node's id.
    pub current: String,
    /// Answered nodes, in order.
    pub path: Vec<Step>,
    pub proposal: Option<Proposal>,
    /// A walk started from a symptom ("walk from here"): what it started from.
    pub from: Option<WalkFrom>,
}

/// Where a "walk from here" started: the id the user named, the node the walk started at,
/// and how many steps of the path lie above it (the route, filled in before the walk).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WalkFrom {
    pub id: String,
    pub start: String,
    pub above: usize,
}

impl Walk {
    /// A walk at the tree's root.
    pub fn new(tree: &TreeDef) -> Walk {
        Walk {
            tree: tree.clone(),
            current: tree.root.clone(),
            path: Vec::new(),
            proposal: None,
            from: None,
        }
    }

    /// A walk at node `start` of `tree`, the route above it already answered (`above`, root
    /// first: see [`route::route`]); `from` is the id the user named.
    pub fn starting_at(tree: &TreeDef, start: &str, above: Vec<Step>, from: &str) -> Walk {
        Walk {
            tree: tree.clone(),
            current: start.to_string(),
            from: Some(WalkFrom {
                id: from.to_string(),
                start: start.to_string(),
                above: above.len(),
            }),
            path: above,
            proposal: None,
        }
    }

    /// A walk of the catalog's tree `tree_id`, its root checked.
    pub fn start(cat: &Catalog, tree_id: &str) -> Result<Walk, WalkError> {
        let tree = cat
            .tree(tree_id)
            .ok_or_else(|| WalkError::NoTree(tree_id.to_string()))?;
        let w = Walk::new(tree);
        if w.node().is_none() {
            return Err(WalkError::Dangling(tree.root.clone()));
        }
        Ok(w)
    }

    pub fn node(&self) -> Option<&NodeDef> {
        self.node_by_id(&self.current)
    }

    pub fn node_by_id(&self, id: &str) -> Option<&NodeDef> {
        self.tree.nodes.iter().find(|n| n.id == id)
    }

    pub fn is_leaf(&self) -> bool {
        self.node().is_some_and(|n| n.kind == NodeKind::Leaf)
    }

    /// The branches one may pick here (choice options, or a node's branches to override).
    pub fn choices(&self) -> Vec<Choice> {
        let Some(n) = self.node() else {
            return Vec::new();
        };
        match n.kind {
            NodeKind::Choice => n
                .options
                .iter()
                .map(|o| (o.label.clone(), o.next.clone()))
                .collect(),
            NodeKind::Leaf => Vec::new(),
            _ => n
                .branches
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// Labels this node accepts (option labels or branch keys).
    pub fn answers(&self) -> Vec<String> {
        self.choices().into_iter().map(|(l, _)| l).collect()
    }

    /// (label recorded, next node) for an answer at node `n`: a choice by label (any case)
    /// or 1-based number, a branch by [`branch_for`].
    fn target(&self, n: &NodeDef, answer: &str) -> Result<(String, String), WalkError> {
        let no_branch = || WalkError::NoBranch {
            node: n.id.clone(),
            answer: answer.into(),
            expected: self.answers().join(" | "),
        };
        let (label, next) = match n.kind {
            NodeKind::Choice => n
                .options
                .iter()
                .enumerate()
                .find(|(i, o)| {
                    o.label.eq_ignore_ascii_case(answer) || (i + 1).to_string() == answer.trim()
                })
                .map(|(_, o)| (o.label.clone(), o.next.clone()))
                .ok_or_else(no_branch)?,
            NodeKind::Leaf => return Err(WalkError::Finished),
            _ => match branch_for(n, answer) {
                Some(("default", next)) => (answer.to_string(), next.to_string()),
                Some((k, next)) => (k.to_string(), next.to_string()),
                None => return Err(no_branch()),
            },
        };
        if self.node_by_id(&next).is_none() {
            return Err(WalkError::Dangling(next));
        }
        Ok((label, next))
    }

    /// Answer the current node and move on (the CLI's `walk`).
    pub fn answer(
        &mut self,
        cat: &Catalog,
        answer: &str,
        measured: &str,
        source: Source,
    ) -> Result<(), WalkError> {
        let n = self
            .node()
            .ok_or_else(|| WalkError::Dangling(self.current.clone()))?;
        let (label, next) = self.target(n, answer)?;
        self.advance(cat, label, measured.to_string(), source, next);
        Ok(())
    }

    /// Propose `answer` for the current node, to be confirmed or overridden.
    pub fn propose(
        &mut self,
        answer: String,
        measured: String,
        expected: String,
        status: Option<Status>,
        message: String,
        source: Source,
    ) {
        let Some(n) = self.node() else { return };
        let next = branch_for(n, &answer)
            .map(|(_, next)| next.to_string())
            .unwrap_or_default();
        self.proposal = Some(Proposal {
            answer,
            next,
            measured,
            expected,
            status,
            message,
            source,
        });
    }

    /// Nothing can measure the node (no run, no probe, cancelled): propose `skip` when the
    /// node has that branch.
    pub fn propose_skip(&mut self, why: &str) {
        let Some(n) = self.node() else { return };
        let next = n.branches.get("skip").cloned().unwrap_or_default();
        let source = Source::Probe(n.probe.clone().unwrap_or_default());
        self.proposal = Some(Proposal {
            answer: "skip".into(),
            next,
            measured: String::new(),
            expected: String::new(),
            status: Some(Status::Skip),
            message: why.to_string(),
            source,
        });
    }

    /// A fact's value answers the current fact node.
    pub fn propose_fact(&mut self, value: &str, source: Source) {
        let v = value.to_string();
        self.propose(v.clone(), v, String::new(), None, String::new(), source);
    }

    /// Accept the proposal and move on. Returns false when there is nothing to confirm, the
    /// proposed branch leads nowhere, or it would conclude without evidence (a skipped probe
    /// whose branch is a leaf: [`Walk::concludes_unmeasured`]).
    pub fn confirm(&mut self, cat: &Catalog) -> bool {
        let Some(p) = self.proposal.clone() else {
            return false;
        };
        if p.next.is_empty() || self.node_by_id(&p.next).is_none() {
            return false;
        }
        if self.concludes_unmeasured(&p) {
            return false;
        }
        let measured = if p.status == Some(Status::Skip) && !p.message.is_empty() {
            // The reason the probe could not measure is the transcript's measured value.
            if p.measured.is_empty() {
                format!("not measured: {}", p.message)
            } else {
                format!("{} — not measured: {}", p.measured, p.message)
            }
        } else {
            p.measured
        };
        self.advance(cat, p.answer, measured, p.source, p.next);
        true
    }

    /// Would taking proposal `p` end the walk on something no one measured? A probe that
    /// skipped (or a warn with no branch of its own) whose branch is a leaf: the walk stops
    /// there and asks, instead of concluding.
    pub fn concludes_unmeasured(&self, p: &Proposal) -> bool {
        let probe = matches!(p.source, Source::Probe(_));
        let skipped = probe && p.status == Some(Status::Skip);
        let warned_on = probe && p.status == Some(Status::Warn) && !is_warn_label(&p.answer);
        self.ends_unmeasured(&p.next, skipped, warned_on)
    }

    /// Going to `next` ends the walk on something no one measured: `next` is a leaf other
    /// than the all-clear end (which weighs skips and warnings itself, see
    /// [`Walk::conclusion`]) and the answer was a skipped probe, or a warn that walked on as
    /// `pass` (the warning is about this very question, so the pass leaf's premise does not
    /// hold) — unless a probe on the path already found that leaf's entry wrong.
    pub fn ends_unmeasured(&self, next: &str, skipped: bool, warned_on: bool) -> bool {
        let Some(leaf) = self.node_by_id(next).filter(|n| n.kind == NodeKind::Leaf) else {
            return false;
        };
        let all_clear = leaf.note.as_deref().is_some_and(|t| t.contains(ALL_PASSED));
        // A leaf whose entry a probe on the path already found wrong is measured: that
        // finding is its evidence.
        let found = leaf.entry.as_deref().is_some_and(|e| {
            self.path.iter().any(|s| {
                s.entry.as_deref() == Some(e)
                    && matches!(s.source, Source::Probe(_))
                    && !matches!(s.answer.as_str(), "pass" | "skip")
                    && !s.measured.contains(WALKED_ON)
            })
        });
        // A leaf that concludes the node's own entry answers this very question (a warning
        // walking on to it concludes what it warned; a skip's "check it yourself" leaf).
        let own = leaf.entry.is_some()
            && self.node().and_then(|n| n.entry.as_deref()) == leaf.entry.as_deref();
        !all_clear && !found && !own && (skipped || warned_on)
    }

    /// The user picks branch `i` of [`Walk::choices`] (a choice node, or an override).
    pub fn pick(&mut self, cat: &Catalog, i: usize) -> bool {
        let Some((label, next)) = self.choices().into_iter().nth(i) else {
            return false;
        };
        if self.node_by_id(&next).is_none() {
            return false;
        }
        let measured = self
            .proposal
            .as_ref()
            .map(|p| p.measured.clone())
            .unwrap_or_default();
        // An override keeps what the run proposed, so the transcript shows both.
        let proposed = self
            .proposal
            .as_ref()
            .filter(|p| p.answer != label && !matches!(p.source, Source::User))
            .map(|p| {
                let why = if p.measured.is_empty() {
                    p.message.clone()
                } else {
                    p.measured.clone()
                };
                let why = if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                };
                format!("{}{why} ({})", p.answer, p.source.label())
            });
        self.advance(cat, label, measured, Source::User, next);
        if let Some(st) = self.path.last_mut() {
            st.proposed = proposed;
        }
        true
    }

    fn advance(
        &mut self,
        cat: &Catalog,
        answer: String,
        measured: String,
        source: Source,
        next: String,
    ) {
        let (question, entry) = self
            .node()
            .map(|n| (question(cat, n), n.entry.clone()))
            .unwrap_or_default();
        self.path.push(Step {
            id: std::mem::replace(&mut self.current, next),
            question,
            answer,
            measured,
            source,
            entry,
            via: None,
            proposed: None,
        });
        self.proposal = None;
    }

    /// Undo the last answer. Returns false at the root.
    pub fn back(&mut self) -> bool {
        match self.path.pop() {
            Some(s) => {
                self.current = s.id;
                self.proposal = None;
                true
            }
            None => false,
        }
    }

    /// Node ids from the root to here.
    pub fn breadcrumb(&self) -> Vec<String> {
        let mut v: Vec<String> = self.path.iter().map(|s| s.id.clone()).collect();
        v.push(self.current.clone());
        v
    }

    /// The conclusion once a leaf is reached.
    pub fn conclusion(&self, cat: &Catalog) -> Option<Conclusion> {
        let n = self.node()?;
        if n.kind != NodeKind::Leaf {
            return None;
        }
        let mut e = n.entry.as_deref().and_then(|id| cat.entry(id));
        // A walk that reached "no configuration problem found" past a node whose probe warned
        // (a warn walks on, never down a fail branch) concludes at that warning's entry: the
        // run's own evidence, not a generic end, is the lead.
        let mut warned_note = None;
        if n.note.as_deref().is_some_and(|t| t.contains(ALL_PASSED)) {
            if let Some(st) = self.path.iter().find(|s| s.measured.contains(WALKED_ON)) {
                if let Some(we) = st.entry.as_deref().and_then(|id| cat.entry(id)) {
                    e = Some(we);
                    warned_note = Some(format!(
                        "every check of the walk passed except one that warned — {}: {}",
                        st.question, st.measured
                    ));
                }
            }
        }
        if let Some(note) = warned_note {
            return Some(Conclusion {
                id: e.map(|e| e.id.clone()).unwrap_or_default(),
                title: e.map(|e| e.title.clone()).unwrap_or_default(),
                fix: e.map(|e| e.fix.clone()).unwrap_or_default(),
                note: Some(note),
                knobs: e.map(|e| e.knobs.clone()).unwrap_or_default(),
                node: n.id.clone(),
                inconclusive: None,
            });
        }
        if let Some(inc) = inconclusive(&self.path) {
            return Some(Conclusion {
                id: String::new(),
                title: "Inconclusive: most checks could not be measured".to_string(),
                fix: String::new(),
                note: Some(format!(
                    "inconclusive: {} of {} checks could not be measured, so the walk's end \
                     ({}) is not established. Give the run the artifacts or facts they need \
                     (`mltriage inspect RUN` shows what was read) and walk again.",
                    inc.skipped,
                    inc.checks,
                    n.note.as_deref().or(n.entry.as_deref()).unwrap_or(&n.id)
                )),
                knobs: Vec::new(),
                node: n.id.clone(),
                inconclusive: Some(inc),
            });
        }
        Some(Conclusion {
            id: e.map(|e| e.id.clone()).unwrap_or_default(),
            title: e
                .map(|e| e.title.clone())
                .unwrap_or_else(|| n.note.clone().unwrap_or_default()),
            fix: e.map(|e| e.fix.clone()).unwrap_or_default(),
            note: n.note.clone(),
            knobs: e.map(|e| e.knobs.clone()).unwrap_or_default(),
            node: n.id.clone(),
            inconclusive: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::load::{parse_file, RawPlaybook};
    use std::path::Path;

    fn cat() -> Catalog {
        let mut raw = RawPlaybook::default();
        let text = r#"
entries:
  - {id: A, domain: llm, title: ta, symptom: s, cause: c, fix: fa}
  - {id: B, domain: llm, title: tb, symptom: s, cause: c, fix: fb}
tree:
  id: t
  title: T
  root: n1
  nodes:
    - {id: n1, kind: numeric, probe: p, entry: A, branches: {pass: n2, high: la}}
    - {id: n2, kind: fact, fact: phase, branches: {sft: la, default: c1}}
    - {id: c1, kind: choice, question: what?, options: [{label: one, next: la}, {label: two, next: lb}]}
    - {id: la, kind: leaf, entry: A}
    - {id: lb, kind: leaf, entry: B, note: n}
"#;
        parse_file(Path::new("t.yaml"), text, &mut raw).unwrap();
        Catalog::from_raw(raw)
    }

    #[test]
    fn walks_numeric_fact_choice_to_a_leaf_and_back() {
        let c = cat();
        let mut w = Walk::start(&c, "t").unwrap();
        w.answer(&c, "pass", "x=1", Source::Probe("p".into()))
            .unwrap();
        w.answer(&c, "dpo", "dpo", Source::Fact("phase".into()))
            .unwrap();
        assert_eq!(w.current, "c1");
        w.answer(&c, "2", "", Source::User).unwrap();
        assert!(w.is_leaf());
        let concl = w.conclusion(&c).unwrap();
        assert_eq!(concl.id, "B");
        assert_eq!(concl.fix, "fb");
        assert_eq!(w.path.len(), 3);
        assert_eq!(w.path[1].answer, "dpo");
        assert!(w.back());
        assert_eq!(w.current, "c1");
        w.answer(&c, "one", "", Source::User).unwrap();
        assert_eq!(w.conclusion(&c).unwrap().id, "A");
    }

    #[test]
    fn unknown_answer_is_an_error_naming_the_choices() {
        let c = cat();
        let mut w = Walk::start(&c, "t").unwrap();
        let e = w.answer(&c, "sideways", "", Source::User).unwrap_err();
        assert!(e.to_string().contains("high | pass"), "{e}");
        assert!(!w.back());
        assert!(Walk::start(&c, "nope").is_err());
    }

    #[test]
    fn a_warn_walks_on_unless_the_node_has_a_warn_branch() {
        let c = cat();
        let w = Walk::start(&c, "t").unwrap();
        let n = w.node().unwrap().clone();
        // `high` is this node's failure branch: a warn labelled `high` must not take it.
        assert_eq!(branch_label(&n, Status::Fail, "high"), "high");
        assert_eq!(branch_label(&n, Status::Warn, "high"), "pass");
        assert_eq!(branch_label(&n, Status::Skip, "high"), "skip");
        let mut n2 = n.clone();
        n2.branches.insert("warn_high".into(), "lb".into());
        assert_eq!(branch_label(&n2, Status::Warn, "high"), "warn_high");
        n2.branches.remove("warn_high");
        n2.branches.insert("warn".into(), "lb".into());
        assert_eq!(branch_label(&n2, Status::Warn, "high"), "warn");
    }

    #[test]
    fn an_all_clear_with_most_checks_skipped_is_inconclusive() {
        let c = cat();
        // `t` has no skip branch at n1: walk by pass, then rewrite the recorded answer.
        let mut w2 = Walk::start(&c, "t").unwrap();
        w2.answer(&c, "pass", "", Source::Probe("p".into()))
            .unwrap();
        w2.answer(&c, "sft", "", Source::Fact("phase".into()))
            .unwrap();
        assert!(w2.conclusion(&c).unwrap().inconclusive.is_none());
        w2.path[0].answer = "skip".into();
        w2.path[0].measured = "not measured: no loss series".into();
        let concl = w2.conclusion(&c).unwrap();
        let inc = concl
            .inconclusive
            .expect("one check, skipped: inconclusive");
        assert_eq!((inc.skipped, inc.checks), (1, 1));
        assert_eq!(inc.missing, vec!["n1: no loss series".to_string()]);
        assert!(concl.id.is_empty() && concl.note.unwrap().starts_with("inconclusive"));
        // A failure on the path is a finding, whatever else was skipped.
        w2.path[0].answer = "high".into();
        assert!(w2.conclusion(&c).unwrap().inconclusive.is_none());
    }
}
