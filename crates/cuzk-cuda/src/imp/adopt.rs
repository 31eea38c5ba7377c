//! Parameters onto every device before any proof needs them, so that the host copy can go:
//!
//! * [`CudaProver::take_onto_devices`] (behind `adopt_srs`): parameters already whole in host
//!   memory (a `.params` file, or a generated setup the backend did not take) are copied to
//!   every device; the caller then releases the host copy.
//! * [`CudaProver::begin_taking`] (behind `begin_queries`): a generated setup's queries, or a
//!   `.params` file's, are taken chunk by chunk while they are made or read ([`DeviceTaker`]),
//!   so the host never holds the whole key — at 32 GiB PoRep that is 44 GiB of points the
//!   daemon's peak RSS no longer has.
//!
//! The taker also checks subgroup membership of what it was given, on the first device
//! (`cuda/subgroup.cuh`), when a `.params` file's load must check it
//! (`cuzk_groth16::srs_stream`): ~100× the CPU's rate, which made a first start on a ceremony
//! file take tens of minutes.
//!
//! Both are all or nothing: every device gets the parameters resident, with contexts that
//! never read host points, or none keeps them and the host copy stays (a failure while
//! taking fails the load instead, since the chunks given are gone from the host).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G2Affine};
use cuzk_groth16::srs_sink::{G1Query, QueryTaker};
use cuzk_groth16::{QueryLens, Srs};

use super::error::CudaError;
use super::prover::{CudaProver, Gpu, Residency};
use crate::subgroup::SubgroupConstants;
use super::resident::{has_small_query, proof_working_bytes, resident_size, SrsKey, SrsOnDevice};

impl CudaProver {
    /// Whether the options let parameters live on the devices alone: resident allowed, B in
    /// G2 on the device (a CPU B_G2 reads host points), and the host copy not kept.
    pub(super) fn may_drop_host_copy(&self) -> bool {
        !self.options.keep_host_params && self.options.residency != Residency::Never && self.b_g2_on_gpu()
    }

    /// Put `srs` resident on every device now, with contexts that never read the host copy,
    /// and say whether that worked everywhere (then the caller may release the host copy).
    /// Anything short of that leaves the devices as they were.
    pub(super) fn take_onto_devices(&self, srs: &Srs) -> Result<bool, CudaError> {
        let q = srs.query_lens();
        if has_small_query(&q) {
            return Ok(false);
        }
        let resident = resident_size(&q, self.b_g2_on_gpu());
        let working = proof_working_bytes(&q, srs.vk.ic.len());
        let key = SrsKey::of(srs);
        let mut built = Vec::with_capacity(self.gpus.len());
        for gpu in &self.gpus {
            let _device = gpu.lock.lock();
            if gpu.srs.lock().iter().any(|s| s.key == key) {
                // Built by a proof already, with host reads allowed: not safe to release.
                return Ok(false);
            }
            if !self.fits_resident(gpu, resident, working)? {
                tracing::info!(device = gpu.info.ordinal, srs = %srs.path.display(), "parameters do not fit resident; the host copy stays");
                return Ok(false);
            }
            let started = Instant::now();
            // SAFETY: resident contexts with keep_host false never read `srs` after this call.
            let on = Arc::new(unsafe { SrsOnDevice::build(gpu.info.index, srs, true, self.b_g2_on_gpu(), false)? });
            tracing::info!(device = gpu.info.ordinal, srs = %srs.path.display(), gib = on.bytes() as f64 / (1u64 << 30) as f64,
                ms = started.elapsed().as_millis() as u64, "parameters set up on device (resident, host copy to be released)");
            built.push(on);
        }
        for (gpu, on) in self.gpus.iter().zip(built) {
            gpu.srs.lock().push(on);
        }
        Ok(true)
    }

