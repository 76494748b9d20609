//! Torch zip checkpoints (`torch.save` ≥ 1.6, under any name: `.pt`, `.pth.tar`, `.cleanrl_model`
//! …): the archive is memory-mapped, its `<prefix>/data.pkl` read with the safe pickle VM, and
//! each storage (`<prefix>/data/<key>`, normally STORED) sliced straight out of the map when a
//! tensor needs it. A torch zip stored inside another zip (Stable-Baselines3's `policy.pth` in
//! its model `.zip`) is read in place, as a window of the outer file's map. What parsing a file
//! found (its directory and unpickled root) is shared by every later open of the same file in
//! the process (see `memo`); each open maps the file afresh.

use std::collections::HashMap;
use std::fs::File;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use super::mapguard::GuardedMap;

use super::pickle::{self, TensorRef, Value};
use super::stats::{tensor_stats, TensorStats};
use super::{contiguous_view, TensorBytes};
use crate::error::{ReadError, Result};

#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// Offset of the entry's (stored) bytes in the file.
    pub(crate) start: usize,
    pub(crate) size: usize,
    pub(crate) stored: bool,
}

/// Most members a zip archive may list (its central directory is parsed before anything else).
pub const MAX_MEMBERS: usize = 1 << 20;

/// What parsing an archive found; shared by every open of the same file.
struct Parsed {
    /// Where the torch archive starts in the file (0, or a stored member of an outer zip).
    base: usize,
    /// Its length in bytes.
    len: usize,
    /// The outer archive's member this was read from (`policy.pth`), if any.
    member: Option<String>,
    prefix: String,
    entries: HashMap<String, Entry>,
    root: Value,
}

/// The memory a parse holds, roughly: the unpickled value and the directory.
fn weight(p: &Parsed, value_bytes: usize) -> usize {
    value_bytes.saturating_add(
        p.entries
            .keys()
            .map(|k| k.len() + 64)
            .fold(0usize, usize::saturating_add),
    )
}

/// An opened torch zip archive.
pub struct TorchZip {
    path: PathBuf,
    file: File,
    map: GuardedMap,
    parsed: Arc<Parsed>,
    /// The caller gave up the root ([`TorchZip::take_root`]).
    root_taken: bool,
}

static NO_ROOT: Value = Value::None;

impl std::fmt::Debug for TorchZip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TorchZip")
            .field("path", &self.path)
            .field("prefix", &self.parsed.prefix)
            .field("entries", &self.parsed.entries.len())
            .finish()
    }
}

pub(crate) fn map_file(path: &Path) -> Result<(File, GuardedMap)> {
    let file = crate::limits::open_regular(path)?;
    let len = file.metadata().map_err(|e| ReadError::io(path, e))?.len();
    if len == 0 {
        return Err(ReadError::empty(path, "empty file"));
    }
    // Truncation while the map is open is caught by the guard (see `mapguard`).
    let map = GuardedMap::map(&file).map_err(|e| ReadError::io(path, e))?;
    Ok((file, map))
}

impl TorchZip {
    /// Opens an archive and interprets its `data.pkl`; no storage bytes are touched yet.
    /// A Stable-Baselines3 model `.zip` opens as its `policy.pth` (the weights); see
    /// [`TorchZip::open_member`] for its other members.
    /// A file refused once is refused again without being read (see `memo`).
    /// Later opens of the same file share the first one's parse (see `memo`).
    pub fn open(path: impl AsRef<Path>) -> Result<TorchZip> {
        let path = path.as_ref();
        let mut fresh = None;
        let parsed = super::memo::read_shared_sized("torch zip", path, || {
            let (z, bytes) = Self::open_uncached(path)?;
            let w = weight(&z.parsed, bytes);
            let parsed = z.parsed.clone();
            fresh = Some(z);
            Ok((parsed, w))
        })?;
        if let Some(z) = fresh {
            return Ok(z);
        }
        // Shared: the same file (same identity), mapped again.
        let (file, map) = map_file(path)?;
        if parsed.base.saturating_add(parsed.len) > map.len() {
            return Err(ReadError::format(
                path,
                "the file shrank since it was first read (truncated or rewritten)",
            ));
        }
        Ok(TorchZip {
            path: path.to_path_buf(),
            file,
            map,
            parsed: Arc::clone(&parsed),
            root_taken: false,
        })
    }

