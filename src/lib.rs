//! mltriage: triage a misbehaving ML training run — search symptoms, walk decision trees
//! whose numeric nodes are answered by probes over the run's artifacts, and `check` a run
//! in one shot. Data flows one way: playbook -> catalog -> (search, trees, findings) ->
//! triage (runs the probes) -> (cli | app -> ui); ARCHITECTURE.md draws it and says where
//! each kind of change goes.

pub mod app;
pub mod catalog;
pub mod cli;
pub mod findings;
pub mod look;
pub mod search;
pub mod trees;
pub mod triage;
pub mod tui;
pub mod ui;