    /// Room for parameters of lengths `lens` (loaded from `path` as load `id`) on every
    /// device, reserved now: `Some` taker when every device has it, `None` when one does not
    /// (nothing is kept then). The caller has checked [`Self::may_drop_host_copy`].
    pub(super) fn begin_taking(&self, path: &Path, id: u64, lens: &QueryLens) -> Result<Option<DeviceTaker<'_>>, CudaError> {
        if has_small_query(lens) {
            return Ok(None);
        }
        let with_b_g2 = self.b_g2_on_gpu();
        let resident = resident_size(lens, with_b_g2);
        // The public inputs are not known yet; a few hundred of them are far below the
        // fit check's 1 GiB of slack.
        let working = proof_working_bytes(lens, 0);
        let key = SrsKey::new(path, id);
        let mut on = Vec::with_capacity(self.gpus.len());
        for gpu in &self.gpus {
            let _device = gpu.lock.lock();
            if !self.fits_resident(gpu, resident, working)? {
                tracing::info!(device = gpu.info.ordinal, srs = %path.display(), "parameters will not fit resident; they are made on the host");
                return Ok(None);
            }
            on.push(SrsOnDevice::unfilled(gpu.info.index, key.clone(), lens, with_b_g2)?);
        }
        tracing::info!(srs = %path.display(), devices = on.len(), gib = resident as f64 / (1u64 << 30) as f64,
            "device memory reserved for the parameters; they go to the devices as they are made");
        // Derived and checked on the generators once per load (microseconds); a failure would
        // be a bug in the derivation, and the loader then checks on the CPU.
        let subgroup = match SubgroupConstants::new() {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::error!(error = %e, "device subgroup test unavailable; points are checked on the CPU");
                None
            }
        };
        Ok(Some(DeviceTaker { gpus: &self.gpus, lens: *lens, on, given: Given::default(), started: Instant::now(), subgroup }))
    }
}

/// Points handed over so far, per query.
#[derive(Default)]
struct Given {
    h: usize,
    l: usize,
    a: usize,
    b_g1: usize,
    b_g2: usize,
}

/// One generated setup's queries going to every device (see the module doc). Dropped
/// unfinished, it frees what it reserved.
pub(super) struct DeviceTaker<'a> {
    gpus: &'a [Gpu],
    lens: QueryLens,
    /// One per device, in the order of `gpus`.
    on: Vec<SrsOnDevice>,
    given: Given,
    started: Instant,
    /// The device subgroup test's constants (None: the loader checks on the CPU).
    subgroup: Option<SubgroupConstants>,
}

impl DeviceTaker<'_> {
    /// Points `[offset, offset + n)` must already be taken (the loader checks after it hands
    /// a chunk over); the first device's copy is checked, the others hold the same bytes.
    fn check_range(given: usize, offset: usize, n: usize) -> Result<(), String> {
        if offset.checked_add(n).is_none_or(|end| end > given) {
            return Err(format!("subgroup check of points {offset}..{} before they were all taken ({given})", offset.saturating_add(n)));
        }
        Ok(())
    }
}

/// Chunks of one query must arrive in order and within its length: anything else is a
/// loader bug that would leave device points unwritten.
fn advance(given: &mut usize, len: usize, offset: usize, n: usize, what: &str) -> Result<(), String> {
    if offset != *given || n > len - offset {
        return Err(format!("{what}: chunk at {offset} of {n} points, expected at {given} within {len}"));
    }
    *given += n;
    Ok(())
}

