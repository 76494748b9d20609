//! Evidence a `check` lacked and how to get it: the probes that skipped for want of a batch
//! dump, a step-0 checkpoint or per-group gradient norms, counted per kind of evidence, with
//! the `mltriage.capture` hook (Python, shipped in the wheel) that writes it for the run's
//! framework as the profile detected it.

use serde::Serialize;

use crate::triage::check::Report;
use mltriage_probes::probe::Status;

/// One kind of evidence some probes skipped without.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Missing {
    /// `batch_dump`, `step0_checkpoint` or `group_grad_norms`.
    pub evidence: &'static str,
    /// The probes that skipped for want of it (each once, in report order).
    pub probes: Vec<String>,
    /// How to get it for this run's framework.
    pub how: String,
}

/// Each kind of evidence: its key, the words for it, and the skip-message fragments that say
/// a probe lacked it.
const KINDS: &[(&str, &str, &[&str])] = &[
    ("batch_dump", "a batch dump", &["no batch dump"]),
    (
        "step0_checkpoint",
        "a step-0 checkpoint",
        &["no checkpoint from before the first update"],
    ),
    (
        "group_grad_norms",
        "per-group grad norms",
        &[
            "no per-group grad norm",
            "per-group gradient norms",
            "grad norms per param group",
        ],
    ),
];

/// Steps the capture hooks record by default.
const STEPS: u32 = 5;

/// The capture hook for a framework as the run profile names it.
pub fn hook_for(framework: &str) -> String {
    match framework {
        "hf_trainer" | "trl" | "sentence_transformers" => {
            "add `mltriage.capture.HFCallback()` to the Trainer's callbacks".to_string()
        }
        "lightning" => {
            "add `mltriage.capture.LightningCallback()` to the Lightning Trainer's callbacks"
                .to_string()
        }
        "unknown" => "add `mltriage.capture.HFCallback()` (or `LightningCallback()`, or \
             `capture.Capture(model, optimizer, out_dir)` + `cap.step(batch, loss)` in a plain \
             loop)"
            .to_string(),
        _ => "add `cap = mltriage.capture.Capture(model, optimizer, out_dir)` before the loop \
             and `cap.step(batch, loss)` in it"
            .to_string(),
    }
}

/// The evidence the report's skipped probes lacked, one entry per kind that any probe lacked.
pub fn missing(report: &Report) -> Vec<Missing> {
    let how = format!(
        "{} and run {STEPS} steps (`pip install mltriage`); it writes into the run's `mltriage/` folder",
        hook_for(&report.profile.framework.value)
    );
    KINDS
        .iter()
        .filter_map(|(key, _, says)| {
            let mut probes: Vec<String> = Vec::new();
            for f in report.findings.iter().filter(|f| f.status == Status::Skip) {
                if says.iter().any(|s| f.message.contains(s)) && !probes.contains(&f.probe) {
                    probes.push(f.probe.clone());
                }
            }
            (!probes.is_empty()).then(|| Missing {
                evidence: key,
                probes,
                how: how.clone(),
            })
        })
        .collect()
}

/// What the skipped probes lacked and the hook that writes it, as one sentence:
/// `7 checks need a batch dump, 1 needs a step-0 checkpoint — add … and run 5 steps …`
/// (empty when nothing is missing). Kinds with another `how` get a sentence of their own.
pub fn hint_lines(missing: &[Missing]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < missing.len() {
        let how = &missing[i].how;
        let mut parts = Vec::new();
        while i < missing.len() && &missing[i].how == how {
            let m = &missing[i];
            let words = KINDS
                .iter()
                .find(|(k, _, _)| *k == m.evidence)
                .map_or(m.evidence, |(_, w, _)| w);
            let n = m.probes.len();
            parts.push(if parts.is_empty() {
                format!("{n} check{} need{} {words}", plural(n), verb_s(n))
            } else {
                format!("{n} need{} {words}", verb_s(n))
            });
            i += 1;
        }
        s.push_str(&format!("{} — {how}\n", parts.join(", ")));
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn verb_s(n: usize) -> &'static str {
    if n == 1 {
        "s"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_follows_the_framework() {
        assert!(hook_for("hf_trainer").contains("HFCallback()"));
        assert!(hook_for("trl").contains("HFCallback()"));
        assert!(hook_for("lightning").contains("LightningCallback()"));
        assert!(hook_for("nanogpt").contains("Capture(model, optimizer, out_dir)"));
        assert!(!hook_for("nanogpt").contains("HFCallback"));
    }

    #[test]
    fn one_sentence_counts_each_kind() {
        let m = vec![
            Missing {
                evidence: "batch_dump",
                probes: vec!["pad_side".into(), "label_mask".into(), "pad_token".into()],
                how: "add X and run 5 steps".into(),
            },
            Missing {
                evidence: "step0_checkpoint",
                probes: vec!["init_weight_stats".into()],
                how: "add X and run 5 steps".into(),
            },
        ];
        assert_eq!(
            hint_lines(&m),
            "3 checks need a batch dump, 1 needs a step-0 checkpoint — add X and run 5 steps\n"
        );
        let one = &m[1..];
        assert_eq!(
            hint_lines(one),
            "1 check needs a step-0 checkpoint — add X and run 5 steps\n"
        );
        assert_eq!(hint_lines(&[]), "");
    }
}
