//! Facts the run's artifacts state (config.json, trainer_state.json, training_args.bin,
//! scheduler.pt, hparams.yaml, adapter_config.json), each naming its file.

use std::path::Path;

use super::Facts;
use crate::config::AdapterConfig;
use crate::run::{ArtifactKind, Run};

/// Facts the artifacts state: `vocab_size`, `num_classes`, token ids, context length, rope
/// scaling from `config.json`; `total_steps` and cadence from `trainer_state.json`; `lr_max`,
/// `warmup_steps`, `schedule`, `accum_steps` from HF's `training_args.bin`; `lr_max` from a
/// `scheduler.pt`'s `base_lrs` when nothing else says; a few hyper-parameters from Lightning's
/// `hparams.yaml`; LoRA rank/alpha (and `from_scratch=false`) from `adapter_config.json`;
/// `from_scratch=false` and `base_model` from a model card naming the base it fine-tunes;
/// `num_classes` from a Keras `.keras` archive's head and loss.
/// Each fact names its file; user facts set later still win.
pub fn facts_from_artifacts(run: &Run) -> Facts {
    let mut f = Facts::new();
    if let Some((path, c)) = run.model_config() {
        let file = path.display().to_string();
        let mut set = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                f.set_artifact(k, &v, &file);
            }
        };
        set("vocab_size", c.vocab_size.map(|v| v.to_string()));
        set("num_classes", c.num_labels.map(|v| v.to_string()));
        set(
            "architectures",
            Some(c.architectures.join(",")).filter(|a| !a.is_empty()),
        );
        set("pad_token_id", c.pad_token_id.map(|v| v.to_string()));
        set("eos_token_id", c.eos_token_id.map(|v| v.to_string()));
        set("bos_token_id", c.bos_token_id.map(|v| v.to_string()));
        set("hidden_size", c.hidden_size.map(|v| v.to_string()));
        set(
            "max_position_embeddings",
            c.max_position_embeddings.map(|v| v.to_string()),
        );
        set("model_type", c.model_type.clone());
        set("image_token_id", c.image_token_id.map(|v| v.to_string()));
        set("rope_type", c.rope_type().map(str::to_string));
        set("rope_factor", c.rope_factor().map(|v| v.to_string()));
        set(
            "rope_original_max_position_embeddings",
            c.rope_original_max_position_embeddings()
                .map(|v| v.to_string()),
        );
        set(
            "tie_word_embeddings",
            c.tie_word_embeddings.map(|v| v.to_string()),
        );
        let domain = if c.has_vision_config {
            Some("vlm")
        } else if c.class_name.is_some() {
            Some("diffusion")
        } else if c.vocab_size.is_some() {
            Some("llm")
        } else if c.num_labels.is_some() {
            Some("vision")
        } else {
            None
        };
        if let Some(d) = domain {
            f.set_artifact_if_absent("domain", d, &file);
        }
    }
    if let Some(st) = run.trainer_state() {
        let file = st.path.display().to_string();
        let mut set = |k: &str, v: Option<u64>| {
            if let Some(v) = v {
                f.set_artifact(k, &v.to_string(), &file);
            }
        };
        set("total_steps", st.max_steps.filter(|m| *m > 0));
        set("max_steps", st.max_steps.filter(|m| *m > 0));
        set("global_step", st.global_step);
        set("logging_steps", st.logging_steps);
        set("eval_steps", st.eval_steps);
        set("train_batch_size", st.train_batch_size);
    }
    if let Some(p) = newest_of_kind(run, ArtifactKind::TrainingArgs) {
        training_args_facts(p, &mut f);
    }
    if let Some(p) = newest_of_kind(run, ArtifactKind::Scheduler) {
        scheduler_facts(p, &mut f);
    }
    if let Some(a) = run.of_kind(ArtifactKind::AdapterConfig).first() {
        if let Ok(c) = AdapterConfig::read(&a.path) {
            let file = a.path.display().to_string();
            if let Some(r) = c.r {
                f.set_artifact("lora_r", &r.to_string(), &file);
            }
            if let Some(al) = c.lora_alpha {
                f.set_artifact("lora_alpha", &al.to_string(), &file);
            }
            // A PEFT adapter trains on top of pretrained weights.
            f.set_artifact_if_absent("from_scratch", "false", &file);
            // The base it names: a hub id, or a local folder (its last component names the
            // model: `/data/models/Llama-2-7b-hf` → `Llama-2-7b-hf`).
            if let Some(b) = c
                .base_model_name_or_path
                .as_deref()
                .map(str::trim)
                .filter(|b| !b.is_empty())
            {
                let local = b.starts_with('/')
                    || b.starts_with('.')
                    || b.starts_with('~')
                    || b.contains('\\');
                let name = if local {
                    b.trim_end_matches(['/', '\\'])
                        .rsplit(['/', '\\'])
                        .next()
                        .unwrap_or(b)
                } else {
                    b
                };
                if !name.is_empty() {
                    f.set_artifact_if_absent("base_model", name, &file);
                }
            }
        }
    }
    if let Some(a) = run.of_kind(ArtifactKind::HParams).first() {
        hparams_facts(&a.path, &mut f);
    }
    logged_config_facts(run, &mut f);
    sb3_facts(run, &mut f);
    keras_facts(run, &mut f);
    model_card_facts(run, &mut f);
    capture_facts(run, &mut f);
    f
}

