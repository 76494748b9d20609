//! Batch and config probes: the fixture runs, synthetic batches with known answers (written as
//! safetensors into a temporary folder), and odd inputs (NaN, empty, zero-size, unreadable).

use std::path::{Path, PathBuf};

mod common;

use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::{run_probe, Params, ProbeCtx, Status, Verdict};
use mltriage_probes::probes::{batch, config, smoke};
use mltriage_probes::run::Run;

/// The probes over batch dumps and configs.
fn specs() -> impl Iterator<Item = &'static mltriage_probes::probe::ProbeSpec> {
    batch::SPECS.iter().chain(config::SPECS).chain(smoke::SPECS)
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures");

fn fixture(rel: &str) -> PathBuf {
    Path::new(FIXTURES).join(rel)
}

/// Runs probe `id` on the run at `dir` with `facts`; checks the outcome labels against the spec.
fn probe(id: &str, dir: &Path, facts: &[&str]) -> Vec<Verdict> {
    let spec = specs()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("no probe {id}"));
    let run = Run::discover(dir).unwrap();
    let facts = Facts::from_args(facts).unwrap();
    let params = common::thresholds(id);
    let compute = Compute::cpu();
    let ctx = ProbeCtx {
        run: &run,
        facts: &facts,
        profile: &mltriage_probes::profile::Profile::of(&run, &facts),
        params: &params,
        compute: &compute,
        baseline: None,
    };
    let out = run_probe(spec, &ctx);
    assert!(!out.is_empty());
    for v in &out {
        assert!(
            spec.outcomes.contains(&v.outcome.as_str()),
            "{id}: outcome {:?} not in {:?}",
            v.outcome,
            spec.outcomes
        );
        assert!(
            spec.entries.contains(&v.entry.as_str()),
            "{id}: entry {:?} not in {:?}",
            v.entry,
            spec.entries
        );
    }
    out
}

fn one(id: &str, dir: &Path, facts: &[&str]) -> Verdict {
    let mut v = probe(id, dir, facts);
    assert_eq!(v.len(), 1, "{id}: {v:?}");
    v.remove(0)
}

fn expect(v: &Verdict, status: Status, outcome: &str) {
    assert_eq!((v.status, v.outcome.as_str()), (status, outcome), "{v:#?}");
}

// ---------------------------------------------------------------------------------------
// Writing synthetic batches

enum Data {
    I64(Vec<i64>),
    F32(Vec<f32>),
    U8(Vec<u8>),
}

fn t_i64(name: &str, shape: &[usize], v: Vec<i64>) -> (String, Vec<usize>, Data) {
    (name.to_string(), shape.to_vec(), Data::I64(v))
}
fn t_f32(name: &str, shape: &[usize], v: Vec<f32>) -> (String, Vec<usize>, Data) {
    (name.to_string(), shape.to_vec(), Data::F32(v))
}

/// Writes a safetensors file: 8-byte LE header length, JSON header, raw LE bytes.
fn write_st(path: &Path, tensors: &[(String, Vec<usize>, Data)]) {
    let mut header = serde_json::Map::new();
    let mut bytes: Vec<u8> = Vec::new();
    for (name, shape, data) in tensors {
        let (dt, raw): (&str, Vec<u8>) = match data {
            Data::I64(v) => ("I64", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            Data::F32(v) => ("F32", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            Data::U8(v) => ("U8", v.clone()),
        };
        let a = bytes.len();
        bytes.extend_from_slice(&raw);
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": dt, "shape": shape, "data_offsets": [a, bytes.len()]}),
        );
    }
    let mut h = serde_json::to_vec(&serde_json::Value::Object(header)).unwrap();
    while h.len() % 8 != 0 {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    out.extend_from_slice(&bytes);
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(path, out).unwrap();
}

/// A temporary run holding `batch.safetensors` with `tensors` and, if given, `config.json`.
fn run_with(
    tensors: &[(String, Vec<usize>, Data)],
    config: Option<serde_json::Value>,
) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    write_st(&d.path().join("batch.safetensors"), tensors);
    if let Some(c) = config {
        std::fs::write(
            d.path().join("config.json"),
            serde_json::to_vec(&c).unwrap(),
        )
        .unwrap();
    }
    d
}

/// Deterministic pseudo-random numbers (xorshift), uniform in [0, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (a, b) = (self.next().max(1e-12), self.next());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }
}

/// Rows of token ids 10.. with `pads[r]` pad positions (id `pad`) on `side`; mask and labels
/// (= input_ids, -100 on pads when `mask_pads`).
fn padded_lm(
    rows: usize,
    len: usize,
    pads: &[usize],
    left: bool,
    pad: i64,
    mask_pads: bool,
) -> Vec<(String, Vec<usize>, Data)> {
    let (mut ids, mut mask, mut labels) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rows {
        let p = pads.get(r).copied().unwrap_or(0);
        for i in 0..len {
            let is_pad = if left { i < p } else { i >= len - p };
            let id = if is_pad {
                pad
            } else {
                10 + ((r * 7 + i) % 50) as i64
            };
            ids.push(id);
            mask.push(!is_pad as i64);
            labels.push(if is_pad && mask_pads { -100 } else { id });
        }
    }
    vec![
        t_i64("input_ids", &[rows, len], ids),
        t_i64("attention_mask", &[rows, len], mask),
        t_i64("labels", &[rows, len], labels),
    ]
}

fn lm_config(pad: Option<i64>) -> serde_json::Value {
    serde_json::json!({"model_type": "llama", "vocab_size": 100, "pad_token_id": pad, "eos_token_id": 2, "bos_token_id": 1, "max_position_embeddings": 64, "rope_theta": 10000.0})
}

// ---------------------------------------------------------------------------------------
// Fixtures

#[test]
fn left_padded_sft_fixture_fails_pad_side() {
    let d = fixture("llm_left_pad_sft");
    let v = one("pad_side", &d, &["phase=sft"]);
    expect(&v, Status::Fail, "wrong_side");
    assert_eq!(v.entry, "L1");
    assert!(v.measured.contains("left"), "{}", v.measured);
    // Without the phase: the measured side is still reported; labels make it a training batch.
    let v = one("pad_side", &d, &[]);
    expect(&v, Status::Warn, "wrong_side");
    assert!(v.measured.contains("left"));
    // Its labels and pad id are fine: L1 must be the finding.
    expect(&one("label_mask", &d, &["phase=sft"]), Status::Pass, "pass");
    expect(&one("pad_token", &d, &["phase=sft"]), Status::Pass, "pass");
    expect(
        &one("packing_positions", &d, &["phase=sft"]),
        Status::Pass,
        "pass",
    );
    // For generation, left is right.
    expect(
        &one("pad_side", &d, &["phase=generation"]),
        Status::Pass,
        "pass",
    );
}

#[test]
fn unscaled_latents_fixture_fails_latent_std() {
    let v = one("latent_std", &fixture("diffusion_latents_unscaled"), &[]);
    expect(&v, Status::Fail, "off_scale");
    assert_eq!(v.entry, "DF3");
    let std = v.values["std"];
    assert!((std - 5.549).abs() < 0.01, "{std}");
    assert!((v.values["factor"] - 1.0 / std).abs() < 1e-9);
    assert!(v.message.contains("0.18215"), "{}", v.message);
}

#[test]
fn healthy_fixtures_get_no_fail_from_batch_probes() {
    for run in [
        "hf_healthy",
        "lm_healthy_tb",
        "vision_healthy",
        "vision_frozen_in_optimizer",
        "lm_bad_init",
        "lm_no_decay_split",
        "lm_sched_never_stepped",
    ] {
        for s in specs() {
            for v in probe(s.id, &fixture(run), &[]) {
                assert_ne!(v.status, Status::Fail, "{run} {}: {v:#?}", s.id);
                if run.starts_with("lm") || run == "hf_healthy" || run == "vision_healthy" {
                    assert_ne!(v.status, Status::Warn, "{run} {}: {v:#?}", s.id);
                }
            }
        }
    }
}

