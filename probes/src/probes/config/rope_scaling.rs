//! `rope_scaling` (L5): the training context against max_position_embeddings and rope_scaling.

use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};

use crate::probes::batch::read::*;
use crate::probes::util::*;

pub(super) const ROPE_SCALING: ProbeSpec = ProbeSpec {
    id: "rope_scaling",
    entries: &["L5"],
    inputs: &[
        "config:max_position_embeddings",
        "config:rope_scaling",
        "fact:context",
    ],
    params: &["linear_max_factor"],
    outcomes: &["pass", "missing", "too_small", "skip"],
    run: rope_scaling,
};

// ---------------------------------------------------------------------------------------
// L5: rope_scaling vs context

/// Context lengths well-known base models were pretrained at, by a lower-case fragment of their
/// name (most specific first). A fine-tune's config.json may carry a max_position_embeddings
/// the user raised; the rotation angles the model knows are these.
const PRETRAINED_CONTEXT: &[(&str, u64)] = &[
    ("llama-3.3", 131_072),
    ("llama-3.2", 131_072),
    ("llama-3.1", 131_072),
    ("llama-3", 8_192),
    ("llama-2", 4_096),
    ("tinyllama", 2_048),
    ("qwen2.5", 32_768),
    ("qwen2-", 32_768),
    ("gemma-2", 8_192),
    ("gemma-7b", 8_192),
    ("gemma-2b", 8_192),
    ("phi-2", 2_048),
    ("pythia", 2_048),
    ("gpt2", 1_024),
];

/// The pretrained context of the base model the run names (`base_model` fact from a model card
/// or `--fact`, else config.json's `_name_or_path`), with the name.
fn pretrained_context(
    ctx: &ProbeCtx,
    c: Option<&crate::config::ModelConfig>,
) -> Option<(u64, String)> {
    let name = ctx
        .facts
        .get("base_model")
        .map(str::to_string)
        .or_else(|| {
            c.and_then(|c| c.raw.get("_name_or_path"))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        })?;
    let lower = name.to_ascii_lowercase();
    PRETRAINED_CONTEXT
        .iter()
        .find(|(frag, _)| lower.contains(frag))
        .map(|(_, n)| (*n, name))
}

