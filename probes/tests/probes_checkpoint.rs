//! Checkpoint and optimizer probes: on the shared fixture runs (answers.json expectations) and
//! on synthetic checkpoints written by hand with known answers.

use std::path::{Path, PathBuf};

mod common;
#[path = "support/optim_writer.rs"]
mod optim_writer;

use mltriage_probes::device::Compute;
use mltriage_probes::facts::facts_from_artifacts;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::{run_probe, ParamValue, ProbeCtx, ProbeSpec, Status, Verdict};
use mltriage_probes::probes::{checkpoint, optimizer};
use mltriage_probes::run::Run;

/// The probes over checkpoints and optimizer state.
fn specs() -> impl Iterator<Item = &'static mltriage_probes::probe::ProbeSpec> {
    checkpoint::SPECS.iter().chain(optimizer::SPECS)
}

fn fx(rel: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures"
    ))
    .join(rel)
}

/// A probe by id: these, or a metric probe that reads the optimizer state (`dead_units`).
fn spec(id: &str) -> &'static ProbeSpec {
    specs()
        .chain(mltriage_probes::probes::metric::SPECS)
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no probe {id}"))
}

/// Run one probe with artifact facts overlaid by `user` facts.
fn run_on(id: &str, run: &Run, user: &[&str]) -> Vec<Verdict> {
    let mut facts = facts_from_artifacts(run);
    facts.merge(&Facts::from_args(user).unwrap());
    let params = common::thresholds(id);
    let compute = Compute::cpu();
    let ctx = ProbeCtx {
        run,
        facts: &facts,
        profile: &mltriage_probes::profile::Profile::of(run, &facts),
        params: &params,
        compute: &compute,
        baseline: None,
    };
    run_probe(spec(id), &ctx)
}

/// One probe on `dir` with some playbook thresholds replaced.
fn one_with(id: &str, dir: &Path, user: &[&str], set: &[(&str, f64)]) -> Verdict {
    let run = Run::discover(dir).unwrap();
    let mut facts = facts_from_artifacts(&run);
    facts.merge(&Facts::from_args(user).unwrap());
    let mut params = common::thresholds(id);
    for (k, v) in set {
        assert!(
            params.f64(k).is_ok(),
            "{id}: no threshold {k} in probes.yaml"
        );
        params.insert(k, ParamValue::Num(*v));
    }
    let compute = Compute::cpu();
    let ctx = ProbeCtx {
        run: &run,
        facts: &facts,
        profile: &mltriage_probes::profile::Profile::of(&run, &facts),
        params: &params,
        compute: &compute,
        baseline: None,
    };
    let v = run_probe(spec(id), &ctx);
    assert_eq!(v.len(), 1, "{id}: {v:#?}");
    v.into_iter().next().unwrap()
}

fn probe(id: &str, dir: &Path, user: &[&str]) -> Vec<Verdict> {
    let run = Run::discover(dir).unwrap();
    run_on(id, &run, user)
}

fn one(id: &str, dir: &Path, user: &[&str]) -> Verdict {
    let v = probe(id, dir, user);
    assert_eq!(v.len(), 1, "{id}: {v:#?}");
    v.into_iter().next().unwrap()
}

fn by_entry<'a>(v: &'a [Verdict], entry: &str) -> &'a Verdict {
    v.iter()
        .find(|x| x.entry == entry)
        .unwrap_or_else(|| panic!("no {entry} verdict in {v:#?}"))
}

// ---------------------------------------------------------------------------------------
// Synthetic checkpoints
// ---------------------------------------------------------------------------------------

/// Writes a safetensors file by hand: 8-byte LE header length, JSON header, raw LE f32 bytes.
fn write_st(path: &Path, tensors: &[(&str, Vec<usize>, Vec<f32>)]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut header = String::from("{");
    let mut data = Vec::new();
    for (i, (name, shape, vals)) in tensors.iter().enumerate() {
        assert_eq!(shape.iter().product::<usize>(), vals.len(), "{name}");
        let start = data.len();
        for v in vals {
            data.extend_from_slice(&v.to_le_bytes());
        }
        if i > 0 {
            header.push(',');
        }
        header.push_str(&format!(
            "\"{name}\":{{\"dtype\":\"F32\",\"shape\":{shape:?},\"data_offsets\":[{start},{}]}}",
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

/// Deterministic N(0, std²)-ish values (sum of uniforms from a small LCG).
fn randn(n: usize, std: f32, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) as f64 / (1u64 << 31) as f64) as f32
    };
    (0..n)
        .map(|_| {
            let u: f32 = (0..12).map(|_| next()).sum::<f32>() - 6.0;
            u * std
        })
        .collect()
}

fn t<'a>(name: &'a str, shape: &[usize], vals: Vec<f32>) -> (&'a str, Vec<usize>, Vec<f32>) {
    (name, shape.to_vec(), vals)
}

fn ckpt(root: &Path, step: u64, tensors: &[(&str, Vec<usize>, Vec<f32>)]) {
    write_st(
        &root.join(format!("checkpoint-{step}/model.safetensors")),
        tensors,
    );
}

#[test]
fn playbook_params_parse() {
    let p = common::thresholds("init_weight_stats");
    assert_eq!(p.f64("max_ratio").unwrap(), 3.0);
    assert_eq!(
        common::thresholds("decay_groups")
            .text("mixed_status")
            .unwrap(),
        "warn"
    );
    assert_eq!(
        common::thresholds("optimizer_rebuilt")
            .f64("min_step")
            .unwrap(),
        100.0
    );
    // Every probe's thresholds are in the playbook.
    for s in specs() {
        let p = common::thresholds(s.id);
        for k in s.params {
            assert!(p.f64(k).is_ok() || p.text(k).is_ok(), "{}: {k}", s.id);
        }
        assert!(
            s.outcomes.contains(&"pass") && s.outcomes.contains(&"skip"),
            "{}",
            s.id
        );
    }
}

#[test]
fn too_large_init_fails_and_a_sane_init_passes() {
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        0,
        &[
            t("fc1.weight", &[32, 64], randn(2048, 1.0, 1)),
            t("fc1.bias", &[32], vec![0.0; 32]),
            t("fc2.weight", &[10, 32], randn(320, 0.05, 2)),
        ],
    );
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("S5.1", Status::Fail, "too_large"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("fc1.weight") && !v.message.contains("fc2.weight"),
        "{}",
        v.message
    );

    let d = tempfile::tempdir().unwrap();
    // PyTorch's default Linear init: U(-1/√fan_in, 1/√fan_in) → std 1/√(3·fan_in).
    let std = 1.0 / (3.0f32 * 64.0).sqrt();
    ckpt(
        d.path(),
        0,
        &[
            t("fc1.weight", &[32, 64], randn(2048, std, 3)),
            t("emb.weight", &[100, 16], randn(1600, 0.02, 4)),
            t("norm.weight", &[16], vec![1.0; 16]),
        ],
    );
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Pass, "pass"),
        "{v:#?}"
    );

    // A norm gain at 0.5 warns; an offset mean warns.
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        0,
        &[
            t(
                "fc1.weight",
                &[32, 64],
                randn(2048, 0.02, 5).iter().map(|x| x + 0.05).collect(),
            ),
            t("ln_f.weight", &[16], vec![0.5; 16]),
        ],
    );
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "off_center"),
        "{v:#?}"
    );
}

#[test]
fn nan_tensor_fails_nonfinite() {
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 0, &[t("a.weight", &[4, 4], randn(16, 0.02, 1))]);
    let mut bad = randn(16, 0.02, 2);
    bad[3] = f32::NAN;
    bad[7] = f32::INFINITY;
    ckpt(d.path(), 50, &[t("a.weight", &[4, 4], randn(16, 0.02, 3))]);
    ckpt(d.path(), 100, &[t("a.weight", &[4, 4], bad)]);
    let v = one("nonfinite_weights", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("L6", Status::Fail, "nonfinite"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("a.weight") && v.message.contains("first seen at step 100"),
        "{}",
        v.message
    );
    assert_eq!(v.values["nonfinite"], 2.0);
}

