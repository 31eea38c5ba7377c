//! One partition's attempt on one device:
//!   1. outside the device lock — gather the dense A/B scalars on the host (host path), and
//!      start B in G2 on the CPU if configured so;
//!   2. the device-exclusive region ([`super::phases`]), with deadline work let in at its
//!      phase boundaries where it fits;
//!   3. after the lock is released ([`CudaProver::finish`]) — wait for a CPU B_G2 and
//!      assemble the proof, while the next partition already has the device.
//!
//! A failure is recorded against the device's health here; the retry is [`super::retry`]'s.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::G2Projective;
use cuzk_backend::{ProveTimings, Witness, WorkLabel};
use cuzk_groth16::msm::{dense_scalars, msm_g2};
use cuzk_groth16::prover::{assemble, MsmResults, Shape};
use cuzk_groth16::{Proof, ProveError, ProvingAssignment, Randomness, Srs};
use cuzk_pce::PreCompiled;
use parking_lot::Mutex;

use super::device::{self, DeviceInfo};
use super::error::CudaError;
use super::phases::{self, HostInputs};
use super::prover::CudaProver;
use super::witness::WitnessRef;
use crate::cpu_task::CpuTask;
use crate::device_lock::Boundary;

/// Names the partition holding a device in `Gpu::current`, and clears it on drop (a panic
/// inside the device region included, so a status report never shows a stale job).
struct Holder<'a>(&'a Mutex<Option<WorkLabel>>);

impl<'a> Holder<'a> {
    fn new(slot: &'a Mutex<Option<WorkLabel>>, label: &WorkLabel) -> Self {
        *slot.lock() = Some(label.clone());
        Holder(slot)
    }
}

impl Drop for Holder<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

/// What the device-exclusive region produced; [`CudaProver::finish`] turns it into a proof.
pub(super) struct GpuPhase {
    /// Index into `gpus` of the device that ran it.
    gpu: usize,
    sums: MsmResults,
    /// B in G2 still running on the CPU (joined on drop too: it reads the parameters).
    pending_b_g2: Option<CpuTask<G2Projective>>,
    timings: ProveTimings,
    started: Instant,
}

/// Decrements a device's `active` count however the attempt ends.
struct Active<'a>(&'a AtomicUsize);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn backend_error(device: &DeviceInfo, e: CudaError) -> ProveError {
    ProveError::Backend { backend: format!("cuda:{}", device.ordinal), message: e.to_string() }
}

/// What goes to the device: a, b, c and the dense scalars (host path), or the witness and
/// the matrices to evaluate there (GPU-resident PCE path).
enum DeviceInput<'a> {
    Host(HostInputs<'a>),
    Witness(&'a PreCompiled, WitnessRef<'a>),
}

/// Device bytes a partition's buffers take beside the parameters (and matrices).
fn working_bytes(shape: &Shape, input: &DeviceInput<'_>) -> u64 {
    match input {
        DeviceInput::Host(h) => phases::host_working_bytes(shape, h.w.aux_assignment.len()),
        DeviceInput::Witness(_, w) => phases::witness_working_bytes(shape, w),
    }
}

/// Room a proof needs beyond its buffers: sppark's Pippenger takes ~2 GB of temporaries at
/// 2^27 points (the split and wide MSM paths check the free memory themselves and decline).
/// Asked by a deadline partition before it runs beside a paused one, and kept free beside
/// resident parameters.
pub(super) const MSM_TEMPORARIES: u64 = 3 << 30;

/// One device attempt's view of a witness.
pub(super) fn work_of(witness: &Witness) -> Work<'_> {
    match witness {
        Witness::Assignment(w) => Work::Host(w),
        Witness::Expanded { witness: w, matrices } => {
            Work::Witness(matrices, WitnessRef::Full { inputs: &w.input_assignment, aux: &w.aux_assignment })
        }
        Witness::Compact { inputs, aux, matrices } => Work::Witness(matrices, WitnessRef::Compact { inputs, aux }),
    }
}

