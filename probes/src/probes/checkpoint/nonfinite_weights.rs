//! `nonfinite_weights` (L6): NaN or Inf in any checkpoint tensor; with a fused optimizer
//! and a grad norm that stayed finite, the fused step itself (O11).

use std::collections::HashSet;

use crate::device::Compute;
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;

// =======================================================================================
// L6 — non-finite weights
// =======================================================================================

fn nonfinite_in(
    m: &Model,
    compute: &Compute,
    only: Option<&HashSet<String>>,
) -> (Vec<(String, u64, u64)>, Vec<String>) {
    let mut bad = Vec::new();
    let mut errors = Vec::new();
    for (name, info) in m.infos() {
        if !info.dtype.is_float() || only.is_some_and(|o| !o.contains(canonical(name))) {
            continue;
        }
        match m.stats(name, compute) {
            // An additive attention mask (`register_buffer("mask", triu(full(-inf)))`) holds
            // -inf by construction: a constant, not weights gone non-finite.
            Ok(s) if s.nan == 0 && s.inf > 0 && is_mask_name(name) => {}
            Ok(s) if s.nan + s.inf > 0 => bad.push((name.to_string(), s.nan, s.inf)),
            Ok(_) => {}
            Err(e) => errors.push(e),
        }
    }
    (bad, errors)
}
pub(super) const NONFINITE_WEIGHTS: ProbeSpec = ProbeSpec {
    id: "nonfinite_weights",
    entries: &["L6", "O11", "F22"],
    inputs: &["checkpoint", "optimizer", "metrics:grad_norm"],
    params: &["max_nonfinite"],
    outcomes: &["pass", "nonfinite", "fused", "skip"],
    run: nonfinite_weights,
};

pub fn nonfinite_weights(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "L6";
    let max_bad = p!(ctx, E, "max_nonfinite");
    let cks = weight_ckpts(ctx.run);
    let Some(newest) = cks.last() else {
        return vec![Verdict::skip(E, "no checkpoint weights in the run")];
    };
    let m = match Model::open(newest) {
        Ok(m) => m,
        Err(e) => {
            return vec![Verdict::skip(
                E,
                format!("cannot read {}: {e}", newest.path.display()),
            )]
        }
    };
    let (mut bad, mut errors) = nonfinite_in(&m, ctx.compute, None);
    let mut checked = vec![m.step];
    // The init (first) checkpoint too, when it is another one.
    let mut first_bad: Option<u64> = (!bad.is_empty()).then_some(m.step);
    if let Some(first) = cks.first().filter(|c| c.step != newest.step) {
        if let Ok(f) = Model::open(first) {
            let (b0, e0) = nonfinite_in(&f, ctx.compute, None);
            checked.push(f.step);
            errors.extend(e0);
            if !b0.is_empty() {
                first_bad = Some(f.step);
                for x in b0 {
                    if !bad.iter().any(|(n, _, _)| canonical(n) == canonical(&x.0)) {
                        bad.push(x);
                    }
                }
            }
        }
    }
    // Where it started: the earliest checkpoint whose named tensors hold NaN/Inf.
    if first_bad == Some(m.step) && cks.len() > 2 {
        let names: HashSet<String> = bad
            .iter()
            .map(|(n, _, _)| canonical(n).to_string())
            .collect();
        for c in &cks[1..cks.len() - 1] {
            if let Ok(mm) = Model::open(c) {
                let (b, _) = nonfinite_in(&mm, ctx.compute, Some(&names));
                if !b.is_empty() {
                    first_bad = Some(c.step);
                    break;
                }
            }
        }
    }
    let total: u64 = bad.iter().map(|(_, n, i)| n + i).sum();
    let steps = checked
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut v = if total as f64 > max_bad {
        let names: Vec<String> = bad
            .iter()
            .map(|(n, nan, inf)| format!("{n} ({nan} NaN, {inf} Inf)"))
            .collect();
        // The gradients stayed finite yet the weights did not, and the optimizer's step is
        // a fused kernel: the update itself produced the NaN (O11).
        let grads_finite =
            ctx.run.metrics().get("grad_norm").is_some_and(|g| {
                !g.points.is_empty() && g.points.iter().all(|p| p.value.is_finite())
            });
        let fused = grads_finite
            && crate::probes::checkpoint::optimizer_state::newest_optimizer(ctx.run, E).is_ok_and(
                |(o, _)| {
                    o.groups.iter().any(|g| {
                        g.extra
                            .get("fused")
                            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
                    })
                },
            );
        if fused {
            let mut v = Verdict::new("O11", Status::Fail, "fused")
                .measured(format!(
                    "{total} non-finite values in {} tensor(s) while every logged grad norm is finite; param_groups carry fused=True",
                    bad.len()
                ))
                .message(format!(
                    "the weights turned NaN/Inf although the gradients stayed finite, and the optimizer step is the fused kernel: {} — construct the optimizer with fused=False (or foreach=True), and keep the optimizer state in fp32 under AMP / FSDP",
                    list_some(&names, 4)
                ));
            for (n, _, _) in bad.iter().take(3) {
                v = v.evidence(m.ev().tensor(n));
            }
            return vec![v
                .expected(format!("≤ {max_bad} non-finite values"))
                .value("nonfinite", total as f64)];
        }
        let entry = crate::probes::util::nonfinite_entry(ctx.profile);
        let remedy = if entry == "L6" {
            "resume from an earlier checkpoint with a lower LR, gradient clipping, bf16 instead of fp16, or z-loss on the logits"
        } else {
            "look at the steps before it (the loss, the grad norm and the LR there: nan_onset), then resume from an earlier checkpoint with a lower LR or gradient clipping"
        };
        let mut v = Verdict::new(entry, Status::Fail, "nonfinite")
            .measured(format!("{total} non-finite values in {} tensor(s)", bad.len()))
            .message(format!(
                "the weights hold NaN/Inf: {}{} — training diverged (loss spike → overflow); {remedy}",
                list_some(&names, 4),
                first_bad.map(|s| format!("; first seen at step {s}")).unwrap_or_default()
            ));
        for (n, _, _) in bad.iter().take(3) {
            v = v.evidence(m.ev().tensor(n));
        }
        v
    } else {
        Verdict::new(E, Status::Pass, "pass")
            .measured(format!(
                "no NaN/Inf in the weights (checkpoint step(s) {steps})"
            ))
            .message("every weight is finite")
            .evidence(m.ev())
    };
    if !errors.is_empty() {
        v.message
            .push_str(&format!(" [unreadable: {}]", list_some(&errors, 2)));
    }
    vec![v
        .expected(format!("≤ {max_bad} non-finite values"))
        .value("nonfinite", total as f64)]
}
