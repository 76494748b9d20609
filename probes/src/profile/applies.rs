//! Applicability as data: which runs a probe judges, declared beside its thresholds in
//! `playbook/probes.yaml` (`applies: any`, or `applies: {phase: [...], init: [...], needs:
//! [...]}`). Outside its declaration a probe is not run: it skips with "not applicable: why".
//! A field the profile does not know never rules a probe out (the probe's own checks decide).

use super::{Init, Phase, Profile, Sure};

/// Phase families a declaration may name instead of listing phases.
const FAMILIES: &[(&str, &[Phase])] = &[
    ("lm", &[Phase::Pretrain, Phase::Sft, Phase::Vlm]),
    ("preference", &[Phase::Dpo]),
    ("policy", &[Phase::Grpo, Phase::Ppo]),
    (
        "vision",
        &[Phase::Classification, Phase::Detection, Phase::Segmentation],
    ),
];

/// The family a phase belongs to (its own name when it has none).
fn family(p: Phase) -> &'static str {
    FAMILIES
        .iter()
        .find(|(_, members)| members.contains(&p))
        .map(|(n, _)| *n)
        .unwrap_or(p.as_str())
}

/// What a probe needs to have seen, beyond phase and init.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A checkpoint of the weights before the first update.
    InitCheckpoint,
    /// Logs that begin at the start of training (not a resumed segment).
    RunStart,
    /// Logs indexed by step, not only by epoch.
    StepLogs,
}

impl Need {
    pub const ALL: &'static [(&'static str, Need)] = &[
        ("init_checkpoint", Need::InitCheckpoint),
        ("run_start", Need::RunStart),
        ("step_logs", Need::StepLogs),
    ];
    fn parse(s: &str) -> Option<Need> {
        Need::ALL.iter().find(|(n, _)| *n == s).map(|(_, v)| *v)
    }
}

/// A probe's applicability declaration.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Applies {
    /// Phases (or families: lm, preference, policy, vision) it judges; empty = any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phase: Vec<String>,
    /// Inits (scratch, pretrained, adapter) it judges; empty = any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init: Vec<String>,
    /// What it needs to have seen: init_checkpoint, run_start, step_logs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Rules {
    #[serde(default)]
    phase: Vec<String>,
    #[serde(default)]
    init: Vec<String>,
    #[serde(default)]
    needs: Vec<String>,
}

impl<'de> serde::Deserialize<'de> for Applies {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Decl {
            Word(String),
            Rules(Rules),
        }
        match Decl::deserialize(d)? {
            Decl::Word(w) if w == "any" => Ok(Applies::default()),
            Decl::Word(w) => Err(serde::de::Error::custom(format!(
                "applies: expected `any` or a map of phase/init/needs, got {w:?}"
            ))),
            Decl::Rules(r) => Ok(Applies {
                phase: r.phase,
                init: r.init,
                needs: r.needs,
            }),
        }
    }
}

/// A declaration naming a phase, init or need that does not exist.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("applies: unknown {what} `{name}` (known: {known})")]
pub struct AppliesError {
    pub what: &'static str,
    pub name: String,
    pub known: String,
}

impl Applies {
    pub fn is_any(&self) -> bool {
        self.phase.is_empty() && self.init.is_empty() && self.needs.is_empty()
    }

    fn phases(&self) -> Vec<Phase> {
        let mut out = Vec::new();
        for p in &self.phase {
            if let Some((_, fam)) = FAMILIES.iter().find(|(n, _)| n == p) {
                out.extend_from_slice(fam);
            } else if let Some(ph) = Phase::parse(p) {
                out.push(ph);
            }
        }
        out
    }

