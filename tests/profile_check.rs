//! The run profile on every corpus run whose making is known (tests/field, tests/bugs/*,
//! tests/sweep, the shared fixtures): each field the answers state must be what the profile
//! says — or `unknown`. A profile is never wrong; where it cannot tell it says so. A phase
//! guessed only at low confidence may be a sibling of the truth (pre-training and SFT look
//! alike from a causal-LM head) but never another family.

use std::path::{Path, PathBuf};

use mltriage::triage::check::effective_facts;
use mltriage_probes::facts::Facts;
use mltriage_probes::profile::{Profile, Sure};
use mltriage_probes::run::Run;
use serde_json::Value;

fn family(p: &str) -> &str {
    match p {
        "pretrain" | "sft" | "vlm" => "lm",
        "grpo" | "ppo" => "policy",
        other => other,
    }
}

fn user_facts(a: &Value) -> Facts {
    let args: Vec<String> = a["facts"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().map_or(v.to_string(), str::to_string)))
                .collect()
        })
        .unwrap_or_default();
    Facts::from_args(&args).unwrap()
}

/// Mismatches between the profile of `dir` and the truth `want`.
fn compare(dir: &Path, name: &str, a: &Value, want: &Value) -> Vec<String> {
    let run = Run::discover(dir).unwrap();
    let facts = effective_facts(&run, &user_facts(a));
    let p = Profile::of(&run, &facts);
    let mut errs = Vec::new();
    let mut bad = |field: &str, got: String, truth: String| {
        errs.push(format!(
            "{name}: {field} = {got}, truth {truth} ({})",
            p.evidence()
        ));
    };
    if let Some(t) = want.get("phase").and_then(Value::as_str) {
        let got = p.phase.value.as_str();
        let ok =
            got == "unknown" || got == t || (p.phase.sure <= Sure::Low && family(got) == family(t));
        if !ok {
            bad("phase", got.into(), t.into());
        }
    }
    if let Some(t) = want.get("init").and_then(Value::as_str) {
        let got = p.init.value.as_str();
        if got != "unknown" && got != t {
            bad("init", got.into(), t.into());
        }
    }
    if let Some(t) = want.get("resumed_at") {
        // Resumed or not must be right; the step within a logging interval.
        match (t.as_u64(), p.resumed_at.value) {
            (None, Some(got)) => bad("resumed_at", got.to_string(), "not resumed".into()),
            // Nothing in the run said either way (a log appended seamlessly): unknown.
            (Some(_), None) if p.resumed_at.sure == Sure::None => {}
            (Some(tr), None) => bad("resumed_at", "not resumed".into(), tr.to_string()),
            (Some(tr), Some(got)) => {
                let slack = p.logging.interval.unwrap_or(1).max(1) * 2;
                if tr.abs_diff(got) > slack {
                    bad("resumed_at", got.to_string(), tr.to_string());
                }
            }
            (None, None) => {}
        }
    }
    if let Some(t) = want.get("init_checkpoint").and_then(Value::as_bool) {
        if p.checkpoints.init != t {
            bad(
                "init_checkpoint",
                p.checkpoints.init.to_string(),
                t.to_string(),
            );
        }
    }
    for key in ["framework", "precision"] {
        if let Some(t) = want.get(key).and_then(Value::as_str) {
            let got = if key == "framework" {
                &p.framework.value
            } else {
                &p.precision.value
            };
            if got != "unknown" && got != t {
                bad(key, got.clone(), t.into());
            }
        }
    }
    errs
}

fn answer_files() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut out = vec![
        root.join("field/answers.json"),
        root.join("sweep/answers.json"),
    ];
    if let Ok(rd) = std::fs::read_dir(root.join("bugs")) {
        for e in rd.flatten() {
            out.push(e.path().join("answers.json"));
        }
    }
    out.retain(|p| p.is_file());
    out.sort();
    out
}

#[test]
fn the_profile_is_right_or_unknown_on_every_corpus_run() {
    let mut errs = Vec::new();
    let mut judged = 0;
    for f in answer_files() {
        let answers: serde_json::Map<String, Value> =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for (name, a) in &answers {
            let Some(want) = a.get("profile") else {
                continue;
            };
            judged += 1;
            errs.extend(compare(&f.parent().unwrap().join(name), name, a, want));
        }
    }
    assert!(judged >= 60, "only {judged} runs carry a profile");
    assert!(
        errs.is_empty(),
        "{} wrong profile field(s):\n{}",
        errs.len(),
        errs.join("\n")
    );
}

#[test]
fn the_shared_fixtures_profiles() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if !root.join("answers.json").is_file() {
        eprintln!("note: ../shared/fixtures absent; skipped");
        return;
    }
    // Made by plain training loops from scratch, each with a step-0 save but the left-pad
    // SFT and the diffusion latents (a batch only).
    let truth = serde_json::json!({
        "hf_healthy": {"phase": "pretrain", "init": "scratch", "resumed_at": null, "init_checkpoint": true},
        "lm_bad_init": {"phase": "pretrain", "init": "scratch", "resumed_at": null, "init_checkpoint": true},
        "lm_healthy_tb": {"phase": "pretrain", "init": "scratch", "resumed_at": null, "init_checkpoint": true},
        "lm_no_decay_split": {"phase": "pretrain", "init": "scratch", "resumed_at": null, "init_checkpoint": true},
        "lm_sched_never_stepped": {"phase": "pretrain", "init": "scratch", "resumed_at": null, "init_checkpoint": true},
        "vision_healthy": {"phase": "classification", "init": "scratch", "resumed_at": null, "init_checkpoint": true},
        "vision_frozen_in_optimizer": {"phase": "classification", "resumed_at": null, "init_checkpoint": true},
        "llm_left_pad_sft": {"phase": "sft", "resumed_at": null},
        "diffusion_latents_unscaled": {"phase": "diffusion", "resumed_at": null},
    });
    let answers: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(root.join("answers.json")).unwrap()).unwrap();
    let mut errs = Vec::new();
    for (name, want) in truth.as_object().unwrap() {
        if let Some(a) = answers.get(name) {
            errs.extend(compare(&root.join(name), name, a, want));
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}
