//! The probe registry: every implemented probe, one folder per family of questions
//! (`metric/`, `checkpoint/`, `optimizer/`, `batch/`, `config/`, `log/`, `smoke.rs`); a probe's file
//! is named for its id (or for the tight group it belongs to) and holds its spec.

/// A threshold from the playbook, or an early `skip` verdict naming the missing key:
/// `p!(ctx, "key")` (entry left for the caller to fill) or `p!(ctx, entry, "key")`.
macro_rules! p {
    ($ctx:expr, $k:expr) => {
        p!($ctx, "", $k)
    };
    ($ctx:expr, $entry:expr, $k:expr) => {
        match $ctx.params.f64($k) {
            Ok(v) => v,
            Err(e) => {
                return vec![$crate::probe::Verdict::skip(
                    $entry,
                    format!("playbook: {e}"),
                )]
            }
        }
    };
}

pub mod batch;
pub mod checkpoint;
pub mod config;
pub mod log;
pub mod metric;
pub mod optimizer;
pub mod smoke;
pub mod stats;
pub mod util;

use crate::probe::ProbeSpec;
use std::sync::OnceLock;

/// Every implemented probe, in registry order.
pub fn all() -> &'static [ProbeSpec] {
    static ALL: OnceLock<Vec<ProbeSpec>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = Vec::new();
        for fam in [
            metric::SPECS,
            checkpoint::SPECS,
            optimizer::SPECS,
            batch::SPECS,
            config::SPECS,
            log::SPECS,
            smoke::SPECS,
        ] {
            for s in fam {
                v.push(ProbeSpec {
                    id: s.id,
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
