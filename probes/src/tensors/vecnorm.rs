//! Stable-Baselines3 `VecNormalize` pickles (`vec_normalize.pkl`,
//! `rl_model_vecnormalize_N_steps.pkl`): the running observation and return statistics
//! (`obs_rms`, `ret_rms`: mean, var, count) and the wrapper's settings, read through the safe
//! pickle VM (numpy arrays decoded from their raw bytes, nothing called).

use std::path::{Path, PathBuf};

use super::numpy::{ndarray, number};
use super::pickle::{self, lookup, Value};
use crate::error::{ReadError, Result};

/// Largest VecNormalize pickle read (it holds statistics and spaces, never weights).
pub const MAX_BYTES: u64 = 64 << 20;

/// One `RunningMeanStd`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningStats {
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
    /// Samples seen (starts at `epsilon`, 1e-4: a count near 0 means never updated).
    pub count: f64,
    pub shape: Vec<usize>,
}

impl RunningStats {
    /// Whether the statistics were ever updated (count beyond the initial epsilon, or moved
    /// from the initial mean 0 / var 1).
    pub fn updated(&self) -> bool {
        self.count > 1.0
            || self.mean.iter().any(|m| *m != 0.0)
            || self.var.iter().any(|v| *v != 1.0)
    }
}

/// What a VecNormalize pickle holds.
#[derive(Debug, Clone, PartialEq)]
pub struct VecNormStats {
    pub path: PathBuf,
    /// `None` for a dict observation space (one statistic per key: see `obs_rms_keys`).
    pub obs_rms: Option<RunningStats>,
    /// Per key of a dict observation space.
    pub obs_rms_keys: Vec<(String, RunningStats)>,
    pub ret_rms: Option<RunningStats>,
    pub clip_obs: Option<f64>,
    pub clip_reward: Option<f64>,
    pub gamma: Option<f64>,
    pub epsilon: Option<f64>,
    pub training: Option<bool>,
    pub norm_obs: Option<bool>,
    pub norm_reward: Option<bool>,
}

impl VecNormStats {
    /// A one-line summary for `inspect`.
    pub fn summary(&self) -> String {
        let rms = |r: &RunningStats| {
            let mean = r.mean.iter().map(|x| x.abs()).fold(0.0, f64::max);
            let var_min = r.var.iter().copied().fold(f64::INFINITY, f64::min);
            let var_max = r.var.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if r.mean.len() == 1 {
                format!(
                    "count {}, mean {:.4}, var {:.4}",
                    fmt_count(r.count),
                    r.mean[0],
                    r.var[0]
                )
            } else {
                format!(
                    "count {}, shape {:?}, |mean| ≤ {mean:.4}, var {var_min:.4}…{var_max:.4}",
                    fmt_count(r.count),
                    r.shape
                )
            }
        };
        let mut parts = Vec::new();
        match (&self.obs_rms, self.obs_rms_keys.is_empty()) {
            (Some(r), _) => parts.push(format!("obs_rms {}", rms(r))),
            (None, false) => parts.push(format!("obs_rms over {} keys", self.obs_rms_keys.len())),
            _ => {}
        }
        if let Some(r) = &self.ret_rms {
            parts.push(format!("ret_rms {}", rms(r)));
        }
        let b = |x: Option<bool>| x.map_or("?".to_string(), |v| v.to_string());
        let f = |x: Option<f64>| x.map_or("?".to_string(), |v| v.to_string());
        parts.push(format!(
            "training={} norm_obs={} norm_reward={} clip_obs={} clip_reward={} gamma={}",
            b(self.training),
            b(self.norm_obs),
            b(self.norm_reward),
            f(self.clip_obs),
            f(self.clip_reward),
            f(self.gamma)
        ));
        parts.join("; ")
    }
}

fn fmt_count(c: f64) -> String {
    if c >= 1.0 {
        format!("{c:.0}")
    } else {
        format!("{c}")
    }
}

fn running(v: &Value) -> Option<RunningStats> {
    let mean = ndarray(lookup(v, "mean")?)?;
    let var = ndarray(lookup(v, "var")?)?;
    let count = number(lookup(v, "count")?)?;
    Some(RunningStats {
        shape: mean.shape.clone(),
        mean: mean.to_f64(),
        var: var.to_f64(),
        count,
    })
}

/// Whether a pickle's first bytes name SB3's VecNormalize class (a cheap content sniff).
pub fn looks_like_vecnormalize(head: &[u8]) -> bool {
    head.starts_with(&[0x80]) && head.windows(12).any(|w| w == b"VecNormalize")
}

/// Reads a VecNormalize pickle. A file that is not one is a one-line error naming it.
pub fn read(path: impl AsRef<Path>) -> Result<VecNormStats> {
    let path = path.as_ref();
    let bytes = crate::limits::read_capped(path, MAX_BYTES)?;
    let root = pickle::parse(&bytes).map_err(|e| ReadError::format(path, e.to_string()))?;
    from_value(path, &root)
}

/// The statistics of an unpickled VecNormalize object.
pub fn from_value(path: &Path, root: &Value) -> Result<VecNormStats> {
    let is_vn = matches!(root, Value::Object { class, .. } if class.1.contains("VecNormalize"));
    if !is_vn && lookup(root, "obs_rms").is_none() {
        return Err(ReadError::format(
            path,
            "not a VecNormalize pickle (no VecNormalize object, no obs_rms)",
        ));
    }
    let obs = lookup(root, "obs_rms");
    let obs_rms = obs.and_then(running);
    let mut obs_rms_keys = Vec::new();
    if obs_rms.is_none() {
        if let Some(d) = obs.and_then(Value::as_dict) {
            for (k, v) in d.iter().take(1024) {
                if let (Some(k), Some(r)) = (k.key_string(), running(v)) {
                    obs_rms_keys.push((k, r));
                }
            }
        }
    }
    let ret_rms = lookup(root, "ret_rms").and_then(running);
    if obs_rms.is_none() && obs_rms_keys.is_empty() && ret_rms.is_none() {
        return Err(ReadError::format(
            path,
            "VecNormalize pickle without readable obs_rms / ret_rms statistics",
        ));
    }
    let num = |k: &str| lookup(root, k).and_then(number);
    let flag = |k: &str| lookup(root, k).and_then(Value::as_bool);
    Ok(VecNormStats {
        path: path.to_path_buf(),
        obs_rms,
        obs_rms_keys,
        ret_rms,
        clip_obs: num("clip_obs"),
        clip_reward: num("clip_reward"),
        gamma: num("gamma"),
        epsilon: num("epsilon"),
        training: flag("training"),
        norm_obs: flag("norm_obs"),
        norm_reward: flag("norm_reward"),
    })
}
