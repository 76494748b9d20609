//! `tower_freeze` (X1): which VLM towers moved against the declared training stage.

use std::collections::{BTreeMap, HashSet};

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::checkpoint::model::*;

// =======================================================================================
// X1 — VLM towers: which moved against the declared stage
// =======================================================================================

pub(super) const TOWER_FREEZE: ProbeSpec = ProbeSpec {
    id: "tower_freeze",
    entries: &["X1", "X2", "X3", "X6"],
    inputs: &["checkpoint:2", "fact:stage"],
    params: &["moved_rel"],
    outcomes: &["pass", "wrong_towers", "skip"],
    run: tower_freeze,
};

pub fn tower_freeze(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "X1";
    let moved_rel = p!(ctx, E, "moved_rel");
    let newest = match newest_model(ctx.run, E) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let towers: HashSet<Tower> = newest.infos().filter_map(|(n, _)| tower_of(n)).collect();
    if !towers.contains(&Tower::Vision) && !towers.contains(&Tower::Projector) {
        return vec![Verdict::skip(
            E,
            "no VLM towers (vision encoder / projector) in the weights",
        )];
    }
    drop(newest);
    let (a, b) = match last_two(ctx.run, E) {
        Ok(x) => x,
        Err(v) => return v,
    };
    let (mv, _) = movements(&a, &b, |n, i| is_trainable(n, i) && tower_of(n).is_some());
    let mut counts: BTreeMap<Tower, (usize, usize)> = BTreeMap::new();
    for m in &mv {
        if let Some(t) = tower_of(&m.name) {
            let e = counts.entry(t).or_default();
            e.1 += 1;
            if m.rel > moved_rel {
                e.0 += 1;
            }
        }
    }
    let moved = |t: Tower| counts.get(&t).is_some_and(|c| c.0 > 0);
    let present = |t: Tower| counts.contains_key(&t);
    let measured = counts
        .iter()
        .map(|(t, (m, n))| format!("{} {m}/{n} moved", t.label()))
        .collect::<Vec<_>>()
        .join(", ")
        + &format!(" (steps {}..{})", a.step, b.step);
    let stage = ctx.facts.get("stage").map(|s| s.trim().to_string());
    let mut wrong = Vec::new();
    let expected = match stage.as_deref() {
        Some("1") => {
            if moved(Tower::Vision) {
                wrong.push("the vision encoder moved");
            }
            if moved(Tower::Llm) {
                wrong.push("the LLM moved");
            }
            if present(Tower::Projector) && !moved(Tower::Projector) {
                wrong.push("the projector did not move");
            }
            "stage 1: only the projector trains"
        }
        Some("2") => {
            if moved(Tower::Vision) {
                wrong.push("the vision encoder moved");
            }
            if present(Tower::Llm) && !moved(Tower::Llm) {
                wrong.push("the LLM did not move");
            }
            "stage 2: LLM (+ projector) train, vision encoder frozen"
        }
        _ => "declare --fact stage=1|2 to check the freeze schedule",
    };
    let ev = step_ev(&a, &b);
    let mut v = if stage.is_none() {
        Verdict::new(E, Status::Pass, "pass").message(
            "towers that moved are listed; no stage declared, so nothing to compare against",
        )
    } else if wrong.is_empty() {
        Verdict::new(E, Status::Pass, "pass")
            .message("the towers that moved match the declared stage")
    } else {
        Verdict::new(E, Status::Fail, "wrong_towers").message(format!(
            "{} — the freeze schedule does not match stage {}: set requires_grad per tower AND build the optimizer over the trainable towers only (stage 1: projector; stage 2: projector + LLM, vision frozen)",
            wrong.join("; "),
            stage.clone().unwrap_or_default()
        ))
    };
    v = v.measured(measured).expected(expected).evidence(ev);
    for (t, (m, n)) in &counts {
        v = v
            .value(&format!("{}_moved", t.label()), *m as f64)
            .value(&format!("{}_tensors", t.label()), *n as f64);
    }
    vec![v]
}
