//! Prints, for every query of the tuned search query sets (real_phrasings.yaml, core.yaml,
//! domains.yaml; never the held-out set), the top-5 ids with scores rounded to 3 decimals, the
//! confidence verdict and the best hit's snippet: diff two runs to check that a change to the
//! index build leaves the rankings as they were.
//!
//! `cargo run --release --example dump_rankings [PLAYBOOK_DIR [QUERIES_DIR]] > out.txt` (a
//! playbook folder and a copy of tests/search_queries pin the catalog and the queries while
//! others edit them; without them, the embedded catalog and the tree's query files).

use mltriage::catalog::{load, Catalog};
use mltriage::search::SearchIndex;

fn queries(dir: &str, file: &str, key: &str) -> Vec<String> {
    let path = format!("{dir}/{file}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    v[key]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|q| q["q"].as_str().map(str::to_string))
        .collect()
}

fn main() {
    let cat = match std::env::args().nth(1) {
        Some(dir) => Catalog::from_raw(load::from_dir(std::path::Path::new(&dir)).unwrap()),
        None => Catalog::embedded().unwrap(),
    };
    let dir = std::env::args().nth(2).unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/search_queries").to_string()
    });
    let idx = SearchIndex::build(&cat).unwrap();
    let mut all = Vec::new();
    all.extend(queries(&dir, "real_phrasings.yaml", "phrasings"));
    all.extend(queries(&dir, "core.yaml", "queries"));
    all.extend(queries(&dir, "domains.yaml", "queries"));
    // Typos, half-typed words and quoted errors (the plan's other paths).
    for q in [
        "Traning loss exploding after bacth 2000",
        "dpo margns wont grow",
        "gr",
        "yolov8 returns nothing after tr",
        "RuntimeError: Address already in use",
        "S2.1",
        "",
    ] {
        all.push(q.to_string());
    }
    for q in &all {
        let r = idx.search_ranked(q, 5, None).unwrap();
        let c = &r.confidence;
        println!(
            "{q:?}\n  confident={} reason={} coverage={:.3} matched={:.3} strong={:.3} peak={:.3} margin={:.3} outside={:?}",
            c.confident, c.reason, c.coverage, c.matched, c.strong, c.peak, c.margin, c.outside
        );
        for h in &r.hits {
            println!("  {} {:.3}", h.id, h.score);
        }
        if let Some(h) = r.hits.first() {
            println!("  snippet {:?} {:?}", h.snippet.text, h.snippet.highlights);
        }
    }
}
