//! [`CudaProver`]: Groth16 on CUDA devices.
//!
//! One partition on one device:
//!   1. outside the device lock — gather the dense A/B scalars on the host (host path), and
//!      start B in G2 on the CPU if configured so;
//!   2. the device-exclusive region (one partition per device at a time, since sppark's
//!      streams are per device) — a, b, c up and the quotient by NTTs, or (GPU-resident PCE
//!      path) the witness up and a, b, c by sparse mat-vec there; then the H, L, A, B_G1
//!      (and B_G2) MSMs, with H's scalars read where the NTT left them;
//!   3. after the lock is released ([`CudaProver::finish`]) — wait for a CPU B_G2 and
//!      assemble the proof, while the next partition already has the device.
//! With `workers_per_device` ≥ 2, one worker's host work overlaps another's device work.
//!
//! A CUDA error fails only that attempt: the partition is retried once on another device,
//! or on the CPU backend if there is no other, and the device stays in service.
//!
//! This file is device choice, retry and health; the phases themselves are in
//! [`super::phases`], the witness's way onto the device in [`super::witness`], parameters
//! put on every device ahead of any proof in [`super::adopt`].

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::G2Projective;
use cuzk_groth16::msm::{dense_scalars, msm_g2};
use cuzk_backend::{DeviceReport, Forms, HostBytes, HostMemory, ProveTimings, ProverBackend, Witness, WorkLabel};
use cuzk_groth16::prover::{assemble, MsmResults, Shape};
use cuzk_groth16::srs_sink::QueryTaker;
use cuzk_groth16::{CpuProver, Proof, ProveError, ProvingAssignment, QueryLens, Randomness, Srs};
use cuzk_pce::PreCompiled;
use parking_lot::Mutex;

use crate::cpu_task::CpuTask;
use crate::device_lock::{Boundary, DeviceLock};
use super::device::{self, DeviceInfo};
use crate::health::DeviceHealth;
use super::error::CudaError;
use super::pce::DevicePce;
use super::phases::{self, HostInputs};
use super::resident::{PinnedSrs, SrsKey, SrsOnDevice};
use crate::options::{B2Placement, Residency};
use crate::placement::{Query, Staged};
use super::witness::WitnessRef;

#[derive(Clone, Debug)]
pub struct CudaOptions {
    /// CUDA ordinals; empty = every usable device.
    pub devices: Vec<u32>,
    pub workers_per_device: usize,
    pub residency: Residency,
    pub b_g2: B2Placement,
    /// Evaluate PCE matrices on the device (a, b, c never on the host) when the caller
    /// offers them.
    pub device_matvec: bool,
    /// Keep the host copy of parameters every device holds resident (see
    /// [`ProverBackend::adopt_srs`]); false frees it.
    pub keep_host_params: bool,
    /// Tests and benchmarks: stage these queries of every SRS the devices take, whatever the
    /// room (`crate::placement` chooses otherwise). Not in the configuration.
    pub stage_queries: Option<Staged>,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions { devices: vec![], workers_per_device: 2, residency: Residency::Auto, b_g2: B2Placement::Gpu, device_matvec: true, keep_host_params: false, stage_queries: None }
    }
}

pub(super) struct Gpu {
    pub(super) info: DeviceInfo,
    /// Held for the device-exclusive region of one partition.
    pub(super) lock: DeviceLock,
    /// Who holds `lock`, for status reports. Kept apart from `lock` so that a status request
    /// never waits seconds for a partition to release the device.
    current: Mutex<Option<WorkLabel>>,
    /// Partitions using or waiting for this device.
    active: AtomicUsize,
    pub(super) srs: Mutex<Vec<Arc<SrsOnDevice>>>,
    /// Keyed by the address of the host `PreCompiled` (which the PCE cache keeps for good).
    pce: Mutex<Vec<(usize, Arc<DevicePce>)>>,
    proved: AtomicU64,
    failures: AtomicU64,
    busy_ns: AtomicU64,
    health: DeviceHealth,
}

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

pub struct CudaProver {
    pub(super) options: CudaOptions,
    pub(super) gpus: Vec<Gpu>,
    pinned: Mutex<Vec<PinnedSrs>>,
    cpu: CpuProver,
    next: AtomicUsize,
    /// The engine's budget, asked before a retry on the CPU builds a, b, c on the host.
    host_memory: std::sync::OnceLock<Arc<dyn HostMemory>>,
}

/// What the device-exclusive region produced; [`CudaProver::finish`] turns it into a proof.
pub struct GpuPhase {
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
fn work_of(witness: &Witness) -> Work<'_> {
    match witness {
        Witness::Assignment(w) => Work::Host(w),
        Witness::Expanded { witness: w, matrices } => Work::Witness(matrices, WitnessRef::Full { inputs: &w.input_assignment, aux: &w.aux_assignment }),
        Witness::Compact { inputs, aux, matrices } => Work::Witness(matrices, WitnessRef::Compact { inputs, aux }),
    }
}