/// `mltriage/facts.json`, written by the Python `mltriage.capture` hooks: a flat JSON object of
/// facts the training code states (`phase`, `from_scratch`, `model_id`, token ids …). `phase`,
/// `from_scratch`, `init` and `base_model` are the code's own word and win over what other
/// artifacts suggest; the rest fill gaps only. A `--fact` always wins.
/// Whether `p` is a file `mltriage.capture` wrote under the run's `mltriage/` folder with this
/// name (`facts.json`, `capture.json`, `param_groups.json`).
pub fn is_capture_file(p: &Path, name: &str) -> bool {
    p.file_name().is_some_and(|n| n == name)
        && p.parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d == "mltriage")
}

fn capture_facts(run: &Run, f: &mut Facts) {
    for a in &run.artifacts {
        if !is_capture_file(&a.path, "facts.json") {
            continue;
        }
        let Ok(bytes) = crate::limits::read_text_file(&a.path) else {
            continue;
        };
        let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(&bytes) else {
            continue;
        };
        let file = a.path.display().to_string();
        for (k, v) in &map {
            let v = match v {
                serde_json::Value::String(s) => s.trim().to_string(),
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            if v.is_empty() {
                continue;
            }
            if matches!(k.as_str(), "phase" | "from_scratch" | "init" | "base_model") {
                f.set_artifact(k, &v, &file);
            } else {
                f.set_artifact_if_absent(k, &v, &file);
            }
        }
    }
}

/// Hyper-parameters a Stable-Baselines3 model archive's `data` states (newest archive first):
/// a constant `learning_rate` as `lr_max`, `n_steps`, `batch_size`, `n_epochs`, `clip_range`,
/// `ent_coef`, `gamma` (as `discount_gamma`), `gae_lambda`, `max_grad_norm`,
/// `normalize_advantage` … (see [`crate::tensors::sb3::HYPERPARAMETERS`]).
fn sb3_facts(run: &Run, f: &mut Facts) {
    use crate::tensors::sb3;
    let Some(a) = run.newest_sb3_archive().and_then(|p| sb3::read(p).ok()) else {
        return;
    };
    let file = a.path.display().to_string();
    for (name, key) in sb3::HYPERPARAMETERS {
        match a.hyperparameters.get(*name) {
            Some(v) if v != "schedule" => f.set_artifact_if_absent(key, v, &file),
            _ => {}
        }
    }
}

/// The class count a Keras classifier's head and loss state (`config.json` in its `.keras`
/// archive): the last Dense layer's units under a categorical cross-entropy, 2 under a binary one.
fn keras_facts(run: &Run, f: &mut Facts) {
    let Some(m) = run.keras_model() else {
        return;
    };
    if let Some(c) = m.num_classes() {
        f.set_artifact_if_absent("num_classes", &c.to_string(), &m.path.display().to_string());
    }
}

/// The base model a model card (README.md written by HF Trainer / TRL) says the run was
/// fine-tuned from: "fine-tuned version of [gpt2](…)" means pretrained weights were loaded,
/// so `from_scratch=false`; "[None]" means the model was built from scratch.
fn model_card_facts(run: &Run, f: &mut Facts) {
    for a in run
        .artifacts
        .iter()
        .filter(|a| a.path.file_name().is_some_and(|n| n == "README.md"))
    {
        if let Some(base) = model_card_base(&a.path) {
            let file = a.path.display().to_string();
            f.set_artifact_if_absent("from_scratch", "false", &file);
            f.set_artifact_if_absent("base_model", &base, &file);
            return;
        }
    }
}

/// The base model a model card names ("fine-tuned version of [NAME](…)"), unless "None".
pub(crate) fn model_card_base(path: &Path) -> Option<String> {
    const MARK: &str = "fine-tuned version of [";
    let bytes = crate::limits::read_capped(path, 64 * 1024).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let rest = &text[text.find(MARK)? + MARK.len()..];
    let base = rest.split(']').next()?.trim();
    (!base.is_empty() && base != "None" && base.len() < 200).then(|| base.to_string())
}

/// Facts from configs saved by the training code itself: a torch checkpoint's `config` and
/// `model_args` dicts (nanoGPT's `ckpt.pt`), a W&B run's config record, MLflow params.
fn logged_config_facts(run: &Run, f: &mut Facts) {
    use crate::tensors::{lookup, TorchZip, Value};
    if let Some(w) = run
        .checkpoints
        .iter()
        .rev()
        .find_map(|c| c.weights.first())
        .filter(|w| {
            run.kind_of(w) == ArtifactKind::TorchFile && w.extension().is_none_or(|e| e != "bin")
        })
    {
        if let Ok(z) = TorchZip::open(w) {
            let mut pairs = Vec::new();
            // `train_args`: Ultralytics; `args`: timm (an argparse Namespace: its attributes).
            for key in [
                "model_args",
                "config",
                "hyper_parameters",
                "args",
                "train_args",
            ] {
                let v = lookup(z.root(), key).map(|v| match v {
                    Value::Object { state: Some(s), .. } => s.as_ref(),
                    other => other,
                });
                if let Some(d) = v.and_then(Value::as_dict) {
                    for (k, v) in d {
                        if let (Some(k), Some(v)) = (k.key_string(), plain(v)) {
                            pairs.push((k, v));
                        }
                    }
                }
            }
            config_pairs_facts(&pairs, &w.display().to_string(), f);
        }
    }
    for a in run.of_kind(ArtifactKind::WandbRecord) {
        if let Ok(r) = crate::metrics::wandb::read(&a.path) {
            let pairs: Vec<(String, String)> = r
                .config
                .into_iter()
                .map(|(k, v)| (k, v.trim_matches('"').to_string()))
                .collect();
            config_pairs_facts(&pairs, &a.path.display().to_string(), f);
        }
    }
    for a in run.of_kind(ArtifactKind::MlflowParam) {
        let Some((_, key)) = crate::metrics::mlflow::param_key(&a.path) else {
            continue;
        };
        if let Ok(v) = crate::metrics::mlflow::read_param(&a.path) {
            config_pairs_facts(&[(key, v)], &a.path.display().to_string(), f);
        }
    }
}

/// A pickled scalar as text (numbers, strings, booleans).
fn plain(v: &crate::tensors::Value) -> Option<String> {
    use crate::tensors::Value;
    match v {
        Value::Bool(b) => Some(b.to_string()),
        Value::Int(i) => Some(i.to_string()),
        Value::Float(x) => Some(x.to_string()),
        other => other.as_str().map(str::to_string),
    }
}

/// Common config keys mapped to facts (never over a fact already known).
fn config_pairs_facts(pairs: &[(String, String)], file: &str, f: &mut Facts) {
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(pk, _)| pk == k)
            .map(|(_, v)| v.as_str())
    };
    for (k, v) in pairs {
        let numeric = v.parse::<f64>().is_ok_and(f64::is_finite);
        let key = match k.as_str() {
            // Ultralytics names its initial LR `lr0`.
            "lr" | "learning_rate" | "lr0" if numeric => "lr_max",
            "epochs" | "max_epochs" | "num_train_epochs" if numeric && !v.starts_with('-') => {
                "epochs"
            }
            "precision" => {
                if let Some(p) = precision_of(v) {
                    f.set_artifact_if_absent("precision", p, file);
                }
                continue;
            }
            "accumulate_grad_batches" if numeric => "accum_steps",
            "warmup_steps" | "warmup_iters" | "num_warmup_steps" if numeric => "warmup_steps",
            "max_steps" | "max_iters" | "total_steps" | "num_training_steps"
                if numeric && !v.starts_with('-') =>
            {
                "total_steps"
            }
            "vocab_size" if numeric => "vocab_size",
            "num_classes" | "num_labels" if numeric => "num_classes",
            "grad_clip" | "max_grad_norm" | "gradient_clip_val" if numeric => "max_grad_norm",
            "gradient_accumulation_steps" | "accum_steps" | "grad_accum_steps" if numeric => {
                "accum_steps"
            }
            // nanoGPT: 'scratch', 'resume' or a pretrained model's name.
            "init_from" if !numeric => "init_from",
            // HF's `problem_type`: single_label_classification, multi_label_classification …
            "problem_type" | "task" if !numeric => "task",
            "block_size"
            | "n_positions"
            | "max_position_embeddings"
            | "n_ctx"
            | "max_seq_length"
            | "seq_len"
                if numeric =>
            {
                "context"
            }
            "dtype" | "mixed_precision" | "amp_dtype" => {
                if let Some(p) = precision_of(v) {
                    f.set_artifact_if_absent("precision", p, file);
                }
                continue;
            }
            // timm's args.yaml and many scripts' configs: `sched: cosine` beside a `warmup`
            // whose unit (epochs, steps, a ratio) is not said; kept apart from `schedule`,
            // whose warmup and length the curve fit relies on.
            "sched" | "lr_sched" | "scheduler" | "lr_scheduler" if !numeric => "sched",
            // CosineAnnealingLR's period, in scheduler steps (epochs, or optimizer steps).
            // (`T_max`, `t_max_epochs`, `cosine_t_max`: any key naming T_max.)
            k if numeric && !v.starts_with('-') && names_t_max(k) => "t_max",
            "schedule" | "lr_scheduler_type" | "lr_schedule" if !numeric => {
                let s = v.to_lowercase();
                let sched = if s.contains("cos") {
                    "warmup_cosine"
                } else if s.contains("linear") {
                    "warmup_linear"
                } else if s.contains("const") {
                    "constant"
                } else {
                    continue;
                };
                f.set_artifact_if_absent("schedule", sched, file);
                continue;
            }
            _ => continue,
        };
        f.set_artifact_if_absent(key, v, file);
    }
    // nanoGPT: `decay_lr` true means linear warmup then cosine decay to min_lr.
    if get("decay_lr") == Some("true") && get("warmup_iters").is_some() {
        f.set_artifact_if_absent("schedule", "warmup_cosine", file);
    }
}

