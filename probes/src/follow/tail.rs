//! One followed metric file: a byte offset, the whole records parsed since it, and a
//! half-written tail left for the next poll. TensorBoard files go through
//! [`crate::metrics::tfevents::EventStream`]; CSV, JSON lines and captured stdout are read a
//! whole line at a time through their readers' `parse` entry points; a trainer state (rewritten
//! whole at each save) is re-read when it changes and kept while a rewrite is half done.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::error::{ReadError, Result};
use crate::metrics::tfevents::EventStream;
use crate::metrics::trainer_state::TrainerState;
use crate::metrics::{csvlog, jsonl, stdout_log, Point, Series};
use crate::run::{ArtifactKind, FileSeries};

/// At most this many new bytes are parsed per file per poll (the rest on the next polls).
pub const MAX_CHUNK: u64 = 16 << 20;
/// Bytes before the offset remembered to notice a file rewritten in place.
const FINGERPRINT: u64 = 32;

/// A line-based log read a whole line at a time.
#[derive(Debug, Default)]
struct LineTail {
    /// Bytes consumed: always just after a line end.
    offset: u64,
    /// The last bytes before `offset`, to notice a file rewritten in place and grown past it.
    before: Vec<u8>,
    /// The file's identity (device, inode) when first read.
    id: Option<(u64, u64)>,
}

/// What a [`LineTail`] found this poll.
enum Lines {
    /// No new whole line.
    Nothing,
    /// New whole lines; `reset` when the file was replaced, truncated or rewritten and these
    /// lines start again at its beginning.
    New { bytes: Vec<u8>, reset: bool },
}

impl LineTail {
    /// The whole lines written since the last call (ending at the last byte in `ends`).
    fn read(&mut self, path: &Path, ends: &[u8]) -> Result<Lines> {
        let mut f = crate::limits::open_regular(path)?;
        let meta = f.metadata().map_err(|e| ReadError::io(path, e))?;
        let len = meta.len();
        let id = file_id(&meta);
        let mut reset = false;
        if self.id.is_some_and(|old| Some(old) != id) || len < self.offset || !self.same(&mut f)? {
            *self = LineTail::default();
            reset = true;
        }
        self.id = id;
        if len == self.offset {
            return Ok(if reset {
                Lines::New {
                    bytes: Vec::new(),
                    reset,
                }
            } else {
                Lines::Nothing
            });
        }
        f.seek(SeekFrom::Start(self.offset))
            .map_err(|e| ReadError::io(path, e))?;
        let want = (len - self.offset).min(MAX_CHUNK);
        let mut buf = Vec::with_capacity(want as usize);
        f.take(want)
            .read_to_end(&mut buf)
            .map_err(|e| ReadError::io(path, e))?;
        let Some(end) = buf.iter().rposition(|b| ends.contains(b)) else {
            if buf.len() as u64 == MAX_CHUNK {
                // One line longer than a chunk: not a log line; skipped whole.
                self.advance(&buf);
            }
            return Ok(if reset {
                Lines::New {
                    bytes: Vec::new(),
                    reset,
                }
            } else {
                Lines::Nothing
            });
        };
        buf.truncate(end + 1);
        self.advance(&buf);
        Ok(Lines::New { bytes: buf, reset })
    }

    fn advance(&mut self, consumed: &[u8]) {
        self.offset += consumed.len() as u64;
        let keep = consumed.len().min(FINGERPRINT as usize);
        let mut before = std::mem::take(&mut self.before);
        before.extend_from_slice(&consumed[consumed.len() - keep..]);
        let cut = before.len().saturating_sub(FINGERPRINT as usize);
        self.before = before.split_off(cut);
    }

    /// Whether the bytes before the offset are still the ones read.
    fn same(&self, f: &mut std::fs::File) -> Result<bool> {
        if self.before.is_empty() {
            return Ok(true);
        }
        let at = self.offset - self.before.len() as u64;
        let mut got = vec![0u8; self.before.len()];
        let ok = f
            .seek(SeekFrom::Start(at))
            .and_then(|_| f.read_exact(&mut got))
            .is_ok();
        Ok(ok && got == self.before)
    }
}

