//! Which CUDA devices exist and how to address them.
//!
//! Devices are addressed by **index** in the list sppark builds at first use (every visible
//! device of compute capability 7.0+ with cooperative launch, in CUDA order) and bound
//! explicitly on every call. `CUDA_VISIBLE_DEVICES` is never set or read here: the CUDA
//! runtime reads it once, at start, so changing it later does nothing (a daemon that "binds"
//! workers that way sends them all to device 0). If the operator set it before start, the
//! ordinals below are the visible ones.
//!
//! [`select`] also refuses devices this build has no device code for (see [`crate::arch`]):
//! they would be listed, then fail their first kernel launch mid-proof. Before any device is
//! looked at, [`driver`] refuses a driver too old for the CUDA runtime this build links (see
//! [`crate::driver`]), naming both versions.

use std::sync::OnceLock;

use super::error::{check, CudaError};
use super::ffi;
use crate::arch;
use crate::driver::{self as rule, CudaVersion};

/// The CUDA runtime this build links and the CUDA version the installed driver supports.
#[derive(Clone, Copy, Debug)]
pub struct CudaVersions {
    pub runtime: CudaVersion,
    pub driver: CudaVersion,
}

#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// Position in the usable-device list; what every FFI call takes.
    pub index: usize,
    /// The CUDA ordinal (what `nvidia-smi` shows, modulo CUDA_VISIBLE_DEVICES).
    pub ordinal: u32,
    pub name: String,
    pub pci_bus_id: String,
    pub compute_capability: (i32, i32),
    pub sm_count: i32,
    pub total_memory: u64,
    pub free_memory: u64,
}

/// The runtime's and the driver's CUDA versions, once the driver is known to run this build:
/// an error names both when it cannot ([`crate::driver::check`]), and is a "no device" error
/// when no driver is installed at all (a CPU-only host). Asked once per process; a warning
/// (a driver of an older minor version) is logged then.
pub fn driver() -> Result<CudaVersions, CudaError> {
    static CHECKED: OnceLock<Result<CudaVersions, CudaError>> = OnceLock::new();
    CHECKED
        .get_or_init(|| {
            let (mut runtime, mut driver) = (0i32, 0i32);
            check(unsafe { ffi::cuzk_cuda_versions(&mut runtime, &mut driver) })?;
            let versions =
                CudaVersions { runtime: CudaVersion::from_api(runtime), driver: CudaVersion::from_api(driver) };
            match rule::check(driver, runtime) {
                Ok(warning) => {
                    if let Some(w) = warning {
                        tracing::warn!("{w}");
                    }
                    Ok(versions)
                }
                Err(why) if driver <= 0 => Err(CudaError::no_device(why)),
                Err(why) => Err(CudaError::driver_too_old(why)),
            }
        })
        .clone()
}

/// Every usable device. An error means the CUDA runtime itself failed (no driver, say), or
/// the driver is too old for this build ([`driver`]).
pub fn devices() -> Result<Vec<DeviceInfo>, CudaError> {
    driver()?;
    let mut n = 0usize;
    check(unsafe { ffi::cuzk_device_count(&mut n) })?;
    (0..n).map(info).collect()
}

pub fn info(index: usize) -> Result<DeviceInfo, CudaError> {
    // SAFETY: DeviceProps is plain data; the glue fills it completely on success.
    let mut p: ffi::DeviceProps = unsafe { std::mem::zeroed() };
    check(unsafe { ffi::cuzk_device_props(index, &mut p) })?;
    let text = |b: &[u8]| String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(&[])).into_owned();
    Ok(DeviceInfo {
        index,
        ordinal: p.cuda_id as u32,
        name: text(&p.name),
        pci_bus_id: text(&p.pci_bus_id),
        compute_capability: (p.major, p.minor),
        sm_count: p.sm_count,
        total_memory: p.total_mem as u64,
        free_memory: p.free_mem as u64,
    })
}

/// (free, total) bytes of device memory right now.
pub fn memory(index: usize) -> Result<(u64, u64), CudaError> {
    let (mut free, mut total) = (0usize, 0usize);
    check(unsafe { ffi::cuzk_device_mem(index, &mut free, &mut total) })?;
    Ok((free as u64, total as u64))
}

/// Whether device `index` keeps the memory its MSMs free for the next one (its stream-ordered
/// pool's release threshold; cuda/pool.cuh). Kept, a 2^27 MSM does not map and unmap ~25 GB
/// of temporaries per call; the memory stays this process's (free to [`memory`], and given
/// back when an allocation needs it) but other processes on the device see it as used.
/// Off gives back what the pool holds now.
pub fn retain_temporaries(index: usize, retain: bool) -> Result<(), CudaError> {
    check(unsafe { ffi::cuzk_retain_temporaries(index, retain) })
}

/// Bytes device `index`'s pool keeps for the next MSM that nothing uses now (counted in the
/// free bytes of [`memory`]).
pub fn retained_bytes(index: usize) -> Result<u64, CudaError> {
    let mut bytes = 0usize;
    check(unsafe { ffi::cuzk_retained_bytes(index, &mut bytes) })?;
    Ok(bytes as u64)
}

/// The devices to use: `ordinals` (CUDA ordinals; empty = all), each resolved to its index.
/// An ordinal that does not exist is an error, not a silent fallback to another device. So is
/// a listed device whose compute capability no compiled target runs on; with an empty list such
/// a device is skipped with a warning, and only if none is left is it an error.
pub fn select(ordinals: &[u32]) -> Result<Vec<DeviceInfo>, CudaError> {
    let all = devices()?;
    if all.is_empty() {
        return Err(CudaError::no_device("no usable CUDA device (compute capability 7.0+) is visible"));
    }
    let supported = |d: &DeviceInfo| arch::check_device(d.compute_capability, arch::SASS_TARGETS, arch::PTX_TARGET);
    if ordinals.is_empty() {
        let mut usable = Vec::new();
        let mut refused = Vec::new();
        for d in all {
            match supported(&d) {
                Ok(()) => usable.push(d),
                Err(why) => {
                    tracing::warn!(ordinal = d.ordinal, name = %d.name, pci_bus_id = %d.pci_bus_id, "skipping CUDA device {}: {why}", d.ordinal);
                    refused.push(format!("device {} ({}): {why}", d.ordinal, d.name));
                }
            }
        }
        if usable.is_empty() {
            return Err(CudaError::no_device(format!("no CUDA device this build supports: {}", refused.join("; "))));
        }
        return Ok(usable);
    }
    let mut chosen = Vec::new();
    for &o in ordinals {
        let d = all.iter().find(|d| d.ordinal == o).ok_or_else(|| {
            let have: Vec<String> = all.iter().map(|d| d.ordinal.to_string()).collect();
            CudaError::no_device(format!(
                "gpus.devices lists CUDA device {o}, but the usable ones are [{}]",
                have.join(", ")
            ))
        })?;
        supported(d)
            .map_err(|why| CudaError::no_device(format!("gpus.devices lists CUDA device {o} ({}): {why}", d.name)))?;
        if !chosen.iter().any(|c: &DeviceInfo| c.index == d.index) {
            chosen.push(d.clone());
        }
    }
    Ok(chosen)
}
