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

mod admission;
mod inputs;
mod job;
mod lane_pool;
mod queue;
pub mod timeline;
mod watchdog;
mod workers;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cuzk_filecoin::{prepare, CircuitId, InputError, ProofKind, ProofRequest};
use cuzk_groth16::{DeviceReport, ProverBackend};
use inputs::{reusable, InputDigest};
use parking_lot::Mutex;

pub use job::{Job, JobResult, JobTimings, Phase, Priority};
use job::NewJob;
use queue::{WorkKey, WorkQueue};
use workers::{Lane, PendingWork, ReadyWork};

use crate::config::Config;
use crate::error::EngineError;
use crate::memory::{MemoryBudget, ProverForm};
use crate::metrics::Metrics;
use crate::pce_cache::PceCache;
use crate::srs_cache::{EvictOutcome, ResidentSrs, SrsCache};

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{0}")]
    ResourceExhausted(String),
    #[error("the daemon is shutting down and accepts no new work")]
    ShuttingDown,
}

pub struct SubmitOutcome {
    pub job_id: String,
    /// Partitions of other jobs ahead of this job's first partition.
    pub queue_position: u32,
    /// True when `request_id` matched a job with identical inputs that is queued, running or
    /// completed, and that job is returned (idempotent resubmit).
    pub existing: bool,
}

pub enum AwaitOutcome {
    Done(JobResult),
    TimedOut,
}

#[derive(Debug, thiserror::Error)]
#[error("unknown job {0:?} (never submitted, or finished longer ago than the retention window)")]
pub struct UnknownJob(pub String);

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

pub(crate) struct Shared {
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
    pub in_flight: AtomicU64,
    pub timeline: timeline::Timeline,
    /// Prover worker threads actually started (the backend's parallelism or the config's).
    pub prover_workers: usize,
    pub totals: Totals,
    pub next_seq: AtomicU64,
    pub started: Instant,
    /// What each worker is doing, for the watchdog (`pipeline.stall_timeout_secs`).
    pub(crate) activity: watchdog::Activity,
}

/// Jobs ended since the scheduler started, by how they ended (the status's totals; the
/// Prometheus counters carry the same per kind).
#[derive(Default)]
pub(crate) struct Totals {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub cancelled: AtomicU64,
}

