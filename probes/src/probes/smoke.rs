//! `overfit_smoke` (O1): train a small model on the device to overfit the dumped batch.

use candle_core::{DType as CDType, Tensor};

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;
use crate::probes::util::*;

// ---------------------------------------------------------------------------------------
// O1: overfit one batch on the device

/// Samples and features used at most by the smoke test.
const SMOKE_MAX_N: usize = 256;
const SMOKE_MAX_D: usize = 16384;
/// Largest class count trained directly; batches with larger class ids (2^40, i64::MAX) have
/// their distinct labels renumbered densely instead (a softmax only needs them distinct).
const SMOKE_MAX_CLASSES: usize = 65_536;
/// Most gradient steps, whatever the playbook says (lint refuses more on load, too).
const SMOKE_MAX_STEPS: usize = 100_000;

/// Trains a linear softmax classifier by plain gradient descent; returns (initial, final) loss.
fn overfit_linear(
    x: &[f32],
    y: &[usize],
    c: usize,
    steps: usize,
    lr: f64,
    dev: &candle_core::Device,
) -> candle_core::Result<(f64, f64)> {
    let n = y.len().max(1);
    let d = x.len() / n;
    let xt = Tensor::from_slice(x, (n, d), dev)?;
    let xtt = xt.t()?.contiguous()?;
    let mut oh = vec![0f32; n * c];
    for (i, &k) in y.iter().enumerate() {
        oh[i * c + k] = 1.0;
    }
    let y1h = Tensor::from_vec(oh, (n, c), dev)?;
    let mut w = Tensor::zeros((d, c), CDType::F32, dev)?;
    let mut b = Tensor::zeros((1, c), CDType::F32, dev)?;
    let inv_n = 1.0 / n as f64;
    let loss_of = |w: &Tensor, b: &Tensor| -> candle_core::Result<f64> {
        let z = xt.matmul(w)?.broadcast_add(b)?;
        let zs = z.broadcast_sub(&z.max_keepdim(1)?)?;
        let lse = zs.exp()?.sum_keepdim(1)?.log()?;
        let logp = zs.broadcast_sub(&lse)?;
        let l = (logp * &y1h)?
            .sum_all()?
            .to_dtype(CDType::F64)?
            .to_scalar::<f64>()?;
        Ok(-l * inv_n)
    };
    let l0 = loss_of(&w, &b)?;
    for _ in 0..steps {
        let z = xt.matmul(&w)?.broadcast_add(&b)?;
        let e = z.broadcast_sub(&z.max_keepdim(1)?)?.exp()?;
        let p = e.broadcast_div(&e.sum_keepdim(1)?)?;
        let g = ((p - &y1h)? * inv_n)?;
        let gw = xtt.matmul(&g)?;
        let gb = g.sum_keepdim(0)?;
        w = (w - (gw * lr)?)?;
        b = (b - (gb * lr)?)?;
    }
    let l1 = loss_of(&w, &b)?;
    Ok((l0, l1))
}
const OVERFIT_SMOKE: ProbeSpec = ProbeSpec {
    id: "overfit_smoke",
    entries: &["O1"],
    inputs: &["batch:pixel_values", "batch:labels", "device"],
    params: &["steps", "target_frac", "lr"],
    outcomes: &["pass", "learnable", "cannot_overfit", "skip"],
    run: overfit_smoke,
};

