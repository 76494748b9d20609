//! The metric vocabulary: rules from `playbook/metrics.yaml` (plus a user's own, consulted
//! first) that map the names frameworks log to the meanings probes ask for. [`canonical_name`]
//! is the one entry point every reader uses.
//!
//! A rule's name patterns match a lowercased tag as logged, then with its train or eval prefix
//! removed; `*` matches any characters but `/`, `{n}` a number and `{part}` one of the rule's
//! `parts`, both carried into the meaning.

use std::sync::{OnceLock, RwLock};

/// One rule as the YAML states it.
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricRule {
    /// The meaning (`loss`, `learning_rate/pg{n}`, `loss/{part}`).
    pub canonical: String,
    pub names: Vec<String>,
    /// `eval`: a validation metric whatever its prefix (its meaning gets `eval_`).
    #[serde(default)]
    pub side: Option<String>,
    /// The loss this is a part of (its parts sum to it where no total is logged).
    #[serde(default)]
    pub part_of: Option<String>,
    /// What `{part}` may stand for.
    #[serde(default)]
    pub parts: Vec<String>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct VocabFile {
    #[serde(default)]
    metrics: Vec<MetricRule>,
}

/// A list of rules, first match wins.
#[derive(Debug, Clone, Default)]
pub struct Vocabulary {
    pub rules: Vec<MetricRule>,
}

const SHIPPED: &str = include_str!("../../../playbook/metrics.yaml");

const EVAL_PREFIXES: &[&str] = &[
    "eval/",
    "eval_",
    "val/",
    "val_",
    "validation/",
    "validation_",
    "valid/",
    "valid_",
    "test/",
    "test_",
];
const TRAIN_PREFIXES: &[&str] = &[
    "train/",
    "training/",
    "trainer/",
    "train_",
    "training_",
    // The learner's update scope (Tianshou's `update/loss/mean`).
    "update/",
];

/// The split named after the metric, with `/` or `_` before it.
const EVAL_SUFFIXES: &[&str] = &[
    "/eval",
    "_eval",
    "/val",
    "_val",
    "/validation",
    "_validation",
    "/valid",
    "_valid",
    "/test",
    "_test",
];
const TRAIN_SUFFIXES: &[&str] = &["/train", "_train", "/training", "_training"];

impl Vocabulary {
    /// Rules from a YAML text with a top-level `metrics:` list.
    pub fn from_yaml(text: &str) -> Result<Vocabulary, String> {
        let f: VocabFile = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        let v = Vocabulary { rules: f.metrics };
        v.validate()?;
        Ok(v)
    }

    /// The shipped vocabulary (`playbook/metrics.yaml`).
    pub fn shipped() -> &'static Vocabulary {
        static V: OnceLock<Vocabulary> = OnceLock::new();
        V.get_or_init(|| Vocabulary::from_yaml(SHIPPED).unwrap_or_default())
    }

    /// Problems a rule has: an empty meaning or name list, `{part}` without parts, a side
    /// other than `eval`.
    pub fn validate(&self) -> Result<(), String> {
        for r in &self.rules {
            if r.canonical.trim().is_empty() || r.names.is_empty() {
                return Err(format!(
                    "metric rule {:?}: needs a canonical name and names",
                    r.canonical
                ));
            }
            let uses_part =
                r.canonical.contains("{part}") || r.names.iter().any(|n| n.contains("{part}"));
            if uses_part && r.parts.is_empty() {
                return Err(format!(
                    "metric rule {:?}: uses {{part}} but lists no parts",
                    r.canonical
                ));
            }
            if let Some(s) = &r.side {
                if s != "eval" {
                    return Err(format!(
                        "metric rule {:?}: side must be `eval`, not {s:?}",
                        r.canonical
                    ));
                }
            }
        }
        Ok(())
    }

    /// The meaning of a lowercased, trimmed name with no prefix handling.
    fn lookup(&self, t: &str) -> Option<(String, &MetricRule)> {
        self.rules.iter().find_map(|r| {
            r.names
                .iter()
                .find_map(|n| matches(n, t, r))
                .map(|m| (m, r))
        })
    }

    /// The meaning of a tag: as logged, else without its eval or train prefix.
    pub fn canonical(&self, tag: &str) -> Option<String> {
        let t = tag.trim().to_lowercase();
        if let Some((m, r)) = self.lookup(&t) {
            return Some(sided(m, r, false));
        }
        for p in EVAL_PREFIXES {
            if let Some((m, r)) = t.strip_prefix(p).and_then(|b| self.lookup(b)) {
                return Some(sided(m, r, true));
            }
        }
        for p in TRAIN_PREFIXES {
            if let Some((m, r)) = t.strip_prefix(p).and_then(|b| self.lookup(b)) {
                return Some(sided(m, r, false));
            }
        }
        // The split named after the metric (`loss/train`, `loss/val`, `acc_valid`: TensorBoard's
        // `add_scalars("loss", {"train": …, "val": …})` and scripts that group a chart per
        // metric): the same meaning as with the split in front.
        for (suffixes, eval) in [(EVAL_SUFFIXES, true), (TRAIN_SUFFIXES, false)] {
            for sfx in suffixes {
                if let Some((m, r)) = t
                    .strip_suffix(sfx)
                    .filter(|b| !b.is_empty())
                    .and_then(|b| self.lookup(b))
                {
                    return Some(sided(m, r, eval));
                }
            }
        }
        // A distribution's summary logged as `<metric>/mean` (Tianshou's
        // `training/returns_stat/mean`, `update/vf_loss/mean`): the mean stands for the metric;
        // its `/std`, `/max`, `/min` siblings keep their own names.
        if let Some(base) = t.strip_suffix("/mean").filter(|b| !b.is_empty()) {
            return self.canonical(base);
        }
        None
    }

    /// The loss a meaning is a part of (`loss/box` → `loss`, `eval_loss/box` → `eval_loss`).
    pub fn part_of(&self, canonical: &str) -> Option<String> {
        let (eval, base) = match canonical.strip_prefix("eval_") {
            Some(b) => (true, b),
            None => (false, canonical),
        };
        // A part is one of the rule's `parts` after its prefix (`loss/box`), never any name
        // that merely starts like one (`loss/train` is not a part of the loss).
        let whole = self.rules.iter().find_map(|r| {
            let part_of = r.part_of.as_ref()?;
            let prefix = r.canonical.split('{').next()?;
            let rest = base.strip_prefix(prefix).filter(|x| !x.is_empty())?;
            (r.parts.is_empty() || r.parts.iter().any(|p| p == rest)).then(|| part_of.clone())
        })?;
        Some(if eval { format!("eval_{whole}") } else { whole })
    }
}

