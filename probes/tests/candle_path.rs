//! The GPU path on `Device::Cpu`: bytes loaded into candle (with the dtype widening) and
//! `stats_on_device` agree with the fused CPU pass on every fixture tensor and on synthetic
//! tensors with known answers, so a CUDA run computes the same statistics.
//!
//! Tolerances: counts (count, finite, NaN, inf, zeros), min, max, absmax and every log-histogram
//! bin are exact. Mean and std are held to an exact reference (a two-pass f64 sum over the
//! values in the test) within `1e-12 × rms`, L2 within `1e-12 × L2`. Against the fused pass the
//! moments agree within `2e-4 × rms` for tensors the fused pass sums in f32 lanes (f32, and
//! f16/bf16 below its table threshold: its f32 lane sums around a shift drift by up to
//! 8.3e-5 × rms, measured on the fixtures' `exp_avg_sq`, whose first value is ten times the
//! mean), and within `1e-12` for the tensors it sums in f64 (f64, ints wider than 16 bits,
//! 1–2-byte types summed from their value table).

use std::path::{Path, PathBuf};

use candle_core::{DType as C, Device, Tensor};
use mltriage_probes::tensors::candle_io::from_bytes;
use mltriage_probes::tensors::{
    stats_on_device, tensor_stats, DType, LogHist, TensorFile, TensorStats,
};

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/fixtures"
    ))
}

/// `bytes` read as `dt`, loaded through candle on the CPU device.
fn load(bytes: &[u8], dt: DType, shape: &[usize]) -> Tensor {
    from_bytes(Path::new("synthetic"), bytes, dt, shape, &Device::Cpu).unwrap()
}

fn same_float(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

/// Mean, std and L2 of the finite values of `t`, two-pass in f64 (the reference). Types of
/// 16 bits or fewer go through f32 (exact; candle's CPU cast of F8E4M3 straight to f64 does
/// not return).
fn reference(t: &Tensor) -> (f64, f64, f64) {
    let wide = matches!(t.dtype(), C::F64 | C::I64 | C::I32 | C::U32);
    let t = if wide {
        t.clone()
    } else {
        t.to_dtype(C::F32).unwrap()
    };
    let v: Vec<f64> = t
        .flatten_all()
        .unwrap()
        .to_dtype(C::F64)
        .unwrap()
        .to_vec1::<f64>()
        .unwrap()
        .into_iter()
        .filter(|x| x.is_finite())
        .collect();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    let l2 = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    (mean, var.sqrt(), l2)
}

fn assert_moments(what: &str, against: &str, d: (f64, f64, f64), e: (f64, f64, f64), rel: f64) {
    // rms² = mean² + std² (hypot: no overflow for huge values).
    let rms = e.0.hypot(e.1);
    for (name, a, x, scale) in [
        ("mean", d.0, e.0, rms),
        ("std", d.1, e.1, rms),
        ("l2", d.2, e.2, e.2),
    ] {
        let tol = rel * scale;
        assert!(
            a == x || (a - x).abs() <= tol,
            "{what}: {name} {a:e} vs {against} {x:e} (|Δ| {:e} > {tol:e})",
            (a - x).abs()
        );
    }
}

/// Asserts the stated agreement of the device statistics `d` of `t` with the fused pass's
/// `c` (moments within `rel`: 2e-4 or 1e-12, see the module note) and with the reference.
fn assert_agree(what: &str, t: &Tensor, d: &TensorStats, c: &TensorStats, rel: f64) {
    assert_eq!(
        (d.count, d.finite, d.nan, d.inf, d.zeros),
        (c.count, c.finite, c.nan, c.inf, c.zeros),
        "{what}: counts (device vs fused)"
    );
    for (name, a, e) in [
        ("min", d.min, c.min),
        ("max", d.max, c.max),
        ("absmax", d.absmax, c.absmax),
    ] {
        assert!(same_float(a, e), "{what}: {name} {a:e} vs fused {e:e}");
    }
    assert_eq!(d.hist, c.hist, "{what}: log histogram");
    if c.finite == 0 {
        for (name, a) in [("mean", d.mean), ("std", d.std)] {
            assert!(a.is_nan(), "{what}: {name} {a} should be NaN");
        }
        assert_eq!(d.l2, 0.0, "{what}: l2 of nothing finite");
        return;
    }
    let dm = (d.mean, d.std, d.l2);
    assert_moments(what, "reference", dm, reference(t), 1e-12);
    assert_moments(what, "fused", dm, (c.mean, c.std, c.l2), rel);
}

/// The tolerance the fused pass earns for a dtype and length (see the module note).
fn rel_for(dt: DType, n: usize) -> f64 {
    let f64_sums = matches!(
        dt,
        DType::F64 | DType::I64 | DType::I32 | DType::U32 | DType::U64
    ) || dt.size() == 1
        || (dt.size() == 2 && n >= 1 << 18);
    if f64_sums {
        1e-12
    } else {
        2e-4
    }
}

fn check(what: &str, bytes: &[u8], dt: DType) -> TensorStats {
    let n = bytes.len() / dt.size();
    let t = load(bytes, dt, &[n]);
    let d = stats_on_device(&t).unwrap();
    let c = tensor_stats(bytes, dt);
    assert_agree(what, &t, &d, &c, rel_for(dt, n));
    d
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A deterministic pseudo-random stream (xorshift), for tensors too long to write out.
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 4.0
        })
        .collect()
}