#[test]
fn identical_tensor_while_others_moved() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (randn(64, 0.02, 1), randn(64, 0.02, 2));
    ckpt(
        d.path(),
        0,
        &[
            t("enc.weight", &[8, 8], a.clone()),
            t("head.weight", &[8, 8], b.clone()),
            t("bn.running_mean", &[8], vec![0.0; 8]),
        ],
    );
    let moved: Vec<f32> = a.iter().map(|x| x * 1.01 + 1e-3).collect();
    ckpt(
        d.path(),
        10,
        &[
            t("enc.weight", &[8, 8], moved),
            t("head.weight", &[8, 8], b.clone()),
            t("bn.running_mean", &[8], vec![0.0; 8]),
        ],
    );
    let v = one("identical_tensors", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O2", Status::Fail, "some_identical"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("head.weight") && !v.message.contains("running_mean"),
        "{}",
        v.message
    );
    // Declared frozen: not a finding.
    let v = one("identical_tensors", d.path(), &["frozen=head"]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");

    // Nothing moved at all.
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        0,
        &[
            t("enc.weight", &[8, 8], a.clone()),
            t("head.weight", &[8, 8], b.clone()),
        ],
    );
    ckpt(
        d.path(),
        10,
        &[t("enc.weight", &[8, 8], a), t("head.weight", &[8, 8], b)],
    );
    let v = one("identical_tensors", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O4", Status::Fail, "all_identical"),
        "{v:#?}"
    );
    // update_ratio excludes identical tensors and has nothing left.
    assert_eq!(one("update_ratio", d.path(), &[]).status, Status::Skip);
}

#[test]
fn frozen_prefix_shrunk_is_decayed_and_noise_is_moved() {
    let d = tempfile::tempdir().unwrap();
    let (a, h) = (randn(256, 0.05, 1), randn(64, 0.05, 2));
    ckpt(
        d.path(),
        100,
        &[
            t("backbone.conv.weight", &[16, 16], a.clone()),
            t("head.weight", &[8, 8], h.clone()),
        ],
    );
    let shrunk: Vec<f32> = a.iter().map(|x| x * 0.98).collect();
    ckpt(
        d.path(),
        200,
        &[
            t("backbone.conv.weight", &[16, 16], shrunk),
            t("head.weight", &[8, 8], h.iter().map(|x| x + 0.01).collect()),
        ],
    );
    let v = one("frozen_drift", d.path(), &["frozen=backbone"]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O17", Status::Fail, "decayed"),
        "{v:#?}"
    );
    // The message names the real mechanism: torch optimizers skip params whose .grad is None
    // (zero_grad(set_to_none=True), the torch ≥ 2.0 default); a frozen param drifts only while
    // it carries a zero (or stale) .grad, e.g. under zero_grad(set_to_none=False).
    assert!(
        v.message.contains("set_to_none=False")
            && v.message.contains("set_to_none=True")
            && v.message.contains(".grad is None")
            && v.message
                .contains("requires_grad=False alone does not take a param out"),
        "{}",
        v.message
    );

    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        100,
        &[t("backbone.conv.weight", &[16, 16], a.clone())],
    );
    let noisy: Vec<f32> = a
        .iter()
        .zip(randn(256, 0.005, 9))
        .map(|(x, n)| x + n)
        .collect();
    ckpt(
        d.path(),
        200,
        &[t("backbone.conv.weight", &[16, 16], noisy)],
    );
    let v = one("frozen_drift", d.path(), &["frozen=backbone"]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "moved"),
        "{v:#?}"
    );
    // A prefix that matches nothing says so; no fact and no optimizer: skip.
    assert_eq!(
        one("frozen_drift", d.path(), &["frozen=encoder"]).status,
        Status::Skip
    );
    assert_eq!(one("frozen_drift", d.path(), &[]).status, Status::Skip);

    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        100,
        &[t("backbone.conv.weight", &[16, 16], a.clone())],
    );
    ckpt(d.path(), 200, &[t("backbone.conv.weight", &[16, 16], a)]);
    assert_eq!(
        one("frozen_drift", d.path(), &["frozen=backbone"]).status,
        Status::Pass
    );
}

#[test]
fn bn_running_stats_drift_under_frozen_weights() {
    let d = tempfile::tempdir().unwrap();
    let w = vec![1.0; 8];
    ckpt(
        d.path(),
        10,
        &[
            t("bn.weight", &[8], w.clone()),
            t("bn.bias", &[8], vec![0.1; 8]),
            t("bn.running_mean", &[8], vec![0.0; 8]),
            t("bn.running_var", &[8], vec![1.0; 8]),
        ],
    );
    ckpt(
        d.path(),
        20,
        &[
            t("bn.weight", &[8], w),
            t("bn.bias", &[8], vec![0.1; 8]),
            t("bn.running_mean", &[8], vec![0.3; 8]),
            t("bn.running_var", &[8], vec![1.5; 8]),
        ],
    );
    let v = one("bn_drift", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O18", Status::Fail, "drift"),
        "{v:#?}"
    );
}

#[test]
fn batchnorm_stats_still_at_their_init_after_training_mean_eval_mode_training() {
    // Trained 300 steps with model.eval(): BN weight/bias moved, running stats never did.
    let d = tempfile::tempdir().unwrap();
    let w: Vec<f32> = (0..8).map(|i| 1.0 + 0.01 * i as f32).collect();
    ckpt(
        d.path(),
        300,
        &[
            t("conv.weight", &[8, 8], randn(64, 0.1, 3)),
            t("bn.weight", &[8], w.clone()),
            t("bn.bias", &[8], vec![0.02; 8]),
            t("bn.running_mean", &[8], vec![0.0; 8]),
            t("bn.running_var", &[8], vec![1.0; 8]),
        ],
    );
    let v = one("bn_drift", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O5", Status::Fail, "eval_mode"),
        "{v:#?}"
    );
    // The same stats in train mode moved: not this finding.
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        300,
        &[
            t("bn.weight", &[8], w),
            t("bn.bias", &[8], vec![0.02; 8]),
            t("bn.running_mean", &[8], vec![0.1; 8]),
            t("bn.running_var", &[8], vec![0.9; 8]),
        ],
    );
    assert_ne!(one("bn_drift", d.path(), &[]).outcome, "eval_mode");
}

#[test]
fn lora_b_zero_after_training_and_missing_adapters() {
    let d = tempfile::tempdir().unwrap();
    let cfg = r#"{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj"], "task_type": "CAUSAL_LM"}"#;
    std::fs::write(d.path().join("adapter_config.json"), cfg).unwrap();
    write_st(
        &d.path().join("checkpoint-500/adapter_model.safetensors"),
        &[
            t(
                "base_model.model.layers.0.q_proj.lora_A.weight",
                &[4, 16],
                randn(64, 0.1, 1),
            ),
            t(
                "base_model.model.layers.0.q_proj.lora_B.weight",
                &[16, 4],
                vec![0.0; 64],
            ),
        ],
    );
    let v = one("lora_wiring", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O21", Status::Fail, "b_zero"),
        "{v:#?}"
    );

    // Trained B passes.
    write_st(
        &d.path().join("checkpoint-500/adapter_model.safetensors"),
        &[
            t(
                "base_model.model.layers.0.q_proj.lora_A.weight",
                &[4, 16],
                randn(64, 0.1, 1),
            ),
            t(
                "base_model.model.layers.0.q_proj.lora_B.weight",
                &[16, 4],
                randn(64, 0.01, 2),
            ),
        ],
    );
    assert_eq!(one("lora_wiring", d.path(), &[]).status, Status::Pass);

    // adapter_config.json but the weights hold no LoRA tensors.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("adapter_config.json"), cfg).unwrap();
    ckpt(
        d.path(),
        100,
        &[t("layers.0.c_attn.weight", &[16, 16], randn(256, 0.02, 3))],
    );
    let v = one("lora_wiring", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "no_adapters"),
        "{v:#?}"
    );

    // No LoRA at all: skip.
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        100,
        &[t("layers.0.c_attn.weight", &[16, 16], randn(256, 0.02, 3))],
    );
    assert_eq!(one("lora_wiring", d.path(), &[]).status, Status::Skip);
}

#[test]
fn head_rows_and_embedding_rows_vs_facts() {
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        100,
        &[
            t("model.embed_tokens.weight", &[100, 8], randn(800, 0.02, 1)),
            t("classifier.weight", &[5, 8], randn(40, 0.02, 2)),
        ],
    );
    let v = probe(
        "head_shape",
        d.path(),
        &["num_classes=10", "vocab_size=120"],
    );
    let o20 = by_entry(&v, "O20");
    assert_eq!(
        (o20.status, o20.outcome.as_str()),
        (Status::Fail, "mismatch"),
        "{o20:#?}"
    );
    assert_eq!(o20.values["rows"], 5.0);
    let l3 = by_entry(&v, "L3");
    assert_eq!(
        (l3.status, l3.outcome.as_str()),
        (Status::Fail, "mismatch"),
        "{l3:#?}"
    );
    assert!(
        l3.message.contains("resize_token_embeddings"),
        "{}",
        l3.message
    );

    let v = probe("head_shape", d.path(), &["num_classes=5", "vocab_size=100"]);
    assert!(v.iter().all(|x| x.status == Status::Pass), "{v:#?}");
    // Without facts: skips naming what is needed.
    let v = probe("head_shape", d.path(), &[]);
    assert!(v.iter().all(|x| x.status == Status::Skip), "{v:#?}");
    assert!(by_entry(&v, "O20").message.contains("num_classes"));
}