#[test]
fn vision_fixtures_pass_label_norm_balance_and_overfit() {
    for run in ["vision_healthy", "vision_frozen_in_optimizer"] {
        let d = fixture(run);
        let v = one("label_range", &d, &[]);
        expect(&v, Status::Pass, "pass");
        assert_eq!(v.values["num_classes"], 10.0);
        let v = one("input_norm", &d, &[]);
        expect(&v, Status::Pass, "pass");
        assert!(v.values.contains_key("mean_c2") && v.values.contains_key("std_c0"));
        // 16 labels with a 25% majority: small, but enough to rule out a 90% majority.
        let v = one("class_balance", &d, &[]);
        expect(&v, Status::Pass, "pass");
        assert!(v.values["p_if_imbalanced"] < 0.05, "{v:?}");
        let v = one("overfit_smoke", &d, &[]);
        // A measurement, never a pass: a linear model memorising a batch says nothing of O1.
        expect(&v, Status::Skip, "learnable");
        assert!(
            v.message.starts_with("measured, not judged"),
            "{}",
            v.message
        );
        assert!(v.measured.starts_with("cpu"), "{}", v.measured);
        assert!(v.values["loss_final"] < 0.1 * v.values["loss_initial"]);
        assert!(
            v.values["seconds"] < 2.0,
            "overfit smoke took {} s",
            v.values["seconds"]
        );
    }
}

#[test]
fn lm_fixtures_pass_token_probes() {
    let d = fixture("lm_healthy_tb");
    expect(
        &one("label_mask", &d, &["phase=pretrain"]),
        Status::Pass,
        "pass",
    );
    expect(
        &one("pad_side", &d, &["phase=pretrain"]),
        Status::Pass,
        "pass",
    );
    let v = one("rope_scaling", &d, &[]);
    expect(&v, Status::Pass, "pass");
    assert_eq!(
        (v.values["context"], v.values["max_position_embeddings"]),
        (32.0, 128.0)
    );
    // hf_healthy keeps its config inside the checkpoints.
    expect(
        &one("rope_scaling", &fixture("hf_healthy"), &[]),
        Status::Pass,
        "pass",
    );
}

// ---------------------------------------------------------------------------------------
// L1 pad side

#[test]
fn pad_side_follows_phase() {
    let right = run_with(
        &padded_lm(3, 8, &[0, 2, 5], false, 0, true),
        Some(lm_config(Some(0))),
    );
    let left = run_with(
        &padded_lm(3, 8, &[0, 2, 5], true, 0, true),
        Some(lm_config(Some(0))),
    );
    let none = run_with(&padded_lm(3, 8, &[0, 0, 0], false, 0, true), None);
    expect(
        &one("pad_side", right.path(), &["phase=sft"]),
        Status::Pass,
        "pass",
    );
    expect(
        &one("pad_side", right.path(), &["phase=pretrain"]),
        Status::Pass,
        "pass",
    );
    let v = one("pad_side", right.path(), &["phase=dpo"]);
    expect(&v, Status::Fail, "wrong_side");
    assert_eq!(v.values["wrong_rows"], 2.0);
    expect(
        &one("pad_side", right.path(), &["phase=generation"]),
        Status::Fail,
        "wrong_side",
    );
    expect(
        &one("pad_side", left.path(), &["phase=sft"]),
        Status::Fail,
        "wrong_side",
    );
    expect(
        &one("pad_side", left.path(), &["phase=dpo"]),
        Status::Pass,
        "pass",
    );
    expect(
        &one("pad_side", none.path(), &["phase=dpo"]),
        Status::Pass,
        "pass",
    );
    expect(&one("pad_side", none.path(), &[]), Status::Pass, "pass");
    // No phase, right padding: skip, with the measured side.
    let v = one("pad_side", right.path(), &[]);
    expect(&v, Status::Skip, "skip");
    assert!(
        v.message.contains("phase") && v.measured.contains("right"),
        "{v:?}"
    );
    let v = one("pad_side", right.path(), &["phase=banana"]);
    expect(&v, Status::Skip, "skip");
}

// ---------------------------------------------------------------------------------------
// L2, L7, O15 label masking

#[test]
fn label_mask_finds_scored_pads_all_masked_and_prompt() {
    // Pads keep real labels.
    let d = run_with(
        &padded_lm(4, 10, &[3, 0, 1, 6], false, 0, false),
        Some(lm_config(Some(0))),
    );
    let v = one("label_mask", d.path(), &[]);
    expect(&v, Status::Fail, "pad_scored");
    assert_eq!(v.entry, "O15");
    assert_eq!(v.values["pad_scored"], 10.0);
    let v = one("label_mask", d.path(), &["phase=sft"]);
    expect(&v, Status::Fail, "pad_scored");
    assert_eq!(v.entry, "L2");
    assert!(v.message.contains("prompt"), "{}", v.message);
    assert_eq!(one("label_mask", d.path(), &["phase=eval"]).entry, "L7");

    // Every label -100.
    let mut t = padded_lm(2, 6, &[0, 2], false, 0, true);
    t[2] = t_i64("labels", &[2, 6], vec![-100; 12]);
    let d = run_with(&t, None);
    let v = one("label_mask", d.path(), &["phase=sft"]);
    expect(&v, Status::Fail, "all_masked");
    assert_eq!(v.values["masked_frac"], 1.0);

    // SFT with labels copying input_ids (pads masked): the prompt is scored.
    let d = run_with(&padded_lm(3, 8, &[0, 2, 1], false, 0, true), None);
    let v = one("label_mask", d.path(), &["phase=sft"]);
    expect(&v, Status::Warn, "prompt_scored");
    assert!(v.message.contains("completion_only_loss"));
    // …which is fine for pretraining, or without a phase.
    expect(
        &one("label_mask", d.path(), &["phase=pretrain"]),
        Status::Pass,
        "pass",
    );
    expect(&one("label_mask", d.path(), &[]), Status::Pass, "pass");

    // SFT with the prompt masked.
    let mut t = padded_lm(2, 8, &[0, 2], false, 0, true);
    if let Data::I64(l) = &mut t[2].2 {
        for r in 0..2 {
            for i in 0..3 {
                l[r * 8 + i] = -100;
            }
        }
    }
    let d = run_with(&t, None);
    expect(
        &one("label_mask", d.path(), &["phase=sft"]),
        Status::Pass,
        "pass",
    );

    // Pretraining batch, no padding, labels == input_ids.
    let d = run_with(&padded_lm(2, 8, &[0, 0], false, 0, true), None);
    expect(
        &one("label_mask", d.path(), &["phase=pretrain"]),
        Status::Pass,
        "pass",
    );
}

// ---------------------------------------------------------------------------------------
// L3 pad token

#[test]
fn pad_token_unset_and_out_of_range() {
    // Config without a pad id while the batch pads with 0 (Llama-2's <unk>), masked in the
    // attention and the labels: harmless, explained.
    let d = run_with(
        &padded_lm(2, 8, &[0, 3], false, 0, true),
        Some(lm_config(None)),
    );
    let v = one("pad_token", d.path(), &[]);
    expect(&v, Status::Pass, "pass");
    assert!(
        v.message.contains("id 0") && v.message.contains("harmless"),
        "{}",
        v.message
    );
    assert!(v.measured.contains("null"), "{}", v.measured);
    // Padded with EOS (the recommended reuse), only the config mirror missing: fine too.
    let e = run_with(
        &padded_lm(2, 8, &[0, 3], false, 2, true),
        Some(lm_config(None)),
    );
    let v = one("pad_token", e.path(), &[]);
    expect(&v, Status::Pass, "pass");
    assert!(v.message.contains("(EOS)"), "{}", v.message);
    // The fact overrides the config.
    expect(
        &one("pad_token", d.path(), &["pad_token_id=0"]),
        Status::Pass,
        "pass",
    );
    // Pads with a different id than configured.
    let d = run_with(
        &padded_lm(2, 8, &[0, 3], false, 2, true),
        Some(lm_config(Some(0))),
    );
    expect(&one("pad_token", d.path(), &[]), Status::Warn, "unset");
    // A new pad token past the vocabulary.
    let d = run_with(
        &padded_lm(2, 8, &[0, 3], false, 100, true),
        Some(lm_config(Some(100))),
    );
    let v = one("pad_token", d.path(), &[]);
    expect(&v, Status::Fail, "out_of_range");
    assert!(v.message.contains("resize_token_embeddings"));
    // Vocabulary from the fact, no config.
    let d = run_with(&padded_lm(2, 8, &[0, 0], false, 0, true), None);
    expect(
        &one("pad_token", d.path(), &["vocab_size=20"]),
        Status::Fail,
        "out_of_range",
    );
    // No padding, in range.
    let d = run_with(
        &padded_lm(2, 8, &[0, 0], false, 0, true),
        Some(lm_config(None)),
    );
    expect(&one("pad_token", d.path(), &[]), Status::Pass, "pass");
    // Padding, no config and no fact: nothing to compare against.
    let d = run_with(&padded_lm(2, 8, &[0, 3], false, 0, true), None);
    expect(&one("pad_token", d.path(), &[]), Status::Skip, "skip");
}

