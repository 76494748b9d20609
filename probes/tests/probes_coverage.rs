//! The probes behind issue 28's new entries: `grpo_signal` on GRPO metric logs (synthetic
//! trainer_state.json files and the real TRL runs of the field corpus), and `log_errors`
//! naming native crashes, Windows worker spawning and bitsandbytes set-up failures.

mod common;

use std::path::Path;

use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::{run_probe, ProbeCtx, ProbeSpec, Status, Verdict};
use mltriage_probes::probes::{log, metric};
use mltriage_probes::run::Run;

fn spec(set: &'static [ProbeSpec], id: &str) -> &'static ProbeSpec {
    set.iter().find(|s| s.id == id).unwrap()
}

fn ask_dir(dir: &Path, probe: &ProbeSpec) -> Vec<Verdict> {
    let run = Run::discover(dir).unwrap();
    let facts = Facts::from_args(&["phase=grpo"]).unwrap();
    let params = common::thresholds(probe.id);
    let c = Compute::cpu();
    let ctx = ProbeCtx {
        run: &run,
        facts: &facts,
        profile: &mltriage_probes::profile::Profile::of(&run, &facts),
        params: &params,
        compute: &c,
        baseline: None,
    };
    run_probe(probe, &ctx)
}

/// A TRL trainer_state.json with one log row per step, each row built by `row(step)`.
fn grpo_run(rows: usize, row: impl Fn(usize) -> String) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let hist: Vec<String> = (1..=rows).map(&row).collect();
    let state = format!(
        "{{\"global_step\": {rows}, \"log_history\": [{}]}}",
        hist.join(",")
    );
    std::fs::write(d.path().join("trainer_state.json"), state).unwrap();
    d
}

fn grpo(d: &Path) -> Vec<Verdict> {
    ask_dir(d, spec(metric::SPECS, "grpo_signal"))
}

fn bad(v: &[Verdict]) -> Vec<(String, Status)> {
    v.iter()
        .filter(|x| matches!(x.status, Status::Fail | Status::Warn))
        .map(|x| (x.entry.clone(), x.status))
        .collect()
}

#[test]
fn groups_whose_rewards_differ_pass_and_a_zero_loss_is_called_expected() {
    let d = grpo_run(30, |s| {
        let frac = if s < 8 { 0.75 } else { 0.125 };
        format!("{{\"step\": {s}, \"loss\": 0.0, \"grad_norm\": 0.4, \"reward\": {}, \"reward_std\": 0.3, \"frac_reward_zero_std\": {frac}, \"completions/mean_length\": 120.0, \"completions/clipped_ratio\": 0.05}}", 0.1 + 0.01 * s as f64)
    });
    let v = grpo(d.path());
    assert!(bad(&v).is_empty(), "{v:?}");
    assert!(
        v.iter()
            .any(|x| x.entry == "H2" && x.status == Status::Pass),
        "a loss of 0 with a moving gradient is named as GRPO by design: {v:?}"
    );
}

#[test]
fn groups_without_reward_spread_for_most_of_the_run_fail_h3() {
    let d = grpo_run(30, |s| {
        let frac = if s < 5 { 0.5 } else { 1.0 };
        format!("{{\"step\": {s}, \"loss\": 0.0, \"grad_norm\": 0.0, \"reward\": 0.0, \"reward_std\": 0.0, \"frac_reward_zero_std\": {frac}}}")
    });
    let v = grpo(d.path());
    let h3 = v.iter().find(|x| x.entry == "H3").unwrap();
    assert_eq!(
        (h3.status, h3.outcome.as_str()),
        (Status::Fail, "no_signal"),
        "{v:?}"
    );
}

#[test]
fn without_frac_reward_zero_std_a_zero_reward_std_is_read_instead() {
    let dead = grpo_run(20, |s| {
        format!("{{\"step\": {s}, \"loss\": 0.0, \"grad_norm\": 0.0, \"reward\": 1.0, \"reward_std\": 0.0}}")
    });
    let v = grpo(dead.path());
    assert_eq!(bad(&v), vec![("H3".to_string(), Status::Fail)], "{v:?}");
    let alive = grpo_run(20, |s| {
        format!("{{\"step\": {s}, \"loss\": 0.01, \"grad_norm\": 0.3, \"reward\": 0.5, \"reward_std\": 0.2}}")
    });
    assert!(bad(&grpo(alive.path())).is_empty());
}

