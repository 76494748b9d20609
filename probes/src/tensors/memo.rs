//! What reading a file once already told us, kept for the rest of the process and keyed by
//! the file's identity ([`FileId`]: path, device and inode, size, modification time): a file
//! refused once is refused again without being parsed again (every probe of a `check` asks
//! about the same files), and the newest parses (torch archives' pickles, DCP `.metadata`,
//! optimizer state) are shared, within a count and a memory budget. A file rewritten in place
//! gets a new identity, so it is read afresh.

use std::any::Any;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::pass::FileId;
use crate::error::{ReadError, Result};

/// Most refusals remembered; past this the memo starts again (it is a cache, not a record).
const MAX_FAILURES: usize = 1 << 14;
/// Most successful parses kept (the newest are kept): enough for every file one `check`
/// reads more than once (each probe opens the newest checkpoints again), so they do not evict
/// each other in turn.
pub const MAX_KEPT: usize = 32;
/// Most memory the kept parses may hold, as their parsers estimate it; a parse larger than
/// this alone is shared by nobody (read again when asked again).
pub const MAX_KEPT_BYTES: usize = 256 << 20;

type Key = (FileId, &'static str);

#[derive(Default)]
struct Memo {
    failures: HashMap<Key, ReadError>,
    /// Oldest first, with the bytes each holds.
    kept: Vec<(Key, Arc<dyn Any + Send + Sync>, usize)>,
    /// How many times `read_shared` parsed a file (not served from the memo).
    parses: HashMap<Key, usize>,
}

fn memo() -> MutexGuard<'static, Memo> {
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    MEMO.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// A copy of an error (an I/O error is not `Clone`: its kind and message are kept, so it
/// reads exactly as the original).
fn copy(e: &ReadError) -> ReadError {
    match e {
        ReadError::Io { path, source } => ReadError::Io {
            path: path.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        ReadError::Format { path, msg } => ReadError::Format {
            path: path.clone(),
            msg: msg.clone(),
        },
        ReadError::Empty { path, msg } => ReadError::Empty {
            path: path.clone(),
            msg: msg.clone(),
        },
    }
}

fn remember(key: Option<Key>, e: &ReadError) {
    if let Some(k) = key {
        let mut m = memo();
        if m.failures.len() >= MAX_FAILURES {
            m.failures.clear();
        }
        m.failures.insert(k, copy(e));
    }
}

fn refusal(key: &Option<Key>) -> Option<ReadError> {
    let k = key.as_ref()?;
    memo().failures.get(k).map(copy)
}

/// Reads `path` as `what` with `read`, unless the same file was refused as `what` before:
/// then that refusal again, without reading.
pub(crate) fn unless_refused<T>(
    what: &'static str,
    path: &Path,
    read: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let key = FileId::of(path).map(|id| (id, what));
    if let Some(e) = refusal(&key) {
        return Err(e);
    }
    let r = read();
    if let Err(e) = &r {
        remember(key, e);
    }
    r
}

/// Reads `path` as `what` once for the process: the parse is shared while it is among the
/// newest few kept, a refusal is remembered.
pub(crate) fn read_shared<T: Send + Sync + 'static>(
    what: &'static str,
    path: &Path,
    read: impl FnOnce() -> Result<T>,
) -> Result<Arc<T>> {
    read_shared_sized(what, path, || read().map(|t| (t, 0)))
}

/// [`read_shared`] for a parse that says how many bytes it holds (`read` returns them beside
/// the value): the kept parses stay within [`MAX_KEPT_BYTES`] in all.
pub(crate) fn read_shared_sized<T: Send + Sync + 'static>(
    what: &'static str,
    path: &Path,
    read: impl FnOnce() -> Result<(T, usize)>,
) -> Result<Arc<T>> {
    let key = FileId::of(path).map(|id| (id, what));
    if let Some(e) = refusal(&key) {
        return Err(e);
    }
    if let Some(k) = &key {
        let mut m = memo();
        if let Some(i) = m.kept.iter().position(|(kk, _, _)| kk == k) {
            // The most recently used is kept longest.
            let hit = m.kept.remove(i);
            let v = hit.1.clone();
            m.kept.push(hit);
            if let Ok(t) = v.downcast::<T>() {
                return Ok(t);
            }
        }
    }
    if let Some(k) = &key {
        *memo().parses.entry(k.clone()).or_default() += 1;
    }
    match read() {
        Ok((t, bytes)) => {
            let t = Arc::new(t);
            if let Some(k) = key.filter(|_| bytes <= MAX_KEPT_BYTES) {
                let mut m = memo();
                m.kept.retain(|(kk, _, _)| kk != &k);
                let mut held: usize = m.kept.iter().map(|(_, _, b)| b).sum();
                while !m.kept.is_empty()
                    && (m.kept.len() >= MAX_KEPT || held + bytes > MAX_KEPT_BYTES)
                {
                    held -= m.kept.remove(0).2;
                }
                m.kept.push((k, t.clone(), bytes));
            }
            Ok(t)
        }
        Err(e) => {
            remember(key, &e);
            Err(e)
        }
    }
}

/// Forgets every refusal and shared parse (the counts of [`parse_count`] stay).
pub fn clear() {
    let mut m = memo();
    m.failures.clear();
    m.kept.clear();
}

/// How many times the file at `path` was parsed as `what` by [`read_shared`] in this process
/// (its current identity; for tests of "read once").
pub fn parse_count(what: &str, path: &Path) -> usize {
    let Some(id) = FileId::of(path) else { return 0 };
    memo()
        .parses
        .iter()
        .filter(|((i, w), _)| i == &id && *w == what)
        .map(|(_, n)| n)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_remembered_until_the_file_changes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.bin");
        std::fs::write(&p, b"abc").unwrap();
        let mut calls = 0;
        for _ in 0..3 {
            let r: Result<()> = unless_refused("test", &p, || {
                calls += 1;
                Err(ReadError::io(
                    &p,
                    std::io::Error::new(std::io::ErrorKind::InvalidData, "bad"),
                ))
            });
            let e = r.unwrap_err();
            assert!(matches!(e, ReadError::Io { .. }));
            assert!(e.to_string().ends_with("x.bin: bad"), "{e}");
        }
        assert_eq!(calls, 1);
        std::fs::write(&p, b"abcd").unwrap();
        let r = unless_refused("test", &p, || Ok(7));
        assert_eq!(r.unwrap(), 7);
        let shared = |n| read_shared("test-shared", &p, move || Ok(n));
        let (a, b) = (shared(1).unwrap(), shared(2).unwrap());
        assert_eq!((*a, *b), (1, 1));
        assert_eq!(parse_count("test-shared", &p), 1);
    }
}
