//! What the tensor pass has already computed, kept for the life of the process and keyed by
//! file identity (path, device and inode, size, modification time) and tensor name, so a
//! re-check — the TUI's, or a follow mode's — reads nothing again until a file changes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use crate::error::ReadError;
use crate::tensors::{DiffStats, TensorStats};

/// Which bytes a file holds, as far as `stat` can tell: a file rewritten in place gets a new
/// modification time (or size), so its old figures are never served for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileId {
    path: PathBuf,
    dev: u64,
    ino: u64,
    size: u64,
    mtime: Option<SystemTime>,
}

impl FileId {
    /// The identity of the file at `path` now; `None` when it cannot be stat'ed.
    pub fn of(path: &Path) -> Option<FileId> {
        let m = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        Some(FileId {
            path: path.to_path_buf(),
            dev,
            ino,
            size: m.len(),
            mtime: m.modified().ok(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A tensor of a file (the data file that holds its bytes: a shard, not the index).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorKey {
    pub file: FileId,
    pub name: String,
}

/// A failure kept in the cache (an I/O error is not `Clone`): shown exactly as the
/// [`ReadError`] it came from.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    path: PathBuf,
    msg: String,
}

impl Failure {
    pub(crate) fn new(e: &ReadError) -> Failure {
        let s = e.to_string();
        let prefix = format!("{}: ", e.path().display());
        let msg = s.strip_prefix(&prefix).map(str::to_string).unwrap_or(s);
        Failure {
            path: e.path().to_path_buf(),
            msg,
        }
    }

    pub(crate) fn error(&self) -> ReadError {
        ReadError::format(&self.path, self.msg.clone())
    }
}

pub(crate) type Cached<T> = Result<T, Failure>;

#[derive(Default)]
pub(crate) struct Cache {
    pub stats: HashMap<TensorKey, Cached<TensorStats>>,
    pub diffs: HashMap<(TensorKey, TensorKey), Cached<DiffStats>>,
}

pub(crate) fn cache() -> std::sync::MutexGuard<'static, Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// How many tensors' statistics and tensor pairs' differences are cached.
pub fn cached_counts() -> (usize, usize) {
    let c = cache();
    (c.stats.len(), c.diffs.len())
}

/// Forgets everything computed so far, and the parses and refusals of `tensors::memo` (the
/// next request reads the files again).
pub fn clear_cache() {
    {
        let mut c = cache();
        c.stats.clear();
        c.diffs.clear();
    }
    crate::tensors::memo::clear();
}