    /// Opens and parses the archive; also returns the bytes its unpickled value holds.
    fn open_uncached(path: &Path) -> Result<(TorchZip, usize)> {
        let (file, map) = map_file(path)?;
        if !map.starts_with(b"PK\x03\x04") {
            use super::sniff::Sniffed;
            let why = match super::sniff::sniff(path) {
                Sniffed::VecNormalize => "a Stable-Baselines3 VecNormalize pickle (running statistics, not a tensor file; `inspect` on its run folder shows them)",
                Sniffed::Hdf5 => "HDF5 weights: not read (no pure-Rust HDF5 reader); convert them to safetensors",
                Sniffed::Pickle => "a plain pickle, not a torch checkpoint (torch.save writes a zip archive)",
                _ if map.first() == Some(&0x80) || map.starts_with(&[0x8a, 0x0a]) => {
                    "legacy torch serialization not supported; re-save with torch>=1.6"
                }
                _ => "not a torch zip archive (no zip signature)",
            };
            return Err(ReadError::format(path, why));
        }
        let entries = read_directory(path, &map)?;
        if data_pkl(path, &map, &entries).is_err() && entries.contains_key(super::sb3::POLICY) {
            drop(map);
            return Self::open_member_sized(path, super::sb3::POLICY);
        }
        let len = map.len();
        Self::from_window(path, file, map, 0, len, entries, None)
    }

    /// Opens the torch archive stored as member `member` of the zip at `path` (SB3's
    /// `policy.pth`, `policy.optimizer.pth`); the member must be stored, not compressed.
    pub fn open_member(path: impl AsRef<Path>, member: &str) -> Result<TorchZip> {
        Self::open_member_sized(path.as_ref(), member).map(|(z, _)| z)
    }

    fn open_member_sized(path: &Path, member: &str) -> Result<(TorchZip, usize)> {
        let (file, map) = map_file(path)?;
        if !map.starts_with(b"PK\x03\x04") {
            return Err(ReadError::format(
                path,
                "not a zip archive (no zip signature)",
            ));
        }
        let outer = read_directory(path, &map)?;
        let e = *outer
            .get(member)
            .ok_or_else(|| ReadError::format(path, format!("no member {member} in the archive")))?;
        let inner = entry_bytes(path, &map, member, e)?;
        let entries = read_directory(path, inner).map_err(|err| {
            ReadError::format(path, format!("{member}: {}", super::strip_path(&err)))
        })?;
        Self::from_window(
            path,
            file,
            map,
            e.start,
            e.size,
            entries,
            Some(member.to_string()),
        )
    }

    fn from_window(
        path: &Path,
        file: File,
        map: GuardedMap,
        base: usize,
        len: usize,
        entries: HashMap<String, Entry>,
        member: Option<String>,
    ) -> Result<(TorchZip, usize)> {
        let bytes = &map[base..base + len];
        let at = |m: String| match &member {
            Some(o) => format!("{o}: {m}"),
            None => m,
        };
        let (pkl, prefix) = data_pkl(path, bytes, &entries)
            .map_err(|e| ReadError::format(path, at(super::strip_path(&e))))?;
        let pe = entries[&pkl];
        let data = entry_bytes(path, bytes, &pkl, pe)?;
        let (root, value_bytes) = pickle::parse_sized(data)
            .map_err(|err| ReadError::format(path, at(format!("{pkl}: {err}"))))?;
        super::intact(path, map.damaged())?;
        // The pickle's pages are not needed again (its value is kept instead).
        release(&map, base + pe.start..base + pe.start + pe.size);
        let parsed = Parsed {
            base,
            len,
            member,
            prefix,
            entries,
            root,
        };
        let z = TorchZip {
            path: path.to_path_buf(),
            file,
            map,
            parsed: Arc::new(parsed),
            root_taken: false,
        };
        Ok((z, value_bytes))
    }

