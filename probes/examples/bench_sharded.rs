//! Benchmark: statistics over every tensor of a sharded checkpoint, one tensor at a time, and
//! the process's peak RSS against the largest tensor and the checkpoint's total size. Run it
//! under a memory limit smaller than the checkpoint (scripts/benchmarks.sh uses a cgroup) to
//! show it streams.
//!
//!     cargo run --release -p mltriage-probes --example bench_sharded -- OUT_DIR [TOTAL_GIB] [SHARDS]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use mltriage_probes::tensors::TensorFile;

use mltriage_probes::probes::util::peak_rss_mb as vm_hwm_mb;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "/tmp/mltriage-sharded".into()),
    );
    let gib: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let shards: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(6);
    let index = dir.join("model.safetensors.index.json");
    let (rows, cols) = (4096usize, 4096usize); // 32 MiB bf16 tensors
    let per = rows * cols * 2;
    if !index.exists() {
        std::fs::create_dir_all(&dir)?;
        let total = ((gib * (1u64 << 30) as f64) / per as f64).ceil() as usize;
        let per_shard = total.div_ceil(shards);
        let mut weight_map = BTreeMap::new();
        let mut t = 0;
        for s in 0..shards {
            let name = format!("model-{:05}-of-{:05}.safetensors", s + 1, shards);
            let k = per_shard.min(total - t.min(total));
            let mut header = String::from("{");
            for i in 0..k {
                let tn = format!("layers.{}.weight", t + i);
                header.push_str(&format!("{}\"{tn}\":{{\"dtype\":\"BF16\",\"shape\":[{rows},{cols}],\"data_offsets\":[{},{}]}}", if i > 0 { "," } else { "" }, i * per, (i + 1) * per));
                weight_map.insert(tn, name.clone());
            }
            header.push('}');
            while header.len() % 8 != 0 {
                header.push(' ');
            }
            let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join(&name))?);
            f.write_all(&(header.len() as u64).to_le_bytes())?;
            f.write_all(header.as_bytes())?;
            let mut x: u32 = 0x1234_5678 + s as u32;
            let chunk: Vec<u8> = (0..per)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // bf16 with exponent near 1.0: mantissa noise, sign random.
                    if x % 2 == 0 {
                        (x >> 8) as u8
                    } else {
                        0x3f | ((x as u8) & 0x80)
                    }
                })
                .collect();
            for _ in 0..k {
                f.write_all(&chunk)?;
            }
            t += k;
        }
        std::fs::write(
            &index,
            serde_json::to_string(&serde_json::json!({"metadata": {}, "weight_map": weight_map}))?,
        )?;
    }
    let t = Instant::now();
    let tf = TensorFile::open(&index).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut largest = 0usize;
    let mut total = 0usize;
    for info in tf.tensors() {
        let s = tf
            .stats(&info.name)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        std::hint::black_box(s);
        largest = largest.max(info.nbytes());
        total += info.nbytes();
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "sharded_total_gb {:.2} ({} tensors, {} shards)",
        total as f64 / 1e9,
        tf.tensors().len(),
        shards
    );
    println!(
        "sharded_seconds {secs:.2} ({:.2} GB/s)",
        total as f64 / 1e9 / secs
    );
    println!("sharded_largest_tensor_mb {:.1}", largest as f64 / 1e6);
    println!("sharded_peak_rss_mb {:.1}", vm_hwm_mb());
    Ok(())
}
