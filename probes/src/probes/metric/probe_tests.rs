//! Metric-probe tests, part two: init loss, LR schedule shapes, warm-up peak and grad-norm bands
//! (helpers shared with `tests.rs`).

use super::tests::*;
use super::{grad_norm::*, grad_scaler::*, init_loss::*, loss::*, lr::*, rl::*};
use crate::device::Compute;
use crate::facts::Facts;
use crate::probe::{ProbeCtx, Status};

#[test]
fn init_loss_against_ln_v() {
    let p = thresholds("init_loss");
    let healthy = run_with(&[("loss", vec![(1, 6.3), (2, 6.2)])]);
    assert_eq!(
        ask(init_loss, &healthy, &["vocab_size=512"], p.clone()).status,
        Status::Pass
    );
    let bad = run_with(&[("loss", vec![(1, 28.7)])]);
    let v = ask(init_loss, &bad, &["vocab_size=512"], p.clone());
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "high"));
    assert!((v.values["ln_v"] - 512f64.ln()).abs() < 1e-9);
    let classes = run_with(&[("loss", vec![(1, 2.31)])]);
    assert_eq!(
        ask(init_loss, &classes, &["num_classes=10"], p.clone()).status,
        Status::Pass
    );
    assert_eq!(
        ask(init_loss, &classes, &[], p.clone()).status,
        Status::Skip,
        "needs vocab_size"
    );
    let late = run_with(&[("loss", vec![(500, 2.0)])]);
    assert_eq!(
        ask(init_loss, &late, &["vocab_size=512"], p.clone()).status,
        Status::Skip
    );
    let nan_first = run_with(&[("loss", vec![(1, f64::NAN), (2, 6.2)])]);
    assert_eq!(
        ask(init_loss, &nan_first, &["vocab_size=512"], p).status,
        Status::Pass
    );
}

#[test]
fn lr_schedule_shapes() {
    // HF warmup + cosine, LR 0.0 at step 1: healthy, fits the declared curve.
    let hf: Vec<(u64, f64)> = (1..=300)
        .map(|t| (t, warmup_cosine(t, 30.0, 300.0, 1e-3)))
        .collect();
    let r = run_with(&[("learning_rate", hf)]);
    let v = ask(
        lr_schedule,
        &r,
        &["schedule=warmup_cosine", "warmup_steps=30", "lr_max=0.001"],
        lr_params(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert_eq!(ask(lr_schedule, &r, &[], lr_params()).status, Status::Pass);
    // Never stepped: constant at lr_max / W.
    let flat = run_with(&[("learning_rate", (1..=300).map(|t| (t, 3.3e-5)).collect())]);
    let v = ask(
        lr_schedule,
        &flat,
        &["schedule=warmup_cosine", "warmup_steps=30"],
        lr_params(),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "constant_nonzero")
    );
    // Constant with no declared schedule is healthy.
    assert_eq!(
        ask(lr_schedule, &flat, &[], lr_params()).status,
        Status::Pass
    );
    // A config's `sched` (timm's args.yaml) names a smooth schedule: a flat LR over at least
    // 30% of the planned run contradicts it, whatever the warmup's unit; a flat stretch shorter
    // than that, and schedules that may stay flat (step, plateau, constant), do not.
    let named = |facts: &[&str]| ask(lr_schedule, &flat, facts, lr_params());
    let v = named(&["sched=cosine", "total_steps=300"]);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "constant_nonzero"),
        "{v:?}"
    );
    assert!(v.message.contains("cosine LR schedule"), "{}", v.message);
    for facts in [
        &["sched=cosine", "total_steps=3000"][..],
        &["sched=cosine"][..],
        &["sched=step", "total_steps=300"][..],
        &["sched=plateau", "total_steps=300"][..],
        &["sched=constant_with_warmup", "total_steps=300"][..],
    ] {
        assert_eq!(named(facts).status, Status::Pass, "{facts:?}");
    }
    // A cosine's period T_max (Lightning hparams: scheduler: cosine, t_max: 8) with no run
    // length: the epochs the flat LR spans (7 of 8) are at least that many scheduler steps.
    let epochs = |last: u64| {
        run_with(&[
            ("learning_rate", (1..=300).map(|t| (t, 3e-3)).collect()),
            (
                "epoch",
                (1..=300)
                    .map(|t| (t, ((t - 1) * last / 299) as f64))
                    .collect(),
            ),
        ])
    };
    let facts = ["sched=cosine", "t_max=8"];
    let v = ask(lr_schedule, &epochs(7), &facts, lr_params());
    assert_eq!(v.outcome, "constant_nonzero", "{v:?}");
    assert!(v.message.contains("T_max = 8"), "{}", v.message);
    // One epoch of a 100-epoch cosine may look flat.
    let v = ask(
        lr_schedule,
        &epochs(1),
        &["sched=cosine", "t_max=100"],
        lr_params(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // Constant zero always fails.
    let zero = run_with(&[("learning_rate", (1..=50).map(|t| (t, 0.0)).collect())]);
    assert_eq!(
        ask(lr_schedule, &zero, &[], lr_params()).outcome,
        "constant_zero"
    );
    // Step decay declared as cosine: jumps.
    let step: Vec<(u64, f64)> = (1..=300)
        .map(|t| {
            (
                t,
                if t < 100 {
                    1e-3
                } else if t < 200 {
                    1e-4
                } else {
                    1e-5
                },
            )
        })
        .collect();
    let v = ask(
        lr_schedule,
        &run_with(&[("learning_rate", step.clone())]),
        &["schedule=warmup_cosine"],
        lr_params(),
    );
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "jumps"));
    assert_eq!(
        ask(
            lr_schedule,
            &run_with(&[("learning_rate", step)]),
            &["schedule=step"],
            lr_params()
        )
        .status,
        Status::Pass
    );
    // One point, NaN only, missing series: never a panic.
    assert_eq!(
        ask(
            lr_schedule,
            &run_with(&[("learning_rate", vec![(1, f64::NAN)])]),
            &[],
            lr_params()
        )
        .status,
        Status::Skip
    );
    assert_eq!(
        ask(lr_schedule, &run_with(&[]), &[], lr_params()).status,
        Status::Skip
    );
    assert_eq!(
        ask(
            lr_schedule,
            &run_with(&[("learning_rate", vec![(1, 1e-3)])]),
            &[],
            lr_params()
        )
        .status,
        Status::Pass
    );
}

