//! `mltriage lint`: schema is checked on load; this checks the rest — unique ids, every
//! see_also / probe / tree reference resolves, probe thresholds cover what the code reads,
//! trees are connected and acyclic, and (for the embedded playbook) that every seed id exists.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

use mltriage_probes::probe::ProbeSpec;

use super::model::Origin;
use super::tree_def::{NodeKind, TreeDef};
use super::Catalog;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub severity: Severity,
    pub origin: Origin,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{}: {sev}: {}", self.origin, self.message)
    }
}

/// Upper bounds for thresholds that set how much work a probe does (steps it trains, window
/// lengths): a value past them would make a probe run for hours.
pub const WORK_BOUNDS: [(&str, f64); 4] = [
    ("steps", 100_000.0),
    ("window", 1_000_000.0),
    ("ema_span", 1_000_000.0),
    ("reward_ema_span", 1_000_000.0),
];

/// Why a numeric threshold is unusable, if it is: not finite, absurdly large, or a work
/// bound ([`WORK_BOUNDS`]) that is negative or too large.
pub fn threshold_out_of_range(key: &str, x: f64) -> Option<String> {
    if !x.is_finite() {
        return Some("is not a finite number".into());
    }
    if x.abs() > 1e12 {
        return Some("is out of range (|value| > 1e12)".into());
    }
    let (_, max) = WORK_BOUNDS.iter().find(|(k, _)| *k == key)?;
    if x < 0.0 || x > *max {
        return Some(format!("is outside 0..={max} (work limit)"));
    }
    None
}

/// The ids the seed material defines (DESIGN.md §4.1); the embedded playbook must have all.
pub fn required_ids() -> Vec<String> {
    let mut ids = Vec::new();
    for (p, n) in [
        ("L", 10),
        ("V", 7),
        ("DF", 7),
        ("R", 6),
        ("X", 5),
        ("O", 26),
    ] {
        ids.extend((1..=n).map(|i| format!("{p}{i}")));
    }
    for s in [
        "1.1", "1.2", "2.1", "2.2", "3.1", "3.2", "4.1", "4.2", "5.1", "5.2", "6.1", "6.2", "6.3",
    ] {
        ids.push(format!("S{s}"));
    }
    ids.push("F1".into());
    ids
}

/// The tree ids the product ships (DESIGN.md §4.4), in the order they are listed.
pub const REQUIRED_TREES: [&str; 8] = [
    "stability",
    "convergence",
    "llm",
    "vision",
    "diffusion",
    "rl",
    "vlm",
    "systems",
];

pub struct LintOptions<'a> {
    /// Probes implemented in code (unimplemented ones named by the playbook are warnings).
    pub implemented: &'a [ProbeSpec],
    /// Check seed-id completeness and that every entry is reachable from a tree.
    pub complete: bool,
}

/// Words meant for the catalog's authors, not its users.
fn authors_words(text: &str) -> Option<&'static str> {
    const PHRASES: &[&str] = &[
        "the seed says",
        "the seed calls",
        "the seed reads",
        "the seed blames",
        "seed instance",
        "seed mini",
        "the seed's",
        "manifest.json",
    ];
    let t = text.to_ascii_lowercase();
    PHRASES.iter().copied().find(|p| t.contains(p))
}

