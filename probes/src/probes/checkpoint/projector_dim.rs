//! `projector_dim` (X2): the VLM projector output width against the LLM hidden size.

use crate::probe::{ProbeCtx, ProbeSpec, Status, Verdict};
use crate::tensors::TensorInfo;

use crate::probes::checkpoint::model::*;

pub(super) const PROJECTOR_DIM: ProbeSpec = ProbeSpec {
    id: "projector_dim",
    entries: &["X2"],
    inputs: &["checkpoint", "config"],
    params: &[],
    outcomes: &["pass", "mismatch", "skip"],
    run: projector_dim,
};

// =======================================================================================
// X2 — projector output width vs the LLM hidden size
// =======================================================================================

pub fn projector_dim(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "X2";
    let m = match newest_model(ctx.run, E) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let mut proj: Vec<(&str, &TensorInfo)> = m
        .infos()
        .filter(|(n, i)| {
            tower_of(n) == Some(Tower::Projector)
                && i.shape.len() == 2
                && i.dtype.is_float()
                && last_component(n) == "weight"
                && !is_lora(n)
        })
        .collect();
    if proj.is_empty() {
        return vec![Verdict::skip(E, "no projector weights (mm_projector / multi_modal_projector / merger …) in the checkpoint")];
    }
    proj.sort_by_key(|(n, _)| natural_key(n));
    let (first_name, first) = proj[0];
    let (last_name, last) = proj[proj.len() - 1];
    let out_dim = last.shape[0] as u64;
    let in_dim = first.shape[1] as u64;
    let cfg = ctx.run.model_config();
    let text_hidden = cfg.as_ref().and_then(|(_, c)| {
        c.raw
            .get("text_config")
            .and_then(|t| t.get("hidden_size"))
            .and_then(|v| v.as_u64())
    });
    let embed_width = m
        .infos()
        .find(|(n, i)| {
            n.contains("embed_tokens") && tower_of(n) != Some(Tower::Vision) && i.shape.len() == 2
        })
        .map(|(_, i)| i.shape[1] as u64);
    let (hidden, source) = match (text_hidden, ctx.facts.u64("hidden_size"), embed_width) {
        (Some(h), _, _) => (h, "config text_config.hidden_size".to_string()),
        (None, Some(h), _) => (h, "hidden_size".to_string()),
        (None, None, Some(w)) => (w, "embed_tokens width".to_string()),
        _ => return vec![Verdict::skip(E, format!("projector found ({last_name} out {out_dim}) but no LLM hidden size: needs config.json text_config.hidden_size, --fact hidden_size, or embed_tokens in the weights"))],
    };
    let vision_hidden = cfg.as_ref().and_then(|(_, c)| {
        c.mm_hidden_size.or_else(|| {
            c.raw
                .get("vision_config")
                .and_then(|t| t.get("hidden_size"))
                .and_then(|v| v.as_u64())
        })
    });
    let mut problems = Vec::new();
    if out_dim != hidden {
        problems.push(format!(
            "{last_name} outputs {out_dim} but the LLM hidden size is {hidden} ({source})"
        ));
    }
    if let Some(w) = embed_width.filter(|w| *w != hidden && *w != out_dim) {
        problems.push(format!("embed_tokens width {w} differs from both"));
    }
    if let Some(vh) =
        vision_hidden.filter(|vh| *vh != in_dim && proj.len() > 1 && *vh * 4 != in_dim)
    {
        problems.push(format!(
            "{first_name} takes {in_dim} inputs but the vision hidden size is {vh}"
        ));
    }
    let measured = format!(
        "projector {} → … → {out_dim}; LLM hidden {hidden} ({source})",
        in_dim
    );
    let v = if problems.is_empty() {
        Verdict::new(E, Status::Pass, "pass")
            .message("the projector maps into the LLM's hidden size")
    } else {
        Verdict::new(E, Status::Fail, "mismatch").message(format!("{} — the projector was built for another LLM/vision tower (check mm_hidden_size / text_config.hidden_size and the projector_type)", problems.join("; ")))
    };
    vec![v
        .measured(measured)
        .expected(format!("last projector out-dim = {hidden}"))
        .evidence(m.ev().tensor(last_name))
        .value("out_dim", out_dim as f64)
        .value("hidden", hidden as f64)]
}
