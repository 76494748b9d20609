//! TensorBoard event files (`events.out.tfevents.*`) without protoc or prost: TFRecord framing
//! with masked CRC32C checks, and a hand-written decoder for the few protobuf messages that carry
//! scalars — `simple_value` (PyTorch `SummaryWriter`) and tensor scalars with plugin `scalars`
//! (TF2/Keras, `new_style=True`). Streams the file; memory is bounded by the largest record.

use std::collections::HashMap;

use std::io::{BufReader, Read};
use std::path::Path;

use super::{Point, Series};
use crate::error::{ReadError, Result};

/// Records larger than this are checked (CRC) but not decoded: scalar events are tiny, and this
/// keeps memory bounded whatever images or graphs a file holds.
const MAX_DECODED_RECORD: u64 = 64 << 20;

/// What one event file held.
#[derive(Debug, Clone, Default)]
pub struct EventsFile {
    /// One series per scalar tag, in first-seen order.
    pub series: Vec<Series>,
    /// Records read (events of every kind, including the file-version header).
    pub records: u64,
    /// Set when the file ended in a half-written record (a live run), which was ignored.
    pub tail: Option<String>,
}

/// Read every scalar of an event file.
pub fn read(path: &Path) -> Result<Vec<Series>> {
    Ok(read_events(path)?.series)
}

/// Read every scalar of an event file, with what was skipped.
pub fn read_events(path: &Path) -> Result<EventsFile> {
    let file = crate::limits::open_regular(path)?;
    let file_len = file.metadata().map_err(|e| ReadError::io(path, e))?.len();
    let mut r = BufReader::with_capacity(256 << 10, file);
    let mut dec = Decoder::new(path);
    let scan = scan_records(path, &mut r, file_len, 0, |data| dec.event(data))?;
    Ok(EventsFile {
        series: dec.finish(),
        records: scan.records,
        tail: scan.tail,
    })
}

/// What one pass of [`scan_records`] got through.
struct Scan {
    /// The offset just past the last whole record.
    end: u64,
    records: u64,
    /// Why the pass stopped before the end of the file (a half-written last record).
    tail: Option<String>,
}

/// Walk the TFRecords of `r` (positioned at byte `start` of a file of `file_len` bytes), handing
/// each whole record whose checksums are right to `on_record`, and stopping, without an error,
/// at a record that runs past the end or whose last bytes are not yet right (a live writer).
fn scan_records(
    path: &Path,
    r: &mut impl Read,
    file_len: u64,
    start: u64,
    mut on_record: impl FnMut(&[u8]),
) -> Result<Scan> {
    let mut out = Scan {
        end: start,
        records: 0,
        tail: None,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut off: u64 = start;
    loop {
        let mut hdr = [0u8; 12];
        let got = read_full(r, &mut hdr).map_err(|e| ReadError::io(path, e))?;
        if got == 0 {
            break;
        }
        if got < hdr.len() {
            out.tail = Some(format!("half-written record header at byte {off} ignored"));
            break;
        }
        let (len_bytes, crc_bytes) = hdr.split_at(8);
        let len = u64::from_le_bytes(len_bytes.try_into().unwrap_or([0; 8]));
        let len_crc = u32::from_le_bytes(crc_bytes.try_into().unwrap_or([0; 4]));
        if masked_crc(len_bytes) != len_crc {
            return Err(ReadError::format(
                path,
                format!("byte {off}: record length checksum mismatch (corrupt file, or not a TensorBoard event file)"),
            ));
        }
        let remaining = file_len.saturating_sub(off.saturating_add(12));
        if len.saturating_add(4) > remaining {
            // The record runs past the end of the file: the writer was interrupted mid-record.
            out.tail = Some(format!(
                "half-written last record at byte {off} ({len} bytes announced) ignored"
            ));
            break;
        }
        let is_last = off.saturating_add(12).saturating_add(len).saturating_add(4) == file_len;
        let data_crc = if len <= MAX_DECODED_RECORD {
            buf.clear();
            buf.resize(len as usize, 0);
            if let Err(e) = r.read_exact(&mut buf) {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    out.tail = Some(format!("half-written last record at byte {off} ignored"));
                    break;
                }
                return Err(ReadError::io(path, e));
            }
            masked_crc(&buf)
        } else {
            match skip_with_crc(r, len) {
                Ok(Some(c)) => c,
                Ok(None) => {
                    out.tail = Some(format!("half-written last record at byte {off} ignored"));
                    break;
                }
                Err(e) => return Err(ReadError::io(path, e)),
            }
        };
        let mut crc = [0u8; 4];
        if read_full(r, &mut crc).map_err(|e| ReadError::io(path, e))? < 4 {
            out.tail = Some(format!("half-written last record at byte {off} ignored"));
            break;
        }
        if u32::from_le_bytes(crc) != data_crc {
            if is_last {
                out.tail = Some(format!(
                    "last record at byte {off} has a bad checksum (half written?); ignored"
                ));
                break;
            }
            return Err(ReadError::format(
                path,
                format!("byte {off}: record data checksum mismatch (corrupt file)"),
            ));
        }
        out.records += 1;
        if len <= MAX_DECODED_RECORD {
            on_record(&buf);
        }
        off = off.saturating_add(12).saturating_add(len).saturating_add(4);
        out.end = off;
    }
    Ok(out)
}

