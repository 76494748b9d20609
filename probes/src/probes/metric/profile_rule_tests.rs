//! The rules that decide issue 25's false-alarm classes and issue 27's hidden bugs, each on
//! synthetic series with a known answer: a run is judged by what kind of run it is.

use super::tests::{ask, run_with, thresholds};
use super::{grad_norm::*, init_loss::*, loss::*, lr::*, rl::*};
use crate::probe::Status;

fn falling(n: u64, every: u64, from: f64, to: f64) -> Vec<(u64, f64)> {
    (1..=n)
        .map(|i| (i * every, from + (to - from) * (i as f64 / n as f64).sqrt()))
        .collect()
}

#[test]
fn a_grad_norm_above_the_band_while_the_loss_learns_is_not_always_clipping() {
    let run = run_with(&[
        ("loss", falling(60, 10, 4.2, 1.5)),
        ("grad_norm", (1..=60).map(|i| (i * 10, 9.0)).collect()),
    ]);
    let v = ask(
        grad_norm_band,
        &run,
        &["max_grad_norm=1.0"],
        thresholds("grad_norm_band"),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // The same norms while the loss does not improve: always clipping.
    let stuck = run_with(&[
        ("loss", (1..=60).map(|i| (i * 10, 4.2)).collect()),
        ("grad_norm", (1..=60).map(|i| (i * 10, 9.0)).collect()),
    ]);
    let v = ask(
        grad_norm_band,
        &stuck,
        &["max_grad_norm=1.0"],
        thresholds("grad_norm_band"),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "high"),
        "{v:?}"
    );
}

#[test]
fn a_preference_run_learns_by_its_margin_not_its_loss_offset() {
    // IPO with beta 0.1 (TRL's loss_type="ipo"): the loss starts at (1/(2*0.1))^2 = 25 and falls
    // 9% in 40 steps while the margin grows and the pre-clip norm sits at 20 over a clip of 1.
    let dpo = |margin_to: f64, acc: f64| {
        run_with(&[
            (
                "loss",
                (1..=20).map(|i| (i * 2, 25.0 - 0.11 * i as f64)).collect(),
            ),
            ("grad_norm", (1..=20).map(|i| (i * 2, 20.0)).collect()),
            (
                "rewards/margins",
                (1..=20)
                    .map(|i| (i * 2, margin_to * i as f64 / 20.0))
                    .collect(),
            ),
            (
                "rewards/accuracies",
                (1..=20).map(|i| (i * 2, acc)).collect(),
            ),
        ])
    };
    let p = thresholds("grad_norm_band");
    let v = ask(
        grad_norm_band,
        &dpo(0.34, 0.8),
        &["max_grad_norm=1.0"],
        p.clone(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // No margin grows, or the rewards rank no better than a coin flip: always clipping.
    let v = ask(
        grad_norm_band,
        &dpo(0.0, 0.8),
        &["max_grad_norm=1.0"],
        p.clone(),
    );
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "high"));
    let v = ask(grad_norm_band, &dpo(0.34, 0.45), &["max_grad_norm=1.0"], p);
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "high"));
}

#[test]
fn vanishing_gradients_after_convergence_are_a_minimum_not_dead_training() {
    let run = run_with(&[
        (
            "loss",
            (1..=30)
                .map(|i| (i * 10, 0.69 * (-(i as f64) / 3.0).exp()))
                .collect(),
        ),
        (
            "grad_norm",
            (1..=30)
                .map(|i| (i * 10, 0.5 / i as f64 / i as f64))
                .collect(),
        ),
    ]);
    let v = ask(grad_norm_band, &run, &[], thresholds("grad_norm_band"));
    assert_eq!(v.status, Status::Pass, "{v:?}");
}

#[test]
fn a_window_mean_below_ln_v_says_nothing_of_the_init() {
    // HF Trainer logs the mean of steps 1..10 at step 10: 3.2 under ln 64 = 4.16.
    let run = run_with(&[("train/loss", falling(30, 10, 3.2, 1.6))]);
    let mut run = run;
    // A trainer state is what makes a point a window mean.
    run.artifacts.push(crate::run::Artifact {
        path: "synthetic/trainer_state.json".into(),
        kind: crate::run::ArtifactKind::TrainerState,
        step: None,
        rank: None,
        bytes: 0,
    });
    let v = ask(init_loss, &run, &["vocab_size=64"], thresholds("init_loss"));
    assert_eq!(v.status, Status::Skip, "{v:?}");
    assert!(v.message.contains("mean of steps 1..10"), "{}", v.message);
}