fn file_id(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Series accumulated from chunks, by tag, points in write order.
#[derive(Debug, Default)]
struct Accum {
    index: HashMap<String, usize>,
    series: Vec<Series>,
    /// By series: its points climb strictly by step (checked on the points each chunk adds),
    /// so handing it out needs no [`Series::normalize`] pass over the whole series.
    ordered: Vec<bool>,
    /// Points held, and the largest step among step-indexed series (kept as chunks arrive:
    /// a poll never walks every point).
    points: usize,
    max_step: Option<u64>,
}

impl Accum {
    /// Add a chunk's series; returns how many points they held.
    fn add(&mut self, chunk: Vec<Series>) -> usize {
        let mut n = 0;
        for s in chunk {
            n += s.points.len();
            if s.unit == crate::metrics::Unit::Step {
                let top = s.points.iter().map(|p| p.step).max();
                self.max_step = self.max_step.max(top);
            }
            match self.index.get(&s.tag) {
                Some(&i) => {
                    if let (Some(m), Some(o)) = (self.series.get_mut(i), self.ordered.get_mut(i)) {
                        let from = m.points.len();
                        m.points.extend(s.points);
                        m.name = s.name;
                        m.unit = s.unit;
                        *o = *o && m.ordered_from(from);
                    }
                }
                None => {
                    self.index.insert(s.tag.clone(), self.series.len());
                    self.ordered.push(s.ordered_from(0));
                    self.series.push(s);
                }
            }
        }
        self.points += n;
        n
    }

    /// The series sorted by step, one point per step.
    fn series(&self) -> Vec<Series> {
        self.series
            .iter()
            .zip(&self.ordered)
            .map(|(s, &ordered)| {
                let mut s = s.clone();
                s.restart = None;
                if !ordered {
                    s.normalize();
                }
                s
            })
            .collect()
    }

    fn points(&self) -> usize {
        self.points
    }
}

/// How a file is followed.
#[derive(Debug)]
enum How {
    Events(EventStream),
    /// `training_only`: a CSV not named as a metric log counts when its content says so.
    Csv {
        tail: LineTail,
        header: Option<Vec<u8>>,
        rows: u64,
        acc: Accum,
        training_only: bool,
        training: bool,
    },
    Jsonl {
        tail: LineTail,
        objects: u64,
        acc: Accum,
    },
    Stdout {
        tail: LineTail,
        acc: Accum,
        per_epoch: Option<u64>,
    },
    State {
        sig: Option<Sig>,
        last: Option<Box<TrainerState>>,
        error: Option<String>,
        failed_sig: Option<Sig>,
    },
}

/// What a file looked like at a stat: length, modification time, identity.
pub type Sig = (u64, Option<std::time::SystemTime>, Option<(u64, u64)>);

pub fn sig_of(meta: &std::fs::Metadata) -> Sig {
    (meta.len(), meta.modified().ok(), file_id(meta))
}

/// One followed metric file.
#[derive(Debug)]
pub struct Tail {
    pub path: PathBuf,
    pub kind: ArtifactKind,
    how: How,
    /// Why the file cannot be followed (a corrupt record mid-file): kept until it changes.
    pub error: Option<String>,
}

/// What one poll of a file brought.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Update {
    /// Points added (or, after a reset, points now held).
    pub points: usize,
    /// The file was replaced, truncated or rewritten and was read again from its start.
    pub reset: bool,
}

