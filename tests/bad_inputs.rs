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

#[test]
fn a_truncated_keras_archive_is_unreadable_not_merely_hdf5() {
    let dir = tempfile::tempdir().unwrap();
    let field = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/field/keras_sensors_healthy");
    std::fs::copy(field.join("training.log"), dir.path().join("training.log")).unwrap();
    let whole = std::fs::read(field.join("best.keras")).unwrap();
    std::fs::write(dir.path().join("best.keras"), &whole[..whole.len() / 2]).unwrap();
    let out = mlt()
        .arg("check")
        .arg(dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = v["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| {
            let p = p.as_str().unwrap();
            p.contains("best.keras") && p.contains("zip") && !p.contains('\n')
        }),
        "{problems:?}"
    );
    let out = mlt().arg("inspect").arg(dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("best.keras")).unwrap();
    assert!(line.contains("unreadable"), "{line}");
    assert!(!line.contains("HDF5"), "{line}");
}

#[test]
fn a_broken_dcp_checkpoint_is_named_by_check_and_refused_by_inspect() {
    // A torch.distributed.checkpoint folder whose .metadata is not a pickle.
    let dir = tempfile::tempdir().unwrap();
    let ck = dir.path().join("step_100");
    std::fs::create_dir_all(&ck).unwrap();
    std::fs::write(ck.join(".metadata"), b"not a pickle").unwrap();
    std::fs::write(ck.join("__0_0.distcp"), b"PK").unwrap();
    let out = mlt()
        .arg("inspect")
        .arg(ck.join(".metadata"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(".metadata"), "{err}");
    let out = mlt()
        .arg("check")
        .arg(dir.path())
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = v["problems"].as_array().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.as_str().unwrap().contains(".metadata")),
        "{problems:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Hostile and unlucky inputs (issue 15): every case runs the real binary under a wall-clock
// limit with its peak RSS measured (tests/bounded); none may panic, abort, hang or pass 1 GB.
// Large hostile files are generated here, at test time, in a temporary folder.

mod bounded;

use std::time::Duration;

struct Case {
    name: String,
    cmd: std::process::Command,
    /// Acceptable exit codes.
    codes: &'static [i32],
    /// Text stderr (or, for exit 0, stdout) must contain.
    needle: Option<&'static str>,
}

fn case(
    name: &str,
    args: &[&std::ffi::OsStr],
    codes: &'static [i32],
    needle: Option<&'static str>,
    home: &Path,
) -> Case {
    let mut cmd = bounded::mlt();
    cmd.args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("MLTRIAGE_READ_CAP_MB");
    Case {
        name: name.to_string(),
        cmd,
        codes,
        needle,
    }
}

/// Runs the cases; returns one line per failure.
fn run_cases(cases: Vec<Case>) -> Vec<String> {
    let mut bad = Vec::new();
    for mut c in cases {
        let o = bounded::run(&mut c.cmd, Duration::from_secs(30));
        let out = String::from_utf8_lossy(&o.stdout);
        let mut why = Vec::new();
        if o.timed_out {
            why.push("timed out (hang)".to_string());
        }
        if let Some(s) = o.signal {
            why.push(format!("killed by signal {s}"));
        }
        if o.rss_kb > bounded::MAX_RSS_KB {
            why.push(format!("peak RSS {} MB", o.rss_kb / 1024));
        }
        if o.stderr.contains("panicked") {
            why.push("panicked".into());
        }
        match o.code {
            Some(code) if c.codes.contains(&code) => {
                if code == 2 && o.stderr.trim_end().lines().count() != 1 {
                    why.push(format!("error is not one line: {:?}", o.stderr));
                }
                if let Some(n) = c.needle {
                    let hay = if code == 0 {
                        out.as_ref()
                    } else {
                        o.stderr.as_str()
                    };
                    if !hay.contains(n) && !o.stderr.contains(n) {
                        why.push(format!(
                            "output lacks {n:?}: {:?}",
                            o.stderr.chars().take(300).collect::<String>()
                        ));
                    }
                }
            }
            Some(code) => why.push(format!(
                "exit {code}, expected {:?}; stderr {:?}",
                c.codes,
                o.stderr.chars().take(300).collect::<String>()
            )),
            None => {}
        }
        if !why.is_empty() {
            bad.push(format!("{}: {}", c.name, why.join("; ")));
        }
    }
    bad
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// Pickle opcodes: BINUNICODE of `b`.
fn uni(b: &[u8]) -> Vec<u8> {
    let mut p = b"X".to_vec();
    p.extend_from_slice(&(b.len() as u32).to_le_bytes());
    p.extend_from_slice(b);
    p
}

/// Protocol 2: `prefix` memoised as 0, then a list of `n` references to it.
fn refs(prefix: &[u8], n: usize) -> Vec<u8> {
    let mut p = b"\x80\x02".to_vec();
    p.extend_from_slice(prefix);
    p.extend_from_slice(b"q\x000](");
    for _ in 0..n {
        p.extend_from_slice(b"h\x00");
    }
    p.extend_from_slice(b"e.");
    p
}

/// (name, data.pkl, acceptable exit codes, text the error must contain).
type PickleCase = (String, Vec<u8>, &'static [i32], Option<&'static str>);

fn pickle_cases(d: &Path) -> Vec<PickleCase> {
    let mut v: Vec<PickleCase> = Vec::new();
    let rft = b"ctorch._tensor\n_rebuild_from_type_v2\n".to_vec();
    // 1. A list that contains itself handed to _rebuild_from_type_v2.
    let mut p = b"\x80\x02".to_vec();
    p.extend_from_slice(&rft);
    p.extend_from_slice(b"q\x00]q\x01(h\x00Nh\x01eR.");
    v.push((
        "self_wrapping_rebuild".into(),
        p,
        &[2],
        Some("nested deeper"),
    ));
    // 2. 200k nested _rebuild_from_type_v2 argument tuples: g(g, None, (g, None, (…))).
    let mut q = b"\x80\x02".to_vec();
    q.extend_from_slice(&rft);
    q.extend_from_slice(b"q\x00h\x00");
    for _ in 0..200_000 {
        q.extend_from_slice(b"h\x00N");
    }
    q.push(b')');
    q.extend(std::iter::repeat_n(0x87u8, 200_000));
    q.extend_from_slice(b"R.");
    v.push(("nested_rebuild_200k".into(), q, &[2], None));
    // 3. LONG4 4 KB integers in a list referenced 100k times.
    let mut l = b"](".to_vec();
    for _ in 0..100 {
        l.push(0x8b);
        l.extend_from_slice(&4096u32.to_le_bytes());
        l.extend(std::iter::repeat_n(7u8, 4096));
    }
    l.push(b'e');
    v.push((
        "long4_list_refs".into(),
        refs(&l, 100_000),
        &[2],
        Some("MiB"),
    ));
    // 4. A global with a 1 MB name referenced 100k times.
    let mut g = b"cmod\n".to_vec();
    g.extend(std::iter::repeat_n(b'n', 1 << 20));
    g.push(b'\n');
    v.push((
        "global_1mb_name_refs".into(),
        refs(&g, 100_000),
        &[2],
        Some("longer than"),
    ));
    // 5. STACK_GLOBAL of a 4 MB string, 20k times.
    let mut s = uni(&vec![b'm'; 4 << 20]);
    s.extend_from_slice(b"q\x00\x8c\x01n\x93");
    let mut p = b"\x80\x04".to_vec();
    p.extend_from_slice(&s);
    for _ in 0..20_000 {
        p.extend_from_slice(b"h\x00\x8c\x01n\x93");
    }
    p.push(b'.');
    v.push(("stack_global_4mb_20k".into(), p, &[2], Some("longer than")));
    // 6. _codecs.encode of 8 MB, 5000 times.
    let mut p = b"\x80\x02".to_vec();
    p.extend_from_slice(&uni(&vec![b'e'; 8 << 20]));
    p.extend_from_slice(b"q\x00c_codecs\nencode\nq\x010](");
    for _ in 0..5000 {
        p.extend_from_slice(b"h\x01h\x00Vlatin1\n\x86R");
    }
    p.extend_from_slice(b"e.");
    v.push(("codecs_encode_8mb_5000".into(), p, &[2], Some("MiB")));
    // 7. A tensor with a 1 MB storage key referenced 100k times.
    let mut t = b"ctorch._utils\n_rebuild_tensor_v2\n((Vstorage\nctorch\nFloatStorage\n".to_vec();
    t.extend_from_slice(&uni(&vec![b'k'; 1 << 20]));
    t.extend_from_slice(b"Vcpu\nK\x04tQK\x00K\x04\x85K\x01\x85\x89tR");
    v.push((
        "tensor_1mb_key_refs".into(),
        refs(&t, 100_000),
        &[2],
        Some("MiB"),
    ));
    // 8. Billion laughs: 60 levels of [prev, prev].
    let mut p = b"\x80\x02]q\x00(K\x01K\x01e".to_vec();
    for i in 1..60u32 {
        p.extend_from_slice(b"]r");
        p.extend_from_slice(&i.to_le_bytes());
        p.extend_from_slice(b"(j");
        p.extend_from_slice(&(i - 1).to_le_bytes());
        p.push(b'j');
        p.extend_from_slice(&(i - 1).to_le_bytes());
        p.push(b'e');
    }
    p.push(b'.');
    v.push(("billion_laughs_lists".into(), p, &[2], None));
    // 9. A million nested empty lists.
    let mut p = b"\x80\x02".to_vec();
    for _ in 0..1_000_000 {
        p.extend_from_slice(b"](");
    }
    p.extend(std::iter::repeat_n(b'a', 1_000_000));
    p.push(b'.');
    v.push(("nested_lists_1m".into(), p, &[2], None));
    // 10. A dict whose 1000 values all reference one 10k-item list, referenced 1000 times.
    let mut l = b"](".to_vec();
    for _ in 0..10_000 {
        l.extend_from_slice(b"K\x01");
    }
    l.extend_from_slice(b"eq\x01}(");
    for i in 0..1000u32 {
        l.push(b'J');
        l.extend_from_slice(&i.to_le_bytes());
        l.extend_from_slice(b"h\x01");
    }
    l.push(b'u');
    v.push(("dict_bomb".into(), refs(&l, 1000), &[2], None));
    // 11. 1000 REDUCE calls of an unknown global with a shared 100k-item argument tuple.
    let mut p = b"\x80\x02cevil\nf\nq\x00(".to_vec();
    for _ in 0..100_000 {
        p.extend_from_slice(b"K\x01");
    }
    p.extend_from_slice(b"tq\x010](");
    for _ in 0..1000 {
        p.extend_from_slice(b"h\x00h\x01R");
    }
    p.extend_from_slice(b"e.");
    v.push(("shared_args_reduce".into(), p, &[2], None));
    // 12–20: malformed streams.
    let mut marks = b"\x80\x02".to_vec();
    marks.extend(std::iter::repeat_n(b'(', 1_000_000));
    marks.push(b'.');
    v.push(("mark_flood".into(), marks, &[2], None));
    v.push((
        "memo_missing".into(),
        b"\x80\x02h\x07.".to_vec(),
        &[2],
        None,
    ));
    let mut fr = b"\x80\x04\x95".to_vec();
    fr.extend_from_slice(&u64::MAX.to_le_bytes());
    fr.push(b'.');
    v.push(("frame_2p64".into(), fr, &[2], None));
    let mut bb = b"\x80\x04\x8e".to_vec();
    bb.extend_from_slice(&(1u64 << 62).to_le_bytes());
    v.push(("binbytes8_2p62".into(), bb, &[2], None));
    v.push(("protocol_6".into(), b"\x80\x06N.".to_vec(), &[2], None));
    v.push((
        "os_system_reduce".into(),
        b"\x80\x02cposix\nsystem\nVtouch /tmp/mltriage_pwned_by_pickle\n\x85R.".to_vec(),
        &[0, 2],
        None,
    ));
    v.push((
        "inst_eval".into(),
        b"(Vtouch /tmp/mltriage_pwned_by_pickle\nibuiltins\neval\n.".to_vec(),
        &[0, 2],
        None,
    ));
    v.push(("persid_huge_numel".into(), b"\x80\x02}(Vw\nctorch._utils\n_rebuild_tensor_v2\n((Vstorage\nctorch\nFloatStorage\nV0\nVcpu\n\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40tQK\x00K\x04\x85K\x01\x85\x89tRu.".to_vec(), &[0, 2], None));
    v.push((
        "negative_long1".into(),
        b"\x80\x02\x8a\x01\xff.".to_vec(),
        &[0, 2],
        None,
    ));
    let _ = d;
    v
}

fn run_pickles(d: &Path) -> Vec<Case> {
    pickle_cases(d)
        .into_iter()
        .map(|(name, pkl, codes, needle)| {
            let p = d.join(format!("{name}.pt"));
            bounded::torch_pt(&p, &pkl);
            case(
                &format!("pickle/{name}"),
                &[os("inspect"), p.as_os_str()],
                codes,
                needle,
                d,
            )
        })
        .collect()
}

fn assert_none(bad: Vec<String>) {
    assert!(
        bad.is_empty(),
        "{} case(s) failed:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(!Path::new(PWNED).exists(), "a pickle ran code");
}

#[test]
fn item01_06_pickle_recursion_and_memo_amplification_are_budgeted() {
    let d = tempfile::tempdir().unwrap();
    let cases = run_pickles(d.path());
    assert!(cases.len() >= 20);
    // The same files as part of a run: `check` must survive them too.
    let mut all = cases;
    let run = d.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    for f in [
        "self_wrapping_rebuild",
        "billion_laughs_lists",
        "os_system_reduce",
        "memo_missing",
    ] {
        std::fs::copy(
            d.path().join(format!("{f}.pt")),
            run.join(format!("{f}.pt")),
        )
        .unwrap();
    }
    let mut c = case(
        "pickle/check_run",
        &[os("check"), run.as_os_str()],
        &[0],
        None,
        d.path(),
    );
    c.cmd.arg("--device").arg("cpu");
    all.push(c);
    assert_none(run_cases(all));
}

fn sym(to: &str, at: &Path) {
    std::os::unix::fs::symlink(to, at).unwrap();
}

fn write(p: &Path, b: impl AsRef<[u8]>) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(p, b).unwrap();
}

/// Text readers: line caps, document caps, endless and non-regular files.
fn text_cases(d: &Path) -> Vec<Case> {
    let mut v = Vec::new();
    let mut one = |name: &str,
                   file: &str,
                   make: &dyn Fn(&Path),
                   codes: &'static [i32],
                   needle: Option<&'static str>| {
        let dir = d.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(file);
        make(&p);
        v.push(case(
            &format!("text/{name}"),
            &[os("inspect"), p.as_os_str()],
            codes,
            needle,
            d,
        ));
    };
    // A 16 MB single JSON-lines line `[0,0,…]` (the 500 MB one, smaller: the cap is 1 MiB).
    one(
        "jsonl_huge_line",
        "metrics.jsonl",
        &|p| {
            let mut b = b"[".to_vec();
            b.extend(std::iter::repeat_n(*b"0,", 8 << 20).flatten());
            b.extend_from_slice(b"0]\n{\"step\":1,\"loss\":1}\n");
            write(p, b)
        },
        &[2],
        Some("line cap"),
    );
    one(
        "jsonl_deep_line",
        "metrics.jsonl",
        &|p| write(p, format!("{}\n", "[".repeat(500_000))),
        &[2],
        None,
    );
    one(
        "jsonl_binary",
        "metrics.jsonl",
        &|p| write(p, [0xffu8; 4096]),
        &[0, 2],
        None,
    );
    one(
        "jsonl_nan_flood",
        "metrics.jsonl",
        &|p| write(p, "{\"step\":1,\"loss\":NaN}\n".repeat(100_000)),
        &[0],
        None,
    );
    one(
        "jsonl_fifo",
        "metrics.jsonl",
        &|p| bounded::mkfifo(p),
        &[2],
        Some("FIFO"),
    );
    one(
        "jsonl_dev_zero",
        "metrics.jsonl",
        &|p| sym("/dev/zero", p),
        &[2],
        Some("character device"),
    );
    one(
        "trainer_state_sparse_146mb",
        "trainer_state.json",
        &|p| {
            let f = std::fs::File::create(p).unwrap();
            f.set_len(146 << 20).unwrap();
        },
        &[2],
        Some("read cap"),
    );
    one(
        "trainer_state_dev_zero",
        "trainer_state.json",
        &|p| sym("/dev/zero", p),
        &[2],
        Some("character device"),
    );
    one(
        "trainer_state_fifo",
        "trainer_state.json",
        &|p| bounded::mkfifo(p),
        &[2],
        Some("FIFO"),
    );
    one(
        "trainer_state_dir",
        "trainer_state.json",
        &|p| std::fs::create_dir_all(p).unwrap(),
        &[0, 2],
        None,
    );
    one(
        "trainer_state_50k",
        "trainer_state.json",
        &|p| {
            let rows: Vec<String> = (1..=50_000)
                .map(|i| format!("{{\"step\":{i},\"loss\":{}}}", 1.0 / i as f64))
                .collect();
            write(
                p,
                format!(
                    "{{\"global_step\":50000,\"log_history\":[{}]}}",
                    rows.join(",")
                ),
            )
        },
        &[0],
        None,
    );
    one(
        "csv_huge_field",
        "metrics.csv",
        &|p| {
            let mut b = b"step,loss\n1,".to_vec();
            b.extend(std::iter::repeat_n(b'9', 4 << 20));
            b.push(b'\n');
            write(p, b)
        },
        &[2],
        Some("line cap"),
    );
    one(
        "csv_fifo",
        "metrics.csv",
        &|p| bounded::mkfifo(p),
        &[2],
        Some("FIFO"),
    );
    one(
        "csv_5000_columns",
        "metrics.csv",
        &|p| {
            let h: Vec<String> = (0..5000).map(|i| format!("c{i}")).collect();
            let r: Vec<String> = (0..5000).map(|i| i.to_string()).collect();
            write(
                p,
                format!(
                    "step,{}\n1,{}\n2,{}\n",
                    h.join(","),
                    r.join(","),
                    r.join(",")
                ),
            )
        },
        &[0, 2],
        None,
    );
    one(
        "config_dev_zero",
        "config.json",
        &|p| sym("/dev/zero", p),
        &[2],
        Some("character device"),
    );
    one(
        "config_fifo",
        "config.json",
        &|p| bounded::mkfifo(p),
        &[2],
        Some("FIFO"),
    );
    one(
        "config_sparse",
        "config.json",
        &|p| std::fs::File::create(p).unwrap().set_len(64 << 20).unwrap(),
        &[2],
        Some("read cap"),
    );
    one(
        "tfevents_fifo",
        "events.out.tfevents.1.host",
        &|p| bounded::mkfifo(p),
        &[2],
        Some("FIFO"),
    );
    one(
        "tfevents_dev_zero",
        "events.out.tfevents.1.host",
        &|p| sym("/dev/zero", p),
        &[2],
        Some("character device"),
    );
    one(
        "tfevents_sparse",
        "events.out.tfevents.1.host",
        &|p| std::fs::File::create(p).unwrap().set_len(64 << 20).unwrap(),
        &[0, 2],
        None,
    );
    one(
        "safetensors_fifo",
        "model.safetensors",
        &|p| bounded::mkfifo(p),
        &[2],
        Some("FIFO"),
    );
    one(
        "pt_dev_zero",
        "model.pt",
        &|p| sym("/dev/zero", p),
        &[2],
        Some("character device"),
    );
    // The cap is configurable.
    let p = d.join("capped").join("trainer_state.json");
    write(
        &p,
        format!(
            "{{\"log_history\":[{}]}}",
            "{\"step\":1,\"loss\":1},".repeat(100_000) + "{}"
        ),
    );
    let mut c = case(
        "text/read_cap_env",
        &[os("inspect"), p.as_os_str()],
        &[2],
        Some("MLTRIAGE_READ_CAP_MB"),
        d,
    );
    c.cmd.env("MLTRIAGE_READ_CAP_MB", "1");
    v.push(c);
    // A run made of them: `check` completes (naming them), never hangs or balloons.
    let mut c = case(
        "text/check_run_of_endless_files",
        &[
            os("check"),
            d.join("trainer_state_dev_zero").as_os_str(),
            os("--device"),
            os("cpu"),
        ],
        &[0],
        None,
        d,
    );
    c.cmd.env("X", "1");
    v.push(c);
    v.push(case(
        "text/check_fifo_run",
        &[
            os("check"),
            d.join("jsonl_fifo").as_os_str(),
            os("--device"),
            os("cpu"),
        ],
        &[0],
        None,
        d,
    ));
    v
}

#[test]
fn item07_08_10_text_readers_have_caps_and_refuse_endless_or_blocking_files() {
    let d = tempfile::tempdir().unwrap();
    let cases = text_cases(d.path());
    // FIFOs given as the path itself, for every command that takes one.
    let fifo = d.path().join("pipe");
    bounded::mkfifo(&fifo);
    let home = d.path();
    let mut more = vec![
        case(
            "fifo/check",
            &[os("check"), fifo.as_os_str()],
            &[2],
            Some("FIFO"),
            home,
        ),
        case(
            "fifo/inspect",
            &[os("inspect"), fifo.as_os_str()],
            &[2],
            None,
            home,
        ),
        case(
            "fifo/walk",
            &[os("walk"), os("convergence"), fifo.as_os_str()],
            &[2],
            None,
            home,
        ),
        case(
            "fifo/probe",
            &[os("probe"), os("init_loss"), fifo.as_os_str()],
            &[2],
            Some("FIFO"),
            home,
        ),
        case(
            "fifo/baseline",
            &[
                os("check"),
                d.path().join("trainer_state_50k").as_os_str(),
                os("--baseline"),
                fifo.as_os_str(),
                os("--device"),
                os("cpu"),
            ],
            &[2],
            Some("FIFO"),
            home,
        ),
        case(
            "devzero/check",
            &[os("check"), os("/dev/zero")],
            &[2],
            Some("character device"),
            home,
        ),
    ];
    more.extend(cases);
    assert!(more.len() >= 25);
    assert_none(run_cases(more));
}

/// Safetensors headers and sharded indexes.
fn tensor_cases(d: &Path) -> Vec<Case> {
    let mut v = Vec::new();
    // A header listing 600k tensors.
    let p = d.join("many.safetensors");
    let mut h = String::from("{");
    for i in 0..600_000 {
        h.push_str(&format!(
            "\"t{i}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}},"
        ));
    }
    h.pop();
    h.push('}');
    let mut b = (h.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(h.as_bytes());
    write(&p, b);
    v.push(case(
        "tensors/header_600k_tensors",
        &[os("inspect"), p.as_os_str()],
        &[2],
        Some("tensors in one header"),
        d,
    ));
    let mut idx = |name: &str, shard: &str, prep: &dyn Fn(&Path), needle: Option<&'static str>| {
        let dir = d.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("model.safetensors.index.json");
        write(&p, format!("{{\"weight_map\":{{\"w\":{shard:?}}}}}"));
        prep(&dir);
        v.push(case(
            &format!("index/{name}"),
            &[os("inspect"), p.as_os_str()],
            &[2],
            needle,
            d,
        ));
        let mut c = case(
            &format!("index/{name}/check"),
            &[os("check"), dir.as_os_str(), os("--device"), os("cpu")],
            &[0],
            None,
            d,
        );
        c.cmd.env("X", "1");
        v.push(c);
    };
    idx(
        "missing_shard",
        "model-00001-of-00002.safetensors",
        &|_| {},
        None,
    );
    idx(
        "passwd",
        "../../etc/passwd",
        &|_| {},
        Some("plain file name"),
    );
    idx("shadow", "/etc/shadow", &|_| {}, Some("plain file name"));
    idx("dev_zero", "/dev/zero", &|_| {}, Some("plain file name"));
    idx("dot", ".", &|_| {}, None);
    idx("itself", "model.safetensors.index.json", &|_| {}, None);
    idx(
        "fifo_shard",
        "shard.safetensors",
        &|dir| bounded::mkfifo(&dir.join("shard.safetensors")),
        Some("FIFO"),
    );
    idx(
        "devzero_link_shard",
        "shard.safetensors",
        &|dir| sym("/dev/zero", &dir.join("shard.safetensors")),
        Some("character device"),
    );
    idx(
        "dir_shard",
        "shard.safetensors",
        &|dir| std::fs::create_dir_all(dir.join("shard.safetensors")).unwrap(),
        Some("directory"),
    );
    let p = d.join("huge_index").join("model.safetensors.index.json");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::File::create(&p)
        .unwrap()
        .set_len(200 << 20)
        .unwrap();
    v.push(case(
        "index/sparse_200mb",
        &[os("inspect"), p.as_os_str()],
        &[2],
        Some("read cap"),
        d,
    ));
    v
}

#[test]
fn item07_15_safetensors_headers_and_bad_sharded_indexes_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let cases = tensor_cases(d.path());
    assert!(cases.len() >= 20);
    assert_none(run_cases(cases));
}