// ---------------------------------------------------------------------------------------
// L4 packing

/// Two rows, each three documents of 4 tokens opening with BOS (1) and ending in EOS (2):
/// [1 5 6 2 | 1 8 9 2 | 1 11 12 2].
fn packed_ids() -> Vec<i64> {
    let row: Vec<i64> = vec![1, 5, 6, 2, 1, 8, 9, 2, 1, 11, 12, 2];
    row.iter().chain(row.iter()).copied().collect()
}

#[test]
fn packed_rows_need_position_resets() {
    let arange: Vec<i64> = (0..2).flat_map(|_| 0..12).collect();
    let reset: Vec<i64> = (0..6).flat_map(|_| 0..4).collect();
    let cfg = Some(lm_config(None));
    let no_reset = run_with(
        &[
            t_i64("input_ids", &[2, 12], packed_ids()),
            t_i64("position_ids", &[2, 12], arange),
        ],
        cfg.clone(),
    );
    // EOS→BOS boundaries inside rows while position_ids never restart: the L4 finding.
    let v = one("packing_positions", no_reset.path(), &[]);
    expect(&v, Status::Fail, "no_reset");
    assert_eq!(v.values["missing_resets"], 4.0);
    assert!(v.measured.contains("EOS→BOS"), "{}", v.measured);
    let ok = run_with(
        &[
            t_i64("input_ids", &[2, 12], packed_ids()),
            t_i64("position_ids", &[2, 12], reset.clone()),
        ],
        cfg.clone(),
    );
    expect(
        &one("packing_positions", ok.path(), &[]),
        Status::Pass,
        "pass",
    );
    // No position_ids: a fail when packing is declared, a warning when only inferred.
    let none = run_with(&[t_i64("input_ids", &[2, 12], packed_ids())], cfg.clone());
    expect(
        &one("packing_positions", none.path(), &["packing=true"]),
        Status::Fail,
        "no_reset",
    );
    expect(
        &one("packing_positions", none.path(), &[]),
        Status::Warn,
        "no_reset",
    );
    expect(
        &one("packing_positions", none.path(), &["packing=false"]),
        Status::Pass,
        "pass",
    );
    // No config: the EOS and BOS ids come from the facts; EOS alone is not enough.
    let d = run_with(&[t_i64("input_ids", &[2, 12], packed_ids())], None);
    expect(
        &one("packing_positions", d.path(), &[]),
        Status::Skip,
        "skip",
    );
    let v = one("packing_positions", d.path(), &["eos_token_id=2"]);
    expect(&v, Status::Skip, "skip");
    assert!(v.message.contains("packing="), "{}", v.message);
    expect(
        &one(
            "packing_positions",
            d.path(),
            &["eos_token_id=2", "bos_token_id=1"],
        ),
        Status::Warn,
        "no_reset",
    );
    // Packing declared, no EOS known: the resets themselves decide.
    let arange: Vec<i64> = (0..2).flat_map(|_| 0..12).collect();
    let d = run_with(
        &[
            t_i64("input_ids", &[2, 12], packed_ids()),
            t_i64("position_ids", &[2, 12], arange),
        ],
        None,
    );
    expect(
        &one("packing_positions", d.path(), &["packing=true"]),
        Status::Fail,
        "no_reset",
    );
    // Position resets alone show packing (no EOS/BOS id needed).
    let d = run_with(
        &[
            t_i64("input_ids", &[2, 12], packed_ids()),
            t_i64("position_ids", &[2, 12], reset),
        ],
        None,
    );
    let v = one("packing_positions", d.path(), &[]);
    expect(&v, Status::Pass, "pass");
    assert!(
        v.measured.contains("position_ids restart"),
        "{}",
        v.measured
    );
    // One document per row: not packed.
    let d = run_with(&padded_lm(2, 8, &[0, 2], false, 0, true), cfg);
    expect(
        &one("packing_positions", d.path(), &[]),
        Status::Pass,
        "pass",
    );
}

/// Multi-turn chat rows (Llama-3 style): BOS once, then every turn ends with `<|eot_id|>` (3,
/// listed in eos_token_id beside 2), no position reset: not evidence of packing.
#[test]
fn multi_turn_chat_rows_are_not_inferred_as_packed() {
    let row: Vec<i64> = vec![1, 20, 21, 22, 3, 30, 31, 32, 3, 40, 41, 42, 3, 0, 0, 0];
    let mask: Vec<i64> = row
        .iter()
        .enumerate()
        .map(|(i, _)| (i < 13) as i64)
        .collect();
    let ids: Vec<i64> = row.iter().chain(row.iter()).copied().collect();
    let mask: Vec<i64> = mask.iter().chain(mask.iter()).copied().collect();
    let positions: Vec<i64> = (0..2).flat_map(|_| 0..16).collect();
    let cfg = serde_json::json!({"model_type": "llama", "vocab_size": 100, "pad_token_id": 0, "eos_token_id": [2, 3], "bos_token_id": 1});
    for with_pos in [false, true] {
        let mut t = vec![
            t_i64("input_ids", &[2, 16], ids.clone()),
            t_i64("attention_mask", &[2, 16], mask.clone()),
        ];
        if with_pos {
            t.push(t_i64("position_ids", &[2, 16], positions.clone()));
        }
        let d = run_with(&t, Some(cfg.clone()));
        let v = one("packing_positions", d.path(), &[]);
        expect(&v, Status::Skip, "skip");
        assert!(v.message.contains("--fact packing"), "{}", v.message);
        expect(
            &one("packing_positions", d.path(), &["packing=false"]),
            Status::Pass,
            "pass",
        );
    }
    // The same rows with an EOS→BOS boundary in one of them are inferred as packed.
    let mut ids2 = ids.clone();
    ids2[5] = 1;
    let d = run_with(
        &[
            t_i64("input_ids", &[2, 16], ids2),
            t_i64("attention_mask", &[2, 16], mask),
            t_i64("position_ids", &[2, 16], positions),
        ],
        Some(cfg),
    );
    let v = one("packing_positions", d.path(), &[]);
    expect(&v, Status::Fail, "no_reset");
    assert_eq!(v.values["missing_resets"], 1.0);
}

/// Without an attention_mask the pads are read from input_ids: runs of the pad id at the row
/// ends (or of EOS, at least `min_eos_run` long, when pad == EOS / pad unknown).
#[test]
fn pad_side_inferred_from_input_ids_without_attention_mask() {
    let no_mask = |left: bool, pad: i64| {
        let mut t = padded_lm(3, 8, &[0, 2, 5], left, pad, true);
        t.remove(1);
        t
    };
    let left = run_with(&no_mask(true, 0), Some(lm_config(Some(0))));
    let v = one("pad_side", left.path(), &["phase=sft"]);
    expect(&v, Status::Fail, "wrong_side");
    assert_eq!(v.values["wrong_rows"], 2.0);
    assert_eq!(v.values["pads_inferred"], 1.0);
    assert!(
        v.measured.contains("inferred from input_ids"),
        "{}",
        v.measured
    );
    assert!(
        v.evidence[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("runs of pad id 0")),
        "{:?}",
        v.evidence
    );
    expect(
        &one("pad_side", left.path(), &["phase=dpo"]),
        Status::Pass,
        "pass",
    );
    let right = run_with(&no_mask(false, 0), Some(lm_config(Some(0))));
    expect(
        &one("pad_side", right.path(), &["phase=sft"]),
        Status::Pass,
        "pass",
    );
    // pad == EOS (config pad null, EOS 2): only a warning, since a real EOS looks the same.
    let eos_left = run_with(&no_mask(true, 2), Some(lm_config(None)));
    let v = one("pad_side", eos_left.path(), &["phase=sft"]);
    expect(&v, Status::Warn, "wrong_side");
    assert!(v.measured.contains("EOS"), "{}", v.measured);
    // A single EOS closing a right-padded row is the text's end, not padding.
    let eos_right = run_with(&no_mask(false, 2), Some(lm_config(None)));
    let v = one("pad_side", eos_right.path(), &["phase=sft"]);
    expect(&v, Status::Pass, "pass");
    assert_eq!(v.values["right_rows"], 2.0);
    // Nothing to recognise the pads by.
    let d = run_with(&no_mask(true, 0), None);
    let v = one("pad_side", d.path(), &["phase=sft"]);
    expect(&v, Status::Skip, "skip");
    assert!(v.message.contains("no attention_mask"), "{}", v.message);
}

