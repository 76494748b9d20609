//! `params_without_state` (O2/O17): parameters in the optimizer that hold no state.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;
use crate::probes::checkpoint::optimizer_state::*;

pub(super) const PARAMS_WITHOUT_STATE: ProbeSpec = ProbeSpec {
    id: "params_without_state",
    entries: &["O2", "O17"],
    inputs: &["optimizer"],
    params: &[],
    outcomes: &["pass", "missing_state", "skip"],
    run: params_without_state,
};

// =======================================================================================
// O2/O17 — params in the optimizer without state
// =======================================================================================

pub fn params_without_state(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O2";
    let (opt, c) = match newest_optimizer(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    if opt.partitioned {
        return vec![Verdict::skip(
            E,
            "a DeepSpeed ZeRO partition: per-parameter state is flattened into one tensor per group",
        )];
    }
    let total: usize = opt.groups.iter().map(|g| g.params.len()).sum();
    let missing = opt.params_without_state();
    let step = opt
        .max_step()
        .unwrap_or(0.0)
        .max(c.map(|c| c.step as f64).unwrap_or(0.0));
    let adam_like = opt.groups.iter().any(|g| g.betas.is_some());
    let ev = opt_ev(&opt, c);
    if step <= 0.0 {
        return vec![Verdict::skip(E, "the optimizer has not stepped yet")];
    }
    if opt.state.is_empty() && !adam_like {
        return vec![Verdict::skip(
            E,
            "the optimizer keeps no per-parameter state (plain SGD)",
        )];
    }
    let measured = format!(
        "{} of {total} params have no optimizer state at step {}",
        missing.len(),
        fstep(step)
    );
    if missing.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected("every param in a group has state")
            .message("every parameter in the optimizer received a gradient")
            .evidence(ev)];
    }
    let model = model_for(ctx.run, c);
    let names = param_names(&opt, model.as_ref());
    // Params a framework keeps out of training on purpose (Ultralytics' DFL projection, a
    // pooler under mean pooling): by name where the optimizer's params are named, else by
    // count — no more params lack state than the model has such tensors.
    let by_design: Vec<String> = model
        .as_ref()
        .map(|m| {
            m.infos()
                .filter(|(n, i)| {
                    is_trainable(n, i)
                        && crate::probes::checkpoint::by_design::unused_by_design(ctx.run, n)
                            .is_some()
                })
                .map(|(n, _)| n.to_string())
                .collect()
        })
        .unwrap_or_default();
    let unexplained: Vec<u64> = missing
        .iter()
        .copied()
        .filter(|id| {
            names
                .get(id)
                .is_none_or(|n| !by_design.iter().any(|b| b == n))
        })
        .collect();
    let unnamed_covered = unexplained.iter().all(|id| !names.contains_key(id))
        && unexplained.len() <= by_design.len();
    if unexplained.is_empty() || (!by_design.is_empty() && unnamed_covered) {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected("every param in a group has state")
            .message(format!(
                "the params without state are ones the framework keeps fixed on purpose: {} ({})",
                list_some(&by_design, 3),
                by_design
                    .first()
                    .and_then(|n| crate::probes::checkpoint::by_design::unused_by_design(
                        ctx.run, n
                    ))
                    .unwrap_or("")
            ))
            .evidence(ev)];
    }
    let missing = unexplained;
    let list: Vec<String> = missing
        .iter()
        .map(|id| describe_param(*id, &names, &opt))
        .collect();
    vec![Verdict::new(E, Status::Warn, "missing_state")
        .measured(measured)
        .expected("every param in a group has state")
        .message(format!(
            "{} params in the optimizer never received a gradient: {} — they are frozen (requires_grad=False) or unused in forward; if they should train, their graph is cut (detach, no_grad, an unused branch); if frozen, leave them out of the optimizer",
            missing.len(),
            list_some(&list, 6)
        ))
        .evidence(ev)
        .value("missing", missing.len() as f64)]
}
