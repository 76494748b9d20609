//! Phases of a `mltriage search` start, timed (wall clock, one thread): catalog load, index
//! build, one ranked query, and the index's drop (which the CLI skips). For CPU time, run the
//! whole process under `/usr/bin/time` or `perf stat`; for where it goes, under
//! `perf record --call-graph dwarf`.
//!
//! `cargo run --release --example prof_search [QUERY]`

use std::time::Instant;

fn main() {
    let query = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "loss is nan after a few steps".to_string());
    let t = Instant::now();
    let cat = mltriage::catalog::Catalog::embedded().unwrap();
    let t1 = t.elapsed();
    let idx = mltriage::search::SearchIndex::build(&cat).unwrap();
    let t2 = t.elapsed();
    let r = idx.search_ranked(&query, 10, None).unwrap();
    let t3 = t.elapsed();
    drop(idx);
    let t4 = t.elapsed();
    eprintln!(
        "catalog {:?} build {:?} query {:?} drop {:?} top {}",
        t1,
        t2 - t1,
        t3 - t2,
        t4 - t3,
        r.hits.first().map_or("-", |h| h.id.as_str())
    );
}
