//! `bn_drift` (O18): BatchNorm running statistics drifting under frozen weights.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;

pub(super) const BN_DRIFT: ProbeSpec = ProbeSpec {
    id: "bn_drift",
    entries: &["O18", "V7"],
    inputs: &["checkpoint:2", "fact:frozen"],
    params: &["moved_rel"],
    outcomes: &["pass", "drift", "skip"],
    run: bn_drift,
};

// =======================================================================================
// O18 — BatchNorm running statistics drifting under frozen weights
// =======================================================================================

pub fn bn_drift(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O18";
    let moved_rel = p!(ctx, E, "moved_rel");
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
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
