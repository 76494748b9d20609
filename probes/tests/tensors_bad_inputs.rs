//! Hostile and broken tensor files: every one must give a one-line `ReadError` naming the file —
//! no panic, no allocation sized by a lying header.

use std::io::Write;
use std::path::{Path, PathBuf};

use mltriage_probes::tensors::{read_pickled_dict, OptimizerState, TensorFile, TorchZip, Value};
use mltriage_probes::ReadError;

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn safetensors(header: &str, data: &[u8]) -> Vec<u8> {
    let mut v = (header.len() as u64).to_le_bytes().to_vec();
    v.extend_from_slice(header.as_bytes());
    v.extend_from_slice(data);
    v
}

fn assert_names_file(e: &ReadError, p: &Path, needle: &str) {
    let s = e.to_string();
    assert!(s.starts_with(&p.display().to_string()), "{s}");
    assert!(!s.contains('\n'), "{s}");
    assert!(s.contains(needle), "expected {needle:?} in {s}");
}

/// A minimal stored zip (what torch.save writes) with the given entries.
fn zip(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        let off = out.len() as u32;
        let crc = crc32(data);
        let mut h = Vec::new();
        h.extend_from_slice(b"PK\x03\x04");
        h.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        h.extend_from_slice(&crc.to_le_bytes());
        h.extend_from_slice(&(data.len() as u32).to_le_bytes());
        h.extend_from_slice(&(data.len() as u32).to_le_bytes());
        h.extend_from_slice(&(name.len() as u16).to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&h);
        out.extend_from_slice(data);
        central.extend_from_slice(b"PK\x01\x02");
        central.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&(data.len() as u32).to_le_bytes());
        central.extend_from_slice(&(data.len() as u32).to_le_bytes());
        central.extend_from_slice(&(name.len() as u16).to_le_bytes());
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&off.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let cd_off = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_off.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

#[test]
fn broken_safetensors_headers_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.safetensors", vec![], "empty"),
        ("short.safetensors", vec![1, 2, 3], "too short"),
        (
            "huge_len.safetensors",
            {
                let mut v = (1u64 << 62).to_le_bytes().to_vec();
                v.extend_from_slice(b"{}");
                v
            },
            "exceeds the file",
        ),
        (
            "not_json.safetensors",
            safetensors("{nope", &[]),
            "not valid JSON",
        ),
        (
            "array.safetensors",
            safetensors("[1,2]", &[]),
            "not a JSON object",
        ),
        (
            "past_end.safetensors",
            safetensors(
                r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
                &[0; 4],
            ),
            "outside the data region",
        ),
        (
            "petabytes.safetensors",
            safetensors(
                r#"{"w":{"dtype":"F32","shape":[1000000000,1000000000,1000000000],"data_offsets":[0,4]}}"#,
                &[0; 4],
            ),
            "overflows",
        ),
        (
            "petabytes2.safetensors",
            safetensors(
                r#"{"w":{"dtype":"F32","shape":[100000000,100000000],"data_offsets":[0,4]}}"#,
                &[0; 4],
            ),
            "needs 40000000000000000 bytes",
        ),
        (
            "dtype.safetensors",
            safetensors(
                r#"{"w":{"dtype":"F4","shape":[1],"data_offsets":[0,1]}}"#,
                &[0; 1],
            ),
            "unknown dtype",
        ),
        (
            "neg.safetensors",
            safetensors(
                r#"{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#,
                &[0; 4],
            ),
            "non-negative",
        ),
        (
            "overlap.safetensors",
            safetensors(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                &[0; 8],
            ),
            "overlap",
        ),
        (
            "garbage.bin",
            b"this is not a checkpoint at all".to_vec(),
            "not a torch zip archive",
        ),
    ];
    for (name, bytes, needle) in cases {
        let p = write(d.path(), name, &bytes);
        let e = TensorFile::open(&p).expect_err(name);
        assert_names_file(&e, &p, needle);
    }
    // A truncated copy of a valid file: the header promises more than the file holds.
    let ok = safetensors(
        r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
        &[0; 16],
    );
    let p = write(d.path(), "trunc.safetensors", &ok[..ok.len() - 5]);
    assert_names_file(
        &TensorFile::open(&p).unwrap_err(),
        &p,
        "outside the data region",
    );
    let p = write(d.path(), "trunc_header.safetensors", &ok[..20]);
    assert_names_file(&TensorFile::open(&p).unwrap_err(), &p, "exceeds the file");
}

