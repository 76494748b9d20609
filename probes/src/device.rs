//! Device selection, done once per invocation: `auto | cpu | cuda[:N]`. Without a GPU (or
//! without the `cuda` feature) `auto` and `cuda` fall back to CPU with a visible note —
//! candle's `cuda_if_available` does not fall back by itself when built with `cuda`. Also what
//! the build and the machine offer (for `mltriage doctor` and report headers): the build's
//! features, the CUDA devices the driver lists, or why there are none.

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

/// Why the chosen device was chosen, in words (for `doctor`).
pub fn explain(req: DeviceRequest, c: &Compute) -> String {
    match (req, &c.note) {
        (_, Some(note)) => note.clone(),
        (DeviceRequest::Cpu, None) => "--device cpu asked for the CPU".into(),
        (DeviceRequest::Auto, None) => format!("auto: {} is the first CUDA device", c.label),
        (DeviceRequest::Cuda(_), None) => format!("--device asked for {}", c.label),
    }
}

/// What this binary was built with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BuildInfo {
    /// Cargo features that change behaviour (`cuda`), empty for the default build.
    pub features: Vec<&'static str>,
    /// `CUDA_COMPUTE_CAP` the kernels were compiled for (cuda builds that set it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernels_compute_cap: Option<&'static str>,
    /// The candle version the probes use.
    pub candle: &'static str,
}

impl BuildInfo {
    pub fn current() -> BuildInfo {
        BuildInfo {
            features: if cfg!(feature = "cuda") {
                vec!["cuda"]
            } else {
                Vec::new()
            },
            kernels_compute_cap: if cfg!(feature = "cuda") {
                option_env!("CUDA_COMPUTE_CAP")
            } else {
                None
            },
            candle: CANDLE_VERSION,
        }
    }

    /// `cpu-only build` or `cuda build, kernels sm_90`, for report headers.
    pub fn label(&self) -> String {
        if !self.features.contains(&"cuda") {
            return "cpu-only build".into();
        }
        match self.kernels_compute_cap {
            Some(cap) => format!("cuda build, kernels sm_{cap}"),
            None => "cuda build".into(),
        }
    }
}

/// The candle-core version in Cargo.lock (kept in step with the workspace dependency).
const CANDLE_VERSION: &str = "0.11.1";

/// One CUDA device as the driver reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CudaDevice {
    pub ordinal: usize,
    pub name: String,
    pub memory_bytes: u64,
    /// e.g. `9.0`.
    pub compute_capability: String,
}

/// What CUDA offers on this machine, as far as this build can tell.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CudaReport {
    /// The CUDA version the driver supports (`cuDriverGetVersion`, e.g. `13.0`), cuda builds only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_cuda: Option<String>,
    /// The kernel driver's own version line (`/proc/driver/nvidia/version`), when present —
    /// read by any build, so a CPU-only build can still say a GPU is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_driver: Option<String>,
    pub devices: Vec<CudaDevice>,
    /// Why `devices` is empty (or incomplete).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_none: Option<String>,
}

impl CudaReport {
    /// Asks the driver (cuda builds) and reads `/proc/driver/nvidia/version` (any build).
    pub fn probe() -> CudaReport {
        let kernel_driver = std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .and_then(|s| {
                s.lines()
                    .next()
                    .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            });
        let mut r = cuda_devices();
        r.kernel_driver = kernel_driver;
        if r.devices.is_empty() && r.why_none.is_none() {
            r.why_none = Some("the driver lists no CUDA device".into());
        }
        r
    }
}

#[cfg(feature = "cuda")]
fn cuda_devices() -> CudaReport {
    use candle_core::cuda_backend::cudarc::driver::{result, sys};
    let mut r = CudaReport {
        driver_cuda: None,
        kernel_driver: None,
        devices: Vec::new(),
        why_none: None,
    };
    let name = |e: result::DriverError| {
        e.error_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|_| format!("{:?}", e.0))
    };
    if let Err(e) = result::init() {
        r.why_none = Some(format!("cuInit failed: {}", name(e)));
        return r;
    }
    let mut v: std::ffi::c_int = 0;
    // SAFETY: cuDriverGetVersion writes one int through the pointer it is given.
    if unsafe { sys::cuDriverGetVersion(&mut v) } == sys::CUresult::CUDA_SUCCESS {
        r.driver_cuda = Some(format!("{}.{}", v / 1000, (v % 1000) / 10));
    }
    let count = match result::device::get_count() {
        Ok(n) => n.max(0) as usize,
        Err(e) => {
            r.why_none = Some(format!("cuDeviceGetCount failed: {}", name(e)));
            return r;
        }
    };
    for ordinal in 0..count {
        let dev = match result::device::get(ordinal as std::ffi::c_int) {
            Ok(d) => d,
            Err(e) => {
                r.why_none = Some(format!("cuDeviceGet({ordinal}) failed: {}", name(e)));
                continue;
            }
        };
        use sys::CUdevice_attribute_enum::{
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as MAJOR,
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as MINOR,
        };
        // SAFETY: `dev` came from cuDeviceGet above.
        let (mem, major, minor) = unsafe {
            (
                result::device::total_mem(dev).unwrap_or(0),
                result::device::get_attribute(dev, MAJOR).unwrap_or(0),
                result::device::get_attribute(dev, MINOR).unwrap_or(0),
            )
        };
        r.devices.push(CudaDevice {
            ordinal,
            name: result::device::get_name(dev).unwrap_or_else(|e| format!("? ({})", name(e))),
            memory_bytes: mem as u64,
            compute_capability: format!("{major}.{minor}"),
        });
    }
    r
}

#[cfg(not(feature = "cuda"))]
fn cuda_devices() -> CudaReport {
    CudaReport {
        driver_cuda: None,
        kernel_driver: None,
        devices: Vec::new(),
        why_none: Some("this build has no CUDA support (rebuild with --features cuda)".into()),
    }
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

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn a_cpu_only_build_says_so() {
        let b = BuildInfo::current();
        assert!(b.features.is_empty());
        assert_eq!(b.label(), "cpu-only build");
        let r = CudaReport::probe();
        assert!(r.devices.is_empty());
        assert!(r.why_none.unwrap().contains("--features cuda"));
        let req = DeviceRequest::Auto;
        assert!(explain(req, &Compute::select(req)).contains("no CUDA support"));
        assert_eq!(
            explain(DeviceRequest::Cpu, &Compute::cpu()),
            "--device cpu asked for the CPU"
        );
    }

    #[test]
    fn build_labels() {
        let mut b = BuildInfo {
            features: vec!["cuda"],
            kernels_compute_cap: Some("90"),
            candle: CANDLE_VERSION,
        };
        assert_eq!(b.label(), "cuda build, kernels sm_90");
        b.kernels_compute_cap = None;
        assert_eq!(b.label(), "cuda build");
    }

    #[test]
    fn the_reported_candle_version_is_the_locked_one() {
        let lock = include_str!("../../Cargo.lock");
        let pin = format!("name = \"candle-core\"\nversion = \"{CANDLE_VERSION}\"");
        assert!(lock.contains(&pin), "Cargo.lock does not pin {pin}");
    }
}
