//! Safetensors files: the 8-byte header length and JSON header are validated against the file
//! size before any tensor byte is touched; tensor bytes are then sliced from a memory map.
//! Also the sharded `*.index.json` layout (`weight_map` → shard files).

use std::collections::BTreeMap;
use std::path::Path;

use super::mapguard::GuardedMap;

use super::dtype::DType;
use super::torchzip::map_file;
use super::TensorInfo;
use crate::error::{ReadError, Result};

/// Largest JSON header accepted.
pub const MAX_HEADER: u64 = 100 * 1024 * 1024;

/// One opened `.safetensors` file.
pub(crate) struct SafeFile {
    pub path: std::path::PathBuf,
    pub file: std::fs::File,
    map: GuardedMap,
    /// (info, byte range in the file), in data order.
    pub tensors: Vec<(TensorInfo, std::ops::Range<usize>)>,
    pub metadata: BTreeMap<String, String>,
}

impl SafeFile {
    pub fn open(path: &Path) -> Result<SafeFile> {
        let (file, map) = map_file(path)?;
        let (tensors, metadata) = parse_header(path, &map)?;
        super::intact(path, map.damaged())?;
        Ok(SafeFile {
            path: path.to_path_buf(),
            file,
            map,
            tensors,
            metadata,
        })
    }

    pub fn bytes(&self, r: &std::ops::Range<usize>) -> &[u8] {
        self.map.get(r.clone()).unwrap_or(&[])
    }

    pub fn map_ref(&self) -> &GuardedMap {
        &self.map
    }
}

/// Most tensors one header may list (a real shard holds thousands).
pub const MAX_TENSORS: usize = 500_000;

/// One header entry, keeping only the three fields we read (so a huge header stays small).
#[derive(Default)]
struct RawTensor {
    dtype: Option<serde_json::Value>,
    shape: Option<serde_json::Value>,
    data_offsets: Option<serde_json::Value>,
}

impl RawTensor {
    fn get(&self, k: &str) -> Option<&serde_json::Value> {
        match k {
            "dtype" => self.dtype.as_ref(),
            "shape" => self.shape.as_ref(),
            _ => self.data_offsets.as_ref(),
        }
    }
}

/// The JSON header: `__metadata__` and the tensor entries in file order, bounded by
/// [`MAX_TENSORS`] while parsing.
struct Header {
    metadata: Option<serde_json::Value>,
    tensors: Vec<(String, RawTensor)>,
}

impl<'de> serde::Deserialize<'de> for Header {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Header;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<Header, A::Error> {
                let mut h = Header {
                    metadata: None,
                    tensors: Vec::new(),
                };
                while let Some(k) = m.next_key::<String>()? {
                    if k == "__metadata__" {
                        h.metadata = Some(m.next_value()?);
                        continue;
                    }
                    if h.tensors.len() >= MAX_TENSORS {
                        return Err(serde::de::Error::custom(format!(
                            "more than {MAX_TENSORS} tensors in one header; refused"
                        )));
                    }
                    let v = match m.next_value::<serde_json::Value>()? {
                        serde_json::Value::Object(mut o) => RawTensor {
                            dtype: o.remove("dtype"),
                            shape: o.remove("shape"),
                            data_offsets: o.remove("data_offsets"),
                        },
                        _ => RawTensor::default(),
                    };
                    h.tensors.push((k, v));
                }
                Ok(h)
            }
        }
        d.deserialize_map(V)
    }
}

/// Tensors with their byte ranges in the file, in data order.
pub(crate) type Located = Vec<(TensorInfo, std::ops::Range<usize>)>;
/// String-to-string metadata (`__metadata__`, an index's `metadata`).
pub(crate) type Meta = BTreeMap<String, String>;