#[test]
fn projector_out_dim_vs_llm_hidden() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("config.json"), r#"{"model_type": "llava", "vision_config": {"hidden_size": 16}, "text_config": {"hidden_size": 64, "vocab_size": 100}}"#).unwrap();
    ckpt(
        d.path(),
        100,
        &[
            t(
                "model.vision_tower.patch.weight",
                &[16, 12],
                randn(192, 0.02, 1),
            ),
            t(
                "model.multi_modal_projector.linear_1.weight",
                &[32, 16],
                randn(512, 0.02, 2),
            ),
            t(
                "model.multi_modal_projector.linear_2.weight",
                &[32, 32],
                randn(1024, 0.02, 3),
            ),
            t(
                "model.language_model.embed_tokens.weight",
                &[100, 64],
                randn(6400, 0.02, 4),
            ),
        ],
    );
    let v = one("projector_dim", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("X2", Status::Fail, "mismatch"),
        "{v:#?}"
    );
    assert_eq!((v.values["out_dim"], v.values["hidden"]), (32.0, 64.0));

    let d2 = tempfile::tempdir().unwrap();
    std::fs::write(d2.path().join("config.json"), r#"{"model_type": "llava", "vision_config": {"hidden_size": 16}, "text_config": {"hidden_size": 64}}"#).unwrap();
    ckpt(
        d2.path(),
        100,
        &[
            t(
                "model.multi_modal_projector.linear_1.weight",
                &[64, 16],
                randn(1024, 0.02, 2),
            ),
            t(
                "model.multi_modal_projector.linear_2.weight",
                &[64, 64],
                randn(4096, 0.02, 3),
            ),
        ],
    );
    assert_eq!(one("projector_dim", d2.path(), &[]).status, Status::Pass);
    // Not a VLM: skip.
    let d3 = tempfile::tempdir().unwrap();
    ckpt(d3.path(), 1, &[t("fc.weight", &[4, 4], randn(16, 0.1, 1))]);
    assert_eq!(one("projector_dim", d3.path(), &[]).status, Status::Skip);
}

#[test]
fn tower_freeze_against_declared_stage() {
    let d = tempfile::tempdir().unwrap();
    let (v0, p0, l0) = (randn(64, 0.02, 1), randn(64, 0.02, 2), randn(64, 0.02, 3));
    ckpt(
        d.path(),
        100,
        &[
            t("vision_tower.blocks.0.weight", &[8, 8], v0.clone()),
            t("mm_projector.0.weight", &[8, 8], p0.clone()),
            t("model.layers.0.q_proj.weight", &[8, 8], l0.clone()),
        ],
    );
    let bump = |x: &[f32]| x.iter().map(|v| v + 0.01).collect::<Vec<f32>>();
    ckpt(
        d.path(),
        200,
        &[
            t("vision_tower.blocks.0.weight", &[8, 8], v0),
            t("mm_projector.0.weight", &[8, 8], bump(&p0)),
            t("model.layers.0.q_proj.weight", &[8, 8], bump(&l0)),
        ],
    );
    let v = one("tower_freeze", d.path(), &["stage=1"]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("X1", Status::Fail, "wrong_towers"),
        "{v:#?}"
    );
    assert!(v.message.contains("the LLM moved"), "{}", v.message);
    assert_eq!(
        (
            v.values["llm_moved"],
            v.values["vision_moved"],
            v.values["projector_moved"]
        ),
        (1.0, 0.0, 1.0)
    );
    assert_eq!(
        one("tower_freeze", d.path(), &["stage=2"]).status,
        Status::Pass
    );
    assert_eq!(one("tower_freeze", d.path(), &[]).status, Status::Pass);
    // identical_tensors knows the stage: a frozen vision tower in stage 2 is not a finding.
    assert_eq!(
        one("identical_tensors", d.path(), &["stage=2"]).status,
        Status::Pass
    );
}

#[test]
fn ema_missing_in_a_diffusion_run_and_identical_ema() {
    let d = tempfile::tempdir().unwrap();
    let w = randn(64, 0.02, 1);
    ckpt(d.path(), 100, &[t("conv_in.weight", &[8, 8], w.clone())]);
    let v = one("ema_weights", d.path(), &["domain=diffusion"]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("DF2", Status::Skip, "missing"),
        "a run trained without EMA is a choice the artifacts cannot judge: skip (not pass, not warn), outcome `missing`: {v:#?}"
    );
    assert_eq!(one("ema_weights", d.path(), &[]).status, Status::Skip);

    ckpt(
        d.path(),
        100,
        &[
            t("conv_in.weight", &[8, 8], w.clone()),
            t("ema.conv_in.weight", &[8, 8], w.clone()),
        ],
    );
    let v = one("ema_weights", d.path(), &["domain=diffusion"]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "identical"),
        "{v:#?}"
    );

    ckpt(
        d.path(),
        100,
        &[
            t("conv_in.weight", &[8, 8], w.clone()),
            t(
                "ema.conv_in.weight",
                &[8, 8],
                w.iter().map(|x| x * 0.9).collect(),
            ),
        ],
    );
    assert_eq!(
        one("ema_weights", d.path(), &["domain=diffusion"]).status,
        Status::Pass
    );

    // A separate EMA file (diffusers `unet_ema/`).
    let d = tempfile::tempdir().unwrap();
    write_st(
        &d.path()
            .join("checkpoint-100/unet/diffusion_pytorch_model.safetensors"),
        &[t("conv_in.weight", &[8, 8], w.clone())],
    );
    write_st(
        &d.path()
            .join("checkpoint-100/unet_ema/diffusion_pytorch_model.safetensors"),
        &[t(
            "conv_in.weight",
            &[8, 8],
            w.iter().map(|x| x * 0.9).collect(),
        )],
    );
    let v = one("ema_weights", d.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
    assert_eq!(v.values["compared"], 1.0);

    // A second save where the UNet trained but `unet_ema` is byte-identical: never stepped.
    let ema = w.iter().map(|x| x * 0.9).collect::<Vec<f32>>();
    let save = |root: &Path, step: u64, raw: Vec<f32>, ema: Vec<f32>| {
        write_st(
            &root.join(format!(
                "checkpoint-{step}/unet/diffusion_pytorch_model.safetensors"
            )),
            &[t("conv_in.weight", &[8, 8], raw)],
        );
        write_st(
            &root.join(format!(
                "checkpoint-{step}/unet_ema/diffusion_pytorch_model.safetensors"
            )),
            &[t("conv_in.weight", &[8, 8], ema)],
        );
    };
    save(d.path(), 200, randn(64, 0.02, 2), ema.clone());
    let v = one("ema_weights", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("DF2", Status::Fail, "frozen"),
        "{v:#?}"
    );
    // Healthy twin: the EMA moves a little between the saves.
    save(
        d.path(),
        200,
        randn(64, 0.02, 2),
        ema.iter().map(|x| x * 0.99 + 0.001).collect(),
    );
    assert_eq!(one("ema_weights", d.path(), &[]).status, Status::Pass);
}

#[test]
fn weight_histogram_collapse_and_update_ratio_bands() {
    let d = tempfile::tempdir().unwrap();
    let a = randn(256, 0.05, 1);
    let b = randn(256, 0.05, 2);
    ckpt(
        d.path(),
        0,
        &[
            t("l1.weight", &[16, 16], a.clone()),
            t("l2.weight", &[16, 16], b.clone()),
        ],
    );
    ckpt(
        d.path(),
        1000,
        &[
            t("l1.weight", &[16, 16], a.iter().map(|x| x * 0.02).collect()),
            t(
                "l2.weight",
                &[16, 16],
                b.iter().map(|x| x * 1.00001).collect(),
            ),
        ],
    );
    let v = one("weight_histograms", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O26", Status::Warn, "collapsed"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("l1.weight") && !v.message.contains("l2.weight"),
        "{}",
        v.message
    );

    // Tiny moves over 1000 steps: the per-step ratio is low even as a random walk.
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        0,
        &[
            t("l1.weight", &[16, 16], a.clone()),
            t("l2.weight", &[16, 16], b.clone()),
        ],
    );
    ckpt(
        d.path(),
        1000,
        &[
            t(
                "l1.weight",
                &[16, 16],
                a.iter().map(|x| x * 1.00001).collect(),
            ),
            t(
                "l2.weight",
                &[16, 16],
                b.iter().map(|x| x * 1.00001).collect(),
            ),
        ],
    );
    let v = one("update_ratio", d.path(), &[]);
    // Far below the band the finding names the cure, O7 (LR too low), with O22's ratio as
    // evidence; a mild shortfall stays O22's warning.
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O7", Status::Fail, "low"),
        "{v:#?}"
    );
    // Huge moves per step: high.
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 0, &[t("l1.weight", &[16, 16], a.clone())]);
    ckpt(
        d.path(),
        2,
        &[t(
            "l1.weight",
            &[16, 16],
            a.iter().map(|x| x * 3.0).collect(),
        )],
    );
    let v = one("update_ratio", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "high"),
        "{v:#?}"
    );
}

