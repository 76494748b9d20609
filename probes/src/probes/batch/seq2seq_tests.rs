//! Encoder–decoder batches with known answers: decoder labels judged apart from input_ids
//! (pad id left in the labels, targets without EOS) by `label_mask`, `eos_target` and
//! `pad_token`.

use std::path::Path;

use crate::device::Compute;
use crate::facts::Facts;
use crate::probe::{Params, ProbeCtx, Status, Verdict};
use crate::run::Run;

fn thresholds(id: &str) -> Params {
    crate::playbook::thresholds(include_str!("../../../../playbook/probes.yaml"))
        .expect("playbook/probes.yaml parses")
        .remove(id)
        .unwrap_or_else(|| panic!("{id} not in probes.yaml"))
}

/// Writes `batch.safetensors` (I64 tensors) and `config.json` into `dir`.
fn write_run(dir: &Path, tensors: &[(&str, [usize; 2], Vec<i64>)], config: serde_json::Value) {
    let mut header = serde_json::Map::new();
    let mut bytes: Vec<u8> = Vec::new();
    for (name, shape, v) in tensors {
        assert_eq!(shape[0] * shape[1], v.len(), "{name}");
        let a = bytes.len();
        bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        header.insert(
            name.to_string(),
            serde_json::json!({"dtype": "I64", "shape": shape, "data_offsets": [a, bytes.len()]}),
        );
    }
    let mut h = serde_json::to_vec(&serde_json::Value::Object(header)).unwrap();
    while h.len() % 8 != 0 {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    out.extend_from_slice(&bytes);
    std::fs::write(dir.join("batch.safetensors"), out).unwrap();
    std::fs::write(
        dir.join("config.json"),
        serde_json::to_vec(&config).unwrap(),
    )
    .unwrap();
}

fn ask(f: fn(&ProbeCtx) -> Vec<Verdict>, id: &str, dir: &Path, facts: &[&str]) -> Verdict {
    let run = Run::discover(dir).unwrap();
    let facts = Facts::from_args(facts).unwrap();
    let params = thresholds(id);
    let c = Compute::cpu();
    let mut out = f(&ProbeCtx {
        run: &run,
        facts: &facts,
        profile: &crate::profile::Profile::of(&run, &facts),
        params: &params,
        compute: &c,
        baseline: None,
    });
    assert_eq!(out.len(), 1, "{out:?}");
    out.remove(0)
}

fn t5_config() -> serde_json::Value {
    serde_json::json!({"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "is_encoder_decoder": true, "vocab_size": 100, "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0})
}

/// A BART-like config: pad 1, EOS 2, decoder start = EOS; `is_encoder_decoder` left out.
fn bart_config() -> serde_json::Value {
    serde_json::json!({"architectures": ["BartForConditionalGeneration"], "model_type": "bart", "vocab_size": 100, "pad_token_id": 1, "eos_token_id": 2, "bos_token_id": 0, "decoder_start_token_id": 2})
}

/// Four examples: input_ids (4, 10) right-padded with `pad`, targets of lengths 3..6 in
/// labels (4, 7): content ids 10.., then EOS when `eos` is Some, then `label_pad`.
fn seq2seq_batch(
    pad: i64,
    eos: Option<i64>,
    label_pad: i64,
    with_decoder_inputs: bool,
) -> Vec<(&'static str, [usize; 2], Vec<i64>)> {
    let (n, l, t) = (4usize, 10usize, 7usize);
    let (mut ids, mut attn, mut labels) =
        (vec![pad; n * l], vec![0i64; n * l], vec![label_pad; n * t]);
    for r in 0..n {
        for i in 0..(6 + r) {
            ids[r * l + i] = 20 + i as i64;
            attn[r * l + i] = 1;
        }
        let len = 3 + r;
        for i in 0..len {
            labels[r * t + i] = 10 + i as i64;
        }
        if let Some(e) = eos {
            labels[r * t + len] = e;
        }
    }
    let mut out = vec![
        ("input_ids", [n, l], ids),
        ("attention_mask", [n, l], attn),
        ("labels", [n, t], labels.clone()),
    ];
    if with_decoder_inputs {
        let dec: Vec<i64> = labels
            .chunks(t)
            .flat_map(|row| {
                std::iter::once(pad).chain(
                    row[..t - 1]
                        .iter()
                        .map(|&x| if x == -100 { pad } else { x }),
                )
            })
            .collect();
        out.push(("decoder_input_ids", [n, t], dec));
    }
    out
}

use super::label_mask::label_mask;
use super::pad_token::pad_token;
use super::schema::eos_target;

#[test]
fn decoder_labels_padded_with_the_pad_id_fail_and_masked_ones_pass() {
    let d = tempfile::tempdir().unwrap();
    // T5: labels padded with 0 (the pad id) instead of -100: 6+5+4+3 = 18... counted below.
    write_run(d.path(), &seq2seq_batch(0, Some(1), 0, true), t5_config());
    let v = ask(label_mask, "label_mask", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("O15", Status::Fail, "pad_scored"),
        "{v:#?}"
    );
    // Rows of 7 labels holding 4, 5, 6, 7 targets (content + EOS): 3 + 2 + 1 + 0 pads.
    assert_eq!(v.values["pad_scored"], 6.0, "{v:#?}");
    assert!(v.message.contains("6 decoder label"), "{}", v.message);
    // With phase=sft the same batch names L2.
    let v = ask(label_mask, "label_mask", d.path(), &["phase=sft"]);
    assert_eq!((v.entry.as_str(), v.status), ("L2", Status::Fail));

    // The healthy twin: -100 past each target.
    let h = tempfile::tempdir().unwrap();
    write_run(
        h.path(),
        &seq2seq_batch(0, Some(1), -100, true),
        t5_config(),
    );
    let v = ask(label_mask, "label_mask", h.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Pass, "pass"),
        "{v:#?}"
    );
    let v = ask(pad_token, "pad_token", h.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
}

#[test]
fn decoder_targets_without_eos_fail_g1_and_with_eos_pass() {
    let d = tempfile::tempdir().unwrap();
    write_run(d.path(), &seq2seq_batch(0, None, -100, true), t5_config());
    let v = ask(eos_target, "eos_target", d.path(), &[]);
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("G1", Status::Fail, "no_eos"),
        "{v:#?}"
    );
    assert_eq!((v.values["rows"], v.values["rows_with_eos"]), (4.0, 0.0));
    // No EOS but -100 padding: the mask itself is fine.
    let v = ask(label_mask, "label_mask", d.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");

    let h = tempfile::tempdir().unwrap();
    write_run(
        h.path(),
        &seq2seq_batch(0, Some(1), -100, true),
        t5_config(),
    );
    let v = ask(eos_target, "eos_target", h.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Pass, "pass"),
        "{v:#?}"
    );
    assert_eq!(v.values["rows_with_eos"], 4.0);
    // Pads left in the labels do not hide the EOS before them.
    let p = tempfile::tempdir().unwrap();
    write_run(p.path(), &seq2seq_batch(0, Some(1), 0, false), t5_config());
    let v = ask(eos_target, "eos_target", p.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
}

#[test]
fn bart_without_the_config_flag_is_known_by_its_head_and_pad_is_not_its_decoder_start() {
    // No decoder_input_ids, no is_encoder_decoder: the model type and head say seq2seq.
    let d = tempfile::tempdir().unwrap();
    write_run(
        d.path(),
        &seq2seq_batch(1, Some(2), 1, false),
        bart_config(),
    );
    let v = ask(label_mask, "label_mask", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "pad_scored"),
        "{v:#?}"
    );
    assert_eq!(v.values["pad_scored"], 6.0);
    let h = tempfile::tempdir().unwrap();
    write_run(
        h.path(),
        &seq2seq_batch(1, Some(2), -100, false),
        bart_config(),
    );
    let v = ask(label_mask, "label_mask", h.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
    let v = ask(eos_target, "eos_target", h.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
}

#[test]
fn pad_equal_to_eos_keeps_the_first_eos_as_the_target() {
    let cfg = serde_json::json!({"model_type": "encoder-decoder", "is_encoder_decoder": true, "pad_token_id": 2, "eos_token_id": 2});
    // Labels "… EOS EOS EOS": the first EOS is the target, the rest are scored pads.
    let d = tempfile::tempdir().unwrap();
    write_run(d.path(), &seq2seq_batch(2, Some(2), 2, false), cfg.clone());
    let v = ask(label_mask, "label_mask", d.path(), &[]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "pad_scored"),
        "{v:#?}"
    );
    assert_eq!(v.values["pad_scored"], 6.0);
    let v = ask(eos_target, "eos_target", d.path(), &[]);
    assert_eq!(v.status, Status::Pass, "{v:#?}");
    let h = tempfile::tempdir().unwrap();
    write_run(h.path(), &seq2seq_batch(2, Some(2), -100, false), cfg);
    assert_eq!(
        ask(label_mask, "label_mask", h.path(), &[]).status,
        Status::Pass
    );
}

#[test]
fn decoder_attention_mask_marks_the_padding_when_given() {
    let mut t = seq2seq_batch(0, Some(1), 0, false);
    // decoder_attention_mask: 1 over each target (content + EOS), 0 after.
    let labels = t[2].2.clone();
    let dm: Vec<i64> = labels
        .chunks(7)
        .flat_map(|row| {
            let end = row.iter().position(|&x| x == 1).unwrap() + 1;
            (0..7).map(move |i| (i < end) as i64)
        })
        .collect();
    t.push(("decoder_attention_mask", [4, 7], dm));
    let d = tempfile::tempdir().unwrap();
    write_run(d.path(), &t, t5_config());
    let v = ask(label_mask, "label_mask", d.path(), &[]);
    assert_eq!(
        (v.status, v.values["pad_scored"]),
        (Status::Fail, 6.0),
        "{v:#?}"
    );
}