/// An event file read as it grows: each [`EventStream::advance`] decodes the whole records
/// written since the last one and leaves a half-written tail for the next.
#[derive(Debug)]
pub struct EventStream {
    dec: Decoder,
    /// By series of the decoder: its points climb strictly by step (checked on the points
    /// each call adds), so [`EventStream::series`] need not walk it whole to sort it.
    ordered: Vec<bool>,
    /// Points decoded and the largest step (step-indexed tags), kept as records arrive.
    points: usize,
    max_step: Option<u64>,
    /// Bytes of the file decoded so far (always the end of a whole record).
    pub offset: u64,
    /// Records decoded so far.
    pub records: u64,
}

impl EventStream {
    pub fn new(path: &Path) -> Self {
        EventStream {
            dec: Decoder::new(path),
            ordered: Vec::new(),
            points: 0,
            max_step: None,
            offset: 0,
            records: 0,
        }
    }

    /// Decode the records added since the last call; returns how many points they held. A
    /// half-written last record is left for the next call; a file now shorter than what was
    /// read (rewritten) is read again from its start.
    pub fn advance(&mut self, path: &Path) -> Result<usize> {
        use std::io::{Seek, SeekFrom};
        let file = crate::limits::open_regular(path)?;
        let file_len = file.metadata().map_err(|e| ReadError::io(path, e))?.len();
        if file_len < self.offset {
            *self = EventStream::new(path);
        }
        if file_len == self.offset {
            return Ok(0);
        }
        let mut r = BufReader::with_capacity(64 << 10, file);
        r.seek(SeekFrom::Start(self.offset))
            .map_err(|e| ReadError::io(path, e))?;
        let lens: Vec<usize> = self.dec.series.iter().map(|s| s.points.len()).collect();
        let dec = &mut self.dec;
        let scan = scan_records(path, &mut r, file_len, self.offset, |d| dec.event(d))?;
        self.offset = scan.end;
        self.records += scan.records;
        // Only the points this call added are looked at.
        let mut added = 0;
        for (i, s) in self.dec.series.iter().enumerate() {
            let from = lens.get(i).copied().unwrap_or(0);
            let new = s.points.get(from..).unwrap_or(&[]);
            added += new.len();
            match self.ordered.get_mut(i) {
                Some(o) => *o = *o && s.ordered_from(from),
                None => self.ordered.push(s.ordered_from(from)),
            }
            if s.unit == super::Unit::Step {
                self.max_step = self.max_step.max(new.iter().map(|p| p.step).max());
            }
        }
        self.points += added;
        Ok(added)
    }

