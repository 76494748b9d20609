//! What reading a file once already told us, kept for the rest of the process and keyed by
//! the file's identity ([`FileId`]: path, device and inode, size, modification time): a file
//! refused once is refused again without being parsed again (every probe of a `check` asks
//! about the same files), and a few parses that are cheap to keep (optimizer state) are
//! shared. A file rewritten in place gets a new identity, so it is read afresh.

use std::any::Any;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::pass::FileId;
use crate::error::{ReadError, Result};

/// Most refusals remembered; past this the memo starts again (it is a cache, not a record).
const MAX_FAILURES: usize = 1 << 14;
/// Most successful parses kept (the newest are kept).
const MAX_KEPT: usize = 4;

type Key = (FileId, &'static str);

#[derive(Default)]
struct Memo {
    failures: HashMap<Key, ReadError>,
    kept: Vec<(Key, Arc<dyn Any + Send + Sync>)>,
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
    let key = FileId::of(path).map(|id| (id, what));
    if let Some(e) = refusal(&key) {
        return Err(e);
    }
    if let Some(k) = &key {
        let m = memo();
        if let Some((_, v)) = m.kept.iter().find(|(kk, _)| kk == k) {
            if let Ok(t) = v.clone().downcast::<T>() {
                return Ok(t);
            }
        }
    }
    if let Some(k) = &key {
        *memo().parses.entry(k.clone()).or_default() += 1;
    }
    match read() {
        Ok(t) => {
            let t = Arc::new(t);
            if let Some(k) = key {
                let mut m = memo();
                m.kept.retain(|(kk, _)| kk != &k);
                if m.kept.len() >= MAX_KEPT {
                    m.kept.remove(0);
                }
                m.kept.push((k, t.clone()));
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
