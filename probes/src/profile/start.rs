//! How the run started and what it is built with: init (scratch, pretrained, adapter),
//! resumed at step N, the checkpoints it kept, its framework, precision and layout.

use super::logs::Logging;
use super::{Checkpoints, Field, Init, Phase, Sure};
use crate::facts::{FactSource, Facts};
use crate::names::step_from_name;
use crate::run::{ArtifactKind, Run};

/// Where a fact came from, in words.
fn fact_who(facts: &Facts, key: &str) -> String {
    match facts.fact(key) {
        Some(f) => match &f.source {
            FactSource::User => format!("--fact {key}={}", f.value),
            FactSource::Artifact(file) => format!("{file} ({key}={})", f.value),
        },
        None => key.to_string(),
    }
}

fn by_user(facts: &Facts, key: &str) -> bool {
    facts
        .fact(key)
        .is_some_and(|f| f.source == FactSource::User)
}

pub(super) fn checkpoints(run: &Run) -> Checkpoints {
    let cks = &run.checkpoints;
    let known: Vec<u64> = cks
        .iter()
        .filter(|c| !c.step_unknown)
        .map(|c| c.step)
        .collect();
    let init = cks.iter().any(|c| c.before_training());
    // One checkpoint whose name states no step (nanoGPT's ckpt.pt, a `last.pt`) while the run
    // logged more than one step: it was rewritten at each save.
    let overwritten = cks.len() == 1
        && cks[0]
            .weights
            .iter()
            .chain(std::iter::once(&cks[0].path))
            .all(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(step_from_name)
                    .is_none()
            });
    Checkpoints {
        count: cks.len(),
        init,
        earliest_step: known.iter().copied().min(),
        latest_step: known.iter().copied().max(),
        overwritten,
    }
}

/// The step a resumed run restarted at, if it was resumed.
pub(super) fn resumed(
    run: &Run,
    facts: &Facts,
    logging: &Logging,
    cks: &Checkpoints,
) -> Field<Option<u64>> {
    for key in [
        "resumed_at",
        "resumed_from",
        "resume_step",
        "resume_from_checkpoint",
    ] {
        let Some(v) = facts.get(key) else { continue };
        let v = v.trim();
        let low = v.to_ascii_lowercase();
        if matches!(low.as_str(), "false" | "no" | "none" | "0" | "") {
            return Field::new(None, Sure::High, fact_who(facts, key));
        }
        let step = v
            .parse::<u64>()
            .ok()
            .or_else(|| {
                std::path::Path::new(v)
                    .components()
                    .rev()
                    .find_map(|c| step_from_name(&c.as_os_str().to_string_lossy()))
            })
            .or(logging.first_step);
        return Field::new(step, Sure::High, fact_who(facts, key));
    }
    // nanoGPT's init_from=resume: the run restarted from its checkpoint; the logs begin
    // mid-run only when they start late (an appended log still covers the start).
    let resume_cfg = facts
        .get("init_from")
        .is_some_and(|v| v.eq_ignore_ascii_case("resume"));
    if resume_cfg && run.metrics().restarts.is_empty() && !logging.starts_early() {
        return Field::new(logging.first_step, Sure::High, fact_who(facts, "init_from"));
    }
    // Where the run's own archive states the timestep its training call started from, that
    // decides (Stable-Baselines3's `_num_timesteps_at_start`, set by
    // `learn(..., reset_num_timesteps=False)`): a resume from there, or none from 0 (with no
    // restart in the logs). Off-policy algorithms log nothing before `learning_starts`, so a
    // first point long after the logging interval is not a resume there.
    let sb3_start = run
        .newest_sb3_archive()
        .and_then(|p| crate::tensors::sb3::read(p).ok())
        .and_then(|a| Some((a.timesteps_at_start?, a.path)));
    let sb3_who =
        |at: u64, p: &std::path::Path| format!("{} (_num_timesteps_at_start={at})", p.display());
    if let Some((at, p)) = sb3_start.as_ref().filter(|(at, _)| *at > 0) {
        return Field::new(Some(*at), Sure::High, sb3_who(*at, p));
    }
    // A restart in a training series first (a summary series says less), then any.
    let rs = &run.metrics().restarts;
    let train = |r: &&crate::metrics::Restart| {
        matches!(
            r.name.as_str(),
            "loss" | "grad_norm" | "learning_rate" | "reward"
        )
    };
    if let Some(r) = rs.iter().find(train).or_else(|| rs.first()) {
        // The first step logged after a resume is one interval past the checkpoint it loaded.
        let iv = logging.interval.unwrap_or(1).max(1);
        let at = run
            .checkpoints
            .iter()
            .filter(|c| !c.step_unknown && c.step <= r.step && r.step - c.step <= iv)
            .map(|c| c.step)
            .max()
            .unwrap_or(r.step);
        return Field::new(
            Some(at),
            Sure::High,
            format!(
                "the log restarts at step {} ({})",
                r.step,
                r.source.display()
            ),
        );
    }
    if let Some((at, p)) = &sb3_start {
        return Field::new(None, Sure::High, sb3_who(*at, p));
    }
    // A training log that starts long after its own logging interval begins mid-run.
    if let (Some(first), Some(iv)) = (logging.first_step, logging.interval) {
        if first > 50 && first > 2 * iv.max(1) + 1 && logging.points >= 2 {
            let at = cks
                .earliest_step
                .filter(|s| *s <= first && *s > 0)
                .unwrap_or(first.saturating_sub(iv));
            return Field::new(
                Some(at),
                Sure::Medium,
                format!("the training log starts at step {first} while it logs every {iv}"),
            );
        }
    }
    Field::unknown(None)
}

