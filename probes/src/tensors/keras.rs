//! Keras v3 `.keras` archives: a zip of `config.json` (the model's layers and its compile
//! config), `metadata.json` and `model.weights.h5`. What the config says about the head and
//! the loss is read here (the output layer's units and activation, the loss and whether it
//! takes logits, the optimizer); the HDF5 weights are not. Members are read only when stored
//! (Keras writes them stored) and under the text cap.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::torchzip::{open_archive, text_member};
use crate::error::{ReadError, Result};

/// The model config member.
pub const CONFIG: &str = "config.json";

/// What a `.keras` archive's config says about the model's output and its loss.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KerasModel {
    pub path: PathBuf,
    /// `keras_version` from `metadata.json`.
    pub version: Option<String>,
    /// The output layer's name (one output only; a model with several is not described).
    pub output_layer: Option<String>,
    /// Units of the Dense layer that makes the output (the class count of a classifier).
    pub output_units: Option<u64>,
    /// The activation applied last: `linear`, `softmax`, `sigmoid`, … (a separate
    /// `Activation` / `Softmax` layer after the Dense counts).
    pub output_activation: Option<String>,
    /// The compiled loss as Keras names it in snake case (`sparse_categorical_crossentropy`).
    pub loss: Option<String>,
    /// The loss's `from_logits` (Keras's default, false, when the loss is given by name).
    pub from_logits: Option<bool>,
    /// The optimizer's class (`Adam`, `SGD`, …).
    pub optimizer: Option<String>,
}

impl KerasModel {
    /// A cross-entropy over classes (`categorical_crossentropy` or its sparse form).
    pub fn categorical_loss(&self) -> bool {
        self.loss
            .as_deref()
            .is_some_and(|l| l.ends_with("categorical_crossentropy"))
    }

    /// A binary cross-entropy (`binary_crossentropy`, also its focal form).
    pub fn binary_loss(&self) -> bool {
        self.loss
            .as_deref()
            .is_some_and(|l| l.starts_with("binary") && l.ends_with("crossentropy"))
    }

    /// The classes a classifier's head scores: its units under a categorical loss, 2 under a
    /// binary loss on one unit.
    pub fn num_classes(&self) -> Option<u64> {
        let units = self.output_units?;
        if self.categorical_loss() && units >= 2 {
            Some(units)
        } else if self.binary_loss() && units == 1 {
            Some(2)
        } else {
            None
        }
    }
}

/// The key `.keras` reads share in the parse memo ([`super::memo`]).
pub const MEMO_KEY: &str = "keras archive";

/// Whether a zip's member names are a Keras v3 archive.
pub fn is_keras_members<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    let (mut config, mut weights) = (false, false);
    for n in names {
        config |= n == CONFIG;
        weights |= n == "model.weights.h5";
    }
    config && weights
}

/// Reads a `.keras` archive's config. A file that is not one is a one-line error.
pub fn read(path: impl AsRef<Path>) -> Result<KerasModel> {
    let path = path.as_ref();
    super::memo::read_shared(MEMO_KEY, path, || parse(path)).map(|a| (*a).clone())
}

fn parse(path: &Path) -> Result<KerasModel> {
    let (_file, map, entries) = open_archive(
        path,
        |e| is_keras_members(e.keys().map(String::as_str)),
        "not a Keras v3 archive (no config.json and model.weights.h5 members)",
    )?;
    let member = |name: &str| -> Result<Option<Value>> {
        let Some(e) = entries.get(name) else {
            return Ok(None);
        };
        let bytes = text_member(path, &map, name, *e)?;
        serde_json::from_slice(bytes)
            .map(Some)
            .map_err(|e| ReadError::format(path, format!("{name}: not JSON ({e})")))
    };
    let config = member(CONFIG)?.unwrap_or(Value::Null);
    let mut out = describe(&config);
    out.path = path.to_path_buf();
    out.version = member("metadata.json")
        .ok()
        .flatten()
        .and_then(|m| m.get("keras_version")?.as_str().map(str::to_string));
    crate::tensors::intact(path, map.damaged())?;
    Ok(out)
}

