//! `input_norm` (V1): per-channel input statistics of image batches.

use std::path::PathBuf;

use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;
use crate::probes::util::*;

// ---------------------------------------------------------------------------------------
// V1: per-channel input statistics

#[derive(Clone, Default)]
struct ChanAcc {
    n: u64,
    sum: f64,
    sumsq: f64,
    min: f64,
    max: f64,
}

impl ChanAcc {
    fn push(&mut self, x: f64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.n += 1;
        self.sum += x;
        self.sumsq += x * x;
    }
    fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum / self.n as f64
        }
    }
    fn std(&self) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        let m = self.mean();
        (self.sumsq / self.n as f64 - m * m).max(0.0).sqrt()
    }
}

/// (channels, inner elements per channel block, channels-last).
fn channel_layout(shape: &[usize]) -> (usize, usize, bool) {
    let is_ch = |d: usize| matches!(d, 1 | 3 | 4);
    match shape.len() {
        4 if is_ch(shape[1]) => (shape[1], shape[2] * shape[3], false),
        4 if is_ch(shape[3]) => (shape[3], 1, true),
        3 if is_ch(shape[0]) => (shape[0], shape[1] * shape[2], false),
        3 if is_ch(shape[2]) => (shape[2], 1, true),
        5 if is_ch(shape[2]) => (shape[2], shape[3] * shape[4], false),
        _ => (1, 1, true),
    }
}
pub(super) const INPUT_NORM: ProbeSpec = ProbeSpec {
    id: "input_norm",
    entries: &["V1"],
    inputs: &["batch:pixel_values"],
    params: &[
        "max_abs_mean",
        "std_lo",
        "std_hi",
        "raw_max",
        "unit_range_tol",
        "raw_255_min",
    ],
    outcomes: &["pass", "unnormalized", "skip"],
    run: input_norm,
};

