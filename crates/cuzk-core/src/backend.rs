//! Choosing the prover backend from `gpus.backend`:
//! * "cpu" — the CPU backend;
//! * "cuda" — the CUDA backend on `gpus.devices` (by ordinal); an error at start if this build
//!   lacks the `cuda` feature or no usable device exists, never a silent CPU fallback;
//! * "auto" — CUDA when built in and a device exists, else the CPU, with a warning: a GPU
//!   host silently proving on its CPUs is minutes per proof instead of seconds. An NVIDIA
//!   driver too old for this build's CUDA runtime is an error here too: that host has GPUs and
//!   the wrong build for its driver, which the CPU must not hide.
//!
//! The backend in use is named in the start-up log and in the daemon's `/status`.

use std::sync::Arc;

use cuzk_backend::{CpuBackend, ProverBackend};
use cuzk_groth16::setup::{CpuFixedBase, FixedBaseMul};

use crate::config::Config;
use crate::error::EngineError;

pub fn select(config: &Config) -> Result<Arc<dyn ProverBackend>, EngineError> {
    match config.gpus.backend.as_str() {
        "cpu" => Ok(Arc::new(CpuBackend)),
        "cuda" => cuda(config).map_err(|u| u.error),
        "auto" => match cuda(config) {
            Ok(b) => Ok(b),
            Err(CudaUnavailable { error, wrong_driver: true }) => Err(error),
            Err(CudaUnavailable { error: e, .. }) => {
                if cfg!(feature = "cuda") {
                    tracing::warn!(reason = %e, "gpus.backend = \"auto\": no usable CUDA device, using the CPU backend");
                } else {
                    tracing::warn!(
                        "gpus.backend = \"auto\": this build has no CUDA backend (built without the `cuda` feature), \
                         using the CPU backend"
                    );
                }
                Ok(Arc::new(CpuBackend))
            }
        },
        other => Err(EngineError::Internal(format!("unknown gpus.backend {other:?}"))),
    }
}

/// Why the CUDA backend could not start; `wrong_driver` when a driver is installed but too old
/// for this build's CUDA runtime (an error even with `gpus.backend = "auto"`).
struct CudaUnavailable {
    error: EngineError,
    wrong_driver: bool,
}

/// What this build can prove on, for `--version` and the start log: "cuda on (CUDA 12.4
/// runtime, driver >= 525.60.13; SASS 80,86,89,90; PTX 90)" — the runtime linked, the oldest
/// driver that runs it and the targets the CUDA glue was compiled for — or "cuda off".
pub fn build_summary() -> String {
    #[cfg(feature = "cuda")]
    {
        format!(
            "cuda on ({}; SASS {}; PTX {})",
            cuzk_cuda::driver::build_summary(),
            cuzk_cuda::arch::SASS_TARGETS,
            cuzk_cuda::arch::PTX_TARGET
        )
    }
    #[cfg(not(feature = "cuda"))]
    {
        "cuda off".to_string()
    }
}

/// Who does the fixed-base multiplications of the generated setup (`srs.generated`): the
/// backend's own engine when it has one (CUDA: its first device; seconds instead of minutes
/// at 32 GiB), else the CPU.
pub fn setup_engine(backend: &dyn ProverBackend) -> Arc<dyn FixedBaseMul> {
    backend.fixed_base().unwrap_or_else(|| Arc::new(CpuFixedBase::new()))
}

/// The first of `devices` (CUDA ordinals; empty = any) when this build has CUDA and finds one,
/// else the CPU: for the generated setup outside a daemon (`cuzk-bench gen-setup`).
pub fn fixed_base_engine(devices: &[u32]) -> Arc<dyn FixedBaseMul> {
    #[cfg(feature = "cuda")]
    match cuzk_cuda::device::select(devices) {
        Ok(found) if !found.is_empty() => return Arc::new(cuzk_cuda::setup::CudaFixedBase::new(found[0].index)),
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "generated setup: no CUDA device for it, using the CPU"),
    }
    let _ = devices;
    Arc::new(CpuFixedBase::new())
}

#[cfg(feature = "cuda")]
fn cuda(config: &Config) -> Result<Arc<dyn ProverBackend>, CudaUnavailable> {
    let g = &config.gpus;
    let options = cuzk_cuda::CudaOptions {
        devices: g.devices.clone(),
        workers_per_device: g.workers_per_device,
        residency: g.srs_residency,
        b_g2: g.b_g2,
        device_matvec: g.device_matvec,
        keep_host_params: g.keep_host_params,
        retain_temporaries: g.retain_temporaries,
        stage_queries: None,
    };
    let prover = cuzk_cuda::CudaProver::new(options).map_err(|e| CudaUnavailable {
        wrong_driver: e.is_driver_too_old(),
        error: EngineError::Internal(format!("CUDA backend: {e}")),
    })?;
    Ok(Arc::new(prover))
}

#[cfg(not(feature = "cuda"))]
fn cuda(_config: &Config) -> Result<Arc<dyn ProverBackend>, CudaUnavailable> {
    Err(CudaUnavailable {
        error: EngineError::Internal(
            "this build of cuzk has no CUDA backend (build with `--features cuda`, see README's GPU section)".into(),
        ),
        wrong_driver: false,
    })
}
