//! Times the tensor statistics on a device against the host→device copy that feeds it, and
//! against the fused CPU pass, on synthetic f32 and bf16 tensors (and optionally the largest
//! tensor of a file); checks that the device and the fused pass agree on the counts and bins.
//!
//!     cargo run --release --features cuda -p mltriage-probes --example bench_device_stats -- \
//!         [--device cuda|cpu|cuda:N] [--mib 1024] [--reps 3] [FILE]
//!
//! Prints one `|`-separated row per tensor: dtype, MiB, copy ms and GB/s, device-stats ms and
//! GB/s (of the stored bytes), fused-CPU ms and GB/s. Without a GPU `--device cuda` falls back
//! to CPU and says so (the copy is then a host copy).

use std::path::Path;
use std::time::Instant;

use mltriage_probes::device::{Compute, DeviceRequest};
use mltriage_probes::tensors::candle_io::from_bytes;
use mltriage_probes::tensors::{stats_on_device, tensor_stats, DType, TensorFile};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut ms = Vec::new();
    let mut last = None;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        last = Some(f());
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (median(ms), last.expect("at least one rep"))
}

fn row(label: &str, bytes: &[u8], dt: DType, compute: &Compute, reps: usize) {
    let n = bytes.len() / dt.size();
    let dev = &compute.device;
    let (copy_ms, t) = time(reps, || {
        let t = from_bytes(Path::new(label), bytes, dt, &[n], dev).expect("load");
        dev.synchronize().expect("sync");
        t
    });
    let (dev_ms, d) = time(reps, || stats_on_device(&t).expect("device stats"));
    let (cpu_ms, c) = time(reps, || tensor_stats(bytes, dt));
    let agree = (d.count, d.finite, d.nan, d.inf, d.zeros, &d.hist)
        == (c.count, c.finite, c.nan, c.inf, c.zeros, &c.hist)
        && d.min == c.min
        && d.max == c.max;
    let rel = |a: f64, b: f64| (a - b).abs() / c.rms().max(f64::MIN_POSITIVE);
    let mib = bytes.len() as f64 / (1u64 << 20) as f64;
    let gbs = |ms: f64| bytes.len() as f64 / 1e9 / (ms / 1e3);
    println!(
        "| {label} | {dt} | {mib:.0} | {copy_ms:.1} | {:.2} | {dev_ms:.1} | {:.2} | {cpu_ms:.1} | {:.2} | {} (mean Δ {:.1e}, std Δ {:.1e} × rms) |",
        gbs(copy_ms),
        gbs(dev_ms),
        gbs(cpu_ms),
        if agree { "agree" } else { "DIFFER" },
        rel(d.mean, c.mean),
        rel(d.std, c.std),
    );
    if !agree {
        eprintln!("device: {d:?}\nfused: {c:?}");
        std::process::exit(1);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut device = "cuda".to_string();
    let mut mib = 1024usize;
    let mut reps = 3usize;
    let mut file = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--device" => device = it.next().expect("--device VALUE").clone(),
            "--mib" => mib = it.next().and_then(|v| v.parse().ok()).expect("--mib N"),
            "--reps" => reps = it.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            f => file = Some(f.to_string()),
        }
    }
    let req: DeviceRequest = device.parse().unwrap_or_else(|e| panic!("{e}"));
    let compute = Compute::select(req);
    println!(
        "device: {}{}",
        compute.label,
        compute
            .note
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    );
    println!("| tensor | dtype | MiB | copy ms | copy GB/s | device stats ms | device GB/s | fused CPU ms | CPU GB/s | agreement |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    // Synthetic: a normal-ish spread with a few zeros, NaNs and infinities sprinkled in.
    let n = mib * (1 << 20) / 4;
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let v: Vec<f32> = (0..n)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            match i % 1_000_003 {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => 0.0,
                _ => ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.04,
            }
        })
        .collect();
    let f32b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    row("synthetic", &f32b, DType::F32, &compute, reps);
    drop(f32b);
    let bf16b: Vec<u8> = v
        .iter()
        .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
        .collect();
    drop(v);
    row("synthetic", &bf16b, DType::BF16, &compute, reps);
    drop(bf16b);
    if let Some(f) = file {
        let tf = TensorFile::open(&f).unwrap_or_else(|e| panic!("{e}"));
        let big = tf
            .tensors()
            .iter()
            .max_by_key(|t| t.nbytes())
            .expect("a tensor")
            .clone();
        let bytes = tf
            .with_bytes(&big.name, |b| b.to_vec())
            .unwrap_or_else(|e| panic!("{e}"));
        row(&big.name, &bytes, big.dtype, &compute, reps);
    }
}