/// One device attempt's view of the partition.
#[derive(Clone, Copy)]
pub(super) enum Work<'a> {
    Host(&'a ProvingAssignment),
    Witness(&'a PreCompiled, WitnessRef<'a>),
}

impl CudaProver {
    /// The device-exclusive region, after the parameters (and matrices) are on the device.
    fn gpu_phase(
        &self,
        g: usize,
        srs: &Srs,
        shape: &Shape,
        input: &DeviceInput<'_>,
        t: &mut ProveTimings,
        boundary: &mut dyn FnMut(),
    ) -> Result<MsmResults, CudaError> {
        let gpu = &self.gpus[g];
        let working = working_bytes(shape, input);
        match input {
            DeviceInput::Host(h) => {
                let dev = self.srs_on(gpu, srs, working)?;
                phases::host_abc(gpu.info.index, &dev, shape, h, t, boundary)
            }
            DeviceInput::Witness(pc, w) => {
                // The matrices first: parameters made resident here then leave room for them.
                let dpce = self.pce_on(gpu, pc)?;
                let dev = self.srs_on(gpu, srs, working)?;
                phases::witness(gpu.info.index, &dev, &dpce, shape, *w, t, boundary)
            }
        }
    }

    /// Steps 1 and 2 on device `g` (already counted in its `active`): returns once the device
    /// is free again.
    pub(super) fn start_on(
        &self,
        g: usize,
        srs: &Srs,
        shape: &Shape,
        work: Work<'_>,
        label: &WorkLabel,
    ) -> Result<GpuPhase, ProveError> {
        let gpu = &self.gpus[g];
        let _active = Active(&gpu.active);
        let started = Instant::now();
        let mut t = ProveTimings { device: Some(gpu.info.ordinal), ..Default::default() };

        // B's dense scalars are needed on the host for the host path and for a CPU B_G2.
        let b_scalars = Arc::new(match work {
            Work::Host(w) => {
                let mut v = dense_scalars(&w.input_assignment, &w.b_input_density);
                v.extend(dense_scalars(&w.aux_assignment, &w.b_aux_density));
                v
            }
            Work::Witness(pc, WitnessRef::Full { inputs, aux }) if !self.b_g2_on_gpu() => {
                let mut v = dense_scalars(inputs, &pc.b_input_density);
                v.extend(dense_scalars(aux, &pc.b_aux_density));
                v
            }
            Work::Witness(_, WitnessRef::Compact { .. }) if !self.b_g2_on_gpu() => {
                // accepts() says no in this configuration.
                return Err(backend_error(&gpu.info, CudaError::new("a compact witness needs B in G2 on the device")));
            }
            Work::Witness(..) => Vec::new(),
        });
        let pending_b_g2 = if self.b_g2_on_gpu() {
            None
        } else {
            let (b, points) = (b_scalars.clone(), srs.b_g2.as_ptr() as usize);
            let len = srs.b_g2.len();
            // SAFETY: the caller holds the SRS until `finish` has joined the task, and on every
            // other way out (an error, a panic unwinding through the device region) dropping
            // the task joins it, before the borrow of `srs` ends.
            let points: &'static [blstrs::G2Affine] = unsafe { std::slice::from_raw_parts(points as *const _, len) };
            Some(unsafe { CpuTask::spawn(move || msm_g2(points, &b)) })
        };

        let input = match work {
            Work::Witness(pc, w) => DeviceInput::Witness(pc, w),
            Work::Host(w) => {
                let mut a_scalars = w.input_assignment.clone();
                a_scalars.extend(dense_scalars(&w.aux_assignment, &w.a_aux_density));
                DeviceInput::Host(HostInputs { w, a_scalars, b_scalars: b_scalars.clone() })
            }
        };

        let wait_start = Instant::now();
        let working = working_bytes(shape, &input);
        let mut guard = gpu.lock.lock_urgent(label.urgency, working + MSM_TEMPORARIES);
        let holder = Holder::new(&gpu.current, label);
        crate::faults::device_region();
        let span_start = Instant::now();
        t.device_wait = span_start - wait_start;
        // Phase boundaries (our kernels all finished): deadline work waiting for this device
        // gets it now if it fits beside our buffers; the time handed over is not this
        // partition's device time.
        let mut handed_over = Duration::ZERO;
        let mut no_room = false;
        let free_now = || device::memory(gpu.info.index).map(|(free, _)| free).unwrap_or(0);
        let mut boundary = || {
            let s = Instant::now();
            match guard.yield_to_urgent(free_now) {
                Boundary::Yielded => {
                    handed_over += s.elapsed();
                    *gpu.current.lock() = Some(label.clone());
                }
                Boundary::NoRoom => no_room = true,
                Boundary::Kept => {}
            }
        };
        let result = self.gpu_phase(g, srs, shape, &input, &mut t, &mut boundary);
        let span_end = Instant::now();
        drop((holder, guard));
        if !handed_over.is_zero() {
            tracing::debug!(device = gpu.info.ordinal, job = %label.job_id, ms = handed_over.as_millis() as u64, "yielded the device to deadline work");
        }
        if no_room {
            tracing::debug!(device = gpu.info.ordinal, job = %label.job_id,
                "deadline work waited at a phase boundary without room for its buffers beside this partition's; it runs next");
        }
        gpu.busy_ns.fetch_add((span_end - span_start).saturating_sub(handed_over).as_nanos() as u64, Ordering::Relaxed);
        t.device_span = Some((span_start, span_end));
        match result {
            Ok(sums) => {
                gpu.health.record_success();
                Ok(GpuPhase { gpu: g, sums, pending_b_g2, timings: t, started })
            }
            Err(e) => {
                gpu.failures.fetch_add(1, Ordering::Relaxed);
                if crate::health::is_sticky(e.code) {
                    gpu.health.mark_lost();
                    tracing::error!(device = gpu.info.ordinal, error = %e, "sticky CUDA error: the device is out of service until the daemon restarts");
                } else if let Some(bench) = gpu.health.record_failure(Instant::now()) {
                    tracing::error!(
                        device = gpu.info.ordinal,
                        seconds = bench.as_secs(),
                        "device keeps failing: benched"
                    );
                }
                // Dropping it joins the CPU B_G2 before the caller may let the SRS go.
                drop(pending_b_g2);
                Err(backend_error(&gpu.info, e))
            }
        }
    }

