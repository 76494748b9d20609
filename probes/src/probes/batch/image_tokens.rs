//! `image_tokens` (X4): the expected image tokens in every row.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;

/// `model_type`s whose image token count depends on the image size.
const ANYRES_TYPES: &[&str] = &[
    "llava_next",
    "llava_next_video",
    "llava_onevision",
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "idefics2",
    "idefics3",
    "smolvlm",
    "internvl",
    "minicpmv",
];

pub(super) const IMAGE_TOKENS: ProbeSpec = ProbeSpec {
    id: "image_tokens",
    entries: &["X4"],
    inputs: &[
        "batch:input_ids",
        "fact:image_token_id",
        "fact:image_tokens_per_image",
    ],
    params: &[],
    outcomes: &["pass", "truncated", "skip"],
    run: image_tokens,
};

// ---------------------------------------------------------------------------------------
// X4: image tokens per row

pub fn image_tokens(ctx: &ProbeCtx) -> Vec<Verdict> {
    let cfg = model_config(ctx).map(|c| c.1);
    let img_id = image_token_id(ctx, cfg.as_ref());
    let per_image = ctx.facts.u64("image_tokens_per_image").or_else(|| {
        cfg.as_ref().and_then(|c| {
            [
                "image_seq_length",
                "mm_tokens_per_image",
                "num_image_tokens",
            ]
            .iter()
            .find_map(|k| c.raw.get(*k).and_then(serde_json::Value::as_u64))
        })
    });
    let (Some(img_id), Some(k)) = (img_id, per_image.filter(|k| *k > 0)) else {
        let mut missing = Vec::new();
        if img_id.is_none() {
            missing.push("image_token_id");
        }
        if per_image.is_none_or(|k| k == 0) {
            missing.push("image_tokens_per_image");
        }
        return vec![Verdict::skip(
            "X4",
            format!(
                "needs fact {} (tokens one image expands into)",
                missing.join(" and ")
            ),
        )];
    };
    // Anyres / dynamic-resolution models (LLaVA-NeXT, OneVision, Qwen2-VL, Idefics3...) expand
    // each image into a size-dependent number of tokens: no fixed multiple applies.
    let anyres_cfg = cfg.as_ref().is_some_and(|c| {
        c.raw.get("image_grid_pinpoints").is_some()
            || c.model_type
                .as_deref()
                .is_some_and(|m| ANYRES_TYPES.iter().any(|t| m.eq_ignore_ascii_case(t)))
    });
    over_batches(ctx, "X4", "no batch carries input_ids", |b| {
        let ids = match b.ints(INPUT_IDS)? {
            Ok(i) => i,
            Err(e) => return Some(Verdict::skip("X4", e)),
        };
        let counts: Vec<u64> = ids
            .rows()
            .map(|r| r.iter().filter(|&&x| x == img_id).count() as u64)
            .collect();
        // One image per row when the pixel batch has as many images as rows.
        let one_per_row = b
            .find(PIXELS)
            .is_some_and(|p| p.shape.len() == 4 && p.shape.first() == Some(&counts.len()));
        let anyres = anyres_cfg || b.find(&["image_sizes", "image_grid_thw"]).is_some();
        // A row that ends inside an image's placeholders was cut at max_length, whatever the
        // model; for a fixed tokens-per-image model a count off the multiple says so too.
        let ends_in_image: Vec<bool> = ids.rows().map(|r| r.last() == Some(&img_id)).collect();
        // No placeholder in any row is not a cut run but an absence (image_presence, X5).
        let any_tokens = counts.iter().any(|&n| n > 0);
        let bad: Vec<(usize, u64)> = counts
            .iter()
            .enumerate()
            .filter(|&(i, &n)| {
                ends_in_image[i]
                    || (!anyres && (n % k != 0 || (one_per_row && any_tokens && n < k)))
            })
            .map(|(i, &n)| (i, n))
            .collect();
        let with = counts.iter().filter(|&&n| n > 0).count();
        let shown: Vec<String> = counts.iter().take(16).map(|n| n.to_string()).collect();
        let measured = format!(
            "image-token ({img_id}) counts per row: [{}{}]; {with} of {} rows carry images",
            shown.join(", "),
            if counts.len() > 16 { ", …" } else { "" },
            counts.len()
        );
        let expected = if anyres {
            "no row ending inside an image's placeholders (anyres: counts vary with image size)"
                .to_string()
        } else {
            format!(
                "a positive multiple of {k} in each row with images{}",
                if one_per_row {
                    " (one image per row)"
                } else {
                    ""
                }
            )
        };
        let v = Verdict::new("X4", Status::Pass, "pass")
            .measured(measured)
            .expected(expected)
            .evidence(b.ev(&ids.name))
            .value("rows_bad", bad.len() as f64)
            .value("tokens_per_image", k as f64);
        if with == 0 && !one_per_row {
            return Some(Verdict {
                message: "no image placeholder in this batch (text-only rows)".into(),
                ..v
            });
        }
        if !bad.is_empty() {
            let list: Vec<String> = bad
                .iter()
                .take(6)
                .map(|(r, n)| format!("row {r}: {n}"))
                .collect();
            return Some(Verdict {
                status: Status::Fail,
                outcome: "truncated".into(),
                message: format!("{} row(s) hold a cut run of image tokens ({}; a count off the multiple of {k}, or a row ending inside the placeholders): truncation to max_length cut the placeholders, so image features and tokens no longer match — set max_length=None for VLM training (or large enough), and truncate text only", bad.len(), list.join(", ")),
                ..v
            });
        }
        Some(Verdict {
            message: "every row carries whole images' worth of image tokens".into(),
            ..v
        })
    })
}
