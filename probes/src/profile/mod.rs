//! The run profile: what kind of run this is — phase, how it started (scratch, a pretrained
//! base, an adapter, resumed at step N), its checkpoints, its logging, framework, precision
//! and layout — computed once per run from all the evidence, before any probe runs. Every
//! field carries what said so and how sure it is; a user fact overrides any field. Probes
//! consult it, and the playbook's `applies:` declarations ([`Applies`]) keep a probe to the
//! runs it can judge.

use crate::facts::Facts;
use crate::run::Run;

mod applies;
mod logs;
mod phase;
pub(crate) mod start;

pub use applies::{Applies, AppliesError, Need};
pub use logs::Logging;

/// How sure a profile field is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sure {
    /// Nothing said: the value is `unknown`.
    None,
    /// Inferred from the numbers (a first loss far below ln V).
    Low,
    /// Implied by another field or a weaker artifact (a DPO run starts from a trained policy).
    Medium,
    /// Stated by an artifact or the user (a series only that trainer logs, a config, a fact).
    High,
}

/// One profile field: its value, what said so, how sure.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Field<T> {
    pub value: T,
    pub sure: Sure,
    /// What said so: `series rewards/margins`, `adapter_config.json`, `--fact phase=dpo`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<String>,
}

impl<T> Field<T> {
    pub fn new(value: T, sure: Sure, from: impl Into<String>) -> Self {
        Field {
            value,
            sure,
            from: vec![from.into()],
        }
    }
    pub fn unknown(value: T) -> Self {
        Field {
            value,
            sure: Sure::None,
            from: Vec::new(),
        }
    }
    pub fn is_known(&self) -> bool {
        self.sure > Sure::None
    }
    /// The evidence as one short text.
    pub fn why(&self) -> String {
        self.from.join(", ")
    }
}

/// The training objective and stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Next-token language modelling on text (pre-training or continued training).
    Pretrain,
    /// Supervised fine-tuning on prompt/completion or chat rows.
    Sft,
    /// DPO and its relatives (IPO, KTO, ORPO, SimPO, CPO): a preference loss.
    Dpo,
    /// GRPO, RLOO and other group policy-gradient methods on a language model.
    Grpo,
    /// PPO on a language model (RLHF).
    Ppo,
    /// A reward model's pairwise ranking loss.
    Reward,
    Classification,
    Detection,
    Segmentation,
    Diffusion,
    /// A vision-language model (any stage).
    Vlm,
    /// Reinforcement learning in an environment (episode returns, value loss).
    Rl,
    Unknown,
}