pub struct Scheduler {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Scheduler {
    /// Start the worker threads. `backend` defaults to the one `gpus.backend` selects.
    pub fn start(config: Config, backend: Option<Arc<dyn ProverBackend>>) -> Result<Arc<Scheduler>, EngineError> {
        config.validate().map_err(|e| EngineError::Internal(e.to_string()))?;
        let limit = match config.memory.budget_bytes {
            0 => MemoryBudget::default_limit(),
            b => b,
        };
        let backend = match backend {
            Some(b) => b,
            None => crate::backend::select(&config)?,
        };
        // A GPU backend knows how many partitions it proves well at once (devices × workers
        // per device); the CPU backend leaves it to pipeline.prover_workers.
        let prover_workers = backend.parallelism().unwrap_or(config.pipeline.prover_workers);
        // With PCE, partitions wait as compact witnesses; with a backend that also evaluates
        // the matrices on its device, a, b, c never occupy host memory, and the budget must
        // not reserve them.
        let form = match (config.pce.enabled && backend.evaluates_matrices(), backend.expands_compact_witness()) {
            (false, _) => ProverForm::HostAbc,
            (true, false) => ProverForm::DeviceMatvec,
            (true, true) => ProverForm::DeviceCompact,
        };
        // Every prover that can hold a partition needs its headroom: with the lane, the
        // deadline prover and the critical one too. The critical prover is not only ever a
        // WinningPoSt's (small): a client may mark any proof CRITICAL.
        let lane = config.pipeline.deadline_lane;
        let memory = MemoryBudget::new(limit, form, config.pce.enabled, prover_workers + 2 * usize::from(lane));
        // A GPU backend's retry on the CPU asks for its a, b, c here, now or not at all.
        backend.attach_host_memory(memory.clone());
        let started = Instant::now();
        let shared = Arc::new(Shared {
            timeline: timeline::Timeline::new(started),
            prover_workers,
            // The daemon's parameters count against its one memory budget, and the backend
            // sees every load (onto its devices) and eviction (off them).
            srs: Arc::new(SrsCache::from_config(&config, &*backend).with_budget(memory.clone(), backend.clone())),
            pce: PceCache::from_config(&config).map(|p| Arc::new(p.with_budget(memory.clone()))),
            backend,
            memory,
            metrics: Metrics::new(&ProofKind::ALL.map(|k| k.name())),
            pending: WorkQueue::default(),
            ready: WorkQueue::default(),
            jobs: Mutex::default(),
            by_request_id: Mutex::default(),
            accepting: AtomicBool::new(true),
            in_flight: AtomicU64::new(0),
            totals: Default::default(),
            next_seq: AtomicU64::new(1),
            started,
            activity: Default::default(),
            config,
        });
        let mut threads = Vec::new();
        // With the lane, CRITICAL work is the critical lane's alone.
        let general = if lane { Lane::General } else { Lane::All };
        for i in 0..shared.config.pipeline.synthesis_worker_count() {
            let s = shared.clone();
            threads.push(spawn(format!("cuzk-synth-{i}"), move || workers::synthesis_loop(&s, general)));
        }
        if lane {
            let (s1, s2) = (shared.clone(), shared.clone());
            threads.push(spawn("cuzk-synth-deadline".into(), move || workers::synthesis_loop(&s1, Lane::Deadline)));
            threads.push(spawn("cuzk-prove-deadline".into(), move || workers::prover_loop(&s2, Lane::Deadline)));
            let (s3, s4) = (shared.clone(), shared.clone());
            threads.push(spawn("cuzk-synth-critical".into(), move || workers::synthesis_loop(&s3, Lane::Critical)));
            threads.push(spawn("cuzk-prove-critical".into(), move || workers::prover_loop(&s4, Lane::Critical)));
        }
        tracing::info!(backend = %shared.backend.name(), prover_workers, "scheduler started");
        for i in 0..prover_workers {
            let s = shared.clone();
            threads.push(spawn(format!("cuzk-prove-{i}"), move || workers::prover_loop(&s, general)));
        }
        if shared.config.pipeline.stall_timeout_secs > 0 {
            let s = shared.clone();
            let limit = Duration::from_secs(s.config.pipeline.stall_timeout_secs);
            threads.push(spawn("cuzk-watchdog".into(), move || watchdog::watchdog_loop(&s, limit)));
        }
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
    pub fn submit(&self, request_id: &str, priority: Option<Priority>, req: ProofRequest) -> Result<SubmitOutcome, SubmitError> {
        let arrived = Instant::now();
        let sh = &self.shared;
        if !sh.accepting.load(Ordering::SeqCst) {
            return Err(SubmitError::ShuttingDown);
        }
        let digest = InputDigest::of(&req);
        // Before the expensive decoding: an identical resubmission is answered at once.
        if let Some(existing) = self.existing(&sh.by_request_id.lock(), request_id, &digest) {
            return Ok(existing);
        }
        // Room for another job at all, before the decoding it would cost.
        admission::admit(sh, 0)?;
        let prepared = prepare(&req)?;
        let circuit = prepared.circuit_id;
        // Its own parameters and matrices count: everything else can be evicted or finishes.
        let resident = sh.srs.expected_bytes(circuit) + sh.pce.as_ref().map_or(0, |p| p.expected_bytes(circuit));
        if !sh.memory.fits(circuit, resident) {
            let e = sh.memory.estimate(circuit);
            return Err(SubmitError::ResourceExhausted(format!(
                "one {circuit} partition needs about {} MiB of working memory, and each of the {} provers that can hold one at once {} MiB more, \
                 beside {} MiB of its parameters and matrices, but the budget is {} MiB (memory.budget_bytes)",
                e.waiting >> 20,
                sh.memory.provers(),
                e.proving >> 20,
                resident >> 20,
                sh.memory.limit() >> 20
            )));
        }
        let kind = prepared.registered.kind();
        let priority = priority.unwrap_or_else(|| Priority::default_for(kind));
        let seq = sh.next_seq.fetch_add(1, Ordering::SeqCst);
        let job_id = format!("{}-{}-{:08x}", kind.name(), seq, rand::random::<u32>());
        let job = Arc::new(Job::new(NewJob {
            id: job_id.clone(),
            request_id: request_id.to_string(),
            inputs: digest,
            kind,
            circuit,
            priority,
            seq,
            partitions: prepared.partitions.len(),
            submitted: arrived,
        }));
        // Register under the request id atomically with the check, so two concurrent
        // submits of one id cannot both create jobs.
        {
            // `accepting` is re-checked under the same lock `shutdown` flips it under, so a job
            // is either seen (and cancelled) by shutdown or refused here — never orphaned.
            let mut ids = sh.by_request_id.lock();
            if !sh.accepting.load(Ordering::SeqCst) {
                return Err(SubmitError::ShuttingDown);
            }
            if let Some(existing) = self.existing(&ids, request_id, &digest) {
                // The same request was submitted concurrently while we were decoding: the
                // first one wins and this submit returns it.
                return Ok(existing);
            }
            admission::admit(sh, job.partitions)?;
            if !request_id.is_empty() {
                // Beside the id's other jobs (different inputs, or failed/cancelled ones).
                ids.entry(request_id.to_string()).or_default().push(job_id.clone());
            }
            sh.jobs.lock().insert(job_id.clone(), job.clone());
        }
        let queue_position = sh.pending.ahead_of(WorkKey::new(priority, seq, 0)) as u32;
        for partition in prepared.partitions {
            let key = WorkKey::new(priority, seq, partition.index);
            sh.pending.push(key, PendingWork { job: job.clone(), partition });
        }
        let decoding = arrived.elapsed();
        sh.metrics.submit_seconds.with_label_values(&[kind.name()]).observe(decoding.as_secs_f64());
        tracing::info!(job = %job_id, %circuit, ?priority, partitions = job.partitions, decode_ms = decoding.as_millis() as u64, "job queued");
        Ok(SubmitOutcome { job_id, queue_position, existing: false })
    }

    /// The job `request_id` names, if a request with inputs `digest` may be answered with it
    /// (`inputs::reusable`). `ids` is the locked request-id map.
    ///
    /// The job is stamped as handed out: the client awaits it in a call of its own, and a
    /// completed job found here may be past its retention, not yet pruned (the daemon prunes
    /// every 30 s); pruned in between, the id the server just named was NOT_FOUND (issue #36,
    /// item 8). Awaiting the job's Arc instead would cover only Prove, which awaits in the
    /// same call. The stamp is made under the request-id lock, which `prune` takes before it
    /// decides, so a prune either ran before the lookup (which then found nothing and the
    /// request is proved afresh) or sees the stamp.
    fn existing(&self, ids: &HashMap<String, Vec<String>>, request_id: &str, digest: &InputDigest) -> Option<SubmitOutcome> {
        if request_id.is_empty() {
            return None;
        }
        let job = ids.get(request_id)?.iter().rev().filter_map(|id| self.job(id)).find(|job| reusable(job, digest))?;
        job.progress.lock().handed_out = Some(Instant::now());
        Some(SubmitOutcome { job_id: job.id.clone(), queue_position: 0, existing: true })
    }

    pub fn job(&self, job_id: &str) -> Option<Arc<Job>> {
        self.shared.jobs.lock().get(job_id).cloned()
    }

    /// Wait for a job to end, up to `timeout` (None = forever). The job keeps running after
    /// a timeout.
    pub async fn await_job(&self, job_id: &str, timeout: Option<Duration>) -> Result<AwaitOutcome, UnknownJob> {
        let job = self.job(job_id).ok_or_else(|| UnknownJob(job_id.into()))?;
        let mut rx = job.subscribe();
        let wait = rx.wait_for(|p| p.is_terminal());
        let finished = match timeout {
            None => wait.await.is_ok(),
            Some(t) => matches!(tokio::time::timeout(t, wait).await, Ok(Ok(_))),
        };
        match (finished, job.result()) {
            (true, Some(r)) => Ok(AwaitOutcome::Done(r)),
            _ => Ok(AwaitOutcome::TimedOut),
        }
    }

    /// Cancel a job: queued partitions are dropped at once, a running job stops at its next
    /// partition boundary and its memory is released. Returns whether it was running.
    pub fn cancel(&self, job_id: &str) -> Result<bool, UnknownJob> {
        let job = self.job(job_id).ok_or_else(|| UnknownJob(job_id.into()))?;
        let was_running = job.phase() == Phase::Running;
        if job.finish(Phase::Cancelled, Vec::new(), Some("cancelled by request".into()), |_| {
            self.shared.count_end(&job, Phase::Cancelled)
        }) {
            self.shared.drop_queued(&job);
            tracing::info!(job = %job_id, was_running, "job cancelled");
        }
        Ok(was_running)
    }

    /// Load a circuit's PCE matrices now (so that the circuit's first proof neither extracts
    /// them nor waits for that: at 32 GiB it takes a minute or more), let the backend put
    /// them on its devices, then load its parameters.
    ///
    /// The matrices go first so that a device's room for the parameters is judged with them
    /// already there: on one H200, 32 GiB PoRep and WindowPoSt parameters both resident plus
    /// both circuits' matrices left no room to prove either, and every proof failed. So the
    /// circuits preloaded first — the deadline ones, in a sensible `srs.preload` — keep their
    /// parameters resident, and a later one that would leave no room streams them.
    /// Returns (already_loaded, load time). Blocking.
    pub fn preload(&self, circuit: &str) -> Result<(bool, Duration), EngineError> {
        let id = CircuitId::parse(circuit)?;
        let start = Instant::now();
        let matrix_bytes = self.shared.pce.as_ref().map_or(0, |pce| pce.expected_bytes(id));
        self.shared.srs.refuse_if_never_fits(id, matrix_bytes)?;
        let pce_now = match &self.shared.pce {
            Some(pce) => {
                // No partition's reservation covers a preload's extraction: it reserves its own.
                let (matrices, source) = pce.get_for_preload(id)?;
                // Onto the devices too, when they evaluate the matrices (a no-op once there).
                self.shared.backend.adopt_matrices(&*matrices);
                source != crate::pce_cache::PceSource::Memory
            }
            None => false,
        };
        let (_, loaded_now) = self.shared.srs.get(id)?;
        let loaded = loaded_now || pce_now;
        Ok((!loaded, if loaded { start.elapsed() } else { Duration::ZERO }))
    }

    pub fn evict(&self, circuit: &str) -> Result<EvictOutcome, EngineError> {
        let id = CircuitId::parse(circuit)?;
        Ok(self.shared.srs.evict(id))
    }

    /// Whether the backend can still prove (false: every GPU lost; see
    /// `ProverBackend::usable`).
    pub fn backend_usable(&self) -> bool {
        self.shared.backend.usable()
    }

    pub fn status(&self) -> StatusSnapshot {
        let sh = &self.shared;
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
        let (process_rss, process_peak_rss) = crate::metrics::process_memory();
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

    /// Prometheus text, with gauges refreshed from the current state.
    pub fn metrics_text(&self) -> String {
        let st = self.status();
        let m = &self.shared.metrics;
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
    /// back for a resubmitted request id within it either (see `existing`): such a client
    /// gets the same window to await the job as one that submitted it.
    pub fn prune(&self) -> usize {
        let retention = Duration::from_secs(self.shared.config.daemon.job_retention_secs);
        let sh = &self.shared;
        // Lock order as in `submit`: request ids, then jobs (then a job's progress).
        let mut ids = sh.by_request_id.lock();
        let mut jobs = sh.jobs.lock();
        let old: Vec<String> = jobs
            .values()
            .filter(|j| {
                let p = j.progress.lock();
                let past = |t: Option<Instant>| t.is_none_or(|t| t.elapsed() > retention);
                p.finished.is_some() && past(p.finished) && past(p.handed_out)
            })
            .map(|j| j.id.clone())
            .collect();
        for id in &old {
            if let Some(j) = jobs.remove(id) {
                if let Some(of_id) = ids.get_mut(&j.request_id) {
                    of_id.retain(|x| x != id);
                    if of_id.is_empty() {
                        ids.remove(&j.request_id);
                    }
                }
            }
        }
        old.len()
    }

    /// Stop accepting work; give running jobs up to `grace` to finish, then cancel whatever
    /// is left (queued jobs at once) with a clear message, and stop the workers.
    pub fn shutdown(&self, grace: Duration) {
        let sh = &self.shared;
        {
            let _ids = sh.by_request_id.lock();
            sh.accepting.store(false, Ordering::SeqCst);
        }
        let all: Vec<Arc<Job>> = sh.jobs.lock().values().cloned().collect();
        for j in all.iter().filter(|j| j.phase() == Phase::Queued) {
            if j.finish(Phase::Cancelled, vec![], Some("daemon shutting down before the job started".into()), |_| {
                sh.count_end(j, Phase::Cancelled)
            }) {
                sh.drop_queued(j);
            }
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && all.iter().any(|j| j.phase() == Phase::Running) {
            std::thread::sleep(Duration::from_millis(100));
        }
        for j in all.iter().filter(|j| !j.phase().is_terminal()) {
            j.finish(Phase::Cancelled, vec![], Some("daemon shut down before the job finished".into()), |_| {
                sh.count_end(j, Phase::Cancelled)
            });
        }
        sh.pending.close();
        sh.ready.close();
        // Workers finish the partition in hand (bounded by one partition's work) and exit.
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}

impl Shared {
    fn drop_queued(&self, job: &Arc<Job>) {
        self.pending.remove_where(|w| Arc::ptr_eq(&w.job, job));
        self.ready.remove_where(|w| Arc::ptr_eq(&w.job, job));
    }

    pub(crate) fn count_end(&self, job: &Job, phase: Phase) {
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

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::Builder::new().name(name).spawn(f).expect("spawning a scheduler thread")
}
