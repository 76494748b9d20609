//! `ema_weights` (DF2): EMA weights that never moved (byte-identical across checkpoints while
//! the raw weights trained) or track the live weights exactly.

use std::path::PathBuf;

use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::CheckpointDir;

use crate::probes::checkpoint::model::*;

// =======================================================================================
// DF2 — EMA weights
// =======================================================================================

fn ema_prefix(name: &str) -> Option<&str> {
    let first = name.split('.').next().unwrap_or("");
    let f = first.to_ascii_lowercase();
    let is_ema = f == "ema"
        || f == "shadow"
        || f.starts_with("ema_")
        || f.ends_with("_ema")
        || f == "model_ema"
        || f == "shadow_params";
    is_ema.then(|| name.get(first.len() + 1..).unwrap_or(""))
}

fn is_diffusion(ctx: &ProbeCtx) -> bool {
    if ctx
        .facts
        .get("domain")
        .is_some_and(|d| d.eq_ignore_ascii_case("diffusion"))
    {
        return true;
    }
    if ctx
        .run
        .model_config()
        .and_then(|(_, c)| c.class_name)
        .is_some_and(|c| {
            let c = c.to_ascii_lowercase();
            c.contains("unet")
                || c.contains("transformer2d")
                || c.contains("dit")
                || c.contains("sd3")
                || c.contains("flux")
        })
    {
        return true;
    }
    ctx.run
        .artifacts
        .iter()
        .any(|a| a.kind.is_weights() && file_name(&a.path).starts_with("diffusion_pytorch_model"))
}
pub(super) const EMA_WEIGHTS: ProbeSpec = ProbeSpec {
    id: "ema_weights",
    entries: &["DF2", "DF1"],
    inputs: &["checkpoint", "fact:domain", "config"],
    params: &["identical_rel"],
    outcomes: &["pass", "missing", "identical", "frozen", "skip"],
    run: ema_weights,
};