/// Playbook overlays: the YAML budget, walks of the playbook folder, validation on load.
fn yaml_cases(d: &Path) -> Vec<Case> {
    let mut v = Vec::new();
    let entry = "entries:\n  - {id: U1, domain: llm, title: t, symptom: s, cause: c, fix: f, signature: {none: n}}\n";
    let mut pb =
        |name: &str, make: &dyn Fn(&Path), codes: &'static [i32], needle: Option<&'static str>| {
            let dir = d.join("pb").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            make(&dir);
            v.push(case(
                &format!("yaml/{name}/search"),
                &[os("--playbook"), dir.as_os_str(), os("search"), os("loss")],
                codes,
                needle,
                d,
            ));
            v.push(case(
                &format!("yaml/{name}/lint"),
                &[os("lint"), dir.as_os_str()],
                codes,
                needle,
                d,
            ));
        };
    pb(
        "alias_bomb",
        &|dir| {
            let mut y = String::from(
                "entries: []\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
            );
            for i in 1..12 {
                let p = i - 1;
                y.push_str(&format!(
                    "x{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
                ));
            }
            write(&dir.join("bomb.yaml"), y)
        },
        &[2],
        Some("alias"),
    );
    pb(
        "deep_flow",
        &|dir| {
            write(
                &dir.join("deep.yaml"),
                format!("entries: {}{}\n", "[".repeat(200_000), "]".repeat(200_000)),
            )
        },
        &[2],
        Some("nested"),
    );
    pb(
        "deep_block",
        &|dir| {
            let y: String = (0..1000)
                .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                .collect();
            write(&dir.join("deep.yaml"), y)
        },
        &[2],
        Some("nested"),
    );
    pb(
        "too_big",
        &|dir| {
            write(
                &dir.join("big.yaml"),
                format!("entries: []\n#{}\n", "x".repeat(2 << 20)),
            )
        },
        &[2],
        Some("budget"),
    );
    pb(
        "fifo_yaml",
        &|dir| bounded::mkfifo(&dir.join("p.yaml")),
        &[2],
        Some("FIFO"),
    );
    pb(
        "dev_zero_yaml",
        &|dir| sym("/dev/zero", &dir.join("z.yaml")),
        &[2],
        Some("character device"),
    );
    pb(
        "symlink_loops",
        &|dir| {
            write(&dir.join("e.yaml"), entry);
            for i in 0..7 {
                sym(".", &dir.join(format!("l{i}")));
            }
        },
        &[0],
        None,
    );
    pb(
        "symlink_to_root",
        &|dir| {
            write(&dir.join("e.yaml"), entry);
            sym("/", &dir.join("root"));
        },
        &[0],
        None,
    );
    pb(
        "cyclic_tree",
        &|dir| {
            write(&dir.join("e.yaml"), entry);
            write(&dir.join("t.yaml"), "tree:\n  id: loop\n  title: a cycle\n  root: a\n  nodes:\n    - {id: a, kind: choice, question: q, options: [{label: x, next: b}]}\n    - {id: b, kind: choice, question: q, options: [{label: back, next: a}, {label: end, next: l}]}\n    - {id: l, kind: leaf, entry: U1}\n");
        },
        &[2],
        Some("cycle"),
    );
    pb(
        "steps_1e15",
        &|dir| {
            write(&dir.join("p.yaml"), "probes:\n  - id: overfit_smoke\n    question: q\n    entries: [O1]\n    thresholds: {steps: 1.0e15, target_frac: 0.1, lr: 0.5}\n")
        },
        &[2],
        Some("steps"),
    );
    pb(
        "threshold_nan",
        &|dir| {
            write(&dir.join("p.yaml"), "probes:\n  - id: overfit_smoke\n    question: q\n    entries: [O1]\n    thresholds: {steps: 300, target_frac: .nan, lr: 0.5}\n")
        },
        &[2],
        Some("finite"),
    );
    pb(
        "refers_to_builtins",
        &|dir| {
            write(&dir.join("e.yaml"), "entries:\n  - {id: U2, domain: llm, title: t, symptom: s, cause: c, fix: f, see_also: [O1, L1], probes: [init_loss], signature: {none: n}}\n")
        },
        &[0],
        None,
    );
    pb(
        "dangling_reference",
        &|dir| {
            write(&dir.join("e.yaml"), "entries:\n  - {id: U3, domain: llm, title: t, symptom: s, cause: c, fix: f, see_also: [NOPE9], signature: {none: n}}\n")
        },
        &[2],
        Some("NOPE9"),
    );
    pb(
        "many_entries_walk",
        &|dir| {
            for i in 0..10_050 {
                std::fs::File::create(dir.join(format!("f{i}.txt"))).unwrap();
            }
        },
        &[2],
        Some("walk budget"),
    );
    // walk on a cyclic tree ends (exit 2) instead of printing 10,000 steps.
    let dir = d.join("pb").join("cyclic_tree");
    v.push(case(
        "yaml/cyclic_tree/walk",
        &[
            os("--playbook"),
            dir.as_os_str(),
            os("walk"),
            os("loop"),
            os("--answer"),
            os("a=x"),
            os("--answer"),
            os("b=back"),
        ],
        &[2],
        Some("cycle"),
        d,
    ));
    v
}

