//! JSON-lines metric logs (one object per line, step under `step` / `_step` / `global_step` /
//! `iteration`; the object's index when absent), and `.json` files holding one object, an array
//! of objects, or JSON lines. Nested objects are flattened with `/`. Non-object lines and Python
//! `NaN` literals are tolerated; a line that is not JSON is an error with its line number,
//! unless it is a half-written last line.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use super::{Point, Series};
use crate::error::{ReadError, Result};
use crate::pyjson::{json_step, py_number, sanitize_py_json};

const STEP_KEYS: &[&str] = &[
    "step",
    "_step",
    "global_step",
    "trainer/global_step",
    "train/global_step",
    "iteration",
    "iter",
];
const TIME_KEYS: &[&str] = &["_timestamp", "wall_time", "timestamp"];
/// Nested objects deeper than this are not flattened.
const MAX_DEPTH: usize = 4;

/// Accumulates series from JSON objects.
struct Builder<'p> {
    path: &'p Path,
    index: HashMap<String, usize>,
    series: Vec<(String, Vec<Point>)>,
    objects: u64,
    /// Objects indexed by their `epoch` (no step key), and by a step key.
    by_epoch: u64,
    by_step: u64,
}

impl<'p> Builder<'p> {
    fn new(path: &'p Path) -> Self {
        Builder {
            path,
            index: HashMap::new(),
            series: Vec::new(),
            objects: 0,
            by_epoch: 0,
            by_step: 0,
        }
    }

    fn object(&mut self, obj: &Map<String, Value>) {
        let idx = self.objects;
        self.objects += 1;
        let by_step = STEP_KEYS
            .iter()
            .find_map(|k| obj.get(*k).and_then(json_step));
        // A log with no step key but an integer epoch (DETR's `log.txt`, Keras CSV-like JSON)
        // is indexed by epoch; the epoch is then not also a metric.
        let by_epoch = by_step
            .is_none()
            .then(|| obj.get("epoch").filter(|v| v.is_u64()).and_then(json_step))
            .flatten();
        if by_step.is_some() {
            self.by_step += 1;
        } else if by_epoch.is_some() {
            self.by_epoch += 1;
        }
        let step = by_step.or(by_epoch).unwrap_or(idx);
        let wall_time = TIME_KEYS
            .iter()
            .find_map(|k| obj.get(*k).and_then(py_number));
        self.flatten("", obj, 0, step, wall_time);
    }

    fn flatten(
        &mut self,
        prefix: &str,
        obj: &Map<String, Value>,
        depth: usize,
        step: u64,
        wall_time: Option<f64>,
    ) {
        for (k, v) in obj {
            if depth == 0 && (STEP_KEYS.contains(&k.as_str()) || TIME_KEYS.contains(&k.as_str())) {
                continue;
            }
            if depth == 0
                && k == "epoch"
                && v.is_u64()
                && !STEP_KEYS.iter().any(|s| obj.contains_key(*s))
            {
                continue;
            }
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}/{k}")
            };
            match v {
                Value::Object(inner) if depth < MAX_DEPTH => {
                    self.flatten(&key, inner, depth + 1, step, wall_time)
                }
                _ => {
                    if let Some(value) = py_number(v) {
                        self.push(
                            key,
                            Point {
                                step,
                                value,
                                wall_time,
                            },
                        );
                    }
                }
            }
        }
    }

    fn push(&mut self, key: String, p: Point) {
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                self.series.push((key.clone(), Vec::new()));
                self.index.insert(key, self.series.len() - 1);
                self.series.len() - 1
            }
        };
        if let Some((_, pts)) = self.series.get_mut(i) {
            pts.push(p);
        }
    }

    fn finish(self) -> Vec<Series> {
        let path = self.path;
        let epochs = self.by_epoch > 0 && self.by_step == 0;
        self.series
            .into_iter()
            .map(|(tag, pts)| {
                let mut s = Series::from_points(&tag, path, pts);
                if epochs {
                    s.unit = super::Unit::Epoch;
                }
                s
            })
            .collect()
    }
}

/// Read a JSON-lines log.
pub fn read(path: &Path) -> Result<Vec<Series>> {
    let file = crate::limits::open_regular(path)?;
    let file = crate::limits::LineCapped::new(file, crate::limits::MAX_LINE);
    read_lines(BufReader::with_capacity(256 << 10, file), path, 0)
}

/// Parse JSON lines (the whole lines a followed log gained since the last read): objects
/// without a step key are indexed from `first_object`.
pub fn parse_lines(bytes: &[u8], path: &Path, first_object: u64) -> Result<Vec<Series>> {
    read_lines(bytes, path, first_object)
}

