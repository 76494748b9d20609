//! A probe's definition as the playbook states it (`playbook/probes.yaml`: its question,
//! entries, priority and thresholds) and the one reader of it that the binary's catalog and
//! the probe tests share. Reading the playbook's files is the caller's job; this crate only
//! knows the shape of a probe's part and how thresholds become [`Params`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use crate::probe::Params;

fn lossy_path<S: serde::Serializer>(p: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// Where something was defined, for `file:line` messages.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Origin {
    #[serde(serialize_with = "lossy_path")]
    pub file: PathBuf,
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// A threshold value as written in YAML.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Threshold {
    Num(f64),
    Text(String),
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::Num(v) => write!(f, "{v}"),
            Threshold::Text(s) => f.write_str(s),
        }
    }
}

/// A probe's question and thresholds as the playbook states them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeDef {
    pub id: String,
    pub question: String,
    pub entries: Vec<String>,
    /// Lower = more likely a root cause; orders findings.
    #[serde(default = "default_priority")]
    pub priority: i32,
    /// Probes whose failures this probe's failure explains.
    #[serde(default)]
    pub explains: Vec<String>,
    #[serde(default)]
    pub thresholds: BTreeMap<String, Threshold>,
    /// The runs it judges (`any`, or phases / inits / needs); `lint` requires it. Outside
    /// them the probe skips with "not applicable: why".
    #[serde(default)]
    pub applies: Option<crate::profile::Applies>,
    #[serde(skip)]
    pub origin: Origin,
}

fn default_priority() -> i32 {
    50
}

impl ProbeDef {
    /// Thresholds as `key=value, …` for display.
    pub fn thresholds_text(&self) -> String {
        self.thresholds
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Thresholds in the form the probes crate consumes.
    pub fn params(&self) -> crate::probe::Params {
        use crate::probe::ParamValue;
        let mut p = Params::new();
        for (k, v) in &self.thresholds {
            p.insert(
                k,
                match v {
                    Threshold::Num(n) => ParamValue::Num(*n),
                    Threshold::Text(s) => ParamValue::Text(s.clone()),
                },
            );
        }
        p
    }
}

/// The `probes:` part of a playbook file (other keys are the catalog's business).
#[derive(serde::Deserialize)]
struct ProbesPart {
    #[serde(default)]
    probes: Vec<ProbeDef>,
}

/// The probe definitions of one playbook file's text, as the catalog reads them.
pub fn parse_probes(text: &str) -> Result<Vec<ProbeDef>, serde_yaml_ng::Error> {
    Ok(serde_yaml_ng::from_str::<ProbesPart>(text)?.probes)
}

/// The thresholds of every probe a playbook file defines, by id.
pub fn thresholds(text: &str) -> Result<BTreeMap<String, Params>, serde_yaml_ng::Error> {
    Ok(parse_probes(text)?
        .into_iter()
        .map(|d| (d.id.clone(), d.params()))
        .collect())
}