#[test]
fn valid_edge_cases_are_reported_not_fatal() {
    let d = tempfile::tempdir().unwrap();
    let nan: Vec<u8> = [f32::NAN; 3].iter().flat_map(|x| x.to_le_bytes()).collect();
    let h = r#"{"__metadata__":{"format":"pt"},"empty":{"dtype":"BF16","shape":[0,7],"data_offsets":[0,0]},"nan":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}"#;
    let p = write(d.path(), "edge.safetensors", &safetensors(h, &nan));
    let f = TensorFile::open(&p).unwrap();
    assert_eq!(f.metadata().get("format").map(String::as_str), Some("pt"));
    let e = f.stats("empty").unwrap();
    assert_eq!((e.count, e.finite), (0, 0));
    let n = f.stats("nan").unwrap();
    assert_eq!((n.count, n.nan, n.finite), (3, 3, 0));
    assert!(n.mean.is_nan());
    let err = f.stats("missing").unwrap_err();
    assert_names_file(&err, &p, "no tensor named");
    assert!(f.to_f64_vec("nan", 2).is_err());
}

#[test]
fn safetensors_header_length_with_a_pickle_like_first_byte() {
    // 384-byte header: the length's first byte is 0x80, like a pickle's PROTO opcode.
    let d = tempfile::tempdir().unwrap();
    let mut h = r#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#.to_string();
    while h.len() < 384 {
        h.push(' ');
    }
    for name in ["odd.safetensors", "odd.bin"] {
        let p = write(d.path(), name, &safetensors(&h, &1.5f32.to_le_bytes()));
        let f = TensorFile::open(&p).unwrap();
        assert_eq!(f.to_f64_vec("w", 1).unwrap(), vec![1.5]);
    }
}

#[test]
fn sharded_index_names_the_missing_shard() {
    let d = tempfile::tempdir().unwrap();
    let one: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    write(
        d.path(),
        "model-00001-of-00002.safetensors",
        &safetensors(
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            &one,
        ),
    );
    let idx = r#"{"metadata":{"total_size":16},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}"#;
    let p = write(d.path(), "model.safetensors.index.json", idx.as_bytes());
    let e = TensorFile::open(&p).unwrap_err();
    assert_names_file(&e, &p, "model-00002-of-00002.safetensors");
    // Now add the shard: both tensors are visible, each read from its own file.
    write(
        d.path(),
        "model-00002-of-00002.safetensors",
        &safetensors(
            r#"{"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            &one,
        ),
    );
    let f = TensorFile::open(&p).unwrap();
    assert_eq!(f.tensors().len(), 2);
    assert_eq!(f.to_f64_vec("b", 10).unwrap(), vec![1.0, 2.0]);
    assert_eq!(
        f.metadata().get("total_size").map(String::as_str),
        Some("16")
    );
    // A shard that lacks a mapped tensor is an error naming the shard.
    let idx = r#"{"weight_map":{"a":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}}"#;
    let p = write(d.path(), "bad.safetensors.index.json", idx.as_bytes());
    assert_names_file(
        &TensorFile::open(&p).unwrap_err(),
        &p,
        "not in shard model-00002-of-00002.safetensors",
    );
}