#[test]
fn warmup_peak_and_grad_norms() {
    let hf: Vec<(u64, f64)> = (1..=300)
        .map(|t| (t, warmup_cosine(t, 30.0, 300.0, 1e-3)))
        .collect();
    let p = thresholds("lr_warmup_peak");
    let v = ask(
        lr_warmup_peak,
        &run_with(&[("learning_rate", hf)]),
        &["warmup_steps=30", "lr_max=0.001"],
        p.clone(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    let low: Vec<(u64, f64)> = (1..=300).map(|t| (t, 3.3e-5)).collect();
    assert_eq!(
        ask(
            lr_warmup_peak,
            &run_with(&[("learning_rate", low)]),
            &["warmup_steps=30", "lr_max=0.001"],
            p.clone()
        )
        .outcome,
        "low"
    );
    // An LR that overshoots lr_max is a warning named "high", never the failure branch "low".
    let over: Vec<(u64, f64)> = (1..=300)
        .map(|t| (t, 1.5 * warmup_cosine(t, 30.0, 300.0, 1e-3)))
        .collect();
    let v = ask(
        lr_warmup_peak,
        &run_with(&[("learning_rate", over)]),
        &["warmup_steps=30", "lr_max=0.001"],
        p.clone(),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "high"),
        "{v:?}"
    );
    // 100× the lr_max the user meant: the configured LR is wrong (fail, same label).
    let x100: Vec<(u64, f64)> = (1..=300)
        .map(|t| (t, 100.0 * warmup_cosine(t, 30.0, 300.0, 1e-3)))
        .collect();
    let v = ask(
        lr_warmup_peak,
        &run_with(&[("learning_rate", x100)]),
        &["warmup_steps=30", "lr_max=0.001"],
        p,
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "high"),
        "{v:?}"
    );

    let band = thresholds("grad_norm_band");
    let hot = run_with(&[("grad_norm", (1..=100).map(|t| (t, 20.0)).collect())]);
    assert_eq!(ask(grad_norm_band, &hot, &[], band.clone()).outcome, "high");
    let dead = run_with(&[("grad_norm", (1..=100).map(|t| (t, 1e-4)).collect())]);
    assert_eq!(ask(grad_norm_band, &dead, &[], band.clone()).outcome, "low");
    let ok = run_with(&[("grad_norm", (1..=100).map(|t| (t, 1.0)).collect())]);
    assert_eq!(ask(grad_norm_band, &ok, &[], band).status, Status::Pass);

    let sp = thresholds("grad_norm_spikes");
    let mut g: Vec<(u64, f64)> = (1..=200).map(|t| (t, 1.0)).collect();
    g[150].1 = 500.0;
    assert_eq!(
        ask(
            grad_norm_spikes,
            &run_with(&[("grad_norm", g.clone())]),
            &[],
            sp.clone()
        )
        .outcome,
        "once"
    );
    for i in [30, 60, 90, 120] {
        g[i].1 = 300.0;
    }
    assert_eq!(
        ask(
            grad_norm_spikes,
            &run_with(&[("grad_norm", g)]),
            &[],
            sp.clone()
        )
        .outcome,
        "many"
    );

    // A group-relative policy gradient (GRPO, RLOO): steps with no reward spread have a norm
    // of 0, a step where one group has spread 15× the rolling median. Four such jumps in 200
    // steps fail an LM run; in a GRPO run only the absolute bound counts.
    let mut g: Vec<(u64, f64)> = (1..=200)
        .map(|t| (t, if t % 3 == 0 { 0.0 } else { 1.0 }))
        .collect();
    for i in [40, 80, 120, 160] {
        g[i].1 = 15.0;
    }
    let heavy = run_with(&[("grad_norm", g.clone())]);
    assert_eq!(
        ask(grad_norm_spikes, &heavy, &[], sp.clone()).outcome,
        "many"
    );
    let v = ask(grad_norm_spikes, &heavy, &["phase=grpo"], sp.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    g[100].1 = 500.0;
    let v = ask(
        grad_norm_spikes,
        &run_with(&[("grad_norm", g)]),
        &["phase=grpo"],
        sp,
    );
    assert_eq!(v.outcome, "once", "{v:?}");
}

#[test]
fn loss_trend_gap_and_degenerate_losses() {
    let tp = thresholds("loss_trend");
    let falling = run_with(&[(
        "loss",
        (1..=300)
            .map(|t| (t, 6.0 * (-(t as f64) / 150.0).exp() + 2.0))
            .collect(),
    )]);
    assert_eq!(
        ask(loss_trend, &falling, &[], tp.clone()).status,
        Status::Pass
    );
    let rising = run_with(&[(
        "loss",
        (1..=300).map(|t| (t, 2.0 + t as f64 / 100.0)).collect(),
    )]);
    assert_eq!(ask(loss_trend, &rising, &[], tp.clone()).outcome, "rising");
    let crawling = run_with(&[(
        "loss",
        (1..=300).map(|t| (t, 6.24 - t as f64 * 0.0005)).collect(),
    )]);
    assert_eq!(ask(loss_trend, &crawling, &[], tp.clone()).outcome, "slow");
    assert_eq!(
        ask(loss_trend, &run_with(&[("loss", vec![(1, 3.0)])]), &[], tp).status,
        Status::Skip
    );

    let gp = thresholds("val_gap");
    let tr: Vec<(u64, f64)> = (1..=300).map(|t| (t, 2.0)).collect();
    let over = run_with(&[
        ("loss", tr.clone()),
        ("eval_loss", vec![(100, 2.5), (300, 3.5)]),
    ]);
    assert_eq!(ask(val_gap, &over, &[], gp.clone()).outcome, "overfit");
    let leak = run_with(&[("loss", tr.clone()), ("eval_loss", vec![(300, 1.5)])]);
    // Below training: training-only regularisation or a leak, which a log cannot tell apart.
    let v = ask(val_gap, &leak, &[], gp.clone());
    assert_eq!(v.status, Status::Skip, "{v:?}");
    assert!(v.message.contains("leak"), "{v:?}");
    assert_eq!(
        ask(val_gap, &run_with(&[("loss", tr)]), &[], gp).status,
        Status::Skip,
        "no eval rows"
    );

    let dp = thresholds("loss_degenerate");
    let zero = run_with(&[("loss", (1..=20).map(|t| (t, 0.0)).collect())]);
    assert_eq!(ask(loss_degenerate, &zero, &[], dp.clone()).outcome, "zero");
    let nan = run_with(&[("loss", (1..=20).map(|t| (t, f64::NAN)).collect())]);
    assert_eq!(ask(loss_degenerate, &nan, &[], dp.clone()).outcome, "nan");
    let fine = run_with(&[("loss", (1..=20).map(|t| (t, 3.0)).collect())]);
    assert_eq!(ask(loss_degenerate, &fine, &[], dp).status, Status::Pass);
}

#[test]
fn dpo_ppo_scaler_and_baseline_ratio() {
    let dp = thresholds("dpo_health");
    let n = 100u64;
    let healthy = run_with(&[
        (
            "rewards/margins",
            (1..=n).map(|t| (t, t as f64 / 20.0)).collect(),
        ),
        (
            "rewards/accuracies",
            (1..=n)
                .map(|t| (t, 0.5 + 0.3 * t as f64 / n as f64))
                .collect(),
        ),
    ]);
    assert_eq!(
        ask(dpo_health, &healthy, &[], dp.clone()).status,
        Status::Pass
    );
    let collapse = run_with(&[
        ("rewards/margins", (1..=n).map(|t| (t, 0.01)).collect()),
        ("rewards/accuracies", (1..=n).map(|t| (t, 0.5)).collect()),
        (
            "logps/chosen",
            (1..=n).map(|t| (t, -50.0 - t as f64)).collect(),
        ),
        (
            "logps/rejected",
            (1..=n).map(|t| (t, -50.0 - t as f64)).collect(),
        ),
    ]);
    assert_eq!(ask(dpo_health, &collapse, &[], dp).outcome, "collapse");

    let pp = thresholds("ppo_health");
    let kl = run_with(&[("kl", (1..=100).map(|t| (t, t as f64)).collect())]);
    assert_eq!(ask(ppo_health, &kl, &[], pp).outcome, "kl_blowup");

    let sp = thresholds("grad_scaler");
    let bad = run_with(&[(
        "loss_scale",
        (1..=100)
            .map(|t| (t, 65536.0 / 2f64.powi((t / 5) as i32)))
            .collect(),
    )]);
    assert_eq!(
        ask(grad_scaler, &bad, &[], sp.clone()).outcome,
        "collapsing"
    );
    let good = run_with(&[("loss_scale", (1..=100).map(|t| (t, 32768.0)).collect())]);
    assert_eq!(ask(grad_scaler, &good, &[], sp).status, Status::Pass);

    let rp = thresholds("grad_norm_ratio");
    let run = run_with(&[("grad_norm", (1..=50).map(|t| (t, 8.0)).collect())]);
    let base = run_with(&[("grad_norm", (1..=50).map(|t| (t, 1.0)).collect())]);
    let facts = Facts::from_args(&["accum_steps=8"]).unwrap();
    let c = Compute::cpu();
    let v = grad_norm_ratio(&ProbeCtx {
        run: &run,
        facts: &facts,
        profile: &crate::profile::Profile::of(&run, &facts),
        params: &rp,
        compute: &c,
        baseline: Some(&base),
    })
    .remove(0);
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "k_times"));
    assert_eq!(
        ask(grad_norm_ratio, &run, &[], rp).status,
        Status::Skip,
        "needs --baseline"
    );
}

