//! Questions over several dumped batches together: `caption_drop` (a text-to-image run whose
//! captions are never dropped, so classifier-free guidance has no unconditional branch, DF5)
//! and `eval_determinism` (two dumps of the same evaluation batch whose images differ: random
//! augmentation in the eval loader, V2).

use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::probes::stats::binom_tail_le;

use crate::probes::batch::read::*;
use crate::probes::checkpoint::model::rel_change;
use crate::tensors::TensorInfo;

pub(super) const CAPTION_DROP: ProbeSpec = ProbeSpec {
    id: "caption_drop",
    entries: &["DF5"],
    inputs: &[
        "batch:input_ids (captions)",
        "batch:latents",
        "config:bos/eos",
    ],
    params: &["healthy_drop", "alpha"],
    outcomes: &["pass", "never_dropped", "skip"],
    run: caption_drop,
};

/// Whether a caption row is empty: every token after an optional BOS is EOS / pad, or the
/// row is all one id.
fn empty_caption(row: &[i64], bos: Option<i64>, ends: &[i64]) -> bool {
    let body = match (row.first(), bos) {
        (Some(&f), Some(b)) if f == b => &row[1..],
        _ => row,
    };
    body.iter().all(|x| ends.contains(x)) || body.windows(2).all(|w| w[0] == w[1])
}

pub fn caption_drop(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (p, alpha) = (p!(ctx, "DF5", "healthy_drop"), p!(ctx, "DF5", "alpha"));
    let (batches, _) = open_batches(ctx);
    let diffusion = ctx.facts.get("domain") == Some("diffusion")
        || batches.iter().any(|b| b.find(LATENTS).is_some());
    if !diffusion {
        return vec![Verdict::skip(
            "DF5",
            "not a diffusion run with dumped latents (caption dropout is a diffusion question)",
        )];
    }
    let cfg = model_config(ctx);
    let c = cfg.as_ref().map(|c| &c.1);
    let bos = bos_id(ctx, c).or(Some(49406)); // CLIP's <|startoftext|>
    let mut ends = eos_ids(ctx, c);
    if let PadId::Id(pad) = PadId::of(ctx, c) {
        ends.push(pad);
    }
    ends.extend([49407, 0]); // CLIP's <|endoftext|> (its pad too), T5's pad
    let (mut rows, mut empty) = (0usize, 0usize);
    let mut ev = Vec::new();
    for b in &batches {
        let Some(Ok(ids)) = b.ints(&["input_ids", "prompt_ids", "text_input_ids", "captions_ids"])
        else {
            continue;
        };
        if ids.shape.len() != 2 {
            continue;
        }
        rows += ids.n_rows();
        empty += ids.rows().filter(|r| empty_caption(r, bos, &ends)).count();
        ev.push(b.ev(&ids.name));
    }
    if rows == 0 {
        return vec![Verdict::skip(
            "DF5",
            "no dumped caption token ids (input_ids) beside the latents",
        )];
    }
    // How likely is it to see this few empty captions if p of them were dropped?
    let tail = binom_tail_le(empty as u64, rows as u64, p);
    let measured = format!(
        "{empty} of {rows} dumped captions are empty (P = {tail:.3} at a drop rate of {p})"
    );
    let mut v = if empty > 0 {
        Verdict::new("DF5", Status::Pass, "pass").message(
            "some captions are dropped to the empty prompt: the unconditional branch trains",
        )
    } else if tail < alpha {
        Verdict::new("DF5", Status::Warn, "never_dropped").message(format!(
            "none of {rows} captions is the empty prompt — with a {:.0}% drop rate that happens with probability {tail:.3}: the conditioning is never dropped, so classifier-free guidance has no learned unconditional prediction; replace the caption with \"\" (or the null embedding) for ~10% of samples (e.g. --proportion_empty_prompts=0.1 in diffusers' scripts)",
            p * 100.0
        ))
    } else {
        Verdict::skip(
            "DF5",
            format!(
                "{rows} captions, none empty: too few to tell a {:.0}% drop rate from none",
                p * 100.0
            ),
        )
    };
    v = v
        .measured(measured)
        .expected(format!(
            "about {:.0}% empty captions when CFG is used",
            p * 100.0
        ))
        .value("captions", rows as f64)
        .value("empty", empty as f64);
    for e in ev.into_iter().take(3) {
        v = v.evidence(e);
    }
    vec![v]
}

