//! W&B run record files (`wandb/<offline-|>run-*/run-<id>.wandb`): a 7-byte header
//! (`:W&B`, magic 0xBEE1, version 0) then LevelDB-log framed records (32 KiB blocks, 7-byte
//! record headers: crc32, length, type full/first/middle/last), each a protobuf `Record`.
//! History records (field 2: items of key / nested_key / value_json, and the step) become
//! series; the config record (field 5) becomes `key -> JSON value` pairs for facts. A torn
//! tail (a run still writing or killed) ends the read quietly; the CRC is not checked.
//! The file is streamed through a window of one record (opened through the regular-file
//! gate): a record over [`MAX_RECORD`] is skipped, the series are kept under
//! [`super::budget`], the config under [`MAX_CONFIG_KEYS`] keys and [`MAX_CONFIG_BYTES`].

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use super::budget::{Keeper, MAX_KEY_BYTES};
use super::{Point, Series};
use crate::error::{ReadError, Result};

const HEADER: &[u8; 4] = b":W&B";
const BLOCK: usize = 32 * 1024;
/// Record files larger than this are refused (history of a huge run is still far below).
pub const MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// A record (its fragments joined) larger than this is skipped.
pub const MAX_RECORD: usize = 16 << 20;
/// Distinct config keys kept; later new keys are ignored (updates to kept keys still win).
pub const MAX_CONFIG_KEYS: usize = 10_000;
/// Bytes of config keys and values kept, all together.
pub const MAX_CONFIG_BYTES: usize = 16 << 20;
/// A config value longer than this is not kept.
pub const MAX_CONFIG_VALUE: usize = 64 << 10;

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
    let f = crate::limits::open_regular(path)?;
    let len = f.metadata().map_err(|e| ReadError::io(path, e))?.len();
    if len > MAX_BYTES {
        return Err(ReadError::format(path, "W&B record file larger than 2 GiB"));
    }
    parse_from(f.take(MAX_BYTES), path)
}

pub fn parse(bytes: &[u8], path: &Path) -> Result<WandbRun> {
    parse_from(bytes, path)
}

/// The bytes of a stream from some offset on: enough to hold one record and its header.
struct Window<R> {
    r: R,
    buf: Vec<u8>,
    /// The stream offset of `buf[0]`.
    base: usize,
    eof: bool,
}

impl<R: Read> Window<R> {
    /// The bytes `from..to` (offsets only grow: what lies before `from` is let go); `None`
    /// when the stream ends first.
    fn get(&mut self, from: usize, to: usize) -> std::io::Result<Option<&[u8]>> {
        if from >= self.base + (1 << 20) || from > self.base + self.buf.len() {
            let drop = (from - self.base).min(self.buf.len());
            self.buf.drain(..drop);
            self.base += drop;
            // Bytes between what is held and `from` (a jump past the end) are read and let go.
            while self.base < from && !self.eof {
                let mut skip = vec![0u8; (from - self.base).min(64 << 10)];
                let n = self.fill(&mut skip)?;
                self.base += n;
            }
        }
        while self.base + self.buf.len() < to && !self.eof {
            let mut chunk = [0u8; 64 << 10];
            let n = self.fill(&mut chunk)?;
            self.buf.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
        }
        let (a, b) = (from.saturating_sub(self.base), to.saturating_sub(self.base));
        Ok(if from < self.base {
            None
        } else {
            self.buf.get(a..b)
        })
    }