pub fn ema_weights(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "DF2";
    let identical_rel = p!(ctx, E, "identical_rel");
    let diffusion = is_diffusion(ctx);
    let cks = weight_ckpts(ctx.run);
    let ema_files: Vec<&PathBuf> = ctx
        .run
        .artifacts
        .iter()
        .filter(|a| a.kind.is_weights() && is_ema_path(&a.path))
        .map(|a| &a.path)
        .collect();
    if cks.is_empty() && ema_files.is_empty() {
        return vec![Verdict::skip(E, "no checkpoint weights in the run")];
    }
    // EMA tensors inside the newest model file, or an EMA file.
    let newest = cks.last().and_then(|c| Model::open(c).ok());
    let in_file: Vec<(String, String)> = newest
        .as_ref()
        .map(|m| {
            m.infos()
                .filter_map(|(n, i)| {
                    if i.dtype.is_float() {
                        ema_prefix(n)
                            .filter(|r| !r.is_empty())
                            .map(|r| (n.to_string(), r.to_string()))
                    } else {
                        None
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(v) = frozen_ema_part(ctx) {
        return vec![v];
    }
    if in_file.is_empty() && ema_files.is_empty() {
        if !diffusion {
            return vec![Verdict::skip(E, "not a diffusion run (no --fact domain=diffusion, no UNet config) and no EMA weights")];
        }
        // Training without EMA is a choice (diffusers' use_ema=False), not a bug, and whether
        // it costs sample quality is not in the artifacts: an absence is not judged — not a
        // pass (nothing was checked and found fine), not a warning on a healthy recipe.
        let mut v = Verdict::new(E, Status::Skip, "missing")
            .measured("no EMA weights (no ema* file, no ema./shadow tensors)")
            .expected("an EMA copy of the weights, if samples are to come from one")
            .message("trained without an EMA of the weights (a choice, e.g. use_ema=False): whether that costs sample quality cannot be judged from the artifacts — if samples look worse than the loss suggests, keep an EMAModel (decay ~0.999), step it after optimizer.step(), save it and sample from it (DF2)");
        if let Some(m) = &newest {
            v = v.evidence(m.ev());
        }
        return vec![v];
    }
    if let Some(v) = frozen_ema(ctx) {
        return vec![v];
    }
    // Pair EMA tensors with the raw ones.
    let mut compared = 0usize;
    let mut same = 0usize;
    let mut ev = None;
    const MAX_PAIRS: usize = 64;
    if let Some(m) = &newest {
        for (en, raw) in in_file.iter().take(MAX_PAIRS) {
            if let Some(rn) = m.find(raw) {
                if let Ok(d) = m.diff(rn, m, en) {
                    compared += 1;
                    if d.identical_bytes
                        || d.norm_diff <= identical_rel * d.norm_a.max(f64::MIN_POSITIVE)
                    {
                        same += 1;
                    }
                }
            }
        }
        ev = Some(m.ev());
    }
    if in_file.is_empty() {
        // Separate EMA file(s): pair with the newest raw weights of the same checkpoint, else the newest.
        let ef = ema_files.iter().max_by_key(|p| {
            ctx.run
                .artifacts
                .iter()
                .find(|a| &a.path == **p)
                .and_then(|a| a.step)
                .unwrap_or(0)
        });
        if let (Some(ef), Some(m)) = (ef, &newest) {
            if let Ok(e) = Model::open_paths(&[*ef], m.step) {
                for (en, info) in e
                    .infos()
                    .filter(|(_, i)| i.dtype.is_float())
                    .take(MAX_PAIRS)
                {
                    let key = ema_prefix(en).filter(|r| !r.is_empty()).unwrap_or(en);
                    if let Some(rn) = m.find(key) {
                        if m.info(rn).map(|i| i.numel()) != Some(info.numel()) {
                            continue;
                        }
                        if let Ok(d) = m.diff(rn, &e, en) {
                            compared += 1;
                            if d.identical_bytes
                                || d.norm_diff <= identical_rel * d.norm_a.max(f64::MIN_POSITIVE)
                            {
                                same += 1;
                            }
                        }
                    }
                }
                ev = Some(Evidence::file(ef.as_path()));
            }
        }
    }
    let step = newest.as_ref().map(|m| m.step).unwrap_or(0);
    let mut v = if compared > 0 && same == compared && step > 0 {
        Verdict::new(E, Status::Warn, "identical")
            .measured(format!("EMA equals the raw weights in all {compared} compared tensors (step {step})"))
            .message("the EMA copy is identical to the raw weights: it is never updated (ema.step() not called), its decay is 0, or the raw weights were saved under the EMA name")
    } else {
        Verdict::new(E, Status::Pass, "pass")
            .measured(if compared > 0 {
                format!(
                    "EMA differs from the raw weights in {} of {compared} compared tensors",
                    compared - same
                )
            } else {
                "EMA weights present".to_string()
            })
            .message("an EMA copy of the weights is saved — sample from it")
    };
    if let Some(e) = ev {
        v = v.evidence(e);
    }
    vec![v
        .expected(format!(
            "EMA present and different from the raw weights (‖Δ‖/‖W‖ > {identical_rel})"
        ))
        .value("compared", compared as f64)
        .value("identical", same as f64)]
}

/// Separate EMA files saved at two different steps (diffusers' `checkpoint-N/unet_ema`) that
/// are byte-identical while the raw weights moved between the same steps: the EMA was never
/// stepped (or its decay is 1).
fn frozen_ema(ctx: &ProbeCtx) -> Option<Verdict> {
    let mut by_step: Vec<(u64, &PathBuf)> = ctx
        .run
        .artifacts
        .iter()
        .filter(|a| a.kind.is_weights() && is_ema_path(&a.path))
        .filter_map(|a| a.step.map(|s| (s, &a.path)))
        .collect();
    by_step.sort();
    by_step.dedup_by_key(|x| x.0);
    let [.., (sa, pa), (sb, pb)] = by_step.as_slice() else {
        return None;
    };
    let ea = Model::open_paths(&[*pa], *sa).ok()?;
    let eb = Model::open_paths(&[*pb], *sb).ok()?;
    let (compared, same) = count_identical(&ea, &eb);
    if compared == 0 || same < compared {
        return None;
    }
    // The raw weights at the same two steps must have moved.
    let cks = weight_ckpts(ctx.run);
    let ra = cks.iter().find(|c| c.step == *sa)?;
    let rb = cks.iter().find(|c| c.step == *sb)?;
    let (_, _, moved, of) = raw_moved(ra, rb)?;
    Some(
        Verdict::new("DF2", Status::Fail, "frozen")
            .measured(format!(
                "EMA byte-identical between steps {sa} and {sb} in all {compared} compared tensors, while {moved} of {of} raw tensors moved"
            ))
            .expected("the EMA moves a little every step (decay ~0.999)")
            .message("the EMA weights never change while the model trains: ema_model.step(model.parameters()) is never called (or its decay is 1) — so the saved / exported EMA is the initial model; call it after every optimizer.step() (diffusers: under `if accelerator.sync_gradients:`)")
            .evidence(Evidence::file(pa.as_path()))
            .evidence(Evidence::file(pb.as_path()))
            .value("compared", compared as f64),
    )
}

/// Top-level checkpoint keys under which a training loop saves its EMA copy beside the weights.
const EMA_KEYS: &[&str] = &[
    "state_dict_ema",
    "model_ema",
    "ema_state_dict",
    "ema_model",
    "ema",
];

/// An EMA copy saved inside each checkpoint under its own key (timm's `state_dict_ema`) that is
/// byte-identical in the last two checkpoints while the raw weights moved between them: the
/// EMA is never updated, so what it holds is whatever it started from.
fn frozen_ema_part(ctx: &ProbeCtx) -> Option<Verdict> {
    let cks: Vec<_> = weight_ckpts(ctx.run)
        .into_iter()
        .filter(|c| !c.step_unknown && !is_init_ckpt(c))
        .collect();
    let [.., ca, cb] = cks.as_slice() else {
        return None;
    };
    if ca.step == cb.step {
        return None;
    }
    let (key, ea, eb) = EMA_KEYS.iter().find_map(|k| {
        let ea = Model::open_part(ca, k)?;
        let eb = Model::open_part(cb, k)?;
        Some((*k, ea, eb))
    })?;
    let (compared, same) = count_identical(&ea, &eb);
    if compared == 0 || same < compared {
        return None;
    }
    let (ma, mb, moved, of) = raw_moved(ca, cb)?;
    Some(
        Verdict::new("DF2", Status::Fail, "frozen")
            .measured(format!(
                "the EMA copy under \"{key}\" is byte-identical at {} and {} in all {compared} compared tensors, while {moved} of {} raw tensors moved",
                ma.at(),
                mb.at(),
                of
            ))
            .expected("the EMA moves a little every step (decay ~0.999)")
            .message(format!("the EMA weights saved with each checkpoint (\"{key}\") never change while the model trains: the EMA update is never called (or its decay is 1), so the EMA copy is still the model it started from and anything evaluated or exported from it is untrained — call the EMA update after every optimizer.step() (timm: model_ema.update(model)) and check that its condition is ever true"))
            .evidence(step_ev(&ma, &mb))
            .value("compared", compared as f64),
    )
}

/// Compares up to 64 float tensors of `b` with their namesakes of the same size in `a`: how
/// many were compared, and how many of them are byte-identical.
fn count_identical(a: &Model, b: &Model) -> (usize, usize) {
    let (mut compared, mut same) = (0usize, 0usize);
    for (n, i) in b.infos().filter(|(_, i)| i.dtype.is_float()).take(64) {
        let Some(an) = a.find(n) else { continue };
        if a.info(an).map(|x| x.numel()) != Some(i.numel()) {
            continue;
        }
        if let Ok(d) = a.diff(an, b, n) {
            compared += 1;
            if d.identical_bytes || d.norm_diff == 0.0 {
                same += 1;
            }
        }
    }
    (compared, same)
}

/// The raw weights of two checkpoints, opened, with how many of their trainable tensors moved
/// between them and of how many; None when nothing moved (no training between the saves).
fn raw_moved(ca: &CheckpointDir, cb: &CheckpointDir) -> Option<(Model, Model, usize, usize)> {
    let (ma, mb) = (Model::open(ca).ok()?, Model::open(cb).ok()?);
    let (mv, _) = movements(&ma, &mb, is_trainable);
    let moved = mv.iter().filter(|m| m.rel > 0.0).count();
    (moved > 0).then(|| {
        let of = mv.len();
        (ma, mb, moved, of)
    })
}
