//! The pass against the per-tensor computations it replaces ([`TensorFile::stats`],
//! [`TensorFile::compare`]) and against known answers, on synthetic files and the fixtures.

use super::*;
use crate::tensors::{diff_stats, tensor_stats, DType};
use std::io::Write;
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/fixtures");

fn xorshift(seed: &mut u64) -> f32 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    ((*seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
}

/// Encodes f32 values as `dt` (F32, BF16, F16, I64, BOOL).
fn encode(v: &[f32], dt: DType) -> Vec<u8> {
    match dt {
        DType::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::BF16 => v
            .iter()
            .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
            .collect(),
        DType::F16 => v
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_bits().to_le_bytes())
            .collect(),
        DType::I64 => v
            .iter()
            .flat_map(|x| ((x * 1000.0) as i64).to_le_bytes())
            .collect(),
        DType::Bool => v.iter().map(|x| (*x > 0.0) as u8).collect(),
        _ => unreachable!(),
    }
}

/// Writes a safetensors file of (name, dtype, shape, bytes).
fn write_safetensors(path: &Path, tensors: &[(&str, DType, Vec<usize>, Vec<u8>)]) {
    let mut header = serde_json::Map::new();
    let mut off = 0usize;
    for (name, dt, shape, bytes) in tensors {
        header.insert(
            name.to_string(),
            serde_json::json!({"dtype": dt.name(), "shape": shape, "data_offsets": [off, off + bytes.len()]}),
        );
        off += bytes.len();
    }
    let h = serde_json::to_vec(&header).unwrap();
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&(h.len() as u64).to_le_bytes()).unwrap();
    f.write_all(&h).unwrap();
    for (_, _, _, b) in tensors {
        f.write_all(b).unwrap();
    }
}

fn values(n: usize, seed: u64, shift: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n).map(|_| xorshift(&mut s) + shift).collect()
}

/// A file with tensors of every path through the engine: a bf16 tensor spanning several
/// parts (table counting), an f32 one spanning blocks, small f16/i64/bool ones, an empty one,
/// and non-finite values.
fn synthetic(dir: &Path, name: &str, seed: u64, drift: f32) -> PathBuf {
    let big = 5 * (8 << 20) / 2 + 12_345; // five-and-a-bit 8 MiB parts of bf16
    let mut a = values(big, seed, 0.0);
    a[3] = f32::NAN;
    a[big - 2] = f32::INFINITY;
    a[77] = 0.0;
    let b: Vec<f32> = values(300_001, seed + 1, 1.0)
        .iter()
        .map(|x| x + drift)
        .collect();
    let p = dir.join(name);
    write_safetensors(
        &p,
        &[
            (
                "big.weight",
                DType::BF16,
                vec![big],
                encode(&a, DType::BF16),
            ),
            (
                "mid.weight",
                DType::F32,
                vec![1, 300_001],
                encode(&b, DType::F32),
            ),
            (
                "small.weight",
                DType::F16,
                vec![7, 3],
                encode(&values(21, seed + 2, 0.0), DType::F16),
            ),
            (
                "steps",
                DType::I64,
                vec![5],
                encode(&values(5, seed + 3, 0.0), DType::I64),
            ),
            (
                "mask",
                DType::Bool,
                vec![9],
                encode(&values(9, seed + 4, 0.0), DType::Bool),
            ),
            ("empty", DType::F32, vec![0, 4], vec![]),
        ],
    );
    p
}

fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

