//! Parameters a framework leaves out of training on purpose, so probes asking "why did this
//! tensor never move / never get a gradient" do not blame the run: Ultralytics' DFL projection
//! (a fixed `arange`, `requires_grad=False`), and a transformer's pooler when the saved pooling
//! config (sentence-transformers `*_Pooling/config.json`) pools by mean or max, not by CLS.

use crate::run::Run;

/// Why `name` is unused by design, if it is.
pub(crate) fn unused_by_design(run: &Run, name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    if n.ends_with(".dfl.conv.weight") || n == "dfl.conv.weight" {
        return Some("Ultralytics' DFL projection is a fixed arange (requires_grad=False)");
    }
    let pooler = n.starts_with("pooler.") || n.contains(".pooler.");
    if pooler && pools_without_cls(run) {
        return Some("the saved pooling config pools by mean/max: the CLS pooler is not used");
    }
    None
}

/// A sentence-transformers pooling config that does not pool by the CLS token.
fn pools_without_cls(run: &Run) -> bool {
    run.artifacts.iter().any(|a| {
        let in_pooling = a
            .path
            .parent()
            .and_then(|d| d.file_name())
            .is_some_and(|d| {
                d.to_string_lossy()
                    .to_ascii_lowercase()
                    .ends_with("_pooling")
            });
        if !in_pooling || a.path.file_name().is_none_or(|f| f != "config.json") {
            return false;
        }
        let Ok(bytes) = crate::limits::read_capped(&a.path, 64 * 1024) else {
            return false;
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            return false;
        };
        // sentence-transformers ≥ 5: `pooling_mode: "mean"`; earlier: one flag per mode.
        match v.get("pooling_mode").and_then(|m| m.as_str()) {
            Some(m) => !m.eq_ignore_ascii_case("cls"),
            None => v.get("pooling_mode_cls_token").and_then(|b| b.as_bool()) == Some(false),
        }
    })
}
