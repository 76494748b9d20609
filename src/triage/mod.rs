//! Where the front ends run probes: `check` over a whole run and one probe by id
//! ([`check`]), probes answering a tree walk ([`walk`]: the CLI's `walk`, the TUI's
//! proposals), the TUI's background work ([`jobs`]) and the run screen's weight histograms
//! ([`weights`]). It joins the pure layers below (catalog, trees, findings) to the probes
//! crate; `crate::cli` and `crate::app` call it, it calls neither.

pub mod batch_rows;
pub mod check;
pub mod evidence;
pub mod jobs;
pub mod walk;
pub mod watch;
pub mod weights;
