//! Unit tests of the metric probes on synthetic series.

use super::{activations::*, grad_norm::*, init_loss::*, lr::*, seed_spread::*};
use crate::device::Compute;
use crate::facts::Facts;
use crate::metrics::{MetricSet, Point, Series};
use crate::probe::{Params, ProbeCtx, Status, Verdict};
use crate::run::Run;
use std::path::Path;

/// The playbook's thresholds for probe `id`, read as the binary's catalog reads them.
pub(super) fn thresholds(id: &str) -> Params {
    crate::playbook::thresholds(include_str!("../../../../playbook/probes.yaml"))
        .expect("playbook/probes.yaml parses")
        .remove(id)
        .unwrap_or_else(|| panic!("{id} not in probes.yaml"))
}

pub(super) fn run_with(series: &[(&str, Vec<(u64, f64)>)]) -> Run {
    let set = MetricSet::new(
        series
            .iter()
            .map(|(tag, pts)| {
                Series::from_points(
                    tag,
                    Path::new("synthetic.jsonl"),
                    pts.iter()
                        .map(|&(step, value)| Point {
                            step,
                            value,
                            wall_time: None,
                        })
                        .collect(),
                )
            })
            .collect(),
    );
    Run::from_metrics(Path::new("synthetic"), set)
}

pub(super) fn ask(
    f: fn(&ProbeCtx) -> Vec<Verdict>,
    run: &Run,
    facts: &[&str],
    params: Params,
) -> Verdict {
    let facts = Facts::from_args(facts).unwrap();
    let c = Compute::cpu();
    f(&ProbeCtx {
        run,
        facts: &facts,
        profile: &crate::profile::Profile::of(run, &facts),
        params: &params,
        compute: &c,
        baseline: None,
    })
    .remove(0)
}

pub(super) fn lr_params() -> Params {
    thresholds("lr_schedule")
}

pub(super) fn warmup_cosine(t: u64, w: f64, total: f64, m: f64) -> f64 {
    let t = t as f64 - 1.0; // HF logs LR 0.0 at step 1
    if t < w {
        m * t / w
    } else {
        m * 0.5 * (1.0 + (std::f64::consts::PI * (t - w) / (total - w)).cos())
    }
}

pub(super) fn series_at(
    tag: &str,
    source: &str,
    rank: Option<u32>,
    pts: Vec<(u64, f64)>,
) -> Series {
    let mut s = Series::from_points(
        tag,
        Path::new(source),
        pts.into_iter()
            .map(|(step, value)| Point {
                step,
                value,
                wall_time: None,
            })
            .collect(),
    );
    s.rank = rank;
    s
}

pub(super) fn ask_with(
    f: fn(&ProbeCtx) -> Vec<Verdict>,
    run: &Run,
    facts: &Facts,
    params: Params,
    baseline: Option<&Run>,
) -> Verdict {
    let c = Compute::cpu();
    f(&ProbeCtx {
        run,
        facts,
        profile: &crate::profile::Profile::of(run, facts),
        params: &params,
        compute: &c,
        baseline,
    })
    .remove(0)
}

