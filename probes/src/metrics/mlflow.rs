//! MLflow file stores (`mlruns/<experiment>/<run>/`): each metric is a text file under the
//! run's `metrics/` folder (the key is its path below it, `train/loss`), one line per logged
//! value: `<timestamp_ms> <value> <step>`; each param is a file under `params/` holding its
//! value. A run folder is recognised by its `meta.yaml` beside `metrics/`.

use std::path::{Path, PathBuf};

use super::{Point, Series};
use crate::error::{ReadError, Result};

/// Metric files larger than this are refused.
pub const MAX_BYTES: u64 = 1024 * 1024 * 1024;

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

/// Read one metric file as the series `key`.
pub fn read_metric(path: &Path, key: &str) -> Result<Series> {
    let meta = std::fs::metadata(path).map_err(|e| ReadError::io(path, e))?;
    if meta.len() > MAX_BYTES {
        return Err(ReadError::format(
            path,
            "MLflow metric file larger than 1 GiB",
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    parse_metric(&String::from_utf8_lossy(&bytes), key, path)
}

pub fn parse_metric(text: &str, key: &str, path: &Path) -> Result<Series> {
    let mut pts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut f = line.split_whitespace();
        let (Some(ts), Some(v)) = (f.next(), f.next()) else {
            return Err(ReadError::format(
                path,
                format!("line {}: expected `<timestamp> <value> <step>`", i + 1),
            ));
        };
        let step = f.next().unwrap_or("0");
        let bad = || {
            ReadError::format(
                path,
                format!("line {}: expected `<timestamp> <value> <step>`", i + 1),
            )
        };
        let ts: f64 = ts.parse().map_err(|_| bad())?;
        let value: f64 = match v {
            "nan" | "NaN" => f64::NAN,
            "inf" | "Infinity" => f64::INFINITY,
            "-inf" | "-Infinity" => f64::NEG_INFINITY,
            _ => v.parse().map_err(|_| bad())?,
        };
        let step: i64 = step.parse().map_err(|_| bad())?;
        pts.push(Point {
            step: u64::try_from(step).unwrap_or(0),
            value,
            wall_time: Some(ts / 1000.0),
        });
    }
    Ok(Series::from_points(key, path, pts))
}

/// A param file's value (first line, trimmed).
pub fn read_param(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| ReadError::io(path, e))?;
    if meta.len() > 64 * 1024 {
        return Err(ReadError::format(path, "MLflow param larger than 64 KiB"));
    }
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
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
