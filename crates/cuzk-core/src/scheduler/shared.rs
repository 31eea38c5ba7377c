//! What every part of the scheduler works on, made once by `lifecycle::start`: the caches,
//! the budget and the backend, the two work queues, the job table and the counters; and how a
//! job ends early (failed or cancelled: counted, and its queued partitions dropped).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use cuzk_backend::ProverBackend;
use parking_lot::Mutex;

use super::activity::Activity;
use super::job::{Job, Phase};
use super::queue::WorkQueue;
use super::timeline::Timeline;
use super::work::{PendingWork, ReadyWork};
use crate::config::Config;
use crate::error::EngineError;
use crate::memory::MemoryBudget;
use crate::metrics::Metrics;
use crate::pce_cache::PceCache;
use crate::srs_cache::SrsCache;

pub(super) struct Shared {
    pub config: Config,
    pub srs: Arc<SrsCache>,
    /// Present when `pce.enabled`.
    pub pce: Option<Arc<PceCache>>,
    pub backend: Arc<dyn ProverBackend>,
    pub memory: Arc<MemoryBudget>,
    pub metrics: Metrics,
    pub pending: WorkQueue<PendingWork>,
    pub ready: WorkQueue<ReadyWork>,
    pub jobs: Mutex<HashMap<String, Arc<Job>>>,
    /// Request id → every job submitted under it and not yet pruned, oldest first. Curio
    /// sends all partitions of one WindowPoSt deadline under one id, so a retry of partition 0
    /// after partition 1 must still find partition 0's job (issue #36, item 8): each of them
    /// is a candidate for re-attaching, the newest first.
    pub by_request_id: Mutex<HashMap<String, Vec<String>>>,
    pub accepting: AtomicBool,
    /// Partitions from synthesis start to proof end (an `Arc`: each one's `InFlight` guard
    /// holds it).
    pub in_flight: Arc<AtomicU64>,
    pub timeline: Timeline,
    /// Prover worker threads actually started (the backend's parallelism or the config's).
    pub prover_workers: usize,
    pub totals: Totals,
    pub next_seq: AtomicU64,
    pub started: Instant,
    /// What each worker is doing, for the watchdog (`pipeline.stall_timeout_secs`).
    pub activity: Activity,
}

/// Jobs ended since the scheduler started, by how they ended (the status's totals; the
/// Prometheus counters carry the same per kind).
#[derive(Default)]
pub(super) struct Totals {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub cancelled: AtomicU64,
}

impl Shared {
    pub(super) fn job(&self, job_id: &str) -> Option<Arc<Job>> {
        self.jobs.lock().get(job_id).cloned()
    }

    /// Fail `job` with `err`, unless it already ended (first outcome wins).
    pub(super) fn fail(&self, job: &Arc<Job>, err: &EngineError) {
        if job.finish(Phase::Failed, Vec::new(), Some(err.to_string()), |_| self.count_end(job, Phase::Failed)) {
            tracing::warn!(job = %job.id, error = %err, "job failed");
            self.drop_queued(job);
        }
    }

    /// Drop `job`'s partitions from both queues (it ended: nothing of it is to be done).
    pub(super) fn drop_queued(&self, job: &Arc<Job>) {
        self.pending.remove_where(|w| Arc::ptr_eq(&w.job, job));
        self.ready.remove_where(|w| Arc::ptr_eq(&w.job, job));
    }

    pub(super) fn count_end(&self, job: &Job, phase: Phase) {
        let (total, counter) = match phase {
            Phase::Completed => (&self.totals.completed, &self.metrics.completed),
            Phase::Failed => (&self.totals.failed, &self.metrics.failed),
            Phase::Cancelled => (&self.totals.cancelled, &self.metrics.cancelled),
            _ => return,
        };
        total.fetch_add(1, Ordering::Relaxed);
        counter.with_label_values(&[job.kind.name()]).inc();
    }
}
