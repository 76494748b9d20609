//! What a streamed metric reader keeps of a log of any size: lines read one at a time under a
//! length cap ([`Lines`]), and series kept under a point and key budget ([`Keeper`]): at most
//! [`MAX_SERIES_POINTS`] points a series and [`MAX_TOTAL_POINTS`] a file (past them a series
//! keeps every other point and doubles its stride, so what is kept still spans the whole run;
//! the last point written and the first non-finite one are always kept), at most [`MAX_KEYS`]
//! distinct keys of at most [`MAX_KEY_BYTES`] bytes. The budgets are in the README ("Budgets").

use std::collections::HashMap;
use std::io::{self, BufRead};

use super::Point;

/// Points one series keeps before it is thinned (every other point dropped).
pub const MAX_SERIES_POINTS: usize = 1 << 19;
/// Points all the series of one file keep together before the longest is thinned.
pub const MAX_TOTAL_POINTS: usize = 1 << 21;
/// Distinct keys (series) one file keeps; later new keys are ignored.
pub const MAX_KEYS: usize = 10_000;
/// Longest key kept; a longer one is not a metric name.
pub const MAX_KEY_BYTES: usize = 256;

/// One series being read: its kept points in write order and how thinly they are kept.
#[derive(Debug)]
struct Thinned {
    points: Vec<Point>,
    /// Every `stride`-th point written is kept.
    stride: u64,
    /// Points written so far.
    seen: u64,
    /// The last point written, when it was not kept.
    tail: Option<Point>,
    /// Whether a non-finite point was written (the first one is always kept).
    had_bad: bool,
}

impl Thinned {
    fn new() -> Self {
        Thinned {
            points: Vec::new(),
            stride: 1,
            seen: 0,
            tail: None,
            had_bad: false,
        }
    }

    /// Adds a point; whether it was kept.
    fn push(&mut self, p: Point) -> bool {
        let first_bad = !p.value.is_finite() && !self.had_bad;
        self.had_bad |= first_bad;
        let keep = first_bad || self.seen % self.stride == 0;
        self.seen += 1;
        if keep {
            self.points.push(p);
            self.tail = None;
        } else {
            self.tail = Some(p);
        }
        keep
    }

    /// Drops every other kept point (the first non-finite one stays); how many were dropped.
    fn halve(&mut self) -> usize {
        let before = self.points.len();
        let mut i = 0usize;
        let mut bad_kept = false;
        self.points.retain(|p| {
            let first_bad = !p.value.is_finite() && !bad_kept;
            bad_kept |= first_bad;
            let keep = i % 2 == 0 || first_bad;
            i += 1;
            keep
        });
        self.stride = self.stride.saturating_mul(2);
        // Capacity stays within twice what is kept, so thinning frees memory.
        self.points.shrink_to(self.points.len() * 2);
        before - self.points.len()
    }

    fn finish(mut self) -> Vec<Point> {
        self.points.extend(self.tail);
        self.points
    }
}

/// Series of one file by key, in first-seen order, under the point and key budgets.
#[derive(Debug, Default)]
pub struct Keeper {
    keys: Vec<String>,
    index: HashMap<String, usize>,
    series: Vec<Thinned>,
    /// The series after the last one pushed to: logs repeat their keys in one order, so this
    /// is usually the next key and saves a hash.
    hint: usize,
    total: usize,
    /// Keys ignored: past [`MAX_KEYS`] or longer than [`MAX_KEY_BYTES`].
    pub dropped_keys: usize,
    /// Whether any series was thinned.
    pub thinned: bool,
}

impl Keeper {
    pub fn new() -> Self {
        Keeper::default()
    }

    /// Adds a point to series `key` (a new key past the budget is ignored).
    pub fn push(&mut self, key: &str, p: Point) {
        let hinted = self.keys.get(self.hint).is_some_and(|k| k == key);
        let found = if hinted {
            Some(self.hint)
        } else {
            self.index.get(key).copied()
        };
        let i = match found {
            Some(i) => i,
            None => {
                if self.keys.len() >= MAX_KEYS || key.len() > MAX_KEY_BYTES {
                    self.dropped_keys += 1;
                    return;
                }
                self.keys.push(key.to_string());
                self.index.insert(key.to_string(), self.series.len());
                self.series.push(Thinned::new());
                self.series.len() - 1
            }
        };
        self.hint = if i + 1 < self.keys.len() { i + 1 } else { 0 };
        let Some(s) = self.series.get_mut(i) else {
            return;
        };
        if !s.push(p) {
            return;
        }
        self.total += 1;
        if s.points.len() >= MAX_SERIES_POINTS {
            self.total -= s.halve();
            self.thinned = true;
        }
        while self.total > MAX_TOTAL_POINTS {
            // The longest series gives up half its points; a series of one point cannot.
            let Some(longest) = self
                .series
                .iter_mut()
                .max_by_key(|s| s.points.len())
                .filter(|s| s.points.len() > 1)
            else {
                break;
            };
            self.total -= longest.halve();
            self.thinned = true;
        }
    }

    /// The series in first-seen order: key and points in write order.
    pub fn finish(self) -> Vec<(String, Vec<Point>)> {
        self.keys
            .into_iter()
            .zip(self.series)
            .map(|(k, s)| (k, s.finish()))
            .collect()
    }
}