#[test]
fn rl_scale_names_raw_reward_scale_and_passes_whitened_twin() {
    let th = thresholds("rl_scale");
    let raw = run_with(&[
        (
            "ppo/loss/value",
            (1..=60).map(|t| (t, 900.0 + t as f64)).collect(),
        ),
        ("ppo/returns/mean", (1..=60).map(|t| (t, 40.0)).collect()),
    ]);
    let v = ask(rl_scale, &raw, &[], th.clone());
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "raw_scale"));
    let twin = run_with(&[
        (
            "ppo/loss/value",
            (1..=60).map(|t| (t, 0.5 / t as f64)).collect(),
        ),
        ("ppo/returns/mean", (1..=60).map(|t| (t, 0.8)).collect()),
    ]);
    assert_eq!(ask(rl_scale, &twin, &[], th.clone()).status, Status::Pass);
    let none = run_with(&[("loss", (1..=60).map(|t| (t, 1.0)).collect())]);
    assert_eq!(ask(rl_scale, &none, &[], th).status, Status::Skip);
}

#[test]
fn loss_trend_on_epoch_means_and_a_loss_that_lands_on_zero() {
    let tp = thresholds("loss_trend");
    // Twelve epoch means (Keras `epoch_loss`): judged epoch against epoch, never "too few
    // points for a 50-step EMA".
    let falling = run_with(&[(
        "epoch_loss",
        (0..12)
            .map(|e| (e, 2.0 * (-(e as f64) / 4.0).exp() + 0.3))
            .collect(),
    )]);
    let v = ask(loss_trend, &falling, &[], tp.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert!(v.measured.contains("epochs"), "{}", v.measured);
    let flat = run_with(&[("epoch_loss", (0..12).map(|e| (e, 2.3)).collect())]);
    assert_eq!(ask(loss_trend, &flat, &[], tp.clone()).outcome, "rising");
    let two = run_with(&[("epoch_loss", vec![(0, 2.0), (1, 1.0)])]);
    assert_eq!(ask(loss_trend, &two, &[], tp.clone()).status, Status::Skip);
    // A loss that climbs to thousands, then sits at exactly 0 (a detector at lr0=1.0): not
    // convergence, whatever a head-versus-tail comparison says.
    let mut pts: Vec<(u64, f64)> = (1..=10)
        .map(|e| (e, 26.0 * 2f64.powi(e as i32 - 1)))
        .collect();
    pts.extend((11..=30).map(|e| (e, 0.0)));
    let zeroed = run_with(&[("epoch_loss", pts)]);
    let v = ask(loss_trend, &zeroed, &[], tp.clone());
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "rising"),
        "{v:?}"
    );
    assert!(v.message.contains("diverged"), "{}", v.message);
    // A loss that approaches 0 smoothly is not that.
    let smooth = run_with(&[(
        "loss",
        (1..=300)
            .map(|t| (t, 3.0 * (-(t as f64) / 20.0).exp()))
            .collect(),
    )]);
    assert_eq!(ask(loss_trend, &smooth, &[], tp).status, Status::Pass);
}