/// What a model config (`config.json`'s JSON) says about its output and loss.
pub fn describe(config: &Value) -> KerasModel {
    let mut out = KerasModel::default();
    let inner = config.get("config");
    let layers: Vec<&Value> = inner
        .and_then(|c| c.get("layers"))
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    let name_of = |l: &Value| -> Option<String> {
        l.get("config")?.get("name")?.as_str().map(str::to_string)
    };
    // The output layer: a functional model names it (`["dense_1", 0, 0]`, or a list of such
    // for several outputs, which are not described); a Sequential model's is its last layer.
    let output = match inner.and_then(|c| c.get("output_layers")) {
        Some(Value::Array(o)) => match o.as_slice() {
            [Value::String(n), ..] => Some(n.clone()),
            [Value::Array(one)] => one.first().and_then(Value::as_str).map(str::to_string),
            _ => None,
        },
        _ => layers.last().and_then(|l| name_of(l)),
    };
    let by_name = |n: &str| {
        layers
            .iter()
            .copied()
            .find(|l| name_of(l).as_deref() == Some(n))
    };
    if let Some(mut layer) = output.as_deref().and_then(by_name) {
        out.output_layer = name_of(layer);
        // Walk back through activation-only layers to the Dense that makes the output.
        for _ in 0..4 {
            let class = layer
                .get("class_name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let cfg = layer.get("config");
            let activation = match class {
                "Softmax" => Some("softmax".to_string()),
                _ => cfg
                    .and_then(|c| c.get("activation"))
                    .and_then(activation_name),
            };
            if out.output_activation.is_none() || out.output_activation.as_deref() == Some("linear")
            {
                if let Some(a) = activation {
                    out.output_activation = Some(a);
                }
            }
            if let Some(u) = cfg.and_then(|c| c.get("units")).and_then(Value::as_u64) {
                out.output_units = Some(u);
                break;
            }
            if !matches!(class, "Activation" | "Softmax" | "Dropout") {
                break;
            }
            // The layer before: named by a functional model's inbound node, else the previous
            // one in a Sequential model's list.
            let prev = inbound(layer).and_then(|n| by_name(&n)).or_else(|| {
                let i = layers.iter().position(|l| std::ptr::eq(*l, layer))?;
                i.checked_sub(1).map(|j| layers[j])
            });
            match prev {
                Some(p) => layer = p,
                None => break,
            }
        }
    }
    if let Some(cc) = config.get("compile_config") {
        if let Some((loss, from_logits)) = cc.get("loss").and_then(loss_of) {
            out.loss = Some(loss);
            out.from_logits = Some(from_logits);
        }
        out.optimizer = cc.get("optimizer").and_then(|o| match o {
            Value::String(s) => Some(s.clone()),
            _ => o.get("class_name")?.as_str().map(str::to_string),
        });
    }
    out
}

/// The layer a functional layer's first inbound tensor comes from.
fn inbound(layer: &Value) -> Option<String> {
    let node = layer.get("inbound_nodes")?.as_array()?.first()?;
    let arg = node.get("args")?.as_array()?.first()?;
    arg.get("config")?
        .get("keras_history")?
        .as_array()?
        .first()?
        .as_str()
        .map(str::to_string)
}

/// An activation as Keras saves it: a name, or a serialized function / layer.
fn activation_name(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.to_ascii_lowercase()),
        Value::Object(_) => {
            let c = v.get("config");
            c.and_then(Value::as_str)
                .or_else(|| c.and_then(|c| c.get("name")).and_then(Value::as_str))
                .or_else(|| v.get("class_name").and_then(Value::as_str))
                .map(str::to_ascii_lowercase)
        }
        _ => None,
    }
}

