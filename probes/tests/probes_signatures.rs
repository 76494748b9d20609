//! Probes written from catalog signatures (issue 20): each on a synthetic run that carries the
//! signature and on a healthy twin that must give neither warn nor fail.

use std::path::Path;

mod common;
use common::thresholds;

use mltriage_probes::device::Compute;
use mltriage_probes::facts::{facts_from_artifacts, Facts};
use mltriage_probes::probe::{run_probe, ProbeCtx, Status, Verdict};
use mltriage_probes::run::Run;

fn run_probe_on(id: &str, dir: &Path, user: &[&str]) -> Vec<Verdict> {
    let spec = mltriage_probes::probes::all()
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no probe {id}"));
    let run = Run::discover(dir).unwrap();
    let mut facts = facts_from_artifacts(&run);
    facts.merge(&Facts::from_args(user).unwrap());
    let params = thresholds(id);
    let compute = Compute::cpu();
    run_probe(
        spec,
        &ProbeCtx {
            run: &run,
            facts: &facts,
            params: &params,
            compute: &compute,
            baseline: None,
        },
    )
}

/// No warn or fail anywhere in the verdicts.
fn assert_quiet(v: &[Verdict], what: &str) {
    for x in v {
        assert!(
            matches!(x.status, Status::Pass | Status::Skip),
            "{what}: {x:#?}"
        );
    }
}

enum Vals {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

/// Writes a safetensors file by hand: 8-byte LE header length, JSON header, raw LE bytes.
fn write_st(path: &Path, tensors: &[(&str, Vec<usize>, Vals)]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut header = String::from("{");
    let mut data = Vec::new();
    for (i, (name, shape, vals)) in tensors.iter().enumerate() {
        let start = data.len();
        let dtype = match vals {
            Vals::F32(v) => {
                v.iter()
                    .for_each(|x| data.extend_from_slice(&x.to_le_bytes()));
                "F32"
            }
            Vals::I64(v) => {
                v.iter()
                    .for_each(|x| data.extend_from_slice(&x.to_le_bytes()));
                "I64"
            }
        };
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":{shape:?},\"data_offsets\":[{start},{}]}}",
            data.len()
        ));
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    std::fs::write(path, out).unwrap();
}

/// A small conv + BatchNorm model at `step`, with its BN counter and an obs-normaliser count.
fn bn_ckpt(root: &Path, step: u64, tracked: i64, obs_count: f32, seed: f32) {
    let w: Vec<f32> = (0..16)
        .map(|i| ((i as f32 + seed) * 0.37).sin() * 0.1)
        .collect();
    write_st(
        &root.join(format!("checkpoint-{step}/model.safetensors")),
        &[
            ("conv.weight", vec![4, 4], Vals::F32(w)),
            ("bn.weight", vec![4], Vals::F32(vec![1.0 + seed * 1e-3; 4])),
            ("bn.bias", vec![4], Vals::F32(vec![seed * 1e-3; 4])),
            ("bn.running_mean", vec![4], Vals::F32(vec![0.1 * seed; 4])),
            (
                "bn.running_var",
                vec![4],
                Vals::F32(vec![1.0 + 0.1 * seed; 4]),
            ),
            ("bn.num_batches_tracked", vec![], Vals::I64(vec![tracked])),
            ("obs_rms.count", vec![], Vals::F32(vec![obs_count])),
        ],
    );
}

#[test]
fn counter_reset_names_a_resume_that_rebuilt_state_and_not_a_continuous_run() {
    // Resumed at step 200 into a freshly built agent: counters restart.
    let bad = tempfile::tempdir().unwrap();
    bn_ckpt(bad.path(), 100, 100, 6400.0, 1.0);
    bn_ckpt(bad.path(), 200, 200, 12800.0, 2.0);
    bn_ckpt(bad.path(), 300, 100, 6400.0, 3.0);
    let v = run_probe_on("counter_reset", bad.path(), &[]);
    assert_eq!(v.len(), 1, "{v:#?}");
    assert_eq!(
        (v[0].entry.as_str(), v[0].status, v[0].outcome.as_str()),
        ("R4", Status::Fail, "reset")
    );
    assert!(v[0].measured.contains("num_batches_tracked"), "{v:#?}");
    assert_eq!(v[0].evidence[0].steps, Some((200, 300)));

    // The healthy twin: the same run resumed with its full state.
    let good = tempfile::tempdir().unwrap();
    bn_ckpt(good.path(), 100, 100, 6400.0, 1.0);
    bn_ckpt(good.path(), 200, 200, 12800.0, 2.0);
    bn_ckpt(good.path(), 300, 300, 19200.0, 3.0);
    let v = run_probe_on("counter_reset", good.path(), &[]);
    assert_quiet(&v, "continuous run");
    assert_eq!(v[0].status, Status::Pass);
}

#[test]
fn counter_reset_skips_without_counters_or_a_second_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    bn_ckpt(d.path(), 100, 100, 1.0, 1.0);
    let v = run_probe_on("counter_reset", d.path(), &[]);
    assert_eq!(v[0].status, Status::Skip);
    let d = tempfile::tempdir().unwrap();
    for step in [10, 20] {
        write_st(
            &d.path()
                .join(format!("checkpoint-{step}/model.safetensors")),
            &[("fc.weight", vec![2, 2], Vals::F32(vec![step as f32; 4]))],
        );
    }
    let v = run_probe_on("counter_reset", d.path(), &[]);
    assert_eq!(v[0].status, Status::Skip, "{v:#?}");
}