#[test]
fn lr_flat_is_never_stepped_only_if_the_declared_curve_should_move() {
    let flat_at = |v: f64, steps: std::ops::RangeInclusive<u64>| {
        run_with(&[("learning_rate", steps.map(|t| (t, v)).collect())])
    };
    let at_max = flat_at(1e-3, 1..=300);
    // No warmup, 100k planned steps, triaged at step 300: cosine moved < 0.01% — healthy.
    let v = ask(
        lr_schedule,
        &at_max,
        &[
            "schedule=warmup_cosine",
            "warmup_steps=0",
            "total_steps=100000",
            "lr_max=0.001",
        ],
        lr_params(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // The same flat LR in a 600-step run should have decayed by half: never stepped.
    let v = ask(
        lr_schedule,
        &at_max,
        &[
            "schedule=warmup_cosine",
            "warmup_steps=0",
            "total_steps=600",
        ],
        lr_params(),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "constant_nonzero"),
        "{v:?}"
    );
    assert!(v.values["expected_spread"] > 0.4);
    // Run length unknown, no warmup: cannot have visibly decayed yet — not a fail.
    let v = ask(lr_schedule, &at_max, &["schedule=cosine"], lr_params());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert!(v.message.contains("cannot yet tell"), "{}", v.message);
    // Short warmup (5) already over when logging starts (every 10 steps): not a fail.
    let sparse = run_with(&[("learning_rate", (1..=30).map(|k| (10 * k, 1e-3)).collect())]);
    let v = ask(
        lr_schedule,
        &sparse,
        &["schedule=warmup_cosine", "warmup_steps=5", "lr_max=0.001"],
        lr_params(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // A warmup in the logged range must show: flat from step 1 is never stepped.
    let v = ask(
        lr_schedule,
        &flat_at(3.3e-5, 1..=300),
        &["schedule=warmup_cosine", "warmup_steps=30"],
        lr_params(),
    );
    assert_eq!(v.outcome, "constant_nonzero");
    // A step schedule before its first milestone is flat by design …
    let v = ask(lr_schedule, &at_max, &["schedule=step"], lr_params());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    let v = ask(
        lr_schedule,
        &at_max,
        &["schedule=step", "milestones=1000,2000"],
        lr_params(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    // … but not once a known milestone has passed.
    let v = ask(
        lr_schedule,
        &at_max,
        &["schedule=step", "milestones=100,200"],
        lr_params(),
    );
    assert_eq!(v.outcome, "constant_nonzero", "{v:?}");
    let v = ask(
        lr_schedule,
        &at_max,
        &["schedule=step", "step_size=150"],
        lr_params(),
    );
    assert_eq!(v.outcome, "constant_nonzero", "{v:?}");
}

#[test]
fn lr_jumps_found_with_sparse_logging() {
    let step_decay = |every: u64| -> Vec<(u64, f64)> {
        (0..=300 / every)
            .map(|k| {
                let t = 1 + k * every;
                (t, 1e-3 * 0.1f64.powi((t / 100) as i32))
            })
            .collect()
    };
    for every in [1, 3, 5, 10, 25] {
        let r = run_with(&[("learning_rate", step_decay(every))]);
        let v = ask(lr_schedule, &r, &["schedule=warmup_cosine"], lr_params());
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Fail, "jumps"),
            "every {every}: {v:?}"
        );
        let v = ask(lr_schedule, &r, &["schedule=step"], lr_params());
        assert_eq!(v.status, Status::Pass, "every {every}: {v:?}");
    }
    // Warmup + cosine logged sparsely, off the warmup grid (steps 2, 12, 22, …): the
    // warmup ramp and the cosine tail are not jumps, with or without warmup_steps.
    for every in [5, 10, 25] {
        let hf: Vec<(u64, f64)> = (0..300 / every)
            .map(|k| {
                let t = 2 + k * every;
                (t, warmup_cosine(t, 30.0, 300.0, 1e-3))
            })
            .collect();
        let r = run_with(&[("learning_rate", hf)]);
        for facts in [
            &["schedule=warmup_cosine", "warmup_steps=30", "lr_max=0.001"][..],
            &["schedule=warmup_cosine", "lr_max=0.001"][..],
            &[
                "schedule=warmup_cosine",
                "warmup_steps=30",
                "total_steps=300",
            ][..],
        ] {
            let v = ask(lr_schedule, &r, facts, lr_params());
            assert_ne!(v.outcome, "jumps", "every {every} {facts:?}: {v:?}");
            assert_ne!(v.status, Status::Fail, "every {every} {facts:?}: {v:?}");
        }
    }
}

#[test]
fn lr_partial_run_fits_with_the_run_length_free() {
    // A 3000-step warmup + cosine run that crashed at step 1000.
    let part: Vec<(u64, f64)> = (1..=1000)
        .map(|t| (t, warmup_cosine(t, 30.0, 3000.0, 1e-3)))
        .collect();
    let r = run_with(&[("learning_rate", part)]);
    let facts = ["schedule=warmup_cosine", "warmup_steps=30", "lr_max=0.001"];
    let v = ask(lr_schedule, &r, &facts, lr_params());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert!(v.expected.contains("best fit"), "{}", v.expected);
    // A known, correct length fits; a wrong known length does not.
    let mut f = facts.to_vec();
    f.push("total_steps=3000");
    assert_eq!(ask(lr_schedule, &r, &f, lr_params()).status, Status::Pass);
    f.pop();
    f.push("total_steps=1000");
    assert_eq!(ask(lr_schedule, &r, &f, lr_params()).outcome, "mismatch");
    // A free length does not excuse a wrong peak.
    let half: Vec<(u64, f64)> = (1..=1000)
        .map(|t| (t, warmup_cosine(t, 30.0, 3000.0, 5e-4)))
        .collect();
    let v = ask(
        lr_schedule,
        &run_with(&[("learning_rate", half)]),
        &facts,
        lr_params(),
    );
    assert_eq!(v.outcome, "mismatch", "{v:?}");
    // A finished run still fits with its end inferred.
    let full: Vec<(u64, f64)> = (1..=3000)
        .map(|t| (t, warmup_cosine(t, 30.0, 3000.0, 1e-3)))
        .collect();
    let v = ask(
        lr_schedule,
        &run_with(&[("learning_rate", full)]),
        &facts,
        lr_params(),
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
}

#[test]
fn init_loss_uses_ln_classes_for_classifier_heads() {
    let p = thresholds("init_loss");
    // A BERT classifier over 3 labels: loss ≈ ln 3 = 1.10, far below ln 30522 = 10.3.
    let r = run_with(&[("loss", vec![(1, 1.12), (2, 1.1)])]);
    let from_config = |arch: &str| {
        let mut f = Facts::new();
        f.set_artifact("vocab_size", "30522", "config.json");
        f.set_artifact("num_classes", "3", "config.json");
        f.set_artifact("architectures", arch, "config.json");
        f
    };
    for arch in [
        "BertForSequenceClassification",
        "ViTForImageClassification",
        "RobertaForTokenClassification",
    ] {
        let v = ask_with(init_loss, &r, &from_config(arch), p.clone(), None);
        assert_eq!(v.status, Status::Pass, "{arch}: {v:?}");
        assert!((v.values["ln_v"] - 3f64.ln()).abs() < 1e-9);
    }
    // A causal LM config with a stray num_labels keeps ln V.
    let lm = run_with(&[("loss", vec![(1, 10.3)])]);
    let v = ask_with(
        init_loss,
        &lm,
        &from_config("BertLMHeadModel"),
        p.clone(),
        None,
    );
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert!((v.values["ln_v"] - 30522f64.ln()).abs() < 1e-9);
    // num_classes given by the user wins; so does a task fact.
    let mut f = from_config("BertModel");
    f.set_user("num_classes", "3");
    assert_eq!(
        ask_with(init_loss, &r, &f, p.clone(), None).status,
        Status::Pass
    );
    let mut f = from_config("BertModel");
    f.set_user("task", "classification");
    assert_eq!(ask_with(init_loss, &r, &f, p, None).status, Status::Pass);
}

#[test]
fn fp16_calibration_does_not_trip_grad_norm_probes() {
    let fp = thresholds("first_grad_norm");
    let sp = thresholds("grad_norm_spikes");
    // GradScaler calibration: inf, inf, NaN, then finite; one isolated overflow at 100
    // (scale halves there), one at 150 with no scale logged around it.
    let mut g: Vec<(u64, f64)> = (1..=300).map(|t| (t, 1.5)).collect();
    g[0].1 = f64::INFINITY;
    g[1].1 = f64::INFINITY;
    g[2].1 = f64::NAN;
    g[99].1 = f64::INFINITY;
    g[149].1 = f64::NAN;
    let scale: Vec<(u64, f64)> = (1..=300)
        .map(|t| {
            let halvings = match t {
                1 => 0,
                2 => 1,
                3..=99 => 3,
                _ => 4,
            };
            (t, 65536.0 / 2f64.powi(halvings))
        })
        .collect();
    let r = run_with(&[("grad_norm", g.clone()), ("loss_scale", scale)]);
    let v = ask(first_grad_norm, &r, &[], fp.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert_eq!(v.values["nonfinite_head"], 3.0);
    assert!(v.measured.contains("3 non-finite"), "{}", v.measured);
    let v = ask(grad_norm_spikes, &r, &[], sp.clone());
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert_eq!(v.values["overflow_steps"], 5.0);
    assert!(v.message.contains("not counted"), "{}", v.message);
    // Divergence is still caught: the norm goes non-finite and never recovers.
    let mut d = g.clone();
    for p in d.iter_mut().skip(250) {
        p.1 = f64::NAN;
    }
    let v = ask(
        grad_norm_spikes,
        &run_with(&[("grad_norm", d)]),
        &[],
        sp.clone(),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "many"),
        "{v:?}"
    );
    // A long non-finite stretch mid-run with no scale backoff counts as spikes.
    let mut m = g.clone();
    for p in m.iter_mut().skip(200).take(5) {
        p.1 = f64::INFINITY;
    }
    let v = ask(grad_norm_spikes, &run_with(&[("grad_norm", m)]), &[], sp);
    assert_eq!(v.outcome, "many", "{v:?}");
    // Non-finite past the first steps: overflow from init, still a fail.
    let late: Vec<(u64, f64)> = (1..=100)
        .map(|t| (t, if t <= 40 { f64::INFINITY } else { 1.0 }))
        .collect();
    let v = ask(
        first_grad_norm,
        &run_with(&[("grad_norm", late)]),
        &[],
        fp.clone(),
    );
    assert_eq!((v.status, v.outcome.as_str()), (Status::Fail, "high"));
    let never = run_with(&[("grad_norm", (1..=10).map(|t| (t, f64::NAN)).collect())]);
    assert_eq!(ask(first_grad_norm, &never, &[], fp).status, Status::Fail);
}

#[test]
fn spikes_counted_in_the_densest_window() {
    let sp = thresholds("grad_norm_spikes");
    // Four spikes within 200 steps of a 2000-step run: instability (the run-wide
    // average, 0.4 per 200, used to hide it).
    let mut g: Vec<(u64, f64)> = (1..=2000).map(|t| (t, 1.0)).collect();
    for i in [1000, 1040, 1080, 1120] {
        g[i].1 = 300.0;
    }
    let v = ask(
        grad_norm_spikes,
        &run_with(&[("grad_norm", g)]),
        &[],
        sp.clone(),
    );
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Fail, "many"),
        "{v:?}"
    );
    assert_eq!(v.values["max_in_window"], 4.0);
    // The same four spread 400 steps apart: at most one per window — a warning only.
    let mut g: Vec<(u64, f64)> = (1..=2000).map(|t| (t, 1.0)).collect();
    for i in [200, 600, 1000, 1400] {
        g[i].1 = 300.0;
    }
    let v = ask(grad_norm_spikes, &run_with(&[("grad_norm", g)]), &[], sp);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "many"),
        "{v:?}"
    );
    assert_eq!(v.values["max_in_window"], 1.0);
}

