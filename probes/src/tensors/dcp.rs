//! torch.distributed.checkpoint (DCP) folders: `.metadata` (a pickle: each key's global shape,
//! dtype and chunks, and where each chunk's bytes lie) beside `__<rank>_<n>.distcp` files that
//! hold every chunk as a small `torch.save` archive at an offset. A tensor is read from its
//! chunks, memory-mapped and bounds-checked against their shard files first, a window of the
//! tensor at a time ([`Opened`]): statistics and comparisons stream, and only a caller that needs
//! the whole tensor assembles it (up to [`WHOLE_CAP`]). The `.metadata` parse is shared for the
//! process (see `memo`); nothing is unpickled beyond data.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::dtype::DType;
use super::mapguard::GuardedMap;
use super::pickle::{self, lookup, Value};
use super::stats::{StatsAcc, TensorStats};
use super::torchzip::{lone_tensor, map_file, release};
use crate::error::{ReadError, Result};

/// Largest `.metadata` read (it lists every key and chunk, never tensor data).
const METADATA_CAP: u64 = 256 << 20;
/// Chunks may refer to at most this many times the bytes of the shard file holding them
/// (every chunk's bytes are normally stored once; a tied weight saved under two names twice).
pub const REFERENCE_FACTOR: u64 = 2;
/// Largest tensor assembled whole (for a caller that needs every element at once; statistics
/// and comparisons stream instead), and most bytes of strided chunk views gathered per tensor.
pub const WHOLE_CAP: usize = 256 << 20;
/// Most dimensions a tensor may have.
const MAX_RANK: usize = 64;
/// Elements of a tensor read per window (for a 4-byte dtype: 4 MiB).
pub(crate) const WINDOW_ELEMS: usize = 1 << 20;

/// One chunk of a tensor: where its archive lies and which block of the tensor it covers.
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    pub file: Arc<Path>,
    pub offset: u64,
    pub length: u64,
    pub offsets: Vec<usize>,
    pub sizes: Vec<usize>,
}

/// One key of the checkpoint that holds a tensor.
#[derive(Debug, Clone)]
pub(crate) struct DcpTensor {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub chunks: Vec<Chunk>,
}

fn ints(v: &Value) -> Option<Vec<usize>> {
    match v {
        Value::Tuple(s) | Value::List(s) => s
            .iter()
            .map(|x| x.as_i64().and_then(|i| usize::try_from(i).ok()))
            .collect(),
        Value::Object { args, .. } => args.first().and_then(ints),
        _ => None,
    }
}

/// A shape or offset list of integers that `ints` refused: some entry is negative or beyond
/// `usize` (a pickled big int) — a corrupt entry to report, never a tensor to skip silently.
fn bad_ints(v: &Value) -> bool {
    match v {
        Value::Tuple(s) | Value::List(s) => {
            !s.is_empty()
                && s.iter()
                    .all(|x| matches!(x, Value::Int(_) | Value::BigInt(_)))
                && ints(v).is_none()
        }
        Value::Object { args, .. } => args.first().is_some_and(bad_ints),
        _ => false,
    }
}

fn dtype_of(props: &Value) -> Option<DType> {
    let first = match props {
        Value::Object {
            state: Some(st), ..
        } => match st.as_ref() {
            Value::Tuple(t) => t.first().cloned(),
            other => lookup(other, "dtype").cloned(),
        },
        other => lookup(other, "dtype").cloned(),
    }?;
    match first {
        Value::Global { module, name } if module == "torch" => DType::from_torch_dtype(&name),
        _ => None,
    }
}

/// Whether `path` is a DCP metadata file (`.metadata` beside `.distcp` files).
pub fn is_dcp_metadata(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == ".metadata")
}