/// One device attempt's view of the partition.
#[derive(Clone, Copy)]
enum Work<'a> {
    Host(&'a ProvingAssignment),
    Witness(&'a PreCompiled, WitnessRef<'a>),
}

impl CudaProver {
    /// Find and bind the configured devices. No usable device is an error (the operator
    /// asked for CUDA), never a silent CPU fallback.
    pub fn new(options: CudaOptions) -> Result<Self, CudaError> {
        let infos = device::select(&options.devices)?;
        // select() checked the driver; its versions go in the start log beside the devices.
        let v = device::driver()?;
        tracing::info!(runtime = %v.runtime, driver_supports = %v.driver, min_driver = crate::driver::min_driver(v.runtime.major).unwrap_or("?"),
            "CUDA runtime {} with a driver for CUDA {}", v.runtime, v.driver);
        for d in &infos {
            tracing::info!(ordinal = d.ordinal, name = %d.name, pci = %d.pci_bus_id, sm = ?d.compute_capability,
                memory_gib = d.total_memory as f64 / (1u64 << 30) as f64, "CUDA device in use");
        }
        let gpus = infos
            .into_iter()
            .map(|info| Gpu {
                info,
                lock: DeviceLock::default(),
                current: Mutex::new(None),
                active: AtomicUsize::new(0),
                srs: Mutex::new(Vec::new()),
                pce: Mutex::new(Vec::new()),
                proved: AtomicU64::new(0),
                failures: AtomicU64::new(0),
                busy_ns: AtomicU64::new(0),
                health: DeviceHealth::default(),
            })
            .collect();
        Ok(CudaProver { options, gpus, pinned: Mutex::new(Vec::new()), cpu: CpuProver, next: AtomicUsize::new(0), host_memory: std::sync::OnceLock::new() })
    }

    pub fn device_infos(&self) -> Vec<DeviceInfo> {
        self.gpus.iter().map(|g| g.info.clone()).collect()
    }

    /// Healthy devices first, each group by fewest partitions on it (ties broken
    /// round-robin). A benched device is still tried when no other is left. The first is
    /// counted as taken at once, so concurrent callers spread out.
    fn device_order(&self) -> Vec<usize> {
        let n = self.gpus.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let now = Instant::now();
        let mut order: Vec<usize> = (0..n).map(|i| (start + i) % n).collect();
        order.sort_by_key(|&i| (!self.gpus[i].health.available(now), self.gpus[i].active.load(Ordering::Relaxed)));
        self.gpus[order[0]].active.fetch_add(1, Ordering::Relaxed);
        order
    }

    pub(super) fn b_g2_on_gpu(&self) -> bool {
        self.options.b_g2 == B2Placement::Gpu
    }