#[test]
fn lone_model_folder_is_trained_weights_not_an_init() {
    // model.safetensors + config.json, no trainer state, no other checkpoint: the step is
    // unknown, so N(0,1) matrices are a warning about trained weights, not an init failure.
    let d = tempfile::tempdir().unwrap();
    write_st(
        &d.path().join("model.safetensors"),
        &[t("fc1.weight", &[32, 64], randn(2048, 1.0, 1))],
    );
    std::fs::write(d.path().join("config.json"), "{}").unwrap();
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "too_large"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("not at init") && v.measured.contains("unknown step"),
        "{v:#?}"
    );
    // The same weights as checkpoint-0 are the init: fail.
    let d0 = tempfile::tempdir().unwrap();
    ckpt(
        d0.path(),
        0,
        &[t("fc1.weight", &[32, 64], randn(2048, 1.0, 1))],
    );
    assert_eq!(
        one("init_weight_stats", d0.path(), &[]).status,
        Status::Fail
    );

    // A lone adapter folder with every lora_B still zero: never trained (not "zero at init").
    let d = tempfile::tempdir().unwrap();
    let cfg = r#"{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj"]}"#;
    std::fs::write(d.path().join("adapter_config.json"), cfg).unwrap();
    let lora = [
        t(
            "base_model.model.layers.0.q_proj.lora_A.weight",
            &[4, 16],
            randn(64, 0.1, 1),
        ),
        t(
            "base_model.model.layers.0.q_proj.lora_B.weight",
            &[16, 4],
            vec![0.0; 64],
        ),
    ];
    write_st(&d.path().join("adapter_model.safetensors"), &lora);
    let v = one("lora_wiring", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "b_zero"),
        "{v:#?}"
    );
    // In checkpoint-0 the zero B is by design.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("adapter_config.json"), cfg).unwrap();
    write_st(
        &d.path().join("checkpoint-0/adapter_model.safetensors"),
        &lora,
    );
    assert_eq!(one("lora_wiring", d.path(), &[]).status, Status::Pass);
}

/// A fixed sin-cos position table [n, d] (values in [-1, 1], std ≈ 0.7).
fn sincos(n: usize, d: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(n * d);
    for pos in 0..n {
        for i in 0..d {
            let freq = 1.0 / 10000f64.powf((2 * (i / 2)) as f64 / d as f64);
            let a = pos as f64 * freq;
            out.push(if i % 2 == 0 { a.sin() } else { a.cos() } as f32);
        }
    }
    out
}

#[test]
fn embeddings_have_their_own_init_expectation() {
    // PyTorch's default Linear init, N(0,1) nn.Embedding tables, torch.randn pos/cls tokens and
    // a fixed sin-cos table: none is a failure at init.
    let std = 1.0 / (3.0f32 * 64.0).sqrt();
    let tensors = |extra: Vec<(&'static str, Vec<usize>, Vec<f32>)>| {
        let mut v = vec![
            t("blocks.0.fc.weight", &[64, 64], randn(4096, std, 1)),
            t("embed_tokens.weight", &[100, 64], randn(6400, 1.0, 2)),
            t("pos_embed", &[1, 17, 64], randn(17 * 64, 1.0, 3)),
            t("cls_token", &[1, 1, 64], randn(64, 1.0, 4)),
            t(
                "encoder.position_embeddings.weight",
                &[32, 64],
                sincos(32, 64),
            ),
            t(
                "patch_embed.proj.weight",
                &[64, 3, 4, 4],
                randn(3072, 0.1, 5),
            ),
        ];
        v.extend(extra);
        v
    };
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 0, &tensors(Vec::new()));
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Pass, "pass"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("embed_tokens.weight") && v.message.contains("sin-cos"),
        "{}",
        v.message
    );
    assert_eq!(v.values["embeddings"], 4.0, "{v:#?}");

    // Tied to the output head (the config fact, or a head holding the same bytes): warn.
    let v = one("init_weight_stats", d.path(), &["tie_word_embeddings=true"]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "too_large"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("tied to the output head"),
        "{}",
        v.message
    );
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        0,
        &tensors(vec![t("lm_head.weight", &[100, 64], randn(6400, 1.0, 2))]),
    );
    assert_eq!(one("init_weight_stats", d.path(), &[]).status, Status::Warn);

    // An embedding far past N(0,1) still fails at init.
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        0,
        &[
            t("blocks.0.fc.weight", &[64, 64], randn(4096, std, 1)),
            t("transformer.wte.weight", &[100, 64], randn(6400, 10.0, 2)),
        ],
    );
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "too_large"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("transformer.wte.weight"),
        "{}",
        v.message
    );
}

#[test]
fn pretrained_step0_weights_are_not_judged_as_an_init() {
    // A fine-tune's checkpoint-0: GPT-2-like c_attn with std 0.3 (3.4× Kaiming) and trained
    // LayerNorm gains (an init sets them all to 1).
    let gain = |seed| {
        randn(256, 0.1, seed)
            .iter()
            .map(|x| x + 1.0)
            .collect::<Vec<_>>()
    };
    let tensors = |g1: Vec<f32>, g2: Vec<f32>| {
        vec![
            t(
                "h.0.attn.c_attn.weight",
                &[256, 768],
                randn(256 * 768, 0.3, 1),
            ),
            t("h.0.ln_1.weight", &[256], g1),
            t("h.0.ln_2.weight", &[256], g2),
        ]
    };
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 0, &tensors(gain(2), gain(3)));
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(v.status, Status::Skip, "{v:#?}");
    assert!(
        v.message.contains("2 of 2 norm gains vary") && v.message.contains("from_scratch=true"),
        "{}",
        v.message
    );
    // The user says it is an init: judged (and too large).
    let v = one("init_weight_stats", d.path(), &["from_scratch=true"]);
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "too_large"));
    // Fresh gains (all 1): an init, judged even with a hub name in config.json.
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 0, &tensors(vec![1.0; 256], vec![1.0; 256]));
    std::fs::write(
        d.path().join("checkpoint-0/config.json"),
        r#"{"_name_or_path": "gpt2"}"#,
    )
    .unwrap();
    assert_eq!(one("init_weight_stats", d.path(), &[]).status, Status::Fail);

    // No norm gains to read: config.json's _name_or_path says from_pretrained.
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        0,
        &[t("fc.weight", &[256, 768], randn(256 * 768, 0.3, 1))],
    );
    std::fs::write(
        d.path().join("checkpoint-0/config.json"),
        r#"{"_name_or_path": "openai-community/gpt2"}"#,
    )
    .unwrap();
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(v.status, Status::Skip, "{v:#?}");
    assert!(v.message.contains("_name_or_path"), "{}", v.message);
    // from_scratch=false: typed, or read from adapter_config.json (a PEFT run).
    let v = one("init_weight_stats", d.path(), &["from_scratch=false"]);
    assert!(
        v.message.contains("from_scratch=false (--fact)"),
        "{}",
        v.message
    );
    std::fs::remove_file(d.path().join("checkpoint-0/config.json")).unwrap();
    std::fs::write(d.path().join("adapter_config.json"), r#"{"r": 8}"#).unwrap();
    let v = one("init_weight_stats", d.path(), &[]);
    assert_eq!(v.status, Status::Skip);
    assert!(v.message.contains("adapter_config.json"), "{}", v.message);
}

