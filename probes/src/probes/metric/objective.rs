//! What the logged `loss` is: a cross-entropy over V outputs (pre-training, SFT, a classifier)
//! or another objective (a preference loss, a policy-gradient loss, a reward model's ranking
//! loss), from the `phase` fact or the series the trainer logs beside the loss. Probes that
//! compare the loss with ln V or with a cross-entropy floor ask this first (DESIGN §7: non-LM
//! phases are not judged against ln V).

use crate::probe::ProbeCtx;

/// The kind of objective behind the `loss` series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Objective {
    /// Token or class cross-entropy: ln V / ln C apply at step 0.
    CrossEntropy,
    /// DPO and its relatives: -log σ(β·margin) starts at ln 2 with policy = reference.
    Preference,
    /// GRPO / PPO / RLOO: a clipped surrogate, near 0 at the start, negative by design.
    PolicyGradient,
    /// A reward model's pairwise ranking loss.
    Reward,
}

const PREFERENCE: &[&str] = &["dpo", "ipo", "kto", "orpo", "simpo", "cpo", "online_dpo"];
const POLICY: &[&str] = &["grpo", "ppo", "rloo", "reinforce", "rl"];
const REWARD: &[&str] = &["reward", "rm", "reward_model"];

/// The objective and what told it ("fact phase=dpo", "series rewards/margins").
pub(crate) fn objective(ctx: &ProbeCtx) -> (Objective, String) {
    if let Some(p) = ctx.facts.get("phase").map(|p| p.to_ascii_lowercase()) {
        for (list, o) in [
            (PREFERENCE, Objective::Preference),
            (POLICY, Objective::PolicyGradient),
            (REWARD, Objective::Reward),
        ] {
            if list.contains(&p.as_str()) {
                return (o, format!("fact phase={p}"));
            }
        }
    }
    let names = ctx.run.metrics().names();
    let has = |f: &dyn Fn(&str) -> bool| names.iter().find(|n| f(n)).map(|n| n.to_string());
    // TRL's DPO family logs rewards/chosen, rewards/margins, logps/chosen...
    if let Some(n) = has(&|n| {
        n.starts_with("rewards/chosen")
            || n.starts_with("rewards/margins")
            || n.starts_with("logps/chosen")
            || n.starts_with("logps/rejected")
    }) {
        return (Objective::Preference, format!("series {n}"));
    }
    // GRPO logs reward + kl + completions/*; PPO objective/kl, objective/scores, policy/*.
    if let Some(n) = has(&|n| {
        n.starts_with("objective/")
            || n.starts_with("completions/")
            || n.starts_with("policy/")
            || n == "frac_reward_zero_std"
    }) {
        return (Objective::PolicyGradient, format!("series {n}"));
    }
    (Objective::CrossEntropy, String::new())
}