pub(super) fn seed_params() -> Params {
    thresholds("seed_spread")
}

/// A loss curve falling from 6 to `end`.
pub(super) fn curve(end: f64) -> Vec<(u64, f64)> {
    (1..=100)
        .map(|t| (t, end + (6.0 - end) * (-(t as f64) / 20.0).exp()))
        .collect()
}

#[test]
fn seed_spread_counts_runs_not_log_files() {
    let facts = Facts::new();
    // One run logged to metrics.csv and TensorBoard (f32-rounded), plus its rank 1: one run.
    let f32ed: Vec<(u64, f64)> = curve(2.0)
        .into_iter()
        .map(|(t, v)| (t, v as f32 as f64))
        .collect();
    let one = Run::from_metrics(
        Path::new("run"),
        MetricSet::new(vec![
            series_at("train_loss", "run/metrics.csv", None, curve(2.0)),
            series_at("train/loss", "run/events", None, f32ed),
            series_at("loss", "run/metrics_rank1.jsonl", Some(1), curve(2.1)),
        ]),
    );
    let v = ask_with(seed_spread, &one, &facts, seed_params(), None);
    assert_eq!(v.status, Status::Skip, "{v:?}");
    // Five seeds ending close together (each also logged twice): 5 runs, narrow.
    let mut series = Vec::new();
    for (i, end) in [2.0, 2.01, 2.02, 1.99, 2.005].into_iter().enumerate() {
        series.push(series_at(
            "loss",
            &format!("seed{i}/metrics.csv"),
            None,
            curve(end),
        ));
        series.push(series_at(
            "loss",
            &format!("seed{i}/events"),
            None,
            curve(end),
        ));
    }
    // A pretraining (40 steps) beside its fine-tune (100 steps), side by side: two experiments,
    // not seeds.
    let short: Vec<(u64, f64)> = curve(3.0).into_iter().take(40).collect();
    let pair = Run::from_metrics(
        Path::new("ft"),
        MetricSet::new(vec![
            series_at("loss", "ft/finetune/summary.csv", None, curve(2.0)),
            series_at("loss", "ft/pretrain/summary.csv", None, short.clone()),
        ]),
    );
    let v = ask_with(seed_spread, &pair, &facts, seed_params(), None);
    assert_eq!(v.status, Status::Skip, "{v:?}");
    assert!(v.message.contains("different experiments"), "{v:?}");
    // A log at the run's root and one in a folder below it (progress.csv beside tb/) are one
    // run's: a seed never sits inside another seed's folder.
    let nested = Run::from_metrics(
        Path::new("ft"),
        MetricSet::new(vec![
            series_at("loss", "ft/progress.csv", None, curve(2.0)),
            series_at("loss", "ft/tb/events", None, curve(2.3)),
        ]),
    );
    let v = ask_with(seed_spread, &nested, &facts, seed_params(), None);
    assert_eq!(v.status, Status::Skip, "{v:?}");
    assert!(v.message.contains("one run only"), "{v:?}");
    let five = Run::from_metrics(Path::new("seeds"), MetricSet::new(series));
    let v = ask_with(seed_spread, &five, &facts, seed_params(), None);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Pass, "pass"),
        "{v:?}"
    );
    assert_eq!(v.values["seeds"], 5.0);
    // A claimed 0.01 improvement is inside that seed noise (std ≈ 0.012).
    let mut f = Facts::new();
    f.set_user("claimed_effect", "0.01");
    let v = ask_with(seed_spread, &five, &f, seed_params(), None);
    assert_eq!(
        (v.status, v.outcome.as_str()),
        (Status::Warn, "wide"),
        "{v:?}"
    );
    f.set_user("claimed_effect", "0.3");
    assert_eq!(
        ask_with(seed_spread, &five, &f, seed_params(), None).status,
        Status::Pass
    );
    // Seeds ending far apart relative to how far the loss fell: wide.
    let wild: Vec<Series> = [2.0, 3.5, 2.2, 4.0, 2.8]
        .into_iter()
        .enumerate()
        .map(|(i, e)| series_at("loss", &format!("s{i}/m.csv"), None, curve(e)))
        .collect();
    let wild = Run::from_metrics(Path::new("wild"), MetricSet::new(wild));
    let v = ask_with(seed_spread, &wild, &facts, seed_params(), None);
    assert_eq!(v.outcome, "wide", "{v:?}");
    // Against a baseline arm: a 0.5 lower loss over 5 narrow seeds each is an effect.
    let base: Vec<Series> = [2.5, 2.51, 2.52, 2.49, 2.505]
        .into_iter()
        .enumerate()
        .map(|(i, e)| series_at("loss", &format!("b{i}/m.csv"), None, curve(e)))
        .collect();
    let base = Run::from_metrics(Path::new("base"), MetricSet::new(base));
    let v = ask_with(seed_spread, &five, &facts, seed_params(), Some(&base));
    assert_eq!(v.status, Status::Pass, "{v:?}");
    assert!((v.values["effect"] + 0.5).abs() < 0.02, "{v:?}");
    // One seed against one seed: too few, whatever the difference.
    let v = ask_with(seed_spread, &one, &facts, seed_params(), Some(&base));
    assert!(v.status == Status::Warn, "{v:?}");
    let single = Run::from_metrics(
        Path::new("b"),
        MetricSet::new(vec![series_at("loss", "b/m.csv", None, curve(2.5))]),
    );
    let v = ask_with(seed_spread, &one, &facts, seed_params(), Some(&single));
    assert_eq!(v.outcome, "too_few", "{v:?}");
}

