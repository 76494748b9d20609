//! `lora_wiring` (O21): LoRA factors present, moving and wired to the declared targets.

use std::path::PathBuf;

use crate::config::{classifier_head, AdapterConfig, ModelConfig};
use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::ArtifactKind;

use crate::probes::checkpoint::model::*;

pub(super) const LORA_WIRING: ProbeSpec = ProbeSpec {
    id: "lora_wiring",
    entries: &["O21"],
    inputs: &["checkpoint", "adapter_config"],
    params: &["zero_abs"],
    outcomes: &["pass", "no_adapters", "b_zero", "head_untrained", "skip"],
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
    let mut head_untrained: Option<(Status, String)> = None;
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
        if c.task_type.is_none() && c.modules_to_save.is_empty() && !saves_a_head(&m) {
            head_untrained = untrained_head(c, cfg_art.as_deref(), &ctx.run.root);
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
    } else if let Some((st, why)) = &head_untrained {
        Verdict::new(E, *st, "head_untrained").message(why.clone())
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
    let expected = if v.outcome == "head_untrained" {
        "the task head trained and saved with the adapter (task_type, or the head in modules_to_save)".to_string()
    } else {
        expected
    };
    let mut v = v.measured(measured).expected(expected).evidence(m.ev());
    if let Some(z) = zero_b.first() {
        v = v.evidence(m.ev().tensor(z));
    }
    vec![v
        .value("lora_b", bs.len() as f64)
        .value("lora_b_zero", zero_b.len() as f64)]
}

/// Does the adapter hold a task head's tensors (PEFT's `modules_to_save` copies, or a head
/// saved beside the factors)?
fn saves_a_head(m: &Model) -> bool {
    m.names.iter().any(|(n, _)| {
        n.contains("modules_to_save")
            || n.split('.')
                .any(|p| ["classifier", "score", "qa_outputs"].contains(&p))
    })
}

/// The class PEFT wrapped (`auto_mapping.base_model_class`) has a task head, but the adapter was
/// set up with no `task_type` (which adds the head to `modules_to_save`) and saves no head: the
/// head stays as it was created, frozen, and is rebuilt at every load. Where the base model's
/// `config.json` is on disk and names no such head, the head is new (random): a fail; not on
/// disk, a warn; a base that already carried the head (a trained classifier) is fine.
fn untrained_head(
    c: &AdapterConfig,
    cfg_path: Option<&std::path::Path>,
    root: &std::path::Path,
) -> Option<(Status, String)> {
    let wrapped = c
        .raw
        .get("auto_mapping")
        .and_then(|a| a.get("base_model_class"))
        .and_then(serde_json::Value::as_str)?;
    classifier_head(wrapped)?;
    let base = c
        .base_model_name_or_path
        .as_deref()
        .map(std::path::Path::new);
    let base_cfg = base.and_then(|b| {
        // As written, beside the adapter, or (a run copied elsewhere) the folder of that name in
        // the run.
        let candidates = [
            Some(b.to_path_buf()),
            cfg_path.and_then(|p| p.parent()).map(|d| d.join(b)),
            b.file_name().map(|n| root.join(n)),
        ];
        candidates
            .into_iter()
            .flatten()
            .map(|d| d.join("config.json"))
            .find(|p| p.is_file())
    });
    let archs = base_cfg
        .as_ref()
        .and_then(|p| ModelConfig::read(p).ok())
        .map(|m| m.architectures);
    let tail = "set task_type=\"SEQ_CLS\" (or the task's type) in LoraConfig, or list the head in modules_to_save=[\"classifier\"] (\"score\" for decoder models), so it trains and is saved with the adapter";
    match archs {
        Some(a) if a.iter().any(|x| classifier_head(x).is_some()) => None,
        Some(a) => Some((Status::Fail, format!(
            "the adapter wraps {wrapped} with task_type unset and no modules_to_save, and saves no head; its base ({}) is a {}, so the {wrapped} head is new: randomly initialised, frozen by PEFT and not saved — the model learns around a random projection (its loss stays near chance however well it ranks) and reloads another random head: {tail}",
            base_cfg.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            a.first().map(String::as_str).unwrap_or("model without that head")
        ))),
        None => Some((Status::Warn, format!(
            "the adapter wraps {wrapped} with task_type unset and no modules_to_save, and saves no head: unless the base model ({}) already carried a trained head, the head is random, frozen and not saved — {tail}",
            c.base_model_name_or_path.as_deref().unwrap_or("unknown")
        ))),
    }
}
