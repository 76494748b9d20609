//! The catalog's data model: entries, probe definitions and where each came from.

pub use mltriage_probes::playbook::{Origin, ProbeDef, Threshold};
use std::fmt;

/// The areas entries belong to (DESIGN.md §4.1).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Domain {
    Llm,
    Vision,
    Diffusion,
    Rl,
    Vlm,
    Convergence,
    Stability,
    Systems,
    Folklore,
}

impl Domain {
    pub const ALL: [Domain; 9] = [
        Domain::Stability,
        Domain::Convergence,
        Domain::Llm,
        Domain::Vision,
        Domain::Diffusion,
        Domain::Rl,
        Domain::Vlm,
        Domain::Systems,
        Domain::Folklore,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Llm => "llm",
            Domain::Vision => "vision",
            Domain::Diffusion => "diffusion",
            Domain::Rl => "rl",
            Domain::Vlm => "vlm",
            Domain::Convergence => "convergence",
            Domain::Stability => "stability",
            Domain::Systems => "systems",
            Domain::Folklore => "folklore",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Domain::Llm => "LLM / transformer",
            Domain::Vision => "Vision",
            Domain::Diffusion => "Diffusion",
            Domain::Rl => "RL",
            Domain::Vlm => "VLM / multimodal",
            Domain::Convergence => "Convergence",
            Domain::Stability => "Stability tree",
            Domain::Systems => "Systems (memory, distributed, speed)",
            Domain::Folklore => "Folklore",
        }
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Domain {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        Domain::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown domain {s:?} (expected one of: {})",
                    Domain::ALL.map(|d| d.as_str()).join(", ")
                )
            })
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    pub title: String,
    pub url: String,
}

/// One branch of a stability question: the numeric condition and what it means.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Leaf {
    pub when: String,
    pub then: String,
}

/// Attribution of a folklore entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub author: String,
    pub title: String,
    pub url: String,
}

/// A catalog entry: symptom -> cause -> fix with the exact knobs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub id: String,
    pub domain: Domain,
    pub title: String,
    pub symptom: String,
    pub cause: String,
    pub fix: String,
    #[serde(default)]
    pub knobs: Vec<String>,
    #[serde(default)]
    pub keywords: Vec<String>,
    /// How users describe this problem in their own words (issue titles, forum questions,
    /// trimmed): searched beside the keywords, never shown as the entry's text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phrases: Vec<String>,
    #[serde(default)]
    pub errors: Vec<String>,
    #[serde(default)]
    pub refs: Vec<Reference>,
    #[serde(default)]
    pub see_also: Vec<String>,
    #[serde(default)]
    pub probes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leaves: Vec<Leaf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// What a run's artifacts show when this entry is the cause (lint requires one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
    #[serde(skip)]
    pub origin: Origin,
}

/// Search vocabulary (`playbook/synonyms.yaml`, or any playbook file): groups of phrasings
/// users treat as the same thing, and words that point at one domain.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vocabulary {
    /// Each group: words or phrases that mean the same to a user ("exploding", "blows up").
    #[serde(default)]
    pub synonyms: Vec<Vec<String>>,
    /// Domain cues: a query holding one of these words leans toward that domain.
    #[serde(default)]
    pub cues: std::collections::BTreeMap<Domain, Vec<String>>,
    /// Kinds of problem the catalog deliberately does not cover (installing packages, GPU
    /// drivers, a full disk...): a query naming one gets "no confident match" with the topic.
    #[serde(default)]
    pub outside: Vec<OutsideTopic>,
    /// Methods a run chooses to use (DPO, GRPO, LoRA, EMA ...), each a group of names for the
    /// same one: an entry whose title names one (outside parentheses) is about runs that use
    /// it, and ranks lower for a query that names none or another.
    #[serde(default)]
    pub methods: Vec<Vec<String>>,
}

/// A kind of problem outside the catalog, and phrases that name it.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutsideTopic {
    /// What to call it in the answer ("installing a package").
    pub topic: String,
    /// Phrases (matched word for word, after stemming) that name it.
    pub phrases: Vec<String>,
    /// Lists of which the query holds a member of each, anywhere, naming the topic together
    /// when no one phrase does (a serving engine and a word of speed: "the speed is slow when
    /// I use vllm").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub together: Vec<Vec<String>>,
}

impl Vocabulary {
    /// Add another file's groups and cues after these.
    pub fn extend(&mut self, other: Vocabulary) {
        self.synonyms.extend(other.synonyms);
        self.outside.extend(other.outside);
        self.methods.extend(other.methods);
        for (d, words) in other.cues {
            self.cues.entry(d).or_default().extend(words);
        }
    }
}
/// The kinds of artifact a run leaves behind that a signature can point at.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Artifact {
    /// Logged scalar series (trainer_state.json, tfevents, metrics.csv, JSONL).
    Metrics,
    /// Weights: safetensors, torch .pt/.bin, Lightning .ckpt (one or several).
    Checkpoint,
    /// Optimizer state (optimizer.pt: per-parameter state and param_groups).
    Optimizer,
    /// A dumped batch (input_ids, labels, attention_mask, pixel_values, latents…).
    Batch,
    /// Config files (config.json, scheduler configs, training_args, hparams).
    Config,
    /// Captured stdout/stderr of the run (error strings, warnings, timings).
    Log,
}

impl Artifact {
    pub const ALL: [Artifact; 6] = [
        Artifact::Metrics,
        Artifact::Checkpoint,
        Artifact::Optimizer,
        Artifact::Batch,
        Artifact::Config,
        Artifact::Log,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Artifact::Metrics => "metrics",
            Artifact::Checkpoint => "checkpoint",
            Artifact::Optimizer => "optimizer",
            Artifact::Batch => "batch",
            Artifact::Config => "config",
            Artifact::Log => "log",
        }
    }

    /// The artifact kind a probe input (`metrics:loss`, `checkpoint`, `batch:labels`) reads;
    /// `None` for facts and other non-artifact inputs.
    pub fn of_input(input: &str) -> Option<Artifact> {
        let head = input.split([':', '(', ' ']).next().unwrap_or(input);
        let head = head.trim().trim_end_matches('s');
        match head {
            "metric" => Some(Artifact::Metrics),
            "checkpoint" | "weight" | "model" => Some(Artifact::Checkpoint),
            "optimizer" => Some(Artifact::Optimizer),
            "batch" => Some(Artifact::Batch),
            "config" | "adapter_config" | "scheduler" => Some(Artifact::Config),
            "trainer_state" => Some(Artifact::Metrics),
            "log" => Some(Artifact::Log),
            _ => None,
        }
    }
}

impl fmt::Display for Artifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An entry's signature: either the artifacts that show the cause, what they show and the
/// probes that look for it, or `none` with the reason no artifact can show it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Which file, series / tensor / buffer, and what value or shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shows: Option<String>,
    /// Probes that can name this entry from that evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<String>,
    /// Why no artifact shows this cause (only visible in code, at inference, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub none: Option<String>,
}

impl Signature {
    /// True when the signature points at run artifacts (not `none`).
    pub fn has_artifacts(&self) -> bool {
        self.none.is_none() && !self.artifacts.is_empty()
    }
}