#[test]
fn moved_thresholds_are_read_from_the_playbook() {
    // std_floor: a conv with fan-in 65536 expects ≈ 0.0055 by Kaiming, 0.02 by the floor.
    let d = tempfile::tempdir().unwrap();
    ckpt(
        d.path(),
        0,
        &[t(
            "conv.weight",
            &[4, 4096, 4, 4],
            randn(4 * 4096 * 16, 0.05, 1),
        )],
    );
    assert_eq!(
        one_with("init_weight_stats", d.path(), &[], &[]).status,
        Status::Pass
    );
    let v = one_with("init_weight_stats", d.path(), &[], &[("std_floor", 0.005)]);
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "too_large"));

    // Off-centre rule: 3 of 3 offset matrices fail at init; needing 4 makes it a warning.
    let d = tempfile::tempdir().unwrap();
    let off = |seed| randn(1024, 0.02, seed).iter().map(|x| x + 0.05).collect();
    ckpt(
        d.path(),
        0,
        &[
            t("a.weight", &[32, 32], off(1)),
            t("b.weight", &[32, 32], off(2)),
            t("c.weight", &[32, 32], off(3)),
        ],
    );
    assert_eq!(
        one_with("init_weight_stats", d.path(), &[], &[]).status,
        Status::Fail
    );
    let v = one_with(
        "init_weight_stats",
        d.path(),
        &[],
        &[("off_center_fail_min", 4.0)],
    );
    assert_eq!((v.status, v.outcome.as_str()), (Status::Warn, "off_center"));

    // update_ratio: 4% in 2 steps is per step 0.02..0.028, above high (1e-2): a warning at the
    // default fail_factor 10, a failure at 1.5 — in the steady state (past early_steps, 200
    // optimizer steps). From the init (step 0)
    // the same move is held only to the failure bound: the first steps move small weights far.
    let a = randn(256, 0.05, 1);
    // Two checkpoints of one 16×16 weight at steps `from` and `to`, the second 4% larger.
    let moved = |from: u64, to: u64| {
        let d = tempfile::tempdir().unwrap();
        ckpt(d.path(), from, &[t("l1.weight", &[16, 16], a.clone())]);
        let grown = a.iter().map(|x| x * 1.04).collect();
        ckpt(d.path(), to, &[t("l1.weight", &[16, 16], grown)]);
        d
    };
    let d0 = moved(0, 2);
    assert_eq!(
        one_with("update_ratio", d0.path(), &[], &[]).status,
        Status::Pass
    );
    let d = moved(300, 302);
    assert_eq!(
        one_with("update_ratio", d.path(), &[], &[]).status,
        Status::Warn
    );
    assert_eq!(
        one_with("update_ratio", d.path(), &[], &[("fail_factor", 1.5)]).status,
        Status::Fail
    );
    // A loss that keeps falling does not excuse it: a 100× LR improves the loss too, only less.
    let log: String = (0..=302)
        .map(|s| format!("{{\"step\": {s}, \"loss\": {}}}\n", 3.0 - 0.005 * s as f64))
        .collect();
    std::fs::write(d.path().join("log.jsonl"), log).unwrap();
    let v = one_with("update_ratio", d.path(), &[], &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "high"),
        "{v:#?}"
    );
    // Inside the run's first early_steps optimizer steps (checkpoints at steps 1 and 3) the same
    // move is held to the failure bound only, as from the init.
    let d = moved(1, 3);
    assert_eq!(
        one_with("update_ratio", d.path(), &[], &[]).status,
        Status::Pass
    );
    assert_eq!(
        one_with("update_ratio", d.path(), &[], &[("early_steps", 2.0)]).status,
        Status::Warn
    );
    // One tensor moving 200× the median: an outlier at 100×, not at 500×.
    let d = tempfile::tempdir().unwrap();
    let names = [
        "l1.weight",
        "l2.weight",
        "l3.weight",
        "l4.weight",
        "l5.weight",
    ];
    let before: Vec<Vec<f32>> = (0..5).map(|i| randn(256, 0.05, 10 + i)).collect();
    let mk = |scale: &dyn Fn(usize) -> f32| {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                t(
                    n,
                    &[16, 16],
                    before[i].iter().map(|x| x * scale(i)).collect(),
                )
            })
            .collect::<Vec<_>>()
    };
    ckpt(d.path(), 10, &mk(&|_| 1.0));
    ckpt(d.path(), 11, &mk(&|i| if i == 4 { 1.2 } else { 1.001 }));
    let v = one_with("update_ratio", d.path(), &[], &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "outliers"),
        "{v:#?}"
    );
    assert!(v.message.contains("l5.weight"), "{}", v.message);
    let v = one_with("update_ratio", d.path(), &[], &[("outlier_ratio", 500.0)]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");

    // weight_histograms: zeros grow 40% → 60% (above zero_frac_warn 0.5, grown by 0.2).
    let zeros = |frac: f64, seed| {
        let mut v = randn(1000, 0.05, seed);
        for x in v.iter_mut().take((1000.0 * frac) as usize) {
            *x = 0.0;
        }
        v
    };
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 0, &[t("l.weight", &[10, 100], zeros(0.4, 1))]);
    ckpt(d.path(), 100, &[t("l.weight", &[10, 100], zeros(0.6, 1))]);
    assert_eq!(
        one_with("weight_histograms", d.path(), &[], &[]).status,
        Status::Warn
    );
    assert_eq!(
        one_with(
            "weight_histograms",
            d.path(),
            &[],
            &[("zero_frac_growth", 0.3)]
        )
        .status,
        Status::Pass
    );
}

#[test]
fn probes_skip_on_empty_and_unreadable_runs() {
    let d = tempfile::tempdir().unwrap();
    for s in specs() {
        let v = probe(s.id, d.path(), &[]);
        assert!(
            v.iter()
                .all(|x| x.status == Status::Skip && !x.message.is_empty()),
            "{}: {v:#?}",
            s.id
        );
    }
    // A broken weight file and a broken optimizer.pt: skips naming the file, no panic.
    std::fs::create_dir_all(d.path().join("checkpoint-5")).unwrap();
    std::fs::write(
        d.path().join("checkpoint-5/model.safetensors"),
        b"\x10\0\0\0\0\0\0\0{not json}      ",
    )
    .unwrap();
    std::fs::write(d.path().join("checkpoint-5/optimizer.pt"), b"PK garbage").unwrap();
    for s in specs() {
        let v = probe(s.id, d.path(), &[]);
        assert!(
            v.iter().all(|x| x.status == Status::Skip),
            "{}: {v:#?}",
            s.id
        );
    }
    assert!(probe("init_weight_stats", d.path(), &[])[0]
        .message
        .contains("model.safetensors"));
}

// ---------------------------------------------------------------------------------------
// Fixtures (answers.json)
// ---------------------------------------------------------------------------------------

fn all_on(run: &str, user: &[&str]) -> Vec<(String, Verdict)> {
    let r = Run::discover(&fx(run)).unwrap();
    specs()
        .flat_map(|s| {
            run_on(s.id, &r, user)
                .into_iter()
                .map(|v| (s.id.to_string(), v))
        })
        .collect()
}

#[test]
fn fixture_bad_init_fails_s51() {
    let v = one("init_weight_stats", &fx("lm_bad_init"), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("S5.1", Status::Fail, "too_large"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("c_attn.weight") && v.message.contains("wte"),
        "{}",
        v.message
    );
    assert!((v.values["worst_std"] - 1.2113).abs() < 1e-3);
}

#[test]
fn fixture_no_decay_split_flags_s61() {
    // One decayed group for every tensor, no weight_decay = 0 group at all: O6's fix (two
    // param groups, AdamW) is the one to name; the run's weight_decay is quoted.
    let v = one("decay_groups", &fx("lm_no_decay_split"), &[]);
    assert_eq!(
        (v.entry.as_str(), v.outcome.as_str()),
        ("O6", "decayed_1d"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("weight_decay 0.1 here") || v.message.contains("weight_decay"),
        "{}",
        v.message
    );
    assert!(matches!(v.status, Status::Warn | Status::Fail));
    assert_eq!(v.values["decayed_1d"], 18.0);
    // .bin state-dict order maps optimizer indices to names.
    assert!(
        v.message.contains("transformer.h.0.ln_1.weight"),
        "{}",
        v.message
    );
    for run in ["hf_healthy", "lm_healthy_tb"] {
        let v = one("decay_groups", &fx(run), &[]);
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Pass, "pass"),
            "{run}: {v:#?}"
        );
    }
}