/// Lines of a text stream, split at `\n` or `\r` (progress bars redraw with `\r`; see
/// [`Lines::newline_only`]), each at
/// most `max` bytes: a longer line is skipped whole (counted in [`Lines::long`]), never
/// buffered. As `str::split`, `n` terminators give `n + 1` lines (the last may be empty).
pub struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    max: usize,
    /// Whether `\r` ends a line too.
    cr: bool,
    /// Whether a long line is an error instead of skipped.
    strict: bool,
    done: bool,
    /// Lines skipped for being longer than the cap.
    pub long: usize,
    /// Bytes read so far.
    pub bytes: u64,
    /// NUL bytes read so far (a binary file is mostly NULs or full of them).
    pub nuls: u64,
}

impl<R: BufRead> Lines<R> {
    pub fn new(r: R, max: usize) -> Self {
        Lines {
            r,
            buf: Vec::new(),
            max,
            cr: true,
            strict: false,
            done: false,
            long: 0,
            bytes: 0,
            nuls: 0,
        }
    }

    /// Lines end at `\n` only (`\r\n` leaves a `\r` at the line's end).
    pub fn newline_only(mut self) -> Self {
        self.cr = false;
        self
    }

    /// A line longer than the cap is an error (`InvalidData`), not skipped.
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    /// The next line without its terminator; `None` past the end.
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        if self.done {
            return Ok(None);
        }
        self.buf.clear();
        let mut skipping = false;
        loop {
            let avail = match self.r.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                self.done = true;
                if skipping {
                    self.long += 1;
                    self.buf.clear();
                }
                return Ok(Some(&self.buf));
            }
            let cr = self.cr;
            let end = avail.iter().position(|&b| b == b'\n' || (cr && b == b'\r'));
            let part = avail.get(..end.unwrap_or(avail.len())).unwrap_or(&[]);
            self.nuls += part.iter().filter(|&&b| b == 0).count() as u64;
            if !skipping && self.buf.len() + part.len() > self.max {
                if self.strict {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "a line is longer than the {:.1} MiB line cap; not a log this tool reads",
                            self.max as f64 / f64::from(1u32 << 20)
                        ),
                    ));
                }
                skipping = true;
                self.buf.clear();
            }
            if !skipping {
                self.buf.extend_from_slice(part);
            }
            let used = end.map_or(avail.len(), |e| e + 1);
            self.r.consume(used);
            self.bytes += used as u64;
            if end.is_some() {
                if skipping {
                    self.long += 1;
                    self.buf.clear();
                }
                return Ok(Some(&self.buf));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(step: u64, value: f64) -> Point {
        Point {
            step,
            value,
            wall_time: None,
        }
    }

    #[test]
    fn a_long_series_is_thinned_but_spans_the_run_and_keeps_its_end_and_first_nan() {
        let mut k = Keeper::new();
        let n = (MAX_SERIES_POINTS * 5) as u64 + 3;
        for s in 0..n {
            let v = if s == 777_777 { f64::NAN } else { 1.0 };
            k.push("loss", p(s, v));
        }
        assert!(k.thinned);
        let (key, pts) = k.finish().pop().unwrap();
        assert_eq!(key, "loss");
        assert!(pts.len() <= MAX_SERIES_POINTS + 2, "{}", pts.len());
        assert!(pts.len() >= MAX_SERIES_POINTS / 4, "{}", pts.len());
        assert_eq!(pts.first().unwrap().step, 0);
        assert_eq!(pts.last().unwrap().step, n - 1);
        assert!(pts.iter().any(|p| p.step == 777_777 && p.value.is_nan()));
        assert!(pts.windows(2).all(|w| w[0].step < w[1].step));
    }

    #[test]
    fn many_series_share_the_total_and_keys_are_capped() {
        let mut k = Keeper::new();
        for s in 0..(MAX_TOTAL_POINTS as u64 / 4) {
            for key in ["a", "b", "c", "d", "e", "f"] {
                k.push(key, p(s, 0.5));
            }
        }
        let total: usize = k.finish().iter().map(|(_, v)| v.len()).sum();
        assert!(total <= MAX_TOTAL_POINTS + 6, "{total}");
        let mut k = Keeper::new();
        for i in 0..MAX_KEYS + 5 {
            k.push(&format!("k{i}"), p(1, 1.0));
        }
        k.push(&"x".repeat(MAX_KEY_BYTES + 1), p(1, 1.0));
        assert_eq!(k.dropped_keys, 6);
        assert_eq!(k.finish().len(), MAX_KEYS);
    }

    #[test]
    fn lines_split_like_str_split_and_skip_long_ones() {
        let text = b"a\r\nbb\rccc\n\nlong-long-long\nend";
        let mut l = Lines::new(&text[..], 8);
        let mut got = Vec::new();
        while let Some(x) = l.next_line().unwrap() {
            got.push(String::from_utf8_lossy(x).into_owned());
        }
        assert_eq!(got, vec!["a", "", "bb", "ccc", "", "", "end"]);
        assert_eq!(l.long, 1);
        assert_eq!(l.bytes, text.len() as u64);
        // A long line spanning many reads of a small buffer is skipped, not buffered.
        let big = [b"x".repeat(100_000), b"\nok\n".to_vec()].concat();
        let r = std::io::BufReader::with_capacity(64, &big[..]);
        let mut l = Lines::new(r, 1000);
        assert_eq!(l.next_line().unwrap(), Some(&b""[..]));
        assert_eq!(l.long, 1);
        assert_eq!(l.next_line().unwrap(), Some(&b"ok"[..]));
        assert_eq!(l.next_line().unwrap(), Some(&b""[..]));
        assert_eq!(l.next_line().unwrap(), None);
    }
}
