//! `check` says which evidence its skipped probes lacked and which `mltriage.capture` hook
//! writes it, picked by the run's framework: one line per kind of evidence in the text report,
//! `missing_evidence` in `--json`.

use assert_cmd::Command;
use serde_json::Value;

fn mlt() -> Command {
    let mut c = Command::cargo_bin("mltriage").unwrap();
    c.env("NO_COLOR", "1");
    c
}

fn field(name: &str) -> String {
    format!("{}/tests/field/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn check_json(run: &str) -> Value {
    let out = mlt().args(["check", run, "--json"]).output().unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{run}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{run}: not JSON: {e}"))
}

/// The text report with its line wrapping undone (runs of whitespace as one space).
fn check_text(run: &str) -> String {
    let out = mlt().args(["check", run]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `missing_evidence` entry for one kind, if any.
fn entry<'a>(v: &'a Value, kind: &str) -> Option<&'a Value> {
    v["missing_evidence"]
        .as_array()
        .expect("missing_evidence is a list")
        .iter()
        .find(|m| m["evidence"] == kind)
}

/// Probes whose skip says "no batch dump".
fn batch_skips(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "skip")
        .filter(|f| {
            f["message"]
                .as_str()
                .unwrap_or("")
                .contains("no batch dump")
        })
        .map(|f| f["probe"].as_str().unwrap().to_string())
        .collect();
    out.dedup();
    out
}

#[test]
fn an_hf_run_without_a_batch_is_told_to_add_the_hf_callback() {
    let run = field("hf_healthy");
    let v = check_json(&run);
    let m = entry(&v, "batch_dump").expect("hf_healthy has no batch dump");
    let probes: Vec<String> = m["probes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    // Exactly the probes that skipped for want of a batch, each once.
    let mut want = batch_skips(&v);
    want.sort();
    want.dedup();
    let mut got = probes.clone();
    got.sort();
    assert_eq!(got, want);
    assert!(probes.iter().any(|p| p == "label_mask"), "{probes:?}");
    let how = m["how"].as_str().unwrap();
    assert!(how.contains("mltriage.capture.HFCallback()"), "{how}");
    assert!(!how.contains("LightningCallback"), "{how}");

    let text = check_text(&run);
    let line = format!("{} checks need a batch dump", probes.len());
    assert!(text.contains(&line), "no `{line}` in:\n{text}");
    let hook = "— add `mltriage.capture.HFCallback()` to the Trainer's callbacks and run 5 steps";
    assert!(text.contains(hook), "no `{hook}` in:\n{text}");
    // One sentence names every kind: the step-0 checkpoint too (hf_healthy starts at step 150).
    assert!(text.contains("1 needs a step-0 checkpoint —"), "{text}");
}

#[test]
fn a_lightning_run_is_told_to_add_the_lightning_callback() {
    let v = check_json(&field("lightning_healthy"));
    assert_eq!(v["profile"]["framework"]["value"], "lightning");
    let m = entry(&v, "batch_dump").expect("lightning_healthy has no batch dump");
    let how = m["how"].as_str().unwrap();
    assert!(how.contains("LightningCallback()"), "{how}");
    assert!(!how.contains("HFCallback"), "{how}");
}

#[test]
fn a_plain_loop_is_told_the_two_line_hook() {
    let v = check_json(&field("nanogpt_healthy"));
    let fw = v["profile"]["framework"]["value"].as_str().unwrap();
    assert!(fw != "hf_trainer" && fw != "lightning", "{fw}");
    let m = entry(&v, "batch_dump").expect("nanogpt_healthy has no batch dump");
    let how = m["how"].as_str().unwrap();
    assert!(how.contains("Capture(model, optimizer, out_dir)"), "{how}");
    assert!(how.contains("cap.step(batch, loss)"), "{how}");
}

#[test]
fn a_run_with_a_batch_dump_is_not_told_to_capture_one() {
    // The shared fixture keeps a batch.safetensors beside its checkpoints (and a checkpoint-0).
    let run = format!(
        "{}/../shared/fixtures/hf_healthy",
        env!("CARGO_MANIFEST_DIR")
    );
    let v = check_json(&run);
    assert!(batch_skips(&v).is_empty());
    assert!(
        entry(&v, "batch_dump").is_none(),
        "{}",
        v["missing_evidence"]
    );
    assert!(
        entry(&v, "step0_checkpoint").is_none(),
        "{}",
        v["missing_evidence"]
    );
    assert!(!check_text(&run).contains("need a batch dump"));
}
