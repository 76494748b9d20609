//! `val_scale` (V1, S4.2): the validation loss on another scale than the training loss from the
//! start. Before anything could be overfitted, a loss computed the same way on data of the same
//! kind sits near the loss training started from; a validation loss that never comes within
//! `ratio` times that level is not the same computation: inputs left unscaled or normalised
//! differently in the eval pipeline (V1), a sum where training takes a mean, another loss.

use super::val_stuck::{loss_pair, LossPair};
use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::probes::util::*;

pub(super) const VAL_SCALE: ProbeSpec = ProbeSpec {
    id: "val_scale",
    entries: &["V1"],
    inputs: &["metrics:loss", "metrics:eval_loss"],
    params: &["ratio", "ratio_pretrained", "gap_min", "min_evals"],
    outcomes: &["pass", "scale", "skip"],
    run: val_scale,
};

/// The rule, from the training loss's starting level L0 (the median of its first few logged
/// batches, or its first epoch's mean) in a log that starts at the run's start:
/// - the best (lowest) validation loss is at least `ratio` × L0 and at least `gap_min` above it;
/// - in a run not known to start from random weights, L0 is no untrained level (a fine-tune
///   starts low on its own data, and its validation may be other data): `ratio_pretrained`.
///
/// Overfitting differs: its validation loss starts near L0 and climbs later, so its best stays
/// near L0. A fine-tune's validation on other data differs by a small factor, not an order of
/// magnitude. When the class count or vocabulary is known, the best validation loss must also
/// be worse than guessing uniformly twice over (2 ln C): a cross-entropy anywhere below that is
/// a model that learned something, measured on harder data.
pub fn val_scale(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "V1";
    let (ratio, ratio_pretrained, gap_min, min_evals) = (
        p!(ctx, E, "ratio"),
        p!(ctx, E, "ratio_pretrained"),
        p!(ctx, E, "gap_min"),
        p!(ctx, E, "min_evals"),
    );
    let LossPair {
        tr,
        ev,
        train,
        evals,
        head_n,
        l0,
    } = match loss_pair(
        ctx,
        E,
        min_evals,
        3,
        "needs both a training loss and an eval/val loss series",
        "no starting level to compare validation with",
    ) {
        Ok(p) => p,
        Err(v) => return v,
    };
    let (best_at, best) = evals
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, f64::NAN));
    let ratio = if ctx.profile.init.value == crate::profile::Init::Scratch {
        ratio
    } else {
        ratio_pretrained
    };
    // Uniform guessing's loss, ln C or ln V, as the profile's start check defines it.
    let chance = crate::profile::start::chance_loss(ctx.facts, ctx.profile.phase.value);
    let measured = format!(
        "validation best {} at {} {} (first {} at {} {}); training started at {} ({} {}..{})",
        fmt(best),
        ev.unit.as_str(),
        best_at,
        fmt(evals[0].1),
        ev.unit.as_str(),
        evals[0].0,
        fmt(l0),
        tr.unit.as_str(),
        train[0].0,
        train[head_n - 1].0,
    );
    let expected = format!(
        "validation comes within {ratio:.0}× the training loss's starting level at least once{}",
        chance
            .map(|c| format!(", or stays under 2 ln C = {}", fmt(2.0 * c)))
            .unwrap_or_default()
    );
    let beyond_guessing = chance.is_none_or(|c| best >= 2.0 * c);
    if l0 > 0.0 && best >= ratio * l0 && best - l0 >= gap_min && beyond_guessing {
        return vec![Verdict::new(E, Status::Fail, "scale")
            .measured(measured)
            .expected(expected)
            .message(format!(
                "validation at its best was {:.0}× the loss training started from: it is not computed the same way. Most often the eval pipeline feeds inputs scaled or normalised differently (the /255 or mean/std applied in training only: use one transform for both); also a sum where training takes a mean (reduction=), or another loss function",
                best / l0
            ))
            .evidence(whole_series_evidence(ev))
            .value("ratio", best / l0)];
    }
    vec![Verdict::new(E, Status::Pass, "pass")
        .measured(measured)
        .expected(expected)
        .message("validation is on the training loss's scale")
        .evidence(whole_series_evidence(ev))
        .value("ratio", best / l0)]
}