#[test]
fn fixture_frozen_in_optimizer_fails_o17_with_the_fact() {
    let v = one(
        "frozen_drift",
        &fx("vision_frozen_in_optimizer"),
        &["frozen=backbone"],
    );
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O17", Status::Fail, "moved"),
        "{v:#?}"
    );
    assert!(v.evidence[0].steps == Some((60, 200)), "{:?}", v.evidence);
    // Without the fact the optimizer state shows it (warn), naming by unique shape where possible,
    // and the conv biases before BatchNorm (both moments ~0) are not flagged.
    let v = one("frozen_drift", &fx("vision_frozen_in_optimizer"), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "moved"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("backbone.0.weight")
            && !v.message.contains("#1 ")
            && !v.message.contains("#5 "),
        "{}",
        v.message
    );
    assert_eq!(v.values["flagged"], 6.0);
    // BN running stats did not move between 60 and 200 (eval mode): no O18 finding.
    let v = one(
        "bn_drift",
        &fx("vision_frozen_in_optimizer"),
        &["frozen=backbone"],
    );
    assert_eq!(v.status, Status::Pass, "{v:#?}");
}

#[test]
fn fixture_sched_never_stepped_gives_s21_from_scheduler_pt() {
    let v = probe("optimizer_rebuilt", &fx("lm_sched_never_stepped"), &[]);
    let s21 = by_entry(&v, "S2.1");
    assert_eq!(
        (s21.status, s21.outcome.as_str()),
        (Status::Fail, "constant_nonzero"),
        "{s21:#?}"
    );
    assert!(
        s21.message
            .contains("last_epoch 0 after 300 optimizer steps"),
        "{}",
        s21.message
    );
    assert!(s21.evidence[0]
        .file
        .as_ref()
        .unwrap()
        .ends_with("scheduler.pt"));
    assert_eq!(by_entry(&v, "S6.2").status, Status::Pass);
}

#[test]
fn fixture_healthy_runs_have_no_fail() {
    for run in ["hf_healthy", "lm_healthy_tb", "vision_healthy"] {
        for (id, v) in all_on(run, &[]) {
            assert_ne!(v.status, Status::Fail, "{run} {id}: {v:#?}");
            if id != "optimizer_rebuilt" {
                assert!(
                    spec(&id).entries.contains(&v.entry.as_str()),
                    "{id}: {}",
                    v.entry
                );
            }
            assert!(
                spec(&id).outcomes.contains(&v.outcome.as_str()) || v.entry == "S2.1",
                "{id}: {}",
                v.outcome
            );
        }
    }
    let v = one("init_weight_stats", &fx("vision_healthy"), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
    let v = one("identical_tensors", &fx("hf_healthy"), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
}

#[test]
fn fixture_other_bugged_runs_only_fail_where_expected() {
    // No checkpoint probe fails on a run whose bug lies elsewhere, except the accepted ids.
    let cases: [(&str, &[&str], &[&str]); 4] = [
        ("lm_bad_init", &[], &["S5.1"]),
        ("lm_no_decay_split", &[], &[]),
        ("lm_sched_never_stepped", &[], &["S2.1"]),
        ("vision_frozen_in_optimizer", &["frozen=backbone"], &["O17"]),
    ];
    for (run, facts, accept) in cases {
        for (id, v) in all_on(run, facts) {
            if v.status == Status::Fail {
                assert!(accept.contains(&v.entry.as_str()), "{run} {id}: {v:#?}");
            }
        }
    }
}

#[test]
fn update_ratio_is_held_at_the_lr_the_interval_had() {
    // Small moves between steps 1000 and 2000: per-step ratio ∈ [1e-6, 3.2e-5], under the 1e-4
    // band. With no LR logged that is a warning; where the logged LR had decayed to 1% of its
    // peak over that interval (a cosine tail), the band is held at that LR and it passes.
    let a = randn(256, 0.05, 1);
    let save = |root: &Path| {
        ckpt(root, 1000, &[t("l1.weight", &[16, 16], a.clone())]);
        ckpt(
            root,
            2000,
            &[t(
                "l1.weight",
                &[16, 16],
                a.iter().map(|x| x * 1.001).collect(),
            )],
        );
    };
    let d = tempfile::tempdir().unwrap();
    save(d.path());
    let v = one("update_ratio", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "low"),
        "{v:#?}"
    );

    let d = tempfile::tempdir().unwrap();
    save(d.path());
    let mut log = String::new();
    for s in (10..=2000).step_by(10) {
        let lr = if s <= 1000 { 1e-3 } else { 1e-5 };
        log.push_str(&format!("{{\"step\": {s}, \"learning_rate\": {lr}}}\n"));
    }
    std::fs::write(d.path().join("metrics.jsonl"), log).unwrap();
    let v = one("update_ratio", d.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
}

#[test]
fn final_weights_saved_again_are_not_a_step_whose_update_never_landed() {
    // The run's final weights under a name stating no step (Ultralytics' last.pt, a final
    // model.safetensors) sit one step after the last checkpoint; equal to it tensor for
    // tensor, they are the same weights saved again: O2/O4 judge the pair before them.
    let a = randn(256, 0.05, 1);
    let b: Vec<f32> = a.iter().map(|x| x * 1.01).collect();
    let tensors = |w: &[f32]| {
        [
            t("l1.weight", &[16, 16], w.to_vec()),
            t("l1.bias", &[4], w[..4].to_vec()),
        ]
    };
    // Written in another order (a byte-for-byte copy is dropped when the run is read), with a
    // log that runs past the last save, so the final weights are placed after it.
    let final_weights = |root: &Path| {
        let mut last = tensors(&b);
        last.reverse();
        write_st(&root.join("model.safetensors"), &last);
        let log: String = (10..=250)
            .step_by(10)
            .map(|s| format!("{{\"step\": {s}, \"loss\": 2.0}}\n"))
            .collect();
        std::fs::write(root.join("metrics.jsonl"), log).unwrap();
    };
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 100, &tensors(&a));
    ckpt(d.path(), 200, &tensors(&b));
    final_weights(d.path());
    let v = one("identical_tensors", d.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
    assert!(v.measured.contains("between steps 100 and 200"), "{v:#?}");

    // With no other pair to compare, the probe does not judge.
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 200, &tensors(&b));
    final_weights(d.path());
    let v = one("identical_tensors", d.path(), &[]);
    assert_eq!(v.status, Status::Skip, "{v:#?}");
    assert!(v.message.contains("saved again"), "{v:#?}");

    // Two stepped checkpoints with the same weights are still a step without an update.
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 100, &[t("l1.weight", &[16, 16], b.clone())]);
    ckpt(d.path(), 200, &[t("l1.weight", &[16, 16], b)]);
    let v = one("identical_tensors", d.path(), &[]);
    assert_eq!((v.entry.as_str(), v.status), ("O4", Status::Fail), "{v:#?}");
}

#[test]
fn every_probe_of_the_last_two_checkpoints_skips_the_final_weights_saved_again() {
    // The rule is the checkpoint pair's, not one probe's: BatchNorm layers whose weights moved
    // between steps 100 and 200, then the same weights saved again as the final model. Judged
    // on the final pair, every layer's weight and statistics sat still, so the layers read as
    // frozen ("0 of 1 frozen BatchNorm layers changed"): a span with no training in it.
    let layer = |w: f32, mean: f32| {
        [
            t(
                "conv.weight",
                &[8, 8],
                randn(64, 0.1, 7).iter().map(|x| x * w).collect(),
            ),
            t("bn.weight", &[8], vec![w; 8]),
            t("bn.bias", &[8], vec![0.1 * w; 8]),
            t("bn.running_mean", &[8], vec![mean; 8]),
            t("bn.running_var", &[8], vec![1.0 + mean; 8]),
        ]
    };
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 100, &layer(1.0, 0.1));
    ckpt(d.path(), 200, &layer(1.05, 0.3));
    // The same tensors written in another order: another file (a byte-for-byte copy is
    // dropped when the run is read), as Ultralytics' stripped last.pt differs from epoch9.pt.
    let mut last = layer(1.05, 0.3);
    last.reverse();
    write_st(&d.path().join("model.safetensors"), &last);
    // The log runs past the last save, so the final weights are placed after it (as
    // Ultralytics' last.pt is placed at the log's last epoch, after epoch9.pt).
    let log: String = (10..=250)
        .step_by(10)
        .map(|s| format!("{{\"step\": {s}, \"loss\": {}}}\n", 3.0 - s as f64 / 200.0))
        .collect();
    std::fs::write(d.path().join("metrics.jsonl"), log).unwrap();
    let v = one("bn_drift", d.path(), &[]);
    eprintln!("DBG {v:#?}");
    assert_eq!(v.status, Status::Pass, "{v:#?}");
    assert!(v.measured.contains("all training"), "{v:#?}");
    for (probe, facts) in [
        ("identical_tensors", &[][..]),
        ("frozen_drift", &["frozen=conv"][..]),
    ] {
        let v = one(probe, d.path(), facts);
        assert!(v.measured.contains("100 and 200"), "{probe}: {v:#?}");
    }
}

