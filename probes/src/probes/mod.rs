//! The probe registry: every implemented probe, by family.

pub mod batch;
pub mod checkpoint;
pub mod metric;
pub mod util;

use crate::probe::ProbeSpec;
use std::sync::OnceLock;

/// Every implemented probe.
pub fn all() -> &'static [ProbeSpec] {
    static ALL: OnceLock<Vec<ProbeSpec>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = Vec::new();
        for fam in [metric::SPECS, checkpoint::SPECS, batch::SPECS] {
            for s in fam {
                v.push(ProbeSpec {
                    id: s.id,
                    question: s.question,
                    entries: s.entries,
                    inputs: s.inputs,
                    params: s.params,
                    outcomes: s.outcomes,
                    run: s.run,
                });
            }
        }
        v
    })
}