/// A config key that names a cosine schedule's period T_max (`T_max`, `t_max`, `tmax`,
/// `t_max_epochs`, `cosine_t_max`), by its words.
fn names_t_max(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    let words: Vec<&str> = k.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    words.contains(&"tmax") || words.windows(2).any(|w| w == ["t", "max"])
}

/// A precision as the frameworks write it: Lightning `16-mixed` / `bf16-mixed` / `32`,
/// accelerate `fp16` / `bf16` / `no`, nanoGPT's `dtype` `float16` / `bfloat16` / `float32`.
pub(crate) fn precision_of(v: &str) -> Option<&'static str> {
    let v = v.trim().trim_matches(['"', '\'']).to_ascii_lowercase();
    let v = v.strip_prefix("torch.").unwrap_or(&v);
    if v.contains("bf16") || v.contains("bfloat16") {
        Some("bf16")
    } else if v.starts_with("16") || v.contains("fp16") || v.contains("float16") || v == "half" {
        Some("fp16")
    } else if v.starts_with("32") || v.contains("fp32") || v.contains("float32") || v == "no" {
        Some("fp32")
    } else {
        None
    }
}

/// The root folder's file of this kind, else the one with the largest step (the newest
/// checkpoint's).
fn newest_of_kind(run: &Run, kind: ArtifactKind) -> Option<&Path> {
    let all = run.of_kind(kind);
    let base = run.base();
    all.iter()
        .find(|a| a.path.parent() == Some(base))
        .or_else(|| {
            all.iter()
                .max_by_key(|a| (a.step, std::cmp::Reverse(&a.path)))
        })
        .map(|a| a.path.as_path())
}

