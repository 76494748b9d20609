//! Tests of the mid-run divergence and systems probes: each on a synthetic run that carries
//! its entry's signature and on a healthy twin that must give neither warn nor fail.

use super::tests::*;
use super::{divergence::*, systems::*};
use crate::probe::Status;

fn steps(n: u64, f: impl Fn(u64) -> f64) -> Vec<(u64, f64)> {
    (1..=n).map(|t| (t * 10, f(t))).collect()
}

#[test]
fn nan_onset_names_fp16_overflow_a_precursor_or_a_sudden_nan() {
    let th = thresholds("nan_onset");
    let healthy_loss = steps(100, |t| 4.0 - t as f64 * 0.01);
    let healthy_gn = steps(100, |_| 1.0);
    let twin = run_with(&[
        ("loss", healthy_loss.clone()),
        ("grad_norm", healthy_gn.clone()),
    ]);
    let v = ask(nan_onset, &twin, &["precision=fp16"], th.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");

    // fp16: the loss goes NaN at step 600 while the loss scale is logged.
    let nan_at = |s: &[(u64, f64)]| -> Vec<(u64, f64)> {
        s.iter()
            .map(|&(t, x)| (t, if t >= 600 { f64::NAN } else { x }))
            .collect()
    };
    let fp16 = run_with(&[
        ("loss", nan_at(&healthy_loss)),
        ("grad_norm", healthy_gn.clone()),
        (
            "loss_scale",
            steps(100, |t| if t >= 58 { 2.0 } else { 65536.0 }),
        ),
    ]);
    let v = ask(nan_onset, &fp16, &[], th.clone());
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("P1", Status::Fail, "fp16_overflow"),
        "{v:?}"
    );
    assert_eq!(v.values["onset_step"], 600.0);
    assert!(v.measured.contains("loss scale fell"), "{}", v.measured);

    // bf16: the grad norm climbs 50× over the 200 steps before the NaN.
    let bf16 = run_with(&[
        ("loss", nan_at(&healthy_loss)),
        (
            "grad_norm",
            steps(100, |t| if t >= 45 { 50.0 } else { 1.0 }),
        ),
    ]);
    let v = ask(nan_onset, &bf16, &["precision=bf16"], th.clone());
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("F22", Status::Fail, "precursor"),
        "{v:?}"
    );
    assert!(v.values["grad_norm_rise"] >= 10.0);

    // Nothing moved before: a sudden NaN is a warning to inspect that batch.
    let sudden = run_with(&[("loss", nan_at(&healthy_loss)), ("grad_norm", healthy_gn)]);
    let v = ask(nan_onset, &sudden, &["precision=bf16"], th.clone());
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("F22", Status::Warn, "sudden")
    );

    // NaN from the first step is loss_degenerate's to judge.
    let first = run_with(&[("loss", steps(50, |_| f64::NAN))]);
    assert_eq!(ask(nan_onset, &first, &[], th).status, Status::Skip);
}

#[test]
fn late_spikes_needs_loss_and_grad_norm_jumping_together_late() {
    let th = thresholds("late_spikes");
    let base_loss = |t: u64| 3.0 + 1.0 / (1.0 + t as f64 * 0.05) + 0.01 * ((t % 7) as f64);
    let base_gn = |t: u64| 0.5 + 0.05 * ((t % 5) as f64);
    let spiky = |t: u64| [150u64, 170, 190].contains(&t);
    let run = run_with(&[
        (
            "loss",
            steps(200, |t| {
                if spiky(t) {
                    base_loss(t) * 2.0
                } else {
                    base_loss(t)
                }
            }),
        ),
        (
            "grad_norm",
            steps(200, |t| if spiky(t) { 20.0 } else { base_gn(t) }),
        ),
    ]);
    let v = ask(
        late_spikes,
        &run,
        &["vocab_size=50257", "model_type=gpt2"],
        th.clone(),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "spikes"),
        "{v:?}"
    );
    assert_eq!(v.values["coupled_spikes"], 3.0);
    // Twin: grad-norm spikes alone (a bad batch clipped away) do not make the loss jump.
    let twin = run_with(&[
        ("loss", steps(200, base_loss)),
        (
            "grad_norm",
            steps(200, |t| if spiky(t) { 20.0 } else { base_gn(t) }),
        ),
    ]);
    assert_eq!(
        ask(late_spikes, &twin, &["vocab_size=50257"], th.clone()).status,
        Status::Pass
    );
    // A family with QK-norm, or a model that is not a transformer LM, is not judged by F20.
    assert_eq!(
        ask(
            late_spikes,
            &run,
            &["vocab_size=151936", "model_type=qwen3"],
            th.clone()
        )
        .status,
        Status::Pass
    );
    assert_eq!(ask(late_spikes, &run, &[], th).status, Status::Skip);
}

