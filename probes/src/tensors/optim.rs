//! Optimizer state (`optimizer.pt`: `state` per parameter index + `param_groups`; an SB3
//! archive's `policy.optimizer.pth`) read with our
//! own walker over the unpickled dict — candle's `read_all` sees no tensors there — plus a
//! generic reader for other pickled dicts (`scheduler.pt`, `training_args.bin`). A DeepSpeed
//! ZeRO partition (`zero_pp_rank_*_optim_states.pt`) flattens each group's state into one
//! tensor: its groups are read, with their parameters' names from the sibling
//! `mp_rank_*_model_states.pt` (`param_shapes`), and no per-parameter state.
//!
//! The moments (`exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`, `momentum_buffer`) are read as the
//! weights are: one streamed pass of the tensor pass ([`super::pass`]) over every moment of
//! the file in blocks, on the first question about any of them, its figures cached for the
//! process; resident memory stays near a block, not the file. [`OptimizerState::open`] shares
//! one parse per file (and remembers a refusal) for every probe of a process.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use super::dtype::DType;
use super::pickle::{lookup, TensorRef, Value};
use super::stats::TensorStats;
use super::torchzip::TorchZip;
use super::TensorFile;
use crate::error::{ReadError, Result};

/// One entry of `param_groups`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamGroup {
    pub index: usize,
    pub lr: Option<f64>,
    pub initial_lr: Option<f64>,
    pub betas: Option<(f64, f64)>,
    pub eps: Option<f64>,
    pub weight_decay: Option<f64>,
    /// Parameter indices (keys of `state`).
    pub params: Vec<u64>,
    pub param_names: Option<Vec<String>>,
    /// Every other key, rendered (`amsgrad`, `fused`, `foreach`, `momentum` …).
    pub extra: BTreeMap<String, String>,
}

/// The state kept for one parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamState {
    pub id: u64,
    pub step: Option<f64>,
    pub exp_avg: Option<TensorRef>,
    pub exp_avg_sq: Option<TensorRef>,
    pub max_exp_avg_sq: Option<TensorRef>,
    pub momentum_buffer: Option<TensorRef>,
    /// Other tensor-valued entries (Adafactor's row/column factors …).
    pub other: BTreeMap<String, TensorRef>,
    /// Shape of the parameter, from its first state tensor (empty when none).
    pub shape: Vec<usize>,
    /// Element type of the state tensors, when there are any.
    pub dtype: Option<DType>,
}

/// A parsed `optimizer.pt`.
#[derive(Debug)]
pub struct OptimizerState {
    pub groups: Vec<ParamGroup>,
    pub state: BTreeMap<u64, ParamState>,
    pub path: PathBuf,
    /// A ZeRO partition: groups only, per-parameter state flattened away (not read).
    pub partitioned: bool,
    /// The steps taken by the other optimizers saved beside this one (a Lightning checkpoint
    /// keeps one state dict per optimizer in `optimizer_states`; this is the first): the sum of
    /// each one's largest `step`. Lightning's `global_step` counts every optimizer's steps.
    pub sibling_steps: f64,
    /// The moment tensors, named `optimizer:state.<id>.<key>`, for the tensor pass.
    tf: TensorFile,
    names: HashMap<TensorRef, String>,
    /// The one pass over every moment, run on the first question about any.
    streamed: Once,
}

/// The `what` of this reader in the process-wide memo.
pub const MEMO_KEY: &str = "optimizer state";

impl OptimizerState {
    /// [`OptimizerState::read`] once per file for the process: every caller (every probe of a
    /// `check`) shares one parse, and a file refused once is refused again without a read.
    pub fn open(path: impl AsRef<Path>) -> Result<Arc<OptimizerState>> {
        let path = path.as_ref();
        super::memo::read_shared(MEMO_KEY, path, || OptimizerState::read(path))
    }

