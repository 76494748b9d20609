//! What a file or folder name states: the training step (`checkpoint-N`, `global_stepN`,
//! `rl_model_N_steps`, …), the epoch (`epoch_6.pth`, `epoch10.pt`), an explicit distributed
//! rank, whether it is the initial (untrained) weights, the best-metric copy or the last one.

use std::path::Path;

/// Index just past `word` where it starts a token (the character before is not a letter).
fn token_ends<'a>(n: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    n.match_indices(word).filter_map(move |(i, _)| {
        let before = n.get(..i).and_then(|s| s.chars().next_back());
        (!before.is_some_and(|c| c.is_ascii_alphabetic())).then_some(i + word.len())
    })
}

/// Digits right after `at`, allowing one `-`, `_`, `=` or `.` separator first.
fn number_at(n: &str, at: usize, seps: &[u8]) -> Option<u64> {
    let rest = n.get(at..)?;
    let rest = match rest.as_bytes().first() {
        Some(b) if seps.contains(b) => rest.get(1..)?,
        _ => rest,
    };
    let digits: &str = rest.get(..rest.bytes().take_while(u8::is_ascii_digit).count())?;
    if digits.is_empty() {
        return None;
    }
    digits.parse().ok()
}

/// The training step a file or folder name states: `checkpoint-N`, `global_stepN`,
/// `step_N` / `step-N` / `stepN`, `epoch=E-step=S`, `iter_N` / `iteration_N`.
pub fn step_from_name(name: &str) -> Option<u64> {
    let n = name.to_lowercase();
    // `rl_model_10000_steps.zip`, `model_500-steps.pt`: a number followed by `steps`.
    if let Some(v) = number_before(&n, "steps") {
        return Some(v);
    }
    for word in ["checkpoint", "ckpt", "step", "iteration", "iter"] {
        if let Some(v) = token_ends(&n, word).find_map(|at| number_at(&n, at, b"-_=")) {
            return Some(v);
        }
    }
    // A weights file numbered by its step: `model_000300.safetensors`, `weights-500.pt` — never
    // a shard index (`model-00001-of-00002.safetensors`).
    if !n.contains("-of-") {
        for word in ["model", "weights", "state", "params"] {
            if let Some(v) = token_ends(&n, word).find_map(|at| {
                let sep = n.as_bytes().get(at).copied();
                matches!(sep, Some(b'_' | b'-'))
                    .then(|| number_at(&n, at, b"-_"))
                    .flatten()
            }) {
                return Some(v);
            }
        }
    }
    None
}

/// The digits right before `_word` / `-word` (`10000_steps` → 10000).
fn number_before(n: &str, word: &str) -> Option<u64> {
    n.match_indices(word).find_map(|(i, _)| {
        let head = n.get(..i)?;
        let head = head.strip_suffix(['_', '-'])?;
        let digits = head.len() - head.bytes().rev().take_while(u8::is_ascii_digit).count();
        let d = head.get(digits..)?;
        let ok_before = head
            .get(..digits)?
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        (!d.is_empty() && ok_before)
            .then(|| d.parse().ok())
            .flatten()
    })
}

/// The epoch a file or folder name states: `epoch_6.pth`, `epoch10.pt`, `epoch-3`, `epoch=2`
/// (also inside `epoch=2-step=300.ckpt`, whose step [`step_from_name`] reads).
pub fn epoch_from_name(name: &str) -> Option<u64> {
    let n = name.to_lowercase();
    let found = token_ends(&n, "epoch").find_map(|at| number_at(&n, at, b"-_="));
    found
}

/// A copy kept because it scored best (`best.pt`, `model_best.pth.tar`, `best_model.zip`,
/// `checkpoint_best.pt`), by its file name.
pub fn is_best_name(p: &Path) -> bool {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let stem = n.split('.').next().unwrap_or("");
    stem.split(['_', '-']).any(|t| t == "best")
}

/// The newest copy, overwritten as training goes (`last.pt`, `last.pth.tar`, `last.ckpt`).
pub fn is_last_name(p: &Path) -> bool {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let stem = n.split('.').next().unwrap_or("");
    stem.split(['_', '-']).any(|t| t == "last" || t == "latest")
}

/// The distributed rank a file or folder name states explicitly: `rank0`, `rank_1`,
/// `rank-2`, `….rank3`, `metrics_rank3.jsonl`.
pub fn rank_from_name(name: &str) -> Option<u32> {
    let n = name.to_lowercase();
    let found = token_ends(&n, "rank").find_map(|at| number_at(&n, at, b"-_=."));
    found.and_then(|v| u32::try_from(v).ok())
}

pub(crate) fn is_init_name(p: &Path) -> bool {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    token_ends(&n, "init").next().is_some() || n.contains("initial") || n.contains("untrained")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_from_names() {
        for (n, s) in [
            ("checkpoint-300", Some(300)),
            ("checkpoint_5", Some(5)),
            ("global_step1200", Some(1200)),
            ("step_7", Some(7)),
            ("step-8", Some(8)),
            ("step9", Some(9)),
            ("model_step100.pt", Some(100)),
            ("epoch=2-step=300.ckpt", Some(300)),
            ("iter_0001000", Some(1000)),
            ("iteration-12", Some(12)),
            ("model_000300.safetensors", Some(300)),
            ("weights-500.pt", Some(500)),
            ("model-00001-of-00002.safetensors", None),
            ("model.safetensors", None),
            ("model_index.json", None),
            ("last.ckpt", None),
            ("steps_per_epoch", None),
            ("checkpoint-", None),
            ("rl_model_10000_steps.zip", Some(10000)),
            ("rl_model_vecnormalize_64_steps.pkl", Some(64)),
            ("checkpoint-7.pth.tar", Some(7)),
            ("epoch_6.pth", None),
            ("epoch10.pt", None),
            ("last.pt", None),
            ("best.pt", None),
            ("checkpoint-99999999999999999999999", None),
            ("runs", None),
            ("events.out.tfevents.1795316046.vm.16510.0", None),
        ] {
            assert_eq!(step_from_name(n), s, "{n}");
        }
    }

    #[test]
    fn epochs_best_and_last_from_names() {
        for (n, e) in [
            ("epoch_6.pth", Some(6)),
            ("epoch10.pt", Some(10)),
            ("epoch-3", Some(3)),
            ("epoch=2-step=300.ckpt", Some(2)),
            ("epochs", None),
            ("last.pt", None),
            ("preepoch_4.pt", None),
        ] {
            assert_eq!(epoch_from_name(n), e, "{n}");
        }
        for (n, b, l) in [
            ("best.pt", true, false),
            ("model_best.pth.tar", true, false),
            ("last.pth.tar", false, true),
            ("last.pt", false, true),
            ("bestiary.pt", false, false),
            ("epoch10.pt", false, false),
        ] {
            assert_eq!(is_best_name(Path::new(n)), b, "{n}");
            assert_eq!(is_last_name(Path::new(n)), l, "{n}");
        }
    }

    #[test]
    fn ranks_only_from_explicit_names() {
        for (n, r) in [
            ("events.out.tfevents.1.host.rank1", Some(1)),
            ("metrics_rank3.jsonl", Some(3)),
            ("rank-2", Some(2)),
            ("rank_0", Some(0)),
            ("RANK4", Some(4)),
            ("events.out.tfevents.1795316046.vm.16510.0", None),
            ("frank1", None),
            ("rank", None),
        ] {
            assert_eq!(rank_from_name(n), r, "{n}");
        }
    }
}