impl Phase {
    pub const ALL: &'static [Phase] = &[
        Phase::Pretrain,
        Phase::Sft,
        Phase::Dpo,
        Phase::Grpo,
        Phase::Ppo,
        Phase::Reward,
        Phase::Classification,
        Phase::Detection,
        Phase::Segmentation,
        Phase::Diffusion,
        Phase::Vlm,
        Phase::Rl,
        Phase::Unknown,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pretrain => "pretrain",
            Phase::Sft => "sft",
            Phase::Dpo => "dpo",
            Phase::Grpo => "grpo",
            Phase::Ppo => "ppo",
            Phase::Reward => "reward",
            Phase::Classification => "classification",
            Phase::Detection => "detection",
            Phase::Segmentation => "segmentation",
            Phase::Diffusion => "diffusion",
            Phase::Vlm => "vlm",
            Phase::Rl => "rl",
            Phase::Unknown => "unknown",
        }
    }
    /// Words for the one-line summary.
    pub fn words(self) -> &'static str {
        match self {
            Phase::Pretrain => "language-model training",
            Phase::Sft => "SFT",
            Phase::Dpo => "DPO-family preference tuning",
            Phase::Grpo => "GRPO",
            Phase::Ppo => "PPO (RLHF)",
            Phase::Reward => "reward-model training",
            Phase::Classification => "classifier training",
            Phase::Detection => "detector training",
            Phase::Segmentation => "segmentation training",
            Phase::Diffusion => "diffusion training",
            Phase::Vlm => "VLM training",
            Phase::Rl => "RL",
            Phase::Unknown => "a run",
        }
    }
    /// A phase named as users and trainers name it (`dpo`, `kto`, `rlhf`, `lm` …).
    pub fn parse(s: &str) -> Option<Phase> {
        let s = s.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        Some(match s.as_str() {
            "pretrain"
            | "pretraining"
            | "pre_training"
            | "lm"
            | "causal_lm"
            | "clm"
            | "language_modeling"
            | "continued_pretraining"
            | "generation" => Phase::Pretrain,
            "sft" | "instruction_tuning" | "finetune" | "fine_tune" | "chat" => Phase::Sft,
            "dpo" | "ipo" | "kto" | "orpo" | "simpo" | "cpo" | "online_dpo" | "preference"
            | "bco" => Phase::Dpo,
            "grpo" | "rloo" | "reinforce" | "rlvr" | "dapo" => Phase::Grpo,
            "ppo" | "rlhf" => Phase::Ppo,
            "reward" | "rm" | "reward_model" => Phase::Reward,
            "classification"
            | "classifier"
            | "cls"
            | "image_classification"
            | "sequence_classification"
            | "token_classification"
            | "classify" => Phase::Classification,
            // Ultralytics' task names (args.yaml `task:`) beside the others.
            "detection" | "object_detection" | "det" | "detect" | "obb" => Phase::Detection,
            "segmentation"
            | "semantic_segmentation"
            | "instance_segmentation"
            | "seg"
            | "segment" => Phase::Segmentation,
            "diffusion" | "text_to_image" | "t2i" => Phase::Diffusion,
            "vlm" | "vlm_stage1" | "vlm_stage2" | "multimodal" => Phase::Vlm,
            "rl" | "env_rl" | "reinforcement_learning" => Phase::Rl,
            "unknown" => Phase::Unknown,
            _ => return None,
        })
    }
    /// A cross-entropy over V tokens or C classes is what the run minimises (ln V / ln C at
    /// step 0 apply).
    pub fn is_cross_entropy(self) -> bool {
        matches!(
            self,
            Phase::Pretrain | Phase::Sft | Phase::Classification | Phase::Vlm | Phase::Unknown
        )
    }
    /// Starts from a trained model by construction (a policy or a base to align).
    pub fn starts_trained(self) -> bool {
        matches!(self, Phase::Dpo | Phase::Grpo | Phase::Ppo | Phase::Reward)
    }
}

/// How the weights started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Init {
    /// Randomly initialised at step 0.
    Scratch,
    /// Loaded from a trained model (a fine-tune, continued training, a policy to align).
    Pretrained,
    /// An adapter (LoRA) trained on a frozen pretrained base.
    Adapter,
    Unknown,
}

impl Init {
    pub const ALL: &'static [Init] = &[
        Init::Scratch,
        Init::Pretrained,
        Init::Adapter,
        Init::Unknown,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Init::Scratch => "scratch",
            Init::Pretrained => "pretrained",
            Init::Adapter => "adapter",
            Init::Unknown => "unknown",
        }
    }
    pub fn parse(s: &str) -> Option<Init> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "scratch" | "from_scratch" | "random" => Init::Scratch,
            "pretrained" | "finetune" | "fine_tune" | "base" | "loaded" => Init::Pretrained,
            "adapter" | "lora" | "peft" | "qlora" => Init::Adapter,
            "unknown" => Init::Unknown,
            _ => return None,
        })
    }
}

/// What the run's checkpoints cover.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Checkpoints {
    pub count: usize,
    /// A checkpoint of the weights before any update (step 0, or named as the init).
    pub init: bool,
    /// The earliest step with a known step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub earliest_step: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest_step: Option<u64>,
    /// One checkpoint file rewritten at each save (nanoGPT's `ckpt.pt`): no history.
    pub overwritten: bool,
}

/// The run profile (see the module doc).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Profile {
    pub phase: Field<Phase>,
    /// How the weights started.
    pub init: Field<Init>,
    /// The step a resumed run restarted at (`None`: not known to be resumed). Whether the logs
    /// still cover the start is [`Profile::sees_run_start`].
    pub resumed_at: Field<Option<u64>>,
    pub checkpoints: Checkpoints,
    pub logging: Logging,
    /// `hf_trainer`, `trl`, `lightning`, `accelerate`, `deepspeed`, `fsdp_dcp`, `diffusers`,
    /// `nanogpt`, `plain` (a loop of the user's own) or `unknown`.
    pub framework: Field<String>,
    /// `fp32`, `bf16`, `fp16` or `unknown`.
    pub precision: Field<String>,
    /// `single process`, `N ranks`, `DeepSpeed ZeRO`, `FSDP (torch.distributed.checkpoint)`.
    pub layout: Field<String>,
}

