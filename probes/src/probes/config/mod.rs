//! Probes that ask about configuration files: rope scaling against the context, training
//! vs inference diffusion schedulers, a Keras head's activation against its loss.

use crate::probe::ProbeSpec;

pub mod diffusion_scheduler;
pub mod output_loss;
pub mod rope_scaling;

/// The config probes, in registry order.
pub const SPECS: &[ProbeSpec] = &[
    rope_scaling::ROPE_SCALING,
    diffusion_scheduler::DIFFUSION_SCHEDULER,
    output_loss::OUTPUT_LOSS,
];
