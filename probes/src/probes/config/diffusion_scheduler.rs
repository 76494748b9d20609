//! `diffusion_scheduler` (DF4, DF6): training and inference schedulers agree.

use std::path::{Path, PathBuf};

use crate::config::SchedulerConfig;
use crate::probe::{Evidence, ProbeCtx, ProbeSpec, Status, Verdict};
use crate::run::ArtifactKind;

pub(super) const DIFFUSION_SCHEDULER: ProbeSpec = ProbeSpec {
    id: "diffusion_scheduler",
    entries: &["DF4", "DF6"],
    inputs: &["config:scheduler_config.json (two or more)"],
    params: &[],
    outcomes: &["pass", "mismatch", "skip"],
    run: diffusion_scheduler,
};

// ---------------------------------------------------------------------------------------
// DF4, DF6: training vs inference scheduler

pub fn diffusion_scheduler(ctx: &ProbeCtx) -> Vec<Verdict> {
    // `scheduler_config.json` files, plus JSON copies named like one (`train_scheduler_config.json`).
    let files: Vec<_> = ctx
        .run
        .artifacts
        .iter()
        .filter(|a| {
            let n = a
                .path
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            a.kind == ArtifactKind::SchedulerConfig
                || (n.ends_with(".json") && n.contains("scheduler") && !n.contains("lr_scheduler"))
        })
        .collect();
    let mut cfgs: Vec<(PathBuf, SchedulerConfig)> = Vec::new();
    let mut problems = Vec::new();
    for a in files {
        match SchedulerConfig::read(&a.path) {
            Ok(c) => cfgs.push((a.path.clone(), c)),
            Err(e) => problems.push(e.to_string()),
        }
    }
    if cfgs.len() < 2 {
        let extra = if problems.is_empty() {
            String::new()
        } else {
            format!(" (unreadable: {})", problems.join("; "))
        };
        return vec![Verdict::skip("DF4", format!("needs both the training and the inference scheduler config (found {} scheduler_config.json){extra}", cfgs.len()))];
    }
    // Keys compared, with diffusers' defaults for absent ones; the first three decide.
    type Get = fn(&SchedulerConfig) -> Option<String>;
    let keys: [(&str, Get, &str, bool); 6] = [
        ("beta_schedule", |c| c.beta_schedule.clone(), "linear", true),
        (
            "num_train_timesteps",
            |c| c.num_train_timesteps.map(|v| v.to_string()),
            "1000",
            true,
        ),
        (
            "prediction_type",
            |c| c.prediction_type.clone(),
            "epsilon",
            true,
        ),
        (
            "beta_start",
            |c| c.beta_start.map(|v| format!("{v}")),
            "0.0001",
            false,
        ),
        (
            "beta_end",
            |c| c.beta_end.map(|v| format!("{v}")),
            "0.02",
            false,
        ),
        (
            "rescale_betas_zero_snr",
            |c| c.rescale_betas_zero_snr.map(|v| v.to_string()),
            "false",
            false,
        ),
    ];
    let name = |p: &Path| {
        p.strip_prefix(&ctx.run.root)
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let mut hard: Vec<String> = Vec::new();
    let mut soft: Vec<String> = Vec::new();
    let (p0, c0) = &cfgs[0];
    for (p, c) in &cfgs[1..] {
        for (k, get, default, decisive) in &keys {
            let a = get(c0).unwrap_or_else(|| format!("{default} (default)"));
            let b = get(c).unwrap_or_else(|| format!("{default} (default)"));
            if a.trim_end_matches(" (default)") != b.trim_end_matches(" (default)") {
                let line = format!("{k}: {a} in {} vs {b} in {}", name(p0), name(p));
                if *decisive {
                    hard.push(line);
                } else {
                    soft.push(line);
                }
            }
        }
    }
    let files_txt: Vec<String> = cfgs
        .iter()
        .map(|(p, c)| format!("{} ({})", name(p), c.class_name.as_deref().unwrap_or("?")))
        .collect();
    let mut v = Verdict::new("DF4", Status::Pass, "pass")
        .expected("identical beta_schedule, num_train_timesteps, prediction_type")
        .value("configs", cfgs.len() as f64)
        .value("differences", (hard.len() + soft.len()) as f64);
    for (p, _) in &cfgs {
        v = v.evidence(Evidence::file(p));
    }
    if hard.is_empty() && soft.is_empty() {
        v.measured = format!(
            "{} scheduler configs agree: {}",
            cfgs.len(),
            files_txt.join(", ")
        );
        v.message =
            "training and inference schedulers agree on the noise schedule and prediction type"
                .into();
        return vec![v];
    }
    let all: Vec<String> = hard.iter().chain(&soft).cloned().collect();
    v.measured = all.join("; ");
    v.status = if hard.is_empty() {
        Status::Warn
    } else {
        Status::Fail
    };
    v.outcome = "mismatch".into();
    v.message = format!(
        "the schedulers disagree ({}): build the inference scheduler from the training one — Scheduler.from_config(train_scheduler.config) — instead of defaults; a prediction_type mismatch ruins samples without any error",
        files_txt.join(" vs ")
    );
    vec![v]
}
