//! Facts: what the user knows that artifacts may not say (`--fact key=value`), merged with
//! what artifacts do say (config.json, trainer_state.json, training_args.bin). Unknown keys
//! are kept and shown, never fatal.

use std::collections::BTreeMap;

pub(crate) mod extract;

pub use extract::facts_from_artifacts;
pub(crate) use extract::precision_of;

/// Keys the probes understand (DESIGN.md §4.2). Others are kept verbatim.
pub const KNOWN_KEYS: &[(&str, &str)] = &[
    (
        "schedule",
        "constant | warmup_cosine | warmup_linear | step",
    ),
    ("warmup_steps", "optimizer steps of linear warmup"),
    ("lr_max", "peak learning rate"),
    (
        "vocab_size",
        "vocabulary size V (init loss should be near ln V)",
    ),
    (
        "num_classes",
        "number of classes C (init loss should be near ln C)",
    ),
    (
        "from_scratch",
        "true | false: weights randomly initialised at step 0",
    ),
    (
        "base_model",
        "the pretrained model a fine-tune starts from (a model card says so)",
    ),
    (
        "phase",
        "sft | dpo | grpo | ppo | reward | generation | pretrain",
    ),
    ("packing", "true | false: several documents packed per row"),
    (
        "accum_steps",
        "gradient accumulation micro-batches per optimizer step",
    ),
    (
        "frozen",
        "comma-separated tensor-name prefixes that should not change",
    ),
    (
        "stage",
        "VLM training stage: 1 (projector only) | 2 (LLM + projector)",
    ),
    ("image_token_id", "token id of the image placeholder"),
    ("image_tokens_per_image", "tokens one image expands into"),
    ("max_grad_norm", "gradient clipping threshold"),
    (
        "precision",
        "fp32 | fp16 | bf16: the (mixed) precision the run trains in",
    ),
    ("context", "sequence length the run trains or infers at"),
    ("total_steps", "planned optimizer steps of the run"),
    ("epochs", "planned epochs of the run"),
    (
        "t_max",
        "CosineAnnealingLR's period T_max, in scheduler steps (epochs or optimizer steps)",
    ),
    (
        "sched",
        "the LR scheduler a config names where its warmup's units are not known (timm's and many scripts' `sched`); read only to tell a flat LR from one that should have moved",
    ),
    (
        "milestones",
        "step schedule: comma-separated steps where the LR decays",
    ),
    (
        "step_size",
        "step schedule: the LR decays every this many steps",
    ),
    (
        "gamma",
        "step schedule: decay factor per milestone (default 0.1)",
    ),
    (
        "architectures",
        "config.json architectures, e.g. BertForSequenceClassification",
    ),
    (
        "task",
        "e.g. classification | multi_label_classification | token_classification | causal_lm (init loss: ln C vs ln V)",
    ),
    (
        "claimed_effect",
        "the improvement claimed in the compared metric, in its units (seed spread)",
    ),
    ("domain", "llm | vision | diffusion | rl | vlm"),
    (
        "init",
        "scratch | pretrained | adapter: how the weights started (the run profile's init)",
    ),
    (
        "resumed_at",
        "the step a resumed run restarted at (false: not resumed)",
    ),
    (
        "framework",
        "hf_trainer | trl | lightning | accelerate | deepspeed | diffusers | nanogpt | keras | plain",
    ),
];

/// Spellings users and configs give a known key (`grad_accum_steps` is `accum_steps`).
const ALIASES: &[(&str, &str)] = &[
    ("grad_accum_steps", "accum_steps"),
    ("gradient_accumulation_steps", "accum_steps"),
    ("grad_accum", "accum_steps"),
    ("accumulation_steps", "accum_steps"),
    ("grad_clip", "max_grad_norm"),
    ("gradient_clip_val", "max_grad_norm"),
    ("clip_grad_norm", "max_grad_norm"),
    ("resumed_from", "resumed_at"),
    ("resume_step", "resumed_at"),
    ("num_labels", "num_classes"),
    ("learning_rate", "lr_max"),
    ("lr", "lr_max"),
    ("warmup", "warmup_steps"),
    ("max_steps", "total_steps"),
];

/// The key a spelling stands for (itself when it is no alias).
pub fn canonical_key(key: &str) -> &str {
    ALIASES
        .iter()
        .find(|(a, _)| *a == key)
        .map(|(_, k)| *k)
        .unwrap_or(key)
}