fn assert_stats_eq(p: &TensorStats, q: &TensorStats, what: &str) {
    assert_eq!(
        (p.count, p.finite, p.nan, p.inf, p.zeros),
        (q.count, q.finite, q.nan, q.inf, q.zeros),
        "{what}"
    );
    for (x, y, f) in [
        (p.min, q.min, "min"),
        (p.max, q.max, "max"),
        (p.absmax, q.absmax, "absmax"),
    ] {
        assert!(close(x, y), "{what} {f}: {x} vs {y}");
    }
    // Moments of wide dtypes are summed in f32 lanes per block: cut into other blocks, they
    // round differently in the last bits (relative to the spread).
    let scale = q.mean.abs() + q.std;
    for (x, y, f) in [
        (p.mean, q.mean, "mean"),
        (p.std, q.std, "std"),
        (p.l2, q.l2, "l2"),
    ] {
        let tol = 1e-6 * if f == "l2" { y.abs() } else { scale };
        assert!(
            (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol.max(1e-300),
            "{what} {f}: {x} vs {y}"
        );
    }
    assert_eq!(p.hist, q.hist, "{what} histogram");
}

fn assert_diff_eq(p: &DiffStats, q: &DiffStats, what: &str) {
    assert_eq!(
        (p.count, p.nonfinite, p.identical_bytes),
        (q.count, q.nonfinite, q.identical_bytes),
        "{what}"
    );
    // The pass sums bf16/f16/f32 differences in f32 lanes, the reference in f64.
    for (x, y, f) in [
        (p.norm_a, q.norm_a, "norm_a"),
        (p.norm_b, q.norm_b, "norm_b"),
        (p.norm_diff, q.norm_diff, "norm_diff"),
        (p.dot, q.dot, "dot"),
        (p.max_abs_diff, q.max_abs_diff, "max_abs_diff"),
    ] {
        assert!(
            (x - y).abs() <= 1e-5 * x.abs().max(y.abs()).max(1e-30),
            "{what} {f}: {x} vs {y}"
        );
    }
}

#[test]
fn pass_statistics_equal_the_per_tensor_pass_for_every_dtype_and_size() {
    let dir = tempfile::tempdir().unwrap();
    let p = synthetic(dir.path(), "a.safetensors", 1, 0.0);
    let tf = TensorFile::open(&p).unwrap();
    let mut pass = Pass::new();
    pass.all_stats(&tf);
    assert_eq!(
        pass.bytes(),
        tf.tensors().iter().map(|t| t.nbytes() as u64).sum::<u64>()
    );
    pass.run();
    for t in tf.tensors() {
        let ours = stats(&tf, &t.name).unwrap();
        let old = tf.stats(&t.name).unwrap();
        let whole = tf
            .with_bytes(&t.name, |b| tensor_stats(b, t.dtype))
            .unwrap();
        assert_stats_eq(&ours, &old, &t.name);
        assert_stats_eq(&ours, &whole, &t.name);
    }
    let big = stats(&tf, "big.weight").unwrap();
    assert_eq!((big.nan, big.inf), (1, 1));
    assert_eq!(stats(&tf, "empty").unwrap().count, 0);
    // Asking again is answered from the cache, and an unknown name is an error naming the file.
    let e = stats(&tf, "nope").unwrap_err().to_string();
    assert!(e.contains("a.safetensors") && e.contains("nope"), "{e}");
}

#[test]
fn pairs_streamed_side_by_side_equal_the_two_tensor_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let pa = synthetic(dir.path(), "a.safetensors", 1, 0.0);
    let pb = synthetic(dir.path(), "b.safetensors", 9, 0.5);
    let pc = synthetic(dir.path(), "c.safetensors", 9, 0.5);
    let (a, b, c) = (
        TensorFile::open(&pa).unwrap(),
        TensorFile::open(&pb).unwrap(),
        TensorFile::open(&pc).unwrap(),
    );
    // A chain a → b → c (as three consecutive checkpoints), stats of the ends.
    let mut pass = Pass::new();
    pass.all_stats(&a).all_stats(&c);
    for t in a.tensors() {
        pass.diff(&a, &t.name, &b, &t.name);
        pass.diff(&b, &t.name, &c, &t.name);
    }
    pass.diff(&a, "big.weight", &b, "mid.weight"); // element counts differ
    pass.run();
    for t in a.tensors() {
        for (x, y) in [(&a, &b), (&b, &c)] {
            let ours = diff(x, &t.name, y, &t.name).unwrap();
            let old = x.compare(&t.name, y, &t.name).unwrap();
            assert_diff_eq(&ours, &old, &t.name);
        }
        // b and c hold the same bytes.
        assert!(diff(&b, &t.name, &c, &t.name).unwrap().identical_bytes);
        assert_stats_eq(
            &stats(&c, &t.name).unwrap(),
            &c.stats(&t.name).unwrap(),
            &t.name,
        );
    }
    assert!(
        !diff(&a, "big.weight", &b, "big.weight")
            .unwrap()
            .identical_bytes
    );
    let e = diff(&a, "big.weight", &b, "mid.weight")
        .unwrap_err()
        .to_string();
    let old = a
        .compare("big.weight", &b, "mid.weight")
        .unwrap_err()
        .to_string();
    assert_eq!(e, old);
}

#[test]
fn known_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (
        dir.path().join("a.safetensors"),
        dir.path().join("b.safetensors"),
    );
    let t = |v: &[f32]| ("w", DType::F32, vec![v.len()], encode(v, DType::F32));
    write_safetensors(&pa, &[t(&[3.0, 4.0, 0.0, f32::NAN])]);
    write_safetensors(&pb, &[t(&[3.0, 0.0, 4.0, 1.0])]);
    let (a, b) = (
        TensorFile::open(&pa).unwrap(),
        TensorFile::open(&pb).unwrap(),
    );
    let mut pass = Pass::new();
    pass.stats(&a, "w").stats(&b, "w").diff(&a, "w", &b, "w");
    pass.run();
    let s = stats(&a, "w").unwrap();
    assert_eq!(
        (s.count, s.finite, s.nan, s.zeros, s.min, s.max),
        (4, 3, 1, 1, 0.0, 4.0)
    );
    assert!((s.mean - 7.0 / 3.0).abs() < 1e-12 && (s.l2 - 5.0).abs() < 1e-12);
    let d = diff(&a, "w", &b, "w").unwrap();
    assert_eq!(
        (
            d.count,
            d.nonfinite,
            d.norm_a,
            d.norm_b,
            d.dot,
            d.max_abs_diff
        ),
        (4, 1, 5.0, 5.0, 9.0, 4.0)
    );
    assert!((d.norm_diff - 32f64.sqrt()).abs() < 1e-12);
    let direct = diff_stats(
        &encode(&[3.0, 4.0, 0.0, f32::NAN], DType::F32),
        DType::F32,
        &encode(&[3.0, 0.0, 4.0, 1.0], DType::F32),
        DType::F32,
    )
    .unwrap();
    assert_eq!(d, direct);
}