#[test]
fn broken_torch_files_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let legacy = write(
        d.path(),
        "legacy.pt",
        b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.",
    );
    assert_names_file(
        &TensorFile::open(&legacy).unwrap_err(),
        &legacy,
        "legacy torch serialization not supported; re-save with torch>=1.6",
    );
    let garbage = write(d.path(), "garbage.pt", b"PK\x03\x04 definitely not a zip");
    assert_names_file(&TensorFile::open(&garbage).unwrap_err(), &garbage, "zip");
    let nopkl = write(d.path(), "nopkl.pt", &zip(&[("archive/version", b"3\n")]));
    assert_names_file(
        &TorchZip::open(&nopkl).unwrap_err(),
        &nopkl,
        "no data.pkl in archive",
    );
    assert_names_file(
        &OptimizerState::read(&nopkl).unwrap_err(),
        &nopkl,
        "no data.pkl in archive",
    );
    let empty = write(d.path(), "empty.pt", b"");
    assert_names_file(&TensorFile::open(&empty).unwrap_err(), &empty, "empty");
    let badpkl = write(
        d.path(),
        "badpkl.pt",
        &zip(&[("archive/data.pkl", b"\x80\x02X\xff\xff\xff\x7f")]),
    );
    assert_names_file(&TensorFile::open(&badpkl).unwrap_err(), &badpkl, "data.pkl");
    // A tensor whose view runs past its storage.
    let pkl = b"\x80\x02}X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x06tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89ccollections\nOrderedDict\n)RtRs.";
    let short = write(
        d.path(),
        "short.pt",
        &zip(&[("archive/data.pkl", pkl), ("archive/data/0", &[0u8; 20])]),
    );
    assert_names_file(
        &TensorFile::open(&short).unwrap_err(),
        &short,
        "storage has 20",
    );
    let missing = write(d.path(), "missing.pt", &zip(&[("archive/data.pkl", pkl)]));
    assert_names_file(
        &TensorFile::open(&missing).unwrap_err(),
        &missing,
        "archive/data/0 is missing",
    );
    let good = write(
        d.path(),
        "good.pt",
        &zip(&[("archive/data.pkl", pkl), ("archive/data/0", &[0u8; 24])]),
    );
    let f = TensorFile::open(&good).unwrap();
    assert_eq!(f.get("w").unwrap().shape, vec![2, 3]);
    assert_eq!(f.stats("w").unwrap().zeros, 6);
    assert_names_file(
        &OptimizerState::read(&good).unwrap_err(),
        &good,
        "no optimizer state dict",
    );
}

#[test]
fn hostile_pickle_in_a_checkpoint_is_never_executed() {
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("pwned");
    let cmd = format!("touch {}", marker.display());
    let mut pkl = b"\x80\x02}X\x04\x00\x00\x00evilcos\nsystem\nX".to_vec();
    pkl.extend_from_slice(&(cmd.len() as u32).to_le_bytes());
    pkl.extend_from_slice(cmd.as_bytes());
    pkl.extend_from_slice(
        b"\x85RsX\x04\x00\x00\x00evalcbuiltins\neval\nX\x0a\x00\x00\x00__import__\x85Rs.",
    );
    let p = write(d.path(), "hostile.pt", &zip(&[("x/data.pkl", &pkl)]));
    let v = read_pickled_dict(&p).unwrap();
    match mltriage_probes::tensors::lookup(&v, "evil") {
        Some(Value::Object { class, args, .. }) => {
            assert_eq!(class, &("os".to_string(), "system".to_string()));
            assert_eq!(args, &vec![Value::Str(cmd.clone())]);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        mltriage_probes::tensors::lookup(&v, "eval"),
        Some(Value::Object { .. })
    ));
    let f = TensorFile::open(&p).unwrap();
    assert!(f.tensors().is_empty());
    assert!(!marker.exists(), "the pickle ran a command");
    let _ = std::io::stdout().flush();
}

#[test]
fn streamed_stats_match_the_mapped_pass() {
    let d = tempfile::tempdir().unwrap();
    // bf16 (table path) 1.5 M elements, f32 (lane path) 400 K elements, with a NaN and an inf.
    let nb = 1_500_000usize;
    let nf = 400_000usize;
    let mut seed = 7u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.4) * 0.2
    };
    let mut data = Vec::new();
    for i in 0..nb {
        let x = if i == 77 { f32::NAN } else { rnd() };
        data.extend_from_slice(&((x.to_bits() >> 16) as u16).to_le_bytes());
    }
    for i in 0..nf {
        let x = if i == 5 { f32::INFINITY } else { rnd() };
        data.extend_from_slice(&x.to_le_bytes());
    }
    let h = format!(
        r#"{{"b":{{"dtype":"BF16","shape":[{nb}],"data_offsets":[0,{}]}},"f":{{"dtype":"F32","shape":[{nf}],"data_offsets":[{},{}]}}}}"#,
        2 * nb,
        2 * nb,
        2 * nb + 4 * nf
    );
    let p = write(d.path(), "big.safetensors", &safetensors(&h, &data));
    let f = TensorFile::open(&p).unwrap();
    for name in ["b", "f"] {
        let dt = f.get(name).unwrap().dtype;
        let streamed = f.stats(name).unwrap();
        let mapped = f
            .with_bytes(name, |b| mltriage_probes::tensors::tensor_stats(b, dt))
            .unwrap();
        assert_eq!(
            (
                streamed.count,
                streamed.finite,
                streamed.nan,
                streamed.inf,
                streamed.zeros
            ),
            (
                mapped.count,
                mapped.finite,
                mapped.nan,
                mapped.inf,
                mapped.zeros
            )
        );
        assert_eq!((streamed.min, streamed.max), (mapped.min, mapped.max));
        // Chunk boundaries differ between the two passes: f32 block sums round differently.
        assert!((streamed.mean - mapped.mean).abs() <= 1e-6 * mapped.std);
        assert!((streamed.std - mapped.std).abs() <= 1e-6 * mapped.std);
        assert_eq!(streamed.hist, mapped.hist);
    }
    assert_eq!(f.stats("b").unwrap().nan, 1);
    assert_eq!(f.stats("f").unwrap().inf, 1);
}