#[test]
fn an_undivided_accumulation_shows_as_a_clip_active_on_every_step() {
    use crate::probes::metric::grad_norm::grad_norm_ratio;
    let tp = thresholds("grad_norm_ratio");
    let run = |norm: f64| {
        run_with(&[
            (
                "loss",
                (1..=60).map(|t| (t * 5, 2.3 - t as f64 * 0.02)).collect(),
            ),
            (
                "grad_norm",
                (1..=60)
                    .map(|t| (t * 5, norm * (1.0 + 0.1 * (t as f64).sin())))
                    .collect(),
            ),
        ])
    };
    let facts = ["accum_steps=8", "max_grad_norm=1.0"];
    // 8 summed micro-batch gradients: the pre-clip norm sits at ~4× the clip on every step.
    let v = ask(grad_norm_ratio, &run(4.0), &facts, tp.clone());
    assert_eq!((v.status, v.entry.as_str()), (Status::Warn, "O9"), "{v:?}");
    // Divided: the clip is rarely active.
    let v = ask(grad_norm_ratio, &run(0.5), &facts, tp.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // No accumulation, or a trainer that divides the loss itself: no claim.
    let v = ask(
        grad_norm_ratio,
        &run(4.0),
        &["max_grad_norm=1.0"],
        tp.clone(),
    );
    assert_eq!(v.status, Status::Skip, "{v:?}");
    let v = ask(
        grad_norm_ratio,
        &run(4.0),
        &["accum_steps=8", "max_grad_norm=1.0", "framework=hf_trainer"],
        tp,
    );
    assert_eq!(v.status, Status::Skip, "{v:?}");
}

#[test]
fn an_early_val_gap_that_closes_is_not_overfitting() {
    use crate::probes::metric::loss::val_gap;
    let tp = thresholds("val_gap");
    let train: Vec<(u64, f64)> = (1..=300)
        .map(|t| (t, 2.0 + 6.0 * (-(t as f64) / 60.0).exp()))
        .collect();
    // A first evaluation of a still-untrained model far above the training loss, then the gap
    // closes: the final val loss sits at the training loss.
    let closes = run_with(&[
        ("loss", train.clone()),
        ("eval_loss", vec![(50, 20.0), (150, 2.6), (300, 2.0)]),
    ]);
    let v = ask(val_gap, &closes, &[], tp.clone());
    assert_ne!(v.outcome, "overfit", "{v:?}");
    // The same early gap that never closes is overfitting.
    let stays = run_with(&[
        ("loss", train),
        ("eval_loss", vec![(50, 20.0), (150, 9.0), (300, 9.5)]),
    ]);
    assert_eq!(ask(val_gap, &stays, &[], tp).outcome, "overfit");
}

#[test]
fn a_loss_logged_per_epoch_learns_in_few_points() {
    // Seven epoch means, 32 steps apart (HF `logging_strategy="epoch"`, Keras, Lightning on_epoch) falling from
    // 0.69 to a floor of about 0.01, noisy there: a learning run, so one early grad norm of 11.8
    // (warmup) is no always-clipping regime. Eight single batches would be needed to say so;
    // four means are enough.
    let loss: Vec<(u64, f64)> = [0.6934, 0.4761, 0.0637, 0.0128, 0.0147, 0.0233, 0.006]
        .iter()
        .enumerate()
        .map(|(e, v)| (32 * (e as u64 + 1), *v))
        .collect();
    let norms: Vec<(u64, f64)> = [0.22, 11.78, 0.9, 0.3, 0.08, 0.05, 0.03]
        .iter()
        .enumerate()
        .map(|(e, v)| (32 * (e as u64 + 1), *v))
        .collect();
    let band = thresholds("grad_norm_band");
    let r = run_with(&[("epoch_loss", loss.clone()), ("grad_norm", norms.clone())]);
    let v = ask(grad_norm_band, &r, &["max_grad_norm=1"], band.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // The same seven values as single logged batches do not tell a trend: the band judges.
    let r = run_with(&[("loss", loss), ("grad_norm", norms)]);
    let v = ask(grad_norm_band, &r, &["max_grad_norm=1"], band);
    assert_eq!(v.status, Status::Warn, "{v:?}");
}

#[test]
fn episode_returns_are_smoothed_over_episodes_not_steps() {
    // A DQN's per-episode returns (points at irregular gaps, each gap an episode's length): ~20
    // early, then ε-greedy episodes scattered around 180 with one of 427 late. One lucky
    // episode is no peak to collapse from.
    let mut pts: Vec<(u64, f64)> = Vec::new();
    let mut step = 0u64;
    for i in 0..120u64 {
        let ret = if i < 40 {
            18.0 + (i % 7) as f64
        } else if i == 110 {
            427.0
        } else {
            180.0 + 60.0 * (((i * 37) % 11) as f64 / 10.0 - 0.5)
        };
        step += ret as u64;
        pts.push((step, ret));
    }
    pts.push((step + 140, 140.0));
    let pp = thresholds("ppo_health");
    let r = run_with(&[("episode_return", pts.clone())]);
    let v = ask(ppo_health, &r, &[], pp.clone());
    assert_eq!((v.entry.as_str(), v.status), ("R1", Status::Pass), "{v:?}");
    // A real collapse over many episodes still warns: the last 30 episodes at 30.
    let mut fell = pts;
    let mut step = fell.last().unwrap().0;
    for _ in 0..30 {
        step += 30;
        fell.push((step, 30.0));
    }
    let r = run_with(&[("episode_return", fell)]);
    let v = ask(ppo_health, &r, &[], pp);
    assert_eq!((v.entry.as_str(), v.status), ("R1", Status::Warn), "{v:?}");
}

/// A reward that keeps rising while the task's own success rate, logged beside it, falls from
/// its peak is gamed; a success rate that rises with the reward, or falls with it, is not.
#[test]
fn a_reward_that_rises_while_the_success_rate_falls_is_gamed() {
    let pp = thresholds("ppo_health");
    let steps = |f: &dyn Fn(f64) -> f64| -> Vec<(u64, f64)> {
        (0..60u64)
            .map(|i| (1024 * (i + 1), f(i as f64 / 59.0)))
            .collect()
    };
    // SB3 on a reach task that pays for being near the goal: the return climbs 0 -> 70 while
    // the success rate peaks at 0.5 a third of the way in and ends near 0.1.
    let reward = steps(&|t| 70.0 * t);
    let success = steps(&|t| {
        if t < 0.33 {
            1.5 * t
        } else {
            (0.5 - 0.6 * (t - 0.33)).max(0.1)
        }
    });
    let r = run_with(&[
        ("rollout/ep_rew_mean", reward.clone()),
        ("rollout/success_rate", success),
    ]);
    let v = ask(ppo_health, &r, &[], pp.clone());
    assert_eq!(
        (v.entry.as_str(), v.status, v.outcome.as_str()),
        ("R1", Status::Fail, "reward_gamed"),
        "{v:?}"
    );
    // Success that rises with the reward: learning.
    let r = run_with(&[
        ("rollout/ep_rew_mean", reward.clone()),
        ("rollout/success_rate", steps(&|t| 0.9 * t)),
    ]);
    assert_ne!(ask(ppo_health, &r, &[], pp.clone()).outcome, "reward_gamed");
    // Success that falls together with the reward is a collapse, not a gamed reward.
    let r = run_with(&[
        (
            "rollout/ep_rew_mean",
            steps(&|t| 70.0 * (1.0 - (t - 0.4).abs())),
        ),
        (
            "rollout/success_rate",
            steps(&|t| 0.5 * (1.0 - (t - 0.4).abs())),
        ),
    ]);
    assert_ne!(ask(ppo_health, &r, &[], pp).outcome, "reward_gamed");
}

/// A cosine stepped past its period bounces between its bounds (PyTorch's closed form), which a
/// schedule that turns once (warmup, decay) never does; restarts (SGDR) jump back up at once and
/// a triangular cyclic schedule ramps linearly: neither is judged a bounce.
#[test]
fn lr_schedule_tells_a_bouncing_cosine_from_restarts_and_cycles() {
    let (lo, hi) = (1e-4, 0.1);
    let cos = |t: f64, period: f64| {
        lo + (hi - lo) * 0.5 * (1.0 + (std::f64::consts::PI * t / period).cos())
    };
    // T_max = 15 counted per batch over 375 batches: 25 half-periods.
    let bounce: Vec<(u64, f64)> = (0..375).map(|t| (t, cos(t as f64, 15.0))).collect();
    let r = run_with(&[("learning_rate", bounce.clone())]);
    let v = ask(lr_schedule, &r, &[], lr_params());
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "mismatch"),
        "{v:?}"
    );
    assert_eq!(v.values["swings"], 25.0, "{v:?}");
    // The config names a cosine: a fail; named cyclic: meant.
    let v = ask(lr_schedule, &r, &["sched=cosine"], lr_params());
    assert_eq!(v.status, Status::Fail, "{v:?}");
    assert_eq!(
        ask(lr_schedule, &r, &["sched=cyclic"], lr_params()).status,
        Status::Pass
    );
    // Logged once per 25 batches (an epoch), aliased: still swings, rising over several points.
    let per_epoch: Vec<(u64, f64)> = bounce
        .iter()
        .copied()
        .filter(|(t, _)| t % 25 == 0)
        .collect();
    let r = run_with(&[("learning_rate", per_epoch)]);
    assert_eq!(ask(lr_schedule, &r, &[], lr_params()).status, Status::Warn);
    // SGDR: each 30-step cosine decay restarts at the peak in one step.
    let sgdr: Vec<(u64, f64)> = (0..300).map(|t| (t, cos((t % 30) as f64, 30.0))).collect();
    let r = run_with(&[("learning_rate", sgdr)]);
    assert_eq!(ask(lr_schedule, &r, &[], lr_params()).status, Status::Pass);
    // Logged every 10 steps, a restart rises within one interval: still restarts.
    let sparse: Vec<(u64, f64)> = (0..300)
        .step_by(10)
        .map(|t| (t, cos((t % 70) as f64, 70.0)))
        .collect();
    let r = run_with(&[("learning_rate", sparse)]);
    assert_eq!(ask(lr_schedule, &r, &[], lr_params()).status, Status::Pass);
    // Triangular CyclicLR: linear ramps of 20 steps.
    let tri: Vec<(u64, f64)> = (0..400)
        .map(|t| {
            let x = (t % 40) as f64 / 20.0;
            (t, lo + (hi - lo) * if x <= 1.0 { x } else { 2.0 - x })
        })
        .collect();
    let r = run_with(&[("learning_rate", tri)]);
    assert_eq!(ask(lr_schedule, &r, &[], lr_params()).status, Status::Pass);
    // Warmup then one cosine decay, with float jitter on the decay: one turn.
    let wc: Vec<(u64, f64)> = (1..=300)
        .map(|t| {
            (
                t,
                warmup_cosine(t, 30.0, 300.0, 1e-3) * (1.0 + 1e-3 * ((t % 3) as f64 - 1.0)),
            )
        })
        .collect();
    let r = run_with(&[("learning_rate", wc)]);
    assert_eq!(ask(lr_schedule, &r, &[], lr_params()).status, Status::Pass);
}
