//! Every probe on every corpus run (field, generated bugs, the healthy sweep subset, the shared
//! fixtures): the verdicts on one run never contradict each other. One entry has one verdict —
//! when a probe fails or warns an entry, no other probe's finding for that entry stands beside
//! it as a plain "pass"; such a pass is that verdict's context (`context_for`), placed right
//! after it. Also: each finding's outcome agrees with its status.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mltriage::catalog::Catalog;
use mltriage::findings::Finding;
use mltriage::triage::check::check;
use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::Status;
use mltriage_probes::run::Run;

fn corpora() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    vec![
        root.join("tests/field"),
        root.join("tests/bugs/art"),
        root.join("tests/sweep"),
        root.join("../shared/fixtures"),
    ]
}

/// The contradictions in one run's ordered findings, as readable lines.
fn contradictions(findings: &[Finding]) -> Vec<String> {
    let mut out = Vec::new();
    let mut by_entry: BTreeMap<&str, Vec<(usize, &Finding)>> = BTreeMap::new();
    for (i, f) in findings.iter().enumerate() {
        by_entry.entry(f.id.as_str()).or_default().push((i, f));
    }
    for (id, fs) in by_entry {
        let bad: Vec<&(usize, &Finding)> = fs
            .iter()
            .filter(|(_, f)| matches!(f.status, Status::Fail | Status::Warn))
            .collect();
        let Some((anchor_at, anchor)) = bad.first() else {
            continue;
        };
        for (i, f) in &fs {
            if f.status != Status::Pass {
                continue;
            }
            match &f.context_for {
                None => out.push(format!(
                    "{id}: {} says {:?} ({}) but {} says pass ({})",
                    anchor.probe, anchor.status, anchor.measured, f.probe, f.measured
                )),
                Some(p) if p != &anchor.probe => out.push(format!(
                    "{id}: {} is context for {p}, not for the worst verdict {}",
                    f.probe, anchor.probe
                )),
                // Shown with its verdict: after it, with nothing of another entry between.
                Some(_)
                    if *i < *anchor_at || findings[*anchor_at..*i].iter().any(|g| g.id != *id) =>
                {
                    out.push(format!(
                        "{id}: context pass of {} is not placed under {}",
                        f.probe, anchor.probe
                    ))
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn no_entry_gets_a_pass_beside_a_fail_or_warn_on_any_corpus_run() {
    let cat = Catalog::embedded().unwrap();
    let compute = Compute::cpu();
    let (mut runs, mut folded) = (0, 0);
    let mut errors = Vec::new();
    for dir in corpora() {
        let answers: BTreeMap<String, serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("answers.json")).unwrap())
                .unwrap();
        for (name, a) in answers {
            let path = dir.join(&name);
            if !path.is_dir() {
                continue;
            }
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
            let run = Run::discover(&path).unwrap();
            let r = check(&cat, &run, &facts, &compute, None);
            runs += 1;
            folded += r
                .findings
                .iter()
                .filter(|f| f.context_for.is_some())
                .count();
            for c in contradictions(&r.findings) {
                errors.push(format!("{name}: {c}"));
            }
            for f in &r.findings {
                let outcome_says_bad = f.outcome == "fail" || f.outcome == "warn";
                if f.status == Status::Pass && outcome_says_bad {
                    errors.push(format!(
                        "{name}: {} [{}] passes with outcome {:?}",
                        f.id, f.probe, f.outcome
                    ));
                }
            }
        }
    }
    println!("{runs} runs checked, {folded} passes shown as context of a worse verdict");
    assert!(runs >= 100, "only {runs} corpus runs found");
    assert!(
        errors.is_empty(),
        "contradicting verdicts:\n{}",
        errors.join("\n")
    );
}

#[test]
fn a_pass_on_a_failed_entry_is_context_placed_under_the_fail() {
    // The shared fixture whose scheduler is never stepped: optimizer_rebuilt fails S2.1 from
    // scheduler.pt, lr_schedule sees a constant LR and, on its own, passes S2.1.
    let cat = Catalog::embedded().unwrap();
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/lm_sched_never_stepped");
    let run = Run::discover(&dir).unwrap();
    let r = check(&cat, &run, &Facts::default(), &Compute::cpu(), None);
    let s21: Vec<&Finding> = r.findings.iter().filter(|f| f.id == "S2.1").collect();
    assert!(s21.len() >= 2, "{s21:?}");
    assert_eq!(s21[0].status, Status::Fail);
    let ctx = s21
        .iter()
        .find(|f| f.probe == "lr_schedule")
        .expect("lr_schedule answers S2.1");
    assert_eq!(ctx.status, Status::Pass);
    assert_eq!(ctx.context_for.as_deref(), Some(s21[0].probe.as_str()));
    assert!(contradictions(&r.findings).is_empty());
}

#[test]
fn a_lone_pass_is_not_context() {
    let f = |id: &str, probe: &str, status: Status| Finding {
        id: id.into(),
        status,
        title: String::new(),
        probe: probe.into(),
        measured: String::new(),
        expected: String::new(),
        evidence: Vec::new(),
        message: String::new(),
        outcome: String::new(),
        explained_by: Vec::new(),
        nodes: Vec::new(),
        context_for: None,
        priority: 50,
    };
    let cat = Catalog::embedded().unwrap();
    let mut v = vec![
        f("O2", "params_without_state", Status::Pass),
        f("S4.1", "loss_trend", Status::Pass),
        f("O2", "identical_tensors", Status::Fail),
    ];
    // Before ordering, the pass beside the fail is a contradiction the test catches.
    assert_eq!(contradictions(&v).len(), 1);
    mltriage::findings::order(&cat, &mut v);
    assert!(contradictions(&v).is_empty(), "{v:?}");
    assert_eq!(v[0].probe, "identical_tensors");
    assert_eq!(v[1].context_for.as_deref(), Some("identical_tensors"));
    assert_eq!(v[2].id, "S4.1");
    assert_eq!(v[2].context_for, None);
}
