//! Stable-Baselines3 model archives (`ppo_cartpole.zip`, `rl_model_10000_steps.zip`): a zip of
//! torch files (`policy.pth` = weights, `policy.optimizer.pth` = optimizer state,
//! `pytorch_variables.pth`) beside `data`, a JSON of the algorithm's attributes
//! (`num_timesteps`, `_n_updates`, learning_rate, n_steps, clip_range …). Schedules that SB3
//! serialises with cloudpickle are read, when constant, through the safe pickle VM.
//! Members are read only when stored (never inflated) and `data` only under the text cap.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::pickle::{self, lookup, Value};
use super::torchzip::{entry_bytes, open_archive, text_member};
use crate::error::Result;

/// The policy weights member.
pub const POLICY: &str = "policy.pth";
/// The policy's optimizer state member.
pub const OPTIMIZER: &str = "policy.optimizer.pth";
/// The JSON of the algorithm's attributes.
pub const DATA: &str = "data";
/// Longest serialized (base64) schedule decoded.
const MAX_SERIALIZED: usize = 1 << 20;

/// Hyper-parameters read from `data`, with the fact key each is exposed under.
pub const HYPERPARAMETERS: &[(&str, &str)] = &[
    ("learning_rate", "lr_max"),
    ("n_steps", "n_steps"),
    ("batch_size", "batch_size"),
    ("n_epochs", "n_epochs"),
    ("clip_range", "clip_range"),
    ("clip_range_vf", "clip_range_vf"),
    ("ent_coef", "ent_coef"),
    ("vf_coef", "vf_coef"),
    // `gamma` is already the step-LR decay factor among facts.
    ("gamma", "discount_gamma"),
    ("gae_lambda", "gae_lambda"),
    ("max_grad_norm", "max_grad_norm"),
    ("normalize_advantage", "normalize_advantage"),
    ("target_kl", "target_kl"),
    ("n_envs", "n_envs"),
    ("buffer_size", "buffer_size"),
    ("learning_starts", "learning_starts"),
    ("tau", "tau"),
    ("gradient_steps", "gradient_steps"),
    ("target_update_interval", "target_update_interval"),
    ("exploration_fraction", "exploration_fraction"),
    ("use_sde", "use_sde"),
    ("_total_timesteps", "total_timesteps"),
];

/// What an SB3 archive's `data` says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sb3Archive {
    pub path: PathBuf,
    /// Environment steps taken (`num_timesteps`): the archive's step.
    pub num_timesteps: Option<u64>,
    /// Gradient updates done (`_n_updates`).
    pub n_updates: Option<u64>,
    /// The timestep this archive's `learn()` call started from (`_num_timesteps_at_start`): 0
    /// for a fresh run, the archive's count before it for a resumed one
    /// (`reset_num_timesteps=False`).
    pub timesteps_at_start: Option<u64>,
    /// `_stable_baselines3_version`.
    pub version: Option<String>,
    /// The policy class (`ActorCriticPolicy` …), from `policy_class.__module__`/its pickle.
    pub policy_class: Option<String>,
    /// Hyper-parameter name → value as text (`learning_rate` → `0.0003`); a schedule that is
    /// not constant reads `schedule`.
    pub hyperparameters: BTreeMap<String, String>,
    /// Which members the archive holds.
    pub members: Vec<String>,
}

/// Whether a zip's member names are an SB3 model archive.
pub fn is_sb3_members<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    let (mut policy, mut data) = (false, false);
    for n in names {
        policy |= n == POLICY;
        data |= n == DATA;
    }
    policy && data
}

/// The key SB3 archive reads share in the parse memo ([`super::memo`]).
pub const MEMO_KEY: &str = "sb3 archive";

/// Reads an SB3 archive's `data` (and version). A file that is not one is a one-line error.
/// Parsed once per file for the process: the run's checkpoints, its facts, its profile and
/// `inspect`'s explanation all ask for the same archive.
pub fn read(path: impl AsRef<Path>) -> Result<Sb3Archive> {
    let path = path.as_ref();
    super::memo::read_shared(MEMO_KEY, path, || parse(path)).map(|a| (*a).clone())
}

