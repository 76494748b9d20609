//! Probes that ask about model weights in checkpoints: init statistics, non-finite values,
//! movement between checkpoints, frozen parts, EMA, VLM towers, LoRA, heads, histograms.
//!
//! Tensors are read one at a time (never a whole checkpoint); comparisons use the fused
//! two-tensor pass; on CUDA, statistics are computed on the device.

use crate::probe::ProbeSpec;

pub mod bn_drift;
pub(crate) mod by_design;
pub mod counter_reset;
pub mod ema_weights;
pub mod frozen_drift;
pub mod head_shape;
pub mod identical_tensors;
pub mod init_weight_stats;
pub mod lora_wiring;
pub mod model;
pub mod nonfinite_weights;
pub mod optimizer_state;
pub mod projector_dim;
pub mod tower_freeze;
pub mod update_ratio;
pub mod weight_histograms;

/// The checkpoint probes, in registry order.
pub const SPECS: &[ProbeSpec] = &[
    init_weight_stats::INIT_WEIGHT_STATS,
    nonfinite_weights::NONFINITE_WEIGHTS,
    update_ratio::UPDATE_RATIO,
    identical_tensors::IDENTICAL_TENSORS,
    frozen_drift::FROZEN_DRIFT,
    bn_drift::BN_DRIFT,
    counter_reset::COUNTER_RESET,
    ema_weights::EMA_WEIGHTS,
    tower_freeze::TOWER_FREEZE,
    projector_dim::PROJECTOR_DIM,
    lora_wiring::LORA_WIRING,
    head_shape::HEAD_SHAPE,
    weight_histograms::WEIGHT_HISTOGRAMS,
];
