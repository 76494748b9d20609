//! `check` over every real run in ../shared/fixtures against answers.json: each bugged run's
//! accepted id is among the fail/warn findings (and first, for most); healthy runs have no fail.

use mltriage::catalog::Catalog;
use mltriage::triage::check::check;
use mltriage_probes::device::Compute;
use mltriage_probes::facts::Facts;
use mltriage_probes::probe::Status;
use mltriage_probes::run::Run;

fn fixtures() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures"))
}

#[test]
fn every_fixture_gets_the_expected_findings() {
    let answers: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("answers.json")).unwrap())
            .unwrap();
    let cat = Catalog::embedded().unwrap();
    let compute = Compute::cpu();
    let (mut bugged, mut first) = (0, 0);
    let mut report = String::new();
    for (name, a) in answers.as_object().unwrap() {
        let run = Run::discover(&fixtures().join(name)).unwrap();
        let args: Vec<String> = a["facts"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
            .collect();
        let facts = Facts::from_args(&args).unwrap();
        let r = check(&cat, &run, &facts, &compute, None);
        let bad: Vec<(&str, Status)> = r
            .findings
            .iter()
            .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
            .map(|f| (f.id.as_str(), f.status))
            .collect();
        report.push_str(&format!("{name}: {bad:?}\n"));
        let accept: Vec<&str> = a["accept"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        if accept.is_empty() {
            assert!(
                r.findings.iter().all(|f| f.status != Status::Fail),
                "healthy {name} has a fail: {bad:?}"
            );
        } else {
            bugged += 1;
            assert!(
                bad.iter().any(|(id, _)| accept.contains(id)),
                "{name}: none of {accept:?} among fail/warn {bad:?}"
            );
            if bad.first().is_some_and(|(id, _)| accept.contains(id)) {
                first += 1;
            }
        }
    }
    println!("{report}accepted id first in {first}/{bugged} bugged runs");
    assert!(
        first * 3 >= bugged * 2,
        "the accepted id should come first for most bugged runs ({first}/{bugged})\n{report}"
    );
}
