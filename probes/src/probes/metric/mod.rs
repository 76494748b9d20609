//! Probes over metric logs, one file per question (or per tight group), and the series
//! look-ups they share.

use crate::metrics::{Point, Series};
use crate::probe::{ProbeCtx, ProbeSpec, Verdict};

pub mod activations;
pub(crate) mod contrastive;
pub mod divergence;
pub mod grad_norm;
pub mod grad_scaler;
pub mod grpo_signal;
pub mod init_loss;
pub mod loss;
pub mod loss_floor;
pub mod lr;
pub(crate) mod objective;
pub mod ppo_update;
#[cfg(test)]
mod probe_tests;
#[cfg(test)]
mod profile_rule_tests;
pub mod rl;
pub mod seed_spread;
#[cfg(test)]
mod signal_tests;
pub mod systems;
#[cfg(test)]
mod tests;
pub mod val_scale;
pub mod val_stuck;
#[cfg(test)]
mod verdict_tests;

/// The metric probes, in registry order.
pub const SPECS: &[ProbeSpec] = &[
    init_loss::INIT_LOSS,
    grad_norm::FIRST_GRAD_NORM,
    lr::LR_SCHEDULE,
    lr::LR_WARMUP_PEAK,
    grad_norm::GRAD_NORM_BAND,
    grad_norm::GRAD_NORM_SPIKES,
    loss::LOSS_TREND,
    loss::VAL_GAP,
    val_stuck::VAL_STUCK,
    val_scale::VAL_SCALE,
    loss::LOSS_DEGENERATE,
    loss_floor::LOSS_FLOOR,
    divergence::NAN_ONSET,
    divergence::LATE_SPIKES,
    grad_scaler::GRAD_SCALER,
    rl::DPO_HEALTH,
    rl::PPO_HEALTH,
    grpo_signal::GRPO_SIGNAL,
    ppo_update::PPO_UPDATE,
    rl::RL_SCALE,
    grad_norm::GRAD_NORM_RATIO,
    seed_spread::SEED_SPREAD,
    activations::ACTIVATION_GROWTH,
    activations::DEAD_UNITS,
    systems::MEMORY_GROWTH,
    systems::DATA_WAIT,
    systems::EVAL_ZERO,
];

pub(crate) fn need<'a>(
    ctx: &'a ProbeCtx,
    name: &str,
    entry: &str,
) -> Result<&'a Series, Vec<Verdict>> {
    ctx.run.metrics().get(name).ok_or_else(|| {
        vec![Verdict::skip(
            entry,
            format!("no `{name}` series in the run's logs"),
        )]
    })
}

/// The first of `names` the logs hold with at least one point, with its name.
pub(crate) fn first_series<'a>(
    m: &'a crate::metrics::MetricSet,
    names: &[&'static str],
) -> Option<(&'static str, &'a Series)> {
    names
        .iter()
        .find_map(|n| m.get(n).map(|s| (*n, s)))
        .filter(|(_, s)| !s.points.is_empty())
}

pub(crate) fn first_finite(s: &Series) -> Option<&Point> {
    s.points.iter().find(|p| p.value.is_finite())
}
