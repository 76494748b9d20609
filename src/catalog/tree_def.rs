//! Symptom trees as the playbook declares them (declarative, no code): the trees engine
//! turns these into a walkable graph.

use std::collections::BTreeMap;

use super::model::Origin;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// A probe answers: its outcome label picks the branch.
    Numeric,
    /// A fact answers (`--fact`, artifacts, or the user): its value picks the branch.
    Fact,
    /// The user picks a symptom.
    Choice,
    /// A conclusion: an entry id.
    Leaf,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoiceDef {
    pub label: String,
    pub next: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDef {
    pub id: String,
    pub kind: NodeKind,
    #[serde(default)]
    pub question: Option<String>,
    /// The catalog entry this node asks about (numeric/fact) or concludes (leaf).
    #[serde(default)]
    pub entry: Option<String>,
    #[serde(default)]
    pub probe: Option<String>,
    #[serde(default)]
    pub fact: Option<String>,
    /// outcome label or fact value -> next node id (`default` catches the rest).
    #[serde(default)]
    pub branches: BTreeMap<String, String>,
    #[serde(default)]
    pub options: Vec<ChoiceDef>,
    /// Extra words for a leaf (e.g. the hand-off note).
    #[serde(default)]
    pub note: Option<String>,
}

impl NodeDef {
    /// Every node this one can lead to: branch targets, then choice targets.
    pub fn targets(&self) -> Vec<&str> {
        self.branches
            .values()
            .map(|s| s.as_str())
            .chain(self.options.iter().map(|c| c.next.as_str()))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TreeDef {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub description: Option<String>,
    pub root: String,
    pub nodes: Vec<NodeDef>,
    #[serde(skip)]
    pub origin: Origin,
}

impl TreeDef {
    /// The nodes reachable from node `start` (itself included), each once with its distance
    /// in branches, breadth first. Targets naming no node are skipped.
    pub fn below(&self, start: &str) -> Vec<(&NodeDef, usize)> {
        let by_id: std::collections::HashMap<&str, &NodeDef> =
            self.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        let mut seen = std::collections::HashSet::new();
        let mut queue = std::collections::VecDeque::from([(start, 0usize)]);
        let mut out = Vec::new();
        while let Some((id, d)) = queue.pop_front() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(node) = by_id.get(id) {
                out.push((*node, d));
                queue.extend(node.targets().into_iter().map(|t| (t, d + 1)));
            }
        }
        out
    }
}