    /// Points decoded so far.
    pub fn points(&self) -> usize {
        self.points
    }

    /// The largest step decoded so far (step-indexed tags only).
    pub fn max_step(&self) -> Option<u64> {
        self.max_step
    }

    /// The series read so far, sorted by step (one point per step).
    pub fn series(&self) -> Vec<Series> {
        // What `Decoder::finish` gives, without cloning the decoder's tag table or walking a
        // series that is already in order.
        self.dec
            .series
            .iter()
            .zip(&self.ordered)
            .filter(|(s, _)| !s.points.is_empty())
            .map(|(s, &ordered)| {
                let mut s = s.clone();
                if !ordered {
                    s.normalize();
                }
                s
            })
            .collect()
    }
}

/// Whether `head` starts with a TFRecord header whose length checksum is right.
pub fn looks_like_tfrecord(head: &[u8]) -> bool {
    match (head.get(..8), head.get(8..12)) {
        (Some(len), Some(crc)) => crc
            .try_into()
            .map(u32::from_le_bytes)
            .is_ok_and(|c| c == masked_crc(len)),
        _ => false,
    }
}

/// TFRecord's masked CRC32C.
pub fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// Fill `buf` as far as the reader allows; returns how many bytes were read (short = EOF).
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(buf.get_mut(n..).unwrap_or(&mut [])) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Stream `len` bytes through the CRC without keeping them; `None` at a premature EOF.
fn skip_with_crc(r: &mut impl Read, len: u64) -> std::io::Result<Option<u32>> {
    let mut chunk = vec![0u8; 1 << 20];
    let mut left = len;
    let mut crc = 0u32;
    while left > 0 {
        let want = left.min(chunk.len() as u64) as usize;
        let part = chunk.get_mut(..want).unwrap_or(&mut []);
        let got = read_full(r, part)?;
        crc = crc32c::crc32c_append(crc, part.get(..got).unwrap_or(&[]));
        if got < want {
            return Ok(None);
        }
        left -= want as u64;
    }
    Ok(Some(crc.rotate_right(15).wrapping_add(0xa282_ead8)))
}

/// What is known about a tag's plugin from the `SummaryMetadata` seen so far (TensorFlow writes
/// the metadata with the first value of a tag only).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Plugin {
    Unknown,
    Scalars,
    Other,
}

#[derive(Debug, Clone, Copy)]
struct TagInfo {
    series: usize,
    plugin: Plugin,
}

/// Turns decoded events into series.
#[derive(Debug, Clone)]
struct Decoder {
    path: std::path::PathBuf,
    tags: HashMap<Vec<u8>, TagInfo>,
    series: Vec<Series>,
}

impl Decoder {
    fn new(path: &Path) -> Self {
        Decoder {
            path: path.to_path_buf(),
            tags: HashMap::new(),
            series: Vec::new(),
        }
    }

    /// Decode one `Event`; malformed protobuf is skipped (its CRC was fine, so it is simply not
    /// an event this reader understands).
    fn event(&mut self, data: &[u8]) {
        let mut wall_time = None;
        let mut step: i64 = 0;
        let mut has_summary = false;
        let mut c = Cursor::new(data);
        while let Some((field, wire)) = c.key() {
            match (field, wire) {
                (1, WIRE_I64) => wall_time = c.fixed64().map(f64::from_bits),
                (2, WIRE_VARINT) => step = c.varint().map(|v| v as i64).unwrap_or(0),
                (5, WIRE_LEN) => {
                    has_summary = true;
                    if c.bytes().is_none() {
                        return;
                    }
                }
                _ => {
                    if !c.skip(wire) {
                        return;
                    }
                }
            }
        }
        if !has_summary || step < 0 {
            return;
        }
        let step = step as u64;
        let mut c = Cursor::new(data);
        while let Some((field, wire)) = c.key() {
            if (field, wire) == (5, WIRE_LEN) {
                match c.bytes() {
                    Some(summary) => self.summary(summary, step, wall_time),
                    None => return,
                }
            } else if !c.skip(wire) {
                return;
            }
        }
    }