/// Rows whose every label is -100: a fail when the whole batch is, a warning with the fraction
/// when some rows are (the prompt longer than max_length), nothing for all-pad rows.
#[test]
fn fully_masked_rows_warn_and_all_masked_fails() {
    // Four rows, prompt (3 tokens) masked; row 2 lost its whole response.
    let mut t = padded_lm(4, 8, &[0, 2, 0, 1], false, 0, true);
    if let Data::I64(l) = &mut t[2].2 {
        for r in 0..4 {
            for i in 0..3 {
                l[r * 8 + i] = -100;
            }
        }
        for x in &mut l[16..24] {
            *x = -100;
        }
    }
    let d = run_with(&t, Some(lm_config(Some(0))));
    let v = one("label_mask", d.path(), &["phase=sft"]);
    expect(&v, Status::Warn, "all_masked");
    assert_eq!(v.entry, "L2");
    assert_eq!(v.values["rows_fully_masked"], 1.0);
    assert_eq!(v.values["rows_fully_masked_frac"], 0.25);
    assert!(v.message.contains("25.0%") && v.message.contains("max_length"));
    // An all-pad row (no real token) fully masked is correct.
    let mut t = padded_lm(3, 8, &[0, 8, 2], false, 0, true);
    if let Data::I64(l) = &mut t[2].2 {
        for r in 0..3 {
            l[r * 8] = -100;
        }
    }
    let d = run_with(&t, Some(lm_config(Some(0))));
    let v = one("label_mask", d.path(), &["phase=sft"]);
    expect(&v, Status::Pass, "pass");
    assert_eq!(v.values["rows_fully_masked"], 0.0);
    // Every row masked: the loss is 0.
    let mut t = padded_lm(2, 8, &[0, 2], false, 0, true);
    t[2] = t_i64("labels", &[2, 8], vec![-100; 16]);
    let d = run_with(&t, None);
    expect(
        &one("label_mask", d.path(), &["phase=sft"]),
        Status::Fail,
        "all_masked",
    );
}

/// L3 fails only on real pad-token failures: scored pads, pad == EOS masking the real EOS,
/// sequence classification without (or with another) config pad id, no pad token at all.
#[test]
fn pad_token_fails_only_on_real_failures() {
    // Pads (id 0, config null) scored in labels.
    let d = run_with(
        &padded_lm(2, 8, &[0, 3], false, 0, false),
        Some(lm_config(None)),
    );
    let v = one("pad_token", d.path(), &[]);
    expect(&v, Status::Fail, "unset");
    assert_eq!(v.values["pad_scored"], 3.0);
    // Pad == EOS (2): scored pads teach endless EOS.
    let d = run_with(
        &padded_lm(2, 8, &[0, 3], false, 2, false),
        Some(lm_config(Some(2))),
    );
    let v = one("pad_token", d.path(), &[]);
    expect(&v, Status::Fail, "unset");
    assert!(v.message.contains("emitting EOS"), "{}", v.message);
    // Pad == EOS and the collator masked every EOS, the real one ending each text too.
    let eos_rows = |mask_real_eos: bool| {
        let mut t = padded_lm(2, 8, &[1, 3], false, 2, true);
        let ends = [6usize, 8 + 4];
        if let Data::I64(v) = &mut t[0].2 {
            for &k in &ends {
                v[k] = 2;
            }
        }
        if let Data::I64(l) = &mut t[2].2 {
            for &k in &ends {
                l[k] = if mask_real_eos { -100 } else { 2 };
            }
        }
        t
    };
    let d = run_with(&eos_rows(true), Some(lm_config(Some(2))));
    let v = one("pad_token", d.path(), &[]);
    expect(&v, Status::Fail, "unset");
    assert!(v.message.contains("never learns to stop"), "{}", v.message);
    assert_eq!(v.values["eos_masked_rows"], 2.0);
    let d = run_with(&eos_rows(false), Some(lm_config(Some(2))));
    let v = one("pad_token", d.path(), &[]);
    expect(&v, Status::Pass, "pass");
    assert!(v.message.contains("stays in the loss"), "{}", v.message);
    // Sequence classification: config pad null is a fail (even without padding) …
    let seqcls = |pad: Option<i64>, fill: i64| {
        let mut t = padded_lm(2, 8, &[0, 3], false, fill, true);
        t[2] = t_i64("labels", &[2], vec![0, 1]);
        let mut c = lm_config(pad);
        c["architectures"] = serde_json::json!(["LlamaForSequenceClassification"]);
        c["num_labels"] = serde_json::json!(2);
        run_with(&t, Some(c))
    };
    let v = one("pad_token", seqcls(None, 2).path(), &[]);
    expect(&v, Status::Fail, "unset");
    assert!(
        v.message.contains("Cannot handle batch sizes"),
        "{}",
        v.message
    );
    // … and so is a pad id the batch does not pad with (a pad position is pooled).
    let v = one("pad_token", seqcls(Some(0), 2).path(), &[]);
    expect(&v, Status::Fail, "unset");
    assert!(v.message.contains("pad position"), "{}", v.message);
    expect(
        &one("pad_token", seqcls(Some(2), 2).path(), &[]),
        Status::Pass,
        "pass",
    );
    // The tokenizer has no pad token at all, yet the batch is padded.
    let d = run_with(
        &padded_lm(2, 8, &[0, 3], false, 0, true),
        Some(lm_config(None)),
    );
    let v = one("pad_token", d.path(), &["pad_token_id=none"]);
    expect(&v, Status::Fail, "unset");
    assert!(v.message.contains("Asking to pad"), "{}", v.message);
    // Config null, padded with 0, no labels to check: a warning asking to verify; for
    // generation, a pass.
    let mut t = padded_lm(2, 8, &[0, 3], false, 0, true);
    t.remove(2);
    let d = run_with(&t, Some(lm_config(None)));
    expect(&one("pad_token", d.path(), &[]), Status::Warn, "unset");
    expect(
        &one("pad_token", d.path(), &["phase=generation"]),
        Status::Pass,
        "pass",
    );
}

/// The tolerances read from probes.yaml change the answers.
#[test]
fn batch_thresholds_come_from_the_playbook() {
    let spec = |id: &str| specs().find(|s| s.id == id).unwrap();
    let run_p = |id: &str, dir: &Path, params: Params| {
        let run = Run::discover(dir).unwrap();
        let facts = Facts::new();
        let compute = Compute::cpu();
        let ctx = ProbeCtx {
            run: &run,
            facts: &facts,
            profile: &mltriage_probes::profile::Profile::of(&run, &facts),
            params: &params,
            compute: &compute,
            baseline: None,
        };
        run_probe(spec(id), &ctx).remove(0)
    };
    // Latents with std 1.2 / 0.18215: unscaled within the 25% tolerance, not within 5%.
    let mut rng = Rng(7);
    let lat: Vec<f32> = (0..4096)
        .map(|_| (rng.normal() * 1.2 / 0.18215) as f32)
        .collect();
    let d = run_with(&[t_f32("latents", &[4, 4, 16, 16], lat)], None);
    let v = run_p("latent_std", d.path(), common::thresholds("latent_std"));
    expect(&v, Status::Fail, "off_scale");
    assert!(v.message.contains("unscaled"), "{}", v.message);
    let v = run_p(
        "latent_std",
        d.path(),
        common::thresholds("latent_std").with("factor_tol", 0.05),
    );
    expect(&v, Status::Fail, "off_scale");
    assert!(!v.message.contains("unscaled"), "{}", v.message);
    // Pixels in [0, 1.01]: [0, 1]-scaled with a 0.02 tolerance, unscaled with the default.
    let px = pixels(4, 3, 64, |i, _| (i % 102) as f32 / 100.0);
    let d = run_with(&[t_f32("pixel_values", &[4, 3, 8, 8], px)], None);
    let v = run_p("input_norm", d.path(), common::thresholds("input_norm"));
    expect(&v, Status::Fail, "unnormalized");
    let v = run_p(
        "input_norm",
        d.path(),
        common::thresholds("input_norm").with("unit_range_tol", 0.02),
    );
    expect(&v, Status::Warn, "unnormalized");
    // A missing threshold is a skip naming it.
    let v = run_p(
        "label_mask",
        d.path(),
        Params::new().with("min_masked_sft", 0.01),
    );
    expect(&v, Status::Skip, "skip");
    assert!(v.message.contains("max_masked_rows_frac"), "{}", v.message);
}

