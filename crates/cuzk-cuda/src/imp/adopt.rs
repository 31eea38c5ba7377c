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
//! Both are all or nothing: every device gets the parameters, with contexts that never read
//! the loader's host points, or none keeps them and the host copy stays (a failure while
//! taking fails the load instead, since the chunks given are gone from the host). On a
//! device that cannot hold every query beside what it already has and still prove, the
//! queries `crate::placement` picks are *staged*: the contexts keep them in host memory of
//! their own and copy them up per proof (an operator's WindowPoSt B in G2 beside PoRep).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use blstrs::{G1Affine, G2Affine};
use cuzk_groth16::srs_sink::{G1Query, QueryTaker};
use cuzk_groth16::{QueryLens, Srs};

use super::device;
use super::error::CudaError;
use super::prover::{CudaProver, Gpu};
use super::resident::{has_small_query, SrsKey, SrsOnDevice};
use crate::options::Residency;
use crate::placement::{self, Room, Staged};
use crate::subgroup::SubgroupConstants;

impl CudaProver {
    /// Whether the options let parameters live on the devices alone: resident allowed, B in
    /// G2 on the device (a CPU B_G2 reads host points), and the host copy not kept.
    pub(super) fn may_drop_host_copy(&self) -> bool {
        !self.options.keep_host_params && self.options.residency != Residency::Never && self.b_g2_on_gpu()
    }

    /// Put `srs` on every device now (resident, or partly staged from host memory of the
    /// contexts' own), with contexts that never read the host copy, and say whether that
    /// worked everywhere (then the caller may release the host copy). Anything short of that
    /// leaves the devices as they were.
    pub(super) fn take_onto_devices(&self, srs: &Srs) -> Result<bool, CudaError> {
        let key = SrsKey::of(srs);
        // Built by a proof already, with host reads allowed: not safe to release.
        if self.gpus.iter().any(|g| g.srs.lock().iter().any(|s| s.key == key)) {
            return Ok(false);
        }
        let Some(taker) = self.begin_taking(&srs.path, srs.id, &srs.query_lens())? else { return Ok(false) };
        let mut taker = Box::new(taker);
        let mut feed = || -> Result<(), String> {
            for (query, points) in
                [(G1Query::H, &srs.h), (G1Query::L, &srs.l), (G1Query::A, &srs.a), (G1Query::BG1, &srs.b_g1)]
            {
                if !points.is_empty() {
                    taker.take_g1(query, 0, points)?;
                }
            }
            if !srs.b_g2.is_empty() {
                taker.take_b_g2(0, &srs.b_g2)?;
            }
            Ok(())
        };
        feed().map_err(CudaError::new)?;
        taker.finish().map_err(CudaError::new)?;
        Ok(true)
    }

    /// Where the queries of lengths `lens` go on `gpu`: everything resident, some staged, or
    /// nowhere (None). Called with the device's lock held, so no proof's buffers are in the
    /// free memory it reads.
    pub(super) fn placement(&self, gpu: &Gpu, lens: &QueryLens, inputs: usize) -> Result<Option<Staged>, CudaError> {
        if let Some(forced) = self.options.stage_queries {
            return Ok(Some(forced));
        }
        Ok(match self.options.residency {
            Residency::Always => Some(Staged::NONE),
            Residency::Never => None,
            Residency::Auto => {
                let (free, total) = device::memory(gpu.info.index)?;
                let others_peak = gpu.srs.lock().iter().map(|s| s.peak_bytes).max().unwrap_or(0);
                placement::choose(lens, inputs, self.b_g2_on_gpu(), Room { free, total, others_peak })
            }
        })
    }