/// Reads `.metadata`: every tensor key with its chunks. Keys that are not tensors (bytes:
/// param groups, step counters written as objects) are left out.
pub(crate) fn read_metadata(path: &Path) -> Result<Vec<DcpTensor>> {
    let data = crate::limits::read_capped(path, METADATA_CAP)?;
    let root =
        pickle::parse(&data).map_err(|e| ReadError::format(path, format!("DCP metadata: {e}")))?;
    let sdm = lookup(&root, "state_dict_metadata")
        .and_then(Value::as_dict)
        .ok_or_else(|| {
            ReadError::format(
                path,
                "not a torch.distributed.checkpoint .metadata (no state_dict_metadata)",
            )
        })?;
    let storage = lookup(&root, "storage_data")
        .and_then(Value::as_dict)
        .ok_or_else(|| ReadError::format(path, "DCP metadata without storage_data"))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    // (fqn, chunk offsets) -> (relative path, offset, length)
    let mut located: std::collections::HashMap<(String, Vec<usize>), (String, u64, u64)> =
        std::collections::HashMap::new();
    for (k, v) in storage {
        let (Some(fqn), Some(off)) = (
            lookup(k, "fqn").and_then(Value::as_str),
            lookup(k, "offset").and_then(ints),
        ) else {
            continue;
        };
        let (Some(rel), Some(o), Some(l)) = (
            lookup(v, "relative_path").and_then(Value::as_str),
            lookup(v, "offset").and_then(Value::as_i64),
            lookup(v, "length").and_then(Value::as_i64),
        ) else {
            continue;
        };
        if lookup(v, "transform_descriptors").is_some_and(|t| !matches!(t, Value::None))
            && lookup(v, "transform_descriptors")
                .and_then(Value::as_seq)
                .is_some_and(|s| !s.is_empty())
        {
            continue; // compressed / transformed chunk: not read
        }
        if rel.contains('/') || rel.contains('\\') || rel.contains("..") {
            return Err(ReadError::format(
                path,
                format!("chunk path {rel:?} leaves the checkpoint folder"),
            ));
        }
        let (Ok(o), Ok(l)) = (u64::try_from(o), u64::try_from(l)) else {
            return Err(ReadError::format(
                path,
                format!("{fqn}: negative chunk offset or length"),
            ));
        };
        located.insert((fqn.to_string(), off), (rel.to_string(), o, l));
    }
    let mut files: HashMap<&str, Arc<Path>> = HashMap::new();
    let mut out = Vec::new();
    for (k, v) in sdm {
        let Some(name) = k.key_string() else { continue };
        if lookup(v, "size").is_some_and(bad_ints) {
            return Err(ReadError::format(
                path,
                format!("{name}: a dimension is negative or larger than 2^63; refused"),
            ));
        }
        let (Some(props), Some(size), Some(chunks)) = (
            lookup(v, "properties"),
            lookup(v, "size").and_then(ints),
            lookup(v, "chunks").and_then(Value::as_seq),
        ) else {
            continue; // BytesStorageMetadata
        };
        let Some(dtype) = dtype_of(props) else {
            continue;
        };
        if size.len() > MAX_RANK {
            return Err(ReadError::format(
                path,
                format!("{name}: {} dimensions, more than {MAX_RANK}", size.len()),
            ));
        }
        let mut cs = Vec::with_capacity(chunks.len());
        for c in chunks {
            if lookup(c, "offsets").is_some_and(bad_ints)
                || lookup(c, "sizes").is_some_and(bad_ints)
            {
                return Err(ReadError::format(
                    path,
                    format!(
                        "{name}: a chunk offset or size is negative or larger than 2^63; refused"
                    ),
                ));
            }
            let (Some(offsets), Some(sizes)) = (
                lookup(c, "offsets").and_then(ints),
                lookup(c, "sizes").and_then(ints),
            ) else {
                return Err(ReadError::format(
                    path,
                    format!("{name}: a chunk without offsets/sizes"),
                ));
            };
            let fits = offsets.len() == size.len()
                && sizes.len() == size.len()
                && offsets
                    .iter()
                    .zip(&sizes)
                    .zip(&size)
                    .all(|((o, s), d)| o.checked_add(*s).is_some_and(|e| e <= *d));
            if !fits {
                return Err(ReadError::format(
                    path,
                    format!(
                        "{name}: chunk at {offsets:?} of {sizes:?} does not fit shape {size:?}"
                    ),
                ));
            }
            let Some((rel, o, l)) = located.get(&(name.clone(), offsets.clone())) else {
                return Err(ReadError::format(
                    path,
                    format!("{name}: chunk at {offsets:?} has no storage entry"),
                ));
            };
            let file = files
                .entry(rel.as_str())
                .or_insert_with(|| Arc::from(dir.join(rel)))
                .clone();
            cs.push(Chunk {
                file,
                offset: *o,
                length: *l,
                offsets,
                sizes,
            });
        }
        if size
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .and_then(|n| n.checked_mul(dtype.size()))
            .is_none()
        {
            return Err(ReadError::format(
                path,
                format!("{name}: shape {size:?} overflows"),
            ));
        }
        out.push(DcpTensor {
            name,
            dtype,
            shape: size,
            chunks: cs,
        });
    }
    check_references(path, &out)?;
    Ok(out)
}

