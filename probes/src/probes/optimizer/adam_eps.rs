//! `adam_eps` (O10): Adam eps against the dtype of the optimizer state.

use crate::device::Compute;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::tensors::DType;

use crate::probes::checkpoint::optimizer_state::*;
use crate::probes::util::*;

// =======================================================================================
// O10 — eps against the state dtype
// =======================================================================================

/// `eps` after a round trip through `dt` on the compute device (0 when it underflows).
fn round_trip(eps: f64, dt: DType, compute: &Compute) -> Result<f64, String> {
    let t = candle_core::Tensor::new(&[eps as f32], &compute.device).map_err(|e| e.to_string())?;
    let back = t
        .to_dtype(dt.candle())
        .and_then(|x| x.to_dtype(candle_core::DType::F32))
        .and_then(|x| x.to_vec1::<f32>())
        .map_err(|e| e.to_string())?;
    Ok(back.first().copied().unwrap_or(0.0) as f64)
}
pub(super) const ADAM_EPS: ProbeSpec = ProbeSpec {
    id: "adam_eps",
    entries: &["O10"],
    inputs: &["optimizer", "device"],
    params: &["fp16_min_eps", "bf16_min_eps"],
    outcomes: &["pass", "underflow", "skip"],
    run: adam_eps,
};

pub fn adam_eps(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O10";
    let (fp16_min, bf16_min) = (p!(ctx, E, "fp16_min_eps"), p!(ctx, E, "bf16_min_eps"));
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let ev = opt_ev(&opt, c);
    let mut out = Vec::new();
    let mut seen = false;
    for g in &opt.groups {
        let Some(eps) = g.eps else { continue };
        let dt = g
            .params
            .iter()
            .filter_map(|id| opt.state.get(id))
            .find_map(|s| s.exp_avg_sq.as_ref().map(|t| t.dtype).or(s.dtype));
        let Some(dt) = dt else { continue };
        seen = true;
        let label = format!("group {}: eps {} with {dt} state", g.index, fmt(eps));
        let v = match dt {
            DType::F16 | DType::BF16 => {
                let back = match round_trip(eps, dt, ctx.compute) {
                    Ok(b) => b,
                    Err(e) => return vec![Verdict::skip(E, format!("device check failed: {e}"))],
                };
                let min = if dt == DType::F16 { fp16_min } else { bf16_min };
                if back == 0.0 {
                    Verdict::new(E, Status::Fail, "underflow").measured(format!("{label}: rounds to 0 in {dt} on {}", ctx.compute.label)).message(format!("eps {} is not representable in {dt}: v̂ + eps divides by ~0 when v is small, and updates explode — use eps ≥ {} (1e-6…1e-4 in {dt}) or keep the optimizer state in fp32", fmt(eps), fmt(min)))
                } else if eps < min {
                    Verdict::new(E, Status::Warn, "underflow").measured(format!("{label}: stored as {}", fmt(back))).message(format!("eps {} is below {} for {dt} state: it barely regularises the division — raise it or keep the state in fp32", fmt(eps), fmt(min)))
                } else {
                    Verdict::new(E, Status::Pass, "pass")
                        .measured(label.clone())
                        .message(format!("eps is representable in {dt}"))
                }
            }
            _ => Verdict::new(E, Status::Pass, "pass")
                .measured(label.clone())
                .message(format!(
                    "{dt} optimizer state: eps {} is representable",
                    fmt(eps)
                )),
        };
        out.push(
            v.expected(format!(
                "fp16: eps ≥ {fp16_min}; bf16: eps ≥ {bf16_min}; never 0 after rounding"
            ))
            .evidence(ev.clone())
            .value("eps", eps),
        );
    }
    if !seen {
        return vec![Verdict::skip(
            E,
            "no param group with both eps and Adam state (not Adam, or no state yet)",
        )];
    }
    // One verdict: the worst group.
    out.sort_by_key(|v| v.status);
    out.truncate(1);
    out
}
