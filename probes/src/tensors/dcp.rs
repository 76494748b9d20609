//! torch.distributed.checkpoint (DCP) folders: `.metadata` (a pickle: each key's global shape,
//! dtype and chunks, and where each chunk's bytes lie) beside `__<rank>_<n>.distcp` files that
//! hold every chunk as a small `torch.save` archive at an offset. A tensor is assembled from its
//! chunks when it is read, one at a time; nothing is unpickled beyond data.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::dtype::DType;
use super::pickle::{self, lookup, Value};
use super::torchzip::lone_tensor;
use crate::error::{ReadError, Result};

/// Largest `.metadata` read (it lists every key and chunk, never tensor data).
const METADATA_CAP: u64 = 256 << 20;

/// One chunk of a tensor: where its archive lies and which block of the tensor it covers.
#[derive(Debug, Clone)]
pub(crate) struct Chunk {
    pub file: PathBuf,
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
    let mut out = Vec::new();
    for (k, v) in sdm {
        let Some(name) = k.key_string() else { continue };
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
        let mut cs = Vec::with_capacity(chunks.len());
        for c in chunks {
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
            cs.push(Chunk {
                file: dir.join(rel),
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
    Ok(out)
}

/// The tensor's full contiguous bytes, each chunk read from its `.distcp` file and copied into
/// place.
pub(crate) fn assemble(meta: &Path, t: &DcpTensor) -> Result<Vec<u8>> {
    let es = t.dtype.size();
    let numel: usize = t.shape.iter().product();
    // Every chunk inside its file, and the tensor no larger than the chunks that hold it (so
    // a hostile shape cannot ask for memory the files do not back).
    let mut stored = 0u64;
    for c in &t.chunks {
        let len = crate::limits::open_regular(&c.file)?
            .metadata()
            .map_err(|e| ReadError::io(&c.file, e))?
            .len();
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
    let mut out = vec![0u8; numel * es];
    let rank = t.shape.len();
    // Row-major strides of the full tensor, in elements.
    let mut stride = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * t.shape[d + 1];
    }
    for c in &t.chunks {
        let mut f = crate::limits::open_regular(&c.file)?;
        let mut buf = vec![0u8; c.length as usize];
        f.seek(SeekFrom::Start(c.offset))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| ReadError::io(&c.file, e))?;
        let (tr, bytes) = lone_tensor(&c.file, &buf)?;
        if tr.shape != c.sizes || tr.dtype != t.dtype {
            return Err(ReadError::format(
                &c.file,
                format!(
                    "{}: chunk holds {} {:?}, metadata says {} {:?}",
                    t.name, tr.dtype, tr.shape, t.dtype, c.sizes
                ),
            ));
        }
        if rank == 0 {
            out.copy_from_slice(&bytes[..es.min(bytes.len())]);
            continue;
        }
        // Copy the chunk's rows (last dimension contiguous) into place.
        let row = c.sizes[rank - 1] * es;
        let rows: usize = c.sizes[..rank - 1].iter().product();
        let mut idx = vec![0usize; rank - 1];
        for r in 0..rows {
            let mut at = c.offsets[rank - 1];
            for d in 0..rank - 1 {
                at += (c.offsets[d] + idx[d]) * stride[d];
            }
            out[at * es..at * es + row].copy_from_slice(&bytes[r * row..(r + 1) * row]);
            for d in (0..rank - 1).rev() {
                idx[d] += 1;
                if idx[d] < c.sizes[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
    Ok(out)
}