#[test]
fn lightning_checkpoint_is_unwrapped_and_optimizer_tensors_left_out() {
    let d = tempfile::tempdir().unwrap();
    // {'epoch': 3, 'state_dict': {'model.w': T(storage 0)}, 'optimizer_states': [{'state': {0: {'exp_avg': T(storage 1)}}, 'param_groups': []}]}
    let tensor = |key: u8| -> Vec<u8> {
        let mut t = b"ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00".to_vec();
        t.push(key);
        t.extend_from_slice(b"X\x03\x00\x00\x00cpuK\x04tQK\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtR");
        t
    };
    let mut pkl = b"\x80\x02}(X\x05\x00\x00\x00epochK\x03X\x0a\x00\x00\x00state_dict}X\x07\x00\x00\x00model.w".to_vec();
    pkl.extend(tensor(b'0'));
    pkl.extend_from_slice(b"sX\x10\x00\x00\x00optimizer_states](}(X\x05\x00\x00\x00state}K\x00}X\x07\x00\x00\x00exp_avg");
    pkl.extend(tensor(b'1'));
    pkl.extend_from_slice(b"ssX\x0c\x00\x00\x00param_groups]ueu.");
    let four: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let p = write(
        d.path(),
        "last.ckpt",
        &zip(&[
            ("last/data.pkl", &pkl),
            ("last/data/0", &four),
            ("last/data/1", &four),
        ]),
    );
    let f = TensorFile::open(&p).unwrap();
    let names: Vec<&str> = f.tensors().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["model.w"]);
    assert_eq!(f.wrapper(), Some("state_dict"));
    assert_eq!(
        f.to_f64_vec("model.w", 4).unwrap(),
        vec![1.0, 2.0, 3.0, 4.0]
    );
    let o = OptimizerState::read(&p).unwrap();
    assert_eq!(o.state[&0].exp_avg.as_ref().unwrap().shape, vec![4]);
    assert!(
        (o.l2_norm(o.state[&0].exp_avg.as_ref().unwrap()).unwrap() - 30f64.sqrt()).abs() < 1e-12
    );
}

#[test]
fn mutated_checkpoints_never_panic() {
    let d = tempfile::tempdir().unwrap();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures/");
    let sources = [
        "lm_no_decay_split/checkpoint-300/optimizer.pt",
        "lm_no_decay_split/checkpoint-0/pytorch_model.bin",
        "hf_healthy/checkpoint-300/training_args.bin",
        "lm_bad_init/checkpoint-0/model.safetensors",
    ];
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (si, src) in sources.iter().enumerate() {
        let orig = std::fs::read(format!("{root}{src}")).unwrap();
        // Mutate the front (zip local header + data.pkl, or the safetensors header).
        let span = orig.len().min(8192);
        for round in 0..150 {
            let mut b = orig.clone();
            for _ in 0..(1 + next() % 4) {
                let at = (next() as usize) % span;
                b[at] = next() as u8;
            }
            if round % 10 == 0 {
                b.truncate((next() as usize) % orig.len());
            }
            let ext = std::path::Path::new(src)
                .extension()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let p = write(d.path(), &format!("m{si}_{round}.{ext}"), &b);
            if let Ok(f) = TensorFile::open(&p) {
                for t in f.tensors() {
                    let _ = f.stats(&t.name);
                    let _ = f.to_f64_vec(&t.name, 1 << 20);
                }
            }
            let _ = OptimizerState::read(&p);
            let _ = read_pickled_dict(&p);
        }
    }
}