    fn summary(&mut self, data: &[u8], step: u64, wall_time: Option<f64>) {
        let mut c = Cursor::new(data);
        while let Some((field, wire)) = c.key() {
            if (field, wire) == (1, WIRE_LEN) {
                match c.bytes() {
                    Some(v) => self.value(v, step, wall_time),
                    None => return,
                }
            } else if !c.skip(wire) {
                return;
            }
        }
    }

    fn value(&mut self, data: &[u8], step: u64, wall_time: Option<f64>) {
        let mut tag: &[u8] = &[];
        let mut simple = None;
        let mut tensor = None;
        let mut plugin = None;
        let mut c = Cursor::new(data);
        while let Some((field, wire)) = c.key() {
            match (field, wire) {
                (1, WIRE_LEN) => tag = c.bytes().unwrap_or(&[]),
                (2, WIRE_I32) => simple = c.fixed32().map(f32::from_bits),
                (8, WIRE_LEN) => tensor = c.bytes(),
                (9, WIRE_LEN) => plugin = c.bytes().map(plugin_name),
                _ => {
                    if !c.skip(wire) {
                        return;
                    }
                }
            }
        }
        if simple.is_none() && tensor.is_none() {
            return;
        }
        // One hash lookup on the hot path (tags keyed by their raw bytes); UTF-8 is decoded,
        // lossily, only when a tag is first seen.
        let mut info = match self.tags.get(tag) {
            Some(info) => *info,
            None => {
                let series = self.series.len();
                self.series
                    .push(Series::new(&String::from_utf8_lossy(tag), &self.path));
                let info = TagInfo {
                    series,
                    plugin: Plugin::Unknown,
                };
                self.tags.insert(tag.to_vec(), info);
                info
            }
        };
        if let Some(p) = plugin {
            info.plugin = match p {
                Some(b"scalars") => Plugin::Scalars,
                Some(_) => Plugin::Other,
                None => info.plugin,
            };
            self.tags.insert(tag.to_vec(), info);
        }
        let value = match (simple, tensor) {
            (Some(v), _) => Some(f64::from(v)),
            (None, Some(t)) if info.plugin != Plugin::Other => tensor_scalar(t),
            _ => None,
        };
        if let (Some(value), Some(s)) = (value, self.series.get_mut(info.series)) {
            s.points.push(Point {
                step,
                value,
                wall_time,
            });
        }
    }

    fn finish(self) -> Vec<Series> {
        self.series
            .into_iter()
            .filter(|s| !s.points.is_empty())
            .map(|mut s| {
                s.normalize();
                s
            })
            .collect()
    }
}

/// `SummaryMetadata { PluginData plugin_data = 1 { string plugin_name = 1 } }`.
fn plugin_name(meta: &[u8]) -> Option<&[u8]> {
    let pd = find_len_field(meta, 1)?;
    find_len_field(pd, 1)
}

fn find_len_field(data: &[u8], want: u32) -> Option<&[u8]> {
    let mut c = Cursor::new(data);
    while let Some((field, wire)) = c.key() {
        if (field, wire) == (want, WIRE_LEN) {
            return c.bytes();
        }
        if !c.skip(wire) {
            return None;
        }
    }
    None
}

