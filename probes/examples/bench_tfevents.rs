//! Benchmark: TensorBoard scalar parsing. Writes an event file shaped like PyTorch
//! SummaryWriter output (default 775k scalars ≈ 42 MB, the tbparse anchor of DESIGN.md §6),
//! then times our reader on it (page-cached, best of 3) and reports peak RSS.
//!
//!     cargo run --release -p mltriage-probes --example bench_tfevents -- OUT_FILE [SCALARS]

use std::path::PathBuf;
use std::time::Instant;

use mltriage_probes::metrics::tfevents::{self, encode};

use mltriage_probes::probes::util::peak_rss_mb as vm_hwm_mb;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "/tmp/events.out.tfevents.bench".into()),
    );
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(775_000);
    if std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0) == 0 {
        let tags: [&[u8]; 5] = [
            b"train/loss",
            b"train/grad_norm",
            b"train/learning_rate",
            b"train/epoch",
            b"eval/loss",
        ];
        let mut w = std::io::BufWriter::new(std::fs::File::create(&out)?);
        let mut buf = Vec::new();
        encode::record(&mut buf, &encode::file_version_event(1.7e9));
        let (mut written, mut step) = (0u64, 0i64);
        while written < n {
            step += 1;
            for t in tags {
                if written >= n {
                    break;
                }
                encode::record(
                    &mut buf,
                    &encode::scalar_event(
                        step,
                        1.7e9 + step as f64 * 0.05,
                        t,
                        1.0 / step as f64,
                        encode::Style::SimpleValue,
                    ),
                );
                written += 1;
            }
            if buf.len() > 1 << 20 {
                std::io::Write::write_all(&mut w, &buf)?;
                buf.clear();
            }
        }
        std::io::Write::write_all(&mut w, &buf)?;
    }
    let bytes = std::fs::metadata(&out)?.len() as f64;
    let _ = tfevents::read(&out); // page cache
    let mut best = f64::INFINITY;
    let mut scalars = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let s = tfevents::read(&out).map_err(|e| std::io::Error::other(e.to_string()))?;
        best = best.min(t.elapsed().as_secs_f64());
        scalars = s.iter().map(|x| x.len()).sum::<usize>();
    }
    println!("tfevents_file {} {:.1} MB", out.display(), bytes / 1e6);
    println!(
        "tfevents_ours_s {best:.4} ({scalars} scalars, {:.0} MB/s, {:.2} M scalars/s)",
        bytes / 1e6 / best,
        scalars as f64 / best / 1e6
    );
    println!("tfevents_peak_rss_mb {:.1}", vm_hwm_mb());
    Ok(())
}