/// A compiled loss: its snake-case name and `from_logits` (false unless the loss object sets
/// it). A list or dict of losses (several outputs) is not described.
fn loss_of(v: &Value) -> Option<(String, bool)> {
    match v {
        Value::String(s) => Some((snake(s), false)),
        Value::Object(o) if o.contains_key("class_name") => {
            let class = o.get("class_name")?.as_str()?;
            let cfg = o.get("config");
            if class == "function" {
                // A loss function by reference: `{"class_name": "function", "config": "…"}`.
                let name = cfg?.as_str()?;
                return Some((snake(name), false));
            }
            let from_logits = cfg
                .and_then(|c| c.get("from_logits"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Some((snake(class), from_logits))
        }
        _ => None,
    }
}

/// `SparseCategoricalCrossentropy` → `sparse_categorical_crossentropy`; snake case stays.
fn snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    // Keras spells the class `…Crossentropy`, its function `…_crossentropy`.
    out.replace("cross_entropy", "crossentropy")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dense(name: &str, units: u64, activation: &str) -> Value {
        json!({"class_name": "Dense", "config": {"name": name, "units": units, "activation": activation}})
    }

    #[test]
    fn sequential_head_and_loss_object() {
        let c = json!({"class_name": "Sequential", "config": {"layers": [
            {"class_name": "InputLayer", "config": {"name": "in"}},
            dense("d1", 64, "relu"), dense("logits", 10, "linear")]},
            "compile_config": {"loss": {"module": "keras.losses", "class_name": "SparseCategoricalCrossentropy",
                "config": {"from_logits": true}}, "optimizer": {"class_name": "Adam", "config": {}}}});
        let m = describe(&c);
        assert_eq!(m.output_units, Some(10));
        assert_eq!(m.output_activation.as_deref(), Some("linear"));
        assert_eq!(m.loss.as_deref(), Some("sparse_categorical_crossentropy"));
        assert_eq!(m.from_logits, Some(true));
        assert_eq!(m.num_classes(), Some(10));
        assert_eq!(m.optimizer.as_deref(), Some("Adam"));
    }

    #[test]
    fn functional_output_through_an_activation_layer() {
        let c = json!({"class_name": "Functional", "config": {
            "output_layers": [["probs", 0, 0]],
            "layers": [
                dense("head", 5, "linear"),
                {"class_name": "Activation", "config": {"name": "probs", "activation": "softmax"},
                 "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
                    "config": {"keras_history": ["head", 0, 0]}}]}]}]},
            "compile_config": {"loss": "categorical_crossentropy"}});
        let m = describe(&c);
        assert_eq!(m.output_layer.as_deref(), Some("probs"));
        assert_eq!(m.output_units, Some(5));
        assert_eq!(m.output_activation.as_deref(), Some("softmax"));
        assert_eq!(m.from_logits, Some(false));
        assert_eq!(m.num_classes(), Some(5));
    }

    #[test]
    fn binary_head_counts_two_classes_and_several_outputs_are_not_described() {
        let c = json!({"class_name": "Sequential", "config": {"layers": [dense("out", 1, "sigmoid")]},
            "compile_config": {"loss": {"class_name": "BinaryCrossentropy", "config": {}}}});
        assert_eq!(describe(&c).num_classes(), Some(2));
        let c = json!({"class_name": "Functional", "config": {
            "output_layers": [["a", 0, 0], ["b", 0, 0]], "layers": [dense("a", 3, "softmax"), dense("b", 1, "linear")]},
            "compile_config": {"loss": ["mse", "mse"]}});
        let m = describe(&c);
        assert_eq!(m.output_units, None);
        assert_eq!(m.loss, None);
        // A regression head is no classifier.
        let c = json!({"class_name": "Sequential", "config": {"layers": [dense("out", 1, "linear")]},
            "compile_config": {"loss": "mse"}});
        assert_eq!(describe(&c).num_classes(), None);
    }

    #[test]
    fn field_archive_reads() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/field/keras_labels_shuffled/final.keras");
        let m = read(&p).unwrap();
        assert_eq!(m.num_classes(), Some(10));
        assert_eq!(m.from_logits, Some(true));
        assert_eq!(m.output_activation.as_deref(), Some("linear"));
        assert_eq!(m.version.as_deref(), Some("3.15.1"));
        // Not a zip: one line naming the file.
        let d = tempfile::tempdir().unwrap();
        let bad = d.path().join("model.keras");
        std::fs::write(&bad, b"HDF\x89 not a zip").unwrap();
        let e = read(&bad).unwrap_err().to_string();
        assert!(e.contains("model.keras") && e.lines().count() == 1, "{e}");
    }
}