#[test]
fn a_resumed_segment_is_judged_by_rising_only() {
    // Logs from step 10,000, flat-ish late training: not a start-of-run stall.
    let late: Vec<(u64, f64)> = (0..100)
        .map(|i| (10_010 + i * 10, 2.40 - 0.0001 * i as f64))
        .collect();
    let run = run_with(&[("loss", late)]);
    let v = ask(loss_trend, &run, &[], thresholds("loss_trend"));
    assert_ne!(v.status, Status::Warn, "{v:?}");
    assert_ne!(v.status, Status::Fail, "{v:?}");
    // A late segment that climbs fails.
    let climbing: Vec<(u64, f64)> = (0..100)
        .map(|i| (10_010 + i * 10, 2.4 + 0.01 * i as f64))
        .collect();
    let v = ask(
        loss_trend,
        &run_with(&[("loss", climbing)]),
        &[],
        thresholds("loss_trend"),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "rising"),
        "{v:?}"
    );
}

#[test]
fn a_warmup_longer_than_the_run_never_reaches_lr_max() {
    // 300 steps of a 3,000-step warmup to 1e-3: the LR ends at 1e-4.
    let lr: Vec<(u64, f64)> = (1..=30)
        .map(|i| (i * 10, 1e-3 * (i * 10) as f64 / 3000.0))
        .collect();
    let run = run_with(&[("learning_rate", lr)]);
    let v = ask(
        lr_warmup_peak,
        &run,
        &["warmup_steps=3000", "lr_max=1e-3"],
        thresholds("lr_warmup_peak"),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "low"),
        "{v:?}"
    );
    assert!(v.message.contains("longer than the run"), "{}", v.message);
}

#[test]
fn the_warmup_peak_is_read_one_logging_interval_past_warmup() {
    // Warmup 6 steps, logged every 5: step 5 is on the ramp, step 10 past the peak (cosine).
    let lr: Vec<(u64, f64)> = vec![(5, 6.67e-4), (10, 9.92e-4), (15, 9.47e-4), (60, 1e-7)];
    let run = run_with(&[("learning_rate", lr)]);
    let v = ask(
        lr_warmup_peak,
        &run,
        &[
            "warmup_steps=6",
            "lr_max=1e-3",
            "schedule=warmup_cosine",
            "total_steps=60",
        ],
        thresholds("lr_warmup_peak"),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
}

#[test]
fn both_log_probs_collapsing_fails_whatever_the_margins_and_names_the_lr() {
    let run = run_with(&[
        (
            "rewards/margins",
            (1..=20).map(|i| (i * 10, 2.0 * i as f64)).collect(),
        ),
        (
            "rewards/accuracies",
            (1..=20).map(|i| (i * 10, 1.0)).collect(),
        ),
        (
            "logps/chosen",
            (1..=20).map(|i| (i * 10, -4.0 - 15.0 * i as f64)).collect(),
        ),
        (
            "logps/rejected",
            (1..=20).map(|i| (i * 10, -4.0 - 30.0 * i as f64)).collect(),
        ),
    ]);
    let v = ask(dpo_health, &run, &["lr_max=0.1"], thresholds("dpo_health"));
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "collapse"),
        "{v:?}"
    );
    assert!(v.message.contains("learning_rate is 0.1"), "{}", v.message);
    // Hard preference data: a growing margin at 0.66 accuracy is healthy.
    let hard = run_with(&[
        (
            "rewards/margins",
            (1..=20).map(|i| (i * 10, 0.04 * i as f64)).collect(),
        ),
        (
            "rewards/accuracies",
            (1..=20).map(|i| (i * 10, 0.66)).collect(),
        ),
        (
            "logps/chosen",
            (1..=20)
                .map(|i| (i * 10, -40.0 - 0.05 * i as f64))
                .collect(),
        ),
        (
            "logps/rejected",
            (1..=20).map(|i| (i * 10, -40.0 - 0.2 * i as f64)).collect(),
        ),
    ]);
    let v = ask(dpo_health, &hard, &[], thresholds("dpo_health"));
    assert_eq!(v.status, Status::Pass, "{v:?}");
}

