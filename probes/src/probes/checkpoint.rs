//! Probes over checkpoint artifacts (being written).

use crate::probe::ProbeSpec;

pub const SPECS: &[ProbeSpec] = &[];
