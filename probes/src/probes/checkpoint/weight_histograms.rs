//! `weight_histograms` (O26): weight distributions collapsing toward 0.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::tensors::TensorStats;

use crate::probes::checkpoint::model::*;
use crate::probes::util::*;

// =======================================================================================
// O26 — weight histograms: collapse toward 0
// =======================================================================================

/// 10th–90th percentile of floor(log2|x|) from the log histogram, as powers of ten.
fn hist_span(s: &TensorStats) -> Option<String> {
    let h = &s.hist;
    let nonzero: u64 = h.pos.iter().chain(&h.neg).sum();
    if nonzero == 0 {
        return None;
    }
    let mut bins = vec![0u64; h.pos.len()];
    for (i, b) in bins.iter_mut().enumerate() {
        *b = h.pos[i] + h.neg.get(i).copied().unwrap_or(0);
    }
    let q = |f: f64| {
        let target = (f * nonzero as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, b) in bins.iter().enumerate() {
            acc += b;
            if acc >= target {
                return crate::tensors::LogHist::bin_exponent(i);
            }
        }
        crate::tensors::LogHist::bin_exponent(bins.len() - 1)
    };
    let (lo, hi) = (q(0.1), q(0.9));
    Some(format!(
        "|x| 10–90%: {}…{}",
        fmt(2f64.powi(lo)),
        fmt(2f64.powi(hi + 1))
    ))
}
pub(super) const WEIGHT_HISTOGRAMS: ProbeSpec = ProbeSpec {
    id: "weight_histograms",
    entries: &["O26", "O25"],
    inputs: &["checkpoint:2"],
    params: &["zero_frac_warn", "std_collapse", "zero_frac_growth"],
    outcomes: &["pass", "collapsed", "skip"],
    run: weight_histograms,
};

pub fn weight_histograms(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O26";
    let (zero_warn, collapse, zero_growth) = (
        p!(ctx, E, "zero_frac_warn"),
        p!(ctx, E, "std_collapse"),
        p!(ctx, E, "zero_frac_growth"),
    );
    let cks = weight_ckpts(ctx.run);
    if cks.len() < 2 {
        return vec![Verdict::skip(
            E,
            format!("needs two checkpoints with weights; found {}", cks.len()),
        )];
    }
    let (a, b) = match (Model::open(cks[0]), Model::open(cks[cks.len() - 1])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            return vec![Verdict::skip(E, format!("cannot read a checkpoint: {e}"))]
        }
    };
    let mut flagged = Vec::new();
    let mut checked = 0usize;
    for (name, info) in b.infos() {
        if !is_trainable(name, info) || info.numel() < 16 {
            continue;
        }
        let Some(an) = a.find(name) else { continue };
        let (Ok(sa), Ok(sb)) = (a.stats(an, ctx.compute), b.stats(name, ctx.compute)) else {
            continue;
        };
        if sa.finite == 0 || sb.finite == 0 || sa.std <= 0.0 {
            continue;
        }
        checked += 1;
        let (za, zb) = (sa.zero_frac(), sb.zero_frac());
        let zero_grew = zb > zero_warn && zb > za + zero_growth;
        let shrunk = sb.std > 0.0 && sa.std / sb.std >= collapse || sb.std == 0.0;
        if zero_grew || shrunk {
            let shape = match (hist_span(&sa), hist_span(&sb)) {
                (Some(x), Some(y)) => format!("; {x} → {y}"),
                _ => String::new(),
            };
            flagged.push((
                name.to_string(),
                format!(
                    "{name}: std {} → {}, zeros {:.0}% → {:.0}%{shape}",
                    fmt(sa.std),
                    fmt(sb.std),
                    100.0 * za,
                    100.0 * zb
                ),
            ));
        }
    }
    if checked == 0 {
        return vec![Verdict::skip(
            E,
            "no tensor with a non-degenerate distribution in both the first and last checkpoint",
        )];
    }
    let measured = format!(
        "{} of {checked} tensors collapsed between steps {} and {}",
        flagged.len(),
        a.step,
        b.step
    );
    let expected = format!(
        "zero fraction ≤ {zero_warn}, or grown by ≤ {zero_growth} since the first checkpoint; std shrinks < {collapse}×"
    );
    if flagged.is_empty() {
        return vec![Verdict::new(E, Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .message("no weight distribution collapsed toward 0")
            .evidence(step_ev(&a, &b))];
    }
    let texts: Vec<String> = flagged.iter().map(|(_, t)| t.clone()).collect();
    let mut v = Verdict::new(E, Status::Warn, "collapsed")
        .measured(measured)
        .expected(expected)
        .message(format!("weights collapsed toward a spike at 0: {} — dead units (ReLU, O25), weight decay far stronger than the gradient, or an LR that drove them to 0", list_some(&texts, 3)));
    for (n, _) in flagged.iter().take(3) {
        v = v.evidence(step_ev(&a, &b).tensor(n));
    }
    vec![v.value("collapsed", flagged.len() as f64)]
}