/// Where a fact came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "detail")]
pub enum FactSource {
    /// `--fact` on the command line, or typed in the TUI.
    User,
    /// Read from an artifact (file path as text).
    Artifact(String),
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fact {
    pub value: String,
    pub source: FactSource,
}

/// A set of facts. User facts always win over artifact facts.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Facts {
    map: BTreeMap<String, Fact>,
}

/// A `key=value` argument that is not of that form.
#[derive(Debug, thiserror::Error)]
#[error("--fact {0:?}: expected key=value")]
pub struct FactSyntaxError(pub String);

impl Facts {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse `key=value` pairs from the command line.
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Self, FactSyntaxError> {
        let mut f = Facts::new();
        for a in args {
            let a = a.as_ref();
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| FactSyntaxError(a.to_string()))?;
            let k = k.trim();
            if k.is_empty() {
                return Err(FactSyntaxError(a.to_string()));
            }
            let canon = canonical_key(k);
            if canon != k {
                // Kept under the user's spelling too, so it shows as typed.
                f.set_user(canon, v.trim());
            }
            f.set_user(k, v.trim());
        }
        Ok(f)
    }

    pub fn set_user(&mut self, key: &str, value: &str) {
        self.map.insert(
            key.to_string(),
            Fact {
                value: value.to_string(),
                source: FactSource::User,
            },
        );
    }

    /// Record a fact read from an artifact unless the user already gave it.
    pub fn set_artifact(&mut self, key: &str, value: &str, file: &str) {
        match self.map.get(key) {
            Some(Fact {
                source: FactSource::User,
                ..
            }) => {}
            _ => {
                self.map.insert(
                    key.to_string(),
                    Fact {
                        value: value.to_string(),
                        source: FactSource::Artifact(file.to_string()),
                    },
                );
            }
        }
    }

    /// Record an artifact fact only if nothing (user or artifact) set it yet.
    pub fn set_artifact_if_absent(&mut self, key: &str, value: &str, file: &str) {
        if !self.map.contains_key(key) {
            self.set_artifact(key, value, file);
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(|f| f.value.as_str())
    }

    pub fn fact(&self, key: &str) -> Option<&Fact> {
        self.map.get(key)
    }

    pub fn f64(&self, key: &str) -> Option<f64> {
        self.get(key)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite())
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        self.f64(key).filter(|v| *v >= 0.0).map(|v| v as u64)
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        match self.get(key)?.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "y" => Some(true),
            "false" | "0" | "no" | "n" => Some(false),
            _ => None,
        }
    }

    /// Comma-separated list (empty items dropped).
    pub fn list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Fact)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn is_known_key(key: &str) -> bool {
        KNOWN_KEYS.iter().any(|(k, _)| *k == key)
    }

    /// Merge `other` in; user facts of `other` override, artifact facts fill gaps.
    pub fn merge(&mut self, other: &Facts) {
        for (k, f) in other.iter() {
            match &f.source {
                FactSource::User => self.set_user(k, &f.value),
                FactSource::Artifact(file) => self.set_artifact(k, &f.value, file),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_facts_win_over_artifact_facts() {
        let mut f = Facts::from_args(&["vocab_size=512"]).unwrap();
        f.set_artifact("vocab_size", "999", "config.json");
        assert_eq!(f.u64("vocab_size"), Some(512));
        f.set_artifact("lr_max", "0.001", "training_args.bin");
        assert_eq!(f.f64("lr_max"), Some(0.001));
    }

    #[test]
    fn malformed_fact_is_a_syntax_error() {
        assert!(Facts::from_args(&["novalue"]).is_err());
        assert!(Facts::from_args(&["=x"]).is_err());
        let f = Facts::from_args(&["frozen=backbone, stem.,"]).unwrap();
        assert_eq!(f.list("frozen"), vec!["backbone", "stem."]);
    }

    #[test]
    fn common_spellings_are_understood() {
        let f = Facts::from_args(&["grad_accum_steps=8", "gradient_clip_val=1.0"]).unwrap();
        assert_eq!(f.u64("accum_steps"), Some(8));
        assert_eq!(f.f64("max_grad_norm"), Some(1.0));
        assert_eq!(f.u64("grad_accum_steps"), Some(8));
    }
}