    /// This archive's bytes (the whole file, or the outer zip's member).
    fn bytes(&self) -> &[u8] {
        let p = &self.parsed;
        &self.map[p.base..p.base + p.len]
    }

    /// The outer archive's member this was read from (`policy.pth`), if any.
    pub fn member(&self) -> Option<&str> {
        self.parsed.member.as_deref()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a read of the map hit a page the file no longer has (see `mapguard`).
    pub(crate) fn damaged(&self) -> bool {
        self.map.damaged()
    }

    /// The unpickled object (a state dict, an optimizer state, an opaque object …).
    pub fn root(&self) -> &Value {
        if self.root_taken {
            &NO_ROOT
        } else {
            &self.parsed.root
        }
    }

    /// Gives up the unpickled object (for a caller that has read what it needs from it and
    /// keeps the archive only for its storages); [`TorchZip::root`] is `None` after. The
    /// value itself stays with the shared parse while the memo keeps it.
    pub(crate) fn take_root(&mut self) {
        self.root_taken = true;
    }

    /// The raw bytes of storage `key` (`<prefix>/data/<key>`).
    pub fn storage_bytes(&self, key: &str) -> Result<&[u8]> {
        let name = format!("{}data/{key}", self.parsed.prefix);
        let e = *self.parsed.entries.get(&name).ok_or_else(|| {
            ReadError::format(
                &self.path,
                format!("storage {name} is missing from the archive"),
            )
        })?;
        entry_bytes(&self.path, self.bytes(), &name, e)
    }

    /// The tensor's contiguous little-endian bytes (zero-copy when its view is contiguous).
    pub fn tensor_bytes(&self, t: &TensorRef) -> Result<TensorBytes<'_>> {
        let storage = self.storage_bytes(&t.storage_key)?;
        let what = format!("storage {}", t.storage_key);
        contiguous_view(
            &self.path, &what, storage, t.dtype, t.offset, &t.shape, &t.stride,
        )
    }

    pub fn with_tensor_bytes<R>(&self, t: &TensorRef, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let b = self.tensor_bytes(t)?;
        Ok(f(b.as_ref()))
    }

    pub fn tensor_stats(&self, t: &TensorRef) -> Result<TensorStats> {
        self.with_tensor_bytes(t, |b| tensor_stats(b, t.dtype))
    }

    /// A candle tensor on `device`.
    pub fn load(&self, t: &TensorRef, device: &candle_core::Device) -> Result<candle_core::Tensor> {
        let b = self.tensor_bytes(t)?;
        super::candle_io::from_bytes(&self.path, b.as_ref(), t.dtype, &t.shape, device)
    }

    /// Every element as f64; an error when there are more than `cap`.
    pub fn to_f64_vec(&self, t: &TensorRef, cap: usize) -> Result<Vec<f64>> {
        let b = self.tensor_bytes(t)?;
        super::bytes_to_f64_vec(&self.path, b.as_ref(), t.dtype, cap)
    }

    /// The value of a one-element tensor (a 0-d `step`, a tensor `lr`).
    pub fn scalar(&self, t: &TensorRef) -> Result<f64> {
        let v = self.to_f64_vec(t, 1)?;
        v.first().copied().ok_or_else(|| {
            ReadError::format(
                &self.path,
                format!(
                    "storage {}: empty tensor where a scalar was expected",
                    t.storage_key
                ),
            )
        })
    }
}

/// A zip archive of one kind, mapped, with its directory: `is_kind` judges its member names and
/// `not_kind` says what it is not ("not a Keras v3 archive (no config.json …)").
pub(crate) fn open_archive(
    path: &Path,
    is_kind: impl Fn(&HashMap<String, Entry>) -> bool,
    not_kind: &str,
) -> Result<(File, GuardedMap, HashMap<String, Entry>)> {
    let (file, map) = map_file(path)?;
    if !map.starts_with(b"PK\x03\x04") {
        return Err(ReadError::format(
            path,
            "not a zip archive (no zip signature)",
        ));
    }
    let entries = read_directory(path, &map)?;
    if !is_kind(&entries) {
        return Err(ReadError::format(path, not_kind));
    }
    Ok((file, map, entries))
}

