//! The tensor pass changes how checkpoints are read, not what the probes conclude: `check` on
//! every run in ../shared/fixtures gives the same findings with the one-pass reading as with
//! each probe reading its tensors itself (the way before the pass), and a second check in the
//! same process (the TUI's re-check) is answered from the cache with the same findings.

use mltriage::catalog::Catalog;
use mltriage::triage::check::check;
use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::run::Run;
use mltriage_probes::tensors::pass;

fn fixtures() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures"))
}

/// Findings as JSON values with every number rounded to 6 significant digits (the pass sums
/// some differences in f32 lanes, the old path in f64: the last bits may differ).
fn findings(r: &mltriage::triage::check::Report) -> Vec<serde_json::Value> {
    fn round(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value as J;
        match v {
            J::Number(n) => match n.as_f64() {
                Some(x) if n.is_f64() && x != 0.0 && x.is_finite() => J::String(format!("{x:.5e}")),
                _ => J::Number(n),
            },
            J::Array(a) => J::Array(a.into_iter().map(round).collect()),
            J::Object(o) => J::Object(o.into_iter().map(|(k, v)| (k, round(v))).collect()),
            // Wall-clock times in messages ("…, 78 ms") are not findings.
            J::String(s) => J::String(
                s.split(' ')
                    .collect::<Vec<_>>()
                    .windows(2)
                    .map(|w| {
                        if w[1].starts_with("ms") && w[0].chars().all(|c| c.is_ascii_digit()) {
                            "#"
                        } else {
                            w[0]
                        }
                    })
                    .chain(s.rsplit(' ').next())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            x => x,
        }
    }
    r.findings
        .iter()
        .map(|f| round(serde_json::to_value(f).unwrap()))
        .collect()
}

#[test]
fn every_fixture_gets_the_same_findings_from_the_pass_as_from_per_probe_reads() {
    let root = fixtures();
    if !root.exists() {
        eprintln!("fixtures not beside the checkout: skipped");
        return;
    }
    let cat = Catalog::embedded().unwrap();
    let compute = Compute::cpu();
    let mut runs = 0;
    let mut with_weights = 0;
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        if !e.path().is_dir() {
            continue;
        }
        let run = Run::discover(&e.path()).unwrap();
        let facts = Facts::default();
        pass::set_direct(true);
        let before = check(&cat, &run, &facts, &compute, None);
        pass::set_direct(false);
        pass::clear_cache();
        let after = check(&cat, &run, &facts, &compute, None);
        let cached = pass::cached_counts();
        let again = check(&cat, &run, &facts, &compute, None);
        let name = e.file_name().to_string_lossy().into_owned();
        let (b, a) = (findings(&before), findings(&after));
        assert_eq!(b.len(), a.len(), "{name}: number of findings");
        for (x, y) in b.iter().zip(&a) {
            assert_eq!(x, y, "{name}: a finding changed");
        }
        assert_eq!(findings(&again), a, "{name}: the re-check differs");
        // Nothing new was read for the re-check.
        assert_eq!(
            pass::cached_counts(),
            cached,
            "{name}: the re-check read again"
        );
        runs += 1;
        with_weights += (cached.0 > 0) as usize;
    }
    assert!(
        runs >= 5 && with_weights >= 4,
        "{runs} runs, {with_weights} with weights"
    );
}