// TensorFlow DataType values.
const DT_FLOAT: u64 = 1;
const DT_DOUBLE: u64 = 2;
const DT_INT32: u64 = 3;
const DT_UINT8: u64 = 4;
const DT_INT16: u64 = 5;
const DT_INT8: u64 = 6;
const DT_INT64: u64 = 9;
const DT_BOOL: u64 = 10;
const DT_BFLOAT16: u64 = 14;
const DT_UINT16: u64 = 17;
const DT_HALF: u64 = 19;
const DT_UINT32: u64 = 22;
const DT_UINT64: u64 = 23;

/// The value of a one-element numeric `TensorProto`, else `None`.
fn tensor_scalar(t: &[u8]) -> Option<f64> {
    let mut dtype = 0;
    let mut numel: Option<u64> = Some(1);
    let mut content: Option<&[u8]> = None;
    // First element of each repeated value field, as raw bits.
    let (mut fval, mut dval, mut ival, mut i64val, mut hval, mut bval, mut u32val, mut u64val) =
        (None, None, None, None, None, None, None, None);
    let mut c = Cursor::new(t);
    while let Some((field, wire)) = c.key() {
        match (field, wire) {
            (1, WIRE_VARINT) => dtype = c.varint()?,
            (2, WIRE_LEN) => numel = shape_numel(c.bytes()?),
            (4, WIRE_LEN) => content = c.bytes(),
            (5, WIRE_I32) => {
                set_first(&mut fval, c.fixed32().map(|b| f64::from(f32::from_bits(b))))
            }
            (5, WIRE_LEN) => set_first(
                &mut fval,
                first_fixed32(c.bytes()?).map(|b| f64::from(f32::from_bits(b))),
            ),
            (6, WIRE_I64) => set_first(&mut dval, c.fixed64().map(f64::from_bits)),
            (6, WIRE_LEN) => set_first(&mut dval, first_fixed64(c.bytes()?).map(f64::from_bits)),
            (7, _) => set_first(
                &mut ival,
                repeated_varint(&mut c, wire)?.map(|v| f64::from(v as i32)),
            ),
            (10, _) => set_first(
                &mut i64val,
                repeated_varint(&mut c, wire)?.map(|v| v as i64 as f64),
            ),
            (11, _) => set_first(
                &mut bval,
                repeated_varint(&mut c, wire)?.map(|v| if v != 0 { 1.0 } else { 0.0 }),
            ),
            (13, _) => set_first(&mut hval, repeated_varint(&mut c, wire)?.map(|v| v as u16)),
            (16, _) => set_first(
                &mut u32val,
                repeated_varint(&mut c, wire)?.map(|v| f64::from(v as u32)),
            ),
            (17, _) => set_first(
                &mut u64val,
                repeated_varint(&mut c, wire)?.map(|v| v as f64),
            ),
            _ => {
                if !c.skip(wire) {
                    return None;
                }
            }
        }
    }
    if numel != Some(1) {
        return None;
    }
    if let Some(b) = content.filter(|b| !b.is_empty()) {
        let fixed = |n: usize| b.get(..n);
        return match dtype {
            DT_FLOAT => fixed(4)
                .and_then(|x| x.try_into().ok())
                .map(|x| f64::from(f32::from_le_bytes(x))),
            DT_DOUBLE => fixed(8)
                .and_then(|x| x.try_into().ok())
                .map(f64::from_le_bytes),
            DT_HALF => fixed(2)
                .and_then(|x| x.try_into().ok())
                .map(|x| half::f16::from_le_bytes(x).to_f64()),
            DT_BFLOAT16 => fixed(2)
                .and_then(|x| x.try_into().ok())
                .map(|x| half::bf16::from_le_bytes(x).to_f64()),
            DT_INT32 => fixed(4)
                .and_then(|x| x.try_into().ok())
                .map(|x| f64::from(i32::from_le_bytes(x))),
            DT_INT64 => fixed(8)
                .and_then(|x| x.try_into().ok())
                .map(|x| i64::from_le_bytes(x) as f64),
            DT_INT16 => fixed(2)
                .and_then(|x| x.try_into().ok())
                .map(|x| f64::from(i16::from_le_bytes(x))),
            DT_UINT16 => fixed(2)
                .and_then(|x| x.try_into().ok())
                .map(|x| f64::from(u16::from_le_bytes(x))),
            DT_INT8 => b.first().map(|&x| f64::from(x as i8)),
            DT_UINT8 | DT_BOOL => b.first().map(|&x| f64::from(x)),
            DT_UINT32 => fixed(4)
                .and_then(|x| x.try_into().ok())
                .map(|x| f64::from(u32::from_le_bytes(x))),
            DT_UINT64 => fixed(8)
                .and_then(|x| x.try_into().ok())
                .map(|x| u64::from_le_bytes(x) as f64),
            _ => None,
        };
    }
    let half_val = |h: u16| match dtype {
        DT_BFLOAT16 => half::bf16::from_bits(h).to_f64(),
        _ => half::f16::from_bits(h).to_f64(),
    };
    match dtype {
        DT_FLOAT => fval,
        DT_DOUBLE => dval,
        DT_INT32 | DT_INT16 | DT_INT8 | DT_UINT8 | DT_UINT16 => ival,
        DT_INT64 => i64val,
        DT_HALF | DT_BFLOAT16 => hval.map(half_val),
        DT_BOOL => bval,
        DT_UINT32 => u32val,
        DT_UINT64 => u64val,
        _ => None,
    }
    .or(fval)
    .or(dval)
}