/// The reference budget: the chunks that lie inside a shard file may refer to at most
/// [`REFERENCE_FACTOR`] times its bytes (a chunk listed over and over would otherwise make a
/// small file read as gigabytes). Chunks past a file's end, and missing files, are left to the
/// read of their tensor, which refuses them.
fn check_references(path: &Path, tensors: &[DcpTensor]) -> Result<()> {
    let mut files: HashMap<&Path, (Option<u64>, u64)> = HashMap::new();
    for c in tensors.iter().flat_map(|t| &t.chunks) {
        let e = files.entry(&c.file).or_insert_with(|| {
            let len = crate::limits::open_regular(&c.file)
                .ok()
                .and_then(|f| f.metadata().ok())
                .map(|m| m.len());
            (len, 0)
        });
        if let Some(len) = e.0 {
            if c.offset.checked_add(c.length).is_some_and(|end| end <= len) {
                e.1 = e.1.saturating_add(c.length);
            }
        }
    }
    for (file, (len, refs)) in files {
        let len = len.unwrap_or(0);
        if refs > len.saturating_mul(REFERENCE_FACTOR) {
            let name = file.file_name().unwrap_or(file.as_os_str());
            return Err(ReadError::format(
                path,
                format!(
                    "chunks refer to {} of {} ({} long), more than {REFERENCE_FACTOR}× its \
                     bytes; refused (DCP reference budget)",
                    human(refs),
                    name.to_string_lossy(),
                    human(len)
                ),
            ));
        }
    }
    Ok(())
}

fn human(n: u64) -> String {
    if n >= 1 << 30 {
        format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64)
    } else if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else {
        format!("{n} bytes")
    }
}

/// [`read_metadata`], parsed once for the process: every later open of the same `.metadata`
/// (each probe of a `check` opens the checkpoints again) shares it (see `memo`).
pub(crate) fn read_metadata_shared(path: &Path) -> Result<Arc<Vec<DcpTensor>>> {
    super::memo::read_shared_sized("dcp metadata", path, || {
        let v = read_metadata(path)?;
        let bytes = v
            .iter()
            .map(|t| {
                96 + t.name.len() + t.chunks.len() * (96 + 16 * t.shape.len()) + 8 * t.shape.len()
            })
            .fold(0usize, usize::saturating_add);
        Ok((v, bytes))
    })
}

/// Where one chunk's elements are: a contiguous range of a mapped shard file, or gathered from
/// a strided view.
enum Data {
    Mapped { map: usize, start: usize },
    Gathered(Vec<u8>),
}

/// A tensor ready to be read window by window: its shard files mapped (through the
/// regular-file gate, each chunk bounds-checked against its file before any byte is read) and
/// each chunk's archive parsed once. Memory: the maps' pages touched by a window are dropped
/// after it, so resident memory stays near a window per reading thread.
pub(crate) struct Opened<'t> {
    t: &'t DcpTensor,
    maps: Vec<(Arc<Path>, GuardedMap)>,
    data: Vec<Data>,
    /// Row-major strides of the whole tensor, in elements.
    stride: Vec<usize>,
    numel: usize,
}