#[test]
fn completions_growing_into_the_length_cap_warn_h5_but_a_short_cap_alone_does_not() {
    let drift = grpo_run(30, |s| {
        format!("{{\"step\": {s}, \"loss\": 0.02, \"grad_norm\": 0.3, \"reward\": 0.5, \"reward_std\": 0.2, \"frac_reward_zero_std\": 0.1, \"completions/mean_length\": {}, \"completions/clipped_ratio\": {}}}", 100.0 + 15.0 * s as f64, if s > 15 { 0.8 } else { 0.1 })
    });
    let v = grpo(drift.path());
    assert_eq!(bad(&v), vec![("H5".to_string(), Status::Warn)], "{v:?}");
    // Every completion at a small cap from the first step, length flat: a setting, not drift.
    let capped = grpo_run(30, |s| {
        format!("{{\"step\": {s}, \"loss\": 0.02, \"grad_norm\": 0.3, \"reward\": 0.5, \"reward_std\": 0.2, \"frac_reward_zero_std\": 0.1, \"completions/mean_length\": 8.0, \"completions/clipped_ratio\": 1.0}}")
    });
    assert!(bad(&grpo(capped.path())).is_empty());
}

#[test]
fn completions_that_collapse_to_their_eos_fail_h5_however_the_reward_climbs() {
    // Length 14 → 1 (the EOS alone) while the reward climbs: a reward that pays for empty answers.
    let row = |len: f64, reward: f64, s: usize| {
        format!("{{\"step\": {s}, \"loss\": 0.02, \"grad_norm\": 0.3, \"reward\": {reward}, \"reward_std\": 0.2, \"frac_reward_zero_std\": 0.1, \"completions/mean_length\": {len}, \"completions/clipped_ratio\": 0.0}}")
    };
    let collapse = grpo_run(30, |s| {
        let len = if s < 10 { 14.0 - 1.3 * s as f64 } else { 1.05 };
        row(len, 0.5 + 0.016 * s as f64, s)
    });
    let v = grpo(collapse.path());
    assert_eq!(bad(&v), vec![("H5".to_string(), Status::Fail)], "{v:?}");
    let h5 = v.iter().find(|x| x.entry == "H5").unwrap();
    assert_eq!(h5.outcome, "length_collapse");
    assert!(h5.measured.contains("reward went"), "{h5:?}");
    // Learning to answer tersely (a word and its EOS) is not an empty answer.
    let terse = grpo_run(30, |s| {
        let len = if s < 10 { 14.0 - 1.2 * s as f64 } else { 2.1 };
        row(len, 0.5 + 0.016 * s as f64, s)
    });
    assert!(bad(&grpo(terse.path())).is_empty());
    // Short from the start is a setting, not a collapse.
    let short = grpo_run(30, |s| row(1.2, 0.5, s));
    assert!(bad(&grpo(short.path())).is_empty());
}

#[test]
fn the_real_trl_grpo_runs_with_room_to_move_length_healthy_passes_and_brevity_collapses() {
    let field = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/field");
    let healthy = grpo(&field.join("trl_grpo_len32_healthy"));
    assert!(bad(&healthy).is_empty(), "{healthy:?}");
    let broken = grpo(&field.join("trl_grpo_length_collapse"));
    assert_eq!(
        bad(&broken),
        vec![("H5".to_string(), Status::Fail)],
        "{broken:?}"
    );
}

#[test]
fn the_real_trl_grpo_runs_healthy_passes_and_lr_100x_loses_its_signal() {
    let field = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/field");
    let healthy = grpo(&field.join("trl_grpo_healthy"));
    assert!(bad(&healthy).is_empty(), "{healthy:?}");
    let broken = grpo(&field.join("trl_grpo_lr_100x"));
    assert!(
        broken
            .iter()
            .any(|x| x.entry == "H3" && x.status == Status::Fail),
        "{broken:?}"
    );
}

fn ask_log(text: &str) -> Verdict {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("train.log"), text).unwrap();
    let mut v = ask_dir(d.path(), spec(log::SPECS, "log_errors"));
    assert_eq!(v.len(), 1);
    v.remove(0)
}

const CHATTER: &str = "{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1}\n";

#[test]
fn native_crashes_spawn_errors_and_bitsandbytes_set_up_name_their_entries() {
    let cases = [
        ("RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.", "N1", Status::Fail),
        ("Segmentation fault (core dumped)", "N2", Status::Fail),
        ("ImportError: /opt/conda/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", "N3", Status::Fail),
        ("RuntimeError:\n        An attempt has been made to start a new process before the\n        current process has finished its bootstrapping phase.", "W1", Status::Fail),
        ("UserWarning: The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit multiplication, and GPU quantization are unavailable.", "Q1", Status::Warn),
    ];
    for (line, want, status) in cases {
        let v = ask_log(&format!("{CHATTER}{line}\n"));
        assert_eq!(
            (v.entry.as_str(), v.status, v.outcome.as_str()),
            (want, status, want),
            "{line}: {v:?}"
        );
    }
    // Ordinary chatter mentioning none of them passes.
    assert_eq!(ask_log(CHATTER).status, Status::Pass);
}