pub fn overfit_smoke(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (steps, target, lr) = (
        p!(ctx, "O1", "steps"),
        p!(ctx, "O1", "target_frac"),
        p!(ctx, "O1", "lr"),
    );
    let cfg = model_config(ctx);
    let nc = num_classes(ctx, cfg.as_ref().map(|c| &c.1));
    over_batches(
        ctx,
        "O1",
        "needs a batch with float features (pixel_values) and integer class labels",
        |b| {
            let lt = class_labels(ctx, b)?;
            if lt.shape.len() != 1 || lt.dtype.is_float() {
                return None;
            }
            let n_all = lt.shape[0];
            let ft = b
                .find(PIXELS)
                .filter(|t| t.dtype.is_float() && t.shape.first() == Some(&n_all))
                .or_else(|| {
                    b.file.tensors().iter().find(|t| {
                        t.dtype.is_float()
                            && t.shape.len() >= 2
                            && t.shape.first() == Some(&n_all)
                            && !LATENTS.contains(&t.name.as_str())
                    })
                })?;
            let labels = match b.read_ints(lt) {
                Ok(l) => l,
                Err(e) => return Some(Verdict::skip("O1", e)),
            };
            let d_all: usize = ft.shape[1..].iter().product();
            if n_all < 2 || d_all == 0 {
                return Some(Verdict::skip(
                    "O1",
                    format!("too small a batch to overfit ({n_all} samples × {d_all} features)"),
                ));
            }
            let n = n_all.min(SMOKE_MAX_N);
            let stride = d_all.div_ceil(SMOKE_MAX_D);
            let d = d_all.div_ceil(stride);
            let raw = match b.f64_prefix(ft, n * d_all) {
                Ok(r) => r,
                Err(e) => return Some(Verdict::skip("O1", e)),
            };
            // Keep samples with a valid label; standardise each feature (non-finite → 0).
            let keep: Vec<usize> = (0..n)
                .filter(|&i| labels.v[i] >= 0 && nc.is_none_or(|c| labels.v[i] < c as i64))
                .collect();
            if keep.len() < 2 {
                return Some(Verdict::skip(
                    "O1",
                    "fewer than two samples with a valid class label",
                ));
            }
            let top = keep
                .iter()
                .map(|&i| (labels.v[i] as u64).saturating_add(1))
                .max()
                .unwrap_or(2);
            let declared = nc.unwrap_or(0);
            let dense = top.max(declared) as u128 > SMOKE_MAX_CLASSES as u128;
            let mut ids: Vec<i64> = keep.iter().map(|&i| labels.v[i]).collect();
            ids.sort_unstable();
            ids.dedup();
            let c = if dense {
                ids.len()
            } else {
                (top.max(declared) as usize).max(2)
            }
            .max(2);
            let m = keep.len();
            let mut x = vec![0f32; m * d];
            for j in 0..d {
                let col = j * stride;
                let vals: Vec<f64> = keep
                    .iter()
                    .map(|&i| raw.get(i * d_all + col).copied().unwrap_or(0.0))
                    .map(|v| if v.is_finite() { v } else { 0.0 })
                    .collect();
                let mean = vals.iter().sum::<f64>() / m as f64;
                let sd =
                    (vals.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / m as f64).sqrt();
                for (r, v) in vals.iter().enumerate() {
                    x[r * d + j] = if sd > 1e-12 {
                        ((v - mean) / sd) as f32
                    } else {
                        0.0
                    };
                }
            }
            let y: Vec<usize> = keep
                .iter()
                .map(|&i| {
                    if dense {
                        ids.binary_search(&labels.v[i]).unwrap_or(0)
                    } else {
                        labels.v[i] as usize
                    }
                })
                .collect();
            let steps = (steps.max(1.0) as usize).min(SMOKE_MAX_STEPS);
            let t0 = std::time::Instant::now();
            let res = overfit_linear(&x, &y, c, steps, lr, &ctx.compute.device);
            let secs = t0.elapsed().as_secs_f64();
            let dev = &ctx.compute.label;
            let ev = vec![b.ev(&ft.name), b.ev(&labels.name)];
            let (l0, l1) = match res {
                Ok(r) => r,
                Err(e) => {
                    return Some(
                        Verdict::new("O1", Status::Warn, "cannot_overfit")
                            .measured(format!("{dev}: candle error"))
                            .message(format!("the device could not run the smoke test: {e}"))
                            .evidence(ev[0].clone()),
                    )
                }
            };
            let frac = l1 / l0;
            let measured = format!("{dev}: loss {} → {} in {} steps ({} of ln {c}) on {m} samples × {d} features, {:.0} ms", fmt(l0), fmt(l1), steps, pct(frac), 1000.0 * secs);
            let mut v = Verdict::new("O1", Status::Pass, "pass")
                .measured(measured)
                .expected(format!(
                    "final loss ≤ {} × initial (ln {c} = {})",
                    target,
                    fmt((c as f64).ln())
                ))
                .value("loss_initial", l0)
                .value("loss_final", l1)
                .value("frac", frac)
                .value("seconds", secs);
            for e in ev {
                v = v.evidence(e);
            }
            if l1.is_finite() && frac <= target {
                // A measurement of the batch and the device, not a verdict on O1: a linear
                // model memorises even random labels, so nothing about the user's loop passed.
                v.status = Status::Skip;
                v.outcome = "learnable".into();
                v.message = format!("measured, not judged: a linear softmax memorises this batch on {dev} (the device math works; the labels are not self-contradictory and the inputs are not constant). It does not test your model or loop — a linear model memorises even random labels: run O1's overfit-one-batch test with your own model and loop");
            } else {
                v.status = Status::Warn;
                v.outcome = "cannot_overfit".into();
                v.message = if l1.is_finite() {
                    "even a linear classifier cannot memorise this batch: labels inconsistent with the inputs (shuffled separately, identical inputs with different labels) or a degenerate batch (constant features)".into()
                } else {
                    format!("the loss became non-finite on {dev}: the device math or the batch values are broken")
                };
            }
            Some(v)
        },
    )
}

/// The smoke probe, as a family of one.
pub const SPECS: &[ProbeSpec] = &[OVERFIT_SMOKE];