/// HF `lr_scheduler_type` → the `schedule` fact (None where no fact value fits).
fn schedule_of_hf(kind: &str, kwargs: Option<&crate::tensors::Value>) -> Option<&'static str> {
    use crate::tensors::lookup;
    let kw = |k: &str| kwargs.and_then(|v| lookup(v, k)).and_then(|v| v.as_f64());
    match kind {
        "linear" => Some("warmup_linear"),
        // One cosine cycle down to 0 (restarts default to a single cycle).
        "cosine" => Some("warmup_cosine"),
        "cosine_with_restarts" if kw("num_cycles").unwrap_or(1.0) == 1.0 => Some("warmup_cosine"),
        // Power 1 down to lr_end ≈ 0 is the linear schedule.
        "polynomial" if kw("power").unwrap_or(1.0) == 1.0 => Some("warmup_linear"),
        // HF's constant_with_warmup is a linear ramp then lr_max: a constant schedule with
        // warmup_steps (fitting it this way also passes logs that miss the short ramp).
        "constant" | "constant_with_warmup" => Some("constant"),
        _ => None,
    }
}

/// Facts from HF's `training_args.bin` (a pickled `TrainingArguments`, read without running
/// it): `learning_rate` → lr_max, `warmup_steps` (or `warmup_ratio` × max_steps) →
/// warmup_steps, `lr_scheduler_type` → schedule, `gradient_accumulation_steps` → accum_steps,
/// `max_grad_norm`, `max_steps` → total_steps. Facts already set (trainer state) are kept.
fn training_args_facts(path: &Path, f: &mut Facts) {
    if let Ok(v) = crate::tensors::read_pickled_dict(path) {
        training_args_value_facts(&v, &path.display().to_string(), f);
    }
}