    fn fill(&mut self, into: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.r.read(into) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(0);
                }
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// What the records add up to while the file is read.
#[derive(Default)]
struct State {
    out: WandbRun,
    keep: Keeper,
    /// Config key -> (write order of its last update, JSON value).
    config: HashMap<String, (u64, String)>,
    config_seq: u64,
    config_bytes: usize,
}

impl State {
    fn config(&mut self, k: String, v: String) {
        if v.len() > MAX_CONFIG_VALUE || k.len() > MAX_KEY_BYTES {
            return;
        }
        self.config_seq += 1;
        let seq = self.config_seq;
        match self.config.get_mut(&k) {
            Some(slot) => {
                let bytes = self.config_bytes - slot.1.len() + v.len();
                if bytes <= MAX_CONFIG_BYTES {
                    self.config_bytes = bytes;
                    *slot = (seq, v);
                }
            }
            None => {
                let bytes = self.config_bytes + k.len() + v.len();
                if self.config.len() < MAX_CONFIG_KEYS && bytes <= MAX_CONFIG_BYTES {
                    self.config_bytes = bytes;
                    self.config.insert(k, (seq, v));
                }
            }
        }
    }
}

fn parse_from<R: Read>(r: R, path: &Path) -> Result<WandbRun> {
    let mut w = Window {
        r,
        buf: Vec::new(),
        base: 0,
        eof: false,
    };
    let io = |e| ReadError::io(path, e);
    if !w.get(0, 7).map_err(io)?.is_some_and(looks_like_wandb) {
        return Err(ReadError::format(
            path,
            "not a W&B record file (no :W&B header)",
        ));
    }
    let mut st = State::default();
    let mut pos = 7usize;
    let mut pending: Vec<u8> = Vec::new();
    // A record whose fragments passed MAX_RECORD: the rest of it is skipped.
    let mut oversize = false;
    loop {
        let left = BLOCK - pos % BLOCK;
        if left < 7 {
            pos += left;
            continue;
        }
        let Some(h) = w.get(pos, pos + 7).map_err(io)? else {
            break;
        };
        let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
        let kind = h[6];
        let start = pos + 7;
        let Some(data) = w.get(start, start + len).map_err(io)? else {
            break; // torn tail
        };
        pos = start + len;
        let add = |pending: &mut Vec<u8>, oversize: &mut bool| {
            if pending.len() + data.len() > MAX_RECORD {
                *oversize = true;
                *pending = Vec::new();
            } else if !*oversize {
                pending.extend_from_slice(data);
            }
        };
        match kind {
            0 if len == 0 => {
                // zero padding to the block end
                pos += BLOCK - pos % BLOCK;
            }
            1 => record_fields(data, &mut st),
            2 => {
                pending.clear();
                oversize = false;
                add(&mut pending, &mut oversize);
            }
            3 => add(&mut pending, &mut oversize),
            4 => {
                add(&mut pending, &mut oversize);
                if !oversize {
                    record_fields(&pending, &mut st);
                }
                pending.clear();
                oversize = false;
            }
            _ => break,
        }
    }
    let State {
        mut out,
        keep,
        config,
        ..
    } = st;
    out.series = keep
        .finish()
        .into_iter()
        .map(|(k, pts)| Series::from_points(&k, path, pts))
        .collect();
    // Later config updates win; each key where its last update was written.
    let mut config: Vec<(u64, String, String)> =
        config.into_iter().map(|(k, (i, v))| (i, k, v)).collect();
    config.sort_unstable_by_key(|c| c.0);
    out.config = config.into_iter().map(|(_, k, v)| (k, v)).collect();
    Ok(out)
}

fn record_fields(r: &[u8], st: &mut State) {
    let mut c = Cursor::new(r);
    while let Some((field, wire)) = c.key() {
        match (field, wire) {
            (2, 2) => {
                let Some(h) = c.bytes() else { return };
                history(h, st);
            }
            (5, 2) => {
                let Some(cfg) = c.bytes() else { return };
                let mut cc = Cursor::new(cfg);
                while let Some((f, w)) = cc.key() {
                    if (f, w) == (1, 2) {
                        let Some(item) = cc.bytes() else { break };
                        if let Some((k, v)) = item_kv(item) {
                            st.config(k, v);
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

fn history(h: &[u8], st: &mut State) {
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
    st.out.history_rows += 1;
    for (k, v) in items {
        if k.starts_with('_') {
            continue; // _step, _runtime, _timestamp, _wandb.*
        }
        st.keep.push(
            &k,
            Point {
                step,
                value: v,
                wall_time: None,
            },
        );
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
        frame(recs)
    }

    /// Records framed in 32 KiB blocks behind the header.
    fn frame(recs: Vec<Vec<u8>>) -> Vec<u8> {
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
    fn config_keys_and_records_are_capped_and_later_updates_win() {
        let cfg = |pairs: &[(String, &str)]| {
            let mut items = Vec::new();
            for (k, v) in pairs {
                let mut ci = Vec::new();
                field(&mut ci, 1, k.as_bytes());
                field(&mut ci, 16, v.as_bytes());
                field(&mut items, 1, &ci);
            }
            let mut r = Vec::new();
            field(&mut r, 5, &items);
            r
        };
        let many: Vec<(String, &str)> = (0..MAX_CONFIG_KEYS + 10)
            .map(|i| (format!("k{i}"), "1"))
            .collect();
        let big = vec![("huge".to_string(), "x")];
        let mut huge = cfg(&big);
        huge.extend(std::iter::repeat_n(0u8, MAX_RECORD)); // one record past the cap
        let recs = vec![
            cfg(&many),
            huge,
            cfg(&[("k0".to_string(), "2"), ("lr".to_string(), "0.1")]),
        ];
        let r = parse(&frame(recs), Path::new("run-z.wandb")).unwrap();
        assert_eq!(r.config.len(), MAX_CONFIG_KEYS);
        assert_eq!(r.config.last(), Some(&("k0".to_string(), "2".to_string())));
        assert!(!r.config.iter().any(|(k, _)| k == "lr" || k == "huge"));
    }

    #[test]
    fn wrong_header_is_one_line_error() {
        let e = parse(b"hello world", Path::new("run-y.wandb")).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("run-y.wandb") && !m.contains('\n'), "{m}");
    }
}
