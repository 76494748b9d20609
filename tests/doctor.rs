//! `mltriage doctor` and the build named in `check`'s header, as a user on a machine without a
//! GPU sees them (the test builds are the default, CPU-only build unless `--features cuda`).

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn mlt(config: &std::path::Path) -> Command {
    let mut c = Command::cargo_bin("mltriage").unwrap();
    c.env("NO_COLOR", "1").env("XDG_CONFIG_HOME", config);
    c
}

fn json(c: &mut Command) -> Value {
    let out = c.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn fixture(name: &str) -> String {
    format!("{}/../shared/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[cfg(not(feature = "cuda"))]
#[test]
fn doctor_on_a_cpu_only_build_says_why_there_is_no_gpu() {
    let cfg = tempfile::tempdir().unwrap();
    let out = mlt(cfg.path()).arg("doctor").assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for want in [
        "cpu-only build",
        "features  none",
        "no devices: this build has no CUDA support (rebuild with --features cuda)",
        "device    cpu — no GPU used: this build has no CUDA support",
        "playbook  embedded:",
        "keys.conf (absent: defaults in use)",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    let v = json(mlt(cfg.path()).args(["doctor", "--json"]));
    assert_eq!(v["build"]["features"], serde_json::json!([]));
    assert_eq!(v["build"]["label"], "cpu-only build");
    assert_eq!(v["cuda"]["devices"], serde_json::json!([]));
    assert!(v["cuda"]["why_none"]
        .as_str()
        .unwrap()
        .contains("--features cuda"));
    // The kernel driver line is read from /proc whatever the build: absent here means absent.
    let proc_has_driver = std::path::Path::new("/proc/driver/nvidia/version").exists();
    assert_eq!(v["cuda"]["kernel_driver"].is_string(), proc_has_driver);
    assert_eq!(v["device"]["requested"], "auto");
    assert_eq!(v["device"]["chosen"], "cpu");
    assert!(v["device"]["why"]
        .as_str()
        .unwrap()
        .contains("computing on CPU"));
    // An explicit cuda request falls back, and says so.
    let v = json(mlt(cfg.path()).args(["doctor", "--device", "cuda:1", "--json"]));
    assert_eq!(v["device"]["chosen"], "cpu");
    assert!(v["device"]["why"]
        .as_str()
        .unwrap()
        .starts_with("cuda:1 unavailable"));
}

#[test]
fn doctor_names_the_playbook_and_config_it_uses() {
    let cfg = tempfile::tempdir().unwrap();
    let v = json(mlt(cfg.path()).args(["doctor", "--device", "cpu", "--json"]));
    assert_eq!(v["device"]["chosen"], "cpu");
    assert_eq!(v["device"]["why"], "--device cpu asked for the CPU");
    assert_eq!(v["playbook"]["source"], "embedded");
    let list = json(mlt(cfg.path()).args(["list", "--json"]));
    assert_eq!(
        v["playbook"]["entries"].as_u64().unwrap() as usize,
        list["entries"].as_array().unwrap().len()
    );
    let trees = json(mlt(cfg.path()).args(["trees", "--json"]));
    assert_eq!(
        v["playbook"]["trees"].as_u64().unwrap() as usize,
        trees["trees"].as_array().unwrap().len()
    );
    let keys = cfg.path().join("mltriage").join("keys.conf");
    assert_eq!(v["config"]["keys"], keys.display().to_string());
    assert_eq!(v["config"]["keys_exists"], false);
    std::fs::create_dir_all(keys.parent().unwrap()).unwrap();
    std::fs::write(&keys, "").unwrap();
    let v = json(mlt(cfg.path()).args(["doctor", "--json"]));
    assert_eq!(v["config"]["keys_exists"], true);

    let pb = tempfile::tempdir().unwrap();
    std::fs::write(
        pb.path().join("mine.yaml"),
        "entries:\n  - {id: MY1, domain: llm, title: Zebra, symptom: s, cause: c, fix: f}\n",
    )
    .unwrap();
    let p = pb.path().to_str().unwrap();
    let with = json(mlt(cfg.path()).args(["--playbook", p, "doctor", "--json"]));
    assert_eq!(with["playbook"]["source"], format!("embedded + {p}"));
    assert_eq!(with["playbook"]["user_files"].as_array().unwrap().len(), 1);
    assert_eq!(
        with["playbook"]["entries"].as_u64().unwrap(),
        v["playbook"]["entries"].as_u64().unwrap() + 1
    );
}

#[test]
fn doctor_rejects_a_bad_device_with_exit_2() {
    let cfg = tempfile::tempdir().unwrap();
    mlt(cfg.path())
        .args(["doctor", "--device", "tpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--device \"tpu\""));
}

#[test]
fn check_header_names_the_device_and_the_build() {
    let cfg = tempfile::tempdir().unwrap();
    let build = if cfg!(feature = "cuda") {
        "cuda build"
    } else {
        "cpu-only build"
    };
    let out = mlt(cfg.path())
        .args(["check", &fixture("hf_healthy"), "--device", "cpu"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("device")).unwrap();
    assert!(line.starts_with(&format!("device cpu ({build}")), "{line}");
    let v =
        json(mlt(cfg.path()).args(["check", &fixture("hf_healthy"), "--device", "cpu", "--json"]));
    assert!(v["build"].as_str().unwrap().starts_with(build));
    assert_eq!(v["device"], "cpu");
}
