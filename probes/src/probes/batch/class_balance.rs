//! `class_balance` (V6): one class dominating the labels.

use std::collections::BTreeMap;

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;

pub(super) const CLASS_BALANCE: ProbeSpec = ProbeSpec {
    id: "class_balance",
    entries: &["V6"],
    inputs: &["batch:labels"],
    params: &["majority_frac", "alpha"],
    outcomes: &["pass", "imbalanced", "skip"],
    run: class_balance,
};

// ---------------------------------------------------------------------------------------
// V6: class balance

pub fn class_balance(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (maj, alpha) = (p!(ctx, "V6", "majority_frac"), p!(ctx, "V6", "alpha"));
    let cfg = model_config(ctx);
    let c = num_classes(ctx, cfg.as_ref().map(|c| &c.1));
    over_batches(ctx, "V6", "no batch carries class labels", |b| {
        let lt = class_labels(ctx, b)?;
        let labels = match b.read_ints(lt) {
            Ok(l) => l,
            Err(e) => return Some(Verdict::skip("V6", e)),
        };
        let mut hist: BTreeMap<i64, u64> = BTreeMap::new();
        for &x in &labels.v {
            if x >= 0 && c.is_none_or(|c| x < c as i64) {
                *hist.entry(x).or_default() += 1;
            }
        }
        let n: u64 = hist.values().sum();
        let ev = b.ev(&labels.name);
        if n == 0 {
            return Some(
                Verdict::skip("V6", "no valid class label (all ignored or out of range)")
                    .evidence(ev),
            );
        }
        let (top, top_n) = hist
            .iter()
            .max_by_key(|(k, v)| (**v, std::cmp::Reverse(**k)))
            .map(|(k, v)| (*k, *v))
            .unwrap_or((0, 0));
        let frac = top_n as f64 / n as f64;
        let present = hist.len();
        let of = c.map(|c| format!(" of {c}")).unwrap_or_default();
        let measured = format!(
            "majority class {top} = {} of {n} labels; {present}{of} classes present",
            pct(frac)
        );
        let expected = format!(
            "majority ≤ {} (binomial test at α = {alpha} on the {n} labels seen)",
            pct(maj)
        );
        let v = Verdict::new("V6", Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .evidence(ev)
            .value("majority_frac", frac)
            .value("labels", n as f64)
            .value("classes_present", present as f64);
        // Judge the sample, not a minimum count: a majority this large is imbalance when it is
        // unlikely (< alpha) with a share of at most `maj`; a pass needs the count unlikely
        // with a share of `maj` or more. Between the two the sample cannot tell.
        let p_if_balanced = crate::probes::stats::binom_tail_ge(top_n, n, maj);
        let p_if_imbalanced = crate::probes::stats::binom_tail_le(top_n, n, maj);
        let v = v
            .value("p_if_balanced", p_if_balanced)
            .value("p_if_imbalanced", p_if_imbalanced);
        if p_if_balanced >= alpha && p_if_imbalanced >= alpha {
            return Some(Verdict {
                status: Status::Skip,
                outcome: "skip".into(),
                message: format!("{n} labels cannot tell: {top_n} of {n} in one class happens with probability {} even when no class exceeds {} (and {} when one does) — dump a larger batch or pass the dataset's label histogram", crate::probes::util::fmt(p_if_balanced), pct(maj), crate::probes::util::fmt(p_if_imbalanced)),
                ..v
            });
        }
        if p_if_balanced < alpha {
            return Some(Verdict {
                status: Status::Warn,
                outcome: "imbalanced".into(),
                message: format!("class {top} dominates ({}): an unweighted loss can settle on always predicting it — weight the loss by inverse frequency (CrossEntropyLoss(weight=…)), focal loss, or a class-balanced sampler, and report per-class / macro metrics", pct(frac)),
                ..v
            });
        }
        Some(Verdict {
            message: "no single class dominates this batch".into(),
            ..v
        })
    })
}
