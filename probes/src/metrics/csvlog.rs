//! CSV metric logs: Lightning's `metrics.csv` (sparse rows — train and val metrics on different
//! rows, empty cells skipped) and any CSV with a step column (`step`, `global_step`,
//! `iteration`, …; the row index when there is none). Non-numeric cells are skipped; a ragged
//! row is an error naming the file and line.

use std::path::Path;

use super::{Point, Series, Unit};
use crate::error::{ReadError, Result};
use crate::pyjson::f64_step;

/// Column names taken as the x axis, in order of preference (compared lowercased).
const STEP_COLUMNS: &[&str] = &[
    "step",
    "global_step",
    "_step",
    "trainer/global_step",
    "train/global_step",
    "iteration",
    "iter",
    "time/total_timesteps",
    "steps",
];

/// Column names taken as the x axis, counted in epochs, when no step column exists.
const EPOCH_COLUMNS: &[&str] = &["epoch", "epochs", "train/epoch"];

/// Column names taken as wall time rather than as a metric.
const TIME_COLUMNS: &[&str] = &["wall_time", "_timestamp", "timestamp"];

/// A CSV log with what its header said.
#[derive(Debug, Clone, Default)]
pub struct CsvLog {
    pub series: Vec<Series>,
    /// The column used as the step (or epoch), `None` when the row index was used.
    pub step_column: Option<String>,
    /// What the index counts.
    pub unit: Unit,
}

impl CsvLog {
    /// Whether this CSV is a training log by content: it has a step or epoch column, or one of
    /// its columns means a training signal (a loss, a learning rate, a reward).
    pub fn is_training_log(&self) -> bool {
        self.step_column.is_some()
            || self.series.iter().any(|s| {
                let n = s.name.strip_prefix("eval_").unwrap_or(&s.name);
                n == "loss"
                    || n.starts_with("loss/")
                    || n.starts_with("learning_rate")
                    || n == "reward"
            })
    }
}

/// Read the numeric columns of a CSV log as series.
pub fn read(path: &Path) -> Result<Vec<Series>> {
    Ok(read_log(path)?.series)
}

/// Read a CSV log, saying which column gave the steps.
pub fn read_log(path: &Path) -> Result<CsvLog> {
    let file = crate::limits::open_regular(path)?;
    let file = crate::limits::LineCapped::new(file, crate::limits::MAX_LINE);
    let line_at = |byte: u64| {
        use std::io::Read;
        let mut head = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(byte + 1).read_to_end(&mut head))
            .ok()
            .map(|_| line_of(&head, byte))
    };
    read_log_from(std::io::BufReader::new(file), path, 0, &line_at)
}

/// The 1-based line of the record the csv crate places at byte `byte` of `text` (its first
/// bytes at least). In a CRLF file the crate ends a record at the `\r` and places the next one
/// at the `\n` (counting its line one short), so that byte is counted too.
fn line_of(text: &[u8], byte: u64) -> u64 {
    let end = (byte as usize).saturating_add(1).min(text.len());
    text[..end].iter().filter(|b| **b == b'\n').count() as u64 + 1
}

/// Parse CSV text that starts with its header line (a followed log's header and the lines
/// added since the last read): rows without a step column are indexed from `row_base`.
pub fn parse_log(bytes: &[u8], path: &Path, row_base: u64) -> Result<CsvLog> {
    read_log_from(bytes, path, row_base, &|byte| Some(line_of(bytes, byte)))
}

/// Parse a CSV log from `input`; `line_at` turns a byte offset into the line a message names.
fn read_log_from(
    input: impl std::io::Read,
    path: &Path,
    row_base: u64,
    line_at: &dyn Fn(u64) -> Option<u64>,
) -> Result<CsvLog> {
    let tab = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("tsv"));
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(if tab { b'\t' } else { b',' })
        .flexible(false)
        // Stable-Baselines3's monitor.csv opens with a `#{"t_start": …}` line.
        .comment(Some(b'#'))
        .has_headers(true)
        .buffer_capacity(256 << 10)
        .from_reader(input);
    let header: Vec<String> = match rdr.byte_headers() {
        Ok(h) => h
            .iter()
            .map(|c| {
                String::from_utf8_lossy(c)
                    .trim_start_matches('\u{feff}')
                    .trim()
                    .to_string()
            })
            .collect(),
        Err(e) => return Err(csv_error(path, e, line_at)),
    };
    if header.iter().all(|h| h.is_empty()) {
        return Ok(CsvLog::default());
    }
    let lower: Vec<String> = header.iter().map(|h| h.to_lowercase()).collect();
    let mut unit = Unit::Step;
    let step_col = STEP_COLUMNS
        .iter()
        .find_map(|want| lower.iter().position(|h| h == want))
        .or_else(|| {
            let c = EPOCH_COLUMNS
                .iter()
                .find_map(|want| lower.iter().position(|h| h == want));
            if c.is_some() {
                unit = Unit::Epoch;
            }
            c
        });
    let time_col = TIME_COLUMNS
        .iter()
        .find_map(|want| lower.iter().position(|h| h == want));
    let mut points: Vec<Vec<Point>> = vec![Vec::new(); header.len()];
    let mut rec = csv::ByteRecord::new();
    let mut row: u64 = row_base;
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_error(path, e, line_at)),
        }
        let index = row;
        row += 1;
        let step = match step_col {
            Some(c) => match rec.get(c).and_then(number).and_then(f64_step) {
                Some(s) => s,
                None => continue,
            },
            None => index,
        };
        let wall_time = time_col.and_then(|c| rec.get(c)).and_then(number);
        for (c, cell) in rec.iter().enumerate() {
            if Some(c) == step_col || Some(c) == time_col {
                continue;
            }
            if let (Some(value), Some(col)) = (number(cell), points.get_mut(c)) {
                col.push(Point {
                    step,
                    value,
                    wall_time,
                });
            }
        }
    }
    let series = header
        .iter()
        .zip(points)
        .filter(|(h, p)| !h.is_empty() && !p.is_empty())
        .map(|(h, p)| {
            let mut s = Series::from_points(h, path, p);
            if unit == Unit::Epoch {
                s.unit = Unit::Epoch;
            }
            s
        })
        .collect();
    Ok(CsvLog {
        series,
        step_column: step_col.and_then(|c| header.get(c).cloned()),
        unit,
    })
}

