//! `lora_wiring` (O21): LoRA factors present, moving and wired to the declared targets.

use std::path::PathBuf;

use crate::config::AdapterConfig;
use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::ArtifactKind;

use crate::probes::checkpoint::model::*;

pub(super) const LORA_WIRING: ProbeSpec = ProbeSpec {
    id: "lora_wiring",
    entries: &["O21"],
    inputs: &["checkpoint", "adapter_config"],
    params: &["zero_abs"],
    outcomes: &["pass", "no_adapters", "b_zero", "skip"],
    run: lora_wiring,
};

// =======================================================================================
// O21 — LoRA wiring
// =======================================================================================

pub fn lora_wiring(ctx: &ProbeCtx) -> Vec<Verdict> {
    const E: &str = "O21";
    let zero_abs = p!(ctx, E, "zero_abs");
    let cfg_art = ctx
        .run
        .of_kind(ArtifactKind::AdapterConfig)
        .last()
        .map(|a| a.path.clone());
    let cfg = cfg_art.as_ref().and_then(|p| AdapterConfig::read(p).ok());
    // The newest checkpoint holding LoRA tensors (adapter files or merged into the weights).
    let mut found: Option<(Model, bool)> = None;
    for c in ctx.run.checkpoints.iter().rev() {
        let adapters: Vec<&PathBuf> = c.weights.iter().filter(|p| is_adapter_path(p)).collect();
        let model = if adapters.is_empty() {
            Model::open(c)
        } else {
            Model::open_paths(&adapters, c.step).map(|mut m| {
                m.step_known = !c.step_unknown;
                m
            })
        };
        if let Ok(m) = model {
            if m.has_lora() {
                let trained = !is_init_ckpt(c);
                found = Some((m, trained));
                break;
            }
        }
    }
    let Some((m, trained)) = found else {
        if let Some(p) = &cfg_art {
            let adapter_files = ctx
                .run
                .artifacts
                .iter()
                .filter(|a| is_adapter_path(&a.path))
                .count();
            return vec![Verdict::new(E, Status::Fail, "no_adapters")
                .measured(format!("adapter_config.json present, no lora_A/lora_B tensors ({adapter_files} adapter file(s))"))
                .expected("LoRA tensors for the target_modules")
                .message(format!(
                    "no LoRA weights were saved although an adapter config exists: target_modules {} matched nothing in the model (names differ, e.g. c_attn vs q_proj), or the base model was saved instead of the adapter",
                    cfg.as_ref().map(|c| format!("{:?}", c.target_modules)).unwrap_or_else(|| "(unreadable)".into())
                ))
                .evidence(Evidence::file(p))];
        }
        return vec![Verdict::skip(
            E,
            "no LoRA adapters (adapter_config.json, lora_A/lora_B tensors) in the run",
        )];
    };
    let bs: Vec<&str> = m
        .infos()
        .filter(|(n, i)| is_lora_b(n) && i.dtype.is_float())
        .map(|(n, _)| n)
        .collect();
    let a_count = m.infos().filter(|(n, _)| is_lora_a(n)).count();
    let mut zero_b = Vec::new();
    for n in &bs {
        if let Ok(s) = m.stats(n, ctx.compute) {
            if s.finite > 0 && s.absmax <= zero_abs {
                zero_b.push(n.to_string());
            }
        }
    }
    let mut warns = Vec::new();
    if let Some(c) = &cfg {
        if !c.target_modules_is_regex {
            let missing: Vec<&String> = c
                .target_modules
                .iter()
                .filter(|t| {
                    t.as_str() != "all-linear"
                        && !m
                            .names
                            .iter()
                            .any(|(n, _)| is_lora(n) && n.split('.').any(|p| p == t.as_str()))
                })
                .collect();
            if !missing.is_empty() && !bs.is_empty() {
                warns.push(format!("target_modules without adapters: {missing:?}"));
            }
        }
        if c.task_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("SEQ_CLS"))
        {
            let head_in_cfg = c.modules_to_save.iter().any(|s| {
                ["classifier", "score", "head", "fc"]
                    .iter()
                    .any(|h| s.contains(h))
            });
            let head_saved = m
                .names
                .iter()
                .any(|(n, _)| ["classifier", "score"].iter().any(|h| n.contains(h)));
            if !head_in_cfg && !head_saved {
                warns.push("task_type SEQ_CLS but modules_to_save has no classifier/score: the new head stays random and is not saved".to_string());
            }
        }
    }
    let measured = format!(
        "{} lora_A, {} lora_B tensors; {} lora_B all zero ({})",
        a_count,
        bs.len(),
        zero_b.len(),
        m.at()
    );
    // A lone adapter folder has no step, but saved adapters are trained ones.
    let when = if m.step_known {
        format!("at step {}", m.step)
    } else {
        "in the saved (not initial) weights".to_string()
    };
    let expected = format!("lora_B leaves zero after training (max |B| > {zero_abs})");
    let mut v = if bs.is_empty() {
        Verdict::new(E, Status::Fail, "no_adapters")
            .message("LoRA A tensors but no B tensors: the adapter is incomplete")
    } else if trained && zero_b.len() == bs.len() {
        Verdict::new(E, Status::Fail, "b_zero").message(format!(
            "every lora_B is still exactly zero {when}: the adapters never trained (the LoRA params are not in the optimizer, requires_grad is off, or the LR is 0) — the model is the base model"
        ))
    } else if trained && !zero_b.is_empty() {
        Verdict::new(E, Status::Warn, "b_zero").message(format!(
            "{} of {} lora_B tensors are still zero {when}: {} — those adapters get no gradient",
            zero_b.len(),
            bs.len(),
            list_some(&zero_b, 3)
        ))
    } else if !warns.is_empty() {
        Verdict::new(E, Status::Warn, "pass").message(warns.join("; "))
    } else if !trained {
        Verdict::new(E, Status::Pass, "pass")
            .message("LoRA adapters present; lora_B is zero at init by design")
    } else {
        Verdict::new(E, Status::Pass, "pass")
            .message("LoRA adapters present and trained (lora_B left zero)")
    };
    if !warns.is_empty() && v.status == Status::Fail {
        v.message.push_str(&format!("; also: {}", warns.join("; ")));
    }
    let mut v = v.measured(measured).expected(expected).evidence(m.ev());
    if let Some(z) = zero_b.first() {
        v = v.evidence(m.ev().tensor(z));
    }
    vec![v
        .value("lora_b", bs.len() as f64)
        .value("lora_b_zero", zero_b.len() as f64)]
}
