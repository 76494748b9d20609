//! `mltriage-probes`: everything that touches a training run's bytes — artifact readers
//! (metric logs, checkpoints, optimizer state, batches, configs), run discovery, device
//! selection, tensor statistics, and the numeric probes that answer the playbook's questions.
//!
//! Data flows one way: readers -> [`run::Run`] (+ [`facts::Facts`]) -> probes -> [`probe::Verdict`]s.
//! This crate never imports a UI crate and never reads the playbook itself: thresholds arrive
//! as [`probe::Params`] from the caller.

pub mod config;
pub mod device;
pub mod error;
pub mod facts;
pub mod follow;
pub mod fuzzing;
pub mod limits;
pub mod metrics;
pub mod names;
pub mod playbook;
pub mod probe;
pub mod probes;
pub mod profile;
pub mod pyjson;
pub mod run;
pub mod tensors;

pub use error::{ReadError, Result};