pub fn lint(cat: &Catalog, opts: &LintOptions) -> Vec<Problem> {
    let mut out = Vec::new();
    let err = |origin: &Origin, msg: String| Problem {
        severity: Severity::Error,
        origin: origin.clone(),
        message: msg,
    };
    let warn = |origin: &Origin, msg: String| Problem {
        severity: Severity::Warning,
        origin: origin.clone(),
        message: msg,
    };

    let entry_ids: HashSet<&str> = cat.entries.iter().map(|e| e.id.as_str()).collect();
    let probe_ids: HashSet<&str> = cat.probes.iter().map(|p| p.id.as_str()).collect();
    let implemented: HashMap<&str, &ProbeSpec> =
        opts.implemented.iter().map(|s| (s.id, s)).collect();

    for e in &cat.entries {
        if e.id.trim().is_empty() || e.id.contains(char::is_whitespace) {
            out.push(err(
                &e.origin,
                format!("entry id {:?} must be non-empty without spaces", e.id),
            ));
        }
        for (field, v) in [
            ("title", &e.title),
            ("symptom", &e.symptom),
            ("cause", &e.cause),
            ("fix", &e.fix),
        ] {
            if v.trim().is_empty() {
                out.push(err(&e.origin, format!("{}: `{field}` is empty", e.id)));
            }
        }
        for s in &e.see_also {
            if !entry_ids.contains(s.as_str()) {
                out.push(err(
                    &e.origin,
                    format!("{}: see_also {s:?} is not an entry", e.id),
                ));
            }
            if s == &e.id {
                out.push(warn(&e.origin, format!("{}: see_also names itself", e.id)));
            }
        }
        for p in &e.probes {
            if !probe_ids.contains(p.as_str()) && !implemented.contains_key(p.as_str()) {
                out.push(err(
                    &e.origin,
                    format!("{}: probe {p:?} is not defined in probes.yaml", e.id),
                ));
            }
        }
        for r in &e.refs {
            if !(r.url.starts_with("https://") || r.url.starts_with("http://")) {
                out.push(err(
                    &e.origin,
                    format!("{}: ref {:?} has no http(s) url", e.id, r.title),
                ));
            }
        }
        // Users' own words: a trimmed problem statement, not a paragraph, and not a copy of a
        // keyword (which already holds it).
        for p in &e.phrases {
            let words = p.split_whitespace().count();
            if !(3..=25).contains(&words) {
                out.push(warn(
                    &e.origin,
                    format!(
                        "{}: phrase {p:?} has {words} words (a user's statement: 3-25)",
                        e.id
                    ),
                ));
            } else if e.keywords.iter().any(|k| k.eq_ignore_ascii_case(p)) {
                out.push(warn(
                    &e.origin,
                    format!("{}: phrase {p:?} repeats a keyword", e.id),
                ));
            }
        }
        // Users read the catalog, not the seed material it was written from: text that
        // argues with "the seed" or cites its files says the fact itself instead.
        let mut texts: Vec<&str> = vec![&e.title, &e.symptom, &e.cause, &e.fix];
        texts.extend(e.knobs.iter().map(String::as_str));
        texts.extend(e.keywords.iter().map(String::as_str));
        texts.extend(e.question.iter().map(String::as_str));
        texts.extend(e.threshold.iter().map(String::as_str));
        texts.extend(
            e.leaves
                .iter()
                .flat_map(|l| [l.when.as_str(), l.then.as_str()]),
        );
        if let Some(w) = texts.iter().find_map(|t| authors_words(t)) {
            out.push(warn(
                &e.origin,
                format!(
                    "{}: {w:?} speaks of the seed material; say the fact itself",
                    e.id
                ),
            ));
        }
        lint_signature(e, cat, &implemented, &mut out);
        if e.domain == super::Domain::Stability && (e.question.is_none() || e.leaves.is_empty()) {
            out.push(err(
                &e.origin,
                format!("{}: stability entries need `question` and `leaves`", e.id),
            ));
        }
        if e.domain == super::Domain::Folklore && e.source.is_none() {
            out.push(err(
                &e.origin,
                format!("{}: folklore entries need a `source` attribution", e.id),
            ));
        }
    }

    for p in &cat.probes {
        for (key, v) in &p.thresholds {
            if let super::Threshold::Num(x) = v {
                if let Some(why) = threshold_out_of_range(key, *x) {
                    out.push(err(
                        &p.origin,
                        format!("probe {}: threshold `{key}` = {x} {why}", p.id),
                    ));
                }
            }
        }
        for e in &p.entries {
            if !entry_ids.contains(e.as_str()) {
                out.push(err(
                    &p.origin,
                    format!("probe {}: entry {e:?} does not exist", p.id),
                ));
            }
        }
        match &p.applies {
            None => out.push(err(
                &p.origin,
                format!(
                    "probe {}: no `applies:` declaration (`applies: any`, or the phases / inits / needs it judges)",
                    p.id
                ),
            )),
            Some(a) => {
                if let Err(e) = a.validate() {
                    out.push(err(&p.origin, format!("probe {}: {e}", p.id)));
                }
            }
        }
        for x in &p.explains {
            if !probe_ids.contains(x.as_str()) {
                out.push(err(
                    &p.origin,
                    format!("probe {}: explains {x:?}, which is not a probe", p.id),
                ));
            }
        }
        match implemented.get(p.id.as_str()) {
            None => out.push(warn(
                &p.origin,
                format!("probe {} is not implemented yet", p.id),
            )),
            Some(spec) => {
                for key in spec.params {
                    if !p.thresholds.contains_key(*key) {
                        out.push(err(
                            &p.origin,
                            format!("probe {}: threshold `{key}` is missing", p.id),
                        ));
                    }
                }
                for key in p.thresholds.keys() {
                    if !spec.params.contains(&key.as_str()) {
                        out.push(warn(
                            &p.origin,
                            format!("probe {}: threshold `{key}` is not read by the probe", p.id),
                        ));
                    }
                }
            }
        }
    }
    for spec in opts.implemented {
        if !probe_ids.contains(spec.id) && opts.complete {
            out.push(warn(
                &Origin::default(),
                format!(
                    "implemented probe {} has no definition in probes.yaml",
                    spec.id
                ),
            ));
        }
    }

    // Search vocabulary: a synonym group needs two phrases; no phrase, cue or method name may be
    // blank.
    let vocab_origin = Origin {
        file: "playbook/synonyms.yaml".into(),
        line: 0,
    };
    for (i, g) in cat.vocab.synonyms.iter().enumerate() {
        if g.iter().any(|p| p.trim().is_empty()) {
            out.push(err(
                &vocab_origin,
                format!("synonym group {} has a blank phrase", i + 1),
            ));
        }
        if g.len() < 2 {
            out.push(warn(
                &vocab_origin,
                format!("synonym group {} has fewer than two phrases: {g:?}", i + 1),
            ));
        }
    }
    for t in &cat.vocab.outside {
        if t.topic.trim().is_empty() || t.phrases.is_empty() {
            out.push(err(
                &vocab_origin,
                format!("outside topic {:?} needs a name and phrases", t.topic),
            ));
        }
        if t.phrases.iter().any(|p| p.trim().is_empty())
            || t.together
                .iter()
                .any(|l| l.is_empty() || l.iter().any(|p| p.trim().is_empty()))
        {
            out.push(err(
                &vocab_origin,
                format!("outside topic {:?} has a blank phrase", t.topic),
            ));
        }
    }
    for (i, g) in cat.vocab.methods.iter().enumerate() {
        if g.is_empty() || g.iter().any(|m| m.trim().is_empty()) {
            out.push(err(
                &vocab_origin,
                format!("method group {} is empty or has a blank name", i + 1),
            ));
        }
    }
    for (d, words) in &cat.vocab.cues {
        if words.iter().any(|w| w.trim().is_empty()) {
            out.push(err(
                &vocab_origin,
                format!("cues for {d} hold a blank word"),
            ));
        }
    }

    // References in the prose resolve: entries, tree nodes, never a document we do not ship.
    let mut texts: Vec<(&Origin, String, &str)> = Vec::new();
    for e in &cat.entries {
        let mut fields: Vec<&str> = vec![&e.title, &e.symptom, &e.cause, &e.fix];
        fields.extend(e.question.as_deref());
        fields.extend(e.threshold.as_deref());
        fields.extend(e.knobs.iter().map(String::as_str));
        for l in &e.leaves {
            fields.push(&l.when);
            fields.push(&l.then);
        }
        for f in fields {
            texts.push((&e.origin, e.id.clone(), f));
        }
    }
    for p in &cat.probes {
        texts.push((&p.origin, format!("probe {}", p.id), &p.question));
    }
    for t in &cat.trees {
        texts.extend(
            t.description
                .as_deref()
                .map(|d| (&t.origin, format!("tree {}", t.id), d)),
        );
        for n in &t.nodes {
            for f in n.question.iter().chain(n.note.iter()) {
                texts.push((&t.origin, format!("tree {} node {}", t.id, n.id), f));
            }
        }
    }
    for (origin, who, text) in texts {
        for d in super::refs::dangling(cat, text) {
            out.push(err(origin, format!("{who}: {:?} {}", d.what, d.why)));
        }
    }

    let mut reachable_entries = BTreeSet::new();
    for t in &cat.trees {
        lint_tree(
            t,
            cat,
            &probe_ids,
            &implemented,
            &mut out,
            &mut reachable_entries,
        );
    }

    if opts.complete {
        let anchor = Origin {
            file: "playbook".into(),
            line: 0,
        };
        for id in required_ids() {
            if !entry_ids.contains(id.as_str()) {
                out.push(err(&anchor, format!("seed entry {id} is missing")));
            }
        }
        for t in REQUIRED_TREES {
            if cat.tree(t).is_none() {
                out.push(err(&anchor, format!("tree {t:?} is missing")));
            }
        }
        if !cat.trees.is_empty() {
            for e in &cat.entries {
                if !reachable_entries.contains(e.id.as_str()) {
                    out.push(err(
                        &e.origin,
                        format!("{} is not reachable from any tree", e.id),
                    ));
                }
            }
        }
    }
    out.sort_by(|a, b| {
        (a.severity, &a.origin.file, a.origin.line).cmp(&(
            b.severity,
            &b.origin.file,
            b.origin.line,
        ))
    });
    out
}