#[test]
fn item09_11_12_17_yaml_budget_walks_and_validation_agree_between_lint_and_load() {
    let d = tempfile::tempdir().unwrap();
    let cases = yaml_cases(d.path());
    assert!(cases.len() >= 25);
    assert_none(run_cases(cases));
}

#[test]
fn item11_run_walk_does_not_follow_symlinked_folders_out_of_the_run() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    write(
        &run.join("metrics.jsonl"),
        "{\"step\":1,\"loss\":2.0}\n{\"step\":2,\"loss\":1.0}\n",
    );
    sym("/", &run.join("root"));
    for i in 0..7 {
        sym(".", &run.join(format!("l{i}")));
    }
    let mut cases = vec![
        case(
            "walk/symlink_to_root",
            &[os("check"), run.as_os_str(), os("--device"), os("cpu")],
            &[0],
            None,
            d.path(),
        ),
        case(
            "walk/inspect_run",
            &[os("inspect"), run.as_os_str()],
            &[0],
            None,
            d.path(),
        ),
        case(
            "walk/proc_self",
            &[os("check"), os("/proc/self"), os("--device"), os("cpu")],
            &[0, 2],
            None,
            d.path(),
        ),
    ];
    let mut c = case(
        "walk/inspect_json",
        &[os("inspect"), run.as_os_str(), os("--json")],
        &[0],
        None,
        d.path(),
    );
    c.cmd.env("X", "1");
    cases.push(c);
    assert_none(run_cases(cases));
    // The walk listed nothing from outside the run.
    let out = mlt()
        .arg("inspect")
        .arg(&run)
        .arg("--json")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("/etc/") && !text.contains("root/"), "{text}");
}