impl Profile {
    /// The profile of `run` given the effective facts (user facts win over every inference).
    pub fn of(run: &Run, facts: &Facts) -> Profile {
        let logging = logs::logging(run);
        let checkpoints = start::checkpoints(run);
        let phase = phase::phase(run, facts);
        let framework = start::framework(run, facts);
        let resumed_at = start::resumed(run, facts, &logging, &checkpoints);
        let init = start::init(run, facts, phase.value, &logging);
        Profile {
            precision: start::precision(run, facts),
            layout: start::layout(run),
            phase,
            init,
            resumed_at,
            checkpoints,
            logging,
            framework,
        }
    }

    /// An empty profile (every field unknown): what a probe sees with no run evidence.
    pub fn unknown() -> Profile {
        Profile {
            phase: Field::unknown(Phase::Unknown),
            init: Field::unknown(Init::Unknown),
            resumed_at: Field::unknown(None),
            checkpoints: Checkpoints::default(),
            logging: Logging::default(),
            framework: Field::unknown("unknown".into()),
            precision: Field::unknown("unknown".into()),
            layout: Field::unknown("unknown".into()),
        }
    }

    /// Whether the logs cover the start of training: their first step is within the first
    /// logging intervals (a resumed run that appended to its log from step 0 still does).
    pub fn sees_run_start(&self) -> bool {
        self.logging.starts_early()
    }

    /// One short line: "GRPO of a pretrained base, resumed at step 10,000, bf16, TRL".
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let what = match self.phase.value {
            Phase::Unknown => "Run of unknown kind".to_string(),
            p => {
                let w = p.words();
                let mut c = w.chars();
                match c.next() {
                    Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                    None => String::new(),
                }
            }
        };
        s.push_str(&what);
        s.push_str(match self.init.value {
            Init::Scratch => " from scratch",
            Init::Pretrained => " of a pretrained model",
            Init::Adapter => " with an adapter on a pretrained base",
            Init::Unknown => "",
        });
        if let Some(n) = self.resumed_at.value {
            s.push_str(&format!(", resumed at step {}", thousands(n)));
        }
        if self.precision.is_known() {
            s.push_str(&format!(", {}", self.precision.value));
        }
        if self.framework.is_known() {
            s.push_str(&format!(", {}", framework_words(&self.framework.value)));
        }
        if let (Some(a), Some(b)) = (self.logging.first_step, self.logging.last_step) {
            let unit = if self.logging.unit == "epoch" {
                "epochs"
            } else {
                "steps"
            };
            s.push_str(&format!(
                "; logged {unit} {}–{}",
                thousands(a),
                thousands(b)
            ));
            if let Some(i) = self.logging.interval.filter(|i| *i > 1) {
                s.push_str(&format!(" every {i}"));
            }
        }
        if !self.checkpoints.init && self.checkpoints.count > 0 {
            s.push_str("; no step-0 checkpoint");
        }
        s
    }

    /// What said so, for the fields that are known: `phase: series rewards/margins; …`.
    pub fn evidence(&self) -> String {
        let mut parts = Vec::new();
        for (k, f) in [
            ("phase", self.phase.why()),
            ("init", self.init.why()),
            ("resumed", self.resumed_at.why()),
        ] {
            if !f.is_empty() {
                parts.push(format!("{k}: {f}"));
            }
        }
        parts.join("; ")
    }
}

/// `10000` → `10,000`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn framework_words(f: &str) -> &str {
    match f {
        "hf_trainer" => "HF Trainer",
        "trl" => "TRL",
        "lightning" => "Lightning",
        "accelerate" => "accelerate",
        "deepspeed" => "DeepSpeed",
        "fsdp_dcp" => "FSDP",
        "diffusers" => "diffusers",
        "nanogpt" => "nanoGPT-style loop",
        "plain" => "own training loop",
        other => other,
    }
}
