//! One run logged in several segments: a resumed run writes a second log (Lightning's
//! `version_1/`, a second JSONL file, a new event file) that starts part-way through the run.
//! Segments of one series are joined into one series and each join is kept as a
//! [`Restart`] — so a resume is never mistaken for a second seed, and the profile knows the
//! step the run resumed at.
//!
//! The rule: a later segment B continues an earlier segment A of the same series (name and
//! rank, different file) when B starts past the middle of A's span and ends after A does.
//! Seeds and duplicate loggers start together; a validation series ends where training does.
//! Both count the same thing: an epoch-indexed copy (fastai's `history.csv`, epochs 0..14) and
//! a step-indexed one (its TensorBoard file, steps 62..930) are two views, not two segments.

use std::collections::BTreeMap;

use crate::metrics::{Restart, Series};

/// Whether `b` continues `a` (both non-empty).
pub(crate) fn continues(a: &Series, b: &Series) -> bool {
    let (Some(a0), Some(a1), Some(b0), Some(b1)) = (a.first(), a.last(), b.first(), b.last())
    else {
        return false;
    };
    let mid = a0.step + (a1.step - a0.step) / 2;
    a.unit == b.unit && b0.step > a0.step && b0.step > mid && b1.step > a1.step
}

/// Whether two log files sit where one run's restarts put them: in folders that are the same
/// once every run of digits is masked (one folder, whatever the files are called:
/// `metrics.jsonl` and `metrics.1.jsonl`; Lightning's `version_0/` and `version_1/`; HF's
/// `runs/<date>_<host>/`). Logs in folders that differ in a word are different experiments
/// (`pretrain/…/metrics.csv` beside `finetune/…/metrics.csv`), however their steps line up.
pub(crate) fn same_log_place(a: &std::path::Path, b: &std::path::Path) -> bool {
    let folder = |p: &std::path::Path| {
        if p.extension().is_some() {
            p.parent().map(|q| q.to_path_buf()).unwrap_or_default()
        } else {
            p.to_path_buf()
        }
    };
    let (a, b) = (folder(a), folder(b));
    let (a, b) = (a.as_path(), b.as_path());
    let mask = |p: &std::path::Path| -> Vec<String> {
        p.components()
            .map(|c| {
                let mut out = String::new();
                for ch in c.as_os_str().to_string_lossy().chars() {
                    if ch.is_ascii_digit() {
                        if !out.ends_with('#') {
                            out.push('#');
                        }
                    } else {
                        out.push(ch);
                    }
                }
                out
            })
            .collect()
    };
    mask(a) == mask(b)
}

/// Join continuing segments: A's points before B's first step, then B's. Returns the series
/// (joined ones in place of their segments) and the restarts found.
pub(crate) fn join(series: Vec<Series>) -> (Vec<Series>, Vec<Restart>) {
    let mut groups: BTreeMap<(String, Option<u32>), Vec<usize>> = BTreeMap::new();
    for (i, s) in series.iter().enumerate() {
        if !s.is_empty() {
            groups.entry((s.name.clone(), s.rank)).or_default().push(i);
        }
    }
    let mut slots: Vec<Option<Series>> = series.into_iter().map(Some).collect();
    let mut restarts = Vec::new();
    for idx in groups.into_values().filter(|v| v.len() > 1) {
        let mut order = idx;
        order.sort_by_key(|&i| slots[i].as_ref().and_then(|s| s.first()).map(|p| p.step));
        // Walk in start order; a segment that continues the chain's current head is folded in.
        let mut head = order[0];
        for &i in &order[1..] {
            let (Some(a), Some(b)) = (slots[head].as_ref(), slots[i].as_ref()) else {
                continue;
            };
            if a.source == b.source || !same_log_place(&a.source, &b.source) || !continues(a, b) {
                // Not a continuation: the longer of the two stays the head of the chain.
                if b.len() > a.len() {
                    head = i;
                }
                continue;
            }
            let b = slots[i].take().expect("present");
            let a = slots[head].as_mut().expect("present");
            let at = b.first().map(|p| p.step).unwrap_or(0);
            // A one-point segment (an end-of-run summary, a validation logged once) joins its
            // run but is no evidence of where it restarted.
            if a.len() >= 2 && b.len() >= 2 {
                restarts.push(Restart {
                    step: at,
                    name: b.name.clone(),
                    source: b.source.clone(),
                });
            }
            a.points.retain(|p| p.step < at);
            a.points.extend(b.points);
            a.source = common_parent(&a.source, &b.source);
        }
    }
    restarts.sort_by(|x, y| x.step.cmp(&y.step).then_with(|| x.name.cmp(&y.name)));
    (slots.into_iter().flatten().collect(), restarts)
}