// ---------------------------------------------------------------------------------------
// O14, V5 label range

fn pixels(n: usize, c: usize, hw: usize, mut f: impl FnMut(usize, usize) -> f32) -> Vec<f32> {
    let mut v = Vec::with_capacity(n * c * hw);
    for i in 0..n * c * hw {
        v.push(f(i, (i / hw) % c));
    }
    v
}

#[test]
fn label_range_void_and_off_by_one() {
    let cfg = Some(serde_json::json!({"num_labels": 10}));
    let px = |n: usize| t_f32("pixel_values", &[n, 3, 4, 4], vec![0.0; n * 48]);
    // Classification labels 1..10 (1-indexed).
    let d = run_with(
        &[px(10), t_i64("labels", &[10], (1..=10).collect())],
        cfg.clone(),
    );
    let v = one("label_range", d.path(), &[]);
    expect(&v, Status::Fail, "out_of_range");
    assert_eq!(v.entry, "O14");
    assert!(v.message.contains("1-indexed"), "{}", v.message);
    // A label equal to C.
    let d = run_with(
        &[px(4), t_i64("labels", &[4], vec![0, 3, 10, 2])],
        cfg.clone(),
    );
    expect(
        &one("label_range", d.path(), &[]),
        Status::Fail,
        "out_of_range",
    );
    // Negative labels other than -100.
    let d = run_with(
        &[px(4), t_i64("labels", &[4], vec![0, -1, 3, -100])],
        cfg.clone(),
    );
    expect(
        &one("label_range", d.path(), &[]),
        Status::Fail,
        "out_of_range",
    );
    // Segmentation masks with void 255.
    let mut seg: Vec<i64> = (0..2 * 16).map(|i| (i % 10) as i64).collect();
    seg[5] = 255;
    seg[20] = 255;
    let d = run_with(
        &[px(2), t_i64("labels", &[2, 4, 4], seg.clone())],
        cfg.clone(),
    );
    let v = one("label_range", d.path(), &[]);
    expect(&v, Status::Fail, "void_unmasked");
    assert_eq!(v.entry, "V5");
    assert!(v.message.contains("ignore_index=255"), "{}", v.message);
    assert_eq!(v.values["void"], 2.0);
    // Declared ignore_index=255: fine.
    expect(
        &one("label_range", d.path(), &["ignore_index=255"]),
        Status::Pass,
        "pass",
    );
    // In range.
    let d = run_with(
        &[px(4), t_i64("labels", &[4], vec![0, 9, 3, -100])],
        cfg.clone(),
    );
    expect(&one("label_range", d.path(), &[]), Status::Pass, "pass");
    // Without num_classes: skip, naming the fact, with the range measured.
    let d = run_with(&[px(4), t_i64("labels", &[4], vec![0, 9, 3, 1])], None);
    let v = one("label_range", d.path(), &[]);
    expect(&v, Status::Skip, "skip");
    assert!(
        v.message.contains("num_classes") && v.measured.contains("[0, 9]"),
        "{v:?}"
    );
    expect(
        &one("label_range", d.path(), &["num_classes=5"]),
        Status::Fail,
        "out_of_range",
    );
    // One-hot integer targets.
    let mut oh = vec![0i64; 4 * 10];
    for (i, k) in [1usize, 4, 9, 0].iter().enumerate() {
        oh[i * 10 + k] = 1;
    }
    let d = run_with(&[px(4), t_i64("labels", &[4, 10], oh)], cfg.clone());
    expect(
        &one("label_range", d.path(), &[]),
        Status::Warn,
        "out_of_range",
    );
    // Token labels are not class labels.
    let d = run_with(&padded_lm(2, 8, &[0, 2], false, 0, true), cfg);
    expect(&one("label_range", d.path(), &[]), Status::Skip, "skip");
}

// ---------------------------------------------------------------------------------------
// V1 input normalisation

#[test]
fn input_norm_detects_raw_and_unit_range_pixels() {
    let mut rng = Rng(7);
    let raw = pixels(4, 3, 64, |_, _| (rng.next() * 255.0).floor() as f32);
    let d = run_with(&[t_f32("pixel_values", &[4, 3, 8, 8], raw)], None);
    let v = one("input_norm", d.path(), &[]);
    expect(&v, Status::Fail, "unnormalized");
    assert!(
        v.message.contains("0..255") && v.message.contains("0.485"),
        "{}",
        v.message
    );
    assert!(v.values["mean_c0"] > 50.0);

    let mut rng = Rng(8);
    let unit = pixels(4, 3, 64, |_, _| rng.next() as f32);
    let d = run_with(&[t_f32("pixel_values", &[4, 3, 8, 8], unit)], None);
    expect(
        &one("input_norm", d.path(), &[]),
        Status::Warn,
        "unnormalized",
    );

    let mut rng = Rng(9);
    let norm = pixels(4, 3, 64, |_, _| rng.normal() as f32);
    let d = run_with(&[t_f32("pixel_values", &[4, 3, 8, 8], norm.clone())], None);
    let v = one("input_norm", d.path(), &[]);
    expect(&v, Status::Pass, "pass");
    assert!((v.values["std_c1"] - 1.0).abs() < 0.2);

    // Normalised twice: std far below the band.
    let twice: Vec<f32> = norm.iter().map(|x| (x - 0.45) / 0.225 * 0.05).collect();
    let d = run_with(&[t_f32("pixel_values", &[4, 3, 8, 8], twice)], None);
    expect(
        &one("input_norm", d.path(), &[]),
        Status::Fail,
        "unnormalized",
    );

    // Two dumps (train / eval), each plausible alone, normalised differently.
    let d = tempfile::tempdir().unwrap();
    let wide: Vec<f32> = norm.iter().map(|x| x * 1.8).collect();
    let narrow: Vec<f32> = norm.iter().map(|x| x * 0.7).collect();
    write_st(
        &d.path().join("train_batch.safetensors"),
        &[t_f32("pixel_values", &[4, 3, 8, 8], wide)],
    );
    write_st(
        &d.path().join("eval_batch.safetensors"),
        &[t_f32("pixel_values", &[4, 3, 8, 8], narrow)],
    );
    let v = one("input_norm", d.path(), &[]);
    expect(&v, Status::Fail, "unnormalized");
    assert!(
        v.measured.contains("eval_batch") && v.measured.contains("train_batch"),
        "{}",
        v.measured
    );
    write_st(
        &d.path().join("eval_batch.safetensors"),
        &[t_f32("pixel_values", &[4, 3, 8, 8], norm.clone())],
    );
    let v = one("input_norm", d.path(), &[]);
    expect(&v, Status::Pass, "pass");

    // Channels-last uint8 images straight from the decoder.
    let mut rng = Rng(10);
    let hwc: Vec<u8> = (0..2 * 8 * 8 * 3)
        .map(|_| (rng.next() * 256.0) as u8)
        .collect();
    let d = run_with(
        &[("pixel_values".into(), vec![2, 8, 8, 3], Data::U8(hwc))],
        None,
    );
    expect(
        &one("input_norm", d.path(), &[]),
        Status::Fail,
        "unnormalized",
    );
}

// ---------------------------------------------------------------------------------------
// V6 class balance