/// A cell as a number: trimmed, `nan`/`inf` accepted, anything else (empty, text) `None`.
fn number(cell: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(cell).ok()?.trim();
    if s.is_empty() {
        return None;
    }
    s.parse::<f64>().ok()
}

fn csv_error(path: &Path, e: csv::Error, line_at: &dyn Fn(u64) -> Option<u64>) -> ReadError {
    let line_of = |p: &csv::Position| line_at(p.byte()).unwrap_or(p.line());
    let line = e.position().map(line_of);
    match e.into_kind() {
        csv::ErrorKind::Io(io) => ReadError::io(path, io),
        csv::ErrorKind::UnequalLengths {
            expected_len,
            len,
            pos,
        } => {
            let line = pos.as_ref().map(line_of).or(line).unwrap_or(0);
            ReadError::format(
                path,
                format!("line {line}: {len} fields, but the header has {expected_len}"),
            )
        }
        other => {
            let what = format!("{:?}", other);
            let what = what.lines().next().unwrap_or("unreadable CSV").to_string();
            match line {
                Some(l) => ReadError::format(path, format!("line {l}: {what}")),
                None => ReadError::format(path, what),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("metrics.csv");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn lightning_sparse_rows_become_separate_series() {
        let (_d, p) = csv_file(
            "epoch,step,train_loss_step,val_loss,lr-AdamW\n0,0,2.5,,0.001\n0,1,2.4,,0.001\n0,1,,2.6,\n1,2,2.2,,0.0009\n1,3,,2.1,\n",
        );
        let log = read_log(&p).unwrap();
        assert_eq!(log.step_column.as_deref(), Some("step"));
        let get = |n: &str| log.series.iter().find(|s| s.name == n).unwrap();
        assert_eq!(get("loss").steps(), vec![0, 1, 2]);
        assert_eq!(get("eval_loss").values(), vec![2.6, 2.1]);
        assert_eq!(get("learning_rate").len(), 3);
        assert_eq!(
            get("epoch").len(),
            5 - 1,
            "same step logged twice keeps one point"
        );
    }

    #[test]
    fn no_step_column_uses_the_row_index_and_skips_text() {
        let (_d, p) = csv_file("loss,comment\n1.0,hello\nnan,x\n0.5,\n");
        let log = read_log(&p).unwrap();
        assert_eq!(log.step_column, None);
        assert_eq!(log.series.len(), 1);
        let loss = &log.series[0];
        assert_eq!(loss.steps(), vec![0, 1, 2]);
        assert!(loss.values()[1].is_nan());
    }

    #[test]
    fn ragged_row_names_file_and_line() {
        let (_d, p) = csv_file("step,loss\n1,2.0\n2,1.9,extra\n");
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("metrics.csv: line 3:"), "{e}");
        assert_eq!(e.lines().count(), 1);
        // Keras writes CRLF line ends; the line named is the same.
        let (_d, p) = csv_file("step,loss\r\n1,2.0\r\n2,1.9,extra\r\n");
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("metrics.csv: line 3:"), "{e}");
        let e = parse_log(b"step,loss\r\n1,2.0\r\n2,1.9,extra\r\n", &p, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3:"), "{e}");
    }

    #[test]
    fn empty_and_header_only_files_are_empty_logs() {
        let (_d, p) = csv_file("");
        assert!(read(&p).unwrap().is_empty());
        let (_d, p) = csv_file("step,loss\n");
        assert!(read(&p).unwrap().is_empty());
        let (_d, p) = csv_file("\u{feff}step,loss\n5,1.0\n");
        assert_eq!(read_log(&p).unwrap().series[0].steps(), vec![5]);
    }
}
