//! HF Trainer's `trainer_state.json`: the run's bookkeeping (global step, max steps, logging and
//! eval cadence, best metric) and `log_history` as series. Python writes `NaN` / `Infinity`
//! literals that strict JSON rejects; they are read as floats.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Point, Series};
use crate::error::{ReadError, Result};
use crate::pyjson::{json_step, parse_py_json, py_number};

/// A parsed `trainer_state.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrainerState {
    pub path: PathBuf,
    pub global_step: Option<u64>,
    pub max_steps: Option<u64>,
    pub logging_steps: Option<u64>,
    pub eval_steps: Option<u64>,
    pub save_steps: Option<u64>,
    pub train_batch_size: Option<u64>,
    pub num_train_epochs: Option<f64>,
    /// Epoch reached (fractional).
    pub epoch: Option<f64>,
    pub best_metric: Option<f64>,
    pub best_global_step: Option<u64>,
    pub best_model_checkpoint: Option<String>,
    pub total_flos: Option<f64>,
    /// One series per numeric `log_history` key (`step` excluded; `epoch` kept).
    pub series: Vec<Series>,
}

/// Keys of the end-of-training summary entry HF appends to `log_history`; they are tagged
/// `train/<key>` (as HF's TensorBoard callback does) so `train_loss` — the run's mean — is not
/// mistaken for the loss at the last step.
const SUMMARY_MARKER: &str = "train_runtime";

impl TrainerState {
    pub fn read(path: &Path) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
        let v = parse_py_json(path, &bytes)?;
        Self::from_value(path, &v)
    }

    pub fn from_value(path: &Path, v: &Value) -> Result<Self> {
        let obj = v
            .as_object()
            .ok_or_else(|| ReadError::format(path, "expected a JSON object (trainer state)"))?;
        let u = |k: &str| obj.get(k).and_then(json_step);
        let f = |k: &str| obj.get(k).and_then(py_number);
        let mut st = TrainerState {
            path: path.to_path_buf(),
            global_step: u("global_step"),
            max_steps: u("max_steps"),
            logging_steps: u("logging_steps"),
            eval_steps: u("eval_steps"),
            save_steps: u("save_steps"),
            train_batch_size: u("train_batch_size"),
            num_train_epochs: f("num_train_epochs"),
            epoch: f("epoch"),
            best_metric: f("best_metric"),
            best_global_step: u("best_global_step"),
            best_model_checkpoint: obj
                .get("best_model_checkpoint")
                .and_then(Value::as_str)
                .map(str::to_string),
            total_flos: f("total_flos"),
            series: Vec::new(),
        };
        let history = match obj.get("log_history") {
            None | Some(Value::Null) => return Ok(st),
            Some(Value::Array(h)) => h,
            Some(_) => return Err(ReadError::format(path, "`log_history` is not a list")),
        };
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut series: Vec<(String, Vec<Point>)> = Vec::new();
        for entry in history {
            let Some(e) = entry.as_object() else { continue };
            let Some(step) = e.get("step").and_then(json_step) else {
                continue;
            };
            let summary = e.contains_key(SUMMARY_MARKER);
            for (k, val) in e {
                if k == "step" {
                    continue;
                }
                let Some(value) = py_number(val) else {
                    continue;
                };
                let tag = if summary && k != "epoch" {
                    format!("train/{k}")
                } else {
                    k.clone()
                };
                let i = *index.entry(tag.clone()).or_insert_with(|| {
                    series.push((tag, Vec::new()));
                    series.len() - 1
                });
                if let Some((_, pts)) = series.get_mut(i) {
                    pts.push(Point {
                        step,
                        value,
                        wall_time: None,
                    });
                }
            }
        }
        st.series = series
            .into_iter()
            .map(|(tag, pts)| Series::from_points(&tag, path, pts))
            .collect();
        Ok(st)
    }

    pub fn series(&self, canonical: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.name == canonical)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TrainerState> {
        let p = Path::new("run/trainer_state.json");
        TrainerState::from_value(p, &parse_py_json(p, text.as_bytes())?)
    }

    #[test]
    fn reads_bookkeeping_and_log_history_with_python_literals() {
        let st = parse(
            r#"{"global_step": 3, "max_steps": 10, "logging_steps": 1, "eval_steps": 2, "train_batch_size": 8,
                "num_train_epochs": 1, "best_metric": null, "log_history": [
                {"epoch": 0.1, "grad_norm": NaN, "learning_rate": 0.0, "loss": 6.0, "step": 1},
                {"epoch": 0.2, "grad_norm": Infinity, "learning_rate": 1e-4, "loss": 5.5, "step": 2},
                {"epoch": 0.2, "eval_loss": 5.4, "eval_runtime": 0.1, "step": 2},
                {"epoch": 0.3, "grad_norm": -Infinity, "loss": NaN, "step": 3, "note": "NaN"},
                {"epoch": 0.3, "step": 3, "train_loss": 5.7, "train_runtime": 9.0, "total_flos": 1e9}]}"#,
        )
        .unwrap();
        assert_eq!(
            (
                st.global_step,
                st.max_steps,
                st.eval_steps,
                st.train_batch_size
            ),
            (Some(3), Some(10), Some(2), Some(8))
        );
        assert_eq!(st.best_metric, None);
        let loss = st.series("loss").unwrap();
        assert_eq!(loss.steps(), vec![1, 2, 3]);
        assert!(loss.last().unwrap().value.is_nan());
        let g = st.series("grad_norm").unwrap().values();
        assert!(g[0].is_nan() && g[1] == f64::INFINITY && g[2] == f64::NEG_INFINITY);
        assert_eq!(st.series("eval_loss").unwrap().steps(), vec![2]);
        assert_eq!(st.series("epoch").unwrap().len(), 3);
        assert_eq!(st.series("train/train_loss").unwrap().values(), vec![5.7]);
        assert!(st.series("note").is_none());
    }

    #[test]
    fn malformed_state_names_the_file() {
        let e = parse("{\"log_history\": [").unwrap_err().to_string();
        assert!(e.starts_with("run/trainer_state.json: invalid JSON"), "{e}");
        assert!(parse("[1, 2]").is_err());
        assert!(parse(r#"{"log_history": 3}"#).is_err());
        assert!(parse(r#"{"log_history": [1, "x", {"loss": 1}]}"#)
            .unwrap()
            .series
            .is_empty());
    }
}