#[test]
fn known_answers_f32() {
    let v = [0.5f32, -1.5, 0.0, f32::NAN, 2.0, f32::INFINITY, 3.25, -0.0];
    let d = check("small f32", &f32_bytes(&v), DType::F32);
    // Finite: 0.5, -1.5, 0, 2, 3.25, -0 → sum 4.25, n 6.
    assert_eq!((d.count, d.finite, d.nan, d.inf, d.zeros), (8, 6, 1, 1, 2));
    assert!((d.mean - 4.25 / 6.0).abs() < 1e-12);
    let sumsq = 0.25 + 2.25 + 4.0 + 10.5625;
    assert!((d.l2 - f64::sqrt(sumsq)).abs() < 1e-12);
    assert!((d.std - (sumsq / 6.0 - (4.25f64 / 6.0).powi(2)).sqrt()).abs() < 1e-12);
    assert_eq!((d.min, d.max, d.absmax), (-1.5, 3.25, 3.25));
    // Bins: 0.5 → 2^-1, 1.5 → -2^0, 2 → 2^1, 3.25 → 2^1; two zeros.
    let bin = |e: i32| LogHist::bin_of(e);
    assert_eq!(d.hist.zero, 2);
    assert_eq!(d.hist.pos[bin(-1)], 1);
    assert_eq!(d.hist.pos[bin(1)], 2);
    assert_eq!(d.hist.neg[bin(0)], 1);
    assert_eq!(d.hist.total(), 6);
}

#[test]
fn histogram_edges_match_at_powers_of_two_and_clamped_ends() {
    let mut v = Vec::new();
    for e in -45..=45 {
        let p = 2f32.powi(e);
        // At, just below and just above each power of two, both signs.
        for x in [
            p,
            f32::from_bits(p.to_bits() - 1),
            f32::from_bits(p.to_bits() + 1),
        ] {
            v.push(x);
            v.push(-x);
        }
    }
    v.extend([
        f32::MIN_POSITIVE,
        f32::from_bits(1), // smallest subnormal
        -f32::from_bits(0x007f_ffff),
        f32::MAX,
        -f32::MAX,
    ]);
    let d = check("powers of two f32", &f32_bytes(&v), DType::F32);
    // Everything at or below 2^-40 is in the first bin, everything at or above 2^40 in the last.
    let c = tensor_stats(&f32_bytes(&v), DType::F32);
    assert_eq!(d.hist.pos[0], c.hist.pos[0]);
    assert!(d.hist.pos[0] > 10, "clamped low bin: {}", d.hist.pos[0]);
    let f64v: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    check("powers of two f64", &f64_bytes(&f64v), DType::F64);
}