fn sided(meaning: String, r: &MetricRule, eval_prefix: bool) -> String {
    if eval_prefix || r.side.as_deref() == Some("eval") {
        format!("eval_{meaning}")
    } else {
        meaning
    }
}

/// Whether `pattern` matches all of `t`; the meaning with `{n}` / `{part}` filled in.
fn matches(pattern: &str, t: &str, r: &MetricRule) -> Option<String> {
    let mut caps: Vec<(&str, String)> = Vec::new();
    if !match_here(pattern, t, r, &mut caps) {
        return None;
    }
    let mut out = r.canonical.clone();
    for (k, v) in caps {
        out = out.replace(k, &v);
    }
    Some(out)
}

/// A small backtracking matcher over `*`, `{n}` and `{part}` (patterns are a few dozen bytes).
fn match_here<'p>(p: &'p str, t: &str, r: &MetricRule, caps: &mut Vec<(&'p str, String)>) -> bool {
    if p.is_empty() {
        return t.is_empty();
    }
    if let Some(rest) = p.strip_prefix('*') {
        let limit = t.find('/').unwrap_or(t.len());
        return (0..=limit).rev().any(|i| {
            let mut c = caps.clone();
            let ok = t
                .get(i..)
                .is_some_and(|tail| match_here(rest, tail, r, &mut c));
            if ok {
                *caps = c;
            }
            ok
        });
    }
    if let Some(rest) = p.strip_prefix("{n}") {
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        return (1..=digits).rev().any(|i| {
            let mut c = caps.clone();
            c.push(("{n}", t[..i].to_string()));
            let ok = match_here(rest, &t[i..], r, &mut c);
            if ok {
                *caps = c;
            }
            ok
        });
    }
    if let Some(rest) = p.strip_prefix("{part}") {
        return r.parts.iter().any(|part| {
            let part = part.to_lowercase();
            let Some(tail) = t.strip_prefix(part.as_str()) else {
                return false;
            };
            let mut c = caps.clone();
            c.push(("{part}", part.clone()));
            let ok = match_here(rest, tail, r, &mut c);
            if ok {
                *caps = c;
            }
            ok
        });
    }
    let mut chars = p.chars();
    let Some(pc) = chars.next() else {
        return t.is_empty();
    };
    let mut tc = t.chars();
    match tc.next() {
        Some(c) if c == pc => match_here(chars.as_str(), tc.as_str(), r, caps),
        _ => false,
    }
}

/// Rules a user's playbook adds (consulted before the shipped ones).
static USER: RwLock<Vocabulary> = RwLock::new(Vocabulary { rules: Vec::new() });