/// ln V (or ln C) the phase's cross-entropy starts at.
pub(crate) fn chance_loss(facts: &Facts, phase: Phase) -> Option<f64> {
    let v = facts.u64("vocab_size").filter(|v| *v > 1);
    let c = facts.u64("num_classes").filter(|c| *c > 1);
    // A classifier's chance loss is ln C only: its config's vocabulary belongs to the encoder.
    let n = if phase == Phase::Classification {
        c
    } else {
        v.or(c)
    }?;
    Some((n as f64).ln())
}

pub(super) fn init(run: &Run, facts: &Facts, phase: Phase, logging: &Logging) -> Field<Init> {
    if let Some(i) = facts.get("init").and_then(Init::parse) {
        return Field::new(i, Sure::High, fact_who(facts, "init"));
    }
    if by_user(facts, "from_scratch") {
        if let Some(b) = facts.bool("from_scratch") {
            let i = if b { Init::Scratch } else { Init::Pretrained };
            return Field::new(i, Sure::High, fact_who(facts, "from_scratch"));
        }
    }
    if let Some(a) = run.of_kind(ArtifactKind::AdapterConfig).first() {
        return Field::new(Init::Adapter, Sure::High, a.path.display().to_string());
    }
    // The weights the run started from, kept in its folder (`base_model/`, `pretrained/`): a
    // fine-tune.
    if let Some(w) = run.set_aside.iter().find(|s| s.start_weights) {
        return Field::new(
            Init::Pretrained,
            Sure::Medium,
            format!("{}: the weights the run started from", w.path.display()),
        );
    }
    if facts.bool("from_scratch") == Some(false) {
        return Field::new(
            Init::Pretrained,
            Sure::High,
            fact_who(facts, "from_scratch"),
        );
    }
    if let Some(v) = facts.get("init_from") {
        let v = v.to_ascii_lowercase();
        if v == "scratch" {
            return Field::new(Init::Scratch, Sure::High, fact_who(facts, "init_from"));
        }
        if v != "resume" {
            return Field::new(Init::Pretrained, Sure::High, fact_who(facts, "init_from"));
        }
    }
    if phase.starts_trained() {
        return Field::new(
            Init::Pretrained,
            Sure::Medium,
            format!("{} starts from a trained model", phase.words()),
        );
    }
    // The numbers: a cross-entropy that starts at ln V is untrained; one far below it is not.
    if logging.starts_early() && phase.is_cross_entropy() {
        if let (Some(lnv), Some(s)) = (
            chance_loss(facts, phase),
            logging
                .series
                .as_deref()
                .filter(|n| *n == "loss")
                .and_then(|n| run.metrics().get(n)),
        ) {
            let early = 20u64.max(2 * logging.interval.unwrap_or(1));
            // A loss of exactly 0 (every label masked) says nothing about the weights.
            if let Some(p) = s
                .points
                .iter()
                .find(|p| p.value.is_finite())
                .filter(|p| p.step <= early && p.value > 1e-6)
            {
                // One step's loss at the very start sits within ~0.5 of ln V when untrained;
                // a mean over the first steps (or a later point) may have fallen further, and a
                // log indexed by epoch holds each epoch's mean (Keras's CSVLogger, fastai).
                let single_first =
                    logging.mean_over.is_none() && p.step <= 5 && logging.unit != "epoch";
                let margin = if single_first {
                    1.0
                } else {
                    (2.24f64).max(0.5 * lnv)
                };
                if p.value < lnv - margin {
                    return Field::new(
                        Init::Pretrained,
                        Sure::Low,
                        format!(
                            "first loss {:.3} at step {} is far below ln V = {:.3}: the weights were loaded",
                            p.value, p.step, lnv
                        ),
                    );
                }
                // At chance says "untrained" only for a language model's head (a loaded LM
                // never sits at ln V); a new classifier head on a pretrained backbone does.
                let lm_head = matches!(phase, Phase::Pretrain | Phase::Sft | Phase::Vlm);
                if lm_head && (p.value - lnv).abs() <= 0.5 {
                    return Field::new(
                        Init::Scratch,
                        Sure::Low,
                        format!(
                            "first loss {:.3} at step {} sits at ln V = {:.3}",
                            p.value, p.step, lnv
                        ),
                    );
                }
            }
        }
    }
    if facts.bool("from_scratch") == Some(true) {
        return Field::new(Init::Scratch, Sure::Medium, fact_who(facts, "from_scratch"));
    }
    Field::unknown(Init::Unknown)
}

