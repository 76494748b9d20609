//! Replays every input kept from fuzzing (tests/fuzz_regressions/<target>/*) through the same
//! entry points the cargo-fuzz targets use (mltriage_probes::fuzzing, catalog::load::fuzz_yaml):
//! each must finish without a panic.

use std::path::PathBuf;

fn replay(target: &str, f: fn(&[u8])) -> usize {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fuzz_regressions"
    ))
    .join(target);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let data = std::fs::read(e.path()).unwrap();
        f(&data);
        n += 1;
    }
    n
}

#[test]
fn fuzz_regression_inputs_do_not_panic() {
    use mltriage_probes::fuzzing as fz;
    let mut total = 0;
    total += replay("safetensors", fz::safetensors);
    total += replay("safetensors_index", fz::safetensors_index);
    total += replay("pickle", fz::pickle);
    total += replay("torch_zip", fz::torch_zip);
    total += replay("tfevents", fz::tfevents);
    total += replay("metrics_text", fz::metrics_text);
    total += replay("playbook_yaml", mltriage::catalog::load::fuzz_yaml);
    println!("replayed {total} fuzz inputs");
}

#[test]
fn bad_input_corpus_through_the_fuzz_entry_points() {
    // The hand-made corpus doubles as fuzz seeds; run each file through its reader's entry point.
    use mltriage_probes::fuzzing as fz;
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bad_inputs"));
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let data = std::fs::read(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.ends_with(".safetensors") {
                fz::safetensors(&data);
            } else if name.ends_with(".index.json") {
                fz::safetensors_index(&data);
            } else if name.ends_with(".pt") {
                fz::torch_zip(&data);
                fz::pickle(&data);
            } else if name.contains("tfevents") {
                fz::tfevents(&data);
            } else {
                let mut v = vec![0u8];
                v.extend_from_slice(&data);
                fz::metrics_text(&v);
            }
        }
    }
}
