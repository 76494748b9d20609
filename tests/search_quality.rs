//! Search quality on labelled queries (tests/search_queries/*.yaml): phrased the way users
//! describe a symptom or paste an error. Asserts top-1 >= 85% and top-3 >= 95%, printing misses.

use mltriage::catalog::Catalog;
use mltriage::search::SearchIndex;

#[derive(serde::Deserialize)]
struct Queries {
    queries: Vec<Query>,
}

#[derive(serde::Deserialize)]
struct Query {
    q: String,
    accept: Vec<String>,
}

fn load_queries() -> Vec<Query> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/search_queries");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
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
        "search quality over {} queries: top-1 {:.1}%, top-3 {:.1}%",
        queries.len(),
        100.0 * p1,
        100.0 * p3
    );
    for m in &misses {
        println!("  miss: {m}");
    }
    assert!(p1 >= 0.85, "top-1 {:.1}% < 85%", 100.0 * p1);
    assert!(p3 >= 0.95, "top-3 {:.1}% < 95%", 100.0 * p3);
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
    ] {
        let hits = idx.search(q, 5, None).unwrap();
        assert!(hits.len() <= 5);
    }
    assert!(idx.search("", 5, None).unwrap().is_empty());
    assert!(idx.search("!!!", 5, None).unwrap().is_empty());
    assert_eq!(idx.search("O9", 1, None).unwrap()[0].id, "O9");
}
