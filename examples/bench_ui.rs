//! Benchmark: time to first frame (catalog load + search index + first render of the home
//! screen at 80×24, as `mltriage` does at start) and search latency p50/p99 over the labelled and real-phrasing
//! queries, typed one keystroke at a time as the TUI's search-as-you-type does.
//!
//!     cargo run --release --example bench_ui

use std::sync::Arc;
use std::time::Instant;

use mltriage::app::{App, AppOptions};
use mltriage::catalog::Catalog;
use mltriage::search::SearchIndex;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let runs = 20;
    let (mut load, mut build, mut frame, mut total) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let t0 = Instant::now();
        let cat = Catalog::embedded().expect("embedded playbook");
        let t1 = Instant::now();
        let idx = SearchIndex::build(&cat).expect("index");
        let t2 = Instant::now();
        let app = App::new(
            Arc::new(cat),
            Arc::new(idx),
            Default::default(),
            AppOptions::default(),
        );
        let mut term = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
        term.draw(|f| f.render_widget(&app, f.area()))
            .expect("draw");
        let t3 = Instant::now();
        load.push((t1 - t0).as_secs_f64() * 1e3);
        build.push((t2 - t1).as_secs_f64() * 1e3);
        frame.push((t3 - t2).as_secs_f64() * 1e3);
        total.push((t3 - t0).as_secs_f64() * 1e3);
    }
    println!("first_frame_ms p50 {:.2} p99 {:.2} (catalog load p50 {:.2}, index build p50 {:.2}, app+render p50 {:.2})", pct(&mut total, 0.5), pct(&mut total, 0.99), pct(&mut load, 0.5), pct(&mut build, 0.5), pct(&mut frame, 0.5));

    let cat = Catalog::embedded().expect("embedded playbook");
    let idx = SearchIndex::build(&cat).expect("index");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/search_queries");
    let mut queries = Vec::new();
    for f in std::fs::read_dir(dir).expect("queries dir").flatten() {
        let v: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(f.path()).unwrap_or_default())
                .unwrap_or_default();
        let labelled = v["queries"].as_sequence().cloned().unwrap_or_default();
        let real = v["phrasings"].as_sequence().cloned().unwrap_or_default();
        for q in labelled.into_iter().chain(real) {
            if let Some(s) = q["q"].as_str() {
                queries.push(s.to_string());
            }
        }
    }
    let mut lat = Vec::new();
    for q in &queries {
        let chars: Vec<char> = q.chars().collect();
        for k in 1..=chars.len() {
            let prefix: String = chars[..k].iter().collect();
            let t = Instant::now();
            // What the TUI runs per keystroke: hits plus the confidence verdict.
            let hits = idx.search_ranked(&prefix, 50, None).expect("search");
            std::hint::black_box(hits);
            lat.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let n = lat.len();
    println!("search_keystroke_ms p50 {:.3} p99 {:.3} max {:.3} over {n} keystrokes of {} labelled and real-phrasing queries", pct(&mut lat, 0.5), pct(&mut lat, 0.99), pct(&mut lat, 1.0), queries.len());
}
