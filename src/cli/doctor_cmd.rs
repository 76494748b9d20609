//! `mltriage doctor`: what this binary and this machine offer — the build's features, the CUDA
//! devices the driver lists (or why none), the device `--device` would choose and why, where
//! the playbook comes from and the configuration paths. Plain text or `--json`.

use std::path::{Path, PathBuf};

use serde_json::json;

use mltriage_probes::device::{explain, BuildInfo, Compute, CudaReport, DeviceRequest};

use super::catalog_cmds::{emit, emit_json};
use super::style::Style;
use super::{ExitCode, UsageError};
use crate::catalog::Catalog;

/// Everything `doctor` reports, gathered before anything is printed.
pub struct Doctor {
    pub build: BuildInfo,
    pub cuda: CudaReport,
    pub request: String,
    pub compute: Compute,
    pub why: String,
    pub playbook: Option<PathBuf>,
    pub keys: Option<PathBuf>,
}

impl Doctor {
    pub fn gather(device: &str, playbook: Option<&Path>) -> anyhow::Result<Doctor> {
        let req: DeviceRequest = device
            .parse()
            .map_err(|e: mltriage_probes::device::DeviceSyntaxError| UsageError(e.to_string()))?;
        let compute = Compute::select(req);
        Ok(Doctor {
            build: BuildInfo::current(),
            cuda: CudaReport::probe(),
            request: device.to_string(),
            why: explain(req, &compute),
            compute,
            playbook: playbook.map(Path::to_path_buf),
            keys: crate::app::action::keys_config_path(),
        })
    }

    pub fn to_json(&self, cat: &Catalog) -> serde_json::Value {
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "build": {
                "label": self.build.label(),
                "features": self.build.features,
                "kernels_compute_cap": self.build.kernels_compute_cap,
                "candle": self.build.candle,
            },
            "cuda": self.cuda,
            "device": {
                "requested": self.request,
                "chosen": self.compute.label,
                "why": self.why,
            },
            "playbook": {
                "source": self.playbook.as_ref().map(|p| format!("embedded + {}", p.display())).unwrap_or_else(|| "embedded".into()),
                "user_dir": self.playbook.as_ref().map(|p| p.display().to_string()),
                "user_files": cat.user_files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "entries": cat.entries.len(),
                "probes": cat.probes.len(),
                "trees": cat.trees.len(),
            },
            "config": {
                "keys": self.keys.as_ref().map(|p| p.display().to_string()),
                "keys_exists": self.keys.as_ref().is_some_and(|p| p.is_file()),
            },
        })
    }

    pub fn render(&self, cat: &Catalog, st: &Style) -> String {
        let mut s = format!(
            "{} {} — {} (candle {})\n",
            st.bold("mltriage"),
            env!("CARGO_PKG_VERSION"),
            self.build.label(),
            self.build.candle
        );
        let row = |k: &str, v: &str| format!("{:<9} {v}\n", st.bold(k));
        let pad = |v: &str| format!("{:<9} {v}\n", "");
        let features = if self.build.features.is_empty() {
            "none (default build: CPU only)".to_string()
        } else {
            self.build.features.join(", ")
        };
        s.push_str(&row("features", &features));
        if self.cuda.devices.is_empty() {
            let why = self.cuda.why_none.as_deref().unwrap_or("none listed");
            s.push_str(&row("cuda", &st.yellow(&format!("no devices: {why}"))));
        } else {
            for (i, d) in self.cuda.devices.iter().enumerate() {
                let line = format!(
                    "cuda:{} {} · {:.1} GiB · compute capability {}",
                    d.ordinal,
                    d.name,
                    d.memory_bytes as f64 / (1u64 << 30) as f64,
                    d.compute_capability
                );
                s.push_str(&if i == 0 {
                    row("cuda", &line)
                } else {
                    pad(&line)
                });
            }
            if let Some(w) = &self.cuda.why_none {
                s.push_str(&pad(&st.yellow(w)));
            }
        }
        if let Some(v) = &self.cuda.driver_cuda {
            s.push_str(&pad(&format!("driver supports CUDA {v}")));
        }
        s.push_str(&pad(&match &self.cuda.kernel_driver {
            Some(k) => format!("kernel driver: {k}"),
            None => "kernel driver: none loaded (no /proc/driver/nvidia/version)".into(),
        }));
        s.push_str(&row(
            "device",
            &format!(
                "{} — {} (--device {})",
                self.compute.label, self.why, self.request
            ),
        ));
        let source = match &self.playbook {
            Some(dir) => format!(
                "embedded + {} ({} file(s) added or overriding)",
                dir.display(),
                cat.user_files.len()
            ),
            None => "embedded".into(),
        };
        s.push_str(&row(
            "playbook",
            &format!(
                "{source}: {} entries, {} probes, {} trees",
                cat.entries.len(),
                cat.probes.len(),
                cat.trees.len()
            ),
        ));
        let keys = match &self.keys {
            Some(p) if p.is_file() => format!("keys: {}", p.display()),
            Some(p) => format!("keys: {} (absent: defaults in use)", p.display()),
            None => "keys: none ($XDG_CONFIG_HOME and $HOME unset)".into(),
        };
        s.push_str(&row("config", &keys));
        s
    }
}

pub fn doctor(
    cat: &Catalog,
    device: &str,
    playbook: Option<&Path>,
    json: bool,
    st: &Style,
) -> anyhow::Result<ExitCode> {
    let d = Doctor::gather(device, playbook)?;
    if json {
        emit_json(&d.to_json(cat));
    } else {
        emit(&d.render(cat, st));
    }
    Ok(0)
}
