//! `nn.Module` objects pickled whole (Ultralytics' `model` / `ema`, `torch.save(model)`): the
//! opaque object graph the safe VM recorded is walked through each module's `_parameters`,
//! `_buffers` and `_modules` (its BUILD state), yielding state-dict names (`model.0.conv.weight`)
//! and which tensors are buffers. Other attributes are never followed. The walk is bounded in
//! depth and tensor count; cycles were already cut by the VM's materialiser.

use super::pickle::{lookup, TensorRef, Value};

/// Deepest module nesting followed.
pub const MAX_MODULE_DEPTH: usize = 64;
/// Most tensors one module graph may yield.
pub const MAX_MODULE_TENSORS: usize = 1 << 20;

/// One tensor found in a module graph.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub name: String,
    pub tref: TensorRef,
    /// Registered with `register_buffer` (running stats, anchors …), not a parameter.
    pub buffer: bool,
}

/// Whether `v` is a pickled module: an opaque object whose state has `_modules` or
/// `_parameters`.
pub fn is_module(v: &Value) -> bool {
    matches!(v, Value::Object { .. })
        && (lookup(v, "_modules").is_some() || lookup(v, "_parameters").is_some())
}

/// The parameters, buffers and children of a module, dotted below `prefix` as
/// `Module.state_dict()` names them. An error (a sentence) when the graph is over budget.
pub(crate) fn walk(v: &Value, prefix: &str, out: &mut Vec<Found>) -> Result<(), String> {
    walk_at(v, prefix, out, 0)
}

fn walk_at(v: &Value, prefix: &str, out: &mut Vec<Found>, depth: usize) -> Result<(), String> {
    if depth > MAX_MODULE_DEPTH {
        return Err(format!(
            "module graph nested deeper than {MAX_MODULE_DEPTH} modules"
        ));
    }
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    for (key, buffer) in [("_parameters", false), ("_buffers", true)] {
        let Some(d) = lookup(v, key).and_then(Value::as_dict) else {
            continue;
        };
        for (k, x) in d {
            let (Some(k), Value::Tensor(t)) = (k.key_string(), x) else {
                continue;
            };
            if out.len() >= MAX_MODULE_TENSORS {
                return Err(format!(
                    "module graph holds more than {MAX_MODULE_TENSORS} tensors"
                ));
            }
            out.push(Found {
                name: join(&k),
                tref: t.clone(),
                buffer,
            });
        }
    }
    if let Some(d) = lookup(v, "_modules").and_then(Value::as_dict) {
        for (k, child) in d {
            if let (Some(k), true) = (k.key_string(), is_module(child)) {
                walk_at(child, &join(&k), out, depth + 1)?;
            }
        }
    }
    Ok(())
}

/// The module a checkpoint's root holds, and under which key: the root itself
/// (`torch.save(model)`, key `""`), else `model`, else `ema` (Ultralytics saves `model: None`
/// and the EMA model in `ema` while training), else the first module-valued key.
pub fn root_module(root: &Value) -> Option<(String, &Value)> {
    if is_module(root) {
        return Some((String::new(), root));
    }
    let d = root.as_dict()?;
    for key in ["model", "ema", "module", "net", "network"] {
        if let Some(m) = lookup(root, key).filter(|m| is_module(m)) {
            return Some((key.to_string(), m));
        }
    }
    d.iter()
        .find(|(_, v)| is_module(v))
        .and_then(|(k, v)| k.key_string().map(|k| (k, v)))
}

/// Keys of the root dict holding a module (`model`, `ema`), with `None` for keys present but
/// empty (`model: None`), for `inspect`.
pub fn module_keys(root: &Value) -> Vec<(String, bool)> {
    let Some(d) = root.as_dict() else {
        return Vec::new();
    };
    d.iter()
        .filter_map(|(k, v)| {
            let k = k.key_string()?;
            if is_module(v) {
                Some((k, true))
            } else if matches!(k.as_str(), "model" | "ema") && matches!(v, Value::None) {
                Some((k, false))
            } else {
                None
            }
        })
        .collect()
}
