//! `bn_drift` (O18): BatchNorm running statistics drifting under frozen weights; when no
//! weight moved at all between the checkpoints (an evaluation-only span), O5: evaluation
//! ran in train mode.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;

pub(super) const BN_DRIFT: ProbeSpec = ProbeSpec {
    id: "bn_drift",
    entries: &["O18", "V7", "O5"],
    inputs: &["checkpoint:2", "fact:frozen"],
    params: &["moved_rel", "grad_stopped_ratio"],
    outcomes: &["pass", "drift", "eval_mode", "skip"],
    run: bn_drift,
};

// =======================================================================================
// O18 — BatchNorm running statistics drifting under frozen weights
// =======================================================================================

/// Two saves at the same step with different content (the model saved again after a
/// validation pass): the span between them ran no optimizer step.
fn same_step_pair(run: &crate::run::Run) -> Option<(Model, Model)> {
    let cks: Vec<_> = run
        .checkpoints
        .iter()
        .filter(|c| !c.weights.is_empty() && !c.step_unknown && !c.is_init)
        .collect();
    cks.windows(2)
        .rev()
        .filter(|w| w[0].step == w[1].step)
        .find_map(|w| Some((Model::open(w[0]).ok()?, Model::open(w[1]).ok()?)))
}

pub fn bn_drift(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O18";
    if let Some(v) = trained_in_eval_mode(ctx).or_else(|| stats_frozen_while_training(ctx)) {
        return vec![v];
    }
    if let Some((a, b)) = same_step_pair(ctx.run) {
        let v = judge(ctx, a, b);
        if v.first().is_some_and(|v| v.status == Status::Fail) {
            return v;
        }
    }
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    judge(ctx, a, b)
}

fn judge(ctx: &ProbeCtx, a: Model, b: Model) -> Vec<Verdict> {
    const E: &str = "O18";
    let moved_rel = p!(ctx, E, "moved_rel");
    let frozen = ctx.facts.list("frozen");
    let mut modules: Vec<String> = b
        .infos()
        .filter(|(n, _)| matches!(last_component(n), "running_mean" | "running_var"))
        .map(|(n, _)| module_of(n).to_string())
        .collect();
    modules.dedup();
    if modules.is_empty() {
        return vec![Verdict::skip(
            E,
            "no BatchNorm running statistics in the checkpoints",
        )];
    }
    let moved_of = |name: &str| -> Option<bool> {
        let an = a.find(name)?;
        let d = a.diff(an, &b, name).ok()?;
        let denom = d.norm_a.max(d.norm_b);
        Some(
            !d.identical_bytes
                && d.norm_diff > 0.0
                && (denom == 0.0 || d.norm_diff / denom > moved_rel),
        )
    };
    let mut drift = Vec::new();
    let mut checked = 0;
    for m in &modules {
        let stats_moved = ["running_mean", "running_var"]
            .iter()
            .filter_map(|s| moved_of(&format!("{m}.{s}")))
            .any(|x| x);
        let declared = frozen.iter().any(|p| under(&format!("{m}.weight"), p));
        let params: Vec<bool> = ["weight", "bias"]
            .iter()
            .filter_map(|s| moved_of(&format!("{m}.{s}")))
            .collect();
        let params_static = !params.is_empty() && params.iter().all(|x| !x);
        if !declared && !params_static {
            continue;
        }
        checked += 1;
        if stats_moved {
            drift.push(format!(
                "{m}{}",
                if declared {
                    " (declared frozen)"
                } else {
                    " (weight/bias unchanged)"
                }
            ));
        }
    }
    let measured = format!(
        "{} of {} frozen BatchNorm layers changed running stats between steps {} and {}",
        drift.len(),
        checked,
        a.step,
        b.step
    );
    let expected = "running_mean/var constant where the layer is frozen".to_string();
    if checked == 0 {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(format!(
                "{} BatchNorm layers, all training (weights moved)",
                modules.len()
            ))
            .expected(expected)
            .message("no frozen BatchNorm layer: running statistics are expected to move")
            .evidence(step_ev(&a, &b))];
    }
    if drift.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .message("frozen BatchNorm layers keep their running statistics (eval mode)")
            .evidence(step_ev(&a, &b))];
    }
    // No weight anywhere moved (only BatchNorm statistics did): the span between the two
    // checkpoints ran forward passes without optimizer steps — evaluation in train mode.
    // Only a pair saved at the same step is known to span no training step.
    let eval_span = a.step == b.step
        && frozen.is_empty()
        && checked == modules.len()
        && b.infos()
            .filter(|(n, i)| {
                i.dtype.is_float()
                    && !matches!(last_component(n), "running_mean" | "running_var")
                    && is_trainable(n, i)
            })
            .take(32)
            .filter_map(|(n, _)| moved_of(n))
            .all(|m| !m);
    if eval_span {
        let v = Verdict::new("O5", Status::Fail, "eval_mode")
            .measured(format!(
                "{measured}; no weight moved (both saved at step {})",
                a.step
            ))
            .expected("evaluation leaves BatchNorm running statistics untouched")
            .message(format!(
                "only BatchNorm running statistics changed between these checkpoints — no weight did: forward passes ran in train mode without optimizer steps, i.e. evaluation without model.eval() ({}) — call model.eval() before every validation pass (and model.train() after), and evaluate under torch.no_grad()",
                list_some(&drift, 4)
            ))
            .evidence(step_ev(&a, &b));
        return vec![v.value("drifting", drift.len() as f64)];
    }
    let mut v = Verdict::new(E, Status::Fail, "drift")
        .measured(measured)
        .expected(expected)
        .message(format!(
            "BatchNorm running statistics keep updating in frozen layers: {} — requires_grad=False does not stop them; put the frozen backbone's BN modules in eval() after every model.train() (or use FrozenBatchNorm2d)",
            list_some(&drift, 4)
        ));
    v = v.evidence(step_ev(&a, &b).tensor(format!(
        "{}.running_mean",
        drift[0].split(' ').next().unwrap_or("")
    )));
    vec![v.value("drifting", drift.len() as f64)]
}