#[test]
fn memory_growth_tells_a_leak_from_an_allocator_warming_up() {
    let th = thresholds("memory_growth");
    // Leak: +40 MB every logged step from 2 GB.
    let leak = run_with(&[("memory_allocated", steps(100, |t| 2.0e9 + 4.0e7 * t as f64))]);
    let v = ask(memory_growth, &leak, &[], th.clone());
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("M2", Status::Fail, "growing"),
        "{v:?}"
    );
    // Healthy: the caching allocator grows for the first steps, then levels off (with noise).
    let flat = run_with(&[(
        "gpu_mem_reserved",
        steps(100, |t| {
            if t < 8 {
                1.0e9 * t as f64
            } else {
                8.0e9 + 1.0e7 * ((t % 3) as f64)
            }
        }),
    )]);
    assert_eq!(
        ask(memory_growth, &flat, &[], th.clone()).status,
        Status::Pass
    );
    // A slow rise: warn, not fail.
    let slow = run_with(&[("memory/allocated", steps(100, |t| 4.0e9 + 1.6e7 * t as f64))]);
    assert_eq!(
        ask(memory_growth, &slow, &[], th.clone()).status,
        Status::Warn
    );
    assert_eq!(
        ask(
            memory_growth,
            &run_with(&[("loss", steps(50, |_| 1.0))]),
            &[],
            th
        )
        .status,
        Status::Skip
    );
}

#[test]
fn data_wait_measures_the_data_share_of_each_step() {
    let th = thresholds("data_wait");
    let bound = run_with(&[
        ("data_time", steps(50, |_| 0.42)),
        ("time", steps(50, |_| 0.5)),
    ]);
    let v = ask(data_wait, &bound, &[], th.clone());
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("T1", Status::Fail, "data_bound")
    );
    assert!((v.values["data_share"] - 0.84).abs() < 1e-9);
    let twin = run_with(&[
        ("data_time", steps(50, |t| if t <= 2 { 3.0 } else { 0.004 })),
        ("time", steps(50, |_| 0.5)),
    ]);
    assert_eq!(
        ask(data_wait, &twin, &[], th.clone()).status,
        Status::Pass,
        "worker start-up is left out"
    );
    assert_eq!(
        ask(
            data_wait,
            &run_with(&[("time", steps(50, |_| 0.5))]),
            &[],
            th
        )
        .status,
        Status::Skip
    );
}

#[test]
fn eval_zero_fails_a_map_pinned_at_zero_while_the_loss_falls() {
    let th = thresholds("eval_zero");
    let falling = steps(100, |t| 3.0 / (1.0 + t as f64 * 0.05));
    let zero = run_with(&[
        ("loss", falling.clone()),
        (
            "eval/bbox_mAP",
            vec![(200, 0.0), (400, 0.0), (600, 0.0), (800, 0.0)],
        ),
    ]);
    let v = ask(eval_zero, &zero, &[], th.clone());
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("V3", Status::Fail, "zero"),
        "{v:?}"
    );
    let twin = run_with(&[
        ("loss", falling.clone()),
        (
            "metrics/mAP50(B)",
            vec![(200, 0.0), (400, 0.01), (600, 0.08), (800, 0.2)],
        ),
    ]);
    assert_eq!(ask(eval_zero, &twin, &[], th.clone()).status, Status::Pass);
    // Two zero evaluations at the start of a run: too early to tell.
    let early = run_with(&[("loss", falling), ("map", vec![(200, 0.0), (400, 0.0)])]);
    assert_eq!(ask(eval_zero, &early, &[], th.clone()).status, Status::Skip);
    // A heatmap loss is not an mAP.
    let heat = run_with(&[("heatmap_loss", vec![(200, 0.0), (400, 0.0), (600, 0.0)])]);
    assert_eq!(ask(eval_zero, &heat, &[], th).status, Status::Skip);
}
