//! References inside the catalog's prose: `see O24`, `(see L2, F25)`, `tree node
//! stability/leaf_dynamics`, and what must never appear — a path to a document the product
//! does not ship (`docs/…`, `….md`) or a "phase" of the seed material (`Phase-19`). Lint
//! turns each unresolved one into an error naming the text it sits in.

use std::collections::HashSet;

use super::Catalog;

/// One reference in a text that does not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dangling {
    /// The offending words as written.
    pub what: String,
    pub why: &'static str,
}

/// Prefixes of catalog entry ids (DESIGN.md §4.1) — a token `O24` after "see" is a reference.
fn looks_like_entry_id(tok: &str) -> bool {
    let p = tok.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let rest = &tok[p.len()..];
    !p.is_empty()
        && p.len() <= 2
        && p.chars().all(|c| c.is_ascii_uppercase())
        && rest.starts_with(|c: char| c.is_ascii_digit())
        && !rest.ends_with('.')
}

fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';' | '"'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Every unresolved reference in `text`: entry ids after "see", `tree/node` paths naming a
/// tree of the catalog, and any document path or seed "phase" mention.
pub fn dangling(cat: &Catalog, text: &str) -> Vec<Dangling> {
    let entries: HashSet<&str> = cat.entries.iter().map(|e| e.id.as_str()).collect();
    let mut out = Vec::new();
    let ws = words(text);
    let mut after_see = false;
    for w in &ws {
        let bare = w.trim_end_matches(['.', '!', '?', '\'', ':']);
        let lower = bare.to_ascii_lowercase();
        // A document the product does not contain (a web address is fine: refs carry them).
        if !lower.contains("://")
            && (lower.contains("docs/") || lower.ends_with(".md") || lower.contains(".md#"))
        {
            out.push(Dangling {
                what: bare.to_string(),
                why: "points at a document the product does not contain",
            });
        }
        // A "phase" of the seed material (Phase-19, phase-18-…): not something we ship.
        if let Some(rest) = lower.strip_prefix("phase-") {
            if rest.starts_with(|c: char| c.is_ascii_digit()) {
                out.push(Dangling {
                    what: bare.to_string(),
                    why: "names a phase of the seed material, not an entry or tree node",
                });
            }
        }
        // tree/node
        if let Some((t, n)) = bare.split_once('/') {
            if let Some(tree) = cat.tree(t) {
                let node = n.trim_end_matches(['.', ')']);
                if !node.is_empty()
                    && node.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !tree.nodes.iter().any(|x| x.id == node)
                {
                    out.push(Dangling {
                        what: bare.to_string(),
                        why: "names a tree node that does not exist",
                    });
                }
            }
        }
        if lower == "see" {
            after_see = true;
            continue;
        }
        if after_see {
            if looks_like_entry_id(bare) {
                if !entries.contains(bare) {
                    out.push(Dangling {
                        what: format!("see {bare}"),
                        why: "names an entry that does not exist",
                    });
                }
                continue;
            }
            if matches!(lower.as_str(), "and" | "or" | "also" | "entry" | "entries") {
                continue;
            }
            after_see = false;
        }
    }
    out
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
  - {id: O24, domain: convergence, title: t, symptom: s, cause: c, fix: f}
  - {id: S1.1, domain: convergence, title: t, symptom: s, cause: c, fix: f}
tree:
  id: stability
  title: T
  root: a
  nodes:
    - {id: a, kind: leaf, entry: O24}
"#;
        parse_file(Path::new("t.yaml"), text, &mut raw).unwrap();
        Catalog::from_raw(raw)
    }

    #[test]
    fn resolved_references_pass() {
        let c = cat();
        for ok in [
            "see O24 for the loss scale",
            "(see S1.1, O24)",
            "tree node stability/a.",
            "train/loss and an A100 with fp16; see https://example.org/docs/x.md",
            "ln V ± 0.5 (S1.1); phase = sft",
        ] {
            assert!(dangling(&c, ok).is_empty(), "{ok}: {:?}", dangling(&c, ok));
        }
    }

    #[test]
    fn unresolved_references_are_named() {
        let c = cat();
        let d = dangling(&c, "see O99 and S1.1");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].what, "see O99");
        let d = dangling(
            &c,
            "go to the Phase-19 check (docs/phase-19-training-dynamics/stability-check.md section 2)",
        );
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].what.starts_with("Phase-19"));
        assert!(d[1].what.starts_with("docs/"));
        assert_eq!(dangling(&c, "see stability/nowhere").len(), 1);
    }
}
