//! `group_lr` (O19): a fine-tune that trains its pretrained backbone and everything else at
//! one Adam learning rate high enough to overwrite what pretraining learned.

use std::collections::BTreeSet;

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;
use crate::probes::checkpoint::optimizer_state::*;
use crate::probes::util::*;

pub(super) const GROUP_LR: ProbeSpec = ProbeSpec {
    id: "group_lr",
    entries: &["O19"],
    inputs: &["optimizer", "fact:from_scratch", "checkpoint"],
    params: &["backbone_lr_max", "whole_model_frac"],
    outcomes: &["pass", "shared_high_lr", "skip"],
    run: group_lr,
};

pub fn group_lr(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O19";
    let (lr_max, whole) = (
        p!(ctx, E, "backbone_lr_max"),
        p!(ctx, E, "whole_model_frac"),
    );
    if ctx.profile.init.value != crate::profile::Init::Pretrained {
        return vec![Verdict::skip(
            E,
            "not known to be a full fine-tune of pretrained weights (the run profile's init; --fact init=pretrained says so)",
        )];
    }
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let groups: Vec<_> = opt.groups.iter().filter(|g| !g.params.is_empty()).collect();
    // The LR each group was built with (before a schedule moved it).
    let lrs: BTreeSet<u64> = groups
        .iter()
        .filter_map(|g| g.initial_lr.or(g.lr))
        .map(f64::to_bits)
        .collect();
    let adam = opt.state.values().any(|s| s.exp_avg_sq.is_some());
    let model = model_for(ctx.run, c);
    if model.as_ref().is_some_and(Model::has_lora) {
        return vec![Verdict::skip(
            E,
            "a LoRA run: the base weights are frozen, one LR for the adapters is the recipe",
        )];
    }
    let in_opt: usize = groups.iter().map(|g| g.params.len()).sum();
    let trainable = model
        .as_ref()
        .map(|m| m.infos().filter(|(n, i)| is_trainable(n, i)).count());
    let desc = format!(
        "{} param group(s), {} LR value(s) ({}), {in_opt} tensors in the optimizer{}",
        groups.len(),
        lrs.len(),
        lrs.iter()
            .map(|b| fmt(f64::from_bits(*b)))
            .collect::<Vec<_>>()
            .join(", "),
        trainable
            .map(|t| format!(" of {t} trainable in the checkpoint"))
            .unwrap_or_default()
    );
    let v = |st: Status, out: &str, msg: String| {
        vec![Verdict::new(E, st, out)
            .measured(desc.clone())
            .expected(format!(
                "a fine-tuned backbone below LR {} (Adam), or its own lower-LR group",
                fmt(lr_max)
            ))
            .message(msg)
            .evidence(opt_ev(&opt, c))]
    };
    if lrs.len() != 1 {
        return v(
            Status::Pass,
            "pass",
            "the parameter groups carry different LRs (backbone and head apart)".into(),
        );
    }
    let lr = f64::from_bits(*lrs.iter().next().expect("one lr"));
    if !adam {
        return vec![Verdict::skip(
            E,
            format!(
                "{desc}: not an Adam-family optimizer (SGD fine-tunes use larger LRs by design)"
            ),
        )];
    }
    if trainable.is_some_and(|t| (in_opt as f64) < whole * t as f64) {
        return v(
            Status::Pass,
            "pass",
            "only part of the model is in the optimizer (a head or a few layers train): one LR is fine".into(),
        );
    }
    // The harm is done on the first updates, while the new head is random and its gradients are
    // large: a warmup from a small LR lets the head settle before the backbone sees the full LR.
    if lr >= lr_max {
        if let Some((from, to, at)) = warmed_up(ctx) {
            return v(
                Status::Pass,
                "pass",
                format!(
                    "one Adam LR of {} for the whole pretrained model, but it warms up from {} to {} by step {at}: the new head settles before the backbone sees the full LR (a backbone group at 1e-5..5e-5 would still guard its features better)",
                    fmt(lr),
                    fmt(from),
                    fmt(to)
                ),
            );
        }
        return v(Status::Warn, "shared_high_lr", format!(
            "the whole pretrained model trains at one Adam LR of {}: at that rate the backbone's pretrained features are overwritten (forgetting) while the new head is what needed it — give the backbone its own group at 1e-5..5e-5 and the new head 1e-3 (param groups, or discriminative / layer-wise LR decay)",
            fmt(lr)
        ));
    }
    v(
        Status::Pass,
        "pass",
        format!(
            "one LR ({}) for the whole fine-tune, low enough for the pretrained backbone",
            fmt(lr)
        ),
    )
}

/// The logged LR warms up: its first point at most a quarter of its peak, reached later. (first
/// LR, peak LR, step of the peak.)
fn warmed_up(ctx: &ProbeCtx) -> Option<(f64, f64, u64)> {
    let s = ctx.run.metrics().get("learning_rate")?;
    let pts: Vec<_> = s.points.iter().filter(|p| p.value.is_finite()).collect();
    let first = pts.first()?;
    let peak = pts.iter().max_by(|a, b| a.value.total_cmp(&b.value))?;
    (peak.value > 0.0 && first.value <= 0.25 * peak.value && peak.step > first.step).then_some((
        first.value,
        peak.value,
        peak.step,
    ))
}