    /// Step 3: host work after the device is released.
    pub(super) fn finish(&self, srs: &Srs, phase: GpuPhase, rs: Randomness) -> (Proof, ProveTimings) {
        let GpuPhase { gpu, mut sums, pending_b_g2, mut timings, started } = phase;
        if let Some(h) = pending_b_g2 {
            let s = Instant::now();
            sums.b_g2 = h.join();
            timings.msm_b_g2 = s.elapsed();
        }
        let proof = assemble(srs, rs, sums);
        self.gpus[gpu].proved.fetch_add(1, Ordering::Relaxed);
        timings.total = started.elapsed();
        (proof, timings)
    }
}

#[cfg(test)]
mod tests {
    use cuzk_backend::Urgency;

    use super::*;

    #[test]
    fn holder_names_the_partition_and_clears_even_on_panic() {
        let slot = Mutex::new(None);
        let label = WorkLabel { job_id: "porep-1".into(), proof_kind: "porep".into(), urgency: Urgency::Normal };
        {
            let _h = Holder::new(&slot, &label);
            assert_eq!(slot.lock().as_ref(), Some(&label));
        }
        assert_eq!(*slot.lock(), None);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _h = Holder::new(&slot, &label);
            panic!("kernel launch failed");
        }));
        assert!(r.is_err());
        assert_eq!(*slot.lock(), None, "a panic inside the device region must not leave a stale job");
    }
}