impl Tail {
    /// Follow `path` as a `kind` metric file; `None` for kinds that are read whole (W&B
    /// records, MLflow metrics, `.json` files).
    pub fn new(path: &Path, kind: ArtifactKind) -> Option<Tail> {
        use ArtifactKind as K;
        let how = match kind {
            K::TfEvents => How::Events(EventStream::new(path)),
            K::MetricsCsv | K::Csv => How::Csv {
                tail: LineTail::default(),
                header: None,
                rows: 0,
                acc: Accum::default(),
                training_only: kind == K::Csv,
                training: false,
            },
            K::Jsonl
                if !path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("json")) =>
            {
                How::Jsonl {
                    tail: LineTail::default(),
                    objects: 0,
                    acc: Accum::default(),
                }
            }
            K::StdoutLog => How::Stdout {
                tail: LineTail::default(),
                acc: Accum::default(),
                per_epoch: None,
            },
            K::TrainerState => How::State {
                sig: None,
                last: None,
                error: None,
                failed_sig: None,
            },
            _ => return None,
        };
        Some(Tail {
            path: path.to_path_buf(),
            kind,
            how,
            error: None,
        })
    }

    /// Read what was added since the last poll.
    pub fn poll(&mut self) -> Update {
        match self.step() {
            Ok(u) => {
                if u.points > 0 || u.reset {
                    self.error = None;
                }
                u
            }
            Err(e) => {
                self.error = Some(e.to_string());
                Update::default()
            }
        }
    }

    fn step(&mut self) -> Result<Update> {
        let path = self.path.as_path();
        match &mut self.how {
            How::Events(ev) => {
                let before = ev.offset;
                let points = ev.advance(path)?;
                Ok(Update {
                    points,
                    reset: ev.offset < before,
                })
            }
            How::Csv {
                tail,
                header,
                rows,
                acc,
                training_only,
                training,
            } => {
                let (bytes, reset) = match tail.read(path, b"\n")? {
                    Lines::Nothing => return Ok(Update::default()),
                    Lines::New { bytes, reset } => (bytes, reset),
                };
                if reset {
                    *header = None;
                    *rows = 0;
                    *acc = Accum::default();
                    *training = false;
                }
                let mut body: &[u8] = &bytes;
                if header.is_none() {
                    // The header is the first line that is neither blank nor a `#` comment.
                    let mut at = 0;
                    let mut found = None;
                    for line in bytes.split_inclusive(|b| *b == b'\n') {
                        let t = line.trim_ascii();
                        at += line.len();
                        if !t.is_empty() && !t.starts_with(b"#") {
                            found = Some(line.to_vec());
                            break;
                        }
                    }
                    match found {
                        Some(h) => {
                            *header = Some(h);
                            body = bytes.get(at..).unwrap_or(&[]);
                        }
                        None => return Ok(Update { points: 0, reset }),
                    }
                }
                let head = header.as_deref().unwrap_or(&[]);
                let mut text = Vec::with_capacity(head.len() + body.len());
                text.extend_from_slice(head);
                text.extend_from_slice(body);
                let log = csvlog::parse_log(&text, path, *rows)?;
                *rows += body
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.trim_ascii().is_empty() && !l.starts_with(b"#"))
                    .count() as u64;
                *training = !*training_only || *training || log.is_training_log();
                let points = acc.add(log.series);
                Ok(Update { points, reset })
            }
            How::Jsonl { tail, objects, acc } => {
                let (bytes, reset) = match tail.read(path, b"\n")? {
                    Lines::Nothing => return Ok(Update::default()),
                    Lines::New { bytes, reset } => (bytes, reset),
                };
                if reset {
                    *objects = 0;
                    *acc = Accum::default();
                }
                let series = jsonl::parse_lines(&bytes, path, *objects)?;
                *objects += bytes
                    .split(|b| *b == b'\n')
                    .filter(|l| l.trim_ascii().starts_with(b"{"))
                    .count() as u64;
                let points = acc.add(series);
                Ok(Update { points, reset })
            }
            How::Stdout {
                tail,
                acc,
                per_epoch,
            } => {
                let (bytes, reset) = match tail.read(path, b"\n\r")? {
                    Lines::Nothing => return Ok(Update::default()),
                    Lines::New { bytes, reset } => (bytes, reset),
                };
                if reset {
                    *acc = Accum::default();
                    *per_epoch = None;
                }
                let read = stdout_log::parse(&String::from_utf8_lossy(&bytes), path);
                if per_epoch.is_none() {
                    *per_epoch = read.steps_per_epoch;
                }
                let points = acc.add(read.series);
                Ok(Update { points, reset })
            }
            How::State {
                sig,
                last,
                error,
                failed_sig,
            } => {
                let meta = std::fs::metadata(path).map_err(|e| ReadError::io(path, e))?;
                let now = sig_of(&meta);
                if *sig == Some(now) {
                    // Unchanged since a rewrite that did not parse: now it is settled, and
                    // really malformed.
                    if failed_sig.is_some_and(|f| f == now) && error.is_none() {
                        *error = Some(format!(
                            "{}: does not parse (kept the last good read)",
                            path.display()
                        ));
                    }
                    return Ok(Update::default());
                }
                *sig = Some(now);
                match TrainerState::read(path) {
                    Ok(st) => {
                        let points = st.series.iter().map(|s| s.points.len()).sum();
                        *last = Some(Box::new(st));
                        *error = None;
                        *failed_sig = None;
                        Ok(Update {
                            points,
                            reset: true,
                        })
                    }
                    Err(_) => {
                        // Half rewritten (the trainer writes the whole file at each save):
                        // keep the last good read and look again next poll.
                        *failed_sig = Some(now);
                        Ok(Update::default())
                    }
                }
            }
        }
    }

    /// The series read so far, as the run loader takes them (`Err`: why the file cannot be
    /// read); `None` when nothing was read yet.
    pub fn series(&self) -> Option<std::result::Result<FileSeries, String>> {
        if let Some(e) = &self.error {
            if self.points() == 0 {
                return Some(Err(e.clone()));
            }
        }
        let fs = |series, steps_per_epoch| {
            Some(Ok(FileSeries {
                series,
                steps_per_epoch,
            }))
        };
        match &self.how {
            How::Events(ev) => fs(ev.series(), None),
            How::Csv {
                acc,
                training_only,
                training,
                ..
            } => {
                if *training_only && !*training {
                    fs(Vec::new(), None)
                } else {
                    fs(acc.series(), None)
                }
            }
            How::Jsonl { acc, .. } => fs(acc.series(), None),
            How::Stdout { acc, per_epoch, .. } => fs(acc.series(), *per_epoch),
            How::State { last, error, .. } => match (last, error) {
                (Some(st), _) => fs(st.series.clone(), None),
                (None, Some(e)) => Some(Err(e.clone())),
                (None, None) => None,
            },
        }
    }

    /// The trainer state last read whole (trainer-state files only).
    pub fn trainer_state(&self) -> Option<&TrainerState> {
        match &self.how {
            How::State { last, .. } => last.as_deref(),
            _ => None,
        }
    }

    /// Points held (for the trainer state: those of its last good read).
    pub fn points(&self) -> usize {
        match &self.how {
            How::Events(ev) => ev.points(),
            How::Csv { acc, .. } | How::Jsonl { acc, .. } | How::Stdout { acc, .. } => acc.points(),
            How::State { last, .. } => last
                .as_ref()
                .map(|st| st.series.iter().map(|s| s.points.len()).sum())
                .unwrap_or(0),
        }
    }

    /// The largest step among the points held.
    pub fn last_step(&self) -> Option<u64> {
        match &self.how {
            How::Events(ev) => ev.max_step(),
            How::Csv { acc, .. } | How::Jsonl { acc, .. } | How::Stdout { acc, .. } => acc.max_step,
            How::State { last, .. } => last.as_ref().and_then(|st| {
                st.series
                    .iter()
                    .filter(|s| s.unit == crate::metrics::Unit::Step)
                    .filter_map(|s| s.points.iter().map(|p: &Point| p.step).max())
                    .max()
            }),
        }
    }

    /// Bytes consumed so far (line logs and event files), for tests and diagnostics.
    pub fn offset(&self) -> u64 {
        match &self.how {
            How::Events(ev) => ev.offset,
            How::Csv { tail, .. } | How::Jsonl { tail, .. } | How::Stdout { tail, .. } => {
                tail.offset
            }
            How::State { sig, .. } => sig.map(|s| s.0).unwrap_or(0),
        }
    }
}