fn read_lines(mut r: impl BufRead, path: &Path, first_object: u64) -> Result<Vec<Series>> {
    let mut b = Builder::new(path);
    b.objects = first_object;
    let mut line: Vec<u8> = Vec::new();
    let mut lineno: u64 = 0;
    loop {
        line.clear();
        let n = r
            .read_until(b'\n', &mut line)
            .map_err(|e| ReadError::io(path, e))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        let complete = line.last() == Some(&b'\n');
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Value>(&sanitize_py_json(text)) {
            Ok(Value::Object(obj)) => b.object(&obj),
            Ok(_) => {} // a number, string or list on its own line: not a record, tolerated
            Err(e) => {
                // A half-written last line of a live run: no newline yet, or cut mid-value.
                let last = !complete
                    || r.fill_buf()
                        .map(|rest| rest.iter().all(u8::is_ascii_whitespace))
                        .unwrap_or(false);
                if last && (!complete || e.is_eof()) {
                    break;
                }
                return Err(ReadError::format(
                    path,
                    format!("line {lineno}: not JSON ({e})"),
                ));
            }
        }
    }
    Ok(b.finish())
}

/// Read a `.json` file: a trainer state (by its `log_history`), one object of metrics, an array
/// of objects, or JSON lines.
pub fn read_json_or_lines(path: &Path) -> Result<Vec<Series>> {
    let bytes = crate::limits::read_text_file(path)?;
    match serde_json::from_slice::<Value>(&sanitize_py_json(&bytes)) {
        Ok(v) => {
            if v.get("log_history").is_some() {
                return Ok(super::trainer_state::TrainerState::from_value(path, &v)?.series);
            }
            let mut b = Builder::new(path);
            match &v {
                Value::Object(o) => b.object(o),
                Value::Array(items) => items
                    .iter()
                    .filter_map(Value::as_object)
                    .for_each(|o| b.object(o)),
                _ => {
                    return Err(ReadError::format(
                        path,
                        "expected a JSON object or a list of objects",
                    ))
                }
            }
            Ok(b.finish())
        }
        Err(_) => read(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn reads_steps_nested_keys_and_nan_literals() {
        let (_d, p) = file(
            "log.jsonl",
            b"{\"step\": 1, \"loss\": 2.0, \"lr\": 0.1, \"_timestamp\": 5.0}\n\n[1,2]\n\"text\"\n{\"_step\": 2, \"loss\": NaN, \"train\": {\"grad_norm\": 1.5}}\n{\"loss\": 1.0, \"tag\": \"x\"}\n",
        );
        let s = read(&p).unwrap();
        let loss = s.iter().find(|s| s.name == "loss").unwrap();
        assert_eq!(loss.steps(), vec![1, 2]); // third object has no step -> its index 2 replaces step 2
        assert_eq!(loss.values(), vec![2.0, 1.0]);
        assert_eq!(loss.first().unwrap().wall_time, Some(5.0));
        assert_eq!(
            s.iter().find(|s| s.name == "grad_norm").unwrap().tag,
            "train/grad_norm"
        );
        assert_eq!(
            s.iter().find(|s| s.name == "learning_rate").unwrap().len(),
            1
        );
    }

    #[test]
    fn truncated_last_line_is_tolerated_but_a_bad_line_is_an_error() {
        let (_d, p) = file(
            "m.jsonl",
            b"{\"step\": 1, \"loss\": 2.0}\n{\"step\": 2, \"lo",
        );
        assert_eq!(read(&p).unwrap()[0].len(), 1);
        let (_d, p) = file(
            "m.jsonl",
            b"{\"step\": 1, \"loss\": 2.0}\nnot json at all\n{\"step\": 2, \"loss\": 1.0}\n",
        );
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("m.jsonl: line 2: not JSON"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn json_files_may_hold_an_array_one_object_or_lines() {
        let (_d, p) = file(
            "metrics.json",
            b"[{\"step\": 3, \"loss\": 1.0}, {\"step\": 4, \"loss\": 0.5}]",
        );
        assert_eq!(read_json_or_lines(&p).unwrap()[0].steps(), vec![3, 4]);
        let (_d, p) = file(
            "metrics.json",
            b"{\"step\": 1, \"loss\": 1.0}\n{\"step\": 2, \"loss\": 0.5}\n",
        );
        assert_eq!(read_json_or_lines(&p).unwrap()[0].len(), 2);
        let (_d, p) = file(
            "metrics.json",
            b"{\"log_history\": [{\"step\": 1, \"loss\": 1.0}]}",
        );
        assert_eq!(read_json_or_lines(&p).unwrap()[0].name, "loss");
        let (_d, p) = file("metrics.json", b"42");
        assert!(read_json_or_lines(&p).is_err());
    }
}