impl<'t> Opened<'t> {
    pub(crate) fn open(meta: &'t Path, t: &'t DcpTensor) -> Result<Opened<'t>> {
        let es = t.dtype.size();
        let numel = t
            .shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| ReadError::format(meta, format!("{}: shape overflows", t.name)))?;
        let mut maps: Vec<(Arc<Path>, GuardedMap)> = Vec::new();
        let mut index: HashMap<&Path, usize> = HashMap::new();
        let mut at = Vec::with_capacity(t.chunks.len());
        // Every chunk inside its file, and the tensor no larger than the chunks that hold it
        // (so a hostile shape cannot ask for memory the files do not back).
        let mut stored = 0u64;
        for c in &t.chunks {
            let m = match index.get(&*c.file) {
                Some(&m) => m,
                None => {
                    let (_, map) = map_file(&c.file)?;
                    maps.push((c.file.clone(), map));
                    index.insert(&c.file, maps.len() - 1);
                    maps.len() - 1
                }
            };
            let len = maps[m].1.len() as u64;
            if c.offset.checked_add(c.length).is_none_or(|e| e > len) {
                return Err(ReadError::format(
                    meta,
                    format!(
                        "{}: chunk runs past the end of {}",
                        t.name,
                        c.file.display()
                    ),
                ));
            }
            stored = stored.saturating_add(c.length);
            at.push(m);
        }
        if (numel as u64).saturating_mul(es as u64) > stored {
            return Err(ReadError::format(
                meta,
                format!(
                    "{}: shape {:?} is larger than its chunks' bytes",
                    t.name, t.shape
                ),
            ));
        }
        let mut data = Vec::with_capacity(t.chunks.len());
        let mut gathered = 0usize;
        for (c, &m) in t.chunks.iter().zip(&at) {
            let map = &maps[m].1;
            let (o, l) = (c.offset as usize, c.length as usize);
            let bytes = &map[o..o + l];
            let (tr, view) = lone_tensor(&c.file, bytes, WHOLE_CAP - gathered)?;
            if tr.shape != c.sizes || tr.dtype != t.dtype {
                return Err(ReadError::format(
                    &c.file,
                    format!(
                        "{}: chunk holds {} {:?}, metadata says {} {:?}",
                        t.name, tr.dtype, tr.shape, t.dtype, c.sizes
                    ),
                ));
            }
            let d = match view {
                std::borrow::Cow::Borrowed(b) => Data::Mapped {
                    map: m,
                    start: b.as_ptr() as usize - map.as_ptr() as usize,
                },
                std::borrow::Cow::Owned(v) => {
                    gathered += v.len();
                    Data::Gathered(v)
                }
            };
            data.push(d);
            // The archive's directory and pickle are not needed again.
            release(map, o..o + l);
        }
        let rank = t.shape.len();
        let mut stride = vec![1usize; rank];
        for d in (0..rank.saturating_sub(1)).rev() {
            stride[d] = stride[d + 1] * t.shape[d + 1];
        }
        let o = Opened {
            t,
            maps,
            data,
            stride,
            numel,
        };
        o.intact()?;
        Ok(o)
    }

    pub(crate) fn numel(&self) -> usize {
        self.numel
    }

    /// An error when a shard file shrank while it was read (its numbers are discarded).
    pub(crate) fn intact(&self) -> Result<()> {
        for (p, m) in &self.maps {
            super::intact(p, m.damaged())?;
        }
        Ok(())
    }

    fn chunk_bytes(&self, i: usize) -> &[u8] {
        let es = self.t.dtype.size();
        let n = self.t.chunks[i].sizes.iter().product::<usize>() * es;
        match &self.data[i] {
            Data::Mapped { map, start } => &self.maps[*map].1[*start..*start + n],
            Data::Gathered(v) => &v[..n],
        }
    }

    /// Writes elements `s..e` of the tensor (row-major) into `out` (`(e - s)` elements long):
    /// what no chunk covers is zero, a later chunk wins where chunks overlap. The mapped pages
    /// read are dropped after.
    pub(crate) fn fill(&self, s: usize, e: usize, out: &mut [u8]) {
        let es = self.t.dtype.size();
        out.fill(0);
        if s >= e {
            return;
        }
        for (i, c) in self.t.chunks.iter().enumerate() {
            let src = self.chunk_bytes(i);
            let (mut lo, mut hi) = (usize::MAX, 0usize);
            if c.sizes.is_empty() {
                // A 0-d tensor: one element at 0.
                if s == 0 && src.len() >= es {
                    out[..es].copy_from_slice(&src[..es]);
                    (lo, hi) = (0, es);
                }
            } else {
                let mut copy = |at: usize, row: usize, len: usize| {
                    let (a, b) = (at.max(s), (at + len).min(e));
                    if a < b {
                        let from = (row * len + (a - at)) * es;
                        let n = (b - a) * es;
                        out[(a - s) * es..(a - s) * es + n].copy_from_slice(&src[from..from + n]);
                        lo = lo.min(from);
                        hi = hi.max(from + n);
                    }
                };
                self.rows(c, 0, 0, 0, s, e, &mut copy);
            }
            if let (Data::Mapped { map, start }, true) = (&self.data[i], lo < hi) {
                release(&self.maps[*map].1, start + lo..start + hi);
            }
        }
    }

    /// Calls `copy(flat start, chunk row, row length)` for each row of chunk `c` (its last
    /// dimension) that may meet elements `s..e`, from dimension `d` on; `base` is the flat
    /// offset so far, `row` the chunk's row index so far.
    #[allow(clippy::too_many_arguments)]
    fn rows(
        &self,
        c: &Chunk,
        d: usize,
        base: usize,
        row: usize,
        s: usize,
        e: usize,
        copy: &mut impl FnMut(usize, usize, usize),
    ) {
        let last = c.sizes.len() - 1;
        if d == last {
            copy(base + c.offsets[d], row, c.sizes[d]);
            return;
        }
        let st = self.stride[d];
        if st == 0 || c.sizes[d] == 0 || e <= base {
            return;
        }
        // Indices g of this dimension whose block [base + g·st, base + (g+1)·st) meets s..e.
        let g_lo = s.saturating_sub(base) / st;
        let g_hi = (e - base - 1) / st;
        let i_lo = g_lo.saturating_sub(c.offsets[d]);
        let Some(i_hi) = g_hi.checked_sub(c.offsets[d]) else {
            return;
        };
        for i in i_lo..=i_hi.min(c.sizes[d] - 1) {
            let b = base + (c.offsets[d] + i) * st;
            self.rows(c, d + 1, b, row * c.sizes[d] + i, s, e, copy);
        }
    }
}

