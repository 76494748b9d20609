#![no_main]
//! Fuzz target: see mltriage_probes::fuzzing::dcp.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mltriage_probes::fuzzing::dcp(data);
});
