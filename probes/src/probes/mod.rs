//! The probe registry.

use crate::probe::ProbeSpec;

/// Every implemented probe.
pub fn all() -> &'static [ProbeSpec] {
    &[]
}
