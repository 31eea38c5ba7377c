//! The two worker loops. Synthesis workers: best pending partition → reserve memory →
//! synthesize → ready queue. Prover workers: best ready partition → parameters → prove →
//! release memory → record; the worker that records a job's last partition verifies and
//! assembles the proof. Both loops check for cancellation at every partition boundary, and
//! both run each partition under `catch_unwind`: a panic in any stage fails that job with
//! "internal error: panic in <stage>: <message>" and the worker carries on. The deadline and
//! critical lanes' workers run each stage on a private rayon pool (`lane_pool`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use cuzk_backend::WorkLabel;
use cuzk_filecoin::catch_panic;

use super::activity::StageMark;
use super::job::{Job, JobTimings, Phase, Priority};
use super::lane_pool::LanePool;
use super::queue::WorkKey;
use super::shared::Shared;
use super::timeline::TimelineEntry;
use super::work::{InFlight, PendingWork, ReadyWork};
use crate::error::EngineError;
use crate::faults::{self, JobContext, Stage};
use crate::pipeline::{self, Assembled};
use crate::synthetic::{unverified_message, Verification};

/// Which work a worker takes, the best first. With the deadline lane off there are only
/// general workers, and they take everything (`All`). With it on (the default):
/// - the general workers take NORMAL and LOW work (`General`), and leave the deadline work
///   to the lanes. Were they to take HIGH work too, an idle general synthesis worker (the
///   default is one per core less two) would win the race for a WindowPoSt partition as
///   often as the lane's, and synthesize it on the global rayon pool, behind every PoRep
///   partition's tasks there: the very wait the lane's pool exists to remove;
/// - the deadline lane's own synthesis worker and prover workers (one per device) take all
///   HIGH work (WindowPoSt), so it never waits for a worker busy with a PoRep partition, and
///   its parallel work runs on the lane's private rayon pools, beside the PoRep stream's
///   instead of behind it;
/// - the critical lane's take all CRITICAL work (WinningPoSt), so it never waits for a worker
///   busy with a WindowPoSt partition (~10 s at 32 GiB), and its parallel work runs on the
///   lane's private rayon pools ([`LanePool`]), never queued behind theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    All,
    General,
    Deadline,
    Critical,
}

impl Lane {
    fn takes(self, p: Priority) -> bool {
        match self {
            Lane::All => true,
            Lane::General => p < Priority::High,
            Lane::Deadline => p == Priority::High,
            Lane::Critical => p == Priority::Critical,
        }
    }
}

/// What a panic in a worker stage becomes: that job's error. The worker itself lives on.
fn panicked(stage: &str, message: &str) -> EngineError {
    EngineError::Internal(format!("panic in {stage}: {message}"))
}

/// Synthesis workers: each partition runs under `catch_unwind`, so a panic fails its job with
/// the stage named and the loop goes on. Whatever the partition held (its memory
/// reservation, its in-flight count) is dropped while unwinding, before the job is failed.
pub(super) fn synthesis_loop(sh: &Arc<Shared>, lane: Lane) {
    let pool = LanePool::for_worker(lane, "synth");
    while let Some(work) = sh.pending.pop_if(|p| lane.takes(p)) {
        let job = work.job.clone();
        supervised(sh, &pool, job, "synthesis admission", |stage| synthesize_one(sh, work, stage));
    }
}

/// One partition's stages, on the worker's pool: under its job's context (`faults`), watched
/// by the watchdog from `admission` on, and under `catch_unwind`, so that a panic fails the
/// job with the stage it happened in and the worker lives on.
fn supervised(
    sh: &Arc<Shared>,
    pool: &LanePool,
    job: Arc<Job>,
    admission: &'static str,
    stages: impl FnOnce(&StageMark) + Send,
) {
    pool.run(|| {
        let _context = JobContext::enter(&job.request_id);
        let stage = StageMark::new(&sh.activity, &job, admission);
        if let Err(message) = catch_panic(|| stages(&stage)) {
            sh.fail(&job, &panicked(stage.get(), &message));
        }
    });
}

fn synthesize_one(sh: &Arc<Shared>, PendingWork { job, partition }: PendingWork, stage: &StageMark) {
    if job.is_cancelled_or_done() {
        return;
    }
    // The circuit's parameters before any working memory: a partition that holds memory in
    // the budget then always has its parameters loaded, so a load that finds the budget full
    // can wait for partitions in flight to finish (they need nothing more to do so) and is
    // never what keeps them waiting.
    stage.set(Stage::SrsLoad.name());
    let srs_start = Instant::now();
    let waiting = |idle: bool| {
        if idle {
            stage.wait("parameter load: waiting for memory");
        } else if stage.get() != Stage::SrsLoad.name() {
            stage.set(Stage::SrsLoad.name());
        }
    };
    let (srs, loaded_now) = match sh.srs.get_or_wait(job.circuit, || job.is_cancelled_or_done(), waiting) {
        Ok(s) => s,
        Err(e) => return sh.fail(&job, &e),
    };
    if loaded_now {
        job.state.progress.lock().srs_load += srs_start.elapsed();
    }
    stage.wait("synthesis admission");
    let estimate = sh.memory.estimate(job.circuit);
    let Some(mut memory) = sh.memory.reserve_waiting(estimate, || {
        job.is_cancelled_or_done() || !sh.accepting.load(Ordering::SeqCst) && job.phase() == Phase::Queued
    }) else {
        return;
    };
    if !job.mark_started() {
        return;
    }
    sh.metrics.queue_wait_seconds.with_label_values(&[job.kind.name()]).observe(job.submitted.elapsed().as_secs_f64());
    let in_flight = InFlight::enter(&sh.in_flight);
    let index = partition.index;
    let pce = match &sh.pce {
        Some(cache) => {
            stage.set(Stage::PceLoad.name());
            match cache.get(job.circuit) {
                Ok((pc, _)) => Some(pc),
                Err(e) => return sh.fail(&job, &e),
            }
        }
        None => None,
    };
    stage.set(Stage::Synthesis.name());
    faults::hit(Stage::Synthesis);
    match pipeline::synthesize(partition, pce.as_ref()) {
        Ok(s) => {
            let path = if s.via_pce() { "pce" } else { "plain" };
            sh.metrics.synthesized.with_label_values(&[path]).inc();
            // A compact witness: hold what it really holds while it waits (~2 % of the
            // plain one at 32 GiB; the first estimate assumed all of it). A full assignment
            // keeps its estimate, which also covers the prover's copies.
            let held = s.heap_bytes();
            sh.memory.observe(job.circuit, s.num_constraints(), held);
            if s.via_pce() {
                memory.resize(held);
            }
            sh.metrics.synthesis_seconds.with_label_values(&[job.kind.name()]).observe(s.synthesis_time.as_secs_f64());
            if job.is_cancelled_or_done() {
                return;
            }
            let key = WorkKey::new(job.priority, job.seq, index);
            sh.ready.push(key, ReadyWork { job, synthesized: s, srs, _memory: memory, _in_flight: in_flight });
        }
        Err(e) => sh.fail(&job, &e),
    }
}