#[test]
fn huge_values_do_not_overflow_the_moments() {
    let v = [f32::MAX, -f32::MAX, f32::MAX, 1.0, f32::MAX / 2.0];
    let d = check("huge f32", &f32_bytes(&v), DType::F32);
    assert!(d.l2.is_finite() && d.l2 > f32::MAX as f64);
    assert!(d.std.is_finite());
    // f64 beyond f32's range stays in f64 on the device (no overflow to inf).
    let w = [
        1e300,
        -1e300,
        3e200,
        0.0,
        1e-300,
        f64::NAN,
        f64::NEG_INFINITY,
    ];
    let d = check("huge f64", &f64_bytes(&w), DType::F64);
    assert_eq!((d.finite, d.max, d.min), (5, 1e300, -1e300));
    // Integers beyond 2^24 keep their value (worked in f64, not f32).
    let ints: Vec<u8> = [i64::MAX / 3, -(1 << 40), 16_777_217, 0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let d = check("big i64", &ints, DType::I64);
    assert_eq!(d.max, (i64::MAX / 3) as f64);
    let i32s: Vec<u8> = [16_777_217i32, -16_777_219, 3]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let d = check("i32 beyond f32 precision", &i32s, DType::I32);
    assert_eq!((d.max, d.min), (16_777_217.0, -16_777_219.0));
}

#[test]
fn empty_and_all_non_finite_tensors() {
    for dt in [DType::F32, DType::BF16, DType::F16, DType::F64] {
        let t = load(&[], dt, &[0]);
        let d = stats_on_device(&t).unwrap();
        let c = tensor_stats(&[], dt);
        assert_agree(&format!("empty {dt}"), &t, &d, &c, 1e-12);
        assert_eq!(d.count, 0);
        // Also a 2-D empty shape.
        let d = stats_on_device(&load(&[], dt, &[3, 0])).unwrap();
        assert_eq!((d.count, d.finite), (0, 0));
    }
    let v = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
    let d = check("all non-finite", &f32_bytes(&v), DType::F32);
    assert_eq!((d.count, d.finite, d.nan, d.inf), (4, 0, 2, 2));
    assert!(d.min.is_nan() && d.max.is_nan() && d.absmax.is_nan());
}

/// Every bf16 / f16 bit pattern (NaNs, infinities, subnormals, both zeros) — below the
/// fused pass's table threshold (f32 lanes) and, repeated five times, above it (value table).
#[test]
fn every_bf16_and_f16_bit_pattern() {
    let all: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
    for dt in [DType::BF16, DType::F16] {
        let d = check(&format!("all {dt} patterns"), &all, dt);
        assert_eq!(d.count, 65536);
        let nan = if dt == DType::BF16 { 2 * 127 } else { 2 * 1023 };
        assert_eq!((d.nan, d.inf, d.zeros), (nan, 2, 2));
        let five = all.repeat(5);
        let d = check(&format!("5 × all {dt} patterns"), &five, dt);
        assert_eq!(d.count, 5 * 65536);
        // The device path loads these as candle's own bf16 / f16 (no widening).
        let t = from_bytes(Path::new("t"), &all, dt, &[65536], &Device::Cpu).unwrap();
        assert_eq!(t.dtype(), dt.candle());
    }
}

#[test]
fn every_one_byte_pattern_and_the_widened_dtypes() {
    let bytes: Vec<u8> = (0..=u8::MAX).collect();
    for dt in [DType::F8E4M3, DType::F8E5M2, DType::I8, DType::U8] {
        check(&format!("all {dt} patterns"), &bytes, dt);
    }
    let bools = [0u8, 1, 1, 0, 1];
    let d = check("bool", &bools, DType::Bool);
    assert_eq!((d.zeros, d.mean), (2, 0.6));
    // Widening: I8 → I16, U16 → U32, U64 → I64, F8E5M2 → F32, Bool → U8.
    let dev = Device::Cpu;
    let p = Path::new("t");
    let t = from_bytes(p, &[0xff, 0x80, 0x7f], DType::I8, &[3], &dev).unwrap();
    assert_eq!(
        (t.dtype(), t.to_vec1::<i16>().unwrap()),
        (C::I16, vec![-1, -128, 127])
    );
    let u16s: Vec<u8> = [0u16, 65535, 300]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let t = from_bytes(p, &u16s, DType::U16, &[3], &dev).unwrap();
    assert_eq!(
        (t.dtype(), t.to_vec1::<u32>().unwrap()),
        (C::U32, vec![0, 65535, 300])
    );
    check("u16", &u16s, DType::U16);
    let u64s: Vec<u8> = [0u64, 1 << 62, 7]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let t = from_bytes(p, &u64s, DType::U64, &[3], &dev).unwrap();
    assert_eq!(
        (t.dtype(), t.to_vec1::<i64>().unwrap()),
        (C::I64, vec![0, 1 << 62, 7])
    );
    check("u64", &u64s, DType::U64);
    let t = from_bytes(p, &[0x3c], DType::F8E5M2, &[1], &dev).unwrap();
    assert_eq!(
        (t.dtype(), t.to_vec1::<f32>().unwrap()),
        (C::F32, vec![1.0])
    );
    assert_eq!(
        from_bytes(p, &bools, DType::Bool, &[5], &dev)
            .unwrap()
            .dtype(),
        C::U8
    );
    // Values candle cannot hold and byte counts that do not fit the shape are errors.
    let e = from_bytes(p, &[0xff; 8], DType::U64, &[1], &dev).unwrap_err();
    assert!(e.to_string().contains("i64::MAX"), "{e}");
    assert!(from_bytes(p, &[0; 6], DType::F32, &[2], &dev).is_err());
}

#[test]
fn long_noisy_tensors_in_every_float_width() {
    let v = noise(300_000, 7);
    check("noise f32", &f32_bytes(&v), DType::F32);
    let b16: Vec<u8> = v
        .iter()
        .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
        .collect();
    check("noise bf16", &b16, DType::BF16);
    let h: Vec<u8> = v
        .iter()
        .flat_map(|&x| half::f16::from_f32(x).to_bits().to_le_bytes())
        .collect();
    check("noise f16", &h, DType::F16);
    // A large offset: the fused pass shifts by its first value; the device centres in f64.
    let off: Vec<f32> = v.iter().map(|x| x * 1e-3 + 1000.0).collect();
    check("offset f32", &f32_bytes(&off), DType::F32);
}

/// Every tensor of every fixture checkpoint (model weights, optimizer moments, batches).
#[test]
fn every_fixture_tensor_agrees_with_the_fused_pass() {
    let mut files = Vec::new();
    let mut stack = vec![fixtures()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("safetensors" | "pt" | "bin" | "pth")
            ) {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut tensors, mut elements) = (0usize, 0u64);
    let mut dtypes = std::collections::BTreeSet::new();
    for path in &files {
        // training_args.bin and the like hold no tensors (or are not tensor files).
        let Ok(tf) = TensorFile::open(path) else {
            continue;
        };
        for info in tf.tensors() {
            let what = format!("{}: {}", path.display(), info.name);
            let c = tf.stats(&info.name).unwrap();
            let t = tf.load(&info.name, &Device::Cpu).unwrap();
            assert_eq!(t.dims(), &info.shape[..], "{what}: shape");
            let d = stats_on_device(&t).unwrap();
            assert_agree(&what, &t, &d, &c, rel_for(info.dtype, info.numel()));
            tensors += 1;
            elements += c.count;
            dtypes.insert(info.dtype);
        }
    }
    assert!(tensors >= 200, "only {tensors} fixture tensors compared");
    assert!(elements > 1_000_000, "only {elements} elements compared");
    assert!(dtypes.contains(&DType::F32), "{dtypes:?}");
}
