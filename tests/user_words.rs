//! Catalog authors' wording stays out of what users read: every user-visible field of the
//! embedded playbook (entries, tree nodes and options, probe questions) and every string in
//! `src/look/strings.rs`. Users never read the seed material the catalog was written from, so
//! "Seed instance: V ~ 512", "the seed blames …" or "against manifest.json" tell them nothing;
//! the text says the fact itself. A random seed (the RNG's) is fine: "random seed", "seeds".

use mltriage::catalog::Catalog;

/// Phrases that speak of the catalog's sources, not of the user's run (lower case).
const AUTHORS_WORDS: &[&str] = &[
    "manifest",
    "seed instance",
    "seed mini",
    "seed material",
    "seed's",
    "the seed ",
    "the seed,",
    "the seed.",
    "the seed:",
    "seed text",
    "seed tree",
    "by-domain.md",
    "convergence-debugging.md",
    "skill.md",
];

fn leak(text: &str) -> Option<&'static str> {
    let t = text.to_lowercase();
    AUTHORS_WORDS.iter().copied().find(|p| t.contains(p))
}

#[test]
fn the_checker_catches_the_wordings_users_saw() {
    for seen in [
        "Seed instance: V ~ 512, so ln V ~ 6.24",
        "the seed mini-GPT starts at 6.24",
        "compare against manifest.json",
        "(The seed blames an off-by-one in t/W.)",
    ] {
        assert!(leak(seen).is_some(), "{seen}");
    }
    for fine in [
        "Across at least 5 seeds, how wide is the spread?",
        "fix the random seed and overfit one batch",
        "seed variance can look like a bug",
    ] {
        assert_eq!(leak(fine), None, "{fine}");
    }
}

#[test]
fn playbook_text_users_read_has_no_catalog_author_wording() {
    let cat = Catalog::embedded().expect("embedded catalog loads");
    let mut found = Vec::new();
    let mut check = |at: String, text: &str| {
        if let Some(w) = leak(text) {
            found.push(format!("{at}: {w:?} in {text:?}"));
        }
    };
    for e in &cat.entries {
        let id = &e.id;
        for (field, text) in [
            ("title", Some(&e.title)),
            ("symptom", Some(&e.symptom)),
            ("cause", Some(&e.cause)),
            ("fix", Some(&e.fix)),
            ("question", e.question.as_ref()),
            ("threshold", e.threshold.as_ref()),
        ] {
            if let Some(t) = text {
                check(format!("{id} {field}"), t);
            }
        }
        for l in &e.leaves {
            check(format!("{id} leaves"), &format!("{} {}", l.when, l.then));
        }
        for k in e.knobs.iter().chain(&e.errors) {
            check(format!("{id} knobs/errors"), k);
        }
        for r in &e.refs {
            check(format!("{id} refs"), &r.title);
        }
        if let Some(sig) = &e.signature {
            for t in sig.shows.iter().chain(&sig.none) {
                check(format!("{id} signature"), t);
            }
        }
    }
    for t in &cat.trees {
        check(format!("tree {}", t.id), &t.title);
        if let Some(d) = &t.description {
            check(format!("tree {} description", t.id), d);
        }
        for n in &t.nodes {
            let at = format!("{}/{}", t.id, n.id);
            for text in n.question.iter().chain(&n.note) {
                check(at.clone(), text);
            }
            for o in &n.options {
                check(at.clone(), &o.label);
            }
        }
    }
    for p in &cat.probes {
        check(format!("probe {}", p.id), &p.question);
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn ui_strings_have_no_catalog_author_wording() {
    let src = include_str!("../src/look/strings.rs");
    let found: Vec<String> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter_map(|(i, l)| leak(l).map(|w| format!("strings.rs:{}: {w:?}: {l}", i + 1)))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}