fn set_first<T>(slot: &mut Option<T>, v: Option<T>) {
    if slot.is_none() {
        *slot = v;
    }
}

/// First element of a repeated varint field, packed (`wire` 2) or not (`wire` 0). The outer
/// `None` means malformed; the inner `None` an empty packed run.
fn repeated_varint(c: &mut Cursor, wire: u8) -> Option<Option<u64>> {
    match wire {
        WIRE_VARINT => c.varint().map(Some),
        WIRE_LEN => Some(Cursor::new(c.bytes()?).varint()),
        _ => c.skip(wire).then_some(None),
    }
}

fn first_fixed32(b: &[u8]) -> Option<u32> {
    b.get(..4)
        .and_then(|x| x.try_into().ok())
        .map(u32::from_le_bytes)
}

fn first_fixed64(b: &[u8]) -> Option<u64> {
    b.get(..8)
        .and_then(|x| x.try_into().ok())
        .map(u64::from_le_bytes)
}

/// Element count of a `TensorShapeProto { repeated Dim dim = 2 { int64 size = 1 }; bool
/// unknown_rank = 3 }`; `None` when unknown.
fn shape_numel(shape: &[u8]) -> Option<u64> {
    let mut n: u64 = 1;
    let mut c = Cursor::new(shape);
    while let Some((field, wire)) = c.key() {
        match (field, wire) {
            (2, WIRE_LEN) => {
                let mut d = Cursor::new(c.bytes()?);
                let mut size: i64 = 0;
                while let Some((f, w)) = d.key() {
                    if (f, w) == (1, WIRE_VARINT) {
                        size = d.varint()? as i64;
                    } else if !d.skip(w) {
                        return None;
                    }
                }
                if size < 0 {
                    return None;
                }
                n = n.checked_mul(size as u64)?;
            }
            (3, WIRE_VARINT) => {
                if c.varint()? != 0 {
                    return None;
                }
            }
            _ => {
                if !c.skip(wire) {
                    return None;
                }
            }
        }
    }
    Some(n)
}

const WIRE_VARINT: u8 = 0;
const WIRE_I64: u8 = 1;
const WIRE_LEN: u8 = 2;
const WIRE_I32: u8 = 5;