#[cfg(test)]
mod tests {
    use super::val_scale;
    use crate::probe::Status;
    use crate::probes::metric::tests::{ask, run_with, thresholds};

    /// A training loss from `start` falling to a fifth of it over 100 steps, and evals.
    fn run(start: f64, evals: &[f64]) -> crate::run::Run {
        let train: Vec<(u64, f64)> = (1..=100)
            .map(|t| (t, start * (1.0 - 0.8 * (t as f64 - 1.0) / 99.0)))
            .collect();
        let ev: Vec<(u64, f64)> = evals
            .iter()
            .enumerate()
            .map(|(i, &v)| (20 * (i as u64 + 1), v))
            .collect();
        run_with(&[("loss", train), ("eval_loss", ev)])
    }

    #[test]
    fn validation_on_another_scale_fails_and_overfitting_does_not() {
        let p = thresholds("val_scale");
        let scratch = ["init=scratch"];
        // The eval path skips the /255: validation 100x the start, from the first eval.
        let v = ask(
            val_scale,
            &run(2.3, &[230.0, 200.0, 180.0]),
            &scratch,
            p.clone(),
        );
        assert_eq!(
            (v.status, v.outcome.as_str()),
            (Status::Fail, "scale"),
            "{v:?}"
        );
        // The start is the median of the first five batches (2.28), not the first alone.
        assert!((78.0..80.0).contains(&v.values["ratio"]), "{v:?}");
        // Healthy, and overfitting: validation starts near the training loss, then climbs.
        for evals in [[2.0, 1.0, 0.6, 0.5, 0.5], [2.0, 1.5, 3.0, 6.0, 12.0]] {
            let v = ask(val_scale, &run(2.3, &evals), &scratch, p.clone());
            assert_eq!(v.status, Status::Pass, "{evals:?}: {v:?}");
        }
        // 7x the start: past the random-init bar, under the bar for weights that may be trained.
        let seven = run(2.3, &[16.1, 16.5, 17.0]);
        assert_eq!(
            ask(val_scale, &seven, &scratch, p.clone()).status,
            Status::Fail
        );
        assert_eq!(ask(val_scale, &seven, &[], p.clone()).status, Status::Pass);
        // A fine-tune starting low on its own data, validated on harder data: 12x its start but
        // under twice the loss of uniform guessing over 10 classes is a model that learned.
        let ft = run(0.2, &[2.5, 2.4, 2.6]);
        assert_eq!(ask(val_scale, &ft, &[], p.clone()).status, Status::Fail);
        assert_eq!(
            ask(val_scale, &ft, &["num_classes=10"], p.clone()).status,
            Status::Pass
        );
        // Tiny losses: 10x but 0.02 apart is noise.
        let tiny = run(0.002, &[0.02, 0.021, 0.022]);
        assert_eq!(
            ask(val_scale, &tiny, &scratch, p.clone()).status,
            Status::Pass
        );
    }

    #[test]
    fn a_log_that_starts_mid_run_or_lacks_evals_is_skipped() {
        let p = thresholds("val_scale");
        let late: Vec<(u64, f64)> = (5000..5100).map(|t| (t, 0.5)).collect();
        let r = run_with(&[
            ("loss", late),
            ("eval_loss", vec![(5050, 50.0), (5099, 60.0)]),
        ]);
        assert_eq!(ask(val_scale, &r, &[], p.clone()).status, Status::Skip);
        let one_eval = run(2.3, &[230.0]);
        assert_eq!(
            ask(val_scale, &one_eval, &["init=scratch"], p.clone()).status,
            Status::Skip
        );
        let no_eval = run_with(&[("loss", vec![(1, 2.3), (2, 2.2), (3, 2.1)])]);
        assert_eq!(ask(val_scale, &no_eval, &[], p).status, Status::Skip);
    }
}
