//! Device selection, done once per invocation: `auto | cpu | cuda[:N]`. Without a GPU (or
//! without the `cuda` feature) `auto` and `cuda` fall back to CPU with a visible note —
//! candle's `cuda_if_available` does not fall back by itself when built with `cuda`.

use candle_core::Device;

/// What the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceRequest {
    Auto,
    Cpu,
    Cuda(usize),
}

/// `--device` value that is not `auto`, `cpu`, `cuda` or `cuda:N`.
#[derive(Debug, thiserror::Error)]
#[error("--device {0:?}: expected auto, cpu, cuda or cuda:N")]
pub struct DeviceSyntaxError(pub String);

impl std::str::FromStr for DeviceRequest {
    type Err = DeviceSyntaxError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(DeviceRequest::Auto),
            "cpu" => Ok(DeviceRequest::Cpu),
            "cuda" | "gpu" => Ok(DeviceRequest::Cuda(0)),
            other => other
                .strip_prefix("cuda:")
                .and_then(|n| n.parse::<usize>().ok())
                .map(DeviceRequest::Cuda)
                .ok_or_else(|| DeviceSyntaxError(s.to_string())),
        }
    }
}

/// The chosen device plus what to tell the user about it.
#[derive(Debug, Clone)]
pub struct Compute {
    pub device: Device,
    /// e.g. `cpu`, `cuda:0`.
    pub label: String,
    /// Set when the request could not be honoured (fell back to CPU), shown in reports.
    pub note: Option<String>,
}

impl Compute {
    pub fn cpu() -> Self {
        Compute {
            device: Device::Cpu,
            label: "cpu".into(),
            note: None,
        }
    }

    /// Choose the device once.
    pub fn select(req: DeviceRequest) -> Self {
        match req {
            DeviceRequest::Cpu => Compute::cpu(),
            DeviceRequest::Auto => match try_cuda(0) {
                Ok(c) => c,
                Err(why) => Compute {
                    note: Some(format!("no GPU used: {why}; computing on CPU")),
                    ..Compute::cpu()
                },
            },
            DeviceRequest::Cuda(n) => match try_cuda(n) {
                Ok(c) => c,
                Err(why) => Compute {
                    note: Some(format!("cuda:{n} unavailable: {why}; fell back to CPU")),
                    ..Compute::cpu()
                },
            },
        }
    }

    pub fn is_cuda(&self) -> bool {
        !matches!(self.device, Device::Cpu)
    }
}

#[cfg(feature = "cuda")]
fn try_cuda(n: usize) -> Result<Compute, String> {
    match Device::new_cuda(n) {
        Ok(d) => Ok(Compute {
            device: d,
            label: format!("cuda:{n}"),
            note: None,
        }),
        Err(e) => Err(e
            .to_string()
            .lines()
            .next()
            .unwrap_or("CUDA error")
            .to_string()),
    }
}

#[cfg(not(feature = "cuda"))]
fn try_cuda(_n: usize) -> Result<Compute, String> {
    Err("this build has no CUDA support (rebuild with --features cuda)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_device_requests() {
        assert_eq!(
            "auto".parse::<DeviceRequest>().unwrap(),
            DeviceRequest::Auto
        );
        assert_eq!("CPU".parse::<DeviceRequest>().unwrap(), DeviceRequest::Cpu);
        assert_eq!(
            "cuda:3".parse::<DeviceRequest>().unwrap(),
            DeviceRequest::Cuda(3)
        );
        assert!("tpu".parse::<DeviceRequest>().is_err());
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_request_falls_back_to_cpu_with_a_note() {
        let c = Compute::select(DeviceRequest::Cuda(0));
        assert!(!c.is_cuda());
        assert!(c.note.unwrap().contains("fell back to CPU"));
        assert!(Compute::select(DeviceRequest::Auto).note.is_some());
        assert!(Compute::select(DeviceRequest::Cpu).note.is_none());
    }
}
