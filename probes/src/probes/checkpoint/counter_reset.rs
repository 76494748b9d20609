//! `counter_reset` (R4): state that may only grow went back between two checkpoints — step and
//! update counters, BatchNorm `num_batches_tracked`, observation-normaliser counts — the mark
//! of a resume that rebuilt the model or its buffers instead of loading them.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;

pub(super) const COUNTER_RESET: ProbeSpec = ProbeSpec {
    id: "counter_reset",
    entries: &["R4"],
    inputs: &["checkpoint:2"],
    params: &["min_drop_frac"],
    outcomes: &["pass", "reset", "skip"],
    run: counter_reset,
};

/// Last name components of one-element tensors that count steps, updates or samples.
const COUNTERS: &[&str] = &[
    "num_batches_tracked",
    "count",
    "counts",
    "num_updates",
    "n_updates",
    "num_steps",
    "n_steps",
    "step",
    "steps",
    "global_step",
    "num_timesteps",
    "total_steps",
    "n_samples",
    "num_samples",
];

fn is_counter(name: &str, numel: usize) -> bool {
    numel == 1 && COUNTERS.contains(&last_component(name))
}

pub fn counter_reset(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "R4";
    let min_drop = p!(ctx, E, "min_drop_frac");
    let cks: Vec<_> = weight_ckpts(ctx.run)
        .into_iter()
        .filter(|c| !c.step_unknown)
        .collect();
    if cks.len() < 2 {
        return vec![Verdict::skip(
            E,
            format!("needs two checkpoints at known steps; found {}", cks.len()),
        )];
    }
    let mut prev: Option<(Model, Vec<(String, f64)>)> = None;
    let mut seen_counters = 0usize;
    let mut resets: Vec<(String, f64, f64, u64, u64)> = Vec::new();
    let mut unreadable = Vec::new();
    for c in cks {
        let m = match Model::open(c) {
            Ok(m) => m,
            Err(e) => {
                unreadable.push(format!("{}: {e}", c.path.display()));
                continue;
            }
        };
        let names: Vec<String> = m
            .infos()
            .filter(|(n, i)| is_counter(n, i.numel()))
            .map(|(n, _)| n.to_string())
            .collect();
        let vals: Vec<(String, f64)> = names
            .into_iter()
            .filter_map(|n| {
                let st = m.stats(&n, ctx.compute).ok()?;
                (st.finite == 1).then_some((n, st.mean))
            })
            .collect();
        seen_counters = seen_counters.max(vals.len());
        if let Some((pm, pv)) = &prev {
            for (n, v) in &vals {
                if let Some((_, before)) = pv.iter().find(|(pn, _)| canonical(pn) == canonical(n)) {
                    if *before > 0.0 && *v < *before * (1.0 - min_drop) {
                        resets.push((n.clone(), *before, *v, pm.step, m.step));
                    }
                }
            }
        }
        prev = Some((m, vals));
    }
    if seen_counters == 0 {
        return vec![Verdict::skip(
            E,
            if unreadable.is_empty() {
                "no counter tensors (num_batches_tracked, step or update counts) in the checkpoints"
                    .to_string()
            } else {
                format!("unreadable checkpoints: {}", list_some(&unreadable, 2))
            },
        )];
    }
    let Some((last, _)) = prev else {
        return vec![Verdict::skip(E, "no readable checkpoint")];
    };
    let expected = "counters never decrease from one checkpoint to the next".to_string();
    if resets.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(format!(
                "{seen_counters} counter tensor(s) non-decreasing across the checkpoints"
            ))
            .expected(expected)
            .message("step, update and BatchNorm counters carry over between checkpoints")
            .evidence(last.ev())];
    }
    let (n, before, after, s0, s1) = &resets[0];
    let listed: Vec<String> = resets
        .iter()
        .map(|(n, b, a, s0, s1)| format!("{n} {b:.0} → {a:.0} (steps {s0}→{s1})"))
        .collect();
    vec![Verdict::new(E, Status::Fail, "reset")
        .measured(format!(
            "{} counter(s) went back: {}",
            resets.len(),
            list_some(&listed, 3)
        ))
        .expected(expected)
        .message("the run was resumed into freshly built state: buffers, normaliser statistics or step counters restarted from their initial values — save and load the full state (model buffers, obs/reward normalisers, replay buffer, optimizer, scheduler, RNG) and resume from it")
        .evidence(last.ev().steps(*s0, *s1).tensor(n.clone()))
        .value("before", *before)
        .value("after", *after)
        .value("resets", resets.len() as f64)]
}
