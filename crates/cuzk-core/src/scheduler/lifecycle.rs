//! Starting the scheduler — the budget sized from the backend, the caches made with their
//! hand-offs to the budget and the backend, every worker thread spawned — and stopping it:
//! no new work, running jobs given their grace, the rest cancelled, the threads joined.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cuzk_backend::{ProverBackend, WitnessForm};
use cuzk_filecoin::ProofKind;
use parking_lot::Mutex;

use super::job::{Job, Phase};
use super::queue::WorkQueue;
use super::shared::Shared;
use super::timeline::Timeline;
use super::watchdog;
use super::workers::{self, Lane};
use crate::config::Config;
use crate::error::EngineError;
use crate::memory::MemoryBudget;
use crate::metrics::Metrics;
use crate::pce_cache::PceCache;
use crate::srs_cache::SrsCache;

/// Everything the scheduler works on, made once, and its threads started (see
/// [`super::Scheduler::start`]).
pub(super) fn start(
    config: Config,
    backend: Option<Arc<dyn ProverBackend>>,
) -> Result<(Arc<Shared>, Vec<JoinHandle<()>>), EngineError> {
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
    let form =
        if config.pce.enabled { backend.accepts().reached_from(WitnessForm::Compact) } else { WitnessForm::Assignment };
    // Every prover that can hold a partition needs its headroom: with the lane, the
    // deadline provers and the critical one too. The critical prover is not only ever a
    // WinningPoSt's (small): a client may mark any proof CRITICAL.
    let lane = config.pipeline.deadline_lane;
    // One deadline prover per device: the lane alone proves WindowPoSt, and a deadline's
    // partitions should not go through one device at a time on a host of several.
    let deadline_provers = if lane { backend.devices().len().max(1) } else { 0 };
    let lane_provers = deadline_provers + usize::from(lane);
    let memory = MemoryBudget::new(limit, form, config.pce.enabled, prover_workers + lane_provers);
    // A GPU backend's retry on the CPU asks for its a, b, c here, now or not at all.
    backend.attach_host_memory(memory.clone());
    let started = Instant::now();
    let shared = Arc::new(Shared {
        timeline: Timeline::new(started),
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
        in_flight: Default::default(),
        totals: Default::default(),
        next_seq: AtomicU64::new(1),
        started,
        activity: Default::default(),
        config,
    });
    let mut threads = Vec::new();
    // With the lanes, HIGH work is the deadline lane's alone and CRITICAL work the critical
    // lane's: each runs on its lane's rayon pools, never on the global one (`Lane`).
    let general = if lane { Lane::General } else { Lane::All };
    for i in 0..shared.config.pipeline.synthesis_worker_count() {
        let s = shared.clone();
        threads.push(spawn(format!("cuzk-synth-{i}"), move || workers::synthesis_loop(&s, general)));
    }
    if lane {
        let s1 = shared.clone();
        threads.push(spawn("cuzk-synth-deadline".into(), move || workers::synthesis_loop(&s1, Lane::Deadline)));
        for i in 0..deadline_provers {
            let s2 = shared.clone();
            threads.push(spawn(format!("cuzk-prove-deadline-{i}"), move || workers::prover_loop(&s2, Lane::Deadline)));
        }
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
    Ok((shared, threads))
}

/// [`super::Scheduler::shutdown`].
pub(super) fn shutdown(sh: &Shared, threads: &Mutex<Vec<JoinHandle<()>>>, grace: Duration) {
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
    for t in threads.lock().drain(..) {
        let _ = t.join();
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::Builder::new().name(name).spawn(f).expect("spawning a scheduler thread")
}
