//! Writes a large synthetic training run for the end-to-end benchmarks: `checkpoint-0` (an
//! init: N(0, 0.02)-like bf16 weights, norm gains at 1) and `checkpoint-100` (the same weights
//! moved by about 1% of their norm), each a Llama-shaped `model.safetensors` of about `GIB`
//! GiB — or `SHARDS` shard files with a `model.safetensors.index.json`.
//!
//!     cargo run --release -p mltriage-probes --example make_big_run -- OUT_DIR [GIB] [SHARDS]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

const D: usize = 2048;
const FF: usize = 5504;
const VOCAB: usize = 32000;

fn tensors(layers: usize) -> Vec<(String, Vec<usize>)> {
    let mut v = vec![("model.embed_tokens.weight".to_string(), vec![VOCAB, D])];
    for l in 0..layers {
        let p = format!("model.layers.{l}");
        for m in ["q_proj", "k_proj", "v_proj", "o_proj"] {
            v.push((format!("{p}.self_attn.{m}.weight"), vec![D, D]));
        }
        v.push((format!("{p}.mlp.gate_proj.weight"), vec![FF, D]));
        v.push((format!("{p}.mlp.up_proj.weight"), vec![FF, D]));
        v.push((format!("{p}.mlp.down_proj.weight"), vec![D, FF]));
        v.push((format!("{p}.input_layernorm.weight"), vec![D]));
        v.push((format!("{p}.post_attention_layernorm.weight"), vec![D]));
    }
    v.push(("model.norm.weight".to_string(), vec![D]));
    v.push(("lm_head.weight".to_string(), vec![VOCAB, D]));
    v
}

fn bf16(x: f32) -> [u8; 2] {
    // round to nearest even
    let b = x.to_bits();
    let r = b.wrapping_add(0x7fff + ((b >> 16) & 1));
    ((r >> 16) as u16).to_le_bytes()
}

struct Rng(u64);
impl Rng {
    /// Roughly normal with std 1 (sum of four uniforms, scaled).
    fn normal(&mut self) -> f32 {
        let mut s = 0f32;
        for _ in 0..2 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            s += (self.0 >> 40) as f32 / (1u64 << 24) as f32;
            s += (self.0 & 0xff_ffff) as f32 / (1u64 << 24) as f32;
        }
        (s - 2.0) * 1.732
    }
}

fn header(list: &[&(String, Vec<usize>)]) -> Vec<u8> {
    let mut h = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    let mut off = 0usize;
    for (name, shape) in list {
        let n: usize = shape.iter().product::<usize>() * 2;
        h.push_str(&format!(
            ",\"{name}\":{{\"dtype\":\"BF16\",\"shape\":{shape:?},\"data_offsets\":[{off},{}]}}",
            off + n
        ));
        off += n;
    }
    h.push('}');
    while h.len() % 8 != 0 {
        h.push(' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(h.as_bytes());
    out
}

fn write_pair(files: [&Path; 2], list: &[&(String, Vec<usize>)], seed: u64) -> std::io::Result<()> {
    let h = header(list);
    let mut w: Vec<_> = files
        .iter()
        .map(|p| std::fs::File::create(p).map(|f| std::io::BufWriter::with_capacity(4 << 20, f)))
        .collect::<Result<_, _>>()?;
    for f in w.iter_mut() {
        f.write_all(&h)?;
    }
    let mut rng = Rng(seed | 1);
    let (mut a, mut b) = (Vec::with_capacity(2 << 20), Vec::with_capacity(2 << 20));
    for (name, shape) in list {
        let n: usize = shape.iter().product();
        let norm = shape.len() == 1;
        for i in 0..n {
            let (x0, x1) = if norm {
                (1.0, 1.0 + 0.01 * rng.normal())
            } else {
                let x = 0.02 * rng.normal();
                (x, x + 0.0002 * rng.normal())
            };
            a.extend_from_slice(&bf16(x0));
            b.extend_from_slice(&bf16(x1));
            if a.len() >= 2 << 20 || i + 1 == n {
                w[0].write_all(&a)?;
                w[1].write_all(&b)?;
                a.clear();
                b.clear();
            }
        }
        let _ = name;
    }
    for f in w.iter_mut() {
        f.flush()?;
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(
        args.next()
            .unwrap_or_else(|| "/tmp/mltriage-big-run".into()),
    );
    let gib: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let shards: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let per_layer = (4 * D * D + 3 * FF * D) * 2;
    let fixed = 2 * VOCAB * D * 2;
    let layers = (((gib * (1u64 << 30) as f64) - fixed as f64) / per_layer as f64)
        .ceil()
        .max(1.0) as usize;
    let all = tensors(layers);
    let dirs = [out.join("checkpoint-0"), out.join("checkpoint-100")];
    for d in &dirs {
        std::fs::create_dir_all(d)?;
        std::fs::write(
            d.join("config.json"),
            format!("{{\"model_type\":\"llama\",\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":{D},\"intermediate_size\":{FF},\"num_hidden_layers\":{layers},\"vocab_size\":{VOCAB},\"tie_word_embeddings\":false}}\n"),
        )?;
    }
    if shards == 1 {
        let list: Vec<&(String, Vec<usize>)> = all.iter().collect();
        let files = [
            dirs[0].join("model.safetensors"),
            dirs[1].join("model.safetensors"),
        ];
        write_pair([&files[0], &files[1]], &list, 0x9e37_79b9)?;
    } else {
        let per = all.len().div_ceil(shards);
        let mut map = BTreeMap::new();
        for (s, list) in all.chunks(per).enumerate() {
            let name = format!("model-{:05}-of-{:05}.safetensors", s + 1, shards);
            for (t, _) in list {
                map.insert(t.clone(), name.clone());
            }
            let list: Vec<&(String, Vec<usize>)> = list.iter().collect();
            write_pair(
                [&dirs[0].join(&name), &dirs[1].join(&name)],
                &list,
                0x9e37_79b9 + s as u64,
            )?;
        }
        let index = serde_json::json!({"metadata": {}, "weight_map": map});
        for d in &dirs {
            std::fs::write(d.join("model.safetensors.index.json"), index.to_string())?;
        }
    }
    let size: u64 = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "{} {} layers, {:.2} GB in two checkpoints",
        out.display(),
        layers,
        size as f64 / 1e9
    );
    Ok(())
}
