//! Probes that ask about configuration files: rope scaling against the context, training
//! vs inference diffusion schedulers.

use crate::probe::ProbeSpec;

pub mod diffusion_scheduler;
pub mod rope_scaling;

/// The config probes, in registry order.
pub const SPECS: &[ProbeSpec] = &[
    rope_scaling::ROPE_SCALING,
    diffusion_scheduler::DIFFUSION_SCHEDULER,
];
