//! The bad-input corpus (tests/bad_inputs/, made by scripts/make_bad_inputs.py): every file
//! gives exit 2 with one stderr line naming it, or a clean result for valid-but-odd data, and
//! the hostile pickle runs nothing. Also: a run folder full of such files still `check`s.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn corpus() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/bad_inputs"))
}

fn mlt() -> Command {
    let mut c = Command::cargo_bin("mltriage").unwrap();
    c.env("NO_COLOR", "1");
    c
}

const PWNED: &str = "/tmp/mltriage_pwned_by_pickle";

#[test]
fn every_corpus_file_gives_its_expected_exit_and_a_one_line_error() {
    let _ = std::fs::remove_file(PWNED);
    let table = std::fs::read_to_string(corpus().join("expect.tsv")).unwrap();
    let mut n = 0;
    for line in table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, code) = (cols[0], cols[1].parse::<i32>().unwrap());
        let path = corpus().join(file);
        for json in [false, true] {
            let mut cmd = mlt();
            cmd.arg("inspect").arg(&path);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(code), "{file}: stderr {err}");
            assert!(!err.contains("panicked"), "{file}: {err}");
            if code == 2 {
                assert_eq!(err.trim_end().lines().count(), 1, "{file}: {err}");
                let name = Path::new(file).file_name().unwrap().to_string_lossy();
                assert!(
                    err.contains(&*name),
                    "{file}: error does not name the file: {err}"
                );
            } else if json {
                serde_json::from_slice::<serde_json::Value>(&out.stdout)
                    .unwrap_or_else(|e| panic!("{file}: {e}"));
            }
        }
        n += 1;
    }
    assert!(n >= 30, "the corpus should hold at least 30 files, has {n}");
    assert!(!Path::new(PWNED).exists(), "the hostile pickle ran code");
}

#[test]
fn hostile_pickle_is_an_opaque_object() {
    let _ = std::fs::remove_file(PWNED);
    let out = mlt()
        .args(["inspect", "--json"])
        .arg(corpus().join("hostile_pickle.pt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = mlt()
        .arg("inspect")
        .arg(corpus().join("hostile_legacy.pt"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!Path::new(PWNED).exists(), "the hostile pickle ran code");
}

#[test]
fn non_utf8_names_and_empty_dirs_are_handled() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"m\xffodel.safetensors");
    std::fs::write(dir.path().join(name), b"\x01\x02").unwrap();
    let out = mlt()
        .arg("inspect")
        .arg(dir.path().join(name))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr)
            .trim_end()
            .lines()
            .count(),
        1
    );
    // The folder holding it is a run: check completes, names the unreadable file, exit 0.
    let out = mlt().arg("check").arg(dir.path()).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let empty = tempfile::tempdir().unwrap();
    mlt().arg("inspect").arg(empty.path()).assert().success();
    mlt()
        .arg("check")
        .arg(empty.path())
        .assert()
        .success()
        .stdout(predicates::str::contains("nothing to read"));
}

#[test]
fn a_run_made_of_bad_files_checks_with_skips_and_names_them() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "garbage.pt",
        "truncated_data.safetensors",
        "events.out.tfevents.1.badcrc",
        "ragged/metrics.csv",
        "bad_config/config.json",
        "hostile_pickle.pt",
    ] {
        let to = dir.path().join(f.replace('/', "_"));
        std::fs::copy(corpus().join(f), to).unwrap();
    }
    let out = mlt()
        .arg("check")
        .arg(dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = v["problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.as_str().unwrap().contains("badcrc")),
        "{problems:?}"
    );
    for bad in ["garbage.pt", "truncated_data.safetensors"] {
        assert!(
            problems.iter().any(|p| p.as_str().unwrap().contains(bad)),
            "{bad} not named in {problems:?}"
        );
    }
    assert!(!Path::new(PWNED).exists());
}
