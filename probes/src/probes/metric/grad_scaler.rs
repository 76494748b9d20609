//! `grad_scaler`: the fp16 loss scale collapsing or stuck.

use crate::metrics::Point;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use super::need;
use crate::probes::util::*;

pub(super) const GRAD_SCALER: ProbeSpec = ProbeSpec {
    id: "grad_scaler",
    entries: &["O24"],
    inputs: &["metrics:loss_scale"],
    params: &["healthy_min_log2", "collapse_log2", "calibration_frac"],
    outcomes: &["pass", "collapsing", "skip"],
    run: grad_scaler,
};

pub fn grad_scaler(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (healthy, collapse, calib) = (
        p!(ctx, "healthy_min_log2"),
        p!(ctx, "collapse_log2"),
        p!(ctx, "calibration_frac"),
    );
    let s = match need(ctx, "loss_scale", "O24") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let fin: Vec<&Point> = s
        .points
        .iter()
        .filter(|p| p.value.is_finite() && p.value > 0.0)
        .collect();
    if fin.is_empty() {
        return vec![Verdict::skip(
            "O24",
            "the loss-scale series has no positive value",
        )];
    }
    let start = ((fin.len() as f64 * calib) as usize).min(fin.len() - 1);
    let after = &fin[start..];
    let last = after[after.len() - 1];
    let lmax = after
        .iter()
        .map(|p| p.value.log2())
        .fold(f64::NEG_INFINITY, f64::max);
    let llast = last.value.log2();
    let (st, out, msg) = if lmax < collapse {
        (Status::Fail, "collapsing", "the loss scale never recovers: fp16 overflow every step, optimizer steps skipped — switch fp16 → bf16, or keep logits/attention in fp32".to_string())
    } else if llast < healthy && llast < after[0].value.log2() {
        (
            Status::Warn,
            "collapsing",
            format!("the loss scale keeps backing off below 2^{healthy}: persistent fp16 overflow"),
        )
    } else {
        (
            Status::Pass,
            "pass",
            "loss scale on a healthy plateau".to_string(),
        )
    };
    vec![Verdict::new("O24", st, out)
        .measured(format!(
            "scale 2^{:.1} at step {} (max after calibration 2^{:.1})",
            llast, last.step, lmax
        ))
        .expected(format!("plateau ≥ 2^{healthy}"))
        .message(msg)
        .evidence(series_evidence(s, fin[0].step, last.step))
        .value("log2_scale_last", llast)]
}
