//! The watchdog: no job stays Running forever because a worker hangs on it. Every worker
//! publishes which job it works on and in which stage, and since when (`activity`); a
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

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::shared::Shared;
use crate::error::EngineError;

/// The watchdog thread: until the scheduler stops accepting work, fail every job whose
/// worker has been in one timed stage longer than `limit` (each stall once).
pub(super) fn watchdog_loop(sh: &Shared, limit: Duration) {
    let tick = (limit / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
    while sh.accepting.load(Ordering::SeqCst) {
        std::thread::sleep(tick);
        for (job, stage) in sh.activity.take_stalled(limit) {
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
            sh.fail(&job, &e);
        }
    }
}
