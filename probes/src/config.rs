//! Model / scheduler / adapter configs: HF `config.json` ([`ModelConfig`]), diffusers
//! `scheduler_config.json` ([`SchedulerConfig`]) and VAE `config.json` ([`VaeConfig`]), PEFT
//! `adapter_config.json` ([`AdapterConfig`]). Fields are read leniently (missing or oddly typed
//! values are `None`); the whole document stays available as `raw`.

use std::path::Path;

use serde_json::Value;

use crate::error::{ReadError, Result};
use crate::pyjson::{json_step, parse_py_json, py_number};

/// Read a JSON config file into an object (Python `NaN`/`Infinity` literals allowed).
fn read_object(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).map_err(|e| ReadError::io(path, e))?;
    let v = parse_py_json(path, &bytes)?;
    if v.is_object() {
        Ok(v)
    } else {
        Err(ReadError::format(path, "expected a JSON object"))
    }
}

fn u64_of(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(json_step)
}
fn f64_of(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(py_number)
}
fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}
/// A token id that may be a list (`eos_token_id: [1, 2]`): all of them.
fn ids_of(v: &Value, key: &str) -> Vec<u64> {
    match v.get(key) {
        Some(Value::Array(a)) => a.iter().filter_map(json_step).collect(),
        Some(x) => json_step(x).into_iter().collect(),
        None => Vec::new(),
    }
}
/// A list of strings, or one string as a one-element list.
fn strings_of(v: &Value, key: &str) -> Vec<String> {
    match v.get(key) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// An HF model `config.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelConfig {
    pub model_type: Option<String>,
    pub architectures: Vec<String>,
    /// Also read from `text_config` (VLMs).
    pub vocab_size: Option<u64>,
    /// `num_labels`, else the size of `id2label`.
    pub num_labels: Option<u64>,
    /// `hidden_size`, `d_model` or `n_embd`, else `text_config`'s.
    pub hidden_size: Option<u64>,
    pub num_hidden_layers: Option<u64>,
    pub pad_token_id: Option<u64>,
    /// First of `eos_token_ids`.
    pub eos_token_id: Option<u64>,
    pub eos_token_ids: Vec<u64>,
    pub bos_token_id: Option<u64>,
    /// `max_position_embeddings` or `n_positions` (else `text_config`'s).
    pub max_position_embeddings: Option<u64>,
    /// `rope_scaling`, or transformers 5's `rope_parameters` when it scales.
    pub rope_scaling: Option<Value>,
    pub rope_theta: Option<f64>,
    pub tie_word_embeddings: Option<bool>,
    pub has_vision_config: bool,
    pub projector_hidden_act: Option<String>,
    pub mm_hidden_size: Option<u64>,
    /// `image_token_index` or `image_token_id`.
    pub image_token_id: Option<u64>,
    pub torch_dtype: Option<String>,
    /// diffusers `_class_name`, when this is a diffusers model config.
    pub class_name: Option<String>,
    pub raw: Value,
}

impl ModelConfig {
    pub fn read(path: &Path) -> Result<Self> {
        Ok(Self::from_value(read_object(path)?))
    }

