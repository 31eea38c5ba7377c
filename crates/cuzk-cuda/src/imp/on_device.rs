//! What a device holds for a proof besides its buffers: a circuit's parameters (resident
//! contexts, or streaming ones over a pinned host copy when they do not fit beside a proof's
//! working set) and its PCE matrices. Built on first use, under the device lock.

use std::sync::Arc;
use std::time::Instant;

use cuzk_groth16::Srs;
use cuzk_pce::PreCompiled;

use super::attempt::MSM_TEMPORARIES;
use super::device;
use super::error::CudaError;
use super::pce::DevicePce;
use super::prover::{CudaProver, Gpu};
use super::resident::{PinnedSrs, SrsKey, SrsOnDevice};
use crate::options::Residency;
use crate::placement::Query;

impl CudaProver {
    /// This SRS's contexts on `gpu`, built on first use. Call with the device lock held.
    pub(super) fn srs_on(&self, gpu: &Gpu, srs: &Srs, working_bytes: u64) -> Result<Arc<SrsOnDevice>, CudaError> {
        let key = SrsKey::of(srs);
        let mut list = gpu.srs.lock();
        // A reload of the same file is a new key; the old entry was dropped by forget_srs
        // when the SrsCache evicted it (the only way parameters leave it).
        if let Some(s) = list.iter().find(|s| s.key == key) {
            return Ok(s.clone());
        }
        if srs.points_released() {
            // adopt_srs put them on every device before releasing them; only a bug gets here.
            return Err(CudaError::new(format!(
                "{}: host copy released but the points are not on this device",
                srs.path.display()
            )));
        }
        let q = srs.query_lens();
        let points: u64 =
            Query::ALL.iter().filter(|&&x| self.b_g2_on_gpu() || x != Query::BG2).map(|x| x.bytes(&q)).sum();
        let resident = self.fits_resident(gpu, points, working_bytes)?;
        if !resident {
            let mut pinned = self.pinned.lock();
            if !pinned.iter().any(|p| p.key == key) {
                pinned.push(PinnedSrs::pin(srs));
            }
        }
        let started = Instant::now();
        tracing::debug!(device = gpu.info.ordinal, resident, "building MSM contexts");
        // SAFETY: streaming contexts point into `srs`; forget_srs drops them before the SRS.
        let on = Arc::new(unsafe { SrsOnDevice::build(gpu.info.index, srs, resident, self.b_g2_on_gpu(), true)? });
        tracing::info!(device = gpu.info.ordinal, srs = %srs.path.display(), resident,
            gib = on.bytes() as f64 / (1u64 << 30) as f64, ms = started.elapsed().as_millis() as u64, "parameters set up on device");
        list.push(on.clone());
        Ok(on)
    }

    /// Whether parameters of `resident_bytes` go resident on `gpu`, beside `working_bytes` of
    /// a proof's buffers. What is on the device already (other circuits' parameters, and
    /// matrices: those go up first) is out of the free memory this compares with.
    pub(super) fn fits_resident(&self, gpu: &Gpu, resident_bytes: u64, working_bytes: u64) -> Result<bool, CudaError> {
        Ok(match self.options.residency {
            Residency::Always => true,
            Residency::Never => false,
            Residency::Auto => {
                // Room to prove too: a proof's buffers, its MSM temporaries and 1 GiB of slack
                // (CUDA's own allocations). A device filled by parameters alone fails every
                // proof; streamed parameters only make proofs slower.
                let (free, _) = device::memory(gpu.info.index)?;
                resident_bytes + working_bytes + MSM_TEMPORARIES + (1 << 30) < free
            }
        })
    }

    pub(super) fn pce_on(&self, gpu: &Gpu, pc: &PreCompiled) -> Result<Arc<DevicePce>, CudaError> {
        let key = pc as *const PreCompiled as usize;
        let mut list = gpu.pce.lock();
        if let Some((_, p)) = list.iter().find(|(k, _)| *k == key) {
            return Ok(p.clone());
        }
        let started = Instant::now();
        let p = Arc::new(DevicePce::upload(gpu.info.index, pc)?);
        tracing::info!(
            device = gpu.info.ordinal,
            gib = p.bytes() as f64 / (1u64 << 30) as f64,
            ms = started.elapsed().as_millis() as u64,
            "PCE matrices uploaded to device"
        );
        // The device has its copy; the host's mapped pages go back to the kernel (another
        // device's upload, or a CPU retry, reads them from the file again).
        pc.drop_mapped_pages();
        list.push((key, p.clone()));
        Ok(p)
    }
}
