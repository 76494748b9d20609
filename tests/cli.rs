//! The command line as users and scripts drive it (assert_cmd): JSON shapes of DESIGN.md
//! §4.4, exit codes of §4.5, one-line errors naming the file, and lint on bad playbooks.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn mlt() -> Command {
    let mut c = Command::cargo_bin("mltriage").unwrap();
    c.env("NO_COLOR", "1");
    c
}

fn fixture(name: &str) -> String {
    format!("{}/../shared/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn json_of(args: &[&str]) -> Value {
    let out = mlt().args(args).output().unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON: {e}"))
}

#[test]
fn search_json_has_the_contract_shape_and_ranks_v3_first_for_map_zero() {
    let v = json_of(&["search", "mAP is zero", "--json"]);
    assert_eq!(v["query"], "mAP is zero");
    let hits = v["hits"].as_array().unwrap();
    assert_eq!(hits[0]["id"], "V3");
    for h in hits {
        for k in ["id", "title", "domain", "score", "snippet"] {
            assert!(h.get(k).is_some(), "hit lacks {k}: {h}");
        }
    }
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
}

#[test]
fn search_says_when_nothing_fits_and_keeps_the_closest_entries() {
    // A real problem no entry covers (installing a package): flagged, closest still shown.
    let q = "ERROR: Failed building wheel for flash_attn";
    let v = json_of(&["search", q, "--json"]);
    assert_eq!(v["confident"], false, "{v}");
    assert!(!v["hits"].as_array().unwrap().is_empty());
    assert!(v["note"].as_str().unwrap().contains("--playbook DIR"));
    assert!(v["confidence"]["coverage"].as_f64().is_some());
    assert_eq!(v["confidence"]["reason"], "outside the catalog", "{v}");
    assert!(v["confidence"]["outside"]
        .as_str()
        .unwrap()
        .contains("installing"));
    mlt()
        .args(["search", q])
        .assert()
        .success()
        .stdout(predicate::str::contains("No confident match"))
        .stdout(predicate::str::contains("a problem with installing"))
        .stdout(predicate::str::contains("not a confident match"))
        .stdout(predicate::str::contains("--playbook DIR"));
    // A covered one, typed with a typo and a domain cue: confident, no note.
    let v = json_of(&["search", "yolov8 returns nothing after traning", "--json"]);
    assert_eq!(v["confident"], true, "{v}");
    assert!(v.get("note").is_none());
    assert!(
        ["V4", "V3"].contains(&v["hits"][0]["id"].as_str().unwrap()),
        "{v}"
    );
    let out = mlt()
        .args(["search", "RuntimeError: Address already in use"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("D5"), "{text}");
    assert!(!text.contains("No confident match"), "{text}");
}

#[test]
fn search_tells_a_topic_and_a_vague_report_from_a_problem() {
    // A topic with no word of trouble, and a report that says something failed but not what:
    // each gets "no confident match", its own hint, and still the closest entries.
    for (q, reason, hint) in [
        (
            "Fine tuning model",
            "no problem stated",
            "names a topic, not a problem",
        ),
        (
            "I get the following error when I run train.py",
            "vague report",
            "says that something failed, not what",
        ),
    ] {
        let v = json_of(&["search", q, "--json"]);
        assert_eq!(v["confident"], false, "{v}");
        assert_eq!(v["confidence"]["reason"], reason, "{v}");
        assert!(!v["hits"].as_array().unwrap().is_empty(), "{v}");
        mlt()
            .args(["search", q])
            .assert()
            .success()
            .stdout(predicate::str::contains("No confident match"))
            .stdout(predicate::str::contains(hint));
    }
}

#[test]
fn search_plain_is_readable_and_handles_odd_input() {
    mlt()
        .args(["search", "loss stuck at ln vocab"])
        .assert()
        .success()
        .stdout(predicate::str::contains("S1.1"));
    mlt()
        .args(["search", "!!!"])
        .assert()
        .success()
        .stdout(predicate::str::contains("no entries match"));
    let long = "q".repeat(10_000);
    let out = mlt().args(["search", &long]).output().unwrap();
    assert!(out.status.success());
    assert!(
        out.stdout.len() < 300,
        "a 10 kB query is echoed back in full: {} bytes",
        out.stdout.len()
    );
    mlt()
        .args(["search", "loss", "--domain", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown domain"));
    let long = "x".repeat(10_000);
    mlt().args(["search", &long, "--json"]).assert().success();
}

#[test]
fn show_prints_fix_and_knobs_and_json() {
    mlt()
        .args(["show", "O9"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Fix").and(predicate::str::contains("accum")));
    let v = json_of(&["show", "S1.1", "--json"]);
    assert_eq!(v["id"], "S1.1");
    assert!(v["leaves"].as_array().unwrap().len() >= 2);
    mlt()
        .args(["show", "ZZ99"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such entry"));
}

#[test]
fn list_json_covers_every_seed_id() {
    let v = json_of(&["list", "--json"]);
    let ids: Vec<&str> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    for id in mltriage::catalog::lint::required_ids() {
        assert!(ids.contains(&id.as_str()), "missing {id}");
    }
    for e in v["entries"].as_array().unwrap() {
        assert!(e["title"].is_string() && e["domain"].is_string());
    }
    let v = json_of(&["list", "--domain", "vision", "--json"]);
    assert_eq!(v["entries"].as_array().unwrap().len(), 7);
}

#[test]
fn embedded_playbook_lints_clean() {
    mlt()
        .arg("lint")
        .assert()
        .success()
        .stdout(predicate::str::contains("0 error(s)"));
}

#[test]
fn broken_user_playbook_gives_file_line_and_exit_2() {
    let dir = format!("{}/tests/bad_playbooks/broken", env!("CARGO_MANIFEST_DIR"));
    let out = mlt()
        .args(["--playbook", &dir, "search", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("mine.yaml:"), "{err}");
    mlt()
        .args(["lint", &dir])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("mine.yaml:"));
}

#[test]
fn duplicate_id_names_both_places() {
    let dir = format!("{}/tests/bad_playbooks/dup", env!("CARGO_MANIFEST_DIR"));
    mlt()
        .args(["--playbook", &dir, "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("b.yaml:3").and(predicate::str::contains("a.yaml:2")));
}

#[test]
fn dangling_see_also_is_a_lint_error() {
    let dir = format!(
        "{}/tests/bad_playbooks/dangling",
        env!("CARGO_MANIFEST_DIR")
    );
    mlt()
        .args(["lint", &dir])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("NOPE9"));
}

#[test]
fn lint_rejects_references_to_documents_phases_and_missing_entries() {
    let dir = format!(
        "{}/tests/bad_playbooks/outside_refs",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = mlt().args(["lint", &dir]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for what in ["Phase-19", "docs/phase-19-training-dynamics", "see ZZ7"] {
        assert!(err.contains(what), "{what} not reported:\n{err}");
    }
    // The embedded playbook refers only to what the product contains.
    mlt()
        .arg("lint")
        .assert()
        .success()
        .stdout(predicate::str::contains("0 error(s)"));
}

#[test]
fn lint_requires_a_signature_on_every_entry() {
    let dir = format!(
        "{}/tests/bad_playbooks/unsigned",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = mlt().args(["lint", &dir]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for want in [
        "MY1: no `signature`",
        "MY2: signature has no `shows`",
        "MY3: signature `none` needs a reason",
        "MY3: signature is `none` but also",
        "MY4: signature probe \"init_loss\" cannot name this entry",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    assert!(
        !err.contains("MY5"),
        "a `none` signature with a reason is fine:\n{err}"
    );
}

#[test]
fn coverage_lists_every_entry_with_its_probes_or_the_reason() {
    let list = json_of(&["list", "--json"]);
    let ids: Vec<String> = list["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    let probes = json_of(&["probes", "--json"]);
    let cov = json_of(&["probes", "--coverage", "--json"]);
    let rows = cov["rows"].as_array().unwrap();
    let row_ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(row_ids, ids.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert_eq!(cov["unsigned"], 0);
    let mut counted = 0;
    for r in rows {
        let id = r["id"].as_str().unwrap();
        assert!(!r["shows"].as_str().unwrap().trim().is_empty(), "{id}");
        match r["state"].as_str().unwrap() {
            "probed" => {
                counted += 1;
                let named = r["probes"].as_array().unwrap().iter().any(|p| {
                    p["implemented"] == true
                        && probes["probes"].as_array().unwrap().iter().any(|d| {
                            d["id"] == p["id"]
                                && d["entries"].as_array().unwrap().iter().any(|e| e == id)
                        })
                });
                assert!(named, "{id}: no implemented probe names it");
                assert!(!r["reads"].as_array().unwrap().is_empty(), "{id}");
            }
            "no_probe" => assert!(!r["artifacts"].as_array().unwrap().is_empty(), "{id}"),
            "none" => assert!(r["artifacts"].as_array().unwrap().is_empty(), "{id}"),
            other => panic!("{id}: state {other}"),
        }
    }
    assert_eq!(cov["probed"], counted);
}

#[test]
fn a_frameworks_metric_names_are_added_by_a_yaml_file_alone() {
    // A run logged by a trainer mltriage has never seen: `mytrainer/objective` means nothing
    // until the user's playbook says it is the training loss.
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    let mut csv = String::from("step,mytrainer/objective\n");
    for i in 0..40 {
        csv.push_str(&format!("{i},{}\n", 3.0 - 0.05 * i as f64));
    }
    std::fs::write(run.join("out.csv"), csv).unwrap();
    let pb = d.path().join("pb");
    std::fs::create_dir_all(&pb).unwrap();
    let names = |out: std::process::Output| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    let plain = mlt()
        .args(["inspect", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(names(plain), vec!["mytrainer/objective"]);
    std::fs::write(
        pb.join("metrics.yaml"),
        "metrics:\n  - canonical: loss\n    names: [\"mytrainer/objective\"]\n",
    )
    .unwrap();
    let mapped = mlt()
        .arg("--playbook")
        .arg(&pb)
        .args(["inspect", "--json"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(names(mapped), vec!["loss"]);
    // A broken vocabulary is a one-line error naming the file, exit 2.
    std::fs::write(
        pb.join("metrics.yaml"),
        "metrics:\n  - canonical: x/{part}\n    names: [\"{part}\"]\n",
    )
    .unwrap();
    mlt()
        .arg("--playbook")
        .arg(&pb)
        .args(["inspect"])
        .arg(&run)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("metrics.yaml"));
}

#[test]
fn readme_coverage_table_is_the_generated_one() {
    let out = mlt()
        .args(["probes", "--coverage", "--markdown"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    let readme =
        std::fs::read_to_string(format!("{}/README.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let start = "<!-- coverage:start (mltriage probes --coverage --markdown) -->\n";
    let end = "<!-- coverage:end -->";
    let a = readme.find(start).expect("README has the coverage markers") + start.len();
    let b = readme[a..].find(end).expect("README has the end marker") + a;
    assert_eq!(
        readme[a..b].trim(),
        table.trim(),
        "README's coverage table is stale: regenerate it with `mltriage probes --coverage --markdown`"
    );
}

#[test]
fn lint_catches_cycle_unreachable_and_dangling_tree_nodes() {
    let base = format!("{}/tests/bad_trees", env!("CARGO_MANIFEST_DIR"));
    mlt()
        .args(["lint", &format!("{base}/cycle")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cycle"));
    mlt()
        .args(["lint", &format!("{base}/unreachable")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unreachable"));
    mlt()
        .args(["lint", &format!("{base}/dangling")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nowhere"));
    mlt()
        .args(["lint", &format!("{base}/warn_to_fail")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "warn branch \"warn_high\" reaches \"clip\"",
        ));
}

#[test]
fn user_playbook_adds_and_overrides_entries() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.yaml"),
        "entries:\n  - {id: O9, domain: convergence, title: My own accumulation note, symptom: s, cause: c, fix: divide by zebra}\n  - {id: MY1, domain: llm, title: Tokenizer zebra, symptom: zebra tokens, cause: c, fix: f}\n",
    )
    .unwrap();
    let p = dir.path().to_str().unwrap();
    mlt()
        .args(["--playbook", p, "show", "O9"])
        .assert()
        .success()
        .stdout(predicate::str::contains("divide by zebra"));
    let v = json_of(&["--playbook", p, "search", "zebra tokens", "--json"]);
    assert_eq!(v["hits"][0]["id"], "MY1");
}

#[test]
fn trees_json_lists_the_shipped_trees() {
    let v = json_of(&["trees", "--json"]);
    let ids: Vec<&str> = v["trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    for t in mltriage::catalog::lint::REQUIRED_TREES {
        assert!(ids.contains(&t), "{t}");
    }
    // Stability first (cheapest, most likely checks), then in the order of the brief; the
    // systems tree (memory, distributed, speed, precision, versions) last.
    assert_eq!(
        ids,
        [
            "stability",
            "convergence",
            "llm",
            "vision",
            "diffusion",
            "rl",
            "vlm",
            "systems"
        ]
    );
    for t in v["trees"].as_array().unwrap() {
        assert!(t["root"].is_string() && t["nodes"].as_u64().unwrap() > 1);
    }
}

#[test]
fn walk_stability_on_bad_init_ends_at_an_init_fix() {
    let v = json_of(&["walk", "stability", &fixture("lm_bad_init"), "--json"]);
    assert_eq!(v["tree"], "stability");
    let path = v["path"].as_array().unwrap();
    assert_eq!(path[0]["id"], "q1_1");
    assert_eq!(path[0]["answer"], "high");
    assert!(path[0]["measured"].as_str().unwrap().contains("ln V"));
    for p in path {
        for k in ["id", "question", "answer", "measured", "source"] {
            assert!(p.get(k).is_some());
        }
    }
    let c = &v["conclusion"];
    assert!(["S5.1", "S1.1"].contains(&c["id"].as_str().unwrap()), "{c}");
    assert!(!c["fix"].as_str().unwrap().is_empty());
}

#[test]
fn walk_without_the_needed_answer_stops_with_exit_2() {
    mlt()
        .args(["walk", "llm"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("needs"));
    mlt()
        .args(["walk", "nosuchtree"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no such tree"));
}

#[test]
fn walk_from_an_entry_starts_at_its_question_with_the_route_answered() {
    // S5.1 lives under q1_1 (step-0 loss): the walk starts at the init-weights question, the
    // loss probe answers the node above it, and the walk concludes with the init fix.
    let v = json_of(&["walk", "--from", "S5.1", &fixture("lm_bad_init"), "--json"]);
    assert_eq!(v["tree"], "stability");
    assert_eq!(v["from"]["id"], "S5.1");
    assert_eq!(v["from"]["start"], "q1_1_init");
    assert_eq!(v["from"]["above"], 1);
    let path = v["path"].as_array().unwrap();
    assert_eq!(path[0]["id"], "q1_1");
    assert_eq!(path[0]["source"], "probe init_loss");
    assert!(path[0]["measured"].as_str().unwrap().contains("ln V"));
    assert_eq!(path[1]["id"], "q1_1_init");
    for p in path {
        for k in ["id", "question", "answer", "measured", "source"] {
            assert!(p.get(k).is_some(), "{p}");
        }
    }
    assert_eq!(v["conclusion"]["id"], "S5.1");
    assert!(!v["conclusion"]["fix"].as_str().unwrap().is_empty());

    // A node id (tree/node) works too, and so does naming the tree before the run.
    let v = json_of(&[
        "walk",
        "--from",
        "stability/q2_1",
        &fixture("lm_bad_init"),
        "--json",
    ]);
    assert_eq!(v["from"]["start"], "q2_1");
    let v2 = json_of(&[
        "walk",
        "stability",
        "--from",
        "q2_1",
        &fixture("lm_bad_init"),
        "--json",
    ]);
    assert_eq!(v2["from"]["start"], "q2_1");
    // The probe disagrees with the route here (bad init: step-0 loss is high, not pass):
    // the step says so instead of pretending the probe answered.
    let first = &v["path"][0];
    assert_eq!(first["id"], "q1_1");
    assert_eq!(first["source"], "route");
    assert!(
        first["measured"]
            .as_str()
            .unwrap()
            .contains("probe init_loss said high"),
        "{first}"
    );
}

#[test]
fn walk_from_a_leaf_entry_starts_at_the_question_above_and_text_shows_the_start() {
    let out = mlt()
        .args([
            "walk",
            "--from",
            "L1",
            &fixture("llm_left_pad_sft"),
            "--fact",
            "phase=sft",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("from L1: starting at q_pad_side"), "{s}");
    assert!(s.contains("Conclusion: L1"), "{s}");
    // The choice above it cannot be answered by a probe: it is the route taken.
    assert!(s.contains("(route)"), "{s}");
}

#[test]
fn walk_from_an_unknown_id_is_a_one_line_usage_error() {
    let out = mlt()
        .args(["walk", "--from", "NOPE9", &fixture("lm_bad_init")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("NOPE9"), "{err}");
    assert!(out.stdout.is_empty());
    mlt().args(["walk"]).assert().code(2);
}

#[test]
fn check_json_shape_and_exit_codes() {
    let out = mlt()
        .args(["check", &fixture("lm_bad_init"), "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a fail gives exit 1");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    for k in ["run", "device", "artifacts", "findings"] {
        assert!(v.get(k).is_some(), "check json lacks {k}");
    }
    let f = v["findings"].as_array().unwrap();
    for x in f {
        for k in [
            "id", "status", "title", "probe", "measured", "expected", "evidence", "message",
        ] {
            assert!(x.get(k).is_some(), "finding lacks {k}");
        }
    }
    let rank = |s: &str| {
        ["fail", "warn", "pass", "skip"]
            .iter()
            .position(|x| *x == s)
            .unwrap()
    };
    let ranks: Vec<usize> = f
        .iter()
        .map(|x| rank(x["status"].as_str().unwrap()))
        .collect();
    assert!(
        ranks.windows(2).all(|w| w[0] <= w[1]),
        "fails, then warns, then the rest: {ranks:?}"
    );
    mlt()
        .args(["check", &fixture("hf_healthy")])
        .assert()
        .code(0);
}

#[test]
fn bad_inputs_give_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("model.safetensors");
    std::fs::write(&bad, b"\xff\xff\xff\xff\xff\xff\xff\x3fgarbage").unwrap();
    let out = mlt()
        .args(["inspect", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("model.safetensors"), "{err}");
    mlt()
        .args(["check", "/definitely/not/here"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/definitely/not/here"));
    mlt()
        .args(["check", &fixture("hf_healthy"), "--fact", "novalue"])
        .assert()
        .code(2);
    mlt()
        .args(["check", &fixture("hf_healthy"), "--device", "tpu"])
        .assert()
        .code(2);
}

#[test]
fn empty_run_dir_is_all_skips_and_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let v = json_of(&["check", dir.path().to_str().unwrap(), "--json"]);
    assert!(v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["status"] == "skip"));
}

#[test]
fn probes_lists_every_probe_with_its_entries() {
    let v = json_of(&["probes", "--json"]);
    let p = v["probes"].as_array().unwrap();
    assert!(p.len() >= 40);
    assert!(p
        .iter()
        .all(|x| !x["entries"].as_array().unwrap().is_empty()));
    assert!(p
        .iter()
        .any(|x| x["id"] == "init_loss" && x["implemented"] == true));
}

#[test]
fn show_a_tree_node() {
    mlt()
        .args(["show", "stability/q1_1"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("init_loss").and(predicate::str::contains("high → q1_1_init")),
        );
    let v = json_of(&["show", "stability/q1_1", "--json"]);
    assert_eq!(v["node"]["probe"], "init_loss");
    mlt().args(["show", "stability/nope"]).assert().code(2);
}

#[test]
fn top_level_fact_and_device_are_for_the_tui_and_checked_before_it_starts() {
    mlt()
        .args(["--fact", "novalue"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expected key=value"));
    mlt()
        .args(["--device", "tpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expected auto, cpu, cuda"));
    // Before a subcommand they would be ignored: say where they go instead.
    mlt()
        .args(["--fact", "a=b", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("after the subcommand"));
    // Without a terminal the TUI is not started: the catalog is listed.
    mlt()
        .args(["--fact", "vocab_size=512", "--fact", "phase=sft"])
        .args(["--device", "cpu"])
        .assert()
        .success();
    // Subcommands keep their own --fact.
    let out = mlt()
        .args(["check", &fixture("lm_bad_init"), "--fact", "vocab_size=512"])
        .args(["--device", "cpu", "--json"])
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1));
}

#[test]
fn a_lone_model_folder_has_no_step_and_is_not_called_the_init() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(&fixture("hf_healthy")).join("checkpoint-300");
    for f in ["model.safetensors", "config.json"] {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    let out = mlt().arg("inspect").arg(dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("step ?"), "{text}");
    assert!(!text.contains("(init)"), "{text}");
}

#[test]
fn check_leads_with_what_matters() {
    // A clean run says so before its list of passes; the device line is one short line.
    let out = mlt()
        .args(["check", "--device", "cpu"])
        .arg(format!(
            "{}/tests/field/timm_healthy",
            env!("CARGO_MANIFEST_DIR")
        ))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let clean = text.find("clean: no check failed or warned").expect(&text);
    let first_pass = text.find("\npass ").expect(&text);
    assert!(clean < first_pass, "{text}");
    let device = text.lines().find(|l| l.starts_with("device")).unwrap();
    assert!(device.chars().count() <= 80, "{device}");
    // A run with warnings only still gets a `next:` line.
    let out = mlt()
        .args(["check", "--device", "cpu"])
        .arg(format!(
            "{}/tests/field/hf_lr_100x",
            env!("CARGO_MANIFEST_DIR")
        ))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("0 fail, 1 warn"), "{text}");
    assert!(
        text.contains("next: `mltriage show S4.1` for the fix"),
        "{text}"
    );
}

// ---- issue 30: inputs, and what `check` prints -------------------------------------------

#[test]
fn a_run_path_that_does_not_exist_is_a_one_line_error_even_through_a_pipe() {
    // stdout is not a terminal here (assert_cmd pipes it), as in `mltriage RUN | cat`.
    let out = mlt().arg("/no/such/run").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "printed the catalog");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/no/such/run") && err.contains("no such file"),
        "{err}"
    );
    // An existing run without a terminal says what works instead of listing the catalog.
    let out = mlt().arg(fixture("lm_bad_init")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("mltriage check"));
}

#[test]
fn check_of_a_single_config_file_says_what_was_given_and_what_to_give() {
    let cfg = format!(
        "{}/tests/field/hf_healthy/checkpoint-300/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = mlt().args(["check", &cfg]).output().unwrap();
    // Nothing at all could be judged: an input error (DESIGN §4.5), not "0 fail".
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("config.json: a model config on its own"),
        "{err}"
    );
    assert!(err.contains("run's folder"), "{err}");
}

#[test]
fn check_ascii_writes_only_ascii_and_plus_minus() {
    let out = mlt()
        .args(["check", &fixture("lm_bad_init"), "--ascii"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.is_ascii(), "non-ASCII in --ascii output");
    assert!(text.contains("+/-"), "{text}");
    // JSON keeps its characters.
    let out = mlt()
        .args(["check", &fixture("lm_bad_init"), "--ascii", "--json"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains('±'));
}

#[test]
fn check_lines_fit_the_width_so_numbers_never_wrap_mid_digit() {
    // Not a terminal: plain output is laid out for 100 columns.
    for run in ["lm_bad_init", "hf_healthy", "lm_healthy_tb"] {
        let out = mlt().args(["check", &fixture(run)]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for l in text.lines() {
            let n = l.chars().count();
            // A single unbreakable word (a long path) may exceed it; nothing else does.
            assert!(
                n <= 100 || l.split_whitespace().count() == 1,
                "{run}: {n} columns: {l}"
            );
        }
    }
}

#[test]
fn walk_from_route_steps_state_the_runs_answer_and_where_it_leads() {
    let out = mlt()
        .args(["walk", "--from", "stability/q2_1", &fixture("lm_bad_init")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // q1_1's probe said high: never shown as "pass".
    assert!(text.contains("→ high (route takes pass)"), "{text}");
    assert!(
        text.contains("the run's answers lead elsewhere: at q1_1"),
        "{text}"
    );
    // A clean run in colour does not print "0 fail" in bold red.
    let out = mlt()
        .args(["check", "--color", "always", &fixture("hf_healthy")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("\x1b[1;31m"), "{text}");
}
