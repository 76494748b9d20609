//! Writes the demo run the README walks through: a small custom LM loop whose weights were
//! initialised 50× too large (std 1.0 instead of 0.02), as a trainer would leave it on disk —
//! TensorBoard scalars, an init and a final checkpoint (safetensors), a config and a batch.
//!
//!     cargo run --example make_demo_run -- [OUT_DIR]      (default: assets/demo-run)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mltriage_probes::metrics::tfevents::encode::{file_version_event, record, scalar_event, Style};

/// Deterministic generator (no dependency): xorshift64* with Box–Muller normals.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64) / ((1u64 << 53) as f64)
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.next().max(1e-12), self.next());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

fn write_safetensors(
    path: &Path,
    tensors: &[(String, &str, Vec<usize>, Vec<u8>)],
) -> std::io::Result<()> {
    let mut header = BTreeMap::new();
    let mut offset = 0usize;
    for (name, dtype, shape, bytes) in tensors {
        header.insert(name.clone(), serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + bytes.len()]}));
        offset += bytes.len();
    }
    let mut h = serde_json::to_string(&header).expect("json");
    while h.len() % 8 != 0 {
        h.push(' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(h.as_bytes());
    for (_, _, _, b) in tensors {
        out.extend_from_slice(b);
    }
    std::fs::write(path, out)
}

fn f32_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect()
}

fn model(rng: &mut Rng, std: f64, drift: f64) -> Vec<(String, &'static str, Vec<usize>, Vec<u8>)> {
    let (vocab, d, layers) = (1000usize, 64usize, 2usize);
    let mut t = Vec::new();
    let mat = |name: String, r: usize, c: usize, s: f64, rng: &mut Rng| {
        let v: Vec<f64> = (0..r * c)
            .map(|_| rng.normal() * s * (1.0 - drift))
            .collect();
        (name, "F32", vec![r, c], f32_bytes(&v))
    };
    t.push(mat("embed.weight".into(), vocab, d, std, rng));
    for l in 0..layers {
        t.push(mat(
            format!("layers.{l}.attn.qkv.weight"),
            3 * d,
            d,
            std,
            rng,
        ));
        t.push(mat(format!("layers.{l}.attn.out.weight"), d, d, std, rng));
        t.push(mat(format!("layers.{l}.mlp.up.weight"), 4 * d, d, std, rng));
        t.push(mat(
            format!("layers.{l}.mlp.down.weight"),
            d,
            4 * d,
            std,
            rng,
        ));
        for n in ["ln1", "ln2"] {
            let g: Vec<f64> = (0..d).map(|_| 1.0 + drift * 0.05 * rng.normal()).collect();
            let b: Vec<f64> = (0..d).map(|_| drift * 0.01 * rng.normal()).collect();
            t.push((
                format!("layers.{l}.{n}.weight"),
                "F32",
                vec![d],
                f32_bytes(&g),
            ));
            t.push((
                format!("layers.{l}.{n}.bias"),
                "F32",
                vec![d],
                f32_bytes(&b),
            ));
        }
    }
    t
}

fn main() -> std::io::Result<()> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("assets/demo-run"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("runs"))?;
    let mut rng = Rng(0x9E3779B97F4A7C15);
    // Metrics: 300 steps, warmup 30 + cosine to 0, lr_max 1e-3; loss starts near 31 (ln 1000 = 6.9).
    let mut ev = Vec::new();
    record(&mut ev, &file_version_event(1.8e9));
    for step in 1..=300i64 {
        let t = step as f64;
        let lr = if t <= 30.0 {
            1e-3 * t / 30.0
        } else {
            1e-3 * 0.5 * (1.0 + (std::f64::consts::PI * (t - 30.0) / 270.0).cos())
        };
        let loss = 12.0 + 19.0 * (-t / 90.0).exp() + 0.4 * rng.normal();
        let gn = 8.0 + 80.0 * (-t / 60.0).exp() * (1.0 + 0.3 * rng.normal()).abs();
        let wall = 1.8e9 + t * 0.05;
        for (tag, v) in [
            ("train/loss", loss),
            ("train/grad_norm", gn),
            ("train/learning_rate", lr),
        ] {
            record(
                &mut ev,
                &scalar_event(step, wall, tag.as_bytes(), v, Style::SimpleValue),
            );
        }
        if step % 50 == 0 {
            record(
                &mut ev,
                &scalar_event(step, wall, b"eval/loss", loss - 0.3, Style::SimpleValue),
            );
        }
    }
    std::fs::write(out.join("runs/events.out.tfevents.1800000000.demo.1.0"), ev)?;
    for (step, drift) in [(0u64, 0.0), (300, 0.45)] {
        let dir = out.join(format!("checkpoint-{step}"));
        std::fs::create_dir_all(&dir)?;
        let mut r = Rng(0x1234_5678 + step);
        write_safetensors(&dir.join("model.safetensors"), &model(&mut r, 1.0, drift))?;
    }
    std::fs::write(
        out.join("config.json"),
        serde_json::to_string_pretty(
            &serde_json::json!({"model_type": "demo-lm", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2, "max_position_embeddings": 256, "pad_token_id": 0, "eos_token_id": 1}),
        )?,
    )?;
    let ids: Vec<i64> = (0..8 * 64)
        .map(|_| 2 + (rng.next() * 997.0) as i64)
        .collect();
    let ib: Vec<u8> = ids.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mask: Vec<u8> = (0..8 * 64).flat_map(|_| 1i64.to_le_bytes()).collect();
    write_safetensors(
        &out.join("batch.safetensors"),
        &[
            ("attention_mask".into(), "I64", vec![8, 64], mask),
            ("input_ids".into(), "I64", vec![8, 64], ib.clone()),
            ("labels".into(), "I64", vec![8, 64], ib),
        ],
    )?;
    println!("demo run written to {}", out.display());
    Ok(())
}
