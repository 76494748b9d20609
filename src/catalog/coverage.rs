//! Signature coverage: for every entry, the probes that can name it from the run's artifacts
//! and what those probes read — or why no probe can (a `none` signature, or no probe yet).

use std::collections::BTreeSet;

use mltriage_probes::probe::ProbeSpec;

use super::model::{Artifact, Entry};
use super::Catalog;

/// One probe that can name an entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CoveringProbe {
    pub id: String,
    pub implemented: bool,
    /// What the probe reads (from its spec), e.g. `metrics:loss`, `fact:vocab_size`.
    pub inputs: Vec<String>,
}

/// Where an entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverageState {
    /// An artifact signature and at least one implemented probe that names the entry.
    Probed,
    /// An artifact signature, but no implemented probe looks for it yet.
    NoProbe,
    /// The signature is `none`: no artifact shows this cause.
    #[serde(rename = "none")]
    NoSignal,
    /// No signature written (lint reports it).
    Unsigned,
}

impl CoverageState {
    pub fn as_str(self) -> &'static str {
        match self {
            CoverageState::Probed => "probed",
            CoverageState::NoProbe => "no_probe",
            CoverageState::NoSignal => "none",
            CoverageState::Unsigned => "unsigned",
        }
    }
}

/// One row of the coverage table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CoverageRow {
    pub id: String,
    pub title: String,
    pub domain: String,
    pub state: CoverageState,
    pub artifacts: Vec<Artifact>,
    /// What the artifacts show (artifact signatures) or why none does (`none`).
    pub shows: String,
    pub probes: Vec<CoveringProbe>,
    /// Artifact kinds the covering probes read (the union of their inputs).
    pub reads: Vec<Artifact>,
}

/// The whole table plus counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Coverage {
    pub rows: Vec<CoverageRow>,
    pub entries: usize,
    pub probed: usize,
    pub no_probe: usize,
    pub none: usize,
    pub unsigned: usize,
}

/// The coverage of `cat` by the probes implemented in code.
pub fn coverage(cat: &Catalog, implemented: &[ProbeSpec]) -> Coverage {
    let rows: Vec<CoverageRow> = cat.entries.iter().map(|e| row(e, implemented)).collect();
    let count = |s: CoverageState| rows.iter().filter(|r| r.state == s).count();
    Coverage {
        entries: rows.len(),
        probed: count(CoverageState::Probed),
        no_probe: count(CoverageState::NoProbe),
        none: count(CoverageState::NoSignal),
        unsigned: count(CoverageState::Unsigned),
        rows,
    }
}

fn row(e: &Entry, implemented: &[ProbeSpec]) -> CoverageRow {
    let mut out = CoverageRow {
        id: e.id.clone(),
        title: e.title.clone(),
        domain: e.domain.as_str().to_string(),
        state: CoverageState::Unsigned,
        artifacts: Vec::new(),
        shows: String::new(),
        probes: Vec::new(),
        reads: Vec::new(),
    };
    let Some(sig) = &e.signature else {
        return out;
    };
    if let Some(reason) = &sig.none {
        out.state = CoverageState::NoSignal;
        out.shows = reason.clone();
        return out;
    }
    out.artifacts = sig.artifacts.clone();
    out.shows = sig.shows.clone().unwrap_or_default();
    let mut reads = BTreeSet::new();
    for pid in &sig.probes {
        let spec = implemented.iter().find(|s| s.id == pid);
        let inputs: Vec<String> = spec
            .map(|s| s.inputs.iter().map(|i| i.to_string()).collect())
            .unwrap_or_default();
        reads.extend(inputs.iter().filter_map(|i| Artifact::of_input(i)));
        out.probes.push(CoveringProbe {
            id: pid.clone(),
            implemented: spec.is_some(),
            inputs,
        });
    }
    out.reads = reads.into_iter().collect();
    out.state = if out.probes.iter().any(|p| p.implemented) {
        CoverageState::Probed
    } else {
        CoverageState::NoProbe
    };
    out
}

/// The table as Markdown (the README's copy is generated from this).
pub fn markdown(cov: &Coverage) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{} entries: {} named by a probe, {} with an artifact signature but no probe yet, {} that no artifact shows.\n\n",
        cov.entries, cov.probed, cov.no_probe, cov.none
    ));
    s.push_str("| entry | artifacts | probes | signature (or why none) |\n|---|---|---|---|\n");
    for r in &cov.rows {
        let arts = r
            .artifacts
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let probes = match r.state {
            CoverageState::Probed | CoverageState::NoProbe if !r.probes.is_empty() => r
                .probes
                .iter()
                .map(|p| {
                    if p.implemented {
                        format!("`{}`", p.id)
                    } else {
                        format!("`{}` (not implemented)", p.id)
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
            CoverageState::NoProbe => "— (no probe yet)".into(),
            CoverageState::NoSignal => "— (none)".into(),
            _ => "— (unsigned)".into(),
        };
        let shows = r.shows.replace('|', "\\|").replace('\n', " ");
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            r.id,
            if arts.is_empty() { "—".into() } else { arts },
            probes,
            shows
        ));
    }
    s
}