#[test]
fn class_balance_warns_on_a_dominant_class() {
    let px = |n: usize| t_f32("pixel_values", &[n, 1, 2, 2], vec![0.0; n * 4]);
    let mut labels = vec![0i64; 64];
    labels[3] = 1;
    let d = run_with(
        &[px(64), t_i64("labels", &[64], labels)],
        Some(serde_json::json!({"num_labels": 3})),
    );
    let v = one("class_balance", d.path(), &[]);
    expect(&v, Status::Warn, "imbalanced");
    assert!((v.values["majority_frac"] - 63.0 / 64.0).abs() < 1e-9);
    let balanced: Vec<i64> = (0..40).map(|i| i % 4).collect();
    let d = run_with(&[px(40), t_i64("labels", &[40], balanced)], None);
    expect(&one("class_balance", d.path(), &[]), Status::Pass, "pass");
    // 8 of 8 in one class: a 90% majority gives that 43% of the time, so the sample cannot
    // tell. It used to say "too few" and report pass; now it skips with the probability.
    let d = run_with(&[px(8), t_i64("labels", &[8], vec![0; 8])], None);
    let v = one("class_balance", d.path(), &[]);
    expect(&v, Status::Skip, "skip");
    assert!(v.message.contains("cannot tell"), "{}", v.message);
    // Yet 6 balanced labels already rule out a 90% majority: a pass from a tiny sample.
    let d = run_with(
        &[px(6), t_i64("labels", &[6], vec![0, 1, 2, 0, 1, 2])],
        None,
    );
    expect(&one("class_balance", d.path(), &[]), Status::Pass, "pass");
}

// ---------------------------------------------------------------------------------------
// DF3 latents

#[test]
fn latent_std_names_the_vae_family_the_channels_and_std_point_at() {
    let mut rng = Rng(12);
    let unit: Vec<f32> = (0..4 * 4 * 8 * 8).map(|_| rng.normal() as f32).collect();
    // SDXL latents left unscaled: std ≈ 1/0.13025 ≈ 7.7, not SD1.x's 5.5.
    let sdxl: Vec<f32> = unit.iter().map(|x| x / 0.13025).collect();
    let d = run_with(&[t_f32("latents", &[4, 4, 8, 8], sdxl)], None);
    let v = one("latent_std", d.path(), &[]);
    expect(&v, Status::Fail, "off_scale");
    assert!(
        v.message.contains("SDXL") && v.message.contains("0.13025"),
        "{}",
        v.message
    );
    // 16 channels: an SD3/FLUX VAE; FLUX's raw latents have std ≈ 1/0.3611.
    let mut rng = Rng(13);
    let flux: Vec<f32> = (0..2 * 16 * 8 * 8)
        .map(|_| (rng.normal() / 0.3611) as f32)
        .collect();
    let d = run_with(&[t_f32("latents", &[2, 16, 8, 8], flux)], None);
    let v = one("latent_std", d.path(), &[]);
    expect(&v, Status::Fail, "off_scale");
    assert!(
        v.message.contains("FLUX") && v.message.contains("0.3611"),
        "{}",
        v.message
    );
}

#[test]
fn latent_std_unit_vs_unscaled() {
    let mut rng = Rng(11);
    let unit: Vec<f32> = (0..4 * 4 * 8 * 8).map(|_| rng.normal() as f32).collect();
    let d = run_with(&[t_f32("latents", &[4, 4, 8, 8], unit.clone())], None);
    let v = one("latent_std", d.path(), &[]);
    expect(&v, Status::Pass, "pass");
    assert!((v.values["std"] - 1.0).abs() < 0.1);

    let big: Vec<f32> = unit.iter().map(|x| x * 5.5).collect();
    let d = run_with(&[t_f32("latents", &[4, 4, 8, 8], big)], None);
    let v = one("latent_std", d.path(), &[]);
    expect(&v, Status::Fail, "off_scale");
    assert!(v.message.contains("0.18215"), "{}", v.message);
    // With a VAE config the run's own factor is quoted.
    std::fs::create_dir_all(d.path().join("vae")).unwrap();
    std::fs::write(
        d.path().join("vae/config.json"),
        r#"{"_class_name": "AutoencoderKL", "scaling_factor": 0.18215}"#,
    )
    .unwrap();
    let v = one("latent_std", d.path(), &[]);
    expect(&v, Status::Fail, "off_scale");
    assert!(
        v.message.contains("vae.config.scaling_factor"),
        "{}",
        v.message
    );
    assert_eq!(v.evidence.len(), 2);

    // Scaled twice.
    let tiny: Vec<f32> = unit.iter().map(|x| x * 0.18215).collect();
    let d = run_with(&[t_f32("latents", &[4, 4, 8, 8], tiny)], None);
    let v = one("latent_std", d.path(), &[]);
    expect(&v, Status::Fail, "off_scale");
    assert!(v.message.contains("twice"), "{}", v.message);
}

// ---------------------------------------------------------------------------------------
// X4 image tokens

#[test]
fn image_tokens_anyres_rows_vary_and_only_a_cut_run_fails() {
    let img = 99i64;
    let row = |n: usize, len: usize| -> Vec<i64> {
        (0..len)
            .map(|i| if i >= 1 && i <= n { img } else { 5 })
            .collect()
    };
    // LLaVA-NeXT: 2 333 and 1 777 tokens are both whole images at different sizes (here 7
    // and 5 with a base of 4): healthy, though not multiples of 4.
    let ids: Vec<i64> = [row(7, 12), row(5, 12)].concat();
    let d = run_with(
        &[
            t_i64("input_ids", &[2, 12], ids),
            t_i64("image_sizes", &[2, 2], vec![336, 672, 336, 336]),
        ],
        None,
    );
    let facts = ["image_token_id=99", "image_tokens_per_image=4"];
    expect(&one("image_tokens", d.path(), &facts), Status::Pass, "pass");
    // A row that ends inside the placeholders was cut at max_length: fails, anyres or not.
    let ids: Vec<i64> = [row(7, 12), row(11, 12)].concat();
    let d = run_with(
        &[
            t_i64("input_ids", &[2, 12], ids),
            t_i64("image_sizes", &[2, 2], vec![336, 672, 336, 336]),
        ],
        None,
    );
    let v = one("image_tokens", d.path(), &facts);
    expect(&v, Status::Fail, "truncated");
    assert!(v.message.contains("row 1: 11"), "{}", v.message);
}

#[test]
fn image_tokens_truncation() {
    let img = 99i64;
    let row = |n: usize, len: usize| -> Vec<i64> {
        (0..len)
            .map(|i| if i >= 1 && i <= n { img } else { 5 })
            .collect()
    };
    let ids: Vec<i64> = [row(4, 12), row(8, 12), row(3, 12)].concat();
    let d = run_with(&[t_i64("input_ids", &[3, 12], ids)], None);
    let v = one(
        "image_tokens",
        d.path(),
        &["image_token_id=99", "image_tokens_per_image=4"],
    );
    expect(&v, Status::Fail, "truncated");
    assert!(
        v.message.contains("row 2: 3") && v.message.contains("max_length=None"),
        "{}",
        v.message
    );
    assert_eq!(v.values["rows_bad"], 1.0);
    // Whole images everywhere (a text-only row is fine).
    let ids: Vec<i64> = [row(4, 12), row(8, 12), row(0, 12)].concat();
    let d = run_with(&[t_i64("input_ids", &[3, 12], ids.clone())], None);
    expect(
        &one(
            "image_tokens",
            d.path(),
            &["image_token_id=99", "image_tokens_per_image=4"],
        ),
        Status::Pass,
        "pass",
    );
    // …unless the batch holds one image per row.
    let d = run_with(
        &[
            t_i64("input_ids", &[3, 12], ids),
            t_f32("pixel_values", &[3, 3, 2, 2], vec![0.0; 36]),
        ],
        None,
    );
    expect(
        &one(
            "image_tokens",
            d.path(),
            &["image_token_id=99", "image_tokens_per_image=4"],
        ),
        Status::Fail,
        "truncated",
    );
    // Missing facts are named; the token id may come from the config.
    let v = one("image_tokens", d.path(), &[]);
    expect(&v, Status::Skip, "skip");
    assert!(v.message.contains("image_token_id") && v.message.contains("image_tokens_per_image"));
    std::fs::write(
        d.path().join("config.json"),
        r#"{"model_type": "llava", "image_token_index": 99, "vision_config": {}}"#,
    )
    .unwrap();
    let v = one("image_tokens", d.path(), &[]);
    assert!(
        !v.message.contains("image_token_id") && v.message.contains("image_tokens_per_image"),
        "{}",
        v.message
    );
    expect(
        &one("image_tokens", d.path(), &["image_tokens_per_image=4"]),
        Status::Fail,
        "truncated",
    );
}