/// Evidence of absence: after training, every BatchNorm's running statistics still hold their
/// initial values (mean exactly 0, var exactly 1, no batch counted) while the BN affine
/// parameters moved off their own init (1, 0): the forward passes never ran in train mode.
fn trained_in_eval_mode(ctx: &ProbeCtx) -> Option<Verdict> {
    let cks = weight_ckpts(ctx.run);
    let c = cks.last()?;
    if is_init_ckpt(c) {
        return None;
    }
    let m = Model::open(c).ok()?;
    let modules = bn_modules(&m);
    if modules.is_empty() {
        return None;
    }
    let exact = |name: &str, v: f64| {
        m.stats(name, ctx.compute)
            .ok()
            .is_some_and(|s| s.count > 0 && s.min == v && s.max == v)
    };
    let mut affine_moved = Vec::new();
    for md in &modules {
        let at_init = exact(&format!("{md}.running_mean"), 0.0)
            && exact(&format!("{md}.running_var"), 1.0)
            && m.find(&format!("{md}.num_batches_tracked"))
                .is_none_or(|n| exact(n, 0.0));
        if !at_init {
            return None;
        }
        let w_moved =
            m.find(&format!("{md}.weight")).is_some() && !exact(&format!("{md}.weight"), 1.0);
        let b_moved = m.find(&format!("{md}.bias")).is_some() && !exact(&format!("{md}.bias"), 0.0);
        if w_moved || b_moved {
            affine_moved.push(md.clone());
        }
    }
    if affine_moved.is_empty() {
        return None;
    }
    Some(
        Verdict::new("O5", Status::Fail, "eval_mode")
            .measured(format!(
                "all {} BatchNorm layers still hold running_mean = 0, running_var = 1 and no counted batch at {}, while {} of them moved their weight/bias",
                modules.len(),
                m.at(),
                affine_moved.len()
            ))
            .expected("running statistics updated by training forward passes")
            .message(format!(
                "the model trained in eval mode: BatchNorm never updated its running statistics ({}), so at evaluation it normalises with mean 0 / var 1 instead of the data's — call model.train() before the training loop and again after every evaluation",
                list_some(&affine_moved, 4)
            ))
            .evidence(m.ev().tensor(format!("{}.running_mean", modules[0])))
            .value("bn_layers", modules.len() as f64),
    )
}

