//! Verdicts that stay right on real run shapes (issue 14): sparse and late logs, windows in
//! steps, scale-free thresholds, warn outcomes distinct from fail outcomes.

use super::tests::{ask, run_with, thresholds};
use super::{grad_norm::*, loss::*};
use crate::metrics::Point;
use crate::probe::Status;
use crate::probes::util::{ema, rolling_mean};

fn pts(v: &[(u64, f64)]) -> Vec<Point> {
    v.iter()
        .map(|&(step, value)| Point {
            step,
            value,
            wall_time: None,
        })
        .collect()
}

#[test]
fn rolling_means_and_emas_span_steps_not_points() {
    // logged every 10 steps: a 20-step window holds 2 points, not 20 (200 steps)
    let every10: Vec<(u64, f64)> = (1..=30).map(|i| (i * 10, i as f64)).collect();
    let r = rolling_mean(&pts(&every10), 20);
    let last = r.last().unwrap();
    assert_eq!(last.0, 300);
    assert!((last.1 - 29.5).abs() < 1e-9, "{last:?}");
    // a 50-step EMA over points 100 steps apart follows the series almost at once
    let sparse: Vec<(u64, f64)> = vec![(100, 10.0), (200, 0.0)];
    let e = ema(&pts(&sparse), 50.0);
    assert!(
        e[1].1 < 0.2,
        "EMA after 100 steps of a 50-step span: {}",
        e[1].1
    );
    // logged every step, the EMA is the classic one
    let dense: Vec<(u64, f64)> = vec![(1, 10.0), (2, 0.0)];
    let e = ema(&pts(&dense), 50.0);
    assert!((e[1].1 - (10.0 - 10.0 * 2.0 / 51.0)).abs() < 1e-9);
}