// ---------------------------------------------------------------------------------------
// L5 rope scaling

fn rope_run(rope: serde_json::Value) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let mut c = serde_json::json!({"model_type": "llama", "vocab_size": 32000, "max_position_embeddings": 4096, "rope_theta": 10000.0});
    if !rope.is_null() {
        c["rope_scaling"] = rope;
    }
    std::fs::write(
        d.path().join("config.json"),
        serde_json::to_vec(&c).unwrap(),
    )
    .unwrap();
    d
}

#[test]
fn rope_scaling_knows_the_base_models_context_not_a_raised_config_value() {
    // A Llama-2 fine-tune whose config.json was raised to 16384 positions, trained at 8192
    // with no rope_scaling: the model knows 4096 positions.
    let d = tempfile::tempdir().unwrap();
    let c = serde_json::json!({"model_type": "llama", "_name_or_path": "meta-llama/Llama-2-7b-hf",
        "vocab_size": 32000, "max_position_embeddings": 16384, "rope_theta": 10000.0});
    std::fs::write(
        d.path().join("config.json"),
        serde_json::to_vec(&c).unwrap(),
    )
    .unwrap();
    let v = one("rope_scaling", d.path(), &["context=8192"]);
    expect(&v, Status::Fail, "missing");
    assert!(v.measured.contains("pretrained 4096"), "{}", v.measured);
    // The same from a model card's base_model fact; an unknown base keeps the config's value.
    let v = one(
        "rope_scaling",
        d.path(),
        &["context=8192", "base_model=my-org/unknown-7b"],
    );
    expect(&v, Status::Pass, "pass");
}

#[test]
fn rope_scaling_against_context() {
    let d = rope_run(serde_json::Value::Null);
    let v = one("rope_scaling", d.path(), &["context=8192"]);
    expect(&v, Status::Fail, "missing");
    assert!(v.message.contains("yarn"), "{}", v.message);
    expect(
        &one("rope_scaling", d.path(), &["context=4096"]),
        Status::Pass,
        "pass",
    );
    // Context from the batch length when no fact is given.
    write_st(
        &d.path().join("batch.safetensors"),
        &[t_i64("input_ids", &[1, 5000], vec![3; 5000])],
    );
    expect(&one("rope_scaling", d.path(), &[]), Status::Fail, "missing");

    let d = rope_run(serde_json::json!({"rope_type": "linear", "factor": 2.0}));
    let v = one("rope_scaling", d.path(), &["context=16384"]);
    expect(&v, Status::Fail, "too_small");
    assert_eq!(v.values["needed_factor"], 4.0);
    expect(
        &one("rope_scaling", d.path(), &["context=8192"]),
        Status::Pass,
        "pass",
    );

    let d = rope_run(serde_json::json!({"rope_type": "linear", "factor": 8.0}));
    let v = one("rope_scaling", d.path(), &["context=32768"]);
    assert_eq!((v.status, v.outcome.as_str()), (Status::Warn, "pass"));
    assert!(v.message.contains("yarn"));

    // Llama-3.1 style: original length inside rope_scaling.
    let d = rope_run(
        serde_json::json!({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048}),
    );
    expect(
        &one("rope_scaling", d.path(), &["context=8192"]),
        Status::Pass,
        "pass",
    );
    expect(
        &one("rope_scaling", d.path(), &["context=16384"]),
        Status::Fail,
        "too_small",
    );

    // No config at all.
    let e = tempfile::tempdir().unwrap();
    expect(
        &one("rope_scaling", e.path(), &["context=8192"]),
        Status::Skip,
        "skip",
    );
    expect(
        &one(
            "rope_scaling",
            e.path(),
            &["context=8192", "max_position_embeddings=4096"],
        ),
        Status::Fail,
        "missing",
    );
}

// ---------------------------------------------------------------------------------------
// DF4 schedulers

fn sched(dir: &Path, rel: &str, v: serde_json::Value) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn diffusion_schedulers_must_agree() {
    let d = tempfile::tempdir().unwrap();
    let train = serde_json::json!({"_class_name": "DDPMScheduler", "beta_schedule": "scaled_linear", "num_train_timesteps": 1000, "prediction_type": "epsilon"});
    sched(d.path(), "scheduler/scheduler_config.json", train.clone());
    let v = one("diffusion_scheduler", d.path(), &[]);
    expect(&v, Status::Skip, "skip");
    assert!(
        v.message.contains("both the training and the inference"),
        "{}",
        v.message
    );

    let mut infer = train.clone();
    infer["_class_name"] = "DPMSolverMultistepScheduler".into();
    sched(d.path(), "inference/scheduler_config.json", infer.clone());
    expect(
        &one("diffusion_scheduler", d.path(), &[]),
        Status::Pass,
        "pass",
    );

    infer["prediction_type"] = "v_prediction".into();
    sched(d.path(), "inference/scheduler_config.json", infer);
    let v = one("diffusion_scheduler", d.path(), &[]);
    expect(&v, Status::Fail, "mismatch");
    assert!(
        v.measured.contains("prediction_type")
            && v.measured.contains("v_prediction")
            && v.measured.contains("inference"),
        "{}",
        v.measured
    );
    assert!(!v.measured.contains("beta_schedule"));
    assert_eq!(v.evidence.len(), 2);

    // A training copy named like a scheduler config.
    let d2 = tempfile::tempdir().unwrap();
    sched(d2.path(), "scheduler/scheduler_config.json", train.clone());
    let mut other = train.clone();
    other["num_train_timesteps"] = 500.into();
    sched(d2.path(), "train_scheduler_config.json", other);
    let v = one("diffusion_scheduler", d2.path(), &[]);
    expect(&v, Status::Fail, "mismatch");
    assert!(v.measured.contains("num_train_timesteps"), "{}", v.measured);

    // An absent key is diffusers' default.
    let d = tempfile::tempdir().unwrap();
    sched(
        d.path(),
        "a/scheduler_config.json",
        serde_json::json!({"beta_schedule": "linear", "num_train_timesteps": 1000}),
    );
    sched(
        d.path(),
        "b/scheduler_config.json",
        serde_json::json!({"beta_schedule": "linear", "prediction_type": "epsilon"}),
    );
    expect(
        &one("diffusion_scheduler", d.path(), &[]),
        Status::Pass,
        "pass",
    );
    sched(
        d.path(),
        "b/scheduler_config.json",
        serde_json::json!({"beta_schedule": "linear", "beta_end": 0.012}),
    );
    expect(
        &one("diffusion_scheduler", d.path(), &[]),
        Status::Warn,
        "mismatch",
    );
}

// ---------------------------------------------------------------------------------------
// O1 overfit smoke

#[test]
fn overfit_smoke_learnable_vs_degenerate() {
    let mut rng = Rng(12);
    let n = 16;
    let x: Vec<f32> = (0..n * 3 * 16).map(|_| rng.normal() as f32).collect();
    let y: Vec<i64> = (0..n as i64).map(|i| i % 5).collect();
    let d = run_with(
        &[
            t_f32("pixel_values", &[n, 3, 4, 4], x),
            t_i64("labels", &[n], y.clone()),
        ],
        Some(serde_json::json!({"num_labels": 5})),
    );
    let v = one("overfit_smoke", d.path(), &[]);
    expect(&v, Status::Skip, "learnable");
    assert!((v.values["loss_initial"] - 5f64.ln()).abs() < 1e-4);
    // Constant features: labels cannot be told apart.
    let d = run_with(
        &[
            t_f32("pixel_values", &[n, 3, 4, 4], vec![0.5; n * 48]),
            t_i64("labels", &[n], y),
        ],
        None,
    );
    let v = one("overfit_smoke", d.path(), &[]);
    expect(&v, Status::Warn, "cannot_overfit");
    // No class labels: skip.
    let d = run_with(&padded_lm(2, 8, &[0, 2], false, 0, true), None);
    expect(&one("overfit_smoke", d.path(), &[]), Status::Skip, "skip");
}

