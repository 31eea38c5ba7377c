//! The watchdog: no job stays Running forever because a worker hangs on it. Every worker
//! publishes which job it works on and in which stage, and since when ([`StageMark`]); a
//! thread checks them and fails a job whose stage has not moved for
//! `pipeline.stall_timeout_secs` (a deadlocked device call, a parameter file on a dead
//! mount, a storage-proofs loop). It cannot stop the stuck thread, but the job ends with a
//! message naming the stage, AwaitProof and Prove return, and the job's queued partitions
//! are dropped; if the stage ever returns, its worker finds the job ended and goes on. A
//! stall in the prove stage is also reported to the backend, which takes the device holding
//! the partition out of service (`ProverBackend::stalled`).
//!
//! Time a partition legitimately spends waiting is not timed: for its memory reservation, or
//! in a parameter load that waits for other jobs to free memory (also when it is queued
//! behind another partition's such load). Only stages that do work are. A job whose partitions wait in the queue behind other work
//! is not stalled either; it has no worker, so it is not watched until one takes it.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::job::Job;
use super::Shared;
use crate::error::EngineError;

struct Busy {
    job: Arc<Job>,
    stage: &'static str,
    /// When the stage started; None while the worker waits (untimed).
    since: Option<Instant>,
}

/// What each worker is doing now, by worker token.
#[derive(Default)]
pub(crate) struct Activity {
    busy: Mutex<HashMap<u64, Busy>>,
    next: AtomicU64,
}

/// A worker's claim on one partition of `job`: registered on creation, updated at every
/// stage, removed on drop (also when the stage panicked).
pub(super) struct StageMark<'a> {
    activity: &'a Activity,
    token: u64,
    stage: Cell<&'static str>,
}

impl<'a> StageMark<'a> {
    /// Start watching a worker on `job`, untimed in `stage` until [`StageMark::set`].
    pub(super) fn new(sh: &'a Shared, job: &Arc<Job>, stage: &'static str) -> Self {
        let token = sh.activity.next.fetch_add(1, Ordering::Relaxed);
        sh.activity.busy.lock().insert(token, Busy { job: job.clone(), stage, since: None });
        StageMark { activity: &sh.activity, token, stage: Cell::new(stage) }
    }

    /// Enter a stage that does work: the watchdog times it from now.
    pub(super) fn set(&self, stage: &'static str) {
        self.update(stage, Some(Instant::now()));
    }

    /// Enter a stage that waits for others (memory): not timed.
    pub(super) fn wait(&self, stage: &'static str) {
        self.update(stage, None);
    }

    /// The current stage (named in a caught panic's message).
    pub(super) fn get(&self) -> &'static str {
        self.stage.get()
    }

    fn update(&self, stage: &'static str, since: Option<Instant>) {
        self.stage.set(stage);
        if let Some(b) = self.activity.busy.lock().get_mut(&self.token) {
            b.stage = stage;
            b.since = since;
        }
    }
}

impl Drop for StageMark<'_> {
    fn drop(&mut self) {
        self.activity.busy.lock().remove(&self.token);
    }
}

/// The watchdog thread: until the scheduler stops accepting work, fail every job whose
/// worker has been in one timed stage longer than `limit` (each stall once).
pub(super) fn watchdog_loop(sh: &Arc<Shared>, limit: Duration) {
    let tick = (limit / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
    while sh.accepting.load(Ordering::SeqCst) {
        std::thread::sleep(tick);
        let stalled: Vec<(Arc<Job>, &'static str)> = {
            let mut busy = sh.activity.busy.lock();
            busy.values_mut()
                .filter(|b| b.since.is_some_and(|t| t.elapsed() > limit) && !b.job.is_cancelled_or_done())
                .map(|b| {
                    // Reported once; the stage stays "stuck" but is no longer timed.
                    b.since = None;
                    (b.job.clone(), b.stage)
                })
                .collect()
        };
        for (job, stage) in stalled {
            tracing::error!(job = %job.id, stage, secs = limit.as_secs(), "no progress: failing the job (its worker is stuck)");
            // Stuck in a device's region, the worker holds that device for good: the backend
            // takes the device out of service, and with none left the daemon exits for its
            // supervisor to restart it (issue #36, item 2).
            if stage == crate::faults::Stage::Prove.name() && sh.backend.stalled(&job.id) && !sh.backend.usable() {
                tracing::error!("every device is out of service: the daemon stops so that its supervisor restarts it");
            }
            let e = EngineError::Internal(format!(
                "no progress for {} s in {stage} (pipeline.stall_timeout_secs); the job was failed, its worker is stuck",
                limit.as_secs()
            ));
            super::workers::fail(sh, &job, &e);
        }
    }
}
