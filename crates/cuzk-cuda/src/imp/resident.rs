//! One SRS on one device: the MSM contexts of its five queries — resident, staged from host
//! memory of their own (`crate::placement` chooses which), or streaming from the caller's
//! host copy — and the page-locking of host parameters that streaming contexts read every
//! proof.

use std::path::{Path, PathBuf};

use cuzk_groth16::{QueryLens, Srs};

use super::error::{check, CudaError};
use super::ffi;
use super::msm::{MsmG1, MsmG2};
use crate::placement::{Query, Staged};

/// Identifies one loaded SRS: its origin and the id of that load. A reload of the same file
/// is a different key (a new id), so stale contexts are never reused; releasing the host copy
/// keeps the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SrsKey {
    path: PathBuf,
    id: u64,
}

impl SrsKey {
    pub fn of(srs: &Srs) -> Self {
        SrsKey { path: srs.path.clone(), id: srs.id }
    }

    /// The key of parameters still being made: the `path` and `id` their [`Srs`] will have.
    pub fn new(path: &Path, id: u64) -> Self {
        SrsKey { path: path.to_path_buf(), id }
    }
}

pub(crate) struct SrsOnDevice {
    pub key: SrsKey,
    pub h: Option<MsmG1>,
    pub l: Option<MsmG1>,
    pub a: Option<MsmG1>,
    pub b_g1: Option<MsmG1>,
    /// None when B in G2 is computed on the CPU.
    pub b_g2: Option<MsmG2>,
    /// Which queries are staged from host memory (`crate::placement`).
    pub staged: Staged,
    /// Device bytes one proof over these parameters takes at its peak
    /// ([`crate::placement::proof_peak_bytes`]): what a later circuit must leave free.
    pub peak_bytes: u64,
}

impl SrsOnDevice {
    /// # Safety
    /// The contexts point into `srs` (streaming reads, and small MSMs on the CPU), which must
    /// outlive this value (the prover drops it in `forget_srs`, before the SRS goes).
    ///
    /// `keep_host` false (resident only): the contexts never read the host points again, so
    /// the caller may release them ([`Srs::release_points`]); small MSMs then run on the
    /// device too.
    pub unsafe fn build(
        index: usize,
        srs: &Srs,
        resident: bool,
        with_b_g2: bool,
        keep_host: bool,
    ) -> Result<Self, CudaError> {
        assert!(resident || keep_host, "streaming contexts read the host points on every call");
        let g1 = |p: &[blstrs::G1Affine]| -> Result<Option<MsmG1>, CudaError> {
            if p.is_empty() {
                Ok(None)
            } else {
                let mut m = MsmG1::new(index, p, resident)?;
                if !keep_host {
                    m.forget_host();
                }
                Ok(Some(m))
            }
        };
        let b_g2 = if with_b_g2 && !srs.b_g2.is_empty() {
            let mut m = MsmG2::new(index, &srs.b_g2, resident)?;
            if !keep_host {
                m.forget_host();
            }
            Some(m)
        } else {
            None
        };
        let q = srs.query_lens();
        Ok(SrsOnDevice {
            key: SrsKey::of(srs),
            h: g1(&srs.h)?,
            l: g1(&srs.l)?,
            a: g1(&srs.a)?,
            b_g1: g1(&srs.b_g1)?,
            b_g2,
            staged: Staged::NONE,
            peak_bytes: crate::placement::proof_peak_bytes(&q, srs.vk.ic.len(), Staged::NONE),
        })
    }