/// Evidence of absence, later in the run: between the first and the last checkpoint every
/// BatchNorm's running statistics and batch count stayed byte for byte the same while every
/// BatchNorm's own weight or bias moved. The layers trained, but no training batch went
/// through them in train mode: the model was left in eval mode after a validation pass. A
/// fine-tune may keep a pretrained backbone's statistics on purpose (mmdetection's
/// `norm_eval=True`), so a run that starts from trained weights is not judged, nor one with a
/// frozen subset (declared, or a parameter whose gradient stopped in Adam's moments).
fn stats_frozen_while_training(ctx: &ProbeCtx) -> Option<Verdict> {
    use crate::profile::Init;
    if matches!(ctx.profile.init.value, Init::Pretrained | Init::Adapter) {
        return None;
    }
    // A frozen subset (its gradient stopped while Adam's v remembers it) keeps its BatchNorm in
    // eval mode on purpose, and its weights may still drift on stale momentum (O17).
    let ratio = ctx.params.f64("grad_stopped_ratio").ok()?;
    if crate::probes::checkpoint::frozen_drift::some_gradient_stopped(ctx, ratio) == Some(true) {
        return None;
    }
    if !ctx.facts.list("frozen").is_empty() {
        return None;
    }
    let cks: Vec<_> = weight_ckpts(ctx.run)
        .into_iter()
        .filter(|c| !c.step_unknown && !is_init_ckpt(c))
        .collect();
    let (ca, cb) = (cks.first()?, cks.last()?);
    if ca.step >= cb.step {
        return None;
    }
    let (a, b) = (Model::open(ca).ok()?, Model::open(cb).ok()?);
    let modules = bn_modules(&b);
    if modules.is_empty() {
        return None;
    }
    // None when the tensor is missing in either checkpoint.
    let same = |name: &str| -> Option<bool> {
        let an = a.find(name)?;
        b.find(name)?;
        let d = a.diff(an, &b, name).ok()?;
        Some(d.identical_bytes || d.norm_diff == 0.0)
    };
    for md in &modules {
        let stats_same = ["running_mean", "running_var", "num_batches_tracked"]
            .iter()
            .filter_map(|t| same(&format!("{md}.{t}")))
            .collect::<Vec<_>>();
        if stats_same.len() < 2 || stats_same.iter().any(|s| !s) {
            return None;
        }
        let affine_moved = ["weight", "bias"]
            .iter()
            .filter_map(|t| same(&format!("{md}.{t}")))
            .any(|s| !s);
        if !affine_moved {
            return None;
        }
    }
    let counted = modules
        .first()
        .and_then(|md| b.find(&format!("{md}.num_batches_tracked")))
        .and_then(|n| b.stats(n, ctx.compute).ok())
        .map(|s| s.max);
    Some(
        Verdict::new("O5", Status::Fail, "eval_mode")
            .measured(format!(
                "all {} BatchNorm layers kept the same running statistics{} from {} to {}, while every one of them moved its weight/bias",
                modules.len(),
                counted.map(|c| format!(" and batch count ({c})")).unwrap_or_default(),
                a.at(),
                b.at()
            ))
            .expected("running statistics updated by every training forward pass")
            .message(format!(
                "the model trained in eval mode between these checkpoints: its BatchNorm layers learned but counted no batch ({}), so dropout was off and the statistics are stale — model.train() is not called again after an evaluation pass; call it at the start of every training epoch",
                list_some(&modules, 4)
            ))
            .evidence(step_ev(&a, &b).tensor(format!("{}.running_mean", modules[0])))
            .value("bn_layers", modules.len() as f64),
    )
}

/// The BatchNorm modules of a checkpoint (those holding a `running_mean`), in file order.
fn bn_modules(m: &Model) -> Vec<String> {
    let mut modules: Vec<String> = m
        .infos()
        .filter(|(n, _)| last_component(n) == "running_mean")
        .map(|(n, _)| module_of(n).to_string())
        .collect();
    modules.dedup();
    modules
}
