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
            profile: &mltriage_probes::profile::Profile::of(&run, &facts),
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

/// An SFT batch of 4 rows (prompt 2 tokens masked, completion 3 tokens, then padding with 0),
/// the completion ending in EOS 2 or not, and that EOS scored or masked.
fn sft_batch(root: &Path, eos_in_text: bool, eos_scored: bool) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(
        root.join("config.json"),
        r#"{"model_type": "llama", "vocab_size": 100, "eos_token_id": 2, "pad_token_id": 0}"#,
    )
    .unwrap();
    let (mut ids, mut labels, mut attn) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..4i64 {
        let end = if eos_in_text { 2 } else { 40 + r };
        let row = [10 + r, 11, 20 + r, 21, 22, end, 0, 0];
        let lab = [
            -100,
            -100,
            20 + r,
            21,
            22,
            if eos_scored { end } else { -100 },
            -100,
            -100,
        ];
        ids.extend(row);
        labels.extend(lab);
        attn.extend([1, 1, 1, 1, 1, 1, 0, 0]);
    }
    write_st(
        &root.join("batch.safetensors"),
        &[
            ("input_ids", vec![4, 8], Vals::I64(ids)),
            ("attention_mask", vec![4, 8], Vals::I64(attn)),
            ("labels", vec![4, 8], Vals::I64(labels)),
        ],
    );
}

#[test]
fn eos_target_fails_completions_that_never_score_an_eos() {
    let d = tempfile::tempdir().unwrap();
    sft_batch(&d.path().join("good"), true, true);
    sft_batch(&d.path().join("masked"), true, false);
    sft_batch(&d.path().join("absent"), false, true);
    let v = run_probe_on("eos_target", &d.path().join("good"), &["phase=sft"]);
    assert_eq!(v[0].status, Status::Pass, "{v:#?}");
    for bad in ["masked", "absent"] {
        let v = run_probe_on("eos_target", &d.path().join(bad), &["phase=sft"]);
        assert_eq!(
            (v[0].entry.as_str(), v[0].status, v[0].outcome.as_str()),
            ("G1", Status::Fail, "no_eos"),
            "{bad}: {v:#?}"
        );
    }
    // A DPO run's batch is not judged by the SFT rule.
    let v = run_probe_on("eos_target", &d.path().join("absent"), &["phase=dpo"]);
    assert_eq!(v[0].status, Status::Skip);
}

#[test]
fn batch_schema_fails_a_batch_built_for_another_trainer() {
    let d = tempfile::tempdir().unwrap();
    sft_batch(d.path(), true, true);
    let v = run_probe_on("batch_schema", d.path(), &["phase=dpo"]);
    assert_eq!(
        (v[0].entry.as_str(), v[0].status, v[0].outcome.as_str()),
        ("L8", Status::Fail, "wrong_schema"),
        "{v:#?}"
    );
    assert_quiet(
        &run_probe_on("batch_schema", d.path(), &["phase=sft"]),
        "sft twin",
    );
    assert_eq!(
        run_probe_on("batch_schema", d.path(), &[])[0].status,
        Status::Skip
    );
    // A DPO batch for a DPO run.
    let dpo = d.path().join("dpo");
    let ids = |o: i64| Vals::I64((0..8).map(|i| i + o).collect());
    write_st(
        &dpo.join("batch.safetensors"),
        &[
            ("prompt_input_ids", vec![2, 4], ids(1)),
            ("chosen_input_ids", vec![2, 4], ids(10)),
            ("rejected_input_ids", vec![2, 4], ids(20)),
        ],
    );
    let v = run_probe_on("batch_schema", &dpo, &["phase=dpo"]);
    assert_eq!(v[0].status, Status::Pass, "{v:#?}");
    let v = run_probe_on("batch_schema", &dpo, &["phase=sft"]);
    assert_eq!(v[0].status, Status::Fail, "{v:#?}");
}

