//! Files that name the newest checkpoint instead of holding one: DeepSpeed `latest`
//! (`global_step500`), TensorFlow `checkpoint` (`model_checkpoint_path: "ckpt-5"`), Megatron
//! `latest_checkpointed_iteration.txt` (`1000` or `release`), fvcore/detectron2
//! `last_checkpoint` (`model_0004999.pth`). Read under a small cap, followed by name.

use std::path::Path;

use crate::error::{ReadError, Result};
use crate::names::step_from_name;

/// Largest pointer file read.
const MAX_BYTES: u64 = 64 << 10;

/// What a pointer file names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    /// The checkpoint it names (a tag, folder or file name relative to the pointer's folder).
    pub target: String,
    /// The step the target's name (or the bare number) states.
    pub step: Option<u64>,
}

/// Reads a pointer file; one that names nothing is an error naming the file.
pub fn read_pointer(path: &Path) -> Result<Pointer> {
    let bytes = crate::limits::read_capped(path, MAX_BYTES)?;
    let text = String::from_utf8_lossy(&bytes);
    let target = text
        .lines()
        .find_map(|l| {
            let l = l.trim();
            // TensorFlow's text proto: `model_checkpoint_path: "ckpt-5"`.
            if let Some(rest) = l.strip_prefix("model_checkpoint_path:") {
                return Some(rest.trim().trim_matches('"').to_string());
            }
            (!l.is_empty() && !l.contains(':')).then(|| l.to_string())
        })
        .filter(|t| !t.is_empty() && t.len() < 4096)
        .ok_or_else(|| ReadError::format(path, "a checkpoint pointer that names no checkpoint"))?;
    let last = target.rsplit('/').next().unwrap_or(&target);
    let step = last.parse::<u64>().ok().or_else(|| step_from_name(last));
    Ok(Pointer { target, step })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pointer_format_names_its_step() {
        let d = tempfile::tempdir().unwrap();
        for (name, text, target, step) in [
            ("latest", "global_step500", "global_step500", Some(500)),
            (
                "checkpoint",
                "model_checkpoint_path: \"ckpt-5\"\nall_model_checkpoint_paths: \"ckpt-4\"\n",
                "ckpt-5",
                Some(5),
            ),
            (
                "latest_checkpointed_iteration.txt",
                "1000\n",
                "1000",
                Some(1000),
            ),
            (
                "latest_checkpointed_iteration.txt",
                "release",
                "release",
                None,
            ),
            (
                "last_checkpoint",
                "model_0004999.pth",
                "model_0004999.pth",
                Some(4999),
            ),
        ] {
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            let ptr = read_pointer(&p).unwrap();
            assert_eq!((ptr.target.as_str(), ptr.step), (target, step), "{name}");
        }
        let p = d.path().join("latest");
        std::fs::write(&p, "\n\n").unwrap();
        let e = read_pointer(&p).unwrap_err().to_string();
        assert!(
            e.starts_with(&p.display().to_string()) && e.contains("names no"),
            "{e}"
        );
    }
}