pub fn input_norm(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (max_mean, std_lo, std_hi, raw_max) = (
        p!(ctx, "V1", "max_abs_mean"),
        p!(ctx, "V1", "std_lo"),
        p!(ctx, "V1", "std_hi"),
        p!(ctx, "V1", "raw_max"),
    );
    let (unit_tol, raw_255_min) = (
        p!(ctx, "V1", "unit_range_tol"),
        p!(ctx, "V1", "raw_255_min"),
    );
    // Pooled (mean, std) of every batch that passes its own checks, to compare paths.
    let mut seen: Vec<(PathBuf, f64, f64)> = Vec::new();
    let mut out = over_batches(ctx, "V1", "no batch carries pixel_values (images)", |b| {
        let t = b.find(PIXELS)?;
        if t.checked_numel() == Some(0) {
            return Some(Verdict::skip(
                "V1",
                format!("tensor `{}` is empty (shape {:?})", t.name, t.shape),
            ));
        }
        let (c, inner, last) = channel_layout(&t.shape);
        let mut acc = vec![ChanAcc::default(); c];
        let mut nonfinite = 0u64;
        let r = b.for_each_f64(t, |i, x| {
            if !x.is_finite() {
                nonfinite += 1;
                return;
            }
            let ch = if last { i % c } else { (i / inner.max(1)) % c };
            acc[ch].push(x);
        });
        if let Err(e) = r {
            return Some(Verdict::skip("V1", e));
        }
        let lo = acc
            .iter()
            .filter(|a| a.n > 0)
            .map(|a| a.min)
            .fold(f64::INFINITY, f64::min);
        let hi = acc
            .iter()
            .filter(|a| a.n > 0)
            .map(|a| a.max)
            .fold(f64::NEG_INFINITY, f64::max);
        let chans: Vec<String> = acc
            .iter()
            .enumerate()
            .map(|(i, a)| format!("ch{i} mean {} std {}", fmt(a.mean()), fmt(a.std())))
            .collect();
        let mut measured = format!(
            "{} {:?} {}: {}; range [{}, {}]",
            t.name,
            t.shape,
            t.dtype,
            chans.join(" · "),
            fmt(lo),
            fmt(hi)
        );
        if nonfinite > 0 {
            measured.push_str(&format!("; {nonfinite} non-finite"));
        }
        let expected = format!("|mean| ≤ {max_mean}, std in [{std_lo}, {std_hi}] over all channels; each channel's std in band");
        let knob = "Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]) for ImageNet weights (or the backbone's own image processor), identically in the train and eval transforms";
        let mut v = Verdict::new("V1", Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .evidence(b.ev(&t.name))
            .value("min", lo)
            .value("max", hi)
            .value("nonfinite", nonfinite as f64);
        for (i, a) in acc.iter().enumerate() {
            v = v
                .value(&format!("mean_c{i}"), a.mean())
                .value(&format!("std_c{i}"), a.std());
        }
        let set = |mut v: Verdict, st: Status, out: &str, msg: String| {
            v.status = st;
            v.outcome = out.to_string();
            v.message = msg;
            v
        };
        if acc.iter().all(|a| a.n == 0) {
            return Some(set(
                v,
                Status::Fail,
                "unnormalized",
                "no finite pixel value: the input pipeline produced NaN/Inf".into(),
            ));
        }
        if nonfinite > 0 {
            return Some(set(v, Status::Fail, "unnormalized", format!("{nonfinite} non-finite pixel value(s): a division by a zero std or a corrupt image in the pipeline")));
        }
        if lo >= 0.0 && hi > raw_max {
            let what = if hi > raw_255_min {
                "raw 0..255 pixels"
            } else {
                "unscaled, non-negative pixels"
            };
            return Some(set(v, Status::Fail, "unnormalized", format!("{what} (max {}): the tensor was never scaled and normalised — ToTensor()/255 then {knob}", fmt(hi))));
        }
        if lo >= 0.0 && hi <= 1.0 + unit_tol {
            return Some(set(v, Status::Warn, "unnormalized", format!("pixels scaled to [0, 1] but not mean/std-normalised: fine for a model trained from scratch this way, wrong for a pretrained backbone — add {knob}")));
        }
        // Pooled over channels: the mean/std band decides; a single channel's std outside the
        // band too. A single channel's mean off zero is common in small, colour-biased batches
        // (ImageNet-normalised values reach 2.64), so it is only noted.
        let mut pooled = ChanAcc::default();
        for a in acc.iter().filter(|a| a.n > 0) {
            if pooled.n == 0 {
                pooled.min = a.min;
                pooled.max = a.max;
            }
            pooled.n += a.n;
            pooled.sum += a.sum;
            pooled.sumsq += a.sumsq;
        }
        let (pm, ps) = (pooled.mean(), pooled.std());
        v = v.value("mean", pm).value("std", ps);
        seen.push((b.path.clone(), pm, ps));
        let in_band = |s: f64| (std_lo..=std_hi).contains(&s);
        let bad_std: Vec<String> = acc
            .iter()
            .enumerate()
            .filter(|(_, a)| !in_band(a.std()))
            .map(|(i, a)| format!("ch{i} std {}", fmt(a.std())))
            .collect();
        if pm.abs() > max_mean || !in_band(ps) || !bad_std.is_empty() {
            let mut what = format!("all channels: mean {}, std {}", fmt(pm), fmt(ps));
            if !bad_std.is_empty() {
                what.push_str(&format!("; {}", bad_std.join(", ")));
            }
            return Some(set(v, Status::Fail, "unnormalized", format!("inputs far from mean 0 / std 1 ({what}): wrong mean/std for the data, normalisation applied twice, or a different transform in this path — use {knob}")));
        }
        let off_mean: Vec<String> = acc
            .iter()
            .enumerate()
            .filter(|(_, a)| a.mean().abs() > max_mean)
            .map(|(i, a)| format!("ch{i} mean {}", fmt(a.mean())))
            .collect();
        if !off_mean.is_empty() {
            return Some(set(v, Status::Pass, "pass", format!("normalised overall (mean {}, std {}); {} off zero — a colour-biased batch, or a wrong per-channel mean / BGR order: confirm on a larger sample", fmt(pm), fmt(ps), off_mean.join(", "))));
        }
        Some(set(v, Status::Pass, "pass", "inputs normalised per channel to about mean 0, std 1 (check eval uses the same transform)".into()))
    });
    // Several image batches (train / eval dumps): the same normalisation in every path.
    if seen.len() >= 2 && out.first().is_some_and(|v| v.status != Status::Fail) {
        let mut worst: Option<(f64, f64, usize, usize)> = None;
        for i in 0..seen.len() {
            for j in i + 1..seen.len() {
                let (a, b) = (&seen[i], &seen[j]);
                let ratio = if b.2 > 0.0 { a.2 / b.2 } else { f64::INFINITY };
                let dmean = (a.1 - b.1).abs();
                let off = |r: f64| if r < 1.0 { 1.0 / r } else { r };
                if worst.is_none_or(|w| {
                    off(ratio) > off(w.0) || (off(ratio) == off(w.0) && dmean > w.1)
                }) {
                    worst = Some((ratio, dmean, i, j));
                }
            }
        }
        if let Some((ratio, dmean, i, j)) = worst {
            let std_bad = !(std_lo..=std_hi).contains(&ratio);
            if std_bad || dmean > max_mean {
                let name = |k: usize| {
                    seen[k]
                        .0
                        .strip_prefix(&ctx.run.root)
                        .unwrap_or(&seen[k].0)
                        .display()
                        .to_string()
                };
                let mut v = Verdict::new("V1", if std_bad { Status::Fail } else { Status::Warn }, "unnormalized")
                    .measured(format!("{}: mean {}, std {} · {}: mean {}, std {} (std ratio {})", name(i), fmt(seen[i].1), fmt(seen[i].2), name(j), fmt(seen[j].1), fmt(seen[j].2), fmt(ratio)))
                    .expected(format!("the same normalisation in every path: std ratio in [{std_lo}, {std_hi}], mean difference ≤ {max_mean}"))
                    .message("the batch dumps are normalised differently (train vs eval transform): apply exactly the same Normalize(mean, std), scaling and channel order in both paths — otherwise validation accuracy sits near chance while training looks fine")
                    .evidence(Evidence::file(&seen[i].0))
                    .evidence(Evidence::file(&seen[j].0))
                    .value("std_ratio", ratio)
                    .value("mean_diff", dmean);
                v.values.insert("batches".into(), seen.len() as f64);
                out = vec![v];
            }
        }
    }
    out
}