#[test]
fn image_presence_fails_images_fed_without_placeholders() {
    let d = tempfile::tempdir().unwrap();
    for (name, with_tokens) in [("good", true), ("bad", false)] {
        let root = d.path().join(name);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join("config.json"),
            r#"{"model_type": "llava", "image_token_id": 99, "vision_config": {}, "text_config": {"vocab_size": 100}}"#,
        )
        .unwrap();
        let tok = if with_tokens { 99 } else { 5 };
        write_st(
            &root.join("batch.safetensors"),
            &[
                (
                    "input_ids",
                    vec![2, 6],
                    Vals::I64(vec![1, tok, tok, 7, 8, 2, 1, tok, tok, 9, 8, 2]),
                ),
                ("pixel_values", vec![2, 3, 2, 2], Vals::F32(vec![0.1; 24])),
            ],
        );
    }
    assert_quiet(
        &run_probe_on("image_presence", &d.path().join("good"), &[]),
        "good",
    );
    let v = run_probe_on("image_presence", &d.path().join("bad"), &[]);
    assert_eq!(
        (v[0].entry.as_str(), v[0].status, v[0].outcome.as_str()),
        ("X5", Status::Fail, "text_only"),
        "{v:#?}"
    );
}

#[test]
fn bn_drift_names_evaluation_in_train_mode_when_only_running_stats_moved() {
    let d = tempfile::tempdir().unwrap();
    let ckpt = |dir: &str, folder: &str, w_seed: f32, stat: f32| {
        let w: Vec<f32> = (0..16)
            .map(|i| ((i as f32 + w_seed) * 0.37).sin() * 0.1)
            .collect();
        write_st(
            &d.path().join(dir).join(folder).join("model.safetensors"),
            &[
                ("conv.weight", vec![4, 4], Vals::F32(w)),
                (
                    "bn.weight",
                    vec![4],
                    Vals::F32(vec![1.0 + w_seed * 1e-3; 4]),
                ),
                ("bn.bias", vec![4], Vals::F32(vec![w_seed * 1e-3; 4])),
                ("bn.running_mean", vec![4], Vals::F32(vec![0.1 * stat; 4])),
                (
                    "bn.running_var",
                    vec![4],
                    Vals::F32(vec![1.0 + 0.1 * stat; 4]),
                ),
                (
                    "bn.num_batches_tracked",
                    vec![],
                    Vals::I64(vec![10 * stat as i64]),
                ),
            ],
        );
    };
    // Evaluation between two saves at the same weights: only the running stats moved.
    ckpt("eval", "checkpoint-500", 1.0, 1.0);
    ckpt("eval", "checkpoint-500-validated", 1.0, 2.0);
    let v = run_probe_on("bn_drift", &d.path().join("eval"), &[]);
    assert_eq!(
        (v[0].entry.as_str(), v[0].status, v[0].outcome.as_str()),
        ("O5", Status::Fail, "eval_mode"),
        "{v:#?}"
    );
    // Healthy twin: weights and statistics move together while training.
    ckpt("train", "checkpoint-500", 1.0, 1.0);
    ckpt("train", "checkpoint-600", 2.0, 2.0);
    assert_quiet(
        &run_probe_on("bn_drift", &d.path().join("train"), &[]),
        "training twin",
    );
    // A declared frozen backbone whose statistics drift stays O18.
    let v = run_probe_on("bn_drift", &d.path().join("eval"), &["frozen=bn,conv"]);
    assert_eq!(
        (v[0].entry.as_str(), v[0].status),
        ("O18", Status::Fail),
        "{v:#?}"
    );
}

/// A text-to-image batch: 4-channel latents and CLIP caption ids (BOS 49406, EOS/pad 49407),
/// `empty` of its `rows` captions the empty prompt.
fn t2i_batch(path: &Path, rows: usize, empty: usize) {
    let mut ids = Vec::new();
    for r in 0..rows {
        let mut row = vec![49406i64];
        if r >= empty {
            row.extend([320 + r as i64, 1125, 539]);
        }
        row.resize(8, 49407);
        ids.extend(row);
    }
    write_st(
        path,
        &[
            (
                "latents",
                vec![rows, 4, 2, 2],
                Vals::F32(vec![0.5; rows * 16]),
            ),
            ("input_ids", vec![rows, 8], Vals::I64(ids)),
        ],
    );
}

