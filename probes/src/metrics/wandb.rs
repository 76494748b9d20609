//! W&B run record files (`wandb/<offline-|>run-*/run-<id>.wandb`): a 7-byte header
//! (`:W&B`, magic 0xBEE1, version 0) then LevelDB-log framed records (32 KiB blocks, 7-byte
//! record headers: crc32, length, type full/first/middle/last), each a protobuf `Record`.
//! History records (field 2: items of key / nested_key / value_json, and the step) become
//! series; the config record (field 5) becomes `key -> JSON value` pairs for facts. A torn
//! tail (a run still writing or killed) ends the read quietly; the CRC is not checked.

use std::collections::HashMap;
use std::path::Path;

use super::{Point, Series};
use crate::error::{ReadError, Result};

const HEADER: &[u8; 4] = b":W&B";
const BLOCK: usize = 32 * 1024;
/// Record files larger than this are refused (history of a huge run is still far below).
pub const MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// What a record file holds.
#[derive(Debug, Default)]
pub struct WandbRun {
    pub series: Vec<Series>,
    /// Config keys with their JSON values, in write order (later updates win).
    pub config: Vec<(String, String)>,
    pub history_rows: usize,
}

/// Whether the bytes start like a W&B record file.
pub fn looks_like_wandb(head: &[u8]) -> bool {
    head.len() >= 7 && &head[..4] == HEADER && head[4] == 0xE1 && head[5] == 0xBE
}

pub fn read(path: &Path) -> Result<WandbRun> {
    let meta = std::fs::metadata(path).map_err(|e| ReadError::io(path, e))?;
    if meta.len() > MAX_BYTES {
        return Err(ReadError::format(path, "W&B record file larger than 2 GiB"));
    }
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    parse(&bytes, path)
}

pub fn parse(bytes: &[u8], path: &Path) -> Result<WandbRun> {
    if !looks_like_wandb(bytes) {
        return Err(ReadError::format(
            path,
            "not a W&B record file (no :W&B header)",
        ));
    }
    let mut out = WandbRun::default();
    let mut by_key: HashMap<String, Vec<Point>> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut config: Vec<(String, String)> = Vec::new();
    let mut pos = 7usize;
    let mut pending: Vec<u8> = Vec::new();
    while pos + 7 <= bytes.len() {
        let left = BLOCK - pos % BLOCK;
        if left < 7 {
            pos += left;
            continue;
        }
        let len = usize::from(u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]));
        let kind = bytes[pos + 6];
        let start = pos + 7;
        let Some(data) = bytes.get(start..start + len) else {
            break; // torn tail
        };
        pos = start + len;
        let record: Option<Vec<u8>> = match kind {
            0 if len == 0 => {
                // zero padding to the block end
                pos += BLOCK - pos % BLOCK;
                None
            }
            1 => Some(data.to_vec()),
            2 => {
                pending = data.to_vec();
                None
            }
            3 => {
                pending.extend_from_slice(data);
                None
            }
            4 => {
                pending.extend_from_slice(data);
                Some(std::mem::take(&mut pending))
            }
            _ => break,
        };
        if let Some(r) = record {
            record_fields(&r, &mut out, &mut by_key, &mut order, &mut config);
        }
    }
    out.series = order
        .into_iter()
        .filter_map(|k| {
            let pts = by_key.remove(&k)?;
            Some(Series::from_points(&k, path, pts))
        })
        .collect();
    // Later config updates win; keep the last value of each key.
    let mut seen = HashMap::new();
    for (i, (k, _)) in config.iter().enumerate() {
        seen.insert(k.clone(), i);
    }
    out.config = config
        .into_iter()
        .enumerate()
        .filter(|(i, (k, _))| seen.get(k) == Some(i))
        .map(|(_, kv)| kv)
        .collect();
    Ok(out)
}