    /// Reads an optimizer state dict: the file's root, or one nested under `optimizer`,
    /// `optimizer_state_dict`, or `optimizer_states[0]` (Lightning).
    pub fn read(path: impl AsRef<Path>) -> Result<OptimizerState> {
        let path = path.as_ref();
        let zip = TorchZip::open(path)?;
        // A Stable-Baselines3 archive opens as its policy; its optimizer is another member.
        let zip = if zip.member() == Some(super::sb3::POLICY) {
            TorchZip::open_member(path, super::sb3::OPTIMIZER)?
        } else {
            zip
        };
        if let Some(groups) = zero_groups(path, zip.root())? {
            return Ok(OptimizerState::new(
                path,
                groups,
                BTreeMap::new(),
                true,
                zip,
            ));
        }
        let root = zip.root();
        let sd = [
            Some(root),
            lookup(root, "optimizer"),
            lookup(root, "optimizer_state_dict"),
            lookup(root, "optimizer_states").and_then(|v| v.as_seq()?.first()),
        ]
        .into_iter()
        .flatten()
        .find(|v| lookup(v, "param_groups").is_some())
        .ok_or_else(|| {
            ReadError::format(
                path,
                "no optimizer state dict (expected 'state' and 'param_groups')",
            )
        })?;
        let groups_v = lookup(sd, "param_groups")
            .and_then(Value::as_seq)
            .ok_or_else(|| ReadError::format(path, "param_groups is not a list"))?;
        let num = |v: &Value| -> Option<f64> {
            match v {
                Value::Tensor(t) => zip.scalar(t).ok(),
                other => other.as_f64(),
            }
        };
        let mut groups = Vec::with_capacity(groups_v.len());
        for (index, g) in groups_v.iter().enumerate() {
            let d = g.as_dict().ok_or_else(|| {
                ReadError::format(path, format!("param_groups[{index}] is not a dict"))
            })?;
            let mut pg = ParamGroup {
                index,
                lr: None,
                initial_lr: None,
                betas: None,
                eps: None,
                weight_decay: None,
                params: Vec::new(),
                param_names: None,
                extra: BTreeMap::new(),
            };
            for (k, v) in d {
                let Some(k) = k.key_string() else { continue };
                match k.as_str() {
                    "lr" => pg.lr = num(v),
                    "initial_lr" => pg.initial_lr = num(v),
                    "eps" => pg.eps = num(v),
                    "weight_decay" => pg.weight_decay = num(v),
                    "betas" => {
                        pg.betas = v.as_seq().and_then(|s| match s {
                            [a, b] => Some((num(a)?, num(b)?)),
                            _ => None,
                        })
                    }
                    "params" => {
                        pg.params = v
                            .as_seq()
                            .map(|s| {
                                s.iter()
                                    .filter_map(|x| x.as_i64().and_then(|i| u64::try_from(i).ok()))
                                    .collect()
                            })
                            .unwrap_or_default()
                    }
                    "param_names" => {
                        pg.param_names = v.as_seq().map(|s| {
                            s.iter()
                                .filter_map(|x| x.as_str().map(str::to_string))
                                .collect()
                        })
                    }
                    _ => {
                        let r = match v {
                            Value::Tensor(t) => num(v)
                                .map(|x| x.to_string())
                                .unwrap_or_else(|| format!("tensor({}, {:?})", t.dtype, t.shape)),
                            other => other.repr(200),
                        };
                        pg.extra.insert(k, r);
                    }
                }
            }
            groups.push(pg);
        }
        let mut state = BTreeMap::new();
        if let Some(st) = lookup(sd, "state").and_then(Value::as_dict) {
            for (k, v) in st {
                let Some(id) = k.as_i64().and_then(|i| u64::try_from(i).ok()) else {
                    continue;
                };
                let mut ps = ParamState {
                    id,
                    step: None,
                    exp_avg: None,
                    exp_avg_sq: None,
                    max_exp_avg_sq: None,
                    momentum_buffer: None,
                    other: BTreeMap::new(),
                    shape: Vec::new(),
                    dtype: None,
                };
                for (sk, sv) in v.as_dict().unwrap_or(&[]) {
                    let Some(sk) = sk.key_string() else { continue };
                    if sk == "step" {
                        ps.step = num(sv);
                        continue;
                    }
                    let Value::Tensor(t) = sv else { continue };
                    // The parameter's shape is that of a moment that mirrors it; Adafactor's
                    // factored second moment (`exp_avg_sq_row` / `_col`) is two vectors, not
                    // the parameter (settled after the loop).
                    let factored = sk.ends_with("_row") || sk.ends_with("_col");
                    if ps.dtype.is_none() && !t.shape.is_empty() && !factored {
                        ps.shape = t.shape.clone();
                        ps.dtype = Some(t.dtype);
                    }
                    let slot = match sk.as_str() {
                        "exp_avg" => &mut ps.exp_avg,
                        "exp_avg_sq" => &mut ps.exp_avg_sq,
                        "max_exp_avg_sq" => &mut ps.max_exp_avg_sq,
                        "momentum_buffer" => &mut ps.momentum_buffer,
                        _ => {
                            ps.other.insert(sk, t.clone());
                            continue;
                        }
                    };
                    *slot = Some(t.clone());
                }
                if ps.dtype.is_none() {
                    let row = ps.other.get("exp_avg_sq_row");
                    let col = ps.other.get("exp_avg_sq_col");
                    if let (Some(r), Some(c)) = (row, col) {
                        let mut shape = r.shape.clone();
                        shape.extend(c.shape.last().copied());
                        ps.dtype = Some(r.dtype);
                        ps.shape = shape;
                    } else if let Some(t) = ps.other.values().find(|t| !t.shape.is_empty()) {
                        ps.shape = t.shape.clone();
                        ps.dtype = Some(t.dtype);
                    }
                }
                state.insert(id, ps);
            }
        }
        // The other optimizers of a Lightning checkpoint: only their step counts are read.
        let max_step = |sd: &Value| -> f64 {
            lookup(sd, "state")
                .and_then(Value::as_dict)
                .into_iter()
                .flatten()
                .filter_map(|(_, v)| {
                    let d = v.as_dict()?;
                    d.iter()
                        .find(|(k, _)| k.key_string().as_deref() == Some("step"))
                        .and_then(|(_, sv)| num(sv))
                })
                .filter(|x| x.is_finite())
                .fold(0.0, f64::max)
        };
        let sibling_steps = match lookup(root, "optimizer_states").and_then(Value::as_seq) {
            Some(all) if std::ptr::eq(all.first().map_or(std::ptr::null(), |f| f), sd) => {
                all[1..].iter().map(max_step).sum()
            }
            _ => 0.0,
        };
        let mut o = OptimizerState::new(path, groups, state, false, zip);
        o.sibling_steps = sibling_steps;
        Ok(o)
    }

