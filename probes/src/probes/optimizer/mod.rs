//! Probes that ask about optimizer state: decay groups, a rebuilt optimizer (and a scheduler
//! never stepped), eps against the state dtype, params without state, one LR for a whole
//! fine-tune.

use crate::probe::ProbeSpec;

pub mod adam_eps;
pub mod decay_groups;
pub mod group_lr;
pub mod optimizer_rebuilt;
pub mod params_without_state;

/// The optimizer probes, in registry order.
pub const SPECS: &[ProbeSpec] = &[
    decay_groups::DECAY_GROUPS,
    optimizer_rebuilt::OPTIMIZER_REBUILT,
    adam_eps::ADAM_EPS,
    params_without_state::PARAMS_WITHOUT_STATE,
    group_lr::GROUP_LR,
];