fn record_fields(
    r: &[u8],
    out: &mut WandbRun,
    by_key: &mut HashMap<String, Vec<Point>>,
    order: &mut Vec<String>,
    config: &mut Vec<(String, String)>,
) {
    let mut c = Cursor::new(r);
    while let Some((field, wire)) = c.key() {
        match (field, wire) {
            (2, 2) => {
                let Some(h) = c.bytes() else { return };
                history(h, out, by_key, order);
            }
            (5, 2) => {
                let Some(cfg) = c.bytes() else { return };
                let mut cc = Cursor::new(cfg);
                while let Some((f, w)) = cc.key() {
                    if (f, w) == (1, 2) {
                        let Some(item) = cc.bytes() else { break };
                        if let Some((k, v)) = item_kv(item) {
                            config.push((k, v));
                        }
                    } else if !cc.skip(w) {
                        break;
                    }
                }
            }
            _ => {
                if !c.skip(wire) {
                    return;
                }
            }
        }
    }
}

fn history(
    h: &[u8],
    out: &mut WandbRun,
    by_key: &mut HashMap<String, Vec<Point>>,
    order: &mut Vec<String>,
) {
    let mut items: Vec<(String, f64)> = Vec::new();
    let mut step: Option<u64> = None;
    let mut c = Cursor::new(h);
    while let Some((field, wire)) = c.key() {
        match (field, wire) {
            (1, 2) => {
                let Some(item) = c.bytes() else { break };
                if let Some((k, v)) = item_number(item) {
                    items.push((k, v));
                }
            }
            (2, 2) => {
                let Some(s) = c.bytes() else { break };
                let mut sc = Cursor::new(s);
                while let Some((f, w)) = sc.key() {
                    if (f, w) == (1, 0) {
                        step = sc.varint();
                    } else if !sc.skip(w) {
                        break;
                    }
                }
            }
            _ => {
                if !c.skip(wire) {
                    break;
                }
            }
        }
    }
    let step = step.or_else(|| {
        items
            .iter()
            .find(|(k, _)| k == "_step")
            .and_then(|(_, v)| (v.is_finite() && *v >= 0.0).then_some(*v as u64))
    });
    let Some(step) = step else { return };
    out.history_rows += 1;
    for (k, v) in items {
        if k.starts_with('_') {
            continue; // _step, _runtime, _timestamp, _wandb.*
        }
        let pts = by_key.entry(k.clone()).or_insert_with(|| {
            order.push(k.clone());
            Vec::new()
        });
        pts.push(Point {
            step,
            value: v,
            wall_time: None,
        });
    }
}

/// Key (key, or nested keys joined by '.') and raw JSON value of a history/config item.
fn item_kv(item: &[u8]) -> Option<(String, String)> {
    let mut key = String::new();
    let mut nested: Vec<String> = Vec::new();
    let mut value: Option<String> = None;
    let mut c = Cursor::new(item);
    while let Some((f, w)) = c.key() {
        match (f, w) {
            (1, 2) => key = String::from_utf8_lossy(c.bytes()?).into_owned(),
            (2, 2) => nested.push(String::from_utf8_lossy(c.bytes()?).into_owned()),
            (16, 2) => value = Some(String::from_utf8_lossy(c.bytes()?).into_owned()),
            (6, 1) => value = Some(f64::from_bits(c.fixed64()?).to_string()),
            (5, 0) => value = Some((c.varint()? as i64).to_string()),
            _ => {
                if !c.skip(w) {
                    return None;
                }
            }
        }
    }
    if key.is_empty() {
        key = nested.join(".");
    }
    (!key.is_empty()).then_some(())?;
    Some((key, value?))
}

fn item_number(item: &[u8]) -> Option<(String, f64)> {
    let (k, v) = item_kv(item)?;
    let v = v.trim();
    let n = match v {
        "NaN" | "\"NaN\"" | "nan" => f64::NAN,
        "Infinity" | "\"Infinity\"" | "inf" => f64::INFINITY,
        "-Infinity" | "\"-Infinity\"" | "-inf" => f64::NEG_INFINITY,
        "true" => 1.0,
        "false" => 0.0,
        _ => v.parse::<f64>().ok()?,
    };
    Some((k, n))
}

