//! The trees engine: pure (no I/O). Given a tree definition, answers (probe outcomes, fact
//! values, user choices) move the walk to the next node or to a conclusion; back and override
//! are supported; the path records each answer with its measured value and source.

pub mod auto;

use std::collections::HashMap;

use crate::catalog::{Catalog, NodeDef, NodeKind, TreeDef};

/// Who answered a node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A probe measured it (probe id).
    Probe(String),
    /// A fact gave it (`--fact`, an artifact, or typed in).
    Fact(String),
    /// The user picked or overrode it.
    User,
}

impl Source {
    pub fn label(&self) -> String {
        match self {
            Source::Probe(p) => format!("probe {p}"),
            Source::Fact(k) => format!("fact {k}"),
            Source::User => "user".into(),
        }
    }
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
    pub source: String,
    /// Catalog entry the node asks about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

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
}

/// A walk in progress over one tree.
#[derive(Debug, Clone)]
pub struct Walk<'c> {
    pub tree: &'c TreeDef,
    cat: &'c Catalog,
    idx: HashMap<&'c str, usize>,
    current: usize,
    /// Answered nodes, in order; `history[i]` is the node index before answer i.
    pub path: Vec<Step>,
    history: Vec<usize>,
}

impl<'c> Walk<'c> {
    pub fn start(cat: &'c Catalog, tree_id: &str) -> Result<Walk<'c>, WalkError> {
        let tree = cat
            .tree(tree_id)
            .ok_or_else(|| WalkError::NoTree(tree_id.to_string()))?;
        let idx: HashMap<&str, usize> = tree
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), i))
            .collect();
        let current = *idx
            .get(tree.root.as_str())
            .ok_or_else(|| WalkError::Dangling(tree.root.clone()))?;
        Ok(Walk {
            tree,
            cat,
            idx,
            current,
            path: Vec::new(),
            history: Vec::new(),
        })
    }

    pub fn node(&self) -> &'c NodeDef {
        &self.tree.nodes[self.current]
    }

    pub fn node_by_id(&self, id: &str) -> Option<&'c NodeDef> {
        self.idx.get(id).map(|&i| &self.tree.nodes[i])
    }

    pub fn is_done(&self) -> bool {
        self.node().kind == NodeKind::Leaf
    }

    /// The question shown for a node (its own, else its entry's, else the probe's).
    pub fn question(&self, n: &NodeDef) -> String {
        if let Some(q) = &n.question {
            return q.clone();
        }
        if let Some(e) = n.entry.as_deref().and_then(|e| self.cat.entry(e)) {
            return e.question.clone().unwrap_or_else(|| e.title.clone());
        }
        n.probe
            .as_deref()
            .and_then(|p| self.cat.probe(p))
            .map(|p| p.question.clone())
            .unwrap_or_else(|| n.id.clone())
    }

    /// Labels this node accepts (branch keys or option labels).
    pub fn answers(&self) -> Vec<String> {
        let n = self.node();
        match n.kind {
            NodeKind::Choice => n.options.iter().map(|o| o.label.clone()).collect(),
            _ => n.branches.keys().cloned().collect(),
        }
    }

    fn target(&self, n: &NodeDef, answer: &str) -> Result<(String, usize), WalkError> {
        let (label, next) = match n.kind {
            NodeKind::Choice => {
                let opt = n
                    .options
                    .iter()
                    .enumerate()
                    .find(|(i, o)| {
                        o.label.eq_ignore_ascii_case(answer) || (i + 1).to_string() == answer.trim()
                    })
                    .map(|(_, o)| o);
                match opt {
                    Some(o) => (o.label.clone(), o.next.clone()),
                    None => {
                        return Err(WalkError::NoBranch {
                            node: n.id.clone(),
                            answer: answer.into(),
                            expected: self.answers().join(" | "),
                        })
                    }
                }
            }
            NodeKind::Leaf => return Err(WalkError::Finished),
            _ => {
                let key = n
                    .branches
                    .keys()
                    .find(|k| k.eq_ignore_ascii_case(answer.trim()))
                    .cloned();
                match key.or_else(|| {
                    n.branches
                        .contains_key("default")
                        .then(|| "default".to_string())
                }) {
                    Some(k) => (
                        if k == "default" {
                            answer.to_string()
                        } else {
                            k.clone()
                        },
                        n.branches[&k].clone(),
                    ),
                    None => {
                        return Err(WalkError::NoBranch {
                            node: n.id.clone(),
                            answer: answer.into(),
                            expected: self.answers().join(" | "),
                        })
                    }
                }
            }
        };
        let j = *self
            .idx
            .get(next.as_str())
            .ok_or(WalkError::Dangling(next))?;
        Ok((label, j))
    }

    /// Answer the current node and move on.
    pub fn answer(
        &mut self,
        answer: &str,
        measured: &str,
        source: Source,
    ) -> Result<(), WalkError> {
        let n = self.node();
        let (label, j) = self.target(n, answer)?;
        self.path.push(Step {
            id: n.id.clone(),
            question: self.question(n),
            answer: label,
            measured: measured.to_string(),
            source: source.label(),
            entry: n.entry.clone(),
        });
        self.history.push(self.current);
        self.current = j;
        Ok(())
    }

    /// Undo the last answer. Returns false at the root.
    pub fn back(&mut self) -> bool {
        match self.history.pop() {
            Some(i) => {
                self.current = i;
                self.path.pop();
                true
            }
            None => false,
        }
    }

    /// The conclusion once a leaf is reached.
    pub fn conclusion(&self) -> Option<Conclusion> {
        let n = self.node();
        if n.kind != NodeKind::Leaf {
            return None;
        }
        let e = n.entry.as_deref().and_then(|id| self.cat.entry(id));
        Some(Conclusion {
            id: e.map(|e| e.id.clone()).unwrap_or_default(),
            title: e
                .map(|e| e.title.clone())
                .unwrap_or_else(|| n.note.clone().unwrap_or_default()),
            fix: e.map(|e| e.fix.clone()).unwrap_or_default(),
            note: n.note.clone(),
            knobs: e.map(|e| e.knobs.clone()).unwrap_or_default(),
            node: n.id.clone(),
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
        w.answer("pass", "x=1", Source::Probe("p".into())).unwrap();
        w.answer("dpo", "dpo", Source::Fact("phase".into()))
            .unwrap();
        assert_eq!(w.node().id, "c1");
        w.answer("2", "", Source::User).unwrap();
        assert!(w.is_done());
        let concl = w.conclusion().unwrap();
        assert_eq!(concl.id, "B");
        assert_eq!(concl.fix, "fb");
        assert_eq!(w.path.len(), 3);
        assert_eq!(w.path[1].answer, "dpo");
        assert!(w.back());
        assert_eq!(w.node().id, "c1");
        w.answer("one", "", Source::User).unwrap();
        assert_eq!(w.conclusion().unwrap().id, "A");
    }

    #[test]
    fn unknown_answer_is_an_error_naming_the_choices() {
        let c = cat();
        let mut w = Walk::start(&c, "t").unwrap();
        let e = w.answer("sideways", "", Source::User).unwrap_err();
        assert!(e.to_string().contains("high | pass"), "{e}");
        assert!(!w.back());
        assert!(Walk::start(&c, "nope").is_err());
    }
}