fn training_args_value_facts(v: &crate::tensors::Value, file: &str, f: &mut Facts) {
    use crate::tensors::lookup;
    let num = |k: &str| {
        lookup(v, k)
            .and_then(|x| x.as_f64())
            .filter(|x| x.is_finite())
    };
    if num("learning_rate").is_none() && lookup(v, "lr_scheduler_type").is_none() {
        return; // not a TrainingArguments
    }
    // The config class says which trainer wrote it (`SFTConfig`, `DPOConfig`, `GRPOConfig`).
    if let crate::tensors::Value::Object { class, .. } = v {
        f.set_artifact_if_absent("args_class", &class.1, file);
    }
    let args_max = num("max_steps").filter(|x| *x > 0.0);
    let total = args_max.or_else(|| f.f64("total_steps").filter(|x| *x > 0.0));
    let mut set = |k: &str, val: String| f.set_artifact_if_absent(k, &val, file);
    if let Some(lr) = num("learning_rate").filter(|x| *x > 0.0) {
        set("lr_max", lr.to_string());
    }
    if let Some(a) = num("gradient_accumulation_steps").filter(|x| *x >= 1.0) {
        set("accum_steps", (a as u64).to_string());
    }
    if let Some(g) = num("max_grad_norm").filter(|x| *x > 0.0) {
        set("max_grad_norm", g.to_string());
    }
    if let Some(m) = args_max {
        set("total_steps", (m as u64).to_string());
    }
    let flag = |k: &str| lookup(v, k).and_then(|x| x.as_bool()) == Some(true);
    if flag("fp16") {
        set("precision", "fp16".into());
    } else if flag("bf16") {
        set("precision", "bf16".into());
    }
    let kind = lookup(v, "lr_scheduler_type")
        .and_then(|x| x.as_str())
        .map(|s| s.trim().to_ascii_lowercase());
    let schedule = kind
        .as_deref()
        .and_then(|k| schedule_of_hf(k, lookup(v, "lr_scheduler_kwargs")));
    if let Some(s) = schedule {
        set("schedule", s.to_string());
    }
    // HF: warmup_steps ≥ 1 counts steps; in (0, 1) (transformers 5) or warmup_ratio (4.x) is
    // a fraction of the total steps, rounded up. A plain constant schedule ignores warmup.
    let ws = num("warmup_steps").filter(|x| *x >= 0.0);
    let ratio = num("warmup_ratio").filter(|x| *x > 0.0);
    let warmup = if kind.as_deref() == Some("constant") {
        Some(0.0)
    } else {
        match (ws, ratio) {
            (Some(w), _) if w >= 1.0 => Some(w.floor()),
            (Some(w), _) if w > 0.0 => total.map(|t| (t * w).ceil()),
            (_, Some(r)) => total.map(|t| (t * r).ceil()),
            (Some(_), None) => Some(0.0),
            (None, None) => None,
        }
    };
    if let Some(w) = warmup {
        set("warmup_steps", (w as u64).to_string());
    }
}

