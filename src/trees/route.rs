//! Where a symptom lives in the trees, derived from the trees themselves (no second list):
//! the nodes that ask about or conclude an entry, the route from a tree's root down to a
//! node (each branch taken), and the start of a "walk from here" — the nearest question at
//! or above the node the user named.

use std::collections::{HashMap, VecDeque};

use crate::catalog::{Catalog, NodeKind, TreeDef};

/// A node of a tree: (tree id, node id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRef {
    pub tree: String,
    pub node: String,
}

impl NodeRef {
    /// `tree/node`.
    pub fn path(&self) -> String {
        format!("{}/{}", self.tree, self.node)
    }
}

/// Every node, in catalog tree order, whose `entry` is `entry` (the questions that ask about
/// it and the leaves that conclude it).
pub fn nodes_for_entry(cat: &Catalog, entry: &str) -> Vec<NodeRef> {
    cat.trees
        .iter()
        .flat_map(|t| {
            t.nodes
                .iter()
                .filter(|n| n.entry.as_deref() == Some(entry))
                .map(|n| NodeRef {
                    tree: t.id.clone(),
                    node: n.id.clone(),
                })
        })
        .collect()
}

/// The shortest route from the root to `target`: each node on the way with the branch label
/// that leads on (the target itself is not in it). None when the node is unreachable.
pub fn route(tree: &TreeDef, target: &str) -> Option<Vec<(String, String)>> {
    let by_id: HashMap<&str, _> = tree.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    by_id.get(target)?;
    // BFS, remembering (parent, label) per node.
    let mut prev: HashMap<&str, (&str, String)> = HashMap::new();
    let mut q = VecDeque::from([tree.root.as_str()]);
    let mut seen = std::collections::HashSet::from([tree.root.as_str()]);
    while let Some(id) = q.pop_front() {
        if id == target {
            break;
        }
        let Some(n) = by_id.get(id) else { continue };
        let edges = n
            .branches
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str()))
            .chain(n.options.iter().map(|o| (o.label.clone(), o.next.as_str())));
        for (label, next) in edges {
            if seen.insert(next) {
                prev.insert(next, (id, label));
                q.push_back(next);
            }
        }
    }
    let mut out = Vec::new();
    let mut at = target;
    while at != tree.root {
        let (p, label) = prev.get(at)?;
        out.push((p.to_string(), label.clone()));
        at = p;
    }
    out.reverse();
    Some(out)
}

/// Where "walk from here" starts for `id` — an entry id, `tree/node`, or a bare node id:
/// the node itself when it asks a question, else (a leaf) the question above it. For an
/// entry, the shallowest question about it, else the question above its first leaf.
pub fn start_for(cat: &Catalog, id: &str) -> Option<NodeRef> {
    let id = id.trim();
    let depth = |r: &NodeRef| {
        cat.tree(&r.tree)
            .and_then(|t| route(t, &r.node))
            .map_or(usize::MAX, |v| v.len())
    };
    let candidates: Vec<NodeRef> = if let Some((t, n)) = id.split_once('/') {
        vec![NodeRef {
            tree: t.into(),
            node: n.into(),
        }]
    } else if cat.entry(id).is_some() {
        nodes_for_entry(cat, id)
    } else {
        cat.trees
            .iter()
            .filter(|t| t.nodes.iter().any(|n| n.id == id))
            .map(|t| NodeRef {
                tree: t.id.clone(),
                node: id.into(),
            })
            .collect()
    };
    let is_question = |r: &NodeRef| {
        cat.tree(&r.tree)
            .and_then(|t| t.nodes.iter().find(|n| n.id == r.node))
            .is_some_and(|n| n.kind != NodeKind::Leaf)
    };
    let reachable: Vec<NodeRef> = candidates
        .into_iter()
        .filter(|r| depth(r) != usize::MAX)
        .collect();
    if let Some(q) = reachable
        .iter()
        .filter(|r| is_question(r))
        .min_by_key(|r| depth(r))
    {
        return Some(q.clone());
    }
    let leaf = reachable.first()?;
    let tree = cat.tree(&leaf.tree)?;
    let parent = route(tree, &leaf.node)?.pop();
    Some(NodeRef {
        tree: leaf.tree.clone(),
        // A leaf that is the root (a one-node tree) starts at itself.
        node: parent.map_or_else(|| leaf.node.clone(), |(p, _)| p),
    })
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
  - {id: C, domain: llm, title: tc, symptom: s, cause: c, fix: fc}
tree:
  id: t
  title: T
  root: n1
  nodes:
    - {id: n1, kind: numeric, probe: p, entry: A, branches: {pass: n2, high: la}}
    - {id: n2, kind: fact, fact: phase, branches: {sft: la, default: c1}}
    - {id: c1, kind: choice, question: what?, options: [{label: one, next: la}, {label: two, next: lb}]}
    - {id: la, kind: leaf, entry: A}
    - {id: lb, kind: leaf, entry: B}
    - {id: lc, kind: leaf, entry: C}
"#;
        parse_file(Path::new("t.yaml"), text, &mut raw).unwrap();
        Catalog::from_raw(raw)
    }

    #[test]
    fn route_names_each_branch_taken() {
        let c = cat();
        let t = c.tree("t").unwrap();
        assert_eq!(
            route(t, "lb").unwrap(),
            vec![
                ("n1".to_string(), "pass".to_string()),
                ("n2".into(), "default".into()),
                ("c1".into(), "two".into())
            ]
        );
        assert_eq!(route(t, "n1").unwrap(), vec![]);
        assert!(route(t, "lc").is_none(), "unreachable");
        assert!(route(t, "zz").is_none());
    }

    #[test]
    fn start_is_the_question_at_or_above_the_symptom() {
        let c = cat();
        let at = |id: &str| start_for(&c, id).map(|r| r.path());
        // An entry asked about by a question starts there.
        assert_eq!(at("A").as_deref(), Some("t/n1"));
        // An entry only concluded by a leaf starts at the question above it.
        assert_eq!(at("B").as_deref(), Some("t/c1"));
        assert_eq!(at("lb").as_deref(), Some("t/c1"));
        assert_eq!(at("t/n2").as_deref(), Some("t/n2"));
        // Unreachable or unknown: nowhere.
        assert_eq!(at("C"), None);
        assert_eq!(at("nope"), None);
        assert_eq!(nodes_for_entry(&c, "A").len(), 2);
    }
}