fn parse_header(path: &Path, buf: &[u8]) -> Result<(Located, Meta)> {
    let fmt = |m: String| ReadError::format(path, m);
    if buf.len() < 8 {
        return Err(fmt(format!(
            "{} bytes is too short for a safetensors header",
            buf.len()
        )));
    }
    let mut l = [0u8; 8];
    l.copy_from_slice(&buf[..8]);
    let hlen = u64::from_le_bytes(l);
    let avail = buf.len() as u64 - 8;
    if hlen > avail {
        return Err(fmt(format!(
            "header length {hlen} exceeds the file ({avail} bytes after the length field)"
        )));
    }
    if hlen > MAX_HEADER {
        return Err(fmt(format!(
            "header length {hlen} exceeds the 100 MB limit"
        )));
    }
    let hend = 8 + hlen as usize;
    if buf[8..hend]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_none_or(|&b| b != b'{')
    {
        return Err(
            match serde_json::from_slice::<serde_json::Value>(&buf[8..hend]) {
                Err(e) => fmt(format!("header is not valid JSON: {e}")),
                Ok(_) => fmt("header is not a JSON object".into()),
            },
        );
    }
    let header: Header = serde_json::from_slice(&buf[8..hend])
        .map_err(|e| fmt(format!("header is not valid JSON: {e}")))?;
    let data_len = buf.len() - hend;
    let mut metadata = BTreeMap::new();
    if let Some(m) = header.metadata.as_ref().and_then(|m| m.as_object()) {
        for (k, x) in m {
            let s = x
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| x.to_string());
            metadata.insert(k.clone(), s);
        }
    }
    let mut tensors = Vec::with_capacity(header.tensors.len());
    for (name, v) in &header.tensors {
        let bad = |what: &str| fmt(format!("tensor {name:?}: {what}"));
        let dt = v
            .get("dtype")
            .and_then(|d| d.as_str())
            .ok_or_else(|| bad("no dtype"))?;
        let dtype =
            DType::from_safetensors(dt).ok_or_else(|| bad(&format!("unknown dtype {dt:?}")))?;
        let shape: Vec<usize> = v
            .get("shape")
            .and_then(|s| s.as_array())
            .ok_or_else(|| bad("no shape"))?
            .iter()
            .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("shape entries must be non-negative integers"))?;
        let offs = v
            .get("data_offsets")
            .and_then(|o| o.as_array())
            .ok_or_else(|| bad("no data_offsets"))?;
        let (b, e) = match offs.as_slice() {
            [b, e] => (
                b.as_u64().ok_or_else(|| bad("bad data_offsets"))?,
                e.as_u64().ok_or_else(|| bad("bad data_offsets"))?,
            ),
            _ => return Err(bad("data_offsets must be [begin, end]")),
        };
        let info = TensorInfo {
            name: name.clone(),
            dtype,
            shape,
            buffer: false,
        };
        let nbytes = info
            .checked_nbytes()
            .ok_or_else(|| bad(&format!("shape {:?} overflows", info.shape)))?;
        if e < b || e > data_len as u64 {
            return Err(bad(&format!(
                "data_offsets [{b}, {e}] outside the data region of {data_len} bytes"
            )));
        }
        if (e - b) as u128 != nbytes as u128 {
            return Err(bad(&format!(
                "shape {:?} × {} needs {nbytes} bytes but data_offsets span {}",
                info.shape,
                dtype,
                e - b
            )));
        }
        let start = hend + b as usize;
        tensors.push((info, start..hend + e as usize));
    }
    tensors.sort_by_key(|(_, r)| (r.start, r.end));
    for w in tensors.windows(2) {
        if w[1].1.start < w[0].1.end {
            return Err(fmt(format!(
                "tensors {:?} and {:?} overlap",
                w[0].0.name, w[1].0.name
            )));
        }
    }
    Ok((tensors, metadata))
}

/// Reads `*.index.json`: the `weight_map` (tensor name → shard file name) and `metadata`.
/// Returns (shard file names, weight_map, metadata).
pub(crate) fn read_index(path: &Path) -> Result<(Vec<String>, Meta, Meta)> {
    let text = crate::limits::read_text_file(path)?;
    if text.is_empty() {
        return Err(ReadError::empty(path, "empty file"));
    }
    let v: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| ReadError::format(path, format!("not valid JSON: {e}")))?;
    let wm = v
        .get("weight_map")
        .and_then(|w| w.as_object())
        .ok_or_else(|| ReadError::format(path, "no weight_map object"))?;
    let mut map = BTreeMap::new();
    let mut shards: Vec<String> = Vec::new();
    for (k, s) in wm {
        let s = s.as_str().ok_or_else(|| {
            ReadError::format(path, format!("weight_map[{k:?}] is not a file name"))
        })?;
        if s.contains('/') || s.contains('\\') || s == ".." {
            return Err(ReadError::format(
                path,
                format!("weight_map[{k:?}] = {s:?} is not a plain file name"),
            ));
        }
        if !shards.iter().any(|x| x == s) {
            shards.push(s.to_string());
        }
        map.insert(k.clone(), s.to_string());
    }
    shards.sort();
    let mut metadata = BTreeMap::new();
    if let Some(m) = v.get("metadata").and_then(|m| m.as_object()) {
        for (k, x) in m {
            metadata.insert(
                k.clone(),
                x.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| x.to_string()),
            );
        }
    }
    Ok((shards, map, metadata))
}
