//! Submitting a request: its inputs digested (an identical resubmission under its request id
//! is answered with the existing job, see `inputs`), decoded and split into partitions
//! (bad input is refused here), checked against the memory budget and the admission caps,
//! and its partitions queued.
//!
//! Bounded admission: caps on the jobs and partitions the scheduler holds at once
//! (`pipeline.max_queued_jobs`, `pipeline.max_queued_partitions`). Every queued job keeps its
//! decoded request and circuits in memory, so without a cap a flood of submits (or a client
//! retrying in a loop) could grow the daemon until the kernel kills it. Beyond a cap a submit
//! is refused with RESOURCE_EXHAUSTED, which Curio retries later.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use cuzk_filecoin::{prepare, InputError, ProofRequest};

use super::inputs::InputDigest;
use super::job::{Job, JobState, Priority};
use super::queue::WorkKey;
use super::shared::Shared;
use super::work::PendingWork;

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

/// [`super::Scheduler::submit`].
pub(super) fn submit(
    sh: &Shared,
    request_id: &str,
    priority: Option<Priority>,
    req: ProofRequest,
) -> Result<SubmitOutcome, SubmitError> {
    let arrived = Instant::now();
    if !sh.accepting.load(Ordering::SeqCst) {
        return Err(SubmitError::ShuttingDown);
    }
    let digest = InputDigest::of(&req);
    // Before the expensive decoding: an identical resubmission is answered at once.
    if let Some(existing) = existing(sh, &sh.by_request_id.lock(), request_id, &digest) {
        return Ok(existing);
    }
    // Room for another job at all, before the decoding it would cost.
    admit(sh, 0)?;
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
    let job = Arc::new(Job {
        id: job_id.clone(),
        request_id: request_id.to_string(),
        inputs: digest,
        kind,
        circuit,
        priority,
        seq,
        partitions: prepared.partitions.len(),
        submitted: arrived,
        state: JobState::queued(),
    });
    // Register under the request id atomically with the check, so two concurrent
    // submits of one id cannot both create jobs.
    {
        // `accepting` is re-checked under the same lock `shutdown` flips it under, so a job
        // is either seen (and cancelled) by shutdown or refused here — never orphaned.
        let mut ids = sh.by_request_id.lock();
        if !sh.accepting.load(Ordering::SeqCst) {
            return Err(SubmitError::ShuttingDown);
        }
        if let Some(existing) = existing(sh, &ids, request_id, &digest) {
            // The same request was submitted concurrently while we were decoding: the
            // first one wins and this submit returns it.
            return Ok(existing);
        }
        admit(sh, job.partitions)?;
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
/// ([`Job::may_answer`]). `ids` is the locked request-id map.
///
/// The job is stamped as handed out: the client awaits it in a call of its own, and a
/// completed job found here may be past its retention, not yet pruned (the daemon prunes
/// every 30 s); pruned in between, the id the server just named was NOT_FOUND (issue #36,
/// item 8). Awaiting the job's Arc instead would cover only Prove, which awaits in the
/// same call. The stamp is made under the request-id lock, which `prune` takes before it
/// decides, so a prune either ran before the lookup (which then found nothing and the
/// request is proved afresh) or sees the stamp.
fn existing(
    sh: &Shared,
    ids: &HashMap<String, Vec<String>>,
    request_id: &str,
    digest: &InputDigest,
) -> Option<SubmitOutcome> {
    if request_id.is_empty() {
        return None;
    }
    let job = ids.get(request_id)?.iter().rev().filter_map(|id| sh.job(id)).find(|job| job.may_answer(digest))?;
    job.state.progress.lock().handed_out = Some(Instant::now());
    Some(SubmitOutcome { job_id: job.id.clone(), queue_position: 0, existing: true })
}

/// Jobs not yet terminal, and their partitions. Walks the job table (finished jobs stay in it
/// for the retention window), which is small next to decoding one request.
fn outstanding(sh: &Shared) -> (usize, usize) {
    let jobs = sh.jobs.lock();
    jobs.values().filter(|j| !j.phase().is_terminal()).fold((0, 0), |(n, p), j| (n + 1, p + j.partitions))
}

/// Refuse a new job of `partitions` partitions if it would pass either cap. Called once
/// before decoding (with 0 partitions: is there room for any job at all?) and again, with the
/// real count, under the request-id lock where the job is registered, so concurrent submits
/// cannot overshoot together.
fn admit(sh: &Shared, partitions: usize) -> Result<(), SubmitError> {
    let (max_jobs, max_partitions) = (sh.config.pipeline.max_queued_jobs, sh.config.pipeline.max_queued_partitions);
    if partitions > max_partitions {
        return Err(SubmitError::ResourceExhausted(format!(
            "the request has {partitions} partitions, more than pipeline.max_queued_partitions ({max_partitions}) allows at once"
        )));
    }
    let (jobs, queued) = outstanding(sh);
    if jobs >= max_jobs {
        return Err(SubmitError::ResourceExhausted(format!(
            "{jobs} jobs are queued or running, the most pipeline.max_queued_jobs allows; retry when some finish"
        )));
    }
    if queued + partitions > max_partitions || (partitions == 0 && queued >= max_partitions) {
        return Err(SubmitError::ResourceExhausted(format!(
            "{queued} partitions are queued or running and this request adds {partitions}, more than \
             pipeline.max_queued_partitions ({max_partitions}) allows; retry when some finish"
        )));
    }
    Ok(())
}