    pub fn from_value(raw: Value) -> Self {
        let text = raw.get("text_config").filter(|t| t.is_object());
        // A key of the top level, else of `text_config`.
        let either = |f: &dyn Fn(&Value) -> Option<u64>| f(&raw).or_else(|| text.and_then(f));
        let rope_params = raw
            .get("rope_parameters")
            .or_else(|| text.and_then(|t| t.get("rope_parameters")));
        let rope_scaling = raw
            .get("rope_scaling")
            .or_else(|| text.and_then(|t| t.get("rope_scaling")))
            .filter(|v| !v.is_null())
            .cloned()
            .or_else(|| {
                rope_params
                    .filter(|p| {
                        let kind = p
                            .get("rope_type")
                            .or_else(|| p.get("type"))
                            .and_then(Value::as_str)
                            .unwrap_or("default");
                        kind != "default"
                    })
                    .cloned()
            });
        let rope_theta = f64_of(&raw, "rope_theta")
            .or_else(|| text.and_then(|t| f64_of(t, "rope_theta")))
            .or_else(|| rope_params.and_then(|p| f64_of(p, "rope_theta")));
        let eos_token_ids = {
            let top = ids_of(&raw, "eos_token_id");
            if top.is_empty() {
                text.map(|t| ids_of(t, "eos_token_id")).unwrap_or_default()
            } else {
                top
            }
        };
        let id_or_text = |k: &str| u64_of(&raw, k).or_else(|| text.and_then(|t| u64_of(t, k)));
        ModelConfig {
            model_type: str_of(&raw, "model_type"),
            architectures: strings_of(&raw, "architectures"),
            vocab_size: either(&|v| u64_of(v, "vocab_size")),
            num_labels: u64_of(&raw, "num_labels").or_else(|| {
                raw.get("id2label")
                    .and_then(Value::as_object)
                    .map(|m| m.len() as u64)
                    .filter(|n| *n > 0)
            }),
            hidden_size: either(&|v| {
                u64_of(v, "hidden_size")
                    .or_else(|| u64_of(v, "d_model"))
                    .or_else(|| u64_of(v, "n_embd"))
            }),
            num_hidden_layers: either(&|v| {
                u64_of(v, "num_hidden_layers").or_else(|| u64_of(v, "n_layer"))
            }),
            pad_token_id: id_or_text("pad_token_id"),
            eos_token_id: eos_token_ids.first().copied(),
            eos_token_ids,
            bos_token_id: id_or_text("bos_token_id"),
            max_position_embeddings: either(&|v| {
                u64_of(v, "max_position_embeddings").or_else(|| u64_of(v, "n_positions"))
            }),
            rope_scaling,
            rope_theta,
            tie_word_embeddings: raw.get("tie_word_embeddings").and_then(Value::as_bool),
            has_vision_config: raw.get("vision_config").is_some_and(|v| !v.is_null()),
            projector_hidden_act: str_of(&raw, "projector_hidden_act"),
            mm_hidden_size: u64_of(&raw, "mm_hidden_size"),
            image_token_id: u64_of(&raw, "image_token_index")
                .or_else(|| u64_of(&raw, "image_token_id")),
            torch_dtype: str_of(&raw, "torch_dtype").or_else(|| str_of(&raw, "dtype")),
            class_name: str_of(&raw, "_class_name"),
            raw,
        }
    }

    /// `rope_scaling.rope_type` (or the older `type`).
    pub fn rope_type(&self) -> Option<&str> {
        let r = self.rope_scaling.as_ref()?;
        r.get("rope_type")
            .or_else(|| r.get("type"))
            .and_then(Value::as_str)
    }

    /// `rope_scaling.factor`.
    pub fn rope_factor(&self) -> Option<f64> {
        self.rope_scaling.as_ref().and_then(|r| f64_of(r, "factor"))
    }

    /// `rope_scaling.original_max_position_embeddings`.
    pub fn rope_original_max_position_embeddings(&self) -> Option<u64> {
        self.rope_scaling
            .as_ref()
            .and_then(|r| u64_of(r, "original_max_position_embeddings"))
    }

    /// A diffusers VAE config (it carries `scaling_factor`).
    pub fn is_vae(&self) -> bool {
        self.class_name
            .as_deref()
            .is_some_and(|c| c.contains("Autoencoder"))
            || self.raw.get("scaling_factor").is_some()
    }
}

/// A diffusers `scheduler_config.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedulerConfig {
    pub class_name: Option<String>,
    pub beta_schedule: Option<String>,
    pub num_train_timesteps: Option<u64>,
    pub prediction_type: Option<String>,
    pub beta_start: Option<f64>,
    pub beta_end: Option<f64>,
    pub timestep_spacing: Option<String>,
    pub steps_offset: Option<u64>,
    pub rescale_betas_zero_snr: Option<bool>,
    pub clip_sample: Option<bool>,
    pub raw: Value,
}

impl SchedulerConfig {
    pub fn read(path: &Path) -> Result<Self> {
        Ok(Self::from_value(read_object(path)?))
    }

    pub fn from_value(raw: Value) -> Self {
        SchedulerConfig {
            class_name: str_of(&raw, "_class_name"),
            beta_schedule: str_of(&raw, "beta_schedule"),
            num_train_timesteps: u64_of(&raw, "num_train_timesteps"),
            prediction_type: str_of(&raw, "prediction_type"),
            beta_start: f64_of(&raw, "beta_start"),
            beta_end: f64_of(&raw, "beta_end"),
            timestep_spacing: str_of(&raw, "timestep_spacing"),
            steps_offset: u64_of(&raw, "steps_offset"),
            rescale_betas_zero_snr: raw.get("rescale_betas_zero_snr").and_then(Value::as_bool),
            clip_sample: raw.get("clip_sample").and_then(Value::as_bool),
            raw,
        }
    }
}