/// Every entry carries a signature: artifacts + what they show (+ the probes that look), or
/// `none` with the reason. A listed probe must exist and name the entry among its `entries`.
fn lint_signature(
    e: &super::Entry,
    cat: &Catalog,
    implemented: &HashMap<&str, &ProbeSpec>,
    out: &mut Vec<Problem>,
) {
    let err = |msg: String| Problem {
        severity: Severity::Error,
        origin: e.origin.clone(),
        message: format!("{}: {msg}", e.id),
    };
    let Some(sig) = &e.signature else {
        // The shipped catalog must sign every entry (an error); a user's own overlay entry
        // without one still loads, and lint says what is missing (a warning), so lint and
        // `--playbook DIR` keep agreeing.
        let shipped = super::load::embedded_files()
            .any(|f| e.origin.file == std::path::Path::new("playbook").join(f));
        out.push(Problem {
            severity: if shipped {
                Severity::Error
            } else {
                Severity::Warning
            },
            ..err(
                "no `signature` (what the run's artifacts show when this is the cause, or `none: reason`)"
                    .into(),
            )
        });
        return;
    };
    match &sig.none {
        Some(reason) => {
            if reason.trim().is_empty() {
                out.push(err("signature `none` needs a reason".into()));
            }
            if !sig.artifacts.is_empty() || sig.shows.is_some() || !sig.probes.is_empty() {
                out.push(err(
                    "signature is `none` but also names artifacts, shows or probes".into(),
                ));
            }
        }
        None => {
            if sig.artifacts.is_empty() {
                out.push(err(
                    "signature names no `artifacts` (metrics | checkpoint | optimizer | batch | config | log) and no `none` reason"
                        .into(),
                ));
            }
            if sig.shows.as_deref().is_none_or(|s| s.trim().is_empty()) {
                out.push(err(
                    "signature has no `shows` (which file, series or tensor, what value)".into(),
                ));
            }
        }
    }
    for p in &sig.probes {
        let names = match (cat.probe(p), implemented.get(p.as_str())) {
            (Some(def), _) => def.entries.iter().any(|x| x == &e.id),
            (None, Some(spec)) => spec.entries.contains(&e.id.as_str()),
            (None, None) => {
                out.push(err(format!(
                    "signature probe {p:?} is not defined in probes.yaml"
                )));
                continue;
            }
        };
        if !names {
            out.push(err(format!(
                "signature probe {p:?} cannot name this entry (it is not among the probe's `entries`)"
            )));
        }
    }
}

