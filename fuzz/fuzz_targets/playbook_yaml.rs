#![no_main]
//! Fuzz target: see mltriage::catalog::load::fuzz_yaml.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mltriage::catalog::load::fuzz_yaml(data);
});