/// Adds a user's rules for every later read in this process (`--playbook DIR/metrics.yaml`).
pub fn install_user_rules(rules: Vec<MetricRule>) {
    if let Ok(mut g) = USER.write() {
        g.rules.extend(rules);
    }
}

/// The meaning of a logged tag: the user's rules, then the shipped vocabulary, then the tag
/// itself (lowercased, trimmed).
pub fn canonical_name(tag: &str) -> String {
    if let Some(m) = USER.read().ok().and_then(|user| user.canonical(tag)) {
        return m;
    }
    Vocabulary::shipped()
        .canonical(tag)
        .unwrap_or_else(|| tag.trim().to_lowercase())
}

/// The loss a canonical name is a part of, by the user's and the shipped rules.
pub fn part_of(canonical: &str) -> Option<String> {
    USER.read()
        .ok()
        .and_then(|user| user.part_of(canonical))
        .or_else(|| Vocabulary::shipped().part_of(canonical))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_vocabulary_parses_and_is_valid() {
        let v = Vocabulary::from_yaml(SHIPPED).unwrap();
        assert!(v.rules.len() > 20);
    }

    #[test]
    fn names_from_frameworks_the_project_was_not_built_on_map_to_meanings() {
        for (tag, want) in [
            ("train/box_loss", "loss/box"),
            ("val/cls_loss", "eval_loss/cls"),
            ("train/dfl_loss", "loss/dfl"),
            ("lr/pg0", "learning_rate/pg0"),
            ("lr/pg2", "learning_rate/pg2"),
            ("x/lr1", "learning_rate/pg1"),
            ("epoch_loss", "loss"),
            ("epoch_learning_rate", "learning_rate"),
            ("metrics/mAP50-95(B)", "eval_map"),
            ("metrics/mAP50(B)", "eval_map50"),
            ("val/mAP50-95", "eval_map"),
            ("rollout/ep_rew_mean", "reward"),
            ("charts/episodic_return", "reward"),
            ("train/approx_kl", "approx_kl"),
            ("losses/approx_kl", "approx_kl"),
            ("train/clip_fraction", "clip_fraction"),
            ("losses/clipfrac", "clip_fraction"),
            ("train/entropy_loss", "entropy_loss"),
            ("losses/entropy", "entropy"),
            ("train/value_loss", "value_loss"),
            ("charts/learning_rate", "learning_rate"),
            ("eval_top1", "eval_accuracy"),
            ("update/vf_loss/mean", "value_loss"),
            ("training/returns_stat/mean", "reward"),
            ("test/returns_stat/mean", "eval_reward"),
            ("training/returns_stat/std", "training/returns_stat/std"),
            ("lr-AdamW/pg1", "learning_rate/pg1"),
            ("lr-AdamW", "learning_rate"),
            ("grad_2.0_norm_total", "grad_norm"),
            // The split after the metric (TensorBoard's add_scalars, a chart per metric).
            ("loss/train", "loss"),
            ("loss/val", "eval_loss"),
            ("Loss/Validation", "eval_loss"),
            ("loss_valid", "eval_loss"),
            ("lr/train", "learning_rate"),
        ] {
            assert_eq!(canonical_name(tag), want, "tag {tag:?}");
        }
        assert_eq!(part_of("loss/box").as_deref(), Some("loss"));
        assert_eq!(part_of("eval_loss/cls").as_deref(), Some("eval_loss"));
        assert_eq!(part_of("loss"), None);
        assert_eq!(part_of("learning_rate/pg0"), None);
        // A name that only starts like a part is not one.
        assert_eq!(part_of("loss/train"), None);
        assert_eq!(part_of("loss/whatever"), None);
    }

    #[test]
    fn a_frameworks_names_are_added_by_yaml_alone() {
        let yaml = "metrics:\n  - canonical: loss\n    names: [\"mytrainer/objective\"]\n  - canonical: learning_rate/pg{n}\n    names: [\"opt/group{n}/lr\"]\n";
        let v = Vocabulary::from_yaml(yaml).unwrap();
        assert_eq!(v.canonical("MyTrainer/Objective").as_deref(), Some("loss"));
        assert_eq!(
            v.canonical("val/mytrainer/objective").as_deref(),
            Some("eval_loss")
        );
        assert_eq!(
            v.canonical("opt/group3/lr").as_deref(),
            Some("learning_rate/pg3")
        );
        assert_eq!(v.canonical("other"), None);
        assert!(Vocabulary::from_yaml(
            "metrics:\n  - canonical: x/{part}\n    names: [\"{part}\"]\n"
        )
        .is_err());
        assert!(Vocabulary::from_yaml(
            "metrics:\n  - canonical: x\n    names: [y]\n    side: train\n"
        )
        .is_err());
    }
}