#[test]
fn a_divergence_that_recovers_is_still_a_divergence() {
    // nanoGPT at LR 1.0: 3.8 → 17.6 → 68.7 in two steps, then parked at 3.1 for the run.
    let mut v: Vec<(u64, f64)> = vec![(0, 4.2), (1, 3.82), (2, 17.6), (3, 68.7)];
    v.extend((4..300).map(|i| (i, 3.1 + 0.5 * (-(i as f64) / 20.0).exp())));
    let run = run_with(&[("loss", v)]);
    let out = ask(loss_trend, &run, &["lr_max=1.0"], thresholds("loss_trend"));
    assert_eq!(
        (out.status, out.outcome.as_str()),
        (Status::Fail, "rising"),
        "{out:?}"
    );
    assert!(out.message.contains("lr_max is 1 here"), "{}", out.message);
    // A healthy curve with ordinary noise is no event.
    let calm: Vec<(u64, f64)> = (0..300)
        .map(|i| {
            (
                i,
                1.5 + 2.7 * (-(i as f64) / 40.0).exp() + 0.05 * ((i % 7) as f64 - 3.0),
            )
        })
        .collect();
    let out = ask(
        loss_trend,
        &run_with(&[("loss", calm)]),
        &[],
        thresholds("loss_trend"),
    );
    assert_eq!(out.status, Status::Pass, "{out:?}");
}

#[test]
fn a_detector_loss_is_judged_from_its_peak() {
    use crate::metrics::{MetricSet, Unit};
    use std::path::Path;
    // An assigner-based detector: the summed loss climbs from 3 to a peak of 10 at epoch 8 as
    // more boxes are matched, then falls to `tail_to`; mAP50 is `map` from epoch 11 on.
    let run = |tail_to: f64, map: f64| {
        let loss: Vec<(u64, f64)> = (1..=30)
            .map(|e| {
                let e = e as f64;
                let v = if e <= 8.0 {
                    2.0 + e
                } else {
                    10.0 - (10.0 - tail_to) * (e - 8.0) / 22.0
                };
                (e as u64, v)
            })
            .collect();
        let mut loss = super::tests::series_at("loss", "r/results.csv", None, loss);
        loss.unit = Unit::Epoch;
        let maps: Vec<(u64, f64)> = (1..=30)
            .map(|e| (e, if e > 10 { map } else { 0.0 }))
            .collect();
        let mut m = super::tests::series_at("metrics/mAP50(B)", "r/results.csv", None, maps);
        m.unit = Unit::Epoch;
        crate::run::Run::from_metrics(Path::new("r"), MetricSet::new(vec![loss, m]))
    };
    // Healthy: judged from the peak, the loss falls 10 → 6.
    let v = ask(loss_trend, &run(6.0, 0.5), &[], thresholds("loss_trend"));
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert!(v.measured.contains("from its peak at epoch 8"), "{v:?}");
    // Boxes that never match: mAP50 0.001 at every evaluation while the loss falls from its
    // peak (10 → 8.8): V3, not "a convergence problem first".
    let v = ask(
        super::systems::eval_zero,
        &run(8.8, 0.001),
        &[],
        thresholds("eval_zero"),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "zero"),
        "{v:?}"
    );
}

#[test]
fn grpo_completions_that_come_to_the_cap_drift_even_without_room_to_grow() {
    // A 12-token cap over completions that start at 8 tokens: length can grow 1.5× at most, but
    // the share cut at the cap goes from 0 to 1 while the reward climbs (a count reward).
    let run = |clip_to: f64| {
        run_with(&[
            (
                "clip_ratio/high_max",
                (1..=30).map(|i| (i * 5, 0.0)).collect(),
            ),
            (
                "frac_reward_zero_std",
                (1..=30).map(|i| (i * 5, 0.1)).collect(),
            ),
            (
                "completions/mean_length",
                (1..=30)
                    .map(|i| (i * 5, (8.0 + i as f64).min(8.0 + 4.0 * clip_to)))
                    .collect(),
            ),
            (
                "completions/clipped_ratio",
                (1..=30)
                    .map(|i| (i * 5, if i <= 1 { 0.0 } else { clip_to }))
                    .collect(),
            ),
            (
                "reward",
                (1..=30).map(|i| (i * 5, 0.7 + 0.05 * i as f64)).collect(),
            ),
        ])
    };
    let all = |r: &crate::run::Run| {
        let facts = crate::facts::Facts::new();
        let c = crate::device::Compute::cpu();
        super::grpo_signal::grpo_signal(&crate::probe::ProbeCtx {
            run: r,
            facts: &facts,
            profile: &crate::profile::Profile::of(r, &facts),
            params: &thresholds("grpo_signal"),
            compute: &c,
            baseline: None,
        })
    };
    let hacked = run(1.0);
    let h5: Vec<_> = all(&hacked)
        .into_iter()
        .filter(|v| v.entry == "H5")
        .collect();
    assert!(h5.iter().any(|v| v.status == Status::Warn), "{h5:?}");
    // Completions that stay clear of the cap: no H5.
    let fine = run(0.0);
    assert!(
        !all(&fine)
            .iter()
            .any(|v| v.entry == "H5" && v.status != Status::Pass),
        "{:?}",
        all(&fine)
    );
}