impl QueryTaker for DeviceTaker<'_> {
    fn take_g1(&mut self, query: G1Query, offset: usize, points: &[G1Affine]) -> Result<(), String> {
        let (given, len) = match query {
            G1Query::H => (&mut self.given.h, self.lens.h),
            G1Query::L => (&mut self.given.l, self.lens.l),
            G1Query::A => (&mut self.given.a, self.lens.a),
            G1Query::BG1 => (&mut self.given.b_g1, self.lens.b_g1),
        };
        advance(given, len, offset, points.len(), &format!("{query:?} query"))?;
        for (gpu, on) in self.gpus.iter().zip(&mut self.on) {
            let ctx = match query {
                G1Query::H => on.h.as_mut(),
                G1Query::L => on.l.as_mut(),
                G1Query::A => on.a.as_mut(),
                G1Query::BG1 => on.b_g1.as_mut(),
            };
            let ctx = ctx.ok_or_else(|| format!("{query:?} query: points for an empty query"))?;
            let _device = gpu.lock.lock();
            ctx.fill(offset, points).map_err(|e| format!("device {}: {query:?} query to the device: {e}", gpu.info.ordinal))?;
        }
        Ok(())
    }

    fn take_b_g2(&mut self, offset: usize, points: &[G2Affine]) -> Result<(), String> {
        advance(&mut self.given.b_g2, self.lens.b_g2, offset, points.len(), "B_G2 query")?;
        for (gpu, on) in self.gpus.iter().zip(&mut self.on) {
            let ctx = on.b_g2.as_mut().ok_or("B_G2 query: points for an empty query")?;
            let _device = gpu.lock.lock();
            ctx.fill(offset, points).map_err(|e| format!("device {}: B_G2 query to the device: {e}", gpu.info.ordinal))?;
        }
        Ok(())
    }

    fn checks_subgroup(&self) -> bool {
        self.subgroup.is_some()
    }

    fn first_outside_subgroup_g1(&mut self, query: G1Query, offset: usize, n: usize) -> Result<Option<usize>, String> {
        let c = self.subgroup.as_ref().ok_or("no device subgroup test")?;
        let given = match query {
            G1Query::H => self.given.h,
            G1Query::L => self.given.l,
            G1Query::A => self.given.a,
            G1Query::BG1 => self.given.b_g1,
        };
        Self::check_range(given, offset, n)?;
        let (Some(gpu), Some(on)) = (self.gpus.first(), self.on.first()) else { return Err("no device".into()) };
        let ctx = match query {
            G1Query::H => on.h.as_ref(),
            G1Query::L => on.l.as_ref(),
            G1Query::A => on.a.as_ref(),
            G1Query::BG1 => on.b_g1.as_ref(),
        };
        let ctx = ctx.ok_or_else(|| format!("{query:?} query: no points to check"))?;
        let _device = gpu.lock.lock();
        ctx.first_outside_subgroup(offset, n, c).map_err(|e| format!("device {}: subgroup check of the {query:?} query: {e}", gpu.info.ordinal))
    }

    fn first_outside_subgroup_b_g2(&mut self, offset: usize, n: usize) -> Result<Option<usize>, String> {
        let c = self.subgroup.as_ref().ok_or("no device subgroup test")?;
        Self::check_range(self.given.b_g2, offset, n)?;
        let (Some(gpu), Some(on)) = (self.gpus.first(), self.on.first()) else { return Err("no device".into()) };
        let ctx = on.b_g2.as_ref().ok_or("B_G2 query: no points to check")?;
        let _device = gpu.lock.lock();
        ctx.first_outside_subgroup(offset, n, c).map_err(|e| format!("device {}: subgroup check of the B_G2 query: {e}", gpu.info.ordinal))
    }

    fn finish(self: Box<Self>) -> Result<(), String> {
        let g = &self.given;
        let q = &self.lens;
        if (g.h, g.l, g.a, g.b_g1, g.b_g2) != (q.h, q.l, q.a, q.b_g1, q.b_g2) {
            return Err(format!("parameters incomplete: given h/l/a/b_g1/b_g2 {}/{}/{}/{}/{} of {}/{}/{}/{}/{}", g.h, g.l, g.a, g.b_g1, g.b_g2, q.h, q.l, q.a, q.b_g1, q.b_g2));
        }
        let DeviceTaker { gpus, on, started, .. } = *self;
        for (gpu, on) in gpus.iter().zip(on) {
            tracing::info!(device = gpu.info.ordinal, gib = on.bytes() as f64 / (1u64 << 30) as f64, secs = started.elapsed().as_secs_f64(),
                "parameters set up on device (resident, taken while they were made; no host copy)");
            gpu.srs.lock().push(Arc::new(on));
        }
        Ok(())
    }
}