    /// Every name it uses exists (for `lint`).
    pub fn validate(&self) -> Result<(), AppliesError> {
        for p in &self.phase {
            let fam = FAMILIES.iter().any(|(n, _)| n == p);
            let exact = Phase::ALL.iter().any(|ph| ph.as_str() == p);
            if !fam && !exact {
                return Err(AppliesError {
                    what: "phase",
                    name: p.clone(),
                    known: Phase::ALL
                        .iter()
                        .map(|p| p.as_str())
                        .chain(FAMILIES.iter().map(|(n, _)| *n))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        for i in &self.init {
            if !Init::ALL.iter().any(|x| x.as_str() == i) {
                return Err(AppliesError {
                    what: "init",
                    name: i.clone(),
                    known: "scratch, pretrained, adapter".into(),
                });
            }
        }
        for n in &self.needs {
            if Need::parse(n).is_none() {
                return Err(AppliesError {
                    what: "need",
                    name: n.clone(),
                    known: Need::ALL
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        Ok(())
    }

    /// `Ok` when the probe judges this run, else why not (for "not applicable: …").
    pub fn judge(&self, p: &Profile) -> Result<(), String> {
        // A phase guessed at low confidence (a causal-LM head: pre-training and SFT look alike
        // there) is trusted for its family only: it rules out probes of other families, never a
        // sibling phase.
        if !self.phase.is_empty() && p.phase.is_known() && p.phase.value != Phase::Unknown {
            let phases = self.phases();
            let ok = if p.phase.sure >= Sure::Medium {
                phases.contains(&p.phase.value)
            } else {
                let fam = family(p.phase.value);
                phases.iter().any(|x| family(*x) == fam)
            };
            if !ok {
                return Err(format!(
                    "this is {} ({}); it judges {} runs",
                    article(p.phase.value.words()),
                    p.phase.why(),
                    self.phase.join(" / ")
                ));
            }
        }
        if !self.init.is_empty() && p.init.is_known() && p.init.value != Init::Unknown {
            let ok = self.init.iter().any(|i| i == p.init.value.as_str());
            if !ok {
                let what = match p.init.value {
                    Init::Scratch => "weights initialised from scratch",
                    Init::Pretrained => "weights loaded from a trained model",
                    Init::Adapter => "an adapter on a pretrained base",
                    Init::Unknown => "an unknown start",
                };
                return Err(format!(
                    "the run starts from {what} ({}); it judges {} starts",
                    p.init.why(),
                    self.init.join(" / ")
                ));
            }
        }
        for n in self.needs.iter().filter_map(|n| Need::parse(n)) {
            match n {
                Need::InitCheckpoint if !p.checkpoints.init => {
                    let earliest = match (p.checkpoints.count, p.checkpoints.earliest_step) {
                        (0, _) => "no checkpoint at all".to_string(),
                        (_, _) if p.checkpoints.overwritten => {
                            "one checkpoint, rewritten at each save".to_string()
                        }
                        (_, Some(s)) => format!("the earliest is from step {s}"),
                        (_, None) => "the checkpoints state no step".to_string(),
                    };
                    return Err(format!(
                        "no checkpoint from before the first update ({earliest}): trained weights are not an init"
                    ));
                }
                Need::RunStart if p.logging.unit == "epoch" => {
                    return Err("the run logs once per epoch: its first point is the mean over epoch 0, not the value at step 0".into());
                }
                Need::RunStart if !p.sees_run_start() => {
                    let resumed = match p.resumed_at.value {
                        Some(n) => format!(
                            "; resumed at step {}: {}",
                            super::thousands(n),
                            p.resumed_at.why()
                        ),
                        None => String::new(),
                    };
                    return Err(format!(
                        "the logs begin mid-run (first logged step {}{resumed}): start-of-run rules do not apply",
                        p.logging.first_step.map(super::thousands).unwrap_or_default()
                    ));
                }
                Need::StepLogs if p.logging.unit == "epoch" => {
                    return Err("the run logs once per epoch: step windows do not apply".into());
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn article(w: &str) -> String {
    let vowel = w
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c) || w.starts_with("SFT") || w.starts_with("RL"));
    format!("{} {w} run", if vowel { "an" } else { "a" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Field, Sure};

    fn decl(y: &str) -> Applies {
        serde_yaml_ng::from_str(y).unwrap()
    }

    #[test]
    fn any_and_rules_parse_and_validate() {
        assert!(decl("any").is_any());
        let a = decl("{phase: [lm, classification], init: [scratch], needs: [init_checkpoint]}");
        assert!(a.validate().is_ok());
        assert!(decl("{phase: [pretraining_of_doom]}").validate().is_err());
        assert!(decl("{needs: [magic]}").validate().is_err());
        assert!(serde_yaml_ng::from_str::<Applies>("sometimes").is_err());
        assert!(serde_yaml_ng::from_str::<Applies>("{phases: [lm]}").is_err());
    }

    #[test]
    fn a_known_profile_outside_the_declaration_is_not_applicable() {
        let mut p = Profile::unknown();
        let a = decl("{phase: [lm], init: [scratch], needs: [init_checkpoint, run_start]}");
        // Nothing known: only the needs can rule it out (no init checkpoint).
        assert!(a
            .judge(&p)
            .unwrap_err()
            .contains("no checkpoint from before"));
        p.checkpoints.init = true;
        assert!(a.judge(&p).is_ok());
        p.phase = Field::new(Phase::Dpo, Sure::High, "series rewards/margins");
        assert!(a.judge(&p).unwrap_err().contains("rewards/margins"));
        // A low-confidence phase rules out other families only, never a sibling phase.
        p.phase = Field::new(Phase::Sft, Sure::Low, "a causal-LM head");
        assert!(a.judge(&p).is_ok());
        p.phase = Field::new(Phase::Dpo, Sure::Low, "a guess");
        assert!(a.judge(&p).is_err());
        p.phase = Field::new(Phase::Sft, Sure::High, "x");
        p.init = Field::new(Init::Pretrained, Sure::Low, "first loss far below ln V");
        assert!(a.judge(&p).unwrap_err().contains("loaded"));
        p.init = Field::new(Init::Scratch, Sure::Low, "x");
        p.resumed_at = Field::new(Some(10_000), Sure::Medium, "log starts late");
        // Resumed, but the log still covers the start (appended from step 0): applicable.
        p.logging.first_step = Some(10);
        p.logging.interval = Some(10);
        assert!(a.judge(&p).is_ok());
        p.logging.first_step = Some(10_010);
        assert!(a.judge(&p).unwrap_err().contains("10,010"));
    }
}