    /// Room for parameters of lengths `lens` (loaded from `path` as load `id`) on every
    /// device, reserved now: `Some` taker when every device has it, `None` when one does not
    /// (nothing is kept then). The caller has checked [`Self::may_drop_host_copy`].
    pub(super) fn begin_taking(
        &self,
        path: &Path,
        id: u64,
        lens: &QueryLens,
    ) -> Result<Option<DeviceTaker<'_>>, CudaError> {
        if has_small_query(lens) {
            return Ok(None);
        }
        let with_b_g2 = self.b_g2_on_gpu();
        // The public inputs are not known yet; a few thousand of them are far below the fit
        // check's slack.
        let inputs = 0;
        let key = SrsKey::new(path, id);
        let mut on = Vec::with_capacity(self.gpus.len());
        for gpu in &self.gpus {
            let _device = gpu.lock.lock();
            let Some(staged) = self.placement(gpu, lens, inputs)? else {
                tracing::info!(device = gpu.info.ordinal, srs = %path.display(), "parameters will not fit on the device, not even staged; they are made on the host");
                return Ok(None);
            };
            if !staged.is_empty() {
                tracing::info!(device = gpu.info.ordinal, srs = %path.display(), staged = %staged.describe(),
                    host_gib = staged.host_bytes(lens) as f64 / (1u64 << 30) as f64,
                    "not every query fits resident beside what the device holds: these are staged from host memory for each proof, the rest resident");
            }
            let peak = placement::proof_peak_bytes(lens, inputs, staged);
            on.push(SrsOnDevice::unfilled(gpu.info.index, key.clone(), lens, with_b_g2, staged, peak)?);
        }
        tracing::info!(srs = %path.display(), devices = on.len(), gib = on.first().map_or(0, |o| placement::resident_bytes(lens, with_b_g2, o.staged)) as f64 / (1u64 << 30) as f64,
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
        Ok(Some(DeviceTaker {
            gpus: &self.gpus,
            lens: *lens,
            on,
            given: Given::default(),
            started: Instant::now(),
            subgroup,
        }))
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
            return Err(format!(
                "subgroup check of points {offset}..{} before they were all taken ({given})",
                offset.saturating_add(n)
            ));
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
            ctx.fill(offset, points)
                .map_err(|e| format!("device {}: {query:?} query to the device: {e}", gpu.info.ordinal))?;
        }
        Ok(())
    }

    fn take_b_g2(&mut self, offset: usize, points: &[G2Affine]) -> Result<(), String> {
        advance(&mut self.given.b_g2, self.lens.b_g2, offset, points.len(), "B_G2 query")?;
        for (gpu, on) in self.gpus.iter().zip(&mut self.on) {
            let ctx = on.b_g2.as_mut().ok_or("B_G2 query: points for an empty query")?;
            let _device = gpu.lock.lock();
            ctx.fill(offset, points)
                .map_err(|e| format!("device {}: B_G2 query to the device: {e}", gpu.info.ordinal))?;
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
        ctx.first_outside_subgroup(offset, n, c)
            .map_err(|e| format!("device {}: subgroup check of the {query:?} query: {e}", gpu.info.ordinal))
    }

    fn first_outside_subgroup_b_g2(&mut self, offset: usize, n: usize) -> Result<Option<usize>, String> {
        let c = self.subgroup.as_ref().ok_or("no device subgroup test")?;
        Self::check_range(self.given.b_g2, offset, n)?;
        let (Some(gpu), Some(on)) = (self.gpus.first(), self.on.first()) else { return Err("no device".into()) };
        let ctx = on.b_g2.as_ref().ok_or("B_G2 query: no points to check")?;
        let _device = gpu.lock.lock();
        ctx.first_outside_subgroup(offset, n, c)
            .map_err(|e| format!("device {}: subgroup check of the B_G2 query: {e}", gpu.info.ordinal))
    }

    fn finish(self: Box<Self>) -> Result<(), String> {
        let g = &self.given;
        let q = &self.lens;
        if (g.h, g.l, g.a, g.b_g1, g.b_g2) != (q.h, q.l, q.a, q.b_g1, q.b_g2) {
            return Err(format!(
                "parameters incomplete: given h/l/a/b_g1/b_g2 {}/{}/{}/{}/{} of {}/{}/{}/{}/{}",
                g.h, g.l, g.a, g.b_g1, g.b_g2, q.h, q.l, q.a, q.b_g1, q.b_g2
            ));
        }
        let DeviceTaker { gpus, on, started, .. } = *self;
        for (gpu, on) in gpus.iter().zip(on) {
            tracing::info!(device = gpu.info.ordinal, gib = on.bytes() as f64 / (1u64 << 30) as f64, staged = %on.staged.describe(),
                staged_host_gib = on.host_bytes() as f64 / (1u64 << 30) as f64, secs = started.elapsed().as_secs_f64(),
                "parameters set up on device (resident, or staged from host memory of the prover's; no host copy of the loader's)");
            gpu.srs.lock().push(Arc::new(on));
        }
        Ok(())
    }
}
