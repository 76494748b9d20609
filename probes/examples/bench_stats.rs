//! Benchmark of the fused tensor-statistics pass (DESIGN.md §6): page-cached `cat` read rate
//! vs `TensorFile::stats` over every tensor of the same file, plus peak RSS.
//!
//! cargo run --release -p mltriage-probes --example bench_stats -- [FILE] [--dtype bf16|f32] [--gib N]
//!
//! Without FILE a ~1.5 GiB synthetic safetensors file is generated (once) in the temp dir.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use mltriage_probes::tensors::{tensor_stats, TensorFile};

fn status_kib(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn generate(path: &Path, dtype: &str, gib: f64) -> std::io::Result<()> {
    let (rows, cols) = (4096usize, 8192usize);
    let es = if dtype == "f32" { 4 } else { 2 };
    let per = rows * cols * es;
    let n = ((gib * (1u64 << 30) as f64) / per as f64).round().max(1.0) as usize;
    let mut header = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    for i in 0..n {
        header.push_str(&format!(
            ",\"layers.{i}.weight\":{{\"dtype\":\"{}\",\"shape\":[{rows},{cols}],\"data_offsets\":[{},{}]}}",
            dtype.to_uppercase(),
            i * per,
            (i + 1) * per
        ));
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let tmp = path.with_extension("partial");
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
    f.write_all(&(header.len() as u64).to_le_bytes())?;
    f.write_all(header.as_bytes())?;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; 1 << 20];
    for _ in 0..(n * per) / buf.len() {
        for c in buf.chunks_exact_mut(es) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // roughly normal: sum of two uniforms, scaled like an init (std ≈ 0.02)
            let u = ((seed >> 40) as f32 / (1u64 << 24) as f32)
                + ((seed & 0xff_ffff) as f32 / (1u64 << 24) as f32)
                - 1.0;
            let x = u * 0.05;
            if es == 4 {
                c.copy_from_slice(&x.to_le_bytes());
            } else {
                c.copy_from_slice(&((x.to_bits() >> 16) as u16).to_le_bytes());
            }
        }
        f.write_all(&buf)?;
    }
    f.flush()?;
    drop(f);
    std::fs::rename(tmp, path)
}

fn time_cat(path: &Path) -> f64 {
    let t = Instant::now();
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("cat '{}' > /dev/null", path.display()))
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "cat failed");
    t.elapsed().as_secs_f64()
}

fn main() {
    let mut file: Option<PathBuf> = None;
    let mut dtype = "bf16".to_string();
    let mut gib = 1.5f64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--dtype" => dtype = args.next().unwrap_or_default().to_lowercase(),
            "--gib" => gib = args.next().and_then(|g| g.parse().ok()).unwrap_or(gib),
            "--bench" => {}
            other => file = Some(PathBuf::from(other)),
        }
    }
    let path = match file {
        Some(p) => p,
        None => {
            let p = std::env::temp_dir().join(format!("mltriage_bench_{dtype}_{gib}g.safetensors"));
            if !p.exists() {
                eprintln!("generating {} …", p.display());
                generate(&p, &dtype, gib).expect("generate benchmark file");
            }
            p
        }
    };
    let size = std::fs::metadata(&path).expect("stat").len() as f64;
    let rss_before = status_kib("VmHWM:");
    time_cat(&path); // warm the page cache
    let cat = (0..3)
        .map(|_| time_cat(&path))
        .fold(f64::INFINITY, f64::min);

    let mut best = f64::INFINITY;
    let mut largest = 0usize;
    let mut checksum = 0f64;
    let mut ntensors = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let f = TensorFile::open(&path).expect("open");
        for info in f.tensors() {
            let s = f.stats(&info.name).expect("stats");
            checksum += s.std + s.absmax;
            largest = largest.max(info.nbytes());
        }
        ntensors = f.tensors().len();
        best = best.min(t.elapsed().as_secs_f64());
    }
    let hwm_after_stream = status_kib("VmHWM:");
    // The same pass over the memory map (page faults included), for comparison.
    let mut best_map = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        let f = TensorFile::open(&path).expect("open");
        for info in f.tensors() {
            let s = f
                .with_bytes(&info.name, |b| tensor_stats(b, info.dtype))
                .expect("bytes");
            checksum -= s.std + s.absmax;
        }
        best_map = best_map.min(t.elapsed().as_secs_f64());
    }
    let gb = size / 1e9;
    let hwm = status_kib("VmHWM:");
    println!(
        "file            {} ({:.2} GB, {ntensors} tensors, largest {:.1} MB)",
        path.display(),
        gb,
        largest as f64 / 1e6
    );
    println!("threads         {}", rayon::current_num_threads());
    println!("cat             {:.3} s  {:.2} GB/s", cat, gb / cat);
    println!(
        "stats (fused)   {:.3} s  {:.2} GB/s  = {:.0}% of cat",
        best,
        gb / best,
        100.0 * cat / best
    );
    println!(
        "stats (mmap)    {:.3} s  {:.2} GB/s  = {:.0}% of cat",
        best_map,
        gb / best_map,
        100.0 * cat / best_map
    );
    println!(
        "peak RSS        {:.1} MB after the streamed sweeps, {:.1} MB after the mapped ones (VmHWM; {:.1} MB before; 2x largest tensor = {:.1} MB)",
        hwm_after_stream as f64 / 1024.0,
        hwm as f64 / 1024.0,
        rss_before as f64 / 1024.0,
        2.0 * largest as f64 / 1e6
    );
    println!(
        "checksum        {:.6} (streamed and mapped passes cancel: should be 0)",
        checksum
    );
}
