//! The tensor pass: every tensor a caller asks about is read from its file once — streamed in
//! blocks with positioned reads, never memory-mapped — and every figure wanted of it (the
//! statistics of [`super::stats`]; for a pair of tensors the difference of [`super::compare`]
//! and byte identity) is computed in that one read, pairs side by side, on all cores. Results
//! stay cached for the life of the process, keyed by file identity ([`FileId`]), so a second
//! question about the same tensor — another probe's, the TUI's re-check — reads nothing.
//!
//! Callers plan what they will need ([`Pass`]), run it once, then ask [`stats`] and [`diff`];
//! a question nobody planned is answered by a small pass of its own.

mod cache;
mod engine;
mod progress;

use std::collections::{HashMap, HashSet};

pub use cache::{cached_counts, clear_cache, FileId, TensorKey};
pub use progress::{progress, Progress, Snapshot};

use crate::error::{ReadError, Result};
use crate::tensors::{DiffStats, Loc, TensorFile, TensorStats};
use cache::{cache, Failure};
use engine::Item;

/// The identity of the tensor `name` of `tf`: the data file holding its bytes (a shard, not
/// the index; the zip, for a torch file), the key it sits under, and its name.
pub fn key_of(tf: &TensorFile, name: &str) -> Result<TensorKey> {
    let (_, loc) = tf.loc(name)?;
    let path = match loc {
        Loc::Safe { file, .. } => tf.safes[*file].path.as_path(),
        Loc::Torch { file, .. } => tf.torch[*file].path(),
        // A DCP tensor is named by its checkpoint's `.metadata`.
        Loc::Dcp { .. } => tf.path(),
    };
    let file = FileId::of(path).ok_or_else(|| match std::fs::metadata(path) {
        Err(e) => ReadError::io(path, e),
        Ok(_) => ReadError::format(path, "cannot tell the file's identity"),
    })?;
    // One file may hold two copies of a model under different keys (timm's `state_dict` and
    // `state_dict_ema`), opened as two parts with the same tensor names: the key they sit
    // under tells them apart.
    Ok(TensorKey {
        file,
        name: match &tf.wrapper {
            Some(w) => format!("{w}\u{1f}{name}"),
            None => name.to_string(),
        },
    })
}

/// What to read in one go. Requests for figures already cached (or for tensors that do not
/// exist: asking for them later gives the error) are dropped when added.
#[derive(Default)]
pub struct Pass<'a> {
    items: Vec<Item<'a>>,
    index: HashMap<TensorKey, usize>,
    pairs: Vec<(usize, usize)>,
    pair_set: HashSet<(usize, usize)>,
}

impl<'a> Pass<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    fn item(&mut self, tf: &'a TensorFile, name: &str, want_stats: bool) -> Option<usize> {
        let key = key_of(tf, name).ok()?;
        if let Some(&i) = self.index.get(&key) {
            self.items[i].want_stats |= want_stats;
            return Some(i);
        }
        self.index.insert(key.clone(), self.items.len());
        self.items.push(Item {
            key,
            tf,
            name: name.to_string(),
            want_stats,
        });
        Some(self.items.len() - 1)
    }

    /// Asks for the statistics of tensor `name` of `tf`.
    pub fn stats(&mut self, tf: &'a TensorFile, name: &str) -> &mut Self {
        if let Ok(k) = key_of(tf, name) {
            if !cache().stats.contains_key(&k) {
                self.item(tf, name, true);
            }
        }
        self
    }

    /// Asks for the statistics of every tensor of `tf`.
    pub fn all_stats(&mut self, tf: &'a TensorFile) -> &mut Self {
        for t in tf.tensors() {
            self.stats(tf, &t.name);
        }
        self
    }

    /// Asks how tensor `bn` of `b` differs from tensor `an` of `a` (the earlier one).
    pub fn diff(&mut self, a: &'a TensorFile, an: &str, b: &'a TensorFile, bn: &str) -> &mut Self {
        let (Ok(ka), Ok(kb)) = (key_of(a, an), key_of(b, bn)) else {
            return self;
        };
        if cache().diffs.contains_key(&(ka, kb)) {
            return self;
        }
        let (Some(i), Some(j)) = (self.item(a, an, false), self.item(b, bn, false)) else {
            return self;
        };
        if self.pair_set.insert((i, j)) {
            self.pairs.push((i, j));
        }
        self
    }

    /// Nothing left to read.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Bytes the pass will read.
    pub fn bytes(&self) -> u64 {
        self.items
            .iter()
            .filter_map(|it| it.tf.loc(&it.name).ok())
            .map(|(info, _)| info.nbytes() as u64)
            .sum()
    }

    /// Reads what was asked; every figure, or why it could not be had, goes to the cache.
    pub fn run(self) {
        if !self.items.is_empty() && !direct() {
            engine::run(&self.items, &self.pairs);
        }
    }
}

static DIRECT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// With `true`, [`stats`] and [`diff`] read each tensor on its own through
/// [`TensorFile::stats`] / [`TensorFile::compare`], cache nothing, and [`Pass::run`] does
/// nothing: the per-probe reading the pass replaced, kept to prove both give the same findings.
pub fn set_direct(on: bool) {
    DIRECT.store(on, std::sync::atomic::Ordering::Relaxed);
}

fn direct() -> bool {
    DIRECT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Statistics of tensor `name` of `tf`: from the cache, else read now (and cached).
pub fn stats(tf: &TensorFile, name: &str) -> Result<TensorStats> {
    if direct() {
        return tf.stats(name);
    }
    let key = key_of(tf, name)?;
    if let Some(r) = cache().stats.get(&key) {
        return r.clone().map_err(|f| f.error());
    }
    let mut p = Pass::new();
    p.stats(tf, name);
    p.run();
    let r = cache().stats.get(&key).cloned();
    r.unwrap_or_else(|| Err(lost(tf))).map_err(|f| f.error())
}

/// Statistics of tensor `name` of `tf` if the pass has them already (reads nothing).
pub fn cached_stats(tf: &TensorFile, name: &str) -> Option<TensorStats> {
    if direct() {
        return None;
    }
    let key = key_of(tf, name).ok()?;
    cache().stats.get(&key)?.clone().ok()
}

/// How tensor `bn` of `b` differs from tensor `an` of `a`: from the cache, else read now.
pub fn diff(a: &TensorFile, an: &str, b: &TensorFile, bn: &str) -> Result<DiffStats> {
    if direct() {
        return a.compare(an, b, bn);
    }
    let k = (key_of(a, an)?, key_of(b, bn)?);
    if let Some(r) = cache().diffs.get(&k) {
        return r.clone().map_err(|f| f.error());
    }
    let mut p = Pass::new();
    p.diff(a, an, b, bn);
    p.run();
    let r = cache().diffs.get(&k).cloned();
    r.unwrap_or_else(|| Err(lost(b))).map_err(|f| f.error())
}

/// The most threads [`set_threads`] accepts (rayon starts them all at once: a typo such as
/// `--threads 100000000` would otherwise spend minutes starting threads).
pub const MAX_THREADS: usize = 1024;

/// Sets how many threads read and reduce tensors (rayon's global pool; call before any pass).
pub fn set_threads(n: usize) -> std::result::Result<(), String> {
    if n == 0 {
        return Err("expected at least 1".into());
    }
    if n > MAX_THREADS {
        return Err(format!("expected at most {MAX_THREADS}"));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| e.to_string())
}

fn lost(tf: &TensorFile) -> Failure {
    Failure::new(&ReadError::format(
        tf.path(),
        "the tensor pass returned nothing",
    ))
}

#[cfg(test)]
mod tests;