#[test]
fn loss_first_logged_after_the_window_is_judged_over_its_own_span() {
    // HF logging_steps=500 / a resumed run: the loss starts at step 500 and falls 48%
    let falling: Vec<(u64, f64)> = (1..=20)
        .map(|i| (i * 500, 3.0 - 1.44 * (i - 1) as f64 / 19.0))
        .collect();
    let v = ask(
        loss_trend,
        &run_with(&[("loss", falling)]),
        &[],
        thresholds("loss_trend"),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert!(
        v.measured.contains("first logged at step 500"),
        "{}",
        v.measured
    );
    // the same late start with a rising loss still fails
    let rising: Vec<(u64, f64)> = (1..=20).map(|i| (i * 500, 2.0 + 0.05 * i as f64)).collect();
    let v = ask(
        loss_trend,
        &run_with(&[("loss", rising)]),
        &[],
        thresholds("loss_trend"),
    );
    assert_eq!(v.status, Status::Fail, "{v:?}");
}

#[test]
fn grad_norm_band_window_is_steps_with_sparse_logging() {
    // logged every 10 steps, in band except 20 steps at 9: the 20-step window over them is out
    // of band (a 20-point window would dilute them over 200 steps); one window is a warn
    let mut g: Vec<(u64, f64)> = (1..=100).map(|i| (i * 10, 1.0)).collect();
    g[50].1 = 9.0;
    g[51].1 = 9.0;
    let v = ask(
        grad_norm_band,
        &run_with(&[("grad_norm", g)]),
        &[],
        thresholds("grad_norm_band"),
    );
    assert_eq!(v.status, Status::Warn, "{v:?}");
    let mx = v.values.get("rolling_max").copied().unwrap();
    assert!(mx > 5.0, "rolling max over 20 steps: {mx}");
}

#[test]
fn preference_and_policy_gradient_losses_are_not_judged_against_ln_v() {
    use super::init_loss::init_loss;
    let p = thresholds("init_loss");
    let flat = |v: f64| (1..=20).map(|t| (t * 10, v)).collect::<Vec<_>>();
    // DPO starts at ln 2 with policy = reference: a pass, from the fact or from TRL's series.
    let dpo = run_with(&[("loss", flat(0.6881))]);
    let v = ask(
        init_loss,
        &dpo,
        &["phase=dpo", "vocab_size=50257"],
        p.clone(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    let dpo_series = run_with(&[("loss", flat(0.6881)), ("rewards/margins", flat(0.0))]);
    let v = ask(init_loss, &dpo_series, &["vocab_size=50257"], p.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // Before this, both failed as "low: weights were loaded" against ln 50257 = 10.8.
    let ce = run_with(&[("loss", flat(0.6881))]);
    let v = ask(
        init_loss,
        &ce,
        &["vocab_size=50257", "from_scratch=true"],
        p.clone(),
    );
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "low"));
    // GRPO's loss starts near 0 by design: skip, with the reason.
    let grpo = run_with(&[
        ("loss", flat(0.0034)),
        ("completions/mean_length", flat(40.0)),
    ]);
    let v = ask(init_loss, &grpo, &["vocab_size=50257"], p);
    assert_eq!(v.status, Status::Skip, "{v:?}");
    assert!(v.message.contains("policy-gradient"), "{v:?}");
}

#[test]
fn a_fine_tune_is_not_judged_by_a_from_scratch_band() {
    let small_first: Vec<(u64, f64)> = (1..=20).map(|t| (t * 10, 0.097)).collect();
    let run = run_with(&[("grad_norm", small_first)]);
    let p = thresholds("first_grad_norm");
    let v = ask(first_grad_norm, &run, &[], p.clone());
    assert_eq!((v.status, v.outcome.as_str()), (Status::Warn, "small"));
    let v = ask(first_grad_norm, &run, &["from_scratch=false"], p.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // Large but under the fail band: a from-scratch run warns; a run not known to start from
    // random weights (a fresh head on a trained body starts larger) is not judged; far above
    // the band fails whatever the start.
    let large = run_with(&[("grad_norm", (1..=20).map(|t| (t * 10, 12.0)).collect())]);
    let v = ask(first_grad_norm, &large, &["init=scratch"], p.clone());
    assert_eq!((v.status, v.outcome.as_str()), (Status::Warn, "large"));
    let v = ask(first_grad_norm, &large, &[], p.clone());
    assert_eq!(v.status, Status::Skip, "{v:?}");
    assert!(v.message.contains("init=scratch"), "{v:?}");
    // Its start not stated, but its first loss at or above chance: it looks untrained (or its
    // init is broken), so the band applies; a first loss under chance looks trained.
    let at_chance = |l0: f64| {
        run_with(&[
            ("grad_norm", (1..=20).map(|t| (t * 10, 12.0)).collect()),
            ("loss", (1..=20).map(|t| (t * 10, l0)).collect()),
        ])
    };
    let v = ask(
        first_grad_norm,
        &at_chance(28.7),
        &["vocab_size=512"],
        p.clone(),
    );
    assert_eq!(v.status, Status::Warn, "{v:?}");
    let v = ask(
        first_grad_norm,
        &at_chance(0.78),
        &["num_classes=4"],
        p.clone(),
    );
    assert_eq!(v.status, Status::Skip, "{v:?}");
    // An init inferred from the first loss alone ("at ln V" allows 0.5 either side) is checked
    // against chance itself: an SFT run starting at 3.48 under ln 48 = 3.87 is not judged, one
    // starting at 3.95 is.
    let sft = |l0: f64| {
        run_with(&[
            ("grad_norm", (1..=20).map(|t| (t, 15.0)).collect()),
            (
                "loss",
                (1..=20).map(|t| (t, l0 - 0.02 * t as f64)).collect(),
            ),
        ])
    };
    let facts = crate::facts::Facts::from_args(&["vocab_size=48", "phase=sft"]).unwrap();
    let below = sft(3.50);
    let profile = crate::profile::Profile::of(&below, &facts);
    assert_eq!(
        (profile.init.value, profile.init.sure),
        (crate::profile::Init::Scratch, crate::profile::Sure::Low)
    );
    let v = ask(
        first_grad_norm,
        &below,
        &["vocab_size=48", "phase=sft"],
        p.clone(),
    );
    assert_eq!(v.status, Status::Skip, "{v:?}");
    let v = ask(
        first_grad_norm,
        &sft(3.97),
        &["vocab_size=48", "phase=sft"],
        p.clone(),
    );
    assert_eq!(v.status, Status::Warn, "{v:?}");
    let huge = run_with(&[("grad_norm", (1..=20).map(|t| (t * 10, 150.0)).collect())]);
    assert_eq!(ask(first_grad_norm, &huge, &[], p).status, Status::Fail);
    // A fine-tune whose loss barely moves may have started at its floor: skip, not "slow".
    let flat: Vec<(u64, f64)> = (1..=200).map(|t| (t, 1.614 - 2e-5 * t as f64)).collect();
    let run = run_with(&[("loss", flat)]);
    let p = thresholds("loss_trend");
    let v = ask(loss_trend, &run, &["from_scratch=false"], p.clone());
    assert_eq!(v.status, Status::Skip, "{v:?}");
    assert!(v.message.contains("fine-tune"), "{v:?}");
    let v = ask(loss_trend, &run, &[], p);
    assert_eq!(v.status, Status::Warn, "{v:?}");
}

#[test]
fn the_val_gap_is_judged_at_the_loss_scale() {
    let p = thresholds("val_gap");
    let run = |train: f64, val: f64| {
        run_with(&[
            ("loss", (1..=400).map(|t| (t, train)).collect()),
            ("eval_loss", (1..=4).map(|i| (i * 100, val)).collect()),
        ])
    };
    // A gap of 1.05 on a loss of 8 is 13%: it used to fail as "overfit".
    let v = ask(val_gap, &run(8.0, 9.05), &[], p.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // Val at 6× train on a small loss runs away though the absolute gap is only 0.5, once
    // validation gets worse while training improves.
    let rising = run_with(&[
        (
            "loss",
            (1..=400).map(|t| (t, 0.3 - 0.0005 * t as f64)).collect(),
        ),
        (
            "eval_loss",
            (1..=4).map(|i| (i * 100, 0.45 + 0.05 * i as f64)).collect(),
        ),
    ]);
    let v = ask(val_gap, &rising, &[], p.clone());
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "overfit"),
        "{v:?}"
    );
    // The same relative gap with validation still at its best at every eval is the
    // generalisation gap of a small set (training loss near 0), not overfitting.
    let falling = run_with(&[
        (
            "loss",
            (1..=400).map(|t| (t, 0.3 - 0.0005 * t as f64)).collect(),
        ),
        (
            "eval_loss",
            vec![(100, 0.33), (200, 0.27), (300, 0.24), (400, 0.23)],
        ),
    ]);
    let v = ask(val_gap, &falling, &[], p.clone());
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Pass, "pass"),
        "{v:?}"
    );
    assert!(v.message.contains("of its best"), "{v:?}");
    // A mild late rise (17% above its best, at 3× a training loss near 0.13) is not a runaway
    // either; a rise to 30% above the best (`rising`) is.
    let wobble = run_with(&[
        ("loss", (1..=400).map(|t| (t, 0.127)).collect()),
        (
            "eval_loss",
            vec![(100, 0.50), (200, 0.34), (300, 0.36), (400, 0.40)],
        ),
    ]);
    let v = ask(val_gap, &wobble, &[], p.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // The seed's case still fails: 1.2 above a loss of 2.
    let v = ask(val_gap, &run(2.0, 3.2), &[], p);
    assert_eq!(v.status, Status::Fail, "{v:?}");
}

#[test]
fn always_clipping_is_judged_against_the_runs_own_clip_threshold() {
    let p = thresholds("grad_norm_band");
    // A LoRA run clipped at 0.3 whose pre-clip norm sits at 2: clipped 6× every step.
    let run = run_with(&[("grad_norm", (1..=200).map(|t| (t, 2.0)).collect())]);
    let v = ask(grad_norm_band, &run, &[], p.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    let v = ask(grad_norm_band, &run, &["max_grad_norm=0.3"], p.clone());
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "high"),
        "{v:?}"
    );
    // A LoRA run with a median norm of 0.05 is healthy.
    let lora = run_with(&[("grad_norm", (1..=200).map(|t| (t, 0.05)).collect())]);
    assert_eq!(
        ask(grad_norm_band, &lora, &["max_grad_norm=1.0"], p).status,
        Status::Pass
    );
}

