//! What the scheduler reports: a snapshot of its queues, parameters, memory and devices
//! (GetStatus, `/status`), and the Prometheus text with its gauges refreshed from one.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use cuzk_backend::DeviceReport;
use cuzk_filecoin::ProofKind;

use super::job::{Job, Phase};
use super::shared::Shared;
use crate::metrics::process_memory;
use crate::srs_cache::ResidentSrs;

#[derive(Clone, Debug, Default)]
pub struct KindQueue {
    pub pending: u32,
    pub in_progress: u32,
}

#[derive(Clone, Debug)]
pub struct StatusSnapshot {
    pub queues: Vec<(ProofKind, KindQueue)>,
    pub resident_srs: Vec<ResidentSrs>,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub uptime: Duration,
    pub memory_used: u64,
    pub memory_limit: u64,
    /// Of `memory_used`, what loaded parameters and PCE matrices hold.
    pub memory_resident: u64,
    /// Of `memory_used`, what partitions in flight hold (their working sets).
    pub memory_working: u64,
    /// The most the budget ever had reserved at once.
    pub memory_peak: u64,
    pub partitions_in_flight: u64,
    pub synthesis_workers: usize,
    pub prover_workers: usize,
    pub backend: String,
    /// The backend's devices (empty on the CPU).
    pub devices: Vec<DeviceReport>,
    /// This process's resident memory now and at its peak (Linux; 0 elsewhere).
    pub process_rss: u64,
    pub process_peak_rss: u64,
}

/// [`super::Scheduler::status`].
pub(super) fn status(sh: &Shared) -> StatusSnapshot {
    let jobs: Vec<Arc<Job>> = sh.jobs.lock().values().cloned().collect();
    let queues = ProofKind::ALL
        .into_iter()
        .map(|kind| {
            let mut q = KindQueue::default();
            for j in jobs.iter().filter(|j| j.kind == kind) {
                match j.phase() {
                    Phase::Queued => q.pending += 1,
                    Phase::Running => q.in_progress += 1,
                    _ => {}
                }
            }
            (kind, q)
        })
        .collect();
    let (process_rss, process_peak_rss) = process_memory();
    StatusSnapshot {
        queues,
        resident_srs: sh.srs.resident(),
        completed: sh.totals.completed.load(Ordering::Relaxed),
        failed: sh.totals.failed.load(Ordering::Relaxed),
        cancelled: sh.totals.cancelled.load(Ordering::Relaxed),
        uptime: sh.started.elapsed(),
        memory_used: sh.memory.used(),
        memory_limit: sh.memory.limit(),
        memory_resident: sh.memory.resident(),
        memory_working: sh.memory.working(),
        memory_peak: sh.memory.peak(),
        partitions_in_flight: sh.in_flight.load(Ordering::Relaxed),
        synthesis_workers: sh.config.pipeline.synthesis_worker_count(),
        prover_workers: sh.prover_workers,
        backend: sh.backend.name(),
        devices: sh.backend.devices(),
        process_rss,
        process_peak_rss,
    }
}

/// [`super::Scheduler::metrics_text`].
pub(super) fn metrics_text(sh: &Shared) -> String {
    let st = status(sh);
    let m = &sh.metrics;
    for (kind, q) in &st.queues {
        m.queue_pending.with_label_values(&[kind.name()]).set(q.pending as i64);
        m.queue_running.with_label_values(&[kind.name()]).set(q.in_progress as i64);
    }
    m.partitions_in_flight.set(st.partitions_in_flight as i64);
    m.srs_resident_bytes.set(st.resident_srs.iter().map(|r| r.bytes).sum::<u64>() as i64);
    m.memory_used_bytes.set(st.memory_used as i64);
    m.memory_limit_bytes.set(st.memory_limit as i64);
    m.process_rss_bytes.set(st.process_rss as i64);
    m.process_peak_rss_bytes.set(st.process_peak_rss as i64);
    for d in &st.devices {
        let label = d.ordinal.to_string();
        let l = [label.as_str()];
        m.gpu_memory_total_bytes.with_label_values(&l).set(d.memory_total as i64);
        m.gpu_memory_free_bytes.with_label_values(&l).set(d.memory_free as i64);
        m.gpu_resident_bytes.with_label_values(&l).set(d.resident_bytes as i64);
        m.gpu_partitions_proved.with_label_values(&l).set(d.partitions_proved as i64);
        m.gpu_failures.with_label_values(&l).set(d.failures as i64);
        m.gpu_busy_seconds.with_label_values(&l).set(d.busy.as_secs_f64());
        m.gpu_active_partitions.with_label_values(&l).set(d.active as i64);
    }
    m.render()
}