// ---------------------------------------------------------------------------------------
// Odd inputs

#[test]
fn odd_inputs_never_panic() {
    let nan = f32::NAN;
    let cases: Vec<Vec<(String, Vec<usize>, Data)>> = vec![
        // NaN pixels and latents.
        vec![
            t_f32("pixel_values", &[2, 3, 2, 2], vec![nan; 24]),
            t_i64("labels", &[2], vec![0, 1]),
            t_f32("latents", &[2, 4, 2, 2], vec![nan; 32]),
        ],
        vec![
            t_f32(
                "pixel_values",
                &[2, 3, 2, 2],
                (0..24)
                    .map(|i| {
                        if i == 3 {
                            f32::INFINITY
                        } else {
                            0.1 * i as f32
                        }
                    })
                    .collect(),
            ),
            t_i64("labels", &[2], vec![0, 1]),
        ],
        // Zero-size tensors.
        vec![
            t_i64("input_ids", &[0, 8], vec![]),
            t_i64("attention_mask", &[0, 8], vec![]),
            t_i64("labels", &[0, 8], vec![]),
            t_i64("position_ids", &[0, 8], vec![]),
        ],
        vec![
            t_i64("input_ids", &[2, 0], vec![]),
            t_i64("attention_mask", &[2, 0], vec![]),
            t_i64("labels", &[2, 0], vec![]),
        ],
        vec![
            t_f32("pixel_values", &[0, 3, 4, 4], vec![]),
            t_i64("labels", &[0], vec![]),
            t_f32("latents", &[0, 4, 2, 2], vec![]),
        ],
        // Scalars, mismatched shapes, float labels, all-pad rows.
        vec![
            t_i64("input_ids", &[], vec![7]),
            t_i64("attention_mask", &[], vec![1]),
            t_i64("labels", &[], vec![7]),
        ],
        vec![
            t_i64("input_ids", &[2, 4], vec![1; 8]),
            t_i64("attention_mask", &[3, 3], vec![0; 9]),
            t_i64("labels", &[2, 4], vec![1; 8]),
            t_i64("position_ids", &[8], (0..8).collect()),
        ],
        vec![
            t_f32("pixel_values", &[2, 3, 2, 2], vec![0.0; 24]),
            t_f32("labels", &[2, 3], vec![0.5; 6]),
        ],
        vec![
            t_i64("input_ids", &[2, 4], vec![0; 8]),
            t_i64("attention_mask", &[2, 4], vec![0; 8]),
            t_i64("labels", &[2, 4], vec![-100; 8]),
        ],
        vec![
            t_i64(
                "input_ids",
                &[2, 4],
                vec![i64::MAX, i64::MIN, 0, -1, 5, 6, 7, 8],
            ),
            t_i64("labels", &[2, 4], vec![i64::MIN; 8]),
        ],
        vec![
            t_f32("pixel_values", &[2, 3, 2, 2], vec![f32::MAX; 24]),
            t_i64("labels", &[2], vec![i64::MAX, -5]),
        ],
    ];
    let facts: &[&str] = &[
        "phase=sft",
        "packing=true",
        "image_token_id=0",
        "image_tokens_per_image=3",
        "num_classes=3",
        "vocab_size=10",
        "context=4",
    ];
    for (i, t) in cases.iter().enumerate() {
        let d = run_with(t, Some(lm_config(None)));
        for s in specs() {
            for v in probe(s.id, d.path(), facts) {
                assert!(!v.entry.is_empty(), "case {i} {}: {v:?}", s.id);
            }
            probe(s.id, d.path(), &[]);
        }
    }
    // NaN pixels fail input_norm; NaN latents fail latent_std.
    let d = run_with(&cases[0], None);
    expect(
        &one("input_norm", d.path(), &[]),
        Status::Fail,
        "unnormalized",
    );
    expect(&one("latent_std", d.path(), &[]), Status::Fail, "off_scale");
    // Empty tensors are skipped with a reason.
    let d = run_with(&cases[2], None);
    let v = one("pad_side", d.path(), &["phase=sft"]);
    expect(&v, Status::Skip, "skip");
    assert!(v.message.contains("empty"), "{}", v.message);
}

#[test]
fn missing_and_unreadable_batches_skip_with_reasons() {
    let e = tempfile::tempdir().unwrap();
    for s in specs() {
        let v = one(s.id, e.path(), &[]);
        expect(&v, Status::Skip, "skip");
        assert!(!v.message.is_empty());
    }
    std::fs::write(
        e.path().join("batch.safetensors"),
        b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all",
    )
    .unwrap();
    let v = one("pad_side", e.path(), &["phase=sft"]);
    expect(&v, Status::Skip, "skip");
    assert!(v.message.contains("batch.safetensors"), "{}", v.message);
    // A readable batch beside an unreadable one still answers.
    write_st(
        &e.path().join("batch_1.safetensors"),
        &padded_lm(2, 6, &[0, 2], true, 0, true),
    );
    let v = one("pad_side", e.path(), &["phase=sft"]);
    expect(&v, Status::Fail, "wrong_side");
    assert!(v.message.contains("unreadable"), "{}", v.message);
}

#[test]
fn worst_batch_file_wins() {
    let d = tempfile::tempdir().unwrap();
    write_st(
        &d.path().join("batch_0.safetensors"),
        &padded_lm(2, 6, &[0, 2], false, 0, true),
    );
    write_st(
        &d.path().join("batch_1.safetensors"),
        &padded_lm(2, 6, &[0, 2], true, 0, true),
    );
    let v = one("pad_side", d.path(), &["phase=sft"]);
    expect(&v, Status::Fail, "wrong_side");
    assert!(v.evidence[0]
        .file
        .as_ref()
        .unwrap()
        .ends_with("batch_1.safetensors"));
    assert!(v.message.contains("of 2 batch files"), "{}", v.message);
}

#[test]
fn overfit_smoke_survives_huge_class_ids() {
    // Class ids 2^40 and i64::MAX: a one-hot over max-id classes would need terabytes (or
    // overflow); the probe renumbers the distinct labels instead and still answers.
    let mut rng = Rng(3);
    let n = 8;
    let x: Vec<f32> = (0..n * 4).map(|_| rng.normal() as f32).collect();
    for big in [1i64 << 40, i64::MAX] {
        let y: Vec<i64> = (0..n as i64)
            .map(|i| if i % 2 == 0 { big } else { i % 3 })
            .collect();
        let d = run_with(
            &[
                t_f32("pixel_values", &[n, 4], x.clone()),
                t_i64("labels", &[n], y),
            ],
            None,
        );
        let v = one("overfit_smoke", d.path(), &[]);
        assert!(
            v.outcome == "learnable" || v.outcome == "cannot_overfit",
            "{big}: {v:?}"
        );
        // Four distinct classes (0, 1, 2 and the huge id): the initial loss is ln 4, not
        // ln(2^40).
        assert!((v.values["loss_initial"] - 4f64.ln()).abs() < 1e-4, "{v:?}");
    }
}

#[test]
fn truncating_a_checkpoint_while_it_is_read_is_an_error_not_sigbus() {
    // A mapped (not streamed) tensor: 256 KB, below the streaming threshold.
    use mltriage_probes::tensors::TensorFile;
    let d = tempfile::tempdir().unwrap();
    let n = 64 << 10;
    let p = d.path().join("model.safetensors");
    let h = format!(
        "{{\"w\":{{\"dtype\":\"F32\",\"shape\":[{n}],\"data_offsets\":[0,{}]}}}}",
        n * 4
    );
    let mut h = h.into_bytes();
    while h.len() % 8 != 0 {
        h.push(b' ');
    }
    let mut b = (h.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(&h);
    b.extend(std::iter::repeat_n(1.0f32.to_le_bytes(), n).flatten());
    std::fs::write(&p, b).unwrap();
    let tf = TensorFile::open(&p).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(64)
        .unwrap();
    let e = tf.to_f64_vec("w", n).unwrap_err().to_string();
    assert!(
        e.contains("shrank") && e.contains("model.safetensors"),
        "{e}"
    );
    let e = tf.compare("w", &tf, "w").unwrap_err().to_string();
    assert!(e.contains("shrank"), "{e}");
}