/// The restarts among series without joining them (copies a trainer state has merged).
pub(crate) fn restarts(series: &[&Series]) -> Vec<Restart> {
    let mut groups: BTreeMap<(&str, Option<u32>), Vec<&Series>> = BTreeMap::new();
    for s in series.iter().filter(|s| !s.is_empty()) {
        groups.entry((s.name.as_str(), s.rank)).or_default().push(s);
    }
    let mut out = Vec::new();
    for mut g in groups.into_values().filter(|g| g.len() > 1) {
        g.sort_by_key(|s| s.first().map(|p| p.step));
        // A later segment continuing any earlier one (a merged copy of both, like a trainer
        // state, continues neither and hides nothing).
        for (i, b) in g.iter().enumerate().skip(1) {
            let cont = g[..i].iter().any(|a| {
                a.source != b.source
                    && same_log_place(&a.source, &b.source)
                    && a.len() >= 2
                    && b.len() >= 2
                    && continues(a, b)
            });
            if cont {
                out.push(Restart {
                    step: b.first().map(|p| p.step).unwrap_or(0),
                    name: b.name.clone(),
                    source: b.source.clone(),
                });
            }
        }
    }
    out
}

/// The deepest folder holding both paths (the first path when they share none).
fn common_parent(a: &std::path::Path, b: &std::path::Path) -> std::path::PathBuf {
    let mut out = std::path::PathBuf::new();
    for (x, y) in a.components().zip(b.components()) {
        if x != y {
            break;
        }
        out.push(x);
    }
    if out.as_os_str().is_empty() {
        a.to_path_buf()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Point;
    use std::path::Path;

    fn s(src: &str, steps: std::ops::Range<u64>) -> Series {
        let pts = steps
            .map(|st| Point {
                step: st,
                value: 1.0,
                wall_time: None,
            })
            .collect();
        Series::from_points("loss", Path::new(src), pts)
    }

    #[test]
    fn a_resumed_segment_is_joined_and_recorded() {
        let (out, r) = join(vec![s("run/v0/m.csv", 0..100), s("run/v1/m.csv", 80..200)]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), 200);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].step, 80);
        assert_eq!(out[0].source, Path::new("run"));
    }

    #[test]
    fn seeds_and_duplicate_loggers_stay_apart() {
        let (out, r) = join(vec![s("a/m.csv", 0..100), s("b/m.csv", 0..100)]);
        assert_eq!((out.len(), r.len()), (2, 0));
        // A validation-like series ending with training is no continuation.
        let (out, r) = join(vec![s("a/m.csv", 0..100), s("b/m.csv", 90..100)]);
        assert_eq!((out.len(), r.len()), (2, 0));
    }

    #[test]
    fn an_epoch_indexed_copy_is_no_segment_of_a_step_indexed_log() {
        // fastai: history.csv holds epochs 0..14, its TensorBoard file the same values at the
        // step each epoch ends (62..930): "steps" 62.. start past the epochs' span, yet nothing
        // was resumed.
        let mut epochs = s("run/history.csv", 0..15);
        epochs.unit = crate::metrics::Unit::Epoch;
        let steps = s("run/runs/x/events", 62..931);
        let (out, r) = join(vec![epochs, steps]);
        assert_eq!((out.len(), r.len()), (2, 0));
    }
}

#[cfg(test)]
mod place_tests {
    use super::same_log_place;
    use std::path::Path;

    #[test]
    fn segments_come_from_one_folder_or_its_numbered_siblings() {
        let same = |a: &str, b: &str| same_log_place(Path::new(a), Path::new(b));
        // One folder, any names; Lightning's versions; HF's dated run folders.
        assert!(same("r/metrics.jsonl", "r/metrics.resume.jsonl"));
        assert!(same(
            "r/lightning_logs/version_0/metrics.csv",
            "r/lightning_logs/version_1/metrics.csv"
        ));
        assert!(same(
            "out/runs/Nov27_10-01-58_vm",
            "out/runs/Nov27_11-12-03_vm"
        ));
        // A pretraining and the fine-tune beside it are two experiments.
        assert!(!same(
            "r/pretrain/lightning_logs/version_0/metrics.csv",
            "r/finetune/lightning_logs/version_0/metrics.csv"
        ));
        assert!(!same("r/summary.csv", "r/pretrain/summary.csv"));
    }
}
