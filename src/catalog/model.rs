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
}

impl Vocabulary {
    /// Add another file's groups and cues after these.
    pub fn extend(&mut self, other: Vocabulary) {
        self.synonyms.extend(other.synonyms);
        for (d, words) in other.cues {
            self.cues.entry(d).or_default().extend(words);
        }
    }
}
