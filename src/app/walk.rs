//! A thin, pure walk over a declarative tree ([`TreeDef`]): the current node, the value
//! that answered it (from a probe, a fact or the user) and the branch it proposes; confirm,
//! override and back. No I/O — the app asks the worker for probe results and feeds them in.
//! It is not `crate::trees::Walk`: that engine borrows the catalog (`Walk<'c>`) and
//! answers a node in one step, while the TUI owns its catalog behind an `Arc` and needs a
//! proposal the user confirms or overrides; the verdict choice is shared
//! ([`crate::trees::auto::pick`]).

use mltriage_probes::probe::Status;

use crate::catalog::{Catalog, NodeDef, NodeKind, TreeDef};
use crate::findings::Finding;

/// Where an answer came from (transcript `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Probe,
    Fact,
    User,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Probe => "probe",
            Source::Fact => "fact",
            Source::User => "user",
        }
    }
}

/// The answer proposed for the current node, waiting for the user's confirmation.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// Branch label (outcome, fact value or option label).
    pub answer: String,
    pub next: String,
    pub measured: String,
    pub expected: String,
    pub status: Option<Status>,
    pub message: String,
    pub source: Source,
}

/// One answered node.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Step {
    pub id: String,
    pub question: String,
    pub answer: String,
    pub measured: String,
    pub source: Source,
    #[serde(skip)]
    pub next: String,
}

/// A branch the user can pick at the current node: (label, next node).
pub type Choice = (String, String);

#[derive(Debug, Clone)]
pub struct Walk {
    pub tree: TreeDef,
    pub current: String,
    pub path: Vec<Step>,
    pub proposal: Option<Proposal>,
}

/// Branch for a label: exact, case-insensitive, then `default`.
pub fn branch_for<'a>(node: &'a NodeDef, label: &str) -> Option<&'a str> {
    node.branches
        .get(label)
        .or_else(|| {
            node.branches
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(label))
                .map(|(_, v)| v)
        })
        .or_else(|| node.branches.get("default"))
        .map(String::as_str)
}

/// The question text of a node (its own, else its entry's question or title).
pub fn question(cat: &Catalog, node: &NodeDef) -> String {
    if let Some(q) = &node.question {
        return q.clone();
    }
    node.entry
        .as_deref()
        .and_then(|e| cat.entry(e))
        .map(|e| e.question.clone().unwrap_or_else(|| e.title.clone()))
        .unwrap_or_else(|| node.id.clone())
}

impl Walk {
    pub fn new(tree: &TreeDef) -> Walk {
        Walk {
            tree: tree.clone(),
            current: tree.root.clone(),
            path: Vec::new(),
            proposal: None,
        }
    }

    pub fn node(&self) -> Option<&NodeDef> {
        self.tree.nodes.iter().find(|n| n.id == self.current)
    }

    pub fn node_by_id(&self, id: &str) -> Option<&NodeDef> {
        self.tree.nodes.iter().find(|n| n.id == id)
    }

    pub fn is_leaf(&self) -> bool {
        self.node().is_some_and(|n| n.kind == NodeKind::Leaf)
    }

    /// The branches the user may pick here (override list, choice options).
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

    /// The probe's findings answer the current numeric node: the verdict the CLI's
    /// `walk` would take ([`crate::trees::auto::pick`]: the node's entry, else the most
    /// severe) picks the branch.
    pub fn propose_from_findings(&mut self, findings: &[Finding]) {
        let Some(n) = self.node() else { return };
        let f = crate::trees::auto::pick(findings, n.entry.as_deref());
        let (answer, measured, expected, status, message) = match f {
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
        let next = branch_for(n, &answer).unwrap_or_default().to_string();
        self.proposal = Some(Proposal {
            answer,
            next,
            measured,
            expected,
            status,
            message,
            source: Source::Probe,
        });
    }

    /// No probe can answer (no run attached): propose `skip` when the node has that branch.
    pub fn propose_skip(&mut self, why: &str) {
        let Some(n) = self.node() else { return };
        let next = n.branches.get("skip").cloned().unwrap_or_default();
        self.proposal = Some(Proposal {
            answer: "skip".into(),
            next,
            measured: String::new(),
            expected: String::new(),
            status: Some(Status::Skip),
            message: why.to_string(),
            source: Source::Probe,
        });
    }

    /// A fact's value answers the current fact node.
    pub fn propose_fact(&mut self, value: &str, source: Source) {
        let Some(n) = self.node() else { return };
        let next = branch_for(n, value).unwrap_or_default().to_string();
        self.proposal = Some(Proposal {
            answer: value.to_string(),
            next,
            measured: value.to_string(),
            expected: String::new(),
            status: None,
            message: String::new(),
            source,
        });
    }

    /// Accept the proposal and move on. Returns false when there is nothing to confirm or
    /// the proposed branch leads nowhere.
    pub fn confirm(&mut self, cat: &Catalog) -> bool {
        let Some(p) = self.proposal.clone() else {
            return false;
        };
        if p.next.is_empty() || self.node_by_id(&p.next).is_none() {
            return false;
        }
        self.advance(cat, p.answer, p.measured, p.source, p.next);
        true
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
        self.advance(cat, label, measured, Source::User, next);
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
        let q = self.node().map(|n| question(cat, n)).unwrap_or_default();
        self.path.push(Step {
            id: self.current.clone(),
            question: q,
            answer,
            measured,
            source,
            next: next.clone(),
        });
        self.current = next;
        self.proposal = None;
    }

    /// Step back one node. Returns false at the root.
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
}