/// `lr_max` from a torch LR scheduler's state (`scheduler.pt`): its `base_lrs` (the LR each
/// param group was built with), when all groups share one; CyclicLR's `max_lrs`. Skipped for
/// OneCycleLR, whose base LR is max_lr / div_factor.
fn scheduler_facts(path: &Path, f: &mut Facts) {
    if f.get("lr_max").is_some() {
        return;
    }
    if let Ok(v) = crate::tensors::read_pickled_dict(path) {
        scheduler_value_facts(&v, &path.display().to_string(), f);
    }
}

fn scheduler_value_facts(v: &crate::tensors::Value, file: &str, f: &mut Facts) {
    use crate::tensors::lookup;
    if lookup(v, "_schedule_phases").is_some() {
        return;
    }
    let lrs: Vec<f64> = lookup(v, "max_lrs")
        .or_else(|| lookup(v, "base_lrs"))
        .and_then(|x| x.as_seq())
        .map(|s| s.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default();
    let Some(&first) = lrs.first() else { return };
    if first > 0.0
        && first.is_finite()
        && lrs.iter().all(|x| (x - first).abs() <= 1e-12 * first.abs())
    {
        f.set_artifact_if_absent("lr_max", &first.to_string(), file);
    }
}

/// Top-level `key: scalar` lines of a Lightning `hparams.yaml` (no YAML parser needed for
/// these few keys); nested blocks are ignored.
fn hparams_facts(path: &Path, f: &mut Facts) {
    let Ok(text) = crate::limits::read_text_file(path).map(String::from_utf8) else {
        return;
    };
    let Ok(text) = text else {
        return;
    };
    // A run config's top-level `key: value` lines (Lightning `hparams.yaml`, Ultralytics and
    // timm `args.yaml`): the same keys as any logged config.
    let pairs: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '-', '#']))
        .filter_map(|line| {
            let (k, v) = line.split_once(':')?;
            let v = v.trim().trim_matches(['"', '\'']);
            (!v.is_empty()).then(|| (k.trim().to_string(), v.to_string()))
        })
        .collect();
    config_pairs_facts(&pairs, &path.display().to_string(), f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensors::Value;

    #[test]
    fn keys_naming_a_cosine_period_are_read_by_their_words() {
        for k in [
            "T_max",
            "t_max",
            "tmax",
            "t_max_epochs",
            "cosine_t_max",
            "lr.T_max",
        ] {
            assert!(super::names_t_max(k), "{k}");
        }
        for k in ["max_steps", "t_mult", "batch_max", "limit_train_batches"] {
            assert!(!super::names_t_max(k), "{k}");
        }
    }

    #[test]
    fn a_model_card_naming_its_base_makes_the_run_a_fine_tune() {
        let d = tempfile::tempdir().unwrap();
        let card = |base: &str| {
            format!("# Model Card\n\nThis model is a fine-tuned version of [{base}](https://huggingface.co/{base}).\n")
        };
        std::fs::write(d.path().join("README.md"), card("Qwen/Qwen2.5-0.5B")).unwrap();
        std::fs::write(d.path().join("train.log"), "step 1 loss 2.0\n").unwrap();
        let f = facts_from_artifacts(&Run::discover(d.path()).unwrap());
        assert_eq!(f.bool("from_scratch"), Some(false));
        assert_eq!(f.get("base_model"), Some("Qwen/Qwen2.5-0.5B"));
        // TRL writes "[None]" for a model built from scratch: no fact.
        std::fs::write(d.path().join("README.md"), card("None")).unwrap();
        let f = facts_from_artifacts(&Run::discover(d.path()).unwrap());
        assert_eq!(f.bool("from_scratch"), None);
    }

    #[test]
    fn an_adapter_config_names_its_base_even_as_a_local_path() {
        let d = tempfile::tempdir().unwrap();
        for (written, want) in [
            ("/data/models/Llama-2-7b-hf/", "Llama-2-7b-hf"),
            ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
        ] {
            std::fs::write(
                d.path().join("adapter_config.json"),
                format!(r#"{{"peft_type": "LORA", "r": 8, "lora_alpha": 16, "base_model_name_or_path": "{written}"}}"#),
            )
            .unwrap();
            std::fs::write(d.path().join("train.log"), "step 1 loss 2.0\n").unwrap();
            let f = facts_from_artifacts(&Run::discover(d.path()).unwrap());
            assert_eq!(f.get("base_model"), Some(want), "{written}");
            assert_eq!(f.bool("from_scratch"), Some(false));
        }
    }

    /// A pickled `TrainingArguments`-like object: a class with a BUILD state dict.
    fn args_object(fields: &[(&str, Value)]) -> Value {
        Value::Object {
            class: (
                "transformers.training_args".into(),
                "TrainingArguments".into(),
            ),
            args: Vec::new(),
            state: Some(Box::new(Value::Dict(
                fields
                    .iter()
                    .map(|(k, v)| (Value::Str(k.to_string()), v.clone()))
                    .collect(),
            ))),
        }
    }

    fn sched_type(s: &str) -> Value {
        Value::Object {
            class: ("transformers.trainer_utils".into(), "SchedulerType".into()),
            args: vec![Value::Str(s.into())],
            state: None,
        }
    }

    #[test]
    fn the_precision_is_read_as_each_framework_writes_it() {
        let v = args_object(&[
            ("learning_rate", Value::Float(2e-5)),
            ("fp16", Value::Bool(true)),
            ("bf16", Value::Bool(false)),
        ]);
        let mut f = Facts::new();
        training_args_value_facts(&v, "training_args.bin", &mut f);
        assert_eq!(f.get("precision"), Some("fp16"));
        for (written, want) in [
            ("16-mixed", Some("fp16")),
            ("bf16-mixed", Some("bf16")),
            ("32-true", Some("fp32")),
            ("32", Some("fp32")),
            ("bfloat16", Some("bf16")),
            ("float16", Some("fp16")),
            ("torch.float32", Some("fp32")),
            ("no", Some("fp32")),
            ("fp8", None),
        ] {
            assert_eq!(precision_of(written), want, "{written}");
        }
        let mut f = Facts::new();
        config_pairs_facts(&[("dtype".into(), "bfloat16".into())], "ckpt.pt", &mut f);
        assert_eq!(f.get("precision"), Some("bf16"));
    }

    #[test]
    fn training_args_give_lr_warmup_schedule_accum() {
        // transformers 4.x: warmup_ratio × max_steps, rounded up; linear → warmup_linear.
        let v = args_object(&[
            ("learning_rate", Value::Float(3e-4)),
            ("lr_scheduler_type", sched_type("linear")),
            ("warmup_steps", Value::Int(0)),
            ("warmup_ratio", Value::Float(0.03)),
            ("max_steps", Value::Int(1000)),
            ("gradient_accumulation_steps", Value::Int(8)),
        ]);
        let mut f = Facts::new();
        training_args_value_facts(&v, "training_args.bin", &mut f);
        assert_eq!(f.f64("lr_max"), Some(3e-4));
        assert_eq!(f.get("schedule"), Some("warmup_linear"));
        assert_eq!(f.u64("warmup_steps"), Some(30));
        assert_eq!(f.u64("accum_steps"), Some(8));
        assert_eq!(f.u64("total_steps"), Some(1000));

        // transformers 5: a fractional warmup_steps is a ratio of the trainer state's total.
        let v = args_object(&[
            ("learning_rate", Value::Float(1e-3)),
            ("lr_scheduler_type", sched_type("cosine")),
            ("warmup_steps", Value::Float(0.1)),
            ("max_steps", Value::Int(-1)),
        ]);
        let mut f = Facts::new();
        f.set_artifact("total_steps", "450", "trainer_state.json");
        training_args_value_facts(&v, "training_args.bin", &mut f);
        assert_eq!(f.get("schedule"), Some("warmup_cosine"));
        assert_eq!(f.u64("warmup_steps"), Some(45));

        // constant_with_warmup → constant with its warmup; plain constant ignores warmup;
        // an unknown scheduler sets no schedule; user facts still win.
        for (kind, sched, warm) in [
            ("constant_with_warmup", Some("constant"), 100),
            ("constant", Some("constant"), 0),
            ("inverse_sqrt", None, 100),
        ] {
            let v = args_object(&[
                ("learning_rate", Value::Float(2e-5)),
                ("lr_scheduler_type", sched_type(kind)),
                ("warmup_steps", Value::Int(100)),
            ]);
            let mut f = Facts::from_args(&["lr_max=0.5"]).unwrap();
            training_args_value_facts(&v, "training_args.bin", &mut f);
            assert_eq!(f.get("schedule"), sched, "{kind}");
            assert_eq!(f.u64("warmup_steps"), Some(warm), "{kind}");
            assert_eq!(f.f64("lr_max"), Some(0.5), "{kind}: the user's fact wins");
        }
        // Not a TrainingArguments: nothing.
        let mut f = Facts::new();
        training_args_value_facts(&Value::Dict(Vec::new()), "x.bin", &mut f);
        assert_eq!(f.iter().count(), 0);
    }

    #[test]
    fn scheduler_base_lrs_give_lr_max_when_unambiguous() {
        let lrs = |xs: &[f64]| Value::List(xs.iter().map(|x| Value::Float(*x)).collect());
        let dict = |kv: Vec<(&str, Value)>| {
            Value::Dict(
                kv.into_iter()
                    .map(|(k, v)| (Value::Str(k.into()), v))
                    .collect(),
            )
        };
        let mut f = Facts::new();
        scheduler_value_facts(
            &dict(vec![("base_lrs", lrs(&[1e-3, 1e-3]))]),
            "s.pt",
            &mut f,
        );
        assert_eq!(f.f64("lr_max"), Some(1e-3));
        // Groups with different LRs: which one the logs show is unknown.
        let mut f = Facts::new();
        scheduler_value_facts(
            &dict(vec![("base_lrs", lrs(&[1e-5, 1e-3]))]),
            "s.pt",
            &mut f,
        );
        assert_eq!(f.get("lr_max"), None);
        // OneCycleLR: base_lrs are max_lr / div_factor.
        let mut f = Facts::new();
        let one_cycle = dict(vec![
            ("base_lrs", lrs(&[4e-5])),
            ("_schedule_phases", Value::List(Vec::new())),
        ]);
        scheduler_value_facts(&one_cycle, "s.pt", &mut f);
        assert_eq!(f.get("lr_max"), None);
        // CyclicLR: the top of the cycle.
        let mut f = Facts::new();
        let cyclic = dict(vec![("base_lrs", lrs(&[1e-4])), ("max_lrs", lrs(&[1e-2]))]);
        scheduler_value_facts(&cyclic, "s.pt", &mut f);
        assert_eq!(f.f64("lr_max"), Some(1e-2));
    }
}