pub fn rope_scaling(ctx: &ProbeCtx) -> Vec<Verdict> {
    let linear_max = p!(ctx, "L5", "linear_max_factor");
    let cfg = model_config(ctx);
    let c = cfg.as_ref().map(|c| &c.1);
    let Some(cfg_pos) = ctx
        .facts
        .u64("max_position_embeddings")
        .or_else(|| c.and_then(|c| c.max_position_embeddings))
        .filter(|m| *m > 0)
    else {
        return vec![Verdict::skip("L5", "needs max_position_embeddings: no config.json in the run (or pass --fact max_position_embeddings=…)")];
    };
    // A raised max_position_embeddings does not teach the model new positions: judge against
    // the base model's pretrained context when the run names a known base.
    let base = pretrained_context(ctx, c).filter(|(n, _)| *n < cfg_pos);
    let max_pos = base.as_ref().map_or(cfg_pos, |b| b.0);
    let (context, ctx_src, ctx_ev) = match ctx.facts.u64("context").filter(|c| *c > 0) {
        Some(v) => (v, "fact context".to_string(), None),
        None => {
            let (batches, _) = open_batches(ctx);
            let best = batches
                .iter()
                .filter_map(|b| {
                    b.find(INPUT_IDS).map(|t| {
                        (
                            t.shape.last().copied().unwrap_or(0) as u64,
                            b.path.clone(),
                            t.name.clone(),
                        )
                    })
                })
                .max_by_key(|x| x.0);
            match best.filter(|b| b.0 > 0) {
                Some((len, p, name)) => (len, "batch sequence length".to_string(), Some(Evidence::file(p).tensor(name))),
                None => return vec![Verdict::skip("L5", "needs fact context (the sequence length trained or inferred at): no batch with input_ids either")],
            }
        }
    };
    let rope_type = ctx
        .facts
        .get("rope_type")
        .map(str::to_string)
        .or_else(|| c.and_then(|c| c.rope_type().map(str::to_string)));
    let factor = ctx
        .facts
        .f64("rope_factor")
        .or_else(|| c.and_then(|c| c.rope_factor()));
    let scaled = rope_type.is_some() || factor.is_some();
    let orig = ctx
        .facts
        .u64("rope_original_max_position_embeddings")
        .or_else(|| c.and_then(|c| c.rope_original_max_position_embeddings()))
        .filter(|o| *o > 0)
        .unwrap_or(max_pos);
    let absolute = c.is_some_and(|c| c.rope_theta.is_none() && c.raw.get("n_positions").is_some());
    let rope_txt = if scaled {
        format!(
            "rope_scaling {} ×{}",
            rope_type.as_deref().unwrap_or("?"),
            factor.map(fmt).unwrap_or_else(|| "?".into())
        )
    } else {
        "no rope_scaling".into()
    };
    let measured = match &base {
        Some((n, name)) => format!("context {context} ({ctx_src}) vs {name}'s pretrained {n} (config max_position_embeddings raised to {cfg_pos}); {rope_txt}"),
        None => format!("context {context} ({ctx_src}) vs max_position_embeddings {max_pos}; {rope_txt}"),
    };
    let mut v = Verdict::new("L5", Status::Pass, "pass")
        .measured(measured)
        .value("context", context as f64)
        .value("max_position_embeddings", max_pos as f64);
    if let Some((p, _)) = &cfg {
        v = v.evidence(Evidence::file(p));
    }
    if let Some(e) = ctx_ev {
        v = v.evidence(e);
    }
    if let Some(f) = factor {
        v = v.value("rope_factor", f);
    }
    if !scaled {
        v.expected =
            format!("context ≤ {max_pos}, or rope_scaling with factor ≥ context / {max_pos}");
        if context <= max_pos {
            v.message = "the context fits the pretrained positions".into();
            return vec![v];
        }
        v.status = Status::Fail;
        v.outcome = "missing".into();
        let need = context as f64 / max_pos as f64;
        v.message = if absolute {
            format!("context {context} exceeds the {max_pos} learned absolute positions (n_positions): positions past the table index out of range — shorten the context (this model has no RoPE to scale)")
        } else {
            format!("training past the pretrained length without rope_scaling: positions beyond {max_pos} give rotation angles the model never saw — set rope_scaling {{\"rope_type\": \"yarn\", \"factor\": {}, \"original_max_position_embeddings\": {max_pos}}} (linear only up to ×{linear_max}) and keep it at inference", fmt(need.ceil()))
        };
        return vec![v];
    }
    let need = context as f64 / orig as f64;
    v.expected = format!(
        "factor ≥ context / original = {context} / {orig} = {}",
        fmt(need)
    );
    v = v.value("needed_factor", need);
    let Some(f) = factor else {
        v.message = format!(
            "rope_scaling type {} without a factor: cannot check it against the context",
            rope_type.as_deref().unwrap_or("?")
        );
        v.status = Status::Warn;
        return vec![v];
    };
    if f + 1e-9 < need {
        v.status = Status::Fail;
        v.outcome = "too_small".into();
        v.message = format!("rope_scaling factor {} covers {} positions, but the context is {context}: raise factor to ≥ {} (target length / original length)", fmt(f), (f * orig as f64).round(), fmt(need));
        return vec![v];
    }
    if rope_type
        .as_deref()
        .is_some_and(|t| t.eq_ignore_ascii_case("linear"))
        && f > linear_max
    {
        v.status = Status::Warn;
        v.message = format!("linear interpolation ×{} degrades beyond about ×{linear_max}: use rope_type \"yarn\" for large extensions", fmt(f));
        return vec![v];
    }
    v.message = "rope_scaling covers the context (keep the same rope_scaling at inference)".into();
    vec![v]
}