#[test]
fn figures_are_cached_by_file_identity() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.safetensors");
    let t = |v: f32| [("w", DType::F32, vec![4], encode(&[v; 4], DType::F32))];
    write_safetensors(&p, &t(1.0));
    let tf = TensorFile::open(&p).unwrap();
    assert_eq!(stats(&tf, "w").unwrap().mean, 1.0);
    // Same size and modification time: the cached figures stand (nothing is read again).
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    write_safetensors(&p, &t(2.0));
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(stats(&tf, "w").unwrap().mean, 1.0);
    // A new modification time: read again.
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(mtime + std::time::Duration::from_secs(1))
        .unwrap();
    assert_eq!(stats(&tf, "w").unwrap().mean, 2.0);
}

#[test]
fn a_file_truncated_while_open_gives_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let p = synthetic(dir.path(), "t.safetensors", 3, 0.0);
    let tf = TensorFile::open(&p).unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(len / 3)
        .unwrap();
    let mut pass = Pass::new();
    pass.all_stats(&tf);
    pass.run();
    let e = stats(&tf, "mid.weight").unwrap_err().to_string();
    assert!(e.starts_with(&p.display().to_string()), "{e}");
    // The part of the first tensor still in the file was read; the rest is an error.
    assert!(stats(&tf, "big.weight").is_err());
}

/// Every tensor file of the shared fixtures (safetensors and torch zips): the pass gives the
/// figures the probes got from `TensorFile::stats`/`compare`, and pairs of checkpoints of a
/// run compare the same.
#[test]
fn fixture_checkpoints_give_the_same_figures_as_before() {
    let root = Path::new(FIXTURES);
    if !root.exists() {
        eprintln!("fixtures not beside the checkout: skipped");
        return;
    }
    let mut seen = 0;
    for run in std::fs::read_dir(root).unwrap().flatten() {
        let mut ckpts: Vec<PathBuf> = Vec::new();
        let mut stack = vec![run.path()];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                if p.is_dir() {
                    stack.push(p);
                } else if n == "model.safetensors"
                    || n == "pytorch_model.bin"
                    || n == "batch.safetensors"
                {
                    ckpts.push(p);
                }
            }
        }
        ckpts.sort();
        let files: Vec<TensorFile> = ckpts
            .iter()
            .filter_map(|p| TensorFile::open(p).ok())
            .collect();
        let mut pass = Pass::new();
        for f in &files {
            pass.all_stats(f);
        }
        for w in files.windows(2) {
            for t in w[1].tensors() {
                if w[0].get(&t.name).is_some() {
                    pass.diff(&w[0], &t.name, &w[1], &t.name);
                }
            }
        }
        pass.run();
        for f in &files {
            for t in f.tensors() {
                let what = format!("{}: {}", f.path().display(), t.name);
                assert_stats_eq(
                    &stats(f, &t.name).unwrap(),
                    &f.stats(&t.name).unwrap(),
                    &what,
                );
                seen += 1;
            }
        }
        for w in files.windows(2) {
            for t in w[1].tensors() {
                if w[0].get(&t.name).is_none() {
                    continue;
                }
                let what = format!(
                    "{} vs {}: {}",
                    w[0].path().display(),
                    w[1].path().display(),
                    t.name
                );
                match (
                    diff(&w[0], &t.name, &w[1], &t.name),
                    w[0].compare(&t.name, &w[1], &t.name),
                ) {
                    (Ok(x), Ok(y)) => assert_diff_eq(&x, &y, &what),
                    (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
                    (x, y) => panic!("{what}: {x:?} vs {y:?}"),
                }
            }
        }
    }
    assert!(seen > 50, "only {seen} fixture tensors");
}

#[test]
fn progress_counts_every_planned_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = synthetic(dir.path(), "p.safetensors", 5, 0.0);
    let tf = TensorFile::open(&p).unwrap();
    let before = progress().snapshot();
    let mut pass = Pass::new();
    pass.all_stats(&tf);
    let planned = pass.bytes();
    pass.run();
    let after = progress().snapshot();
    // Other tests may run passes at the same time: at least this pass's bytes were added.
    assert!(after.bytes_total - before.bytes_total >= planned);
    assert!(after.bytes_done - before.bytes_done >= planned);
    assert!(after.files_done > before.files_done);
}