/// Prover workers, supervised like [`synthesis_loop`]: a panic while loading parameters,
/// proving, or verifying and assembling fails that job (its reservations are released while
/// unwinding) and the worker takes the next partition.
pub(super) fn prover_loop(sh: &Arc<Shared>, lane: Lane) {
    let pool = LanePool::for_worker(lane, "prove");
    while let Some(work) = sh.ready.pop_if(|p| lane.takes(p)) {
        let job = work.job.clone();
        supervised(sh, &pool, job, "prover admission", |stage| prove_one(sh, work, stage));
    }
}

fn prove_one(sh: &Arc<Shared>, ReadyWork { job, synthesized, srs, _memory, _in_flight }: ReadyWork, stage: &StageMark) {
    if job.is_cancelled_or_done() {
        return;
    }
    let (synthesis_start, synthesis_time) = (synthesized.synthesis_start, synthesized.synthesis_time);
    stage.set(Stage::Prove.name());
    let prove_start = Instant::now();
    // The prover's own share (the expanded witness, host a, b, c); never waits.
    let proving = sh.memory.reserve_proving(sh.memory.estimate(job.circuit).proving);
    let label =
        WorkLabel { job_id: job.id.clone(), proof_kind: job.kind.name().into(), urgency: job.priority.urgency() };
    faults::hit(Stage::Prove);
    let proved = match pipeline::prove(&*sh.backend, &srs, synthesized, &label) {
        Ok(p) => p,
        Err(e) => return sh.fail(&job, &e),
    };
    drop((proving, _memory, _in_flight));
    stage.set("recording the partition");
    sh.timeline.record(TimelineEntry {
        job: job.id.clone(),
        kind: job.kind.name(),
        partition: proved.index,
        synthesis_start,
        synthesis_end: synthesis_start + synthesis_time,
        prove_start,
        prove_end: Instant::now(),
        device: proved.prove_timings.device,
        device_span: proved.prove_timings.device_span,
        phases: proved.prove_timings.clone(),
    });
    sh.metrics.prove_seconds.with_label_values(&[job.kind.name()]).observe(proved.prove_timings.total.as_secs_f64());
    if proved.prove_timings.device.is_some() {
        sh.metrics
            .device_wait_seconds
            .with_label_values(&[job.kind.name()])
            .observe(proved.prove_timings.device_wait.as_secs_f64());
    }
    let Some(all) = job.record(proved) else { return };
    stage.set(Stage::Verify.name());
    faults::hit(Stage::Verify);
    let assembled = pipeline::verify_and_assemble(&srs, all, job.partitions);
    // The parameters are let go before the job ends: a client that sees it end may evict
    // them at once, and `SrsCache::evict` refuses parameters still held (`InUse`). (The
    // job's other partitions let go as they recorded theirs, before this one verified.)
    drop(srs);
    match assembled {
        Ok(a) if a.verification == Verification::SkippedSynthetic => finish_unverified(sh, &job, a.proof),
        Ok(Assembled { proof, .. }) => {
            let account = |t: &JobTimings| {
                sh.count_end(&job, Phase::Completed);
                sh.metrics.proof_seconds.with_label_values(&[job.kind.name()]).observe(t.total.as_secs_f64());
            };
            if job.finish(Phase::Completed, proof, None, account) {
                tracing::info!(job = %job.id, "job completed and verified");
            }
        }
        Err(e) => sh.fail(&job, &e),
    }
}

/// A proof made with synthetic parameters: the job ends FAILED (a client must never take it for
/// a proof) with the UNVERIFIED message and the bytes attached, counted apart from real failures.
fn finish_unverified(sh: &Shared, job: &Arc<Job>, proof: Vec<u8>) {
    let account = |_: &JobTimings| {
        sh.count_end(job, Phase::Failed);
        sh.metrics.unverified_synthetic.with_label_values(&[job.kind.name()]).inc();
    };
    if job.finish(Phase::Failed, proof, Some(unverified_message(job.circuit)), account) {
        tracing::warn!(job = %job.id, circuit = %job.circuit, "job proved with SYNTHETIC parameters: returned FAILED/UNVERIFIED");
    }
}
