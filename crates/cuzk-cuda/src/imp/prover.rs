//! [`CudaProver`]: Groth16 on CUDA devices, and its face to the engine
//! ([`ProverBackend`]): options, devices bound at start, status reports, parameters and
//! matrices handed over.
//!
//! One partition: [`super::retry`] picks a device and retries a failed attempt (on another
//! device, or on the CPU); [`super::attempt`] is one attempt on one device, its
//! device-exclusive [`super::phases`] with the witness's way onto it in [`super::witness`];
//! [`super::on_device`] builds what a device holds for a proof on first use, and
//! [`super::adopt`] puts parameters on every device ahead of any proof.
//! With `workers_per_device` ≥ 2, one worker's host work overlaps another's device work. A
//! CUDA error fails only that attempt, and the device stays in service unless the error is
//! sticky.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cuzk_backend::{DeviceReport, Forms, HostMemory, ProveTimings, ProverBackend, Witness, WorkLabel};
use cuzk_groth16::srs_sink::QueryTaker;
use cuzk_groth16::{CpuProver, Proof, ProveError, QueryLens, Randomness, Srs};
use cuzk_pce::PreCompiled;
use parking_lot::Mutex;

use super::device::{self, DeviceInfo};
use super::error::CudaError;
use super::pce::DevicePce;
use super::resident::{PinnedSrs, SrsKey, SrsOnDevice};
use crate::device_lock::DeviceLock;
use crate::health::DeviceHealth;
use crate::options::{B2Placement, Residency};
use crate::placement::Staged;

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
    /// Keep the memory MSMs and a partition's buffers free in the device's pool for the next
    /// partition instead of giving it back at once ([`device::retain_temporaries`]; on by
    /// default, see cuzk-core's `gpus` configuration for the figures).
    pub retain_temporaries: bool,
    /// Tests and benchmarks: stage these queries of every SRS the devices take, whatever the
    /// room (`crate::placement` chooses otherwise). Not in the configuration.
    pub stage_queries: Option<Staged>,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions {
            devices: vec![],
            workers_per_device: 2,
            residency: Residency::Auto,
            b_g2: B2Placement::Gpu,
            device_matvec: true,
            keep_host_params: false,
            retain_temporaries: true,
            stage_queries: None,
        }
    }
}

pub(super) struct Gpu {
    pub(super) info: DeviceInfo,
    /// Held for the device-exclusive region of one partition.
    pub(super) lock: DeviceLock,
    /// Who holds `lock`, for status reports. Kept apart from `lock` so that a status request
    /// never waits seconds for a partition to release the device.
    pub(super) current: Mutex<Option<WorkLabel>>,
    /// Partitions using or waiting for this device.
    pub(super) active: AtomicUsize,
    pub(super) srs: Mutex<Vec<Arc<SrsOnDevice>>>,
    /// Keyed by the address of the host `PreCompiled` (which the PCE cache keeps for good).
    pub(super) pce: Mutex<Vec<(usize, Arc<DevicePce>)>>,
    pub(super) proved: AtomicU64,
    pub(super) failures: AtomicU64,
    pub(super) busy_ns: AtomicU64,
    pub(super) health: DeviceHealth,
}

pub struct CudaProver {
    pub(super) options: CudaOptions,
    pub(super) gpus: Vec<Gpu>,
    pub(super) pinned: Mutex<Vec<PinnedSrs>>,
    pub(super) cpu: CpuProver,
    pub(super) next: AtomicUsize,
    /// The engine's budget, asked before a retry on the CPU builds a, b, c on the host.
    pub(super) host_memory: std::sync::OnceLock<Arc<dyn HostMemory>>,
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
            // A speed setting: a device that refuses it still proves, at the default.
            if let Err(e) = device::retain_temporaries(d.index, options.retain_temporaries) {
                tracing::warn!(ordinal = d.ordinal, error = %e, retain = options.retain_temporaries,
                    "could not set whether the device keeps MSM temporaries; left as it was");
            }
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
        Ok(CudaProver {
            options,
            gpus,
            pinned: Mutex::new(Vec::new()),
            cpu: CpuProver,
            next: AtomicUsize::new(0),
            host_memory: std::sync::OnceLock::new(),
        })
    }

    pub fn device_infos(&self) -> Vec<DeviceInfo> {
        self.gpus.iter().map(|g| g.info.clone()).collect()
    }

    pub(super) fn b_g2_on_gpu(&self) -> bool {
        self.options.b_g2 == B2Placement::Gpu
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

    fn prove(
        &self,
        srs: &Srs,
        witness: Witness,
        rs: Randomness,
        label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError> {
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
                let resident = g.srs.lock().iter().map(|s| s.bytes()).sum::<u64>()
                    + g.pce.lock().iter().map(|(_, p)| p.bytes()).sum::<u64>();
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
        self.gpus
            .iter()
            .map(|g| g.srs.lock().iter().filter(|s| s.key == key).map(|s| s.host_bytes()).sum::<u64>())
            .sum()
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
            Err(e) => {
                tracing::warn!(srs = %srs.path.display(), error = %e, "could not put the parameters on every device now; the host copy stays")
            }
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