/// A diffusers VAE `config.json` (`vae/config.json`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VaeConfig {
    pub class_name: Option<String>,
    pub scaling_factor: Option<f64>,
    pub shift_factor: Option<f64>,
    pub latent_channels: Option<u64>,
    pub raw: Value,
}

impl VaeConfig {
    pub fn read(path: &Path) -> Result<Self> {
        Ok(Self::from_value(read_object(path)?))
    }

    pub fn from_value(raw: Value) -> Self {
        VaeConfig {
            class_name: str_of(&raw, "_class_name"),
            scaling_factor: f64_of(&raw, "scaling_factor"),
            shift_factor: f64_of(&raw, "shift_factor"),
            latent_channels: u64_of(&raw, "latent_channels"),
            raw,
        }
    }
}

/// A PEFT `adapter_config.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdapterConfig {
    pub peft_type: Option<String>,
    pub r: Option<u64>,
    pub lora_alpha: Option<f64>,
    pub lora_dropout: Option<f64>,
    /// Module names; a single string (PEFT's regex form) becomes one element, see
    /// `target_modules_is_regex`.
    pub target_modules: Vec<String>,
    pub target_modules_is_regex: bool,
    pub modules_to_save: Vec<String>,
    pub task_type: Option<String>,
    pub base_model_name_or_path: Option<String>,
    pub use_rslora: Option<bool>,
    pub use_dora: Option<bool>,
    pub raw: Value,
}

impl AdapterConfig {
    pub fn read(path: &Path) -> Result<Self> {
        Ok(Self::from_value(read_object(path)?))
    }

    pub fn from_value(raw: Value) -> Self {
        AdapterConfig {
            peft_type: str_of(&raw, "peft_type"),
            r: u64_of(&raw, "r"),
            lora_alpha: f64_of(&raw, "lora_alpha"),
            lora_dropout: f64_of(&raw, "lora_dropout"),
            target_modules: strings_of(&raw, "target_modules"),
            target_modules_is_regex: raw.get("target_modules").is_some_and(Value::is_string),
            modules_to_save: strings_of(&raw, "modules_to_save"),
            task_type: str_of(&raw, "task_type"),
            base_model_name_or_path: str_of(&raw, "base_model_name_or_path"),
            use_rslora: raw.get("use_rslora").and_then(Value::as_bool),
            use_dora: raw.get("use_dora").and_then(Value::as_bool),
            raw,
        }
    }

    /// `lora_alpha / r` (or `/ sqrt(r)` with rsLoRA).
    pub fn scaling(&self) -> Option<f64> {
        let r = self.r.filter(|r| *r > 0)? as f64;
        let a = self.lora_alpha?;
        Some(if self.use_rslora == Some(true) {
            a / r.sqrt()
        } else {
            a / r
        })
    }
}

/// The classification head an architecture name (config.json `architectures`) declares: a
/// head scoring one of `num_labels` classes, whose untrained loss is ln C and whose rows are C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassifierHead {
    /// `…ForSequenceClassification`: one label per row, pooled from a token.
    Sequence,
    /// Any other `…Classification` head (image, token, audio, video, …).
    Other,
}