    /// Keeps the archive for its storages (its unpickled tree is not looked at again: what is
    /// needed was read out of it) and names each moment tensor for the tensor pass.
    fn new(
        path: &Path,
        groups: Vec<ParamGroup>,
        state: BTreeMap<u64, ParamState>,
        partitioned: bool,
        mut zip: TorchZip,
    ) -> OptimizerState {
        zip.take_root();
        let mut refs = Vec::new();
        let mut names = HashMap::new();
        for s in state.values() {
            let slots = [
                ("exp_avg", &s.exp_avg),
                ("exp_avg_sq", &s.exp_avg_sq),
                ("max_exp_avg_sq", &s.max_exp_avg_sq),
                ("momentum_buffer", &s.momentum_buffer),
            ];
            for (k, t) in slots {
                let Some(t) = t else { continue };
                if names.contains_key(t) {
                    continue;
                }
                let name = format!("optimizer:state.{}.{k}", s.id);
                names.insert(t.clone(), name.clone());
                refs.push((name, t.clone()));
            }
        }
        let tf = TensorFile::from_torch_refs(zip, refs);
        names.retain(|_, n| tf.get(n).is_some());
        OptimizerState {
            groups,
            state,
            path: path.to_path_buf(),
            partitioned,
            sibling_steps: 0.0,
            tf,
            names,
            streamed: Once::new(),
        }
    }

    /// Asks `pass` for the statistics of every moment tensor (exp_avg, exp_avg_sq,
    /// max_exp_avg_sq, momentum_buffer): run with the weights' plan, the optimizer state is
    /// read in the same pass.
    pub fn plan<'a>(&'a self, pass: &mut super::pass::Pass<'a>) {
        for n in self.names.values() {
            pass.stats(&self.tf, n);
        }
    }

    /// Statistics of one state tensor: a moment's from the pass (every moment of the file
    /// streamed once, on the first question, and cached); any other tensor read on its own.
    pub fn tensor_stats(&self, t: &TensorRef) -> Result<TensorStats> {
        match self.names.get(t) {
            Some(n) => {
                self.streamed.call_once(|| {
                    let mut p = super::pass::Pass::new();
                    self.plan(&mut p);
                    p.run();
                });
                super::pass::stats(&self.tf, n)
            }
            None => self.archive().tensor_stats(t),
        }
    }

    /// ‖t‖₂ over its finite values.
    pub fn l2_norm(&self, t: &TensorRef) -> Result<f64> {
        Ok(self.tensor_stats(t)?.l2)
    }

    /// The group a parameter index belongs to.
    pub fn group_of(&self, id: u64) -> Option<&ParamGroup> {
        self.groups.iter().find(|g| g.params.contains(&id))
    }

    /// The largest finite per-parameter `step` (Adam's count of optimizer steps), if any
    /// parameter keeps one.
    pub fn max_step(&self) -> Option<f64> {
        self.state
            .values()
            .filter_map(|s| s.step)
            .filter(|s| s.is_finite())
            .reduce(f64::max)
    }

    /// Parameters listed in a group that have no state (never stepped, or frozen).
    pub fn params_without_state(&self) -> Vec<u64> {
        self.groups
            .iter()
            .flat_map(|g| g.params.iter().copied())
            .filter(|p| !self.state.contains_key(p))
            .collect()
    }

    /// The underlying archive (for loading state tensors onto a device); its unpickled root
    /// is not kept.
    pub fn archive(&self) -> &TorchZip {
        &self.tf.torch[0]
    }
}

