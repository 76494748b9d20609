//! Probes over the captured output of the training job (train.log, nohup.out, slurm-*.out,
//! W&B's output.log): error strings that name their cause.

use crate::probe::ProbeSpec;

pub mod log_errors;

/// The log probes, in registry order.
pub const SPECS: &[ProbeSpec] = &[log_errors::LOG_ERRORS];
