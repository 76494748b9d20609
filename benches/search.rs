//! Criterion benchmarks: catalog load, search-index build and query latency over the full
//! embedded catalog (targets: index ready ≤ 20 ms, query ≤ 2 ms), and `search_ranked` (hits
//! plus the confidence verdict, what the TUI and `search` run) on real phrasings.

use criterion::{criterion_group, criterion_main, Criterion};
use mltriage::catalog::Catalog;
use mltriage::search::SearchIndex;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    c.bench_function("catalog_load_embedded", |b| {
        b.iter(|| black_box(Catalog::embedded().unwrap()))
    });
    let cat = Catalog::embedded().unwrap();
    c.bench_function("index_build", |b| {
        b.iter(|| black_box(SearchIndex::build(&cat).unwrap()))
    });
    let idx = SearchIndex::build(&cat).unwrap();
    for q in [
        "mAP is zero",
        "loss stuck at ln vocab",
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`",
        "dpo margns wont grow",
        "gr",
        "yolov8 returns nothing after training",
        "Traning loss exploding after bacth 2000",
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=120049, OpType=ALLREDUCE",
    ] {
        c.bench_function(&format!("query/{q}"), |b| {
            b.iter(|| black_box(idx.search(black_box(q), 10, None).unwrap()))
        });
    }
    for q in [
        "ERROR: Failed building wheel for flash_attn",
        "Llama 3 Finetuned model is not generating EOS token",
    ] {
        c.bench_function(&format!("ranked/{q}"), |b| {
            b.iter(|| black_box(idx.search_ranked(black_box(q), 50, None).unwrap()))
        });
    }
    c.bench_function("quick_filter/O1", |b| {
        b.iter(|| black_box(idx.quick_filter("O1", 10)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
