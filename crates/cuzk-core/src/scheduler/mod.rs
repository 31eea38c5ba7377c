//! The daemon's scheduler: jobs in, verified proofs out, many jobs at once.
//!
//! A job is split into partitions at submit time (bad input is rejected right there). Its
//! partitions enter a priority queue; synthesis workers take the best one as soon as the
//! memory budget allows, and hand the result to a second priority queue that prover workers
//! drain. Partitions of different jobs overlap freely; a job completes when its last
//! partition is proved, and is verified and assembled then. Finished jobs stay queryable for
//! a retention window. A request id attaches a resubmission to an existing job only when the
//! inputs are identical and that job has not failed or been cancelled (see `inputs`). All
//! blocking work runs on the scheduler's own threads; the async side only waits on watch
//! channels.
//!
//! [`Scheduler`] is the whole of it as callers see it; each operation lives in the module of
//! its concern: `lifecycle` (start, shutdown), `submit` (admission and queueing), `jobs`
//! (await, cancel, prune), `residency` (preload, evict), `status`. What they all work on is
//! `shared`; the worker loops are `workers`, what they are doing `activity`, and the thread
//! that watches it `watchdog`.

mod activity;
mod inputs;
mod job;
mod jobs;
mod lane_pool;
mod lifecycle;
mod queue;
mod residency;
mod shared;
mod status;
mod submit;
pub mod timeline;
mod watchdog;
mod work;
mod workers;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use cuzk_backend::ProverBackend;
use cuzk_filecoin::ProofRequest;
use parking_lot::Mutex;

pub use job::{Job, JobResult, JobTimings, Phase, Priority};
pub use jobs::{AwaitOutcome, UnknownJob};
use shared::Shared;
pub use status::{KindQueue, StatusSnapshot};
pub use submit::{SubmitError, SubmitOutcome};

use crate::config::Config;
use crate::error::EngineError;
use crate::memory::MemoryBudget;
use crate::srs_cache::{EvictOutcome, SrsCache};

pub struct Scheduler {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Scheduler {
    /// Start the worker threads. `backend` defaults to the one `gpus.backend` selects.
    pub fn start(config: Config, backend: Option<Arc<dyn ProverBackend>>) -> Result<Arc<Scheduler>, EngineError> {
        let (shared, threads) = lifecycle::start(config, backend)?;
        Ok(Arc::new(Scheduler { shared, threads: Mutex::new(threads) }))
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    pub fn srs(&self) -> &Arc<SrsCache> {
        &self.shared.srs
    }

    /// The one memory budget every load and partition reserves from.
    pub fn memory(&self) -> &Arc<MemoryBudget> {
        &self.shared.memory
    }

    /// Validate, split and enqueue a request. Blocking (decodes the payload and builds the
    /// circuits): call it off the async executor.
    ///
    /// A non-empty `request_id` returns a job submitted under it that has identical inputs
    /// and is queued, running or completed; otherwise the request is proved afresh and the id
    /// names the new job too. Priority is not compared: it cannot change the proof.
    pub fn submit(
        &self,
        request_id: &str,
        priority: Option<Priority>,
        req: ProofRequest,
    ) -> Result<SubmitOutcome, SubmitError> {
        submit::submit(&self.shared, request_id, priority, req)
    }

    pub fn job(&self, job_id: &str) -> Option<Arc<Job>> {
        self.shared.job(job_id)
    }

    /// Wait for a job to end, up to `timeout` (None = forever). The job keeps running after
    /// a timeout.
    pub async fn await_job(&self, job_id: &str, timeout: Option<Duration>) -> Result<AwaitOutcome, UnknownJob> {
        jobs::await_job(&self.shared, job_id, timeout).await
    }

    /// Cancel a job: queued partitions are dropped at once, a running job stops at its next
    /// partition boundary and its memory is released. Returns whether it was running.
    pub fn cancel(&self, job_id: &str) -> Result<bool, UnknownJob> {
        jobs::cancel(&self.shared, job_id)
    }

    /// Load a circuit's PCE matrices now, let the backend put them on its devices, then load
    /// its parameters (why in that order: `residency`). Returns (already_loaded, load time).
    /// Blocking.
    pub fn preload(&self, circuit: &str) -> Result<(bool, Duration), EngineError> {
        residency::preload(&self.shared, circuit)
    }

    pub fn evict(&self, circuit: &str) -> Result<EvictOutcome, EngineError> {
        residency::evict(&self.shared, circuit)
    }

    /// Whether the backend can still prove (false: every GPU lost; see
    /// `ProverBackend::usable`).
    pub fn backend_usable(&self) -> bool {
        self.shared.backend.usable()
    }

    pub fn status(&self) -> StatusSnapshot {
        status::status(&self.shared)
    }

    /// Prometheus text, with gauges refreshed from the current state.
    pub fn metrics_text(&self) -> String {
        status::metrics_text(&self.shared)
    }

    /// The recent per-partition timeline as CSV (see `timeline`).
    pub fn timeline_csv(&self) -> String {
        self.shared.timeline.csv()
    }

    /// A job's tag in the timeline: what unauthenticated views show instead of its id (see
    /// `timeline`).
    pub fn job_tag(&self, job_id: &str) -> String {
        self.shared.timeline.job_tag(job_id)
    }

    /// Forget terminal jobs that ended more than the retention window ago and were not handed
    /// back for a resubmitted request id within it either (see `submit`): such a client
    /// gets the same window to await the job as one that submitted it.
    pub fn prune(&self) -> usize {
        jobs::prune(&self.shared)
    }

    /// Stop accepting work; give running jobs up to `grace` to finish, then cancel whatever
    /// is left (queued jobs at once) with a clear message, and stop the workers.
    pub fn shutdown(&self, grace: Duration) {
        lifecycle::shutdown(&self.shared, &self.threads, grace)
    }
}