/// The param groups of a DeepSpeed ZeRO optimizer partition (`None` when `root` is not one):
/// lr / eps / betas / weight_decay from `base_optimizer_state.param_groups`, each group's
/// parameter names from the sibling `mp_rank_*_model_states.pt` (`param_shapes`, one ordered
/// dict per group), numbered in order as the ids a plain `optimizer.pt` would use.
fn zero_groups(path: &Path, root: &Value) -> Result<Option<Vec<ParamGroup>>> {
    let Some(osd) = lookup(root, "optimizer_state_dict")
        .filter(|o| lookup(o, "single_partition_of_fp32_groups").is_some())
    else {
        return Ok(None);
    };
    let groups_v = lookup(osd, "base_optimizer_state")
        .and_then(|b| lookup(b, "param_groups"))
        .and_then(Value::as_seq)
        .ok_or_else(|| {
            ReadError::format(
                path,
                "DeepSpeed ZeRO partition without base_optimizer_state.param_groups",
            )
        })?;
    let sibling = path.parent().and_then(|d| {
        let mut c: Vec<PathBuf> = std::fs::read_dir(d)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .is_some_and(|n| n.starts_with("mp_rank_") && n.ends_with("_model_states.pt"))
            })
            .collect();
        c.sort();
        c.into_iter().next()
    });
    let shapes: Vec<Vec<String>> = match &sibling {
        Some(p) => {
            let z = TorchZip::open(p)?;
            lookup(z.root(), "param_shapes")
                .and_then(Value::as_seq)
                .map(|gs| {
                    gs.iter()
                        .map(|g| {
                            g.as_dict()
                                .map(|d| d.iter().filter_map(|(k, _)| k.key_string()).collect())
                                .unwrap_or_default()
                        })
                        .collect()
                })
                .unwrap_or_default()
        }
        None => Vec::new(),
    };
    let mut next_id = 0u64;
    let mut groups = Vec::with_capacity(groups_v.len());
    for (index, g) in groups_v.iter().enumerate() {
        let num = |k: &str| lookup(g, k).and_then(Value::as_f64);
        let names = shapes.get(index).cloned();
        let n = names.as_ref().map_or(0, Vec::len) as u64;
        let mut extra = BTreeMap::new();
        for k in ["fused", "foreach", "amsgrad"] {
            if let Some(v) = lookup(g, k) {
                extra.insert(k.to_string(), v.repr(40));
            }
        }
        groups.push(ParamGroup {
            index,
            lr: num("lr"),
            initial_lr: num("initial_lr"),
            betas: lookup(g, "betas")
                .and_then(Value::as_seq)
                .and_then(|s| match s {
                    [a, b] => Some((a.as_f64()?, b.as_f64()?)),
                    _ => None,
                }),
            eps: num("eps"),
            weight_decay: num("weight_decay"),
            params: (next_id..next_id + n).collect(),
            param_names: names,
            extra,
        });
        next_id += n;
    }
    Ok(Some(groups))
}

/// Unpickles any torch-saved object (`scheduler.pt`, `training_args.bin`, `rng_state.pth`).
/// Opaque objects keep their `BUILD` state: use [`lookup`] / [`lookup_f64`] / [`lookup_str`].
pub fn read_pickled_dict(path: impl AsRef<Path>) -> Result<Value> {
    Ok(TorchZip::open(path)?.root().clone())
}

/// A number under `key` (through dicts and opaque objects' state).
pub fn lookup_f64(v: &Value, key: &str) -> Option<f64> {
    lookup(v, key)?.as_f64()
}

/// A string under `key`, seeing through enum-like objects (`SchedulerType('cosine')`).
pub fn lookup_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    lookup(v, key)?.as_str()
}