    /// This SRS's contexts on `gpu`, built on first use. Call with the device lock held.
    fn srs_on(&self, gpu: &Gpu, srs: &Srs, working_bytes: u64) -> Result<Arc<SrsOnDevice>, CudaError> {
        let key = SrsKey::of(srs);
        let mut list = gpu.srs.lock();
        // A reload of the same file is a new key; the old entry was dropped by forget_srs
        // when the SrsCache evicted it (the only way parameters leave it).
        if let Some(s) = list.iter().find(|s| s.key == key) {
            return Ok(s.clone());
        }
        if srs.points_released() {
            // adopt_srs put them on every device before releasing them; only a bug gets here.
            return Err(CudaError::new(format!("{}: host copy released but the points are not on this device", srs.path.display())));
        }
        let q = srs.query_lens();
        let points: u64 = Query::ALL.iter().filter(|&&x| self.b_g2_on_gpu() || x != Query::BG2).map(|x| x.bytes(&q)).sum();
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

    fn pce_on(&self, gpu: &Gpu, pc: &PreCompiled) -> Result<Arc<DevicePce>, CudaError> {
        let key = pc as *const PreCompiled as usize;
        let mut list = gpu.pce.lock();
        if let Some((_, p)) = list.iter().find(|(k, _)| *k == key) {
            return Ok(p.clone());
        }
        let started = Instant::now();
        let p = Arc::new(DevicePce::upload(gpu.info.index, pc)?);
        tracing::info!(device = gpu.info.ordinal, gib = p.bytes() as f64 / (1u64 << 30) as f64,
            ms = started.elapsed().as_millis() as u64, "PCE matrices uploaded to device");
        // The device has its copy; the host's mapped pages go back to the kernel (another
        // device's upload, or a CPU retry, reads them from the file again).
        pc.drop_mapped_pages();
        list.push((key, p.clone()));
        Ok(p)
    }

    /// The device-exclusive region, after the parameters (and matrices) are on the device.
    /// `working` is [`working_bytes`] of `input`.
    fn gpu_phase(&self, g: usize, srs: &Srs, shape: &Shape, input: &DeviceInput<'_>, working: u64, t: &mut ProveTimings, boundary: &mut dyn FnMut()) -> Result<MsmResults, CudaError> {
        let gpu = &self.gpus[g];
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
    fn start_on(&self, g: usize, srs: &Srs, shape: &Shape, work: Work<'_>, label: &WorkLabel) -> Result<GpuPhase, ProveError> {
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
        let result = self.gpu_phase(g, srs, shape, &input, working, &mut t, &mut boundary);
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
                    tracing::error!(device = gpu.info.ordinal, seconds = bench.as_secs(), "device keeps failing: benched");
                }
                // Dropping it joins the CPU B_G2 before the caller may let the SRS go.
                drop(pending_b_g2);
                Err(backend_error(&gpu.info, e))
            }
        }
    }

    /// Step 3: host work after the device is released.
    pub fn finish(&self, srs: &Srs, phase: GpuPhase, rs: Randomness) -> (Proof, ProveTimings) {
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

    /// Try each device in order of load (at most two attempts), then the CPU.
    fn prove_with(&self, srs: &Srs, shape: &Shape, witness: Witness, rs: Randomness, label: &WorkLabel) -> Result<(Proof, ProveTimings), ProveError> {
        let order = self.device_order();
        // device_order counted its first choice as taken; each attempt below counts its own.
        self.gpus[order[0]].active.fetch_sub(1, Ordering::Relaxed);
        // Lost devices (a sticky error) are never tried again.
        let live: Vec<usize> = order.into_iter().filter(|&g| !self.gpus[g].health.is_lost()).collect();
        if live.is_empty() {
            return Err(ProveError::Backend { backend: self.name(), message: "every CUDA device is out of service after a sticky error".into() });
        }
        // With the host copy of the parameters released the CPU cannot retry: a lone device
        // gets the second attempt itself (transient faults, out-of-memory).
        let cpu_can_retry = !srs.points_released();
        let attempts: Vec<usize> = if live.len() == 1 && !cpu_can_retry { vec![live[0], live[0]] } else { live.iter().take(2).copied().collect() };
        let mut last_err = None;
        for &g in &attempts {
            if self.gpus[g].health.is_lost() {
                continue; // lost during the first attempt
            }
            self.gpus[g].active.fetch_add(1, Ordering::Relaxed);
            match self.start_on(g, srs, shape, work_of(&witness), label) {
                Ok(phase) => return Ok(self.finish(srs, phase, rs)),
                Err(e) => {
                    // One retry: on the next device, or on the CPU when there is one device.
                    let retry = last_err.is_none();
                    tracing::error!(device = self.gpus[g].info.ordinal, error = %e, retry, "partition failed on device");
                    last_err = Some(e);
                }
            }
        }
        if live.len() >= 2 || !cpu_can_retry {
            return Err(last_err.unwrap_or_else(|| ProveError::Backend { backend: self.name(), message: "the device was lost".into() }));
        }
        // One device only: the second attempt is the CPU, which builds a, b, c (and the full
        // witness) on the host: only with room for them in the engine's budget.
        let q = srs.query_lens();
        let need = 96 * shape.domain.n as u64 + 64 * q.l as u64;
        let _room = match self.host_memory.get() {
            None => None,
            Some(memory) => match HostBytes::take(memory, need) {
                Some(guard) => Some(guard),
                None => {
                    let device = last_err.map(|e| e.to_string()).unwrap_or_default();
                    return Err(ProveError::Backend {
                        backend: "cpu".into(),
                        message: format!("{device}; a retry on the CPU needs {} MiB that the memory budget does not have now", need >> 20),
                    });
                }
            },
        };
        tracing::warn!(mib = need >> 20, "retrying the partition on the CPU backend");
        let w = witness.into_assignment().map_err(|e| ProveError::Backend { backend: "cpu".into(), message: e.to_string() })?;
        self.cpu.prove(srs, w, rs).map(|(proof, t)| (proof, t.into()))
    }
}

impl ProverBackend for CudaProver {
    fn name(&self) -> String {
        let ords: Vec<String> = self.gpus.iter().map(|g| g.info.ordinal.to_string()).collect();
        format!("cuda[{}]", ords.join(","))
    }

    /// An expanded witness when it evaluates the matrices on its devices; a compact one when
    /// B in G2 is on the device too (a CPU B_G2 needs B's scalars on the host, i.e. the
    /// expanded witness).
    fn accepts(&self) -> Forms {
        let expanded = self.options.device_matvec;
        Forms { expanded, compact: expanded && self.b_g2_on_gpu() }
    }