#[test]
fn moved_thresholds_come_from_the_playbook() {
    // Missing a moved threshold: skip naming it, never a silent default.
    let r = run_with(&[("learning_rate", vec![(1, 1e-3), (2, 1e-3)])]);
    let mut p = Params::new();
    for (k, v) in thresholds("lr_schedule").iter() {
        if k != "jump_factor" {
            p.insert(k, v.clone());
        }
    }
    let v = ask(lr_schedule, &r, &[], p);
    assert_eq!(v.status, Status::Skip);
    assert!(v.message.contains("jump_factor"), "{}", v.message);
    // grad_norm_band's low-fraction is a parameter: 40% dead windows fail at 0.3.
    let mut g: Vec<(u64, f64)> = (1..=100).map(|t| (t, 1.0)).collect();
    for p in g.iter_mut().skip(50) {
        p.1 = 1e-5;
    }
    let r = run_with(&[("grad_norm", g)]);
    let band = |low_frac: f64| thresholds("grad_norm_band").with("low_frac", low_frac);
    assert_eq!(ask(grad_norm_band, &r, &[], band(0.5)).status, Status::Warn);
    assert_eq!(ask(grad_norm_band, &r, &[], band(0.3)).status, Status::Fail);
    // dead_units reads start/end over edge_frac of the points.
    let dead = run_with(&[(
        "dead_frac",
        (1..=100)
            .map(|t| (t, if t > 80 { 0.5 } else { 0.1 }))
            .collect(),
    )]);
    let dp = |edge: f64| thresholds("dead_units").with("edge_frac", edge);
    assert_eq!(ask(dead_units, &dead, &[], dp(0.1)).outcome, "dying");
    assert_eq!(ask(dead_units, &dead, &[], dp(0.5)).outcome, "pass");
}
