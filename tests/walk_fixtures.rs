//! Walking the stability tree over every fixture run: bugged runs end at an accepted id,
//! healthy runs at "no configuration problem found". And over every bugged corpus run (field,
//! generated bugs, shared fixtures): from the tree of each accepted entry, taking at every
//! choice the option the run's own findings lead to (`Stop::run_leads_to`) and no answer given
//! by hand, the walk ends at one of the run's accepted entries.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use mltriage::catalog::{Catalog, NodeKind};
use mltriage::triage::check::effective_facts;
use mltriage::triage::walk::{auto_walk, Inputs};
use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::run::Run;

/// A walk of `tree` over `run` with these facts and answers (none given by hand unless said).
fn walk(
    cat: &Catalog,
    tree: &str,
    run: &Run,
    facts: &Facts,
    compute: &Compute,
    answers: &HashMap<String, String>,
) -> mltriage::triage::walk::WalkResult {
    auto_walk(
        cat,
        tree,
        &Inputs {
            run: Some(run),
            facts,
            compute,
            baseline: None,
            answers,
        },
    )
    .unwrap()
}

/// Where a walk that takes, at every stop, the option the run's findings lead to
/// (`Stop::run_leads_to`) ends: the conclusion's id, or why it stopped.
fn follow(
    cat: &Catalog,
    tree: &str,
    run: &Run,
    facts: &Facts,
    compute: &Compute,
) -> Result<String, String> {
    let mut answers: HashMap<String, String> = HashMap::new();
    for _ in 0..12 {
        let res = walk(cat, tree, run, facts, compute, &answers);
        match res.stopped {
            None => {
                return res
                    .conclusion
                    .map(|c| c.id)
                    .ok_or_else(|| "no conclusion".into())
            }
            Some(stop) => match stop.run_leads_to {
                Some(lead) => {
                    answers.insert(stop.node, lead.option);
                }
                None => return Err(format!("stopped at {} with no lead", stop.node)),
            },
        }
    }
    Err("more than 12 stops".into())
}

#[test]
fn stability_walks_end_at_the_accepted_ids() {
    let fx = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures"));
    let answers: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fx.join("answers.json")).unwrap()).unwrap();
    let cat = Catalog::embedded().unwrap();
    let compute = Compute::cpu();
    for (name, a) in answers.as_object().unwrap() {
        let run = Run::discover(&fx.join(name)).unwrap();
        let args: Vec<String> = a["facts"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
            .collect();
        let facts = effective_facts(&run, &Facts::from_args(&args).unwrap());
        let no_answers = HashMap::new();
        let res = walk(&cat, "stability", &run, &facts, &compute, &no_answers);
        assert!(res.stopped.is_none(), "{name}: stopped {:?}", res.stopped);
        let c = res.conclusion.expect("a conclusion");
        let accept: Vec<&str> = a["accept"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        let path: Vec<String> = res
            .path
            .iter()
            .map(|p| format!("{}={}", p.id, p.answer))
            .collect();
        if accept.is_empty() {
            assert!(
                c.note
                    .as_deref()
                    .unwrap_or("")
                    .contains("no configuration problem found"),
                "{name}: ended at {} via {path:?}",
                c.id
            );
        } else {
            assert!(
                accept.contains(&c.id.as_str()),
                "{name}: ended at {} via {path:?}, want one of {accept:?}",
                c.id
            );
        }
    }
}

#[test]
fn bad_init_walk_measures_loss_against_ln_v_and_the_init_statistics() {
    let fx = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/lm_bad_init"
    ));
    let run = Run::discover(&fx).unwrap();
    let cat = Catalog::embedded().unwrap();
    let facts = effective_facts(&run, &Facts::new());
    let no_answers = HashMap::new();
    let res = walk(
        &cat,
        "stability",
        &run,
        &facts,
        &Compute::cpu(),
        &no_answers,
    );
    assert_eq!(res.path[0].answer, "high");
    assert!(
        res.path[0].measured.contains("ln V = ln 512"),
        "{}",
        res.path[0].measured
    );
    assert!(
        res.path
            .iter()
            .any(|p| p.source.label() == "probe init_weight_stats" && p.answer == "too_large"),
        "{:?}",
        res.path
    );
    assert_eq!(res.conclusion.unwrap().id, "S5.1");
}

/// At every choice, take the option the run's own findings lead to (`Stop::run_leads_to`): the
/// walk from the domain's symptom tree then ends at the bug's entry with no answer given by hand.
#[test]
fn walks_follow_the_runs_own_findings_to_the_bug() {
    let field = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/field"));
    let cat = Catalog::embedded().unwrap();
    let compute = Compute::cpu();
    for (tree, name, want) in [
        ("rl", "cleanrl_ppo_lr_huge", "R7"),
        ("rl", "cleanrl_ppo_adv_sign_flipped", "R1"),
        ("rl", "sb3_ppo_lr_huge", "R7"),
        ("rl", "sb3_ppo_reward_x1000", "R3"),
        ("vision", "ultralytics_val_class_swapped", "V3"),
        ("convergence", "timm_bn_eval_mode", "O5"),
        ("convergence", "nanogpt_no_decay_split", "O6"),
        ("llm", "seq2seq_t5_pad_in_labels", "O15"),
        ("llm", "seq2seq_t5_labels_no_eos", "G1"),
        ("llm", "trl_dpo_lr_100x", "L9"),
        ("diffusion", "diffusers_ema_never_updated", "DF2"),
        ("stability", "nanogpt_bad_init", "S1.1"),
    ] {
        let run = Run::discover(&field.join(name)).unwrap();
        let facts = effective_facts(&run, &Facts::default());
        let got = follow(&cat, tree, &run, &facts, &compute);
        assert_eq!(got.as_deref(), Ok(want), "{name} in {tree}");
    }
}

