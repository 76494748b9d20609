//! `decay_groups` (S6.1): weight-decay groups holding 1-D tensors (norms, biases).

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;
use crate::probes::checkpoint::optimizer_state::*;
use crate::probes::util::*;

pub(super) const DECAY_GROUPS: ProbeSpec = ProbeSpec {
    id: "decay_groups",
    entries: &["S6.1", "O6"],
    inputs: &["optimizer"],
    params: &[
        "decay_min",
        "mixed_status",
        "batchnorm_status",
        "shrink_min",
    ],
    outcomes: &["pass", "decayed_1d", "skip"],
    run: decay_groups,
};

// =======================================================================================
// S6.1 — decay groups holding 1-D tensors
// =======================================================================================

pub fn decay_groups(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "S6.1";
    let decay_min = p!(ctx, E, "decay_min");
    let shrink_min = p!(ctx, E, "shrink_min");
    let mixed = match ctx.params.text("mixed_status") {
        Ok(t) if t.eq_ignore_ascii_case("fail") => Status::Fail,
        Ok(_) => Status::Warn,
        Err(e) => return vec![Verdict::skip(E, format!("playbook: {e}"))],
    };
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let model = model_for(ctx.run, c);
    let names = param_names(&opt, model.as_ref());
    let mut decayed_1d: Vec<String> = Vec::new();
    let mut groups_desc = Vec::new();
    let mut unknown = 0usize;
    let mut any_decay = false;
    // What decay does to an untouched 1-D tensor over the run: it shrinks by exp(-wd · Σ lr);
    // Σ lr ≤ peak LR × steps. None when a decayed group's LR or step count is unknown.
    let run_steps = ctx.run.max_step().filter(|s| *s > 0);
    let mut shrink: Option<f64> = Some(0.0);
    for g in &opt.groups {
        let wd = g.weight_decay.unwrap_or(0.0);
        // The peak: a scheduler's `initial_lr`, or the lr_max fact — the group's `lr` alone may be
        // a decayed end-of-run value that would understate the decay.
        let peak = [g.initial_lr, ctx.facts.f64("lr_max")]
            .into_iter()
            .flatten()
            .filter(|x| x.is_finite() && *x > 0.0)
            .reduce(f64::max);
        let steps = g
            .params
            .iter()
            .filter_map(|id| opt.state.get(id).and_then(|s| s.step))
            .chain(run_steps.map(|s| s as f64))
            .reduce(f64::max);
        let before = decayed_1d.len();
        let mut n1 = 0;
        let mut n2 = 0;
        for id in &g.params {
            let shape = opt
                .state
                .get(id)
                .map(|s| s.shape.clone())
                .filter(|s| !s.is_empty())
                .or_else(|| {
                    names
                        .get(id)
                        .and_then(|n| model.as_ref()?.info(n).map(|i| i.shape.clone()))
                });
            match shape {
                Some(s) if s.len() <= 1 => {
                    n1 += 1;
                    if wd > decay_min {
                        decayed_1d.push(describe_param(*id, &names, &opt));
                    }
                }
                Some(_) => n2 += 1,
                None => unknown += 1,
            }
        }
        if decayed_1d.len() > before {
            shrink = match (shrink, peak, steps) {
                (Some(x), Some(lr), Some(n)) => Some(x.max(1.0 - (-wd * lr * n).exp())),
                _ => None,
            };
        }
        any_decay |= wd > decay_min;
        groups_desc.push(format!(
            "group {} wd {}: {} params ({} 1-D, {} ≥2-D)",
            g.index,
            fmt(wd),
            g.params.len(),
            n1,
            n2
        ));
    }
    let measured = groups_desc.join("; ");
    let ev = opt_ev(&opt, c);
    let expected = "1-D tensors (biases, norm gains) only in weight_decay = 0 groups".to_string();
    // A net without LayerNorm/RMSNorm gains that decays every parameter follows the classic
    // recipe (torchvision's SGD + weight_decay on all tensors): its 1-D tensors are biases and
    // BatchNorm parameters, which decay leaves as trainable as before; the gains S6.1 and O6
    // protect are a transformer's norm gains. The playbook decides how loudly to say so
    // (`batchnorm_status`).
    // By meaning, not by name: a 1-D `weight` (or `scale`, `gamma`) is a normalisation gain
    // (Linear, conv and embedding weights are ≥ 2-D); it is BatchNorm's when its module keeps
    // a `running_mean`, a LayerNorm / RMSNorm / GroupNorm gain otherwise (`norm.weight`,
    // `ln_f.weight`, `input_layernorm.weight`).
    let norms = model.as_ref().map(|m| {
        let infos: Vec<_> = m.infos().collect();
        let stats: std::collections::HashSet<&str> = infos
            .iter()
            .filter_map(|(n, _)| n.strip_suffix("running_mean"))
            .collect();
        let mut bn = false;
        let mut ln = false;
        for (n, info) in &infos {
            let Some(module) = ["weight", "scale", "gamma"]
                .iter()
                .find_map(|g| n.strip_suffix(g))
                .filter(|m| m.is_empty() || m.ends_with('.'))
            else {
                continue;
            };
            if info.shape.len() != 1 {
                continue;
            }
            if stats.contains(module) {
                bn = true;
            } else {
                ln = true;
            }
        }
        (bn, ln)
    });
    let cnn = norms.is_some_and(|(_, ln)| !ln);
    if !decayed_1d.is_empty() && cnn {
        let st = match ctx.params.text("batchnorm_status") {
            Ok(t) if t.eq_ignore_ascii_case("fail") => Status::Fail,
            Ok(t) if t.eq_ignore_ascii_case("warn") => Status::Warn,
            Ok(_) => Status::Pass,
            Err(e) => return vec![Verdict::skip(E, format!("playbook: {e}"))],
        };
        let outcome = if st == Status::Pass {
            "pass"
        } else {
            "decayed_1d"
        };
        return vec![Verdict::new(E, st, outcome)
            .measured(measured)
            .expected(expected)
            .message(format!(
                "{}: {} 1-D tensors ({}) are decayed, as the classic CNN recipes do; excluding them (torchvision norm_weight_decay=0.0) is optional here — for a transformer's LayerNorm gains this would be flagged",
                if norms.is_some_and(|(bn, _)| bn) { "BatchNorm net without LayerNorm" } else { "no LayerNorm or RMSNorm in the model" },
                decayed_1d.len(),
                if norms.is_some_and(|(bn, _)| bn) { "BN gains and biases, layer biases" } else { "layer biases" }
            ))
            .evidence(ev)
            .value("decayed_1d", decayed_1d.len() as f64)];
    }
    if let Some(x) = shrink.filter(|x| !decayed_1d.is_empty() && *x < shrink_min) {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(format!("{measured}; decay shrinks an untouched 1-D tensor by {:.3}% over the run", 100.0 * x))
            .expected(format!("{expected}, or a decay too weak to matter (< {:.1}% over the run)", 100.0 * shrink_min))
            .message(format!(
                "{} 1-D tensors are decayed, but weight_decay × LR × steps removes only {:.3}% of an untouched gain over the run: harmless at this strength (split param groups by p.ndim if you raise weight_decay or train longer)",
                decayed_1d.len(),
                100.0 * x
            ))
            .evidence(ev)
            .value("decayed_1d", decayed_1d.len() as f64)
            .value("decay_shrink", x)];
    }
    if !decayed_1d.is_empty() {
        // No group without decay at all: the optimizer was built from `model.parameters()`
        // with one weight_decay — O6's recipe (a no-decay group, AdamW) is the fix. A split
        // that exists but puts 1-D tensors on the wrong side is S6.1's.
        let no_decay_group = opt
            .groups
            .iter()
            .any(|g| g.weight_decay.unwrap_or(0.0) <= decay_min);
        let (entry, how) = if no_decay_group {
            (
                E,
                "split param_groups by p.ndim (ndim < 2 → weight_decay 0.0)",
            )
        } else {
            ("O6", "there is no weight_decay = 0 group at all: build two param_groups (p.ndim ≥ 2 at your weight_decay, the rest at 0.0) and use AdamW, not Adam(weight_decay=…)")
        };
        let wd_now = opt
            .groups
            .iter()
            .filter_map(|g| g.weight_decay)
            .fold(0.0, f64::max);
        return vec![Verdict::new(entry, mixed, "decayed_1d")
            .measured(measured)
            .expected(expected)
            .message(format!(
                "{} 1-D tensors (biases, LayerNorm/BatchNorm gains) sit in a weight-decayed group (weight_decay {} here): {} — decay pulls norm gains toward 0 and biases toward 0; {how}",
                decayed_1d.len(),
                fmt(wd_now),
                list_some(&decayed_1d, 4)
            ))
            .evidence(ev)
            .value("decayed_1d", decayed_1d.len() as f64)];
    }
    if unknown > 0 && opt.state.is_empty() {
        return vec![Verdict::skip(
            E,
            "the optimizer has no state yet: parameter shapes unknown",
        )];
    }
    vec![Verdict::new(E, Status::Pass, "pass")
        .measured(measured)
        .expected(expected)
        .message(if any_decay {
            "decayed groups hold only ≥2-D tensors"
        } else {
            "no param group applies weight decay"
        })
        .evidence(ev)
        .value("decayed_1d", 0.0)]
}