/// A minimal protobuf wire reader: never reads past its slice.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.data.get(self.pos)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn key(&mut self) -> Option<(u32, u8)> {
        if self.pos >= self.data.len() {
            return None;
        }
        let k = self.varint()?;
        Some(((k >> 3) as u32, (k & 7) as u8))
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.take(n)
    }

    fn fixed64(&mut self) -> Option<u64> {
        let b = self.take(8)?;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    fn skip(&mut self, wire: u8) -> bool {
        match wire {
            0 => self.varint().is_some(),
            1 => self.take(8).is_some(),
            2 => self.bytes().is_some(),
            5 => self.take(4).is_some(),
            _ => false,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn field(out: &mut Vec<u8>, f: u32, data: &[u8]) {
        varint(out, u64::from(f) << 3 | 2);
        varint(out, data.len() as u64);
        out.extend_from_slice(data);
    }

    fn item(key: &str, json: &str) -> Vec<u8> {
        let mut i = Vec::new();
        field(&mut i, 2, key.as_bytes());
        field(&mut i, 16, json.as_bytes());
        i
    }

    /// A record file with one config record and `rows` history rows, framed in blocks.
    pub(crate) fn file(rows: u64) -> Vec<u8> {
        let mut recs: Vec<Vec<u8>> = Vec::new();
        let mut cfg = Vec::new();
        let mut ci = Vec::new();
        field(&mut ci, 1, b"lr");
        field(&mut ci, 16, b"0.003");
        field(&mut cfg, 1, &ci);
        let mut r = Vec::new();
        field(&mut r, 5, &cfg);
        recs.push(r);
        for s in 1..=rows {
            let mut h = Vec::new();
            field(
                &mut h,
                1,
                &item("train/loss", &format!("{}", 4.0 / s as f64)),
            );
            field(&mut h, 1, &item("_step", &s.to_string()));
            let mut st = Vec::new();
            varint(&mut st, 8);
            varint(&mut st, s);
            field(&mut h, 2, &st);
            let mut r = Vec::new();
            field(&mut r, 2, &h);
            recs.push(r);
        }
        let mut out = b":W&B\xe1\xbe\x00".to_vec();
        for r in recs {
            let mut rest: &[u8] = &r;
            let mut first = true;
            loop {
                let left = BLOCK - out.len() % BLOCK;
                if left < 7 {
                    out.extend(std::iter::repeat_n(0, left));
                    continue;
                }
                let n = rest.len().min(left - 7);
                let last = n == rest.len();
                let kind = match (first, last) {
                    (true, true) => 1,
                    (true, false) => 2,
                    (false, false) => 3,
                    (false, true) => 4,
                };
                out.extend_from_slice(&[0, 0, 0, 0]);
                out.extend_from_slice(&(n as u16).to_le_bytes());
                out.push(kind);
                out.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                first = false;
                if last {
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn history_and_config_across_blocks() {
        let bytes = file(2000);
        assert!(bytes.len() > 2 * BLOCK);
        let r = parse(&bytes, Path::new("run-x.wandb")).unwrap();
        assert_eq!(r.history_rows, 2000);
        let loss = r.series.iter().find(|s| s.tag == "train/loss").unwrap();
        assert_eq!(loss.name, "loss");
        assert_eq!(loss.len(), 2000);
        assert_eq!(loss.points[1].step, 2);
        assert!((loss.points[1].value - 2.0).abs() < 1e-12);
        assert_eq!(r.config, vec![("lr".to_string(), "0.003".to_string())]);
        // A torn tail keeps what came before.
        let cut = parse(&bytes[..bytes.len() - 3], Path::new("run-x.wandb")).unwrap();
        assert_eq!(cut.history_rows, 1999);
    }

    #[test]
    fn wrong_header_is_one_line_error() {
        let e = parse(b"hello world", Path::new("run-y.wandb")).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("run-y.wandb") && !m.contains('\n'), "{m}");
    }
}