    fn prove(&self, srs: &Srs, witness: Witness, rs: Randomness, label: &WorkLabel) -> Result<(Proof, ProveTimings), ProveError> {
        if !self.accepts().takes(witness.form()) {
            return Err(witness.not_taken_by(self.name()));
        }
        let shape = witness.shape(srs)?;
        self.prove_with(srs, &shape, witness, rs, label)
    }

    fn parallelism(&self) -> Option<usize> {
        Some(self.gpus.len() * self.options.workers_per_device.max(1))
    }

    fn devices(&self) -> Vec<DeviceReport> {
        self.gpus
            .iter()
            .map(|g| {
                let (free, total) = device::memory(g.info.index).unwrap_or((0, g.info.total_memory));
                let resident = g.srs.lock().iter().map(|s| s.bytes()).sum::<u64>() + g.pce.lock().iter().map(|(_, p)| p.bytes()).sum::<u64>();
                DeviceReport {
                    ordinal: g.info.ordinal,
                    name: g.info.name.clone(),
                    memory_total: total,
                    memory_free: free,
                    resident_bytes: resident,
                    partitions_proved: g.proved.load(Ordering::Relaxed),
                    failures: g.failures.load(Ordering::Relaxed),
                    busy: Duration::from_nanos(g.busy_ns.load(Ordering::Relaxed)),
                    active: g.active.load(Ordering::Relaxed),
                    current: g.current.lock().clone(),
                }
            })
            .collect()
    }

    fn host_bytes(&self, srs: &Srs) -> u64 {
        let key = SrsKey::of(srs);
        self.gpus.iter().map(|g| g.srs.lock().iter().filter(|s| s.key == key).map(|s| s.host_bytes()).sum::<u64>()).sum()
    }

    fn usable(&self) -> bool {
        self.gpus.iter().any(|g| !g.health.is_lost())
    }

    fn stalled(&self, job_id: &str) -> bool {
        let mut found = false;
        for g in self.gpus.iter().filter(|g| g.current.lock().as_ref().is_some_and(|l| l.job_id == job_id)) {
            g.health.mark_lost();
            tracing::error!(device = g.info.ordinal, job = job_id,
                "a partition made no progress on this device for the stall limit: the device is out of service until the daemon restarts");
            found = true;
        }
        found
    }

    fn attach_host_memory(&self, memory: Arc<dyn HostMemory>) {
        let _ = self.host_memory.set(memory);
    }

    /// The first of its devices (the first `gpus.devices` lists, or the first usable one).
    fn fixed_base(&self) -> Option<Arc<dyn cuzk_groth16::setup::FixedBaseMul>> {
        let first = self.gpus.first()?;
        Some(Arc::new(super::setup::CudaFixedBase::new(first.info.index)))
    }

    fn adopt_srs(&self, srs: &mut Srs) {
        if !self.may_drop_host_copy() || srs.points_released() {
            return;
        }
        match self.take_onto_devices(srs) {
            Ok(true) => {
                let freed = srs.resident_bytes();
                srs.release_points();
                tracing::info!(srs = %srs.path.display(), gib = (freed - srs.resident_bytes()) as f64 / (1u64 << 30) as f64,
                    "host copy of the parameters released: every device holds them (gpus.keep_host_params = false)");
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(srs = %srs.path.display(), error = %e, "could not put the parameters on every device now; the host copy stays"),
        }
    }

    fn begin_queries(&self, path: &std::path::Path, id: u64, lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        if !self.may_drop_host_copy() {
            return None;
        }
        match self.begin_taking(path, id, lens) {
            Ok(taker) => taker.map(|t| Box::new(t) as Box<dyn QueryTaker + '_>),
            Err(e) => {
                tracing::warn!(srs = %path.display(), error = %e, "could not make room for the parameters on every device; they are made on the host");
                None
            }
        }
    }

    fn forget_srs(&self, srs: &Srs) {
        let key = SrsKey::of(srs);
        for g in &self.gpus {
            let _device = g.lock.lock();
            g.srs.lock().retain(|s| s.key != key);
        }
        self.pinned.lock().retain(|p| p.key != key);
    }

    fn adopt_matrices(&self, pc: &PreCompiled) {
        if !self.accepts().expanded {
            return;
        }
        // A lost device is skipped; an error here is only logged (the first proof meets it
        // again and handles it as proofs do).
        for gpu in self.gpus.iter().filter(|g| !g.health.is_lost()) {
            // Not urgent: a preload waits behind deadline work like any partition.
            let _device = gpu.lock.lock();
            if let Err(e) = self.pce_on(gpu, pc) {
                tracing::warn!(device = gpu.info.ordinal, error = %e, "could not put the PCE matrices on the device at preload; the first proof will");
            }
        }
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
