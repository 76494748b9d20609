//! The phase of the profile, from what said so, strongest first: the user's `phase` fact, the
//! series a phase's trainer logs (rewards/margins only preference trainers log, completion
//! lengths only GRPO, episode returns only environment RL, mAP only detection), the trainer's
//! config class (`DPOConfig`), the model's head (`…ForSequenceClassification`), the file layout
//! (a diffusers pipeline), and last a vocabulary with nothing else (language modelling).

use super::{Field, Phase, Sure};
use crate::facts::Facts;
use crate::run::{ArtifactKind, Run};

/// Words of a tag, split on the separators frameworks use (`metrics/mAP50(B)` →
/// `metrics`, `map50`, `b`).
fn words(tag: &str) -> Vec<String> {
    tag.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The phase a logged tag (or its canonical name) belongs to, if only one phase logs it.
pub(super) fn phase_of_tag(tag: &str, name: &str) -> Option<Phase> {
    let t = tag.to_ascii_lowercase();
    let n = name;
    let starts = |p: &str| t.starts_with(p) || n.starts_with(p) || t.contains(&format!("/{p}"));
    if starts("rewards/chosen")
        || starts("rewards/rejected")
        || starts("rewards/margins")
        || starts("rewards/accuracies")
        || starts("logps/chosen")
        || starts("logps/rejected")
        || starts("log_odds_ratio")
        || starts("kl_chosen")
    {
        return Some(Phase::Dpo);
    }
    if starts("completions/")
        || starts("frac_reward_zero_std")
        || starts("reward_std")
        || starts("clip_ratio/")
        || (t.starts_with("rewards/") && (t.ends_with("/mean") || t.ends_with("/std")))
    {
        return Some(Phase::Grpo);
    }
    if starts("objective/") || starts("ppo/") || starts("policy/approxkl") || starts("val/clipfrac")
    {
        return Some(Phase::Ppo);
    }
    if t.starts_with("rollout/ep_rew") || t.starts_with("rollout/ep_len") || t == "ep_rew_mean" {
        return Some(Phase::Rl);
    }
    // Environment RL by the vocabulary's meanings (CleanRL's `charts/episodic_return`,
    // `losses/approx_kl`, `losses/clipfrac`): an episode length, or PPO's per-update KL or
    // clip fraction, only an environment-RL run logs.
    if matches!(
        n,
        "episode_length" | "approx_kl" | "old_approx_kl" | "clip_fraction" | "explained_variance"
    ) {
        return Some(Phase::Rl);
    }
    let w = words(&t);
    let has = |x: &str| w.iter().any(|y| y == x);
    let has_prefix = |x: &str| w.iter().any(|y| y.starts_with(x));
    if has("map")
        || has_prefix("map50")
        || has_prefix("map75")
        || has("box")
        || has("bbox")
        || has("giou")
        || has("dfl")
    {
        return Some(Phase::Detection);
    }
    if has("miou") || (has("iou") && has("mean")) || has("dice") {
        return Some(Phase::Segmentation);
    }
    None
}

/// The phase a trainer's config class says (`trl.DPOConfig` → dpo).
fn phase_of_args_class(class: &str) -> Option<Phase> {
    let c = class.to_ascii_lowercase();
    let c = c
        .strip_suffix("config")
        .or_else(|| c.strip_suffix("arguments"))?;
    Some(match c {
        "sft" => Phase::Sft,
        "dpo" | "kto" | "orpo" | "cpo" | "bco" | "onlinedpo" | "nashmd" | "xpo" => Phase::Dpo,
        "grpo" | "rloo" => Phase::Grpo,
        "ppo" => Phase::Ppo,
        "reward" | "prm" => Phase::Reward,
        _ => return None,
    })
}

pub(super) fn phase(run: &Run, facts: &Facts) -> Field<Phase> {
    use crate::facts::FactSource;
    if let Some(f) = facts.fact("phase") {
        if let Some(p) = Phase::parse(&f.value) {
            let who = match &f.source {
                FactSource::User => format!("--fact phase={}", f.value),
                FactSource::Artifact(file) => format!("{file} says phase={}", f.value),
            };
            return Field::new(p, Sure::High, who);
        }
    }
    // The series only one phase's trainer logs.
    let m = run.metrics();
    for s in &m.series {
        if let Some(p) = phase_of_tag(&s.tag, &s.name) {
            // PPO's names are logged by RLHF trainers and by environment RL alike: a language
            // model (a vocabulary) makes it RLHF.
            let p = if p == Phase::Ppo && facts.get("vocab_size").is_none() {
                Phase::Rl
            } else {
                p
            };
            return Field::new(p, Sure::High, format!("series {}", s.tag));
        }
    }
    if let Some(class) = facts.get("args_class") {
        if let Some(p) = phase_of_args_class(class) {
            return Field::new(p, Sure::High, format!("training_args.bin is a {class}"));
        }
    }
    // TRL's SFTTrainer logs token accuracy beside the loss.
    if let Some(s) = m
        .series
        .iter()
        .find(|s| s.name == "mean_token_accuracy" || s.name == "num_tokens")
    {
        return Field::new(Phase::Sft, Sure::Medium, format!("series {}", s.tag));
    }
    if !run.of_kind(ArtifactKind::PipelineIndex).is_empty()
        || facts.get("domain") == Some("diffusion")
    {
        return Field::new(Phase::Diffusion, Sure::High, "a diffusers model layout");
    }
    if let Some(task) = facts.get("task") {
        if let Some(p) = Phase::parse(task) {
            return Field::new(p, Sure::High, format!("fact task={task}"));
        }
    }
    for arch in facts.list("architectures") {
        let a = arch.as_str();
        let p = if a.contains("ObjectDetection") {
            Some(Phase::Detection)
        } else if a.contains("Segmentation") {
            Some(Phase::Segmentation)
        } else if a.contains("Classification") {
            Some(Phase::Classification)
        } else if a.ends_with("ForConditionalGeneration") && facts.get("domain") == Some("vlm") {
            Some(Phase::Vlm)
        } else if a.ends_with("ForCausalLM") || a.ends_with("LMHeadModel") {
            Some(Phase::Pretrain)
        } else {
            None
        };
        if let Some(p) = p {
            // A causal-LM head trains by next-token loss: pre-training, continued training or
            // SFT all look alike here.
            // (so the phase is only a low-confidence guess there).
            let sure = if p == Phase::Pretrain {
                Sure::Low
            } else {
                Sure::High
            };
            return Field::new(p, sure, format!("config.json architectures {a}"));
        }
    }
    if facts.get("domain") == Some("vlm") {
        return Field::new(Phase::Vlm, Sure::High, "config.json has a vision_config");
    }
    if facts.get("vocab_size").is_some() && facts.get("num_classes").is_none() {
        return Field::new(
            Phase::Pretrain,
            Sure::Low,
            "a vocabulary size and a loss, nothing else",
        );
    }
    if facts.get("num_classes").is_some() && facts.get("vocab_size").is_none() {
        return Field::new(Phase::Classification, Sure::Medium, "a number of classes");
    }
    // A top-5 accuracy exists only for a classifier over many classes (torchvision's
    // references, timm, DeiT log `acc5` / `top5`); a language model logs token accuracy.
    if facts.get("vocab_size").is_none() {
        if let Some(s) = m.series.iter().find(|s| {
            let t = s.tag.to_ascii_lowercase();
            let leaf = t.rsplit(['/', '.']).next().unwrap_or(&t);
            matches!(
                leaf,
                "acc5" | "top5" | "acc_top5" | "top5_acc" | "eval_acc5" | "val_acc5"
            )
        }) {
            return Field::new(
                Phase::Classification,
                Sure::Medium,
                format!("series {} (a top-5 accuracy)", s.tag),
            );
        }
    }
    Field::unknown(Phase::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_their_phase() {
        for (tag, p) in [
            ("train/rewards/margins", Some(Phase::Dpo)),
            ("logps/chosen", Some(Phase::Dpo)),
            ("completions/mean_length", Some(Phase::Grpo)),
            ("rewards/count_t5/mean", Some(Phase::Grpo)),
            ("frac_reward_zero_std", Some(Phase::Grpo)),
            ("objective/kl", Some(Phase::Ppo)),
            ("rollout/ep_rew_mean", Some(Phase::Rl)),
            ("metrics/mAP50(B)", Some(Phase::Detection)),
            ("val/mAP50-95", Some(Phase::Detection)),
            ("train/box_loss", Some(Phase::Detection)),
            ("val/mIoU", Some(Phase::Segmentation)),
            ("train/loss", None),
            ("heatmap_loss", None),
            ("grad_norm", None),
        ] {
            assert_eq!(phase_of_tag(tag, tag), p, "{tag}");
        }
    }

    #[test]
    fn ultralytics_task_names_are_phases() {
        for (task, p) in [
            ("classify", Phase::Classification),
            ("detect", Phase::Detection),
            ("obb", Phase::Detection),
            ("segment", Phase::Segmentation),
        ] {
            assert_eq!(Phase::parse(task), Some(p), "{task}");
        }
        assert_eq!(Phase::parse("pose"), None);
    }

    #[test]
    fn config_classes_name_their_phase() {
        assert_eq!(phase_of_args_class("DPOConfig"), Some(Phase::Dpo));
        assert_eq!(phase_of_args_class("GRPOConfig"), Some(Phase::Grpo));
        assert_eq!(phase_of_args_class("SFTConfig"), Some(Phase::Sft));
        assert_eq!(phase_of_args_class("TrainingArguments"), None);
    }
}
