//! What a backend reports: where the time of one partition proof went, and the state of each
//! device it proves on.

use std::time::{Duration, Instant};

use cuzk_groth16::CpuTimings;

/// Where the time of one partition proof went.
#[derive(Clone, Debug, Default)]
pub struct ProveTimings {
    /// The device that proved it (GPU backends); None on the CPU.
    pub device: Option<u32>,
    /// Waiting for the device to be free (another partition held it).
    pub device_wait: Duration,
    /// When this partition held the device, for timelines.
    pub device_span: Option<(Instant, Instant)>,
    /// Host → device copies of a, b, c or the witness (GPU backends).
    pub upload: Duration,
    /// Expanding a compact witness before proving (PCE path; set by the engine).
    pub witness_expand: Duration,
    /// a = A·w, b = B·w, c = C·w from pre-compiled matrices: on the device (GPU-resident
    /// path), or on the host just before proving (set by the engine).
    pub matvec: Duration,
    pub ntt: Duration,
    pub msm_h: Duration,
    pub msm_l: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
    pub total: Duration,
}

impl From<CpuTimings> for ProveTimings {
    fn from(t: CpuTimings) -> Self {
        let CpuTimings { ntt, msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2, total } = t;
        ProveTimings { ntt, msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2, total, ..Default::default() }
    }
}

/// One accelerator as a backend reports it.
#[derive(Clone, Debug, Default)]
pub struct DeviceReport {
    /// The CUDA ordinal (as the process sees devices).
    pub ordinal: u32,
    pub name: String,
    pub memory_total: u64,
    pub memory_free: u64,
    /// Bytes of parameters (and PCE matrices) kept on the device.
    pub resident_bytes: u64,
    pub partitions_proved: u64,
    pub failures: u64,
    /// Total time the device was held by a partition.
    pub busy: Duration,
    /// Partitions on the device or waiting for it right now.
    pub active: usize,
    /// The partition holding the device right now (None when idle).
    pub current: Option<crate::WorkLabel>,
}