#[test]
fn an_adapters_small_norm_jumping_tenfold_is_not_a_spike() {
    let p = thresholds("grad_norm_spikes");
    let mut g: Vec<(u64, f64)> = (1..=400).map(|t| (t, 0.05)).collect();
    for t in [50usize, 60, 70, 80, 90] {
        g[t].1 = 0.6;
    }
    let v = ask(
        grad_norm_spikes,
        &run_with(&[("grad_norm", g.clone())]),
        &[],
        p.clone(),
    );
    assert_ne!(v.status, Status::Fail, "{v:?}");
    // The same jumps on a norm of 1 are spikes (10× the median, above the floor).
    for x in g.iter_mut() {
        x.1 *= 20.0;
    }
    let v = ask(grad_norm_spikes, &run_with(&[("grad_norm", g)]), &[], p);
    assert_eq!(v.status, Status::Fail, "{v:?}");
}

#[test]
fn a_language_models_nan_from_step_one_is_masking_not_z_loss() {
    let p = thresholds("loss_degenerate");
    let nan: Vec<(u64, f64)> = (1..=50).map(|t| (t, f64::NAN)).collect();
    let v = ask(
        loss_degenerate,
        &run_with(&[("loss", nan.clone())]),
        &["vocab_size=50257"],
        p.clone(),
    );
    assert_eq!(
        (v.entry.as_str(), v.outcome.as_str()),
        ("L2", "nan"),
        "{v:?}"
    );
    assert!(v.message.contains("-100"), "{v:?}");
    let v = ask(
        loss_degenerate,
        &run_with(&[("loss", nan)]),
        &["domain=vision", "num_classes=10"],
        p,
    );
    assert_eq!(v.entry, "V5");
}