#[test]
fn item03_16_cli_errors_are_one_line_and_output_errors_do_not_panic() {
    let d = tempfile::tempdir().unwrap();
    let h = d.path();
    let cases = vec![
        case(
            "cli/limit_minus_one",
            &[os("search"), os("x"), os("--limit"), os("-1")],
            &[2],
            None,
            h,
        ),
        case(
            "cli/inspect_without_path",
            &[os("inspect")],
            &[2],
            Some("<PATH>"),
            h,
        ),
        case(
            "cli/check_empty",
            &[os("check"), os("")],
            &[2],
            Some("empty path"),
            h,
        ),
        case(
            "cli/inspect_empty",
            &[os("inspect"), os("")],
            &[2],
            Some("empty path"),
            h,
        ),
        case(
            "cli/check_missing",
            &[os("check"), os("/nonexistent/run")],
            &[2],
            None,
            h,
        ),
        case(
            "cli/unknown_flag",
            &[os("check"), os("--frobnicate")],
            &[2],
            None,
            h,
        ),
        case(
            "cli/completions_full",
            &[os("completions"), os("bash")],
            &[2],
            Some("standard output"),
            h,
        ),
        case(
            "cli/list_full",
            &[os("list")],
            &[2],
            Some("standard output"),
            h,
        ),
    ];
    // bounded::run pipes stdout; give the /dev/full cases their own runner.
    let (full, rest): (Vec<Case>, Vec<Case>) =
        cases.into_iter().partition(|c| c.name.ends_with("_full"));
    let mut bad = run_cases(rest);
    for mut c in full {
        let out = c
            .cmd
            .stdin(std::process::Stdio::null())
            .stdout(
                std::fs::File::options()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            )
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2)
            || err.contains("panicked")
            || err.trim_end().lines().count() != 1
        {
            bad.push(format!("{}: {:?} {err}", c.name, out.status));
        }
    }
    // A reader that closes the pipe at once: no panic, exit 0.
    for shell in ["bash", "zsh", "fish"] {
        let mut child = bounded::mlt()
            .args(["completions", shell])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("panicked") || !out.status.success() {
            bad.push(format!(
                "completions {shell} | closed: {:?} {err}",
                out.status
            ));
        }
    }
    assert_none(bad);
}

#[test]
fn item14_non_utf8_file_names_serialise_lossily_in_json() {
    use std::os::unix::ffi::OsStrExt;
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    write(
        &run.join("metrics.jsonl"),
        "{\"step\":1,\"loss\":2.0}\n{\"step\":2,\"loss\":1.0}\n",
    );
    write(
        &run.join(std::ffi::OsStr::from_bytes(b"b\xffad.safetensors")),
        b"\x01\x02",
    );
    write(
        &run.join(std::ffi::OsStr::from_bytes(b"train\xfe.jsonl")),
        "{\"step\":1,\"loss\":2.0}\n",
    );
    for args in [
        vec!["check", "--json", "--all", "--device", "cpu"],
        vec!["inspect", "--json"],
    ] {
        let out = mlt()
            .args(&args[..1])
            .arg(&run)
            .args(&args[1..])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            v.to_string().contains('\u{fffd}'),
            "{args:?}: the odd name is shown lossily: {v}"
        );
    }
}

#[test]
fn item16_permission_denied_on_the_run_is_exit_2_with_one_line() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = d.path().join("trainer_state.json");
    write(&f, "{\"log_history\":[{\"step\":1,\"loss\":1}]}");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o000)).unwrap();
    let root = unsafe { libc::geteuid() } == 0;
    for sub in ["check", "inspect"] {
        let mut cmd = bounded::mlt();
        cmd.arg(sub).arg(&f);
        if root {
            // SAFETY: dropping to `nobody` in the child before exec.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let out = match cmd.output() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("note: cannot run as an unprivileged user here ({e}); skipped");
                return;
            }
        };
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("os error 13")
            || err.contains("Permission denied")
            || out.status.code() == Some(2)
        {
            assert_eq!(out.status.code(), Some(2), "{sub}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{sub}: {err}");
            assert!(err.contains("trainer_state.json"), "{sub}: {err}");
        } else {
            // The binary itself was not reachable for `nobody` (a private target folder).
            eprintln!("note: {sub} as nobody: {:?} {err}", out.status);
        }
    }
}