/// Statistics of a DCP tensor, streamed a window at a time across threads: the tensor is never
/// assembled.
pub(crate) fn stats(meta: &Path, t: &DcpTensor) -> Result<TensorStats> {
    let o = Opened::open(meta, t)?;
    let (dt, n) = (t.dtype, o.numel());
    let es = dt.size();
    let windows = n.div_ceil(WINDOW_ELEMS);
    let acc = (0..windows)
        .into_par_iter()
        .fold(
            || (StatsAcc::new(dt, n), Vec::new()),
            |(mut acc, mut buf), w| {
                let s = w * WINDOW_ELEMS;
                let e = (s + WINDOW_ELEMS).min(n);
                buf.resize((e - s) * es, 0);
                o.fill(s, e, &mut buf);
                acc.feed(&buf);
                (acc, buf)
            },
        )
        .map(|(acc, _)| acc)
        .reduce(
            || StatsAcc::new(dt, n),
            |mut a, b| {
                a.merge(b);
                a
            },
        );
    o.intact()?;
    Ok(acc.finish())
}

/// The tensor's full contiguous bytes, for a caller that needs every element at once; a tensor
/// over [`WHOLE_CAP`] is refused (its statistics and comparisons stream instead).
pub(crate) fn assemble(meta: &Path, t: &DcpTensor) -> Result<Vec<u8>> {
    let nbytes = t
        .shape
        .iter()
        .try_fold(t.dtype.size(), |a, &d| a.checked_mul(d))
        .unwrap_or(usize::MAX);
    if nbytes > WHOLE_CAP {
        return Err(ReadError::format(
            meta,
            format!(
                "{}: {} is over the {} budget for reading a DCP tensor whole \
                 (its statistics and comparisons are streamed)",
                t.name,
                human(nbytes as u64),
                human(WHOLE_CAP as u64)
            ),
        ));
    }
    let o = Opened::open(meta, t)?;
    let mut out = vec![0u8; nbytes];
    o.fill(0, o.numel(), &mut out);
    o.intact()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensors::stats::tensor_stats;

    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/field/dcp_fsdp_healthy/step_300")
    }

    /// The whole tensor, element by element from its chunks (the reference).
    fn naive(o: &Opened<'_>, t: &DcpTensor) -> Vec<u8> {
        let es = t.dtype.size();
        let mut out = vec![0u8; o.numel() * es];
        for (i, c) in t.chunks.iter().enumerate() {
            let src = o.chunk_bytes(i);
            let n: usize = c.sizes.iter().product();
            for k in 0..n {
                // Chunk-local multi-index of element k, then its flat place in the tensor.
                let (mut rem, mut at) = (k, 0);
                for d in (0..c.sizes.len()).rev() {
                    let idx = rem % c.sizes[d];
                    rem /= c.sizes[d];
                    at += (c.offsets[d] + idx) * o.stride[d];
                }
                out[at * es..(at + 1) * es].copy_from_slice(&src[k * es..(k + 1) * es]);
            }
        }
        out
    }

    #[test]
    fn windows_and_streamed_stats_match_the_assembled_tensor() {
        let meta = fixture().join(".metadata");
        let all = read_metadata(&meta).unwrap();
        assert!(all.iter().any(|t| t.chunks.len() > 1));
        for t in &all {
            let o = Opened::open(&meta, t).unwrap();
            let whole = naive(&o, t);
            let es = t.dtype.size();
            assert_eq!(assemble(&meta, t).unwrap(), whole, "{}", t.name);
            // Windows at odd boundaries, across chunk and row edges.
            for w in [1, 7, 33, 1000] {
                let mut s = 0;
                while s < o.numel() {
                    let e = (s + w).min(o.numel());
                    let mut buf = vec![0u8; (e - s) * es];
                    o.fill(s, e, &mut buf);
                    assert_eq!(buf, whole[s * es..e * es], "{} {s}..{e}", t.name);
                    s = e;
                }
            }
            let (a, b) = (stats(&meta, t).unwrap(), tensor_stats(&whole, t.dtype));
            assert_eq!((a.count, a.nan, a.zeros), (b.count, b.nan, b.zeros));
            assert!((a.mean - b.mean).abs() <= 1e-9 * b.mean.abs().max(1e-12));
            assert!((a.l2 - b.l2).abs() <= 1e-9 * b.l2.max(1e-12));
            assert_eq!((a.min, a.max), (b.min, b.max));
        }
    }

    #[test]
    fn a_chunk_referenced_over_and_over_is_refused_from_the_metadata() {
        let d = tempfile::tempdir().unwrap();
        let shard = d.path().join("__0_0.distcp");
        std::fs::write(&shard, vec![0u8; 4096]).unwrap();
        let chunk = |i: usize| Chunk {
            file: Arc::from(shard.as_path()),
            offset: 0,
            length: 1024,
            offsets: vec![i],
            sizes: vec![256],
        };
        let t = DcpTensor {
            name: "w".into(),
            dtype: DType::F32,
            shape: vec![256 * 9],
            chunks: (0..9).map(chunk).collect(),
        };
        let meta = d.path().join(".metadata");
        let e = check_references(&meta, std::slice::from_ref(&t))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(".metadata") && e.contains("__0_0.distcp") && e.contains("reference budget"),
            "{e}"
        );
        let mut t = t;
        t.chunks.truncate(8);
        assert!(check_references(&meta, &[t]).is_ok());
        assert!(human(3 << 30).ends_with("GiB"));
    }
}
