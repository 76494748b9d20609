//! `check` over the generated bug corpus (tests/bugs/*/answers.json, runs written by the
//! scripts in scripts/bugs/ with real PyTorch training): each bugged run is named by a fail or
//! warn for one of its accepted entries; each healthy twin gives 0 fail and 0 warn.

use std::path::{Path, PathBuf};

use mltriage::catalog::Catalog;
use mltriage::triage::check::check;
use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::Status;
use mltriage_probes::run::Run;

fn answer_files() -> Vec<PathBuf> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bugs"));
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path().join("answers.json"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    // The healthy sweep's fast subset (scripts/sweep/): every run must come back clean.
    let sweep = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sweep/answers.json"
    ));
    if sweep.is_file() {
        out.push(sweep);
    }
    out.sort();
    out
}

fn check_one(cat: &Catalog, dir: &Path, a: &serde_json::Value) -> Vec<(String, Status)> {
    let run = Run::discover(dir).unwrap();
    let args: Vec<String> = a["facts"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| match v.as_str() {
                    Some(s) => format!("{k}={s}"),
                    None => format!("{k}={v}"),
                })
                .collect()
        })
        .unwrap_or_default();
    let facts = Facts::from_args(&args).unwrap();
    check(cat, &run, &facts, &Compute::cpu(), None)
        .findings
        .iter()
        .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
        .map(|f| (f.id.clone(), f.status))
        .collect()
}

#[test]
fn every_generated_bug_is_named_and_every_twin_is_clean() {
    let cat = Catalog::embedded().unwrap();
    let files = answer_files();
    assert!(!files.is_empty(), "no tests/bugs/*/answers.json");
    let mut errors = Vec::new();
    let mut runs = 0;
    for f in files {
        let answers: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let dir = f.parent().unwrap();
        for (name, a) in &answers {
            runs += 1;
            let bad = check_one(&cat, &dir.join(name), a);
            let accept: Vec<&str> = a["accept"]
                .as_array()
                .map(|v| v.iter().filter_map(|x| x.as_str()).collect())
                .unwrap_or_default();
            if accept.is_empty() {
                if !bad.is_empty() {
                    errors.push(format!("healthy {name}: {bad:?}"));
                }
            } else if !bad.iter().any(|(id, _)| accept.contains(&id.as_str())) {
                errors.push(format!("{name}: none of {accept:?} in {bad:?}"));
            }
        }
    }
    assert!(runs > 0);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
