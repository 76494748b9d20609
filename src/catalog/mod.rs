//! The catalog: the playbook (embedded, plus `--playbook DIR` overrides) validated into
//! entries, probe definitions and tree definitions, looked up by id.

pub mod coverage;
mod id_lines;
pub mod lint;
pub mod load;
pub mod model;
mod pack_write;
mod packed;
pub mod refs;
pub mod tree_def;
pub mod yaml_budget;

use std::collections::HashMap;
use std::path::Path;

pub use load::LoadError;
pub use model::{
    Artifact, Domain, Entry, Origin, ProbeDef, Reference, Signature, Threshold, Vocabulary,
};
pub use tree_def::{NodeDef, NodeKind, TreeDef};

/// The loaded catalog.
#[derive(Debug, Default)]
pub struct Catalog {
    pub entries: Vec<Entry>,
    pub probes: Vec<ProbeDef>,
    pub trees: Vec<TreeDef>,
    /// Synonym groups and domain cues used by search.
    pub vocab: Vocabulary,
    entry_idx: HashMap<String, usize>,
    probe_idx: HashMap<String, usize>,
    /// Files overridden or added by the user (for `--playbook`).
    pub user_files: Vec<std::path::PathBuf>,
}

/// Duplicate ids within one source are an error naming both places.
fn check_duplicates<'a>(
    items: impl Iterator<Item = (&'a str, &'a Origin)>,
    what: &str,
) -> Result<(), LoadError> {
    let mut seen: HashMap<&str, &Origin> = HashMap::new();
    for (id, origin) in items {
        if let Some(first) = seen.insert(id, origin) {
            return Err(LoadError {
                origin: origin.clone(),
                message: format!("duplicate {what} id {id:?} (first defined at {first})"),
            });
        }
    }
    Ok(())
}

impl Catalog {
    /// The embedded playbook only.
    pub fn embedded() -> Result<Catalog, LoadError> {
        Self::load(None)
    }

    /// The embedded playbook plus a user directory that adds entries or overrides by id.
    /// With a user directory, the merged catalog must pass `lint` without errors (a dangling
    /// reference, a cyclic tree, a threshold out of range): load and lint agree.
    pub fn load(user_dir: Option<&Path>) -> Result<Catalog, LoadError> {
        let cat = Self::load_merged(user_dir)?;
        if user_dir.is_some() {
            let problems = lint::lint(
                &cat,
                &lint::LintOptions {
                    implemented: mltriage_probes::probes::all(),
                    complete: false,
                },
            );
            if let Some(p) = problems
                .into_iter()
                .find(|p| p.severity == lint::Severity::Error)
            {
                return Err(LoadError {
                    origin: p.origin,
                    message: p.message,
                });
            }
        }
        Ok(cat)
    }

    /// [`Catalog::load`] without the lint gate (what `lint DIR` inspects).
    pub fn load_merged(user_dir: Option<&Path>) -> Result<Catalog, LoadError> {
        let base = load::embedded()?;
        check_duplicates(
            base.entries.iter().map(|e| (e.id.as_str(), &e.origin)),
            "entry",
        )?;
        check_duplicates(
            base.probes.iter().map(|p| (p.id.as_str(), &p.origin)),
            "probe",
        )?;
        check_duplicates(
            base.trees.iter().map(|t| (t.id.as_str(), &t.origin)),
            "tree",
        )?;
        let mut cat = Catalog {
            entries: base.entries,
            probes: base.probes,
            trees: base.trees,
            vocab: base.vocab,
            ..Default::default()
        };
        if let Some(dir) = user_dir {
            let user = load::from_dir(dir)?;
            check_duplicates(
                user.entries.iter().map(|e| (e.id.as_str(), &e.origin)),
                "entry",
            )?;
            check_duplicates(
                user.probes.iter().map(|p| (p.id.as_str(), &p.origin)),
                "probe",
            )?;
            check_duplicates(
                user.trees.iter().map(|t| (t.id.as_str(), &t.origin)),
                "tree",
            )?;
            cat.user_files = user.files.clone();
            cat.overlay(user);
        }
        cat.reindex();
        Ok(cat)
    }

    /// Build a catalog from raw definitions only (for linting a directory on its own).
    pub fn from_raw(raw: load::RawPlaybook) -> Catalog {
        let mut cat = Catalog {
            entries: raw.entries,
            probes: raw.probes,
            trees: raw.trees,
            vocab: raw.vocab,
            ..Default::default()
        };
        cat.reindex();
        cat
    }

    fn overlay(&mut self, user: load::RawPlaybook) {
        self.vocab.extend(user.vocab);
        for e in user.entries {
            match self.entries.iter_mut().find(|x| x.id == e.id) {
                Some(slot) => *slot = e,
                None => self.entries.push(e),
            }
        }
        for mut p in user.probes {
            match self.probes.iter_mut().find(|x| x.id == p.id) {
                Some(slot) => {
                    // An override that changes thresholds keeps the probe's applicability
                    // unless it states its own.
                    if p.applies.is_none() {
                        p.applies = slot.applies.take();
                    }
                    *slot = p
                }
                None => self.probes.push(p),
            }
        }
        for t in user.trees {
            match self.trees.iter_mut().find(|x| x.id == t.id) {
                Some(slot) => *slot = t,
                None => self.trees.push(t),
            }
        }
    }

    fn reindex(&mut self) {
        // The shipped trees in the order a user should reach for them (REQUIRED_TREES lists
        // them stability first: cheapest checks, most likely causes); a user's own trees after.
        let order = lint::REQUIRED_TREES;
        self.trees
            .sort_by_key(|t| order.iter().position(|o| *o == t.id).unwrap_or(order.len()));
        self.entry_idx = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.clone(), i))
            .collect();
        self.probe_idx = self
            .probes
            .iter()
            .enumerate()
            .map(|(i, p)| (p.id.clone(), i))
            .collect();
    }

    /// Entry by id (exact, then case-insensitive).
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        if let Some(&i) = self.entry_idx.get(id) {
            return self.entries.get(i);
        }
        self.entries.iter().find(|e| e.id.eq_ignore_ascii_case(id))
    }

    pub fn probe(&self, id: &str) -> Option<&ProbeDef> {
        self.probe_idx.get(id).and_then(|&i| self.probes.get(i))
    }

    pub fn tree(&self, id: &str) -> Option<&TreeDef> {
        self.trees.iter().find(|t| t.id.eq_ignore_ascii_case(id))
    }

    /// Entries of one domain, in catalog order.
    pub fn by_domain(&self, d: Domain) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.domain == d)
    }

    /// Probe definitions that answer an entry.
    pub fn probes_for_entry<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a ProbeDef> + 'a {
        self.probes
            .iter()
            .filter(move |p| p.entries.iter().any(|e| e == id))
    }
}