pub(super) fn framework(run: &Run, facts: &Facts) -> Field<String> {
    let has = |k: ArtifactKind| run.artifacts.iter().find(|a| a.kind == k);
    let named = |f: &dyn Fn(&str) -> bool| {
        run.artifacts.iter().find(|a| {
            a.path
                .components()
                .any(|c| f(&c.as_os_str().to_string_lossy()))
        })
    };
    let field = |v: &str, sure, why: String| Field::new(v.to_string(), sure, why);
    if let Some(v) = facts
        .get("framework")
        .filter(|_| by_user(facts, "framework"))
    {
        return field(
            &v.to_ascii_lowercase(),
            Sure::High,
            fact_who(facts, "framework"),
        );
    }
    // sentence-transformers trains through the HF Trainer: its own files say which.
    if let Some(a) = named(&|c| c == "modules.json" || c == "config_sentence_transformers.json") {
        return field(
            "sentence_transformers",
            Sure::High,
            a.path.display().to_string(),
        );
    }
    if let Some(class) = facts.get("args_class") {
        let trl = class.ends_with("Config") && class != "TrainingConfig";
        let v = if trl { "trl" } else { "hf_trainer" };
        return field(v, Sure::High, format!("training_args.bin is a {class}"));
    }
    if let Some(a) = has(ArtifactKind::TrainerState).or_else(|| has(ArtifactKind::TrainingArgs)) {
        return field("hf_trainer", Sure::High, a.path.display().to_string());
    }
    if let Some(a) = named(&|c| c == "lightning_logs" || c.ends_with(".ckpt")) {
        return field("lightning", Sure::High, a.path.display().to_string());
    }
    if let Some(a) = named(&|c| c.starts_with("zero_pp_rank") || c.ends_with("model_states.pt")) {
        return field("deepspeed", Sure::High, a.path.display().to_string());
    }
    if let Some(a) = has(ArtifactKind::DcpMetadata) {
        return field("fsdp_dcp", Sure::High, a.path.display().to_string());
    }
    if let Some(a) = has(ArtifactKind::PipelineIndex) {
        return field("diffusers", Sure::High, a.path.display().to_string());
    }
    if let Some(a) = named(&|c| c.starts_with("random_states_") || c == "optimizer.bin") {
        return field("accelerate", Sure::High, a.path.display().to_string());
    }
    if let Some(a) = named(&|c| c == "ckpt.pt") {
        return field("nanogpt", Sure::Medium, a.path.display().to_string());
    }
    if let Some(a) = has(ArtifactKind::Sb3Model).or_else(|| has(ArtifactKind::VecNormalize)) {
        return field("sb3", Sure::High, a.path.display().to_string());
    }
    // Keras 3 saves its models as `.keras` archives and its weights as `*.weights.h5`.
    if let Some(a) = named(&|c| c.ends_with(".keras") || c.ends_with(".weights.h5")) {
        return field("keras", Sure::Medium, a.path.display().to_string());
    }
    // By the series a framework's logger writes (its own names, never shared).
    let tags = run.metrics();
    let by_tag = |pred: &dyn Fn(&str) -> bool| tags.series.iter().find(|s| pred(&s.tag));
    if let Some(s) = by_tag(&|t| t.starts_with("rollout/ep_") || t == "time/total_timesteps") {
        return field("sb3", Sure::Medium, format!("series {}", s.tag));
    }
    if let Some(s) = by_tag(&|t| t.starts_with("charts/episodic_") || t == "losses/clipfrac") {
        return field("cleanrl", Sure::Medium, format!("series {}", s.tag));
    }
    if let Some(s) = by_tag(&|t| t.ends_with("(B)") || t.ends_with("(M)")) {
        return field("ultralytics", Sure::Medium, format!("series {}", s.tag));
    }
    // Ultralytics' args.yaml names one of its tasks whatever the task (a classifier logs no
    // "(B)" series).
    if matches!(
        facts.get("task"),
        Some("detect" | "segment" | "classify" | "pose" | "obb")
    ) && named(&|c| c == "args.yaml").is_some()
    {
        return field("ultralytics", Sure::Medium, fact_who(facts, "task"));
    }
    if let Some(a) = named(&|c| c.ends_with(".pth.tar")).filter(|_| {
        run.artifacts
            .iter()
            .any(|a| a.path.file_name().is_some_and(|n| n == "summary.csv"))
    }) {
        return field("timm", Sure::Medium, a.path.display().to_string());
    }
    // No framework's layout: maybe a loop of the user's own, maybe a framework this does not
    // know — not a guess worth stating.
    Field::unknown("unknown".into())
}