/// A text member's bytes (a JSON config): stored, and refused over the text read cap.
pub(crate) fn text_member<'m>(
    path: &Path,
    map: &'m [u8],
    name: &str,
    e: Entry,
) -> Result<&'m [u8]> {
    if e.size as u64 > crate::limits::text_cap() {
        return Err(ReadError::format(
            path,
            format!("member {name} is {} bytes, over the text read cap", e.size),
        ));
    }
    entry_bytes(path, map, name, e)
}

/// The members of the zip archive in `map` (offsets relative to `map`), at most [`MAX_MEMBERS`].
pub(crate) fn read_directory(path: &Path, map: &[u8]) -> Result<HashMap<String, Entry>> {
    let archive = zip::ZipArchive::new(Cursor::new(map))
        .map_err(|e| ReadError::format(path, format!("bad zip archive: {e}")))?;
    if archive.len() > MAX_MEMBERS {
        return Err(ReadError::format(
            path,
            format!(
                "zip archive lists {} members, more than the {MAX_MEMBERS} budget",
                archive.len()
            ),
        ));
    }
    let mut out = HashMap::new();
    for i in 0..archive.len() {
        let ent = archive
            .by_index_data(i)
            .map_err(|e| ReadError::format(path, format!("bad zip entry {i}: {e}")))?;
        let name = String::from_utf8_lossy(ent.name_raw()).into_owned();
        let start = local_data_start(map, ent.header_start())
            .ok_or_else(|| ReadError::format(path, format!("{name}: bad local file header")))?;
        let stored = ent.compression() == zip::CompressionMethod::Stored;
        let size = if stored {
            ent.size()
        } else {
            ent.compressed_size()
        };
        let end = start.checked_add(size).filter(|&e| e <= map.len() as u64);
        let Some(_) = end else {
            return Err(ReadError::format(
                path,
                format!("{name}: entry of {size} bytes runs past the end of the file"),
            ));
        };
        out.insert(
            name,
            Entry {
                start: start as usize,
                size: size as usize,
                stored,
            },
        );
    }
    Ok(out)
}

/// The archive's `<prefix>/data.pkl` entry and its prefix (`archive/`, or none); a big-endian
/// archive (its `byteorder` entry says `big`) is refused.
fn data_pkl(path: &Path, map: &[u8], entries: &HashMap<String, Entry>) -> Result<(String, String)> {
    let pkl = entries
        .keys()
        .filter(|k| {
            k.ends_with("data.pkl")
                && (k.len() == 8 || k.ends_with("/data.pkl"))
                && k.matches('/').count() <= 1
        })
        .min_by_key(|k| k.len())
        .cloned()
        .ok_or_else(|| ReadError::format(path, "no data.pkl in archive"))?;
    let prefix = pkl[..pkl.len() - "data.pkl".len()].to_string();
    if let Some(e) = entries.get(&format!("{prefix}byteorder")) {
        if e.stored && map.get(e.start..e.start + e.size) == Some(&b"big"[..]) {
            return Err(ReadError::format(
                path,
                "big-endian torch archive not supported",
            ));
        }
    }
    Ok((pkl, prefix))
}

/// Where an entry's data begins: after its local header (30 bytes + name + extra field).
fn local_data_start(map: &[u8], header: u64) -> Option<u64> {
    let h = usize::try_from(header).ok()?;
    let hdr = map.get(h..h.checked_add(30)?)?;
    if hdr[..4] != *b"PK\x03\x04" {
        return None;
    }
    let name_len = u16::from_le_bytes([hdr[26], hdr[27]]) as u64;
    let extra_len = u16::from_le_bytes([hdr[28], hdr[29]]) as u64;
    Some(header + 30 + name_len + extra_len)
}

/// A stored member's bytes; a compressed member is refused (never inflated: no zip bomb).
pub(crate) fn entry_bytes<'m>(
    path: &Path,
    map: &'m [u8],
    name: &str,
    e: Entry,
) -> Result<&'m [u8]> {
    if !e.stored {
        return Err(ReadError::format(path, format!("{name}: compressed zip entries are not supported (torch.save writes them stored); re-save with torch.save")));
    }
    map.get(e.start..e.start + e.size).ok_or_else(|| {
        ReadError::format(path, format!("{name}: entry runs past the end of the file"))
    })
}