#[test]
fn caption_drop_warns_when_no_caption_is_ever_dropped() {
    let d = tempfile::tempdir().unwrap();
    // 4 files of 16 rows, no empty caption: 0.9^64 ≈ 0.001 under a 10% drop rate.
    for i in 0..4 {
        t2i_batch(
            &d.path().join(format!("never/batch_{i}.safetensors")),
            16,
            0,
        );
        t2i_batch(
            &d.path().join(format!("dropped/batch_{i}.safetensors")),
            16,
            if i == 1 { 3 } else { 1 },
        );
    }
    let v = run_probe_on("caption_drop", &d.path().join("never"), &[]);
    assert_eq!(
        (v[0].entry.as_str(), v[0].status, v[0].outcome.as_str()),
        ("DF5", Status::Warn, "never_dropped"),
        "{v:#?}"
    );
    assert_quiet(
        &run_probe_on("caption_drop", &d.path().join("dropped"), &[]),
        "dropped twin",
    );
    // One batch of 8 rows cannot tell 10% from none.
    t2i_batch(&d.path().join("small/batch.safetensors"), 8, 0);
    assert_eq!(
        run_probe_on("caption_drop", &d.path().join("small"), &[])[0].status,
        Status::Skip
    );
}

#[test]
fn eval_determinism_fails_the_same_eval_batch_with_different_pixels() {
    let d = tempfile::tempdir().unwrap();
    let dump = |dir: &str, name: &str, shift: f32| {
        let px: Vec<f32> = (0..96).map(|i| (i as f32 * 0.1 + shift).sin()).collect();
        write_st(
            &d.path().join(dir).join(name),
            &[
                ("pixel_values", vec![8, 3, 2, 2], Vals::F32(px)),
                ("labels", vec![8], Vals::I64(vec![0, 1, 2, 3, 4, 5, 6, 7])),
            ],
        );
    };
    dump("random", "eval_batch_epoch1.safetensors", 0.0);
    dump("random", "eval_batch_epoch2.safetensors", 0.7);
    dump("fixed", "eval_batch_epoch1.safetensors", 0.0);
    dump("fixed", "eval_batch_epoch2.safetensors", 0.0);
    let v = run_probe_on("eval_determinism", &d.path().join("random"), &[]);
    assert_eq!(
        (v[0].entry.as_str(), v[0].status, v[0].outcome.as_str()),
        ("V2", Status::Fail, "random_eval"),
        "{v:#?}"
    );
    assert_quiet(
        &run_probe_on("eval_determinism", &d.path().join("fixed"), &[]),
        "fixed twin",
    );
    // Training batches differ by design: not judged.
    dump("train", "batch_step1.safetensors", 0.0);
    dump("train", "batch_step2.safetensors", 0.7);
    assert_eq!(
        run_probe_on("eval_determinism", &d.path().join("train"), &[])[0].status,
        Status::Skip
    );
}

#[test]
fn nonfinite_weights_blames_the_fused_step_when_the_gradients_stayed_finite() {
    // probes/tests/data/fused_nan (scripts/bugs/make_fused_nan.py): AdamW(fused=True), finite
    // logged grad norms; `bug`'s last checkpoint holds NaN, `twin`'s does not.
    let data = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fused_nan"));
    let v = run_probe_on("nonfinite_weights", &data.join("bug"), &[]);
    assert_eq!(
        (v[0].entry.as_str(), v[0].status, v[0].outcome.as_str()),
        ("O11", Status::Fail, "fused"),
        "{v:#?}"
    );
    assert_quiet(
        &run_probe_on("nonfinite_weights", &data.join("twin"), &[]),
        "fused twin",
    );
}
