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
    total += replay("field_logs", fz::field_logs);
    total += replay("dcp", fz::dcp);
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
            for sel in 0u8..3 {
                let mut v = vec![sel];
                v.extend_from_slice(&data);
                fz::field_logs(&v);
            }
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

#[test]
fn field_log_readers_survive_mutated_real_files() {
    // A deterministic mutation pass (byte flips, truncations, splices) over real field files,
    // through the same entry point as the `field_logs` cargo-fuzz target.
    use mltriage_probes::fuzzing as fz;
    let field = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/field"));
    let seeds: Vec<(u8, Vec<u8>)> = [
        (0u8, "nanogpt_healthy/train.log"),
        (0, "dcp_fsdp_healthy/train.log"),
        (0, "deepspeed_zero2_healthy/train.log"),
    ]
    .iter()
    .filter_map(|(sel, p)| Some((*sel, std::fs::read(field.join(p)).ok()?)))
    .chain(
        glob_wandb(&field)
            .into_iter()
            .map(|p| (1u8, std::fs::read(p).unwrap())),
    )
    .collect();
    assert!(seeds.len() >= 4, "field seeds missing");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for (sel, seed) in &seeds {
        for _ in 0..150 {
            let mut d = seed.clone();
            match next() % 3 {
                0 => {
                    for _ in 0..1 + next() % 8 {
                        let i = (next() as usize) % d.len().max(1);
                        if let Some(b) = d.get_mut(i) {
                            *b ^= (next() & 0xff) as u8;
                        }
                    }
                }
                1 => d.truncate((next() as usize) % (d.len() + 1)),
                _ => {
                    let i = (next() as usize) % (d.len() + 1);
                    let j = (next() as usize) % (d.len() + 1);
                    let (a, b) = (i.min(j), i.max(j));
                    let chunk = d[a..b].to_vec();
                    d.splice(a..a, chunk);
                }
            }
            let mut v = vec![*sel];
            v.extend_from_slice(&d);
            fz::field_logs(&v);
        }
    }
}

fn glob_wandb(field: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![field.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "wandb") {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn dcp_reader_survives_mutated_real_checkpoints() {
    // Byte flips, truncations and splices of a real torch.distributed.checkpoint (.metadata and
    // its first shard), through the `dcp` cargo-fuzz entry point.
    use mltriage_probes::fuzzing as fz;
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/field/dcp_fsdp_healthy/step_150"
    ));
    let meta = std::fs::read(dir.join(".metadata")).unwrap();
    let shard = std::fs::read(dir.join("__0_0.distcp")).unwrap();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..120 {
        let (mut m, mut s) = (meta.clone(), shard.clone());
        let target = if round % 2 == 0 { &mut m } else { &mut s };
        match next() % 3 {
            0 => {
                for _ in 0..1 + next() % 8 {
                    let i = (next() as usize) % target.len().max(1);
                    if let Some(b) = target.get_mut(i) {
                        *b ^= (next() & 0xff) as u8;
                    }
                }
            }
            1 => target.truncate((next() as usize) % (target.len() + 1)),
            _ => {
                let i = (next() as usize) % (target.len() + 1);
                let j = (next() as usize) % (target.len() + 1);
                let (a, b) = (i.min(j), i.max(j));
                let chunk = target[a..b].to_vec();
                target.splice(a..a, chunk);
            }
        }
        let mut v = (m.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(&m);
        v.extend_from_slice(&s);
        fz::dcp(&v);
    }
}