#[test]
fn hostile_corpus_has_at_least_100_cases() {
    let d = tempfile::tempdir().unwrap();
    let committed = std::fs::read_to_string(corpus().join("expect.tsv"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count();
    let p = d.path();
    let generated = pickle_cases(p).len()
        + text_cases(&p.join("t")).len()
        + tensor_cases(&p.join("s")).len()
        + yaml_cases(&p.join("y")).len();
    assert!(
        committed + generated >= 100,
        "{committed} committed + {generated} generated"
    );
}

// ---------------------------------------------------------------------------------------
// Issue 29: optimizer state read as weights are — streamed in blocks, never held whole.

#[path = "../probes/tests/support/optim_writer.rs"]
mod optim_writer;

/// Runs `cmd` for at most 30 s and returns (exit code, peak RSS in KB, stderr). The peak is
/// the child's own `VmHWM`, polled from /proc while it runs: `wait4`'s `ru_maxrss` starts a
/// child at its parent's high-water mark, and this test process may hold far more than the
/// bound checked here while other tests run beside it.
fn run_polling_hwm(cmd: &mut std::process::Command) -> (Option<i32>, i64, String) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut se = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let status = format!("/proc/{}/status", child.id());
    let t0 = std::time::Instant::now();
    let mut hwm = 0i64;
    let code = loop {
        if let Ok(st) = std::fs::read_to_string(&status) {
            let kb = st
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            hwm = hwm.max(kb.unwrap_or(0));
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    (code, hwm, err.join().unwrap_or_default())
}

#[test]
fn item29_optimizer_state_is_streamed_not_held_whole() {
    let d = tempfile::tempdir().unwrap();
    let ck = d.path().join("run/checkpoint-100");
    std::fs::create_dir_all(&ck).unwrap();
    let opt = ck.join("optimizer.pt");
    // Two params of 2560×4096: 168 MB of float32 moments.
    let shapes = vec![vec![2560, 4096], vec![2560, 4096]];
    optim_writer::write_adam_pt(&opt, &shapes, 100.0, 1e-3, 1e-6);
    write(&ck.join("trainer_state.json"), r#"{"global_step": 100}"#);
    let size = std::fs::metadata(&opt).unwrap().len() as i64;
    let home = d.path().join("home");
    let run = d.path().join("run");
    let mut bad = Vec::new();
    for (name, args) in [
        ("inspect optimizer.pt", vec![os("inspect"), opt.as_os_str()]),
        (
            "check run",
            vec![os("check"), run.as_os_str(), os("--device"), os("cpu")],
        ),
    ] {
        let mut c = case(name, &args, &[0], None, &home);
        let (code, hwm_kb, stderr) = run_polling_hwm(&mut c.cmd);
        // Far under the file: a block per reading thread, not the moments (nor their pages).
        if code != Some(0) || hwm_kb * 1024 > size / 4 {
            bad.push(format!(
                "{name}: exit {code:?}, peak RSS {} MB for a {} MB optimizer.pt; {}",
                hwm_kb / 1024,
                size >> 20,
                stderr.chars().take(300).collect::<String>()
            ));
        }
    }
    assert_none(bad);
}

// ---------------------------------------------------------------------------------------
// Issue 29: the readers added since (W&B, MLflow, captured logs) open through the
// regular-file gate and stream under a budget; no scan is quadratic in lines, keys or hits;
// `--threads` is bounded. Each hostile file is made here; each case fails the old reader
// (a hang or more than 1 GB) and must end bounded.

/// Writes `head`, `chunk` `times` times, then `tail` (a large file never held in memory).
fn write_repeated(p: &Path, head: &[u8], chunk: &[u8], times: usize, tail: &[u8]) {
    use std::io::Write;
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(p).unwrap());
    w.write_all(head).unwrap();
    for _ in 0..times {
        w.write_all(chunk).unwrap();
    }
    w.write_all(tail).unwrap();
    w.flush().unwrap();
}

fn pb_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A protobuf length-delimited field.
fn pb_field(out: &mut Vec<u8>, f: u32, data: &[u8]) {
    pb_varint(out, u64::from(f) << 3 | 2);
    pb_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// A W&B record file (header, then records framed in 32 KiB LevelDB-log blocks).
fn wandb_file(p: &Path, records: impl Iterator<Item = Vec<u8>>) {
    use std::io::Write;
    const BLOCK: usize = 32 * 1024;
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).unwrap();
    }
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(p).unwrap());
    w.write_all(b":W&B\xe1\xbe\x00").unwrap();
    let mut pos = 7usize;
    for r in records {
        let mut rest: &[u8] = &r;
        let mut first = true;
        loop {
            let left = BLOCK - pos % BLOCK;
            if left < 7 {
                w.write_all(&vec![0u8; left]).unwrap();
                pos += left;
                continue;
            }
            let n = rest.len().min(left - 7);
            let last = n == rest.len();
            let kind = match (first, last) {
                (true, true) => 1u8,
                (true, false) => 2,
                (false, false) => 3,
                (false, true) => 4,
            };
            w.write_all(&[0, 0, 0, 0]).unwrap();
            w.write_all(&(n as u16).to_le_bytes()).unwrap();
            w.write_all(&[kind]).unwrap();
            w.write_all(&rest[..n]).unwrap();
            pos += 7 + n;
            rest = &rest[n..];
            first = false;
            if last {
                break;
            }
        }
    }
    w.flush().unwrap();
}

/// An MLflow run folder under `d`; the path of its metric file `loss`.
fn mlflow_metric(d: &Path) -> PathBuf {
    let run = d.join("mlruns").join("0").join("abc");
    std::fs::create_dir_all(run.join("metrics")).unwrap();
    std::fs::write(run.join("meta.yaml"), "run_id: abc\n").unwrap();
    run.join("metrics").join("loss")
}

/// Cause 1: every reader opens through the regular-file gate (a FIFO hung `inspect`; a link
/// to /dev/zero was read until memory ran out).
fn gate_cases(d: &Path) -> Vec<Case> {
    let mut v = Vec::new();
    let mut one = |name: &str, file: &Path, needle| {
        v.push(case(
            &format!("gate/{name}"),
            &[os("inspect"), file.as_os_str()],
            &[2],
            needle,
            d,
        ));
    };
    let run = d.join("gate_run");
    std::fs::create_dir_all(run.join("wandb/offline-run-1")).unwrap();
    let wb = run.join("wandb/offline-run-1/run-1.wandb");
    bounded::mkfifo(&wb);
    one("wandb_fifo", &wb, Some("FIFO"));
    let log = run.join("train.log");
    bounded::mkfifo(&log);
    one("log_fifo", &log, Some("FIFO"));
    let ml = mlflow_metric(&run);
    bounded::mkfifo(&ml);
    one("mlflow_fifo", &ml, Some("FIFO"));
    let z = d.join("gate_zero");
    std::fs::create_dir_all(&z).unwrap();
    sym("/dev/zero", &z.join("run-2.wandb"));
    one(
        "wandb_dev_zero",
        &z.join("run-2.wandb"),
        Some("character device"),
    );
    sym("/dev/zero", &z.join("nohup.out"));
    one(
        "log_dev_zero",
        &z.join("nohup.out"),
        Some("character device"),
    );
    let zm = mlflow_metric(&z.join("ml"));
    sym("/dev/zero", &zm);
    one("mlflow_dev_zero", &zm, Some("character device"));
    // A run holding the FIFOs: `check` completes.
    v.push(case(
        "gate/check_run_of_fifos",
        &[os("check"), run.as_os_str(), os("--device"), os("cpu")],
        &[0, 1],
        None,
        d,
    ));
    v
}

/// Causes 2–4: W&B, MLflow and captured logs streamed, with what they keep capped. The old
/// peaks (debug build): 1.55 GB, 1.33 GB, 1.15 GB, 1.61 GB, 1.28 GB.
fn streamed_cases(d: &Path) -> Vec<Case> {
    let mut v = Vec::new();
    let mut one = |name: &str, file: &Path, codes: &'static [i32], needle| {
        v.push(case(
            &format!("stream/{name}"),
            &[os("inspect"), file.as_os_str()],
            codes,
            needle,
            d,
        ));
    };
    // A 1.5 GB sparse record file: a header, then zeros (read whole).
    let p = d.join("wandb_sparse/run-3.wandb");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let f = std::fs::File::create(&p).unwrap();
    std::io::Write::write_all(&mut &f, b":W&B\xe1\xbe\x00").unwrap();
    f.set_len(1536 << 20).unwrap();
    one("wandb_sparse_1536mb", &p, &[2], Some("no history rows"));
    // 100 MB of small config items: 8.4M distinct keys (all kept, then de-duplicated).
    let p = d.join("wandb_config/run-4.wandb");
    let mut key = 0u64;
    let recs = (0..4200).map(move |_| {
        let mut items = Vec::new();
        for _ in 0..2000 {
            let mut it = Vec::new();
            pb_field(&mut it, 1, format!("k{key}").as_bytes());
            pb_field(&mut it, 16, b"1");
            pb_field(&mut items, 1, &it);
            key += 1;
        }
        let mut r = Vec::new();
        pb_field(&mut r, 5, &items);
        r
    });
    wandb_file(&p, recs);
    one("wandb_config_100mb", &p, &[2], Some("no history rows"));
    // 180 MB of MLflow points, 31M lines (read whole, plus 32 bytes a point).
    let p = mlflow_metric(&d.join("mlflow_big"));
    write_repeated(&p, b"", &b"0 0 0\n".repeat(1 << 10), 30 << 10, b"");
    one("mlflow_180mb", &p, &[0], None);
    // A 64 MB captured log on one line of `key value` pairs (split and kept whole).
    let p = d.join("log_line/train.log");
    write_repeated(&p, b"step 1: ", &b"a 1 ".repeat(1 << 10), 16 << 10, b"\n");
    one("log_one_64mb_line", &p, &[2], Some("line cap skipped"));
    // 155 MB of step lines with six values each, not valid UTF-8 (copied lossily, 32 bytes a
    // point kept).
    let p = d.join("log_steps/train.log");
    write_repeated(
        &p,
        b"\xff\xfe banner\n",
        &b"step 1 a 0 b 0 c 0 d 0 e 0 f 0\n".repeat(1 << 10),
        5 << 10,
        b"",
    );
    one("log_155mb_step_lines", &p, &[0], None);
    v
}