#[test]
fn a_norm_gain_is_told_by_its_shape_and_statistics_not_its_name() {
    let field = |run: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/field")
            .join(run)
    };
    // DeepSpeed TinyLM: its LayerNorm is `norm.weight` (1-D, no running_mean beside it), in
    // one decayed group with the biases: O6.
    let v = one(
        "decay_groups",
        &field("deepspeed_zero2_no_decay_split"),
        &[],
    );
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O6", Status::Warn, "decayed_1d"),
        "{v:#?}"
    );
    assert!(v.message.contains("norm.weight"), "{}", v.message);
    // Ignite's conv net has no normalisation layer: only biases are decayed, the classic
    // recipe (SGD, weight_decay 5e-4 on model.parameters()).
    let v = one("decay_groups", &field("ignite_healthy_sgd_cosine"), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Pass, "pass"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("no LayerNorm or RMSNorm"),
        "{}",
        v.message
    );
}

/// Adam's moments say "frozen" only while the rest of the network learns: a subset whose
/// gradient stopped while the loss sits at chance is a network whose units died (Adam at lr 0.1
/// killed two ReLU layers: 4 of 8 tensors stopped), not a frozen backbone left in the optimizer.
#[test]
fn moments_do_not_call_a_dead_network_frozen() {
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/field/plain_b6_adam_lr_dead");
    let v = one("frozen_drift", &run, &[]);
    assert_eq!(
        (v.entry.as_str(), v.status),
        ("O17", Status::Skip),
        "{v:#?}"
    );
    assert!(v.message.contains("does not learn"), "{}", v.message);
    // The frozen backbone beside a learning head still warns (see
    // fixture_frozen_in_optimizer_fails_o17_with_the_fact).
    let v = one("frozen_drift", &fx("vision_frozen_in_optimizer"), &[]);
    assert_eq!(v.status, Status::Warn, "{v:#?}");
}

/// A target network (DQN's `q_net_target`, SAC's `critic_target`) is a copy of the network
/// beside it, moved by copying every N steps, never by the optimizer: between two checkpoints
/// closer than that it sits still by design. A tensor that only happens to have "target" in its
/// name, with no twin beside it, is still judged.
#[test]
fn a_target_network_beside_its_online_twin_is_not_left_out_of_the_optimizer() {
    let d = tempfile::tempdir().unwrap();
    let (a, b, c) = (randn(64, 0.02, 1), randn(64, 0.02, 2), randn(32, 0.02, 3));
    let moved: Vec<f32> = a.iter().map(|x| x * 1.01 + 1e-3).collect();
    for (step, online) in [(10, a.clone()), (20, moved)] {
        ckpt(
            d.path(),
            step,
            &[
                t("q_net.q_net.0.weight", &[8, 8], online),
                t("q_net_target.q_net.0.weight", &[8, 8], b.clone()),
                t("target_proj.weight", &[4, 8], c.clone()),
            ],
        );
    }
    let v = one("identical_tensors", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "some_identical"),
        "{v:#?}"
    );
    assert!(
        v.message.contains("target_proj.weight") && !v.message.contains("q_net_target"),
        "{}",
        v.message
    );
}

/// A run whose newest `optimizer.pt` holds an MLP's Adam moments: weight matrices 8→256→256→1
/// and their biases, each param with its own (m, v) fill, beside a logged loss.
fn mlp_moments(dir: &Path, moments: &[(f32, f32)], losses: &[f64]) {
    let ck = dir.join("checkpoint-500");
    std::fs::create_dir_all(&ck).unwrap();
    let shapes = vec![
        vec![256, 8],
        vec![256],
        vec![256, 256],
        vec![256],
        vec![1, 256],
        vec![1],
    ];
    optim_writer::write_adam_pt_each(&ck.join("optimizer.pt"), &shapes, 500.0, moments);
    std::fs::write(ck.join("trainer_state.json"), r#"{"global_step": 500}"#).unwrap();
    let log: String = losses
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{{\"step\": {}, \"loss\": {l}}}\n", 10 * (i + 1)))
        .collect();
    std::fs::write(dir.join("metrics.jsonl"), log).unwrap();
}

/// Dead units read from Adam's moments, with known answers. When every weight matrix's m has
/// decayed to ~0 while v remembers a gradient, only biases learn: the units died (O25 fails, and
/// the stop is dated by how far m fell against v), and O17 does not call it a frozen subset.
/// A head matrix still learning is a frozen backbone (O17 warns, O25 cannot tell); a loss at
/// its floor stops every gradient's mean (neither judges).
#[test]
fn dead_units_are_read_from_adams_moments_when_every_weight_matrix_stopped() {
    let stopped = (1e-12f32, 1e-4f32); // m/√v = 1e-10: at least ln(1e-10)/ln(0.9/√0.999) ≈ 219 steps
    let live = (1e-3f32, 1e-4f32); // m/√v = 0.1
                                   // A regressor sliding to the constant prediction: 17 → 9, not at a floor.
    let falling: Vec<f64> = (0..50).map(|i| 17.0 - 8.0 * i as f64 / 49.0).collect();

    let d = tempfile::tempdir().unwrap();
    mlp_moments(
        d.path(),
        &[stopped, stopped, stopped, stopped, stopped, live],
        &falling,
    );
    let v = one("dead_units", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O25", Status::Fail, "dying"),
        "{v:#?}"
    );
    assert!(
        v.measured.contains("every one of the 3 weight matrices"),
        "{}",
        v.measured
    );
    assert!(
        v.measured.contains("5 of 6 params stopped"),
        "{}",
        v.measured
    );
    assert!(
        v.measured.contains("at least 219 optimizer steps ago"),
        "{}",
        v.measured
    );
    let v = one("frozen_drift", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status),
        ("O17", Status::Skip),
        "{v:#?}"
    );
    assert!(v.message.contains("every weight matrix"), "{}", v.message);

    // The head's matrix still learns: a backbone frozen beside it.
    let d = tempfile::tempdir().unwrap();
    mlp_moments(
        d.path(),
        &[stopped, stopped, stopped, stopped, live, live],
        &falling,
    );
    let v = one("dead_units", d.path(), &[]);
    assert_eq!(v.status, Status::Skip, "{v:#?}");
    let v = one("frozen_drift", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "moved"),
        "{v:#?}"
    );

    // A loss at its floor (its last quarter under 5% of its first): converged, not dead.
    let d = tempfile::tempdir().unwrap();
    let floor: Vec<f64> = (0..50)
        .map(|i| 17.0 * (-(i as f64) / 5.0).exp() + 0.01)
        .collect();
    mlp_moments(
        d.path(),
        &[stopped, stopped, stopped, stopped, stopped, live],
        &floor,
    );
    assert_eq!(one("dead_units", d.path(), &[]).status, Status::Skip);
}

/// PEFT wraps a classifier (`auto_mapping.base_model_class`) with no task_type and no
/// modules_to_save, and saves no head: the head was created fresh from a base without one (a
/// fail), or, with the base not on disk, perhaps (a warn). A base that already carried the head,
/// a head in modules_to_save, or a saved head tensor is fine.
#[test]
fn a_classifier_wrapped_by_lora_without_task_type_has_an_untrained_head() {
    let write = |dir: &Path, task: &str, save: &str, base_arch: Option<&str>, head: bool| {
        let cfg = format!(
            r#"{{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["query"], "task_type": {task}, "modules_to_save": {save}, "base_model_name_or_path": "/nowhere/base_model", "auto_mapping": {{"base_model_class": "BertForSequenceClassification", "parent_library": "transformers.models.bert.modeling_bert"}}}}"#
        );
        let ck = dir.join("checkpoint-200");
        std::fs::create_dir_all(&ck).unwrap();
        std::fs::write(ck.join("adapter_config.json"), cfg).unwrap();
        let mut ts = vec![
            t(
                "base_model.model.bert.encoder.layer.0.attention.self.query.lora_A.weight",
                &[4, 16],
                randn(64, 0.1, 1),
            ),
            t(
                "base_model.model.bert.encoder.layer.0.attention.self.query.lora_B.weight",
                &[16, 4],
                randn(64, 0.01, 2),
            ),
        ];
        if head {
            ts.push(t(
                "base_model.model.classifier.modules_to_save.default.weight",
                &[3, 16],
                randn(48, 0.02, 3),
            ));
        }
        write_st(&ck.join("adapter_model.safetensors"), &ts);
        if let Some(a) = base_arch {
            std::fs::create_dir_all(dir.join("base_model")).unwrap();
            std::fs::write(
                dir.join("base_model/config.json"),
                format!(r#"{{"model_type": "bert", "architectures": ["{a}"]}}"#),
            )
            .unwrap();
        }
    };
    let judge = |task: &str, save: &str, base: Option<&str>, head: bool| {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), task, save, base, head);
        one("lora_wiring", d.path(), &[])
    };
    // An MLM base (found in the run by its folder's name): the head is new.
    let v = judge("null", "null", Some("BertForMaskedLM"), false);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O21", Status::Fail, "head_untrained"),
        "{v:#?}"
    );
    assert!(v.message.contains("task_type=\"SEQ_CLS\""), "{}", v.message);
    // The base not on disk: it may have carried a trained head.
    let v = judge("null", "null", None, false);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "head_untrained"),
        "{v:#?}"
    );
    // A trained classifier as the base, the head listed, or saved: pass.
    for (task, save, base, head) in [
        ("null", "null", Some("BertForSequenceClassification"), false),
        ("null", r#"["classifier"]"#, Some("BertForMaskedLM"), false),
        ("null", "null", Some("BertForMaskedLM"), true),
        (
            r#""SEQ_CLS""#,
            r#"["classifier"]"#,
            Some("BertForMaskedLM"),
            true,
        ),
    ] {
        let v = judge(task, save, base, head);
        assert_eq!(
            v.status,
            Status::Pass,
            "{task} {save} {base:?} {head}: {v:#?}"
        );
    }
}

