//! Entry points shared by the cargo-fuzz targets (fuzz/) and the regression tests that replay
//! every crashing input they found: each feeds arbitrary bytes to one reader and must return
//! (Ok or a one-line error naming the file) without panicking or allocating without bound.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A scratch file named `name` holding `data` (in /dev/shm when present), removed on drop.
pub struct Scratch {
    dir: PathBuf,
    pub path: PathBuf,
}

impl Scratch {
    pub fn new(name: &str, data: &[u8]) -> std::io::Result<Scratch> {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "mltriage-fuzz-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(name);
        std::fs::write(&path, data)?;
        Ok(Scratch { dir, path })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn check_error(e: &crate::ReadError, path: &Path) {
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
    assert!(
        msg.contains(&*path.to_string_lossy()),
        "error does not name the file: {msg}"
    );
}

/// safetensors header + data, then statistics of every tensor it declares.
pub fn safetensors(data: &[u8]) {
    let Ok(s) = Scratch::new("model.safetensors", data) else {
        return;
    };
    match crate::tensors::TensorFile::open(&s.path) {
        Ok(tf) => {
            for t in tf.tensors().to_vec() {
                if let Err(e) = tf.stats(&t.name) {
                    check_error(&e, &s.path);
                }
            }
        }
        Err(e) => check_error(&e, &s.path),
    }
}

/// A sharded index json naming shards (that mostly do not exist).
pub fn safetensors_index(data: &[u8]) {
    let Ok(s) = Scratch::new("model.safetensors.index.json", data) else {
        return;
    };
    if let Err(e) = crate::tensors::TensorFile::open(&s.path) {
        check_error(&e, &s.path);
    }
}

/// The pickle interpreter on raw bytes (never executes anything).
pub fn pickle(data: &[u8]) {
    let _ = crate::tensors::pickle::parse(data);
}

/// A torch zip checkpoint (zip + data.pkl + storages).
pub fn torch_zip(data: &[u8]) {
    let Ok(s) = Scratch::new("pytorch_model.bin", data) else {
        return;
    };
    match crate::tensors::TensorFile::open(&s.path) {
        Ok(tf) => {
            for t in tf.tensors().to_vec() {
                let _ = tf.stats(&t.name);
            }
        }
        Err(e) => check_error(&e, &s.path),
    }
    let _ = crate::tensors::OptimizerState::read(&s.path);
}

/// A TensorBoard event file.
pub fn tfevents(data: &[u8]) {
    let Ok(s) = Scratch::new("events.out.tfevents.1.host", data) else {
        return;
    };
    if let Err(e) = crate::metrics::read_metrics_file(&s.path) {
        check_error(&e, &s.path);
    }
}

/// trainer_state.json / JSONL / CSV text, chosen by the first byte.
pub fn metrics_text(data: &[u8]) {
    let name = match data.first().copied().unwrap_or(0) % 3 {
        0 => "trainer_state.json",
        1 => "metrics.jsonl",
        _ => "metrics.csv",
    };
    let Ok(s) = Scratch::new(name, data.get(1..).unwrap_or(&[])) else {
        return;
    };
    if let Err(e) = crate::metrics::read_metrics_file(&s.path) {
        check_error(&e, &s.path);
    }
}

/// The field formats, chosen by the first byte: captured stdout (`train.log`), a W&B record
/// file (`run-x.wandb`), an MLflow file-store metric (`mlruns/0/r/metrics/loss`).
pub fn field_logs(data: &[u8]) {
    let body = data.get(1..).unwrap_or(&[]);
    match data.first().copied().unwrap_or(0) % 3 {
        0 => {
            let Ok(s) = Scratch::new("train.log", body) else {
                return;
            };
            if let Err(e) = crate::metrics::read_metrics_file(&s.path) {
                check_error(&e, &s.path);
            }
        }
        1 => {
            let Ok(s) = Scratch::new("run-x.wandb", body) else {
                return;
            };
            if let Err(e) = crate::metrics::read_metrics_file(&s.path) {
                check_error(&e, &s.path);
            }
        }
        _ => {
            let Ok(s) = Scratch::new("meta.yaml", b"run_id: r\n") else {
                return;
            };
            let Some(dir) = s.path.parent() else { return };
            let metric = dir.join("metrics").join("loss");
            if std::fs::create_dir_all(dir.join("metrics")).is_err()
                || std::fs::write(&metric, body).is_err()
            {
                return;
            }
            if let Err(e) = crate::metrics::read_metrics_file(&metric) {
                check_error(&e, &metric);
            }
        }
    }
}

/// A torch.distributed.checkpoint folder: the input is split at a 4-byte little-endian length
/// into `.metadata` and one shard `__0_0.distcp`; every tensor the metadata lists is read.
pub fn dcp(data: &[u8]) {
    let (meta, shard) = match data {
        [a, b, c, d, rest @ ..] => {
            let n = (u32::from_le_bytes([*a, *b, *c, *d]) as usize).min(rest.len());
            rest.split_at(n)
        }
        _ => (data, &[][..]),
    };
    let Ok(s) = Scratch::new(".metadata", meta) else {
        return;
    };
    let Some(dir) = s.path.parent() else { return };
    if std::fs::write(dir.join("__0_0.distcp"), shard).is_err() {
        return;
    }
    match crate::tensors::TensorFile::open(&s.path) {
        Ok(tf) => {
            for t in tf.tensors().to_vec() {
                if let Err(e) = tf.stats(&t.name) {
                    let msg = e.to_string();
                    assert!(!msg.contains('\n'), "multi-line error: {msg}");
                }
            }
        }
        Err(e) => check_error(&e, &s.path),
    }
}