fn lint_tree<'c>(
    t: &'c TreeDef,
    cat: &'c Catalog,
    probe_ids: &HashSet<&str>,
    implemented: &HashMap<&str, &ProbeSpec>,
    out: &mut Vec<Problem>,
    reachable_entries: &mut BTreeSet<&'c str>,
) {
    let o = &t.origin;
    let e = |m: String| Problem {
        severity: Severity::Error,
        origin: o.clone(),
        message: format!("tree {}: {m}", t.id),
    };
    let mut ids: HashMap<&str, usize> = HashMap::new();
    for (i, n) in t.nodes.iter().enumerate() {
        if ids.insert(n.id.as_str(), i).is_some() {
            out.push(e(format!("duplicate node id {:?}", n.id)));
        }
    }
    if !ids.contains_key(t.root.as_str()) {
        out.push(e(format!("root {:?} is not a node", t.root)));
        return;
    }
    for n in &t.nodes {
        let targets = n.targets();
        for tg in &targets {
            if !ids.contains_key(tg) {
                out.push(e(format!(
                    "node {:?}: branch target {tg:?} does not exist",
                    n.id
                )));
            }
        }
        if let Some(en) = &n.entry {
            if cat.entry(en).is_none() {
                out.push(e(format!("node {:?}: entry {en:?} does not exist", n.id)));
            }
        }
        match n.kind {
            NodeKind::Numeric => match &n.probe {
                None => out.push(e(format!("numeric node {:?} has no probe", n.id))),
                Some(p) => {
                    if !probe_ids.contains(p.as_str()) {
                        out.push(e(format!("node {:?}: probe {p:?} is not defined", n.id)));
                    } else if let Some(spec) = implemented.get(p.as_str()) {
                        for label in n.branches.keys() {
                            let answered = match label.strip_prefix("warn_") {
                                Some(o) => spec.outcomes.contains(&o),
                                None => label == "warn" || spec.outcomes.contains(&label.as_str()),
                            };
                            if label != "default" && !answered {
                                out.push(e(format!(
                                    "node {:?}: probe {p} never answers {label:?}",
                                    n.id
                                )));
                            }
                        }
                    }
                    if n.branches.is_empty() {
                        out.push(e(format!("numeric node {:?} has no branches", n.id)));
                    }
                }
            },
            NodeKind::Fact => {
                if n.fact.is_none() {
                    out.push(e(format!("fact node {:?} names no fact", n.id)));
                }
                if n.branches.is_empty() {
                    out.push(e(format!("fact node {:?} has no branches", n.id)));
                }
            }
            NodeKind::Choice => {
                if n.options.is_empty() {
                    out.push(e(format!("choice node {:?} has no options", n.id)));
                }
            }
            NodeKind::Leaf => {
                if n.entry.is_none() && n.note.is_none() {
                    out.push(e(format!("leaf {:?} names no entry and no note", n.id)));
                }
                if !targets.is_empty() {
                    out.push(e(format!("leaf {:?} has branches", n.id)));
                }
            }
        }
    }
    // A warn never routes to a failure's branch (DESIGN §7): no `warn*` branch may reach a
    // leaf that a failure outcome reaches.
    let is_leaf = |id: &str| {
        ids.get(id)
            .is_some_and(|&i| t.nodes[i].kind == NodeKind::Leaf)
    };
    let mut fail_leaves: HashMap<&str, (&str, &str)> = HashMap::new();
    for n in t.nodes.iter().filter(|n| n.kind == NodeKind::Numeric) {
        for (label, target) in &n.branches {
            let failure = !matches!(label.as_str(), "pass" | "skip" | "default")
                && !crate::trees::is_warn_label(label);
            if failure && is_leaf(target) {
                fail_leaves.entry(target.as_str()).or_insert((&n.id, label));
            }
        }
    }
    for n in t.nodes.iter().filter(|n| n.kind == NodeKind::Numeric) {
        for (label, target) in &n.branches {
            if !crate::trees::is_warn_label(label) {
                continue;
            }
            if let Some((by, fl)) = fail_leaves.get(target.as_str()) {
                out.push(e(format!(
                    "node {:?}: warn branch {label:?} reaches {target:?}, the leaf failure \
                     {fl:?} of {by:?} reaches (a warn never takes a failure's branch)",
                    n.id
                )));
            }
        }
    }
    // Reachability and cycles (iterative DFS with colours).
    let mut colour = vec![0u8; t.nodes.len()];
    let mut stack: Vec<(usize, usize)> = vec![(ids[t.root.as_str()], 0)];
    colour[ids[t.root.as_str()]] = 1;
    while let Some((i, k)) = stack.pop() {
        let n = &t.nodes[i];
        let targets = n.targets();
        if k < targets.len() {
            stack.push((i, k + 1));
            if let Some(&j) = ids.get(targets[k]) {
                match colour[j] {
                    0 => {
                        colour[j] = 1;
                        stack.push((j, 0));
                    }
                    1 => out.push(e(format!(
                        "cycle through {:?} -> {:?}",
                        n.id, t.nodes[j].id
                    ))),
                    _ => {}
                }
            }
        } else {
            colour[i] = 2;
        }
    }
    for (i, n) in t.nodes.iter().enumerate() {
        if colour[i] == 0 {
            out.push(e(format!("node {:?} is unreachable from the root", n.id)));
        } else if let Some(en) = &n.entry {
            if let Some(entry) = cat.entry(en) {
                reachable_entries.insert(entry.id.as_str());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::authors_words;

    #[test]
    fn words_meant_for_the_catalogs_authors_are_caught() {
        assert_eq!(
            authors_words("Seed instance: V ~ 512"),
            Some("seed instance")
        );
        assert_eq!(
            authors_words("The seed says bf16 is affected"),
            Some("the seed says")
        );
        assert_eq!(
            authors_words("check the path in manifest.json"),
            Some("manifest.json")
        );
        // A random seed is a user's word.
        assert_eq!(
            authors_words("one seed is not a result; rerun 5 seeds"),
            None
        );
    }
}
