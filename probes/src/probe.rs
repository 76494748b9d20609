//! The probe contract: a probe is a function of (run artifacts, facts, thresholds, device)
//! returning [`Verdict`]s — measured values, a status, the branch it proposes for a tree node,
//! and evidence (file, step range, tensor name). Probes never panic on odd data and say
//! `skip` with a reason when their inputs are absent.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::device::Compute;
use crate::facts::Facts;
use crate::run::Run;

/// Outcome severity, ordered most important first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Fail,
    Warn,
    Pass,
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Pass => "pass",
            Status::Skip => "skip",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A path as JSON text: names that are not UTF-8 are written lossily (U+FFFD), never an error.
pub fn lossy_opt_path<S: serde::Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_str(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

/// Where a measurement came from.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Evidence {
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "lossy_opt_path"
    )]
    pub file: Option<PathBuf>,
    /// Inclusive step range the value was computed over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<(u64, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Evidence {
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Evidence {
            file: Some(path.into()),
            ..Default::default()
        }
    }
    pub fn steps(mut self, a: u64, b: u64) -> Self {
        self.steps = Some((a, b));
        self
    }
    pub fn tensor(mut self, name: impl Into<String>) -> Self {
        self.tensor = Some(name.into());
        self
    }
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
    /// One-line rendering: `file [steps a..b] tensor (note)`.
    pub fn render(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = &self.file {
            parts.push(f.display().to_string());
        }
        if let Some((a, b)) = self.steps {
            parts.push(if a == b {
                format!("step {a}")
            } else {
                format!("steps {a}..{b}")
            });
        }
        if let Some(t) = &self.tensor {
            parts.push(t.clone());
        }
        if let Some(n) = &self.note {
            parts.push(format!("({n})"));
        }
        parts.join(" ")
    }
}

/// One answer of a probe, pointing at one catalog entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// Catalog entry id (e.g. `S1.1`, `O17`) this verdict is about.
    pub entry: String,
    pub status: Status,
    /// Branch label for tree nodes (e.g. `pass`, `high`, `low`, `constant_nonzero`, `skip`).
    pub outcome: String,
    /// Human-readable measured value, e.g. `loss(step 1) = 28.70`.
    pub measured: String,
    /// Human-readable expectation, e.g. `ln 512 ± 0.5 = [5.74, 6.74]`.
    pub expected: String,
    pub message: String,
    pub evidence: Vec<Evidence>,
    /// Named numeric measurements (for JSON, charts, transcripts).
    pub values: BTreeMap<String, f64>,
}

impl Verdict {
    pub fn new(entry: &str, status: Status, outcome: &str) -> Self {
        Verdict {
            entry: entry.to_string(),
            status,
            outcome: outcome.to_string(),
            measured: String::new(),
            expected: String::new(),
            message: String::new(),
            evidence: Vec::new(),
            values: BTreeMap::new(),
        }
    }
    /// A `skip` with the reason (e.g. `needs fact vocab_size`, `no loss series found`).
    pub fn skip(entry: &str, reason: impl Into<String>) -> Self {
        let mut v = Verdict::new(entry, Status::Skip, "skip");
        v.message = reason.into();
        v
    }
    pub fn measured(mut self, s: impl Into<String>) -> Self {
        self.measured = s.into();
        self
    }
    pub fn expected(mut self, s: impl Into<String>) -> Self {
        self.expected = s.into();
        self
    }
    pub fn message(mut self, s: impl Into<String>) -> Self {
        self.message = s.into();
        self
    }
    pub fn evidence(mut self, e: Evidence) -> Self {
        self.evidence.push(e);
        self
    }
    pub fn value(mut self, k: &str, v: f64) -> Self {
        self.values.insert(k.to_string(), v);
        self
    }
}

/// A probe's thresholds, read from the playbook (never hard-coded in the probe).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    map: BTreeMap<String, ParamValue>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Num(f64),
    Text(String),
}

/// A threshold the probe needs is missing from the playbook or has the wrong type.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("threshold `{key}`: {msg}")]
pub struct ParamError {
    pub key: String,
    pub msg: String,
}

impl Params {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn with(mut self, key: &str, v: f64) -> Self {
        self.map.insert(key.to_string(), ParamValue::Num(v));
        self
    }
    pub fn with_text(mut self, key: &str, v: &str) -> Self {
        self.map
            .insert(key.to_string(), ParamValue::Text(v.to_string()));
        self
    }
    pub fn insert(&mut self, key: &str, v: ParamValue) {
        self.map.insert(key.to_string(), v);
    }
    pub fn f64(&self, key: &str) -> Result<f64, ParamError> {
        match self.map.get(key) {
            Some(ParamValue::Num(v)) => Ok(*v),
            Some(ParamValue::Text(_)) => Err(ParamError {
                key: key.into(),
                msg: "expected a number".into(),
            }),
            None => Err(ParamError {
                key: key.into(),
                msg: "missing from the playbook".into(),
            }),
        }
    }
    pub fn text(&self, key: &str) -> Result<&str, ParamError> {
        match self.map.get(key) {
            Some(ParamValue::Text(v)) => Ok(v),
            Some(ParamValue::Num(_)) => Err(ParamError {
                key: key.into(),
                msg: "expected text".into(),
            }),
            None => Err(ParamError {
                key: key.into(),
                msg: "missing from the playbook".into(),
            }),
        }
    }
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(|s| s.as_str())
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ParamValue)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// Everything a probe may look at.
pub struct ProbeCtx<'a> {
    pub run: &'a Run,
    pub facts: &'a Facts,
    /// What kind of run this is ([`crate::profile::Profile`]), computed once per run.
    pub profile: &'a crate::profile::Profile,
    pub params: &'a Params,
    pub compute: &'a Compute,
    /// `--baseline RUN`, for comparisons (grad-norm ratio, seed spread).
    pub baseline: Option<&'a Run>,
}

/// What only code knows about a probe: the entries it answers, the inputs it reads, the
/// threshold keys it takes and the outcomes it can give. Its question and threshold values
/// live in `playbook/probes.yaml` only ([`crate::playbook::ProbeDef`]).
pub struct ProbeSpec {
    pub id: &'static str,
    /// Catalog entries it answers (first = primary).
    pub entries: &'static [&'static str],
    /// What it reads, e.g. `metrics:loss`, `fact:vocab_size`, `checkpoint`, `optimizer`, `batch:labels`.
    pub inputs: &'static [&'static str],
    /// Threshold keys it reads from the playbook.
    pub params: &'static [&'static str],
    /// Branch labels it can return (always includes `pass` and `skip`).
    pub outcomes: &'static [&'static str],
    pub run: fn(&ProbeCtx) -> Vec<Verdict>,
}

impl std::fmt::Debug for ProbeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProbeSpec").field("id", &self.id).finish()
    }
}

/// Run one probe, turning a threshold error or a panic-free empty result into a `skip`.
pub fn run_probe(spec: &ProbeSpec, ctx: &ProbeCtx) -> Vec<Verdict> {
    for key in spec.params {
        if let Err(e) = ctx
            .params
            .f64(key)
            .map(|_| ())
            .or_else(|_| ctx.params.text(key).map(|_| ()))
        {
            return vec![Verdict::skip(spec.entries[0], format!("playbook: {e}"))];
        }
    }
    let out = (spec.run)(ctx);
    if out.is_empty() {
        vec![Verdict::skip(spec.entries[0], "probe produced no answer")]
    } else {
        out
    }
}
