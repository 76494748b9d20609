//! Walking the stability tree over every fixture run: bugged runs end at an accepted id,
//! healthy runs at "no configuration problem found".

use std::collections::HashMap;

use mltriage::catalog::Catalog;
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
        let mut answers: HashMap<String, String> = HashMap::new();
        let mut conclusion = None;
        for _ in 0..8 {
            let res = walk(&cat, tree, &run, &facts, &compute, &answers);
            match res.stopped {
                None => {
                    conclusion = res.conclusion;
                    break;
                }
                Some(stop) => {
                    let lead = stop
                        .run_leads_to
                        .unwrap_or_else(|| panic!("{name}: no lead at {}", stop.node));
                    answers.insert(stop.node, lead.option);
                }
            }
        }
        let c = conclusion.unwrap_or_else(|| panic!("{name}: no conclusion"));
        assert_eq!(c.id, want, "{name} in {tree}: {answers:?}");
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
