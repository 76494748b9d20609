//! MLflow file stores (`mlruns/<experiment>/<run>/`): each metric is a text file under the
//! run's `metrics/` folder (the key is its path below it, `train/loss`), one line per logged
//! value: `<timestamp_ms> <value> <step>`; each param is a file under `params/` holding its
//! value. A run folder is recognised by its `meta.yaml` beside `metrics/`. Metric files are
//! streamed a line at a time through the regular-file gate ([`crate::limits::open_regular`]).

use std::path::{Path, PathBuf};

use super::budget::{Keeper, Lines};
use super::{Point, Series};
use crate::error::{ReadError, Result};

/// Metric files larger than this are refused.
pub const MAX_BYTES: u64 = 1024 * 1024 * 1024;
/// Param files larger than this are refused.
const MAX_PARAM_BYTES: u64 = 64 * 1024;

/// The run folder and metric key of a file inside an MLflow run's `metrics/` folder.
pub fn metric_key(path: &Path) -> Option<(PathBuf, String)> {
    let mut parts: Vec<String> = Vec::new();
    let mut dir = path.parent();
    parts.push(path.file_name()?.to_string_lossy().into_owned());
    while let Some(d) = dir {
        let name = d.file_name()?.to_string_lossy();
        if name == "metrics" {
            let run = d.parent()?;
            if run.join("meta.yaml").is_file() {
                parts.reverse();
                return Some((run.to_path_buf(), parts.join("/")));
            }
            return None;
        }
        parts.push(name.into_owned());
        if parts.len() > 8 {
            return None;
        }
        dir = d.parent();
    }
    None
}

/// The run folder and param name of a file inside an MLflow run's `params/` folder.
pub fn param_key(path: &Path) -> Option<(PathBuf, String)> {
    let dir = path.parent()?;
    if dir.file_name()? != "params" {
        return None;
    }
    let run = dir.parent()?;
    run.join("meta.yaml").is_file().then(|| {
        (
            run.to_path_buf(),
            path.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
        )
    })
}

/// Read one metric file as the series `key`, a line at a time (lines past
/// [`crate::limits::MAX_LINE`] are an error; the points are kept under [`super::budget`]).
pub fn read_metric(path: &Path, key: &str) -> Result<Series> {
    use std::io::Read;
    let f = crate::limits::open_regular(path)?;
    let len = f.metadata().map_err(|e| ReadError::io(path, e))?.len();
    if len > MAX_BYTES {
        return Err(ReadError::format(
            path,
            "MLflow metric file larger than 1 GiB",
        ));
    }
    let r = std::io::BufReader::with_capacity(256 << 10, f.take(MAX_BYTES));
    let mut lines = Lines::new(r, crate::limits::MAX_LINE)
        .newline_only()
        .strict();
    let mut keep = Keeper::new();
    let mut i = 0usize;
    while let Some(line) = lines.next_line().map_err(|e| ReadError::io(path, e))? {
        i += 1;
        if let Some(p) = parse_line(&String::from_utf8_lossy(line), i, path)? {
            keep.push(key, p);
        }
    }
    let pts = keep.finish().pop().map(|(_, p)| p).unwrap_or_default();
    Ok(Series::from_points(key, path, pts))
}

pub fn parse_metric(text: &str, key: &str, path: &Path) -> Result<Series> {
    let mut keep = Keeper::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(p) = parse_line(line, i + 1, path)? {
            keep.push(key, p);
        }
    }
    let pts = keep.finish().pop().map(|(_, p)| p).unwrap_or_default();
    Ok(Series::from_points(key, path, pts))
}

/// One `<timestamp> <value> <step>` line (`lineno` 1-based); `None` for a blank line.
fn parse_line(line: &str, lineno: usize, path: &Path) -> Result<Option<Point>> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let bad = || {
        ReadError::format(
            path,
            format!("line {lineno}: expected `<timestamp> <value> <step>`"),
        )
    };
    let mut f = line.split_whitespace();
    let (Some(ts), Some(v)) = (f.next(), f.next()) else {
        return Err(bad());
    };
    let step = f.next().unwrap_or("0");
    let ts: f64 = ts.parse().map_err(|_| bad())?;
    let value: f64 = match v {
        "nan" | "NaN" => f64::NAN,
        "inf" | "Infinity" => f64::INFINITY,
        "-inf" | "-Infinity" => f64::NEG_INFINITY,
        _ => v.parse().map_err(|_| bad())?,
    };
    let step: i64 = step.parse().map_err(|_| bad())?;
    Ok(Some(Point {
        step: u64::try_from(step).unwrap_or(0),
        value,
        wall_time: Some(ts / 1000.0),
    }))
}

/// A param file's value (first line, trimmed).
pub fn read_param(path: &Path) -> Result<String> {
    let bytes = crate::limits::read_capped_io(path, MAX_PARAM_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            ReadError::format(path, "MLflow param larger than 64 KiB")
        } else {
            ReadError::io(path, e)
        }
    })?;
    Ok(String::from_utf8_lossy(&bytes).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_lines() {
        let s = parse_metric(
            "1795468304832 2.36 5\n1795468304867 2.37 10\n1795468304868 nan 15\n",
            "train/loss",
            Path::new("loss"),
        )
        .unwrap();
        assert_eq!(s.name, "loss");
        assert_eq!(s.steps(), vec![5, 10, 15]);
        assert!(s.points[2].value.is_nan());
        let e = parse_metric("1 x 2\n", "loss", Path::new("m/loss")).unwrap_err();
        assert!(e.to_string().starts_with("m/loss: line 1"), "{e}");
    }

    #[test]
    fn metric_files_are_streamed_and_a_huge_line_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("loss");
        std::fs::write(&p, "1 2.0 1\r\n2 1.5 2\r\n\r\n3 nan 3").unwrap();
        let s = read_metric(&p, "train/loss").unwrap();
        assert_eq!(s.steps(), vec![1, 2, 3]);
        assert!(s.points[2].value.is_nan());
        std::fs::write(&p, format!("1 2.0 1\n{}\n", "9".repeat(2 << 20))).unwrap();
        let e = read_metric(&p, "loss").unwrap_err().to_string();
        assert!(e.contains("line cap") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn keys_from_layout() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("0").join("abc");
        std::fs::create_dir_all(run.join("metrics/train")).unwrap();
        std::fs::create_dir_all(run.join("params")).unwrap();
        std::fs::write(run.join("meta.yaml"), "run_id: abc\n").unwrap();
        std::fs::write(run.join("metrics/train/loss"), "1 2.0 1\n").unwrap();
        std::fs::write(run.join("params/lr"), "0.003").unwrap();
        let (r, k) = metric_key(&run.join("metrics/train/loss")).unwrap();
        assert_eq!((r, k.as_str()), (run.clone(), "train/loss"));
        assert_eq!(param_key(&run.join("params/lr")).unwrap().1, "lr");
        assert_eq!(read_param(&run.join("params/lr")).unwrap(), "0.003");
        assert!(metric_key(&d.path().join("loss")).is_none());
    }
}