/// A bounds-checked protobuf wire-format reader over one message.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.data.get(self.pos)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// Next field key: (field number, wire type); `None` at the end or on garbage.
    fn key(&mut self) -> Option<(u32, u8)> {
        if self.pos >= self.data.len() {
            return None;
        }
        let k = self.varint()?;
        Some(((k >> 3).min(u64::from(u32::MAX)) as u32, (k & 7) as u8))
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

    fn fixed32(&mut self) -> Option<u32> {
        self.take(4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    }

    fn fixed64(&mut self) -> Option<u64> {
        self.take(8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    }

    /// Skip a field's payload; `false` when malformed (or a group, which events never use).
    fn skip(&mut self, wire: u8) -> bool {
        match wire {
            WIRE_VARINT => self.varint().is_some(),
            WIRE_I64 => self.take(8).is_some(),
            WIRE_LEN => self.bytes().is_some(),
            WIRE_I32 => self.take(4).is_some(),
            _ => false,
        }
    }
}

/// A minimal event-file writer, for tests and benchmarks (the product never writes events).
pub mod encode {
    use super::masked_crc;

    /// How a scalar is encoded.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Style {
        /// `Summary.Value.simple_value` (PyTorch `SummaryWriter` default).
        SimpleValue,
        /// A DT_FLOAT tensor in `float_val` with plugin `scalars` (TF2 / `new_style=True`).
        TensorFloatVal,
        /// A DT_DOUBLE tensor in `tensor_content` with plugin `scalars`.
        TensorContentF64,
    }

    pub fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
        varint(out, (u64::from(field) << 3) | u64::from(wire));
    }

    fn len_field(out: &mut Vec<u8>, field: u32, data: &[u8]) {
        key(out, field, 2);
        varint(out, data.len() as u64);
        out.extend_from_slice(data);
    }

    /// Frame `data` as one TFRecord.
    pub fn record(out: &mut Vec<u8>, data: &[u8]) {
        let len = (data.len() as u64).to_le_bytes();
        out.extend_from_slice(&len);
        out.extend_from_slice(&masked_crc(&len).to_le_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(&masked_crc(data).to_le_bytes());
    }

    /// The `file_version` event every writer starts with.
    pub fn file_version_event(wall_time: f64) -> Vec<u8> {
        let mut e = Vec::new();
        key(&mut e, 1, 1);
        e.extend_from_slice(&wall_time.to_le_bytes());
        len_field(&mut e, 3, b"brain.Event:2");
        e
    }

    /// One event with one scalar value.
    pub fn scalar_event(
        step: i64,
        wall_time: f64,
        tag: &[u8],
        value: f64,
        style: Style,
    ) -> Vec<u8> {
        let mut v = Vec::new();
        len_field(&mut v, 1, tag);
        match style {
            Style::SimpleValue => {
                key(&mut v, 2, 5);
                v.extend_from_slice(&(value as f32).to_le_bytes());
            }
            Style::TensorFloatVal | Style::TensorContentF64 => {
                let mut t = Vec::new();
                key(&mut t, 1, 0);
                varint(&mut t, if style == Style::TensorFloatVal { 1 } else { 2 });
                len_field(&mut t, 2, &[]);
                if style == Style::TensorFloatVal {
                    len_field(&mut t, 5, &(value as f32).to_le_bytes());
                } else {
                    len_field(&mut t, 4, &value.to_le_bytes());
                }
                len_field(&mut v, 8, &t);
                let mut name = Vec::new();
                len_field(&mut name, 1, b"scalars");
                let mut meta = Vec::new();
                len_field(&mut meta, 1, &name);
                len_field(&mut v, 9, &meta);
            }
        }
        let mut summary = Vec::new();
        len_field(&mut summary, 1, &v);
        let mut e = Vec::new();
        key(&mut e, 1, 1);
        e.extend_from_slice(&wall_time.to_le_bytes());
        key(&mut e, 2, 0);
        varint(&mut e, step as u64);
        len_field(&mut e, 5, &summary);
        e
    }
}

#[cfg(test)]
#[path = "tfevents_tests.rs"]
mod tests;