#[test]
fn a_loss_at_a_small_scale_is_held_to_the_slope_floor_at_its_own_level() {
    // A box regressor on normalised targets: 1e-3 falling to 2e-5 in 300 steps is fast.
    let small: Vec<(u64, f64)> = (1..=60)
        .map(|i| (i * 5, 1e-3 * (-(i as f64) / 12.0).exp() + 1e-5))
        .collect();
    let v = ask(
        loss_trend,
        &run_with(&[("loss", small)]),
        &[],
        thresholds("loss_trend"),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // A cross-entropy barely moving (0.0005 per 100 steps at 2.3) is still slow.
    let flat: Vec<(u64, f64)> = (1..=60)
        .map(|i| (i * 5, 2.3 - 5e-6 * (i * 5) as f64))
        .collect();
    let v = ask(
        loss_trend,
        &run_with(&[("loss", flat)]),
        &[],
        thresholds("loss_trend"),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "slow"),
        "{v:?}"
    );
}

#[test]
fn a_short_dpo_run_with_a_small_margin_but_high_accuracy_is_not_flat() {
    use super::rl::dpo_health;
    // 20 steps of TRL DPO at beta 0.1: margins 0 → 0.04, accuracies 0.875.
    let run = run_with(&[
        (
            "rewards/margins",
            (1..=10).map(|i| (i * 2, 0.004 * i as f64)).collect(),
        ),
        (
            "rewards/accuracies",
            (1..=10).map(|i| (i * 2, 0.5 + 0.04 * i as f64)).collect(),
        ),
    ]);
    let v = ask(dpo_health, &run, &[], thresholds("dpo_health"));
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // The same small margin at chance accuracy is flat.
    let flat = run_with(&[
        (
            "rewards/margins",
            (1..=10).map(|i| (i * 2, 0.004 * i as f64)).collect(),
        ),
        (
            "rewards/accuracies",
            (1..=10).map(|i| (i * 2, 0.5)).collect(),
        ),
    ]);
    let v = ask(dpo_health, &flat, &[], thresholds("dpo_health"));
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "flat_margin")
    );
}

#[test]
fn a_loss_that_overshoots_its_start_and_recovers_is_an_lr_too_high() {
    let p = thresholds("loss_trend");
    // From 4.19 at step 10 up to 5.41 at step 40, then down to 3.9 by step 300 (a 100×
    // LR under Adafactor): the window from step 50 opens on the peak and reads -25% as learning.
    let over: Vec<(u64, f64)> = (1..=30)
        .map(|i| {
            let t = i * 10;
            let v = if t <= 40 {
                4.19 + 1.22 * (t - 10) as f64 / 30.0
            } else {
                3.9 + 1.5 * (-((t - 40) as f64) / 40.0).exp()
            };
            (t, v)
        })
        .collect();
    let v = ask(loss_trend, &run_with(&[("loss", over)]), &[], p.clone());
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "overshot"),
        "{v:?}"
    );
    assert!(v.message.contains("rose to"), "{v:?}");
    // One noisy batch in the head is no rise (a 3-point running median drops it), and a loss
    // that falls from its first value is healthy.
    let noisy: Vec<(u64, f64)> = (1..=30)
        .map(|i| (i * 10, if i == 3 { 6.0 } else { 4.16 - 0.08 * i as f64 }))
        .collect();
    let v = ask(loss_trend, &run_with(&[("loss", noisy)]), &[], p);
    assert_eq!(v.status, Status::Pass, "{v:?}");
}

#[test]
fn one_hard_batch_in_a_per_batch_log_is_no_divergence() {
    let p = thresholds("loss_trend");
    // A loss logged at every step, falling 2.3 → 0.5 with batch noise; one batch at step 400
    // reads 2.0 (×3.9 the lowest of the 10 before it) and the next is back at 0.5.
    let noisy =
        |t: u64| 2.3 * (-(t as f64) / 80.0).exp() + 0.45 + 0.1 * ((t * 7919 % 13) as f64 / 13.0);
    let mut pts: Vec<(u64, f64)> = (1..=600).map(|t| (t, noisy(t))).collect();
    pts[399].1 = 2.0;
    let v = ask(
        loss_trend,
        &run_with(&[("loss", pts.clone())]),
        &[],
        p.clone(),
    );
    assert_ne!(v.outcome, "rising", "{v:?}");
    // Two batches up in a row is the loss itself going up: a divergence.
    pts[400].1 = 2.1;
    let v = ask(
        loss_trend,
        &run_with(&[("loss", pts.clone())]),
        &[],
        p.clone(),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "rising"),
        "{v:?}"
    );
    // A loss averaged over 10 steps (one point per logging window) that jumps ×3 for one
    // window diverged over all ten of its steps.
    let mut avg: Vec<(u64, f64)> = (1..=60).map(|i| (i * 10, noisy(i * 10))).collect();
    avg[40].1 = 2.4;
    let v = ask(loss_trend, &run_with(&[("loss", avg)]), &[], p);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "rising"),
        "{v:?}"
    );
}