/// A walk that passes every check but one that warned (a warn walks on) concludes at the
/// warning's entry, not at the tree's generic "no configuration problem found" end.
#[test]
fn a_walk_past_a_warning_concludes_at_it() {
    let field = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/field"));
    let cat = Catalog::embedded().unwrap();
    let run = Run::discover(&field.join("hf_lr_100x")).unwrap();
    let facts = effective_facts(&run, &Facts::default());
    let no_answers = HashMap::new();
    let res = walk(
        &cat,
        "stability",
        &run,
        &facts,
        &Compute::cpu(),
        &no_answers,
    );
    let c = res.conclusion.expect("a conclusion");
    assert_eq!(c.id, "S4.1", "{c:?}");
    assert!(c.note.unwrap_or_default().contains("warned"));
}

/// Bugged runs no walk reaches yet, and why (kept short on purpose: each one is a gap).
const KNOWN_UNREACHED: &[(&str, &str)] = &[
    (
        "accel_mlflow_no_decay_split",
        "check passes decayed 1-D tensors in BatchNorm conv nets by design (tests/field_check.rs KNOWN_MISSES)",
    ),
    (
        "timm_no_decay_split",
        "check passes decayed 1-D tensors in BatchNorm conv nets by design (tests/field_check.rs KNOWN_MISSES)",
    ),
    (
        "tvcls_shufflenet_no_train_mode_log",
        "check names F22 (the NaN) but not O5: a log cannot show eval mode (tests/field_check.rs KNOWN_MISSES)",
    ),
    (
        "tvdet_frcnn_labels_from0_log",
        "check names nothing: no probe reads a per-class AP (tests/field_check.rs KNOWN_MISSES)",
    ),
];

#[test]
fn every_corpus_bug_is_reached_by_a_walk_that_follows_the_run() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cat = Catalog::embedded().unwrap();
    let compute = Compute::cpu();
    // Which trees conclude at each entry.
    let mut trees_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for t in &cat.trees {
        for n in &t.nodes {
            if let (NodeKind::Leaf, Some(e)) = (&n.kind, n.entry.as_deref()) {
                let v = trees_of.entry(e).or_default();
                if !v.contains(&t.id.as_str()) {
                    v.push(t.id.as_str());
                }
            }
        }
    }
    let (mut bugged, mut reached) = (0, 0);
    let mut misses = Vec::new();
    for dir in ["tests/field", "tests/bugs/art", "../shared/fixtures"] {
        let dir = root.join(dir);
        let answers: BTreeMap<String, serde_json::Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("answers.json")).unwrap())
                .unwrap();
        for (name, a) in answers {
            let accept: Vec<&str> = a["accept"]
                .as_array()
                .map(|v| v.iter().filter_map(|x| x.as_str()).collect())
                .unwrap_or_default();
            if accept.is_empty() || !dir.join(&name).is_dir() {
                continue;
            }
            bugged += 1;
            let args: Vec<String> = a["facts"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| {
                            format!(
                                "{k}={}",
                                v.as_str().map(String::from).unwrap_or(v.to_string())
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let run = Run::discover(&dir.join(&name)).unwrap();
            let facts = effective_facts(&run, &Facts::from_args(&args).unwrap());
            let mut tried = Vec::new();
            let mut ok = false;
            let mut trees: Vec<&str> = accept
                .iter()
                .flat_map(|e| trees_of.get(e).cloned().unwrap_or_default())
                .collect();
            trees.dedup();
            for tree in trees {
                match follow(&cat, tree, &run, &facts, &compute) {
                    Ok(id) if accept.contains(&id.as_str()) => {
                        ok = true;
                        break;
                    }
                    Ok(id) => tried.push(format!("{tree} → {id}")),
                    Err(e) => tried.push(format!("{tree}: {e}")),
                }
            }
            if ok {
                reached += 1;
            } else if !KNOWN_UNREACHED.iter().any(|(n, _)| *n == name) {
                misses.push(format!("{name} (accept {accept:?}): {}", tried.join("; ")));
            }
        }
    }
    println!("walks reach the bug's entry on {reached} of {bugged} bugged corpus runs");
    assert!(bugged >= 50, "only {bugged} bugged runs found");
    assert!(
        misses.is_empty(),
        "walks that miss the bug:\n{}",
        misses.join("\n")
    );
}