fn parse(path: &Path) -> Result<Sb3Archive> {
    let (_file, map, entries) = open_archive(
        path,
        |e| is_sb3_members(e.keys().map(String::as_str)),
        "not a Stable-Baselines3 archive (no policy.pth and data members)",
    )?;
    let data = text_member(path, &map, DATA, entries[DATA])?;
    let json = crate::pyjson::parse_py_json(path, data)?;
    let mut out = Sb3Archive {
        path: path.to_path_buf(),
        ..Default::default()
    };
    let mut members: Vec<String> = entries.keys().cloned().collect();
    members.sort();
    out.members = members;
    if let Some(v) = entries.get("_stable_baselines3_version") {
        if let Ok(b) = entry_bytes(path, &map, "_stable_baselines3_version", *v) {
            let s = String::from_utf8_lossy(b.get(..64).unwrap_or(b))
                .trim()
                .to_string();
            out.version = Some(s).filter(|s| !s.is_empty());
        }
    }
    let u = |k: &str| json.get(k).and_then(serde_json::Value::as_u64);
    out.num_timesteps = u("num_timesteps");
    out.n_updates = u("_n_updates");
    out.timesteps_at_start = u("_num_timesteps_at_start");
    out.policy_class = json
        .get("policy_class")
        .and_then(|p| p.get(":serialized:"))
        .and_then(serde_json::Value::as_str)
        .and_then(unpickle_b64)
        .and_then(|v| match v {
            Value::Global { name, .. } => Some(name),
            _ => None,
        });
    for (k, _) in HYPERPARAMETERS {
        if let Some(v) = json.get(*k).and_then(hyper_value) {
            out.hyperparameters.insert(k.to_string(), v);
        }
    }
    crate::tensors::intact(path, map.damaged())?;
    Ok(out)
}

/// A hyper-parameter as text: a JSON number or bool, or a constant serialized schedule.
fn hyper_value(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Object(o) => {
            // SB3 ≥ 2.4: `"value_schedule": "ConstantSchedule(val=0.2)"` beside the pickle.
            if let Some(c) = o
                .get("value_schedule")
                .and_then(serde_json::Value::as_str)
                .and_then(constant_text)
            {
                return Some(c);
            }
            let v = o
                .get(":serialized:")
                .and_then(serde_json::Value::as_str)
                .and_then(unpickle_b64)?;
            Some(constant_schedule(&v).map_or_else(|| "schedule".to_string(), |c| c.to_string()))
        }
        _ => None,
    }
}

/// `ConstantSchedule(val=0.2)` → `0.2`.
fn constant_text(s: &str) -> Option<String> {
    let inner = s.strip_prefix("ConstantSchedule(")?.strip_suffix(')')?;
    let val = inner.strip_prefix("val=")?;
    val.parse::<f64>().ok().map(|x| x.to_string())
}

/// The value of a `ConstantSchedule(val=…)` (also wrapped in a `FloatSchedule`).
fn constant_schedule(v: &Value) -> Option<f64> {
    let mut cur = v;
    for _ in 0..4 {
        match cur {
            Value::Float(f) => return Some(*f),
            Value::Int(i) => return Some(*i as f64),
            Value::Object { class, .. } if class.1 == "ConstantSchedule" => {
                return lookup(cur, "val").and_then(Value::as_f64);
            }
            Value::Object { class, .. } if class.1 == "FloatSchedule" => {
                cur = lookup(cur, "value_schedule")?;
            }
            _ => return None,
        }
    }
    None
}

fn unpickle_b64(s: &str) -> Option<Value> {
    if s.len() > MAX_SERIALIZED {
        return None;
    }
    pickle::parse(&base64_decode(s)?).ok()
}

/// Standard base64 (padding optional, whitespace skipped).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        } as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_constant_schedules() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGk").unwrap(), b"hi");
        assert_eq!(
            constant_text("ConstantSchedule(val=0.2)").as_deref(),
            Some("0.2")
        );
        assert_eq!(constant_text("LinearSchedule(start=1, end=0)"), None);
        // FloatSchedule(value_schedule=ConstantSchedule(val=0.2)) as SB3 2.x cloudpickles it.
        let ser = "gAWVeQAAAAAAAACMHnN0YWJsZV9iYXNlbGluZXMzLmNvbW1vbi51dGlsc5SMDUZsb2F0U2NoZWR1bGWUk5QpgZR9lIwOdmFsdWVfc2NoZWR1bGWUaACMEENvbnN0YW50U2NoZWR1bGWUk5QpgZR9lIwDdmFslEc/yZmZmZmZmnNic2Iu";
        let v = unpickle_b64(ser).unwrap();
        assert_eq!(constant_schedule(&v), Some(0.2));
        let j: serde_json::Value = serde_json::json!({":serialized:": ser});
        assert_eq!(hyper_value(&j).as_deref(), Some("0.2"));
        assert_eq!(
            hyper_value(&serde_json::json!(0.0003)).as_deref(),
            Some("0.0003")
        );
    }
}