#[test]
fn issue29_readers_open_through_the_gate_and_stream_under_a_budget() {
    let d = tempfile::tempdir().unwrap();
    let mut cases = gate_cases(d.path());
    cases.extend(streamed_cases(d.path()));
    assert_none(run_cases(cases));
}

/// Causes 5–7: quadratic scans (both hung past 30 s) and an unbounded thread count (hung).
fn scan_cases(d: &Path) -> Vec<Case> {
    let mut v = Vec::new();
    // 20,000 OOM lines between progress lines: `log_errors` re-scanned the prefix per hit.
    let run = d.join("oom_run");
    let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. \
               GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\n";
    let mut text = String::new();
    for i in 0..20_000 {
        text.push_str(&format!("step {i}: loss 2.0\n{oom}"));
    }
    write(&run.join("train.log"), text);
    v.push(case(
        "scan/log_errors_20k_oom_lines",
        &[os("check"), run.as_os_str(), os("--device"), os("cpu")],
        &[1],
        None,
        d,
    ));
    // 100,000 distinct keys in a captured log: renaming duplicates compared all pairs.
    let p = d.join("keys/train.log");
    let text: String = (0..100_000)
        .map(|i| format!("step {i}: key{i} 1.0 loss {i}\n"))
        .collect();
    write(&p, text);
    v.push(case(
        "scan/log_100k_keys",
        &[os("inspect"), p.as_os_str()],
        &[0],
        None,
        d,
    ));
    // A thread count that would start 100M threads.
    v.push(case(
        "threads/flag",
        &[os("--threads"), os("100000000"), os("search"), os("loss")],
        &[2],
        Some("--threads 100000000"),
        d,
    ));
    let mut c = case(
        "threads/env",
        &[os("search"), os("loss")],
        &[2],
        Some("RAYON_NUM_THREADS"),
        d,
    );
    c.cmd.env("RAYON_NUM_THREADS", "100000000");
    v.push(c);
    v
}

#[test]
fn issue29_scans_are_linear_and_threads_are_bounded() {
    let d = tempfile::tempdir().unwrap();
    assert_none(run_cases(scan_cases(d.path())));
}

/// Issue 29 cause 8: the YAML budget's old lexer took a `'` after `, ` inside a plain scalar
/// for a quote and skipped the rest of the file, so an alias bomb behind it aborted at 8 GB
/// (the untagged `thresholds` value buffers the expansion; a 400k-event padding raises
/// serde_yaml_ng's own repetition limit) and 200k-deep flow nesting hung in the scanner.
fn yaml_bypass_cases(d: &Path) -> Vec<Case> {
    let bypass = "probes:\n  - id: p1\n    question: a, 'b\n    entries: [O1]\n    thresholds:\n";
    let mut bomb = format!(
        "{bypass}      a: [\n       [{}],\n       &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol],\n",
        vec!["0"; 400_000].join(",")
    );
    for i in 1..12 {
        let a = format!("*a{}", i - 1);
        bomb.push_str(&format!("       &a{i} [{}],\n", [a.as_str(); 9].join(", ")));
    }
    bomb.push_str("      ]\n");
    let deep = format!(
        "{bypass}      a: {}{}\n",
        "[".repeat(200_000),
        "]".repeat(200_000)
    );
    // The same bomb behind a block scalar and a multi-line plain scalar that open with `'`.
    let block = bomb.replace("question: a, 'b\n", "question: |\n      'b\n");
    let multi = bomb.replace("question: a, 'b\n", "question: a\n      'b\n");
    let mut v = Vec::new();
    for (name, text, needle) in [
        // 9th alias: line 9 (x1 on line 8 holds aliases 1–9's first 9; the 9th is on it).
        (
            "quote_bypass_alias_bomb",
            bomb,
            ".yaml:9: more than 8 YAML aliases",
        ),
        (
            "quote_bypass_deep_flow",
            deep,
            ".yaml:6: flow collections nested deeper",
        ),
        ("block_scalar_alias_bomb", block, ".yaml:10: more than 8"),
        (
            "plain_continuation_alias_bomb",
            multi,
            ".yaml:10: more than 8",
        ),
    ] {
        let dir = d.join("pb29").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir.join("p.yaml"), text);
        for cmd in [
            vec![os("--playbook"), dir.as_os_str(), os("search"), os("loss")],
            vec![os("lint"), dir.as_os_str()],
            vec![os("--playbook"), dir.as_os_str(), os("doctor")],
        ] {
            v.push(case(
                &format!("yaml29/{name}/{}", cmd[cmd.len() - 2].to_string_lossy()),
                &cmd,
                &[2],
                Some(needle),
                d,
            ));
        }
    }
    v
}

#[test]
fn issue29_yaml_budget_counts_what_the_parser_sees() {
    let d = tempfile::tempdir().unwrap();
    assert_none(run_cases(yaml_bypass_cases(d.path())));
}