/// The one classifier detector: which classification head `arch` names, if any.
pub fn classifier_head(arch: &str) -> Option<ClassifierHead> {
    if arch.ends_with("ForSequenceClassification") {
        Some(ClassifierHead::Sequence)
    } else if arch.contains("Classification") {
        Some(ClassifierHead::Other)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gpt2_style_config() {
        let c = ModelConfig::from_value(
            json!({"model_type": "gpt2", "vocab_size": 512, "n_embd": 64, "n_positions": 128,
            "pad_token_id": null, "eos_token_id": 1, "bos_token_id": 0, "tie_word_embeddings": true,
            "architectures": ["GPT2LMHeadModel"]}),
        );
        assert_eq!(
            (c.vocab_size, c.hidden_size, c.max_position_embeddings),
            (Some(512), Some(64), Some(128))
        );
        assert_eq!(
            (c.pad_token_id, c.eos_token_id, c.bos_token_id),
            (None, Some(1), Some(0))
        );
        assert_eq!(c.tie_word_embeddings, Some(true));
        assert_eq!(c.architectures, vec!["GPT2LMHeadModel"]);
        assert_eq!(c.num_labels, None);
    }

    #[test]
    fn vlm_config_reads_text_config_and_rope() {
        let c = ModelConfig::from_value(json!({"model_type": "llava", "image_token_index": 32000,
            "projector_hidden_act": "gelu", "vision_config": {"hidden_size": 1024},
            "text_config": {"hidden_size": 4096, "vocab_size": 32064, "max_position_embeddings": 4096,
                "rope_scaling": {"rope_type": "linear", "factor": 2.0, "original_max_position_embeddings": 2048},
                "eos_token_id": [2, 32007]}}));
        assert_eq!((c.vocab_size, c.hidden_size), (Some(32064), Some(4096)));
        assert!(c.has_vision_config);
        assert_eq!(c.image_token_id, Some(32000));
        assert_eq!(c.eos_token_ids, vec![2, 32007]);
        assert_eq!(
            (
                c.rope_type(),
                c.rope_factor(),
                c.rope_original_max_position_embeddings()
            ),
            (Some("linear"), Some(2.0), Some(2048))
        );
        let v5 = ModelConfig::from_value(
            json!({"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}),
        );
        assert_eq!(
            (v5.rope_scaling.is_none(), v5.rope_theta),
            (true, Some(10000.0))
        );
        let yarn = ModelConfig::from_value(
            json!({"rope_parameters": {"rope_type": "yarn", "factor": 4, "rope_theta": 1e6}}),
        );
        assert_eq!(
            (yarn.rope_type(), yarn.rope_factor()),
            (Some("yarn"), Some(4.0))
        );
    }

    #[test]
    fn num_labels_from_id2label() {
        let c = ModelConfig::from_value(json!({"id2label": {"0": "a", "1": "b", "2": "c"}}));
        assert_eq!(c.num_labels, Some(3));
        assert_eq!(
            ModelConfig::from_value(json!({"num_labels": 10})).num_labels,
            Some(10)
        );
    }

    #[test]
    fn scheduler_vae_and_adapter_configs() {
        let s = SchedulerConfig::from_value(
            json!({"_class_name": "DDPMScheduler", "beta_schedule": "scaled_linear",
            "num_train_timesteps": 1000, "prediction_type": "epsilon", "beta_start": 0.00085, "beta_end": 0.012,
            "timestep_spacing": "leading"}),
        );
        assert_eq!(s.num_train_timesteps, Some(1000));
        assert_eq!(s.timestep_spacing.as_deref(), Some("leading"));
        assert_eq!(
            VaeConfig::from_value(json!({"scaling_factor": 0.18215})).scaling_factor,
            Some(0.18215)
        );
        let a = AdapterConfig::from_value(
            json!({"r": 8, "lora_alpha": 16, "target_modules": "q_proj|v_proj", "task_type": "CAUSAL_LM"}),
        );
        assert_eq!(a.target_modules, vec!["q_proj|v_proj"]);
        assert!(a.target_modules_is_regex);
        assert_eq!(a.scaling(), Some(2.0));
        let b = AdapterConfig::from_value(
            json!({"r": 0, "target_modules": ["q_proj", "v_proj"], "modules_to_save": null}),
        );
        assert_eq!(
            (b.target_modules.len(), b.scaling(), b.modules_to_save.len()),
            (2, None, 0)
        );
    }

    #[test]
    fn malformed_json_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("config.json");
        std::fs::write(&p, "{\"vocab_size\": 5,").unwrap();
        let e = ModelConfig::read(&p).unwrap_err().to_string();
        assert!(e.contains("config.json: invalid JSON"), "{e}");
        std::fs::write(&p, "[1]").unwrap();
        assert!(ModelConfig::read(&p)
            .unwrap_err()
            .to_string()
            .contains("expected a JSON object"));
        assert!(AdapterConfig::read(&d.path().join("missing.json"))
            .unwrap_err()
            .to_string()
            .contains("missing.json"));
    }
}