/// A fine-tune (its start weights kept in `base_model/`, which makes the run's init pretrained)
/// training the whole model at one Adam LR of 1e-3: O19 warns when that LR hits the backbone
/// from the first step, and passes when it warms up from a small LR (the new head settles first).
#[test]
fn one_high_adam_lr_for_a_whole_fine_tune_warns_unless_it_warms_up() {
    let run = |lrs: &[f64]| {
        let d = tempfile::tempdir().unwrap();
        let tensors = [
            t("backbone.conv.weight", &[16, 16], randn(256, 0.05, 1)),
            t("head.weight", &[4, 16], randn(64, 0.05, 2)),
        ];
        write_st(&d.path().join("base_model/model.safetensors"), &tensors);
        let moved: Vec<_> = tensors
            .iter()
            .map(|(n, s, v)| {
                (
                    *n,
                    s.clone(),
                    v.iter().map(|x| x * 1.01).collect::<Vec<f32>>(),
                )
            })
            .collect();
        ckpt(d.path(), 100, &moved);
        let ck = d.path().join("checkpoint-100");
        optim_writer::write_adam_pt(
            &ck.join("optimizer.pt"),
            &[vec![16, 16], vec![4, 16]],
            100.0,
            1e-3,
            1e-6,
        );
        let log: Vec<String> = lrs
            .iter()
            .enumerate()
            .map(|(i, lr)| {
                format!(
                    r#"{{"step": {}, "loss": {}, "learning_rate": {lr}}}"#,
                    10 * (i + 1),
                    1.5 - 0.1 * i as f64
                )
            })
            .collect();
        std::fs::write(
            ck.join("trainer_state.json"),
            format!(
                r#"{{"global_step": 100, "log_history": [{}]}}"#,
                log.join(",")
            ),
        )
        .unwrap();
        one("group_lr", d.path(), &[])
    };
    let v = run(&[1e-3; 10]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O19", Status::Warn, "shared_high_lr"),
        "{v:#?}"
    );
    let v = run(&[1e-4, 4e-4, 7e-4, 1e-3, 9e-4, 8e-4, 7e-4, 6e-4, 5e-4, 4e-4]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Pass, "pass"),
        "{v:#?}"
    );
    assert!(v.message.contains("warms up"), "{}", v.message);
}

/// Every weight byte-identical between two checkpoints: no update landed (O4), unless the
/// optimizer stepped through them with a live gradient, when the updates were written over (F7:
/// a copy loaded back into the model, as a target-network sync written backwards).
#[test]
fn identical_checkpoints_after_real_optimizer_steps_were_written_over() {
    let write = |with_optimizer: bool| {
        let d = tempfile::tempdir().unwrap();
        let tensors = [
            t("net.0.weight", &[16, 16], randn(256, 0.05, 1)),
            t("net.2.weight", &[4, 16], randn(64, 0.05, 2)),
        ];
        for step in [100, 200] {
            ckpt(d.path(), step, &tensors);
        }
        if with_optimizer {
            optim_writer::write_adam_pt(
                &d.path().join("checkpoint-200/optimizer.pt"),
                &[vec![16, 16], vec![4, 16]],
                200.0,
                1e-3,
                1e-6,
            );
        }
        d
    };
    let d = write(false);
    let v = one("identical_tensors", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.outcome.as_str()),
        ("O4", "all_identical"),
        "{v:#?}"
    );
    let d = write(true);
    let v = one("identical_tensors", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("F7", Status::Fail, "all_identical"),
        "{v:#?}"
    );
    assert!(v.message.contains("Adam's step count 200"), "{}", v.message);
}

#[test]
fn an_ema_copy_saved_beside_the_weights_that_never_moves_was_never_updated() {
    // timm's CheckpointSaver: {"state_dict", "state_dict_ema"} in each checkpoint file.
    let write = |dir: &Path, step: u64, raw: f32, ema: f32| {
        optim_writer::write_state_dicts_pt(
            &dir.join(format!("checkpoint-{step}.pt")),
            &[
                (
                    "state_dict",
                    vec![
                        ("head.weight", vec![4, 8], raw),
                        ("head.bias", vec![4], raw),
                    ],
                ),
                (
                    "state_dict_ema",
                    vec![
                        ("head.weight", vec![4, 8], ema),
                        ("head.bias", vec![4], ema),
                    ],
                ),
            ],
        )
    };
    let d = tempfile::tempdir().unwrap();
    write(d.path(), 100, 0.1, 0.5);
    write(d.path(), 200, 0.2, 0.5);
    let v = one("ema_weights", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("DF2", Status::Fail, "frozen"),
        "{v:#?}"
    );
    assert_eq!(v.values["compared"], 2.0);
    // An EMA that follows the weights, even slowly, is updated: not this finding (and the two
    // copies under one file are told apart, not read as the same tensors).
    let d = tempfile::tempdir().unwrap();
    write(d.path(), 100, 0.1, 0.5);
    write(d.path(), 200, 0.2, 0.499);
    assert_ne!(one("ema_weights", d.path(), &[]).outcome, "frozen");
    // The raw weights did not move either: nothing trained between the two saves.
    let d = tempfile::tempdir().unwrap();
    write(d.path(), 100, 0.1, 0.5);
    write(d.path(), 200, 0.1, 0.5);
    assert_ne!(one("ema_weights", d.path(), &[]).outcome, "frozen");
}

#[test]
fn batchnorm_stats_that_stop_while_the_layers_learn_mean_eval_mode_after_validation() {
    // model.train() never called again after the first validation: from then on BatchNorm's
    // weight and bias learn, its running statistics and batch count stand still.
    let d = tempfile::tempdir().unwrap();
    let bn = |step: u64, w: f32, mean: f32| {
        vec![
            t("conv.weight", &[8, 8], randn(64, 0.1, step)),
            t("bn.weight", &[8], vec![w; 8]),
            t("bn.bias", &[8], vec![w - 1.0; 8]),
            t("bn.running_mean", &[8], vec![mean; 8]),
            t("bn.running_var", &[8], vec![0.7; 8]),
        ]
    };
    ckpt(d.path(), 100, &bn(100, 1.01, 0.3));
    ckpt(d.path(), 200, &bn(200, 1.02, 0.3));
    ckpt(d.path(), 300, &bn(300, 1.03, 0.3));
    let v = one("bn_drift", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O5", Status::Fail, "eval_mode"),
        "{v:#?}"
    );
    // Statistics that kept moving: train mode, not this finding.
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 100, &bn(100, 1.01, 0.3));
    ckpt(d.path(), 300, &bn(300, 1.03, 0.31));
    assert_ne!(one("bn_drift", d.path(), &[]).outcome, "eval_mode");
    // A BatchNorm frozen whole (weight, bias and statistics: a frozen backbone kept in eval mode
    // on purpose) is not this finding either.
    let d = tempfile::tempdir().unwrap();
    ckpt(d.path(), 100, &bn(100, 1.01, 0.3));
    ckpt(d.path(), 300, &bn(300, 1.01, 0.3));
    assert_ne!(one("bn_drift", d.path(), &[]).outcome, "eval_mode");
}