pub(super) fn precision(run: &Run, facts: &Facts) -> Field<String> {
    if let Some(p) = facts.get("precision") {
        if let Some(norm) = crate::facts::precision_of(p) {
            return Field::new(norm.to_string(), Sure::High, fact_who(facts, "precision"));
        }
    }
    if let Some(s) = run.metrics().get("loss_scale") {
        return Field::new("fp16".into(), Sure::High, format!("series {}", s.tag));
    }
    Field::unknown("unknown".into())
}

pub(super) fn layout(run: &Run) -> Field<String> {
    let mut ranks: Vec<u32> = run.artifacts.iter().filter_map(|a| a.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let dcp_ranks = run
        .of_kind(ArtifactKind::DcpShard)
        .iter()
        .filter_map(|a| {
            let n = a.path.file_name()?.to_str()?;
            n.strip_prefix("__")?.split('_').next()?.parse::<u32>().ok()
        })
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let zero = run
        .artifacts
        .iter()
        .filter(|a| {
            a.path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("zero_pp_rank"))
        })
        .map(|a| a.path.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if zero > 0 {
        return Field::new(
            format!("DeepSpeed ZeRO, {zero} partitions"),
            Sure::High,
            "zero_pp_rank_* files",
        );
    }
    if dcp_ranks > 0 {
        return Field::new(
            format!("FSDP, {dcp_ranks} ranks"),
            Sure::High,
            "torch.distributed.checkpoint shards",
        );
    }
    if ranks.len() > 1 {
        return Field::new(
            format!("{} ranks", ranks.len()),
            Sure::High,
            "rank-named files",
        );
    }
    Field::unknown("unknown".into())
}