/// Drops our mapping's pages for `range` after a large tensor was read, so a sweep over a
/// checkpoint keeps resident memory near one tensor (the page cache keeps the data).
pub(crate) fn release(map: &Mmap, range: std::ops::Range<usize>) {
    if range.start >= range.end || range.end > map.len() {
        return;
    }
    // SAFETY: the map is a private, read-only, file-backed mapping that is never written.
    // MADV_DONTNEED only drops its page-table entries; a later access faults the same file
    // bytes back in, so data seen through any live slice does not change.
    let _ = unsafe {
        map.unchecked_advise_range(
            memmap2::UncheckedAdvice::DontNeed,
            range.start,
            range.end - range.start,
        )
    };
}

impl TorchZip {
    pub(crate) fn release_storage(&self, key: &str) {
        let p = &self.parsed;
        if let Some(e) = p.entries.get(&format!("{}data/{key}", p.prefix)) {
            let at = p.base + e.start;
            release(&self.map, at..at + e.size);
        }
    }

    /// Names of the archive's entries (for diagnostics).
    pub fn entry_names(&self) -> impl Iterator<Item = &str> {
        self.parsed.entries.keys().map(String::as_str)
    }
}

impl TorchZip {
    /// The file and byte range of a contiguous tensor stored uncompressed (for streaming reads).
    pub(crate) fn contiguous_range(&self, t: &TensorRef) -> Option<(&File, u64, usize)> {
        if !t.is_contiguous() {
            return None;
        }
        let p = &self.parsed;
        let e = p
            .entries
            .get(&format!("{}data/{}", p.prefix, t.storage_key))?;
        let es = t.dtype.size();
        let start = (t.offset as usize).checked_mul(es)?;
        let len = t.numel()?.checked_mul(es)?;
        if !e.stored || start.checked_add(len)? > e.size {
            return None;
        }
        Some((&self.file, (p.base + e.start + start) as u64, len))
    }
}

/// The one tensor a `torch.save(tensor)` archive held in memory (a chunk of a
/// torch.distributed.checkpoint `.distcp` file), as contiguous little-endian bytes with its
/// dtype and shape: borrowed from `bytes` when its view is contiguous, else gathered — at most
/// `gather_cap` bytes, and never more than its storage holds. `path` names the file in errors.
pub(crate) fn lone_tensor<'a>(
    path: &Path,
    bytes: &'a [u8],
    gather_cap: usize,
) -> Result<(TensorRef, TensorBytes<'a>)> {
    if !bytes.starts_with(b"PK\x03\x04") {
        return Err(ReadError::format(
            path,
            "a chunk is not a torch zip archive",
        ));
    }
    let entries = read_directory(path, bytes)?;
    let (pkl, prefix) = data_pkl(path, bytes, &entries)?;
    let root = pickle::parse(entry_bytes(path, bytes, &pkl, entries[&pkl])?)
        .map_err(|err| ReadError::format(path, format!("chunk {pkl}: {err}")))?;
    let Value::Tensor(t) = root else {
        return Err(ReadError::format(path, "a chunk does not hold a tensor"));
    };
    let name = format!("{prefix}data/{}", t.storage_key);
    let e = *entries
        .get(&name)
        .ok_or_else(|| ReadError::format(path, format!("chunk storage {name} is missing")))?;
    let storage = entry_bytes(path, bytes, &name, e)?;
    if !t.is_contiguous() {
        let n = t
            .numel()
            .and_then(|n| n.checked_mul(t.dtype.size()))
            .unwrap_or(usize::MAX);
        if n > storage.len() || n > gather_cap {
            return Err(ReadError::format(
                path,
                format!(
                    "a chunk's strided view of {n} bytes is larger than its storage or the \
                     {} MiB left to gather; refused",
                    gather_cap >> 20
                ),
            ));
        }
    }
    let view = contiguous_view(
        path, "chunk", storage, t.dtype, t.offset, &t.shape, &t.stride,
    )?;
    Ok((t, view))
}