    /// Contexts of the lengths `q` on device `index`, allocated but not written: resident
    /// ones on the device, `staged` ones in host memory of their own. The caller fills every
    /// query ([`MsmG1::fill`], [`MsmG2::fill`]) before any proof sees them. No context reads
    /// host points of the caller's. `peak_bytes`: one proof's peak on the device.
    pub fn unfilled(
        index: usize,
        key: SrsKey,
        q: &QueryLens,
        with_b_g2: bool,
        staged: Staged,
        peak_bytes: u64,
    ) -> Result<Self, CudaError> {
        let g1 = |n: usize, x: Query| -> Result<Option<MsmG1>, CudaError> {
            match (n, staged.contains(x)) {
                (0, _) => Ok(None),
                (n, true) => MsmG1::new_staged(index, n).map(Some),
                (n, false) => MsmG1::new_unfilled(index, n).map(Some),
            }
        };
        let b_g2 = match (with_b_g2 && q.b_g2 > 0, staged.contains(Query::BG2)) {
            (false, _) => None,
            (true, true) => Some(MsmG2::new_staged(index, q.b_g2)?),
            (true, false) => Some(MsmG2::new_unfilled(index, q.b_g2)?),
        };
        Ok(SrsOnDevice {
            key,
            h: g1(q.h, Query::H)?,
            l: g1(q.l, Query::L)?,
            a: g1(q.a, Query::A)?,
            b_g1: g1(q.b_g1, Query::BG1)?,
            b_g2,
            staged,
            peak_bytes,
        })
    }

    /// Device bytes of the resident points.
    pub fn bytes(&self) -> u64 {
        [&self.h, &self.l, &self.a, &self.b_g1]
            .iter()
            .filter_map(|m| m.as_ref())
            .map(|m| m.resident_bytes())
            .sum::<u64>()
            + self.b_g2.as_ref().map_or(0, |m| m.resident_bytes())
    }

    /// Host bytes the staged contexts own.
    pub fn host_bytes(&self) -> u64 {
        [&self.h, &self.l, &self.a, &self.b_g1].iter().filter_map(|m| m.as_ref()).map(|m| m.host_bytes()).sum::<u64>()
            + self.b_g2.as_ref().map_or(0, |m| m.host_bytes())
    }
}

/// Whether any query is non-empty but below [`super::msm::MIN_GPU_MSM`] points: such MSMs
/// run on the CPU from the host points, which must then stay.
pub(crate) fn has_small_query(q: &QueryLens) -> bool {
    [q.h, q.l, q.a, q.b_g1, q.b_g2].into_iter().any(|n| n > 0 && n < super::msm::MIN_GPU_MSM)
}

/// Host pages of one SRS locked for DMA (streaming mode); unlocked on drop.
pub(crate) struct PinnedSrs {
    pub key: SrsKey,
    regions: Vec<usize>,
}

impl PinnedSrs {
    /// Lock what can be locked; a failure (e.g. RLIMIT_MEMLOCK) is logged and the SRS is
    /// then copied from pageable memory, slower but correct.
    pub fn pin(srs: &Srs) -> Self {
        let mut regions = Vec::new();
        let mut try_pin = |ptr: *const u8, bytes: usize, what: &str| {
            if bytes == 0 {
                return;
            }
            match check(unsafe { ffi::cuzk_host_register(ptr as *mut _, bytes) }) {
                Ok(()) => regions.push(ptr as usize),
                Err(e) => {
                    tracing::warn!(query = what, error = %e, "could not page-lock parameters; streaming them from pageable memory")
                }
            }
        };
        try_pin(srs.h.as_ptr().cast(), std::mem::size_of_val(&srs.h[..]), "h");
        try_pin(srs.l.as_ptr().cast(), std::mem::size_of_val(&srs.l[..]), "l");
        try_pin(srs.a.as_ptr().cast(), std::mem::size_of_val(&srs.a[..]), "a");
        try_pin(srs.b_g1.as_ptr().cast(), std::mem::size_of_val(&srs.b_g1[..]), "b_g1");
        try_pin(srs.b_g2.as_ptr().cast(), std::mem::size_of_val(&srs.b_g2[..]), "b_g2");
        PinnedSrs { key: SrsKey::of(srs), regions }
    }
}

impl Drop for PinnedSrs {
    fn drop(&mut self) {
        for &p in &self.regions {
            let _ = check(unsafe { ffi::cuzk_host_unregister(p as *mut _) });
        }
    }
}