/// Issue 29 cause 9: file names, series tags and arguments with terminal escapes (OSC title,
/// CSI clear screen, BEL) were printed raw by `check`, `inspect DIR`, `walk` and on stderr.
/// Every text command that takes a run, and every echoed path, must print them escaped.
#[test]
fn issue29_terminal_escapes_in_names_are_escaped_in_text_output() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run\x1b]0;RUN\x07");
    let ckpt = run.join("checkpoint-1\x1b[2J");
    std::fs::create_dir_all(&ckpt).unwrap();
    write(
        &run.join("train\x1b]0;TITLE\x07.log"),
        "step 1 loss 2.0\nstep 2 loss 1.9\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    );
    write(
        &run.join("metrics\x1b[31m.csv"),
        "step,lo\x1b[2Jss\x07x,acc\x1b]0;T\x07\n1,2.0,0.1\n2,1.0,0.2\n3,0.5,0.3\n",
    );
    write(&run.join("notes\x1b]0;X\x07.bin"), "junk");
    write(
        &ckpt.join("config.json"),
        "{\"hidden_size\": 12, \"model_type\": \"x\\u001b[2Jy\"}",
    );
    let missing = d.path().join("nope\x1b]0;T\x07");
    let log = run.join("train\x1b]0;TITLE\x07.log");
    let commands: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec![os("check"), run.as_os_str()],
        vec![os("check"), os("--all"), run.as_os_str()],
        vec![os("inspect"), run.as_os_str()],
        vec![os("inspect"), log.as_os_str()],
        vec![os("walk"), os("--from"), os("M1"), run.as_os_str()],
        vec![os("walk"), os("convergence"), run.as_os_str()],
        vec![os("probe"), os("log_errors"), run.as_os_str()],
        vec![os("check"), missing.as_os_str()],
        vec![os("inspect"), missing.as_os_str()],
        vec![os("search"), os("--limit"), os("x\x1b[2J")],
        vec![os("show"), os("X\x1b]0;T\x07")],
    ];
    let mut bad = Vec::new();
    for args in commands {
        let mut cmd = bounded::mlt();
        cmd.args(&args).env("NO_COLOR", "1");
        let o = bounded::run(&mut cmd, Duration::from_secs(30));
        let shown = format!("{:?}", args);
        if o.timed_out || o.signal.is_some() || o.stderr.contains("panicked") {
            bad.push(format!("{shown}: did not end cleanly: {:?}", o.stderr));
        }
        for (stream, bytes) in [
            ("stdout", o.stdout.as_slice()),
            ("stderr", o.stderr.as_bytes()),
        ] {
            if bytes.iter().any(|b| *b == 0x1b || *b == 0x07) {
                bad.push(format!(
                    "{shown}: raw ESC/BEL on {stream}: {:?}",
                    String::from_utf8_lossy(bytes)
                ));
            }
        }
        if o.code == Some(2) && o.stderr.trim_end().lines().count() != 1 {
            bad.push(format!("{shown}: error is not one line: {:?}", o.stderr));
        }
    }
    // They are shown escaped, as JSON writes them.
    let mut cmd = bounded::mlt();
    cmd.arg("inspect").arg(&run).env("NO_COLOR", "1");
    let out = String::from_utf8_lossy(&bounded::run(&mut cmd, Duration::from_secs(30)).stdout)
        .into_owned();
    for want in [
        "train\\u001b]0;TITLE\\u0007.log",
        "checkpoint-1\\u001b[2J",
        "lo\\u001b[2Jss\\u0007x",
    ] {
        if !out.contains(want) {
            bad.push(format!("inspect DIR lacks {want:?}: {out}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Issue 29, causes 7 and 10: DCP tensors stream (never assembled for their statistics or
// comparisons) and a chunk referenced over and over is refused; every file `check` reads more
// than once is parsed once. The checkpoints are written here (a `.metadata` pickle of the
// classes torch.distributed.checkpoint writes, `.distcp` shards of stored torch zips).

/// Pickle: a BININT.
fn p_int(o: &mut Vec<u8>, v: usize) {
    o.push(b'J');
    o.extend_from_slice(&(v as i32).to_le_bytes());
}

/// Pickle: a tuple of ints.
fn p_ints(o: &mut Vec<u8>, v: &[usize]) {
    o.push(b'(');
    for &x in v {
        p_int(o, x);
    }
    o.push(b't');
}

/// Pickle: `module.cls` made with NEWOBJ, its state dict opened (close with `p_end_obj`).
fn p_obj(o: &mut Vec<u8>, cls: &str) {
    o.extend_from_slice(b"ctorch.distributed.checkpoint.metadata\n");
    o.extend_from_slice(cls.as_bytes());
    o.extend_from_slice(b"\n)\x81}(");
}

fn p_end_obj(o: &mut Vec<u8>) {
    o.extend_from_slice(b"ub");
}

/// Pickle: a float32 tensor over storage "0" (`_rebuild_tensor_v2`).
fn p_tensor(o: &mut Vec<u8>, shape: &[usize]) {
    let mut stride = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * shape[d + 1];
    }
    o.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n((");
    o.extend_from_slice(&uni(b"storage"));
    o.extend_from_slice(b"ctorch\nFloatStorage\n");
    o.extend_from_slice(&uni(b"0"));
    o.extend_from_slice(&uni(b"cpu"));
    p_int(o, shape.iter().product());
    o.extend_from_slice(b"tQ");
    p_int(o, 0);
    p_ints(o, shape);
    p_ints(o, &stride);
    o.extend_from_slice(b"\x89ccollections\nOrderedDict\n)RtR");
}

/// A `torch.save(tensor)` archive of a float32 tensor of `shape` (one chunk of a shard).
fn dcp_chunk(shape: &[usize], value: impl Fn(usize) -> f32) -> Vec<u8> {
    let mut pkl = b"\x80\x02".to_vec();
    p_tensor(&mut pkl, shape);
    pkl.push(b'.');
    let n: usize = shape.iter().product();
    // A repeating pattern of 997 values, copied (fast in a debug build too).
    let pat: Vec<u8> = (0..997.min(n))
        .flat_map(|i| value(i).to_le_bytes())
        .collect();
    let mut data = Vec::with_capacity(n * 4);
    while data.len() < n * 4 {
        let k = (n * 4 - data.len()).min(pat.len());
        data.extend_from_slice(&pat[..k]);
    }
    dcp_zip(&[
        ("archive/data.pkl", &pkl),
        ("archive/version", b"3\n"),
        ("archive/data/0", &data),
    ])
}

/// A stored zip as `bounded::zip_stored` writes it, with CRCs left 0 (the readers never
/// inflate or check them; computing them byte by byte is slow in a debug build).
fn dcp_zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let size: usize = entries.iter().map(|(n, d)| 30 + n.len() + d.len()).sum();
    let mut out = Vec::with_capacity(size + 1024);
    let mut central = Vec::new();
    for (name, data) in entries {
        let off = out.len() as u32;
        let (n, len) = (name.len() as u16, data.len() as u32);
        out.extend_from_slice(b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00\0\0\0\0");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        central.extend_from_slice(
            b"PK\x01\x02\x14\x00\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00\0\0\0\0",
        );
        central.extend_from_slice(&len.to_le_bytes());
        central.extend_from_slice(&len.to_le_bytes());
        central.extend_from_slice(&n.to_le_bytes());
        central.extend_from_slice(&[0u8; 12]);
        central.extend_from_slice(&off.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let (cd_off, cd_len) = (out.len() as u32, central.len() as u32);
    out.extend_from_slice(&central);
    let k = entries.len() as u16;
    out.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00");
    out.extend_from_slice(&k.to_le_bytes());
    out.extend_from_slice(&k.to_le_bytes());
    out.extend_from_slice(&cd_len.to_le_bytes());
    out.extend_from_slice(&cd_off.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// One chunk in the metadata: its offsets and sizes in the tensor, and where its archive lies.
struct DcpRef {
    offsets: Vec<usize>,
    sizes: Vec<usize>,
    file: &'static str,
    at: usize,
    len: usize,
}

/// A `.metadata` of float32 tensors `(fqn, shape, chunks)`.
fn dcp_metadata(tensors: &[(&str, Vec<usize>, Vec<DcpRef>)]) -> Vec<u8> {
    let mut o = b"\x80\x02".to_vec();
    p_obj(&mut o, "Metadata");
    o.extend_from_slice(&uni(b"state_dict_metadata"));
    o.extend_from_slice(b"}(");
    for (name, shape, chunks) in tensors {
        o.extend_from_slice(&uni(name.as_bytes()));
        p_obj(&mut o, "TensorStorageMetadata");
        o.extend_from_slice(&uni(b"properties"));
        p_obj(&mut o, "TensorProperties");
        o.extend_from_slice(&uni(b"dtype"));
        o.extend_from_slice(b"ctorch\nfloat32\n");
        p_end_obj(&mut o);
        o.extend_from_slice(&uni(b"size"));
        p_ints(&mut o, shape);
        o.extend_from_slice(&uni(b"chunks"));
        o.extend_from_slice(b"](");
        for c in chunks {
            p_obj(&mut o, "ChunkStorageMetadata");
            o.extend_from_slice(&uni(b"offsets"));
            p_ints(&mut o, &c.offsets);
            o.extend_from_slice(&uni(b"sizes"));
            p_ints(&mut o, &c.sizes);
            p_end_obj(&mut o);
        }
        o.extend_from_slice(b"e");
        p_end_obj(&mut o);
    }
    o.push(b'u');
    o.extend_from_slice(&uni(b"storage_data"));
    o.extend_from_slice(b"}(");
    for (name, _, chunks) in tensors {
        for c in chunks {
            p_obj(&mut o, "MetadataIndex");
            o.extend_from_slice(&uni(b"fqn"));
            o.extend_from_slice(&uni(name.as_bytes()));
            o.extend_from_slice(&uni(b"offset"));
            p_ints(&mut o, &c.offsets);
            p_end_obj(&mut o);
            p_obj(&mut o, "_StorageInfo");
            o.extend_from_slice(&uni(b"relative_path"));
            o.extend_from_slice(&uni(c.file.as_bytes()));
            o.extend_from_slice(&uni(b"offset"));
            p_int(&mut o, c.at);
            o.extend_from_slice(&uni(b"length"));
            p_int(&mut o, c.len);
            p_end_obj(&mut o);
        }
    }
    o.push(b'u');
    p_end_obj(&mut o);
    o.push(b'.');
    o
}

/// Appends `bytes` to the shard at `p`; returns where they start.
fn append(p: &Path, bytes: &[u8]) -> usize {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .unwrap();
    let at = f.metadata().unwrap().len() as usize;
    f.write_all(bytes).unwrap();
    at
}

#[test]
fn item29_dcp_tensors_stream_and_a_chunk_referenced_1200_times_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let mut bad = Vec::new();
    // A legitimate 384 MiB tensor in 4 chunks over 2 ranks' shards, in two checkpoints (the
    // second's shards hard links of the first's): `check` reads both and compares them.
    let run = d.path().join("run");
    let (rows, cols, parts) = (24576usize, 4096usize, 4usize);
    let per = rows / parts;
    let ck = run.join("step_100");
    std::fs::create_dir_all(&ck).unwrap();
    let mut refs = Vec::new();
    for p in 0..parts {
        let file = ["__0_0.distcp", "__1_0.distcp"][p / 2];
        let chunk = dcp_chunk(&[per, cols], |i| ((i + p) % 997) as f32 * 1e-3 - 0.5);
        let at = append(&ck.join(file), &chunk);
        refs.push(DcpRef {
            offsets: vec![p * per, 0],
            sizes: vec![per, cols],
            file,
            at,
            len: chunk.len(),
        });
    }
    write(
        &ck.join(".metadata"),
        dcp_metadata(&[("model.w", vec![rows, cols], refs)]),
    );
    let ck2 = run.join("step_200");
    std::fs::create_dir_all(&ck2).unwrap();
    for f in ["__0_0.distcp", "__1_0.distcp"] {
        std::fs::hard_link(ck.join(f), ck2.join(f)).unwrap();
    }
    std::fs::copy(ck.join(".metadata"), ck2.join(".metadata")).unwrap();
    let size = (rows * cols * 4) as i64;
    let meta = ck.join(".metadata");
    for (name, args) in [
        ("inspect .metadata", vec![os("inspect"), meta.as_os_str()]),
        (
            "check run",
            vec![os("check"), run.as_os_str(), os("--device"), os("cpu")],
        ),
    ] {
        // (`check` may fail a probe: the two checkpoints hold the same weights.)
        let mut c = case(name, &args, &[0, 1], None, &home);
        // A window per reading thread: 4 threads, so the bound holds on any machine.
        c.cmd.env("RAYON_NUM_THREADS", "4");
        let (code, hwm_kb, stderr) = run_polling_hwm(&mut c.cmd);
        if !matches!(code, Some(0 | 1)) || hwm_kb * 1024 > size / 4 {
            bad.push(format!(
                "{name}: exit {code:?}, peak RSS {} MB for a {} MB DCP tensor; {}",
                hwm_kb / 1024,
                size >> 20,
                stderr.chars().take(300).collect::<String>()
            ));
        }
    }
    // One 1 MiB chunk referenced 1,200 times: a 1.2 GB tensor made of one small file.
    let ck = d.path().join("refs/step_100");
    std::fs::create_dir_all(&ck).unwrap();
    let chunk = dcp_chunk(&[256, 1024], |i| i as f32);
    append(&ck.join("__0_0.distcp"), &chunk);
    let refs = (0..1200)
        .map(|i| DcpRef {
            offsets: vec![256 * i, 0],
            sizes: vec![256, 1024],
            file: "__0_0.distcp",
            at: 0,
            len: chunk.len(),
        })
        .collect();
    write(
        &ck.join(".metadata"),
        dcp_metadata(&[("model.w", vec![256 * 1200, 1024], refs)]),
    );
    let meta = ck.join(".metadata");
    let (code, hwm_kb, stderr) = run_polling_hwm(
        &mut case(
            "refs",
            &[os("inspect"), meta.as_os_str()],
            &[2],
            None,
            &home,
        )
        .cmd,
    );
    if code != Some(2)
        || stderr.trim_end().lines().count() != 1
        || !stderr.contains(".metadata")
        || !stderr.contains("reference budget")
        || hwm_kb > bounded::MAX_RSS_KB
    {
        bad.push(format!(
            "inspect of 1,200 references: exit {code:?}, peak RSS {} MB; {stderr:?}",
            hwm_kb / 1024
        ));
    }
    let refs_run = d.path().join("refs");
    bad.extend(run_cases(vec![case(
        "check of 1,200 references",
        &[os("check"), refs_run.as_os_str(), os("--device"), os("cpu")],
        &[0, 1],
        Some("reference budget"),
        &home,
    )]));
    assert_none(bad);
}

/// A torch zip whose `data.pkl` is `pkl`, with one float32 storage "0" of `floats` values.
fn pt_with_storage(p: &Path, pkl: &[u8], floats: usize) {
    let data = vec![0x3c; floats * 4];
    write(
        p,
        dcp_zip(&[
            ("archive/data.pkl", pkl),
            ("archive/version", b"3\n"),
            ("archive/data/0", &data),
        ]),
    );
}

/// Pickle: a dict of `n` keys `{prefix}{i}` → i (closes it).
fn p_big_dict(o: &mut Vec<u8>, prefix: &str, n: usize) {
    o.extend_from_slice(b"}(");
    for i in 0..n {
        o.extend_from_slice(&uni(format!("{prefix}{i}").as_bytes()));
        p_int(o, i);
    }
    o.push(b'u');
}

#[test]
fn item29_check_parses_each_file_once_nanogpt_config_deepspeed_names_dcp_chunks() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    // nanoGPT's ckpt.pt whose `config` has 1M keys (read by the facts and every weight probe).
    let nano = d.path().join("nano");
    let mut o = b"\x80\x02}(".to_vec();
    o.extend_from_slice(&uni(b"model"));
    o.extend_from_slice(b"}(");
    o.extend_from_slice(&uni(b"w"));
    p_tensor(&mut o, &[64, 64]);
    o.push(b'u');
    o.extend_from_slice(&uni(b"config"));
    p_big_dict(&mut o, "k", 1_000_000);
    o.extend_from_slice(&uni(b"iter_num"));
    p_int(&mut o, 100);
    o.extend_from_slice(b"u.");
    pt_with_storage(&nano.join("ckpt.pt"), &o, 64 * 64);
    // DeepSpeed model states naming 1M parameters (`param_shapes`).
    let ds = d.path().join("ds");
    let mut o = b"\x80\x02}(".to_vec();
    o.extend_from_slice(&uni(b"module"));
    o.extend_from_slice(b"}(");
    o.extend_from_slice(&uni(b"w"));
    p_tensor(&mut o, &[64, 64]);
    o.push(b'u');
    o.extend_from_slice(&uni(b"param_shapes"));
    o.extend_from_slice(b"](");
    p_big_dict(&mut o, "layers.w", 1_000_000);
    o.extend_from_slice(b"eu.");
    pt_with_storage(
        &ds.join("global_step100/mp_rank_00_model_states.pt"),
        &o,
        64 * 64,
    );
    write(&ds.join("latest"), "global_step100");
    // A DCP checkpoint of one tensor in 60,000 chunks.
    let dcp = d.path().join("dcp/step_100");
    std::fs::create_dir_all(&dcp).unwrap();
    let n = 60_000;
    let mut shard = Vec::new();
    let mut refs = Vec::with_capacity(n);
    for i in 0..n {
        let c = dcp_chunk(&[1, 4], |k| (i * 4 + k) as f32 * 1e-6);
        refs.push(DcpRef {
            offsets: vec![i, 0],
            sizes: vec![1, 4],
            file: "__0_0.distcp",
            at: shard.len(),
            len: c.len(),
        });
        shard.extend_from_slice(&c);
    }
    write(&dcp.join("__0_0.distcp"), &shard);
    write(
        &dcp.join(".metadata"),
        dcp_metadata(&[("model.w", vec![n, 4], refs)]),
    );
    let mut bad = Vec::new();
    let runs = [
        (nano.clone(), nano.join("ckpt.pt")),
        (
            ds.clone(),
            ds.join("global_step100/mp_rank_00_model_states.pt"),
        ),
        (d.path().join("dcp"), dcp.join(".metadata")),
    ];
    for (run, file) in &runs {
        let name = run.file_name().unwrap().to_string_lossy().into_owned();
        // `inspect FILE` parses the file once and reads every tensor in it.
        let mut c = case(&name, &[os("inspect"), file.as_os_str()], &[0], None, &home);
        let i = bounded::run(&mut c.cmd, Duration::from_secs(30));
        let mut c = case(
            &name,
            &[os("check"), run.as_os_str(), os("--device"), os("cpu")],
            &[0, 1],
            None,
            &home,
        );
        let o = bounded::run(&mut c.cmd, Duration::from_secs(30));
        // Parsed once, `check` takes about as long as `inspect` (4–6× as long before: each
        // probe parsed the file again).
        let slow = o.secs > 2.0 * i.secs + 2.0;
        if o.timed_out || !matches!(o.code, Some(0 | 1)) || slow || i.code != Some(0) {
            bad.push(format!(
                "check {name}: exit {:?} after {:.1} s (inspect: exit {:?}, {:.1} s); {}",
                o.code,
                o.secs,
                i.code,
                i.secs,
                o.stderr.chars().take(300).collect::<String>()
            ));
        }
    }
    assert_none(bad);
}

#[test]
fn item29_12_a_dcp_dimension_that_is_negative_is_refused_not_dropped() {
    // Before: a `.metadata` whose tensor has a dimension of -1 (or ≥ 2^63) was skipped as if
    // it held no tensor — "0 tensors", exit 0. Now: one line naming the file, exit 2.
    let d = tempfile::tempdir().unwrap();
    let ck = d.path().join("step_100");
    std::fs::create_dir_all(&ck).unwrap();
    let chunk = dcp_chunk(&[1, 4], |i| i as f32);
    append(&ck.join("__0_0.distcp"), &chunk);
    for (what, shape, sizes) in [
        ("negative size", vec![usize::MAX, 4], vec![1, 4]),
        ("negative chunk size", vec![1, 4], vec![usize::MAX, 4]),
    ] {
        write(
            &ck.join(".metadata"),
            dcp_metadata(&[(
                "model.w",
                shape,
                vec![DcpRef {
                    offsets: vec![0, 0],
                    sizes,
                    file: "__0_0.distcp",
                    at: 0,
                    len: chunk.len(),
                }],
            )]),
        );
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mltriage"))
            .arg("inspect")
            .arg(ck.join(".metadata"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains(".metadata")
                && stderr.contains("negative")
                && stderr.lines().count() == 1,
            "{what}: {stderr}"
        );
    }
}