pub(super) const EVAL_DETERMINISM: ProbeSpec = ProbeSpec {
    id: "eval_determinism",
    entries: &["V2"],
    inputs: &["batch:2 dumps of the eval batch (labels, pixel_values)"],
    params: &["min_labels", "rel_tol"],
    outcomes: &["pass", "random_eval", "skip"],
    run: eval_determinism,
};

/// A dump of an evaluation batch: its file name or its folder's says eval / val / test.
fn is_eval_dump(path: &std::path::Path) -> bool {
    let said = |c: Option<&std::ffi::OsStr>| {
        c.map(|n| n.to_string_lossy().to_ascii_lowercase())
            .is_some_and(|n| n.contains("eval") || n.contains("val") || n.contains("test"))
    };
    said(path.file_name()) || said(path.parent().and_then(|p| p.file_name()))
}

pub fn eval_determinism(ctx: &ProbeCtx) -> Vec<Verdict> {
    let (min_labels, tol) = (
        p!(ctx, "V2", "min_labels") as usize,
        p!(ctx, "V2", "rel_tol"),
    );
    let (batches, _) = open_batches(ctx);
    let evals: Vec<&Batch> = batches.iter().filter(|b| is_eval_dump(&b.path)).collect();
    // Two dumps are of the same evaluation batch when their labels are identical.
    struct Dump<'a> {
        b: &'a Batch,
        labels: Vec<i64>,
        pixels: &'a TensorInfo,
    }
    let dumps: Vec<Dump> = evals
        .iter()
        .filter_map(|b| {
            let l = b.ints(LABELS)?.ok()?;
            let p = b.find(PIXELS)?;
            (l.v.len() >= min_labels).then_some(Dump {
                b,
                labels: l.v,
                pixels: p,
            })
        })
        .collect();
    let pair = dumps.iter().enumerate().find_map(|(i, a)| {
        dumps[i + 1..]
            .iter()
            .find(|b| b.labels == a.labels)
            .map(|b| (a, b))
    });
    let Some((a, b)) = pair else {
        return vec![Verdict::skip(
            "V2",
            "needs two dumps of the same evaluation batch (eval/val in the file name, identical labels, pixel_values)",
        )];
    };
    let (pa, pb) = (a.pixels, b.pixels);
    if pa.shape != pb.shape {
        return vec![Verdict::new("V2", Status::Fail, "random_eval")
            .measured(format!("same labels, pixel shapes {:?} vs {:?}", pa.shape, pb.shape))
            .expected("identical pixels for the same evaluation batch")
            .message("the same evaluation batch comes out at different sizes: a random resize / crop runs in the eval transform — use a deterministic eval pipeline (Resize, CenterCrop, Normalize)")
            .evidence(Evidence::file(&a.b.path))
            .evidence(Evidence::file(&b.b.path))];
    }
    let rel = match a.b.file.compare(&pa.name, &b.b.file, &pb.name) {
        Ok(d) => rel_change(&d),
        Err(e) => {
            return vec![Verdict::skip(
                "V2",
                format!("could not compare the pixel tensors: {e}"),
            )]
        }
    };
    let measured = format!(
        "{} and {} hold the same {} labels; ‖Δpixels‖/‖pixels‖ = {rel:.3}",
        a.b.path.display(),
        b.b.path.display(),
        a.labels.len()
    );
    let v = if rel > tol {
        Verdict::new("V2", Status::Fail, "random_eval")
            .message("the same evaluation batch was dumped twice with different pixels: random augmentation (RandomResizedCrop, flips, colour jitter) runs in the eval loader — give evaluation a deterministic transform (Resize, CenterCrop, Normalize)")
    } else {
        Verdict::new("V2", Status::Pass, "pass")
            .message("the evaluation batch is the same every time")
    };
    vec![v
        .measured(measured)
        .expected(format!("relative pixel difference ≤ {tol}"))
        .evidence(Evidence::file(&a.b.path).tensor(&pa.name))
        .evidence(Evidence::file(&b.b.path).tensor(&pb.name))
        .value("rel_diff", rel)]
}
