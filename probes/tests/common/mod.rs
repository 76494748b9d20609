//! The probe-test harness: every probe test reads the real thresholds from
//! `playbook/probes.yaml` through the reader the binary's catalog uses
//! ([`mltriage_probes::playbook`]), never a hand-copied or hand-parsed copy.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use mltriage_probes::probe::Params;

/// The playbook's thresholds for probe `id` (panics when the playbook does not define it).
pub fn thresholds(id: &str) -> Params {
    static ALL: OnceLock<BTreeMap<String, Params>> = OnceLock::new();
    ALL.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../playbook/probes.yaml");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        mltriage_probes::playbook::thresholds(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    })
    .get(id)
    .cloned()
    .unwrap_or_else(|| panic!("{id} not in probes.yaml"))
}
