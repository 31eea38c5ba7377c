//! The job table seen from outside: awaiting a job's end, cancelling it, and forgetting
//! finished jobs after the retention window (`daemon.job_retention_secs`).

use std::time::{Duration, Instant};

use super::job::{JobResult, Phase};
use super::shared::Shared;

pub enum AwaitOutcome {
    Done(JobResult),
    TimedOut,
}

#[derive(Debug, thiserror::Error)]
#[error("unknown job {0:?} (never submitted, or finished longer ago than the retention window)")]
pub struct UnknownJob(pub String);

/// [`super::Scheduler::await_job`].
pub(super) async fn await_job(
    sh: &Shared,
    job_id: &str,
    timeout: Option<Duration>,
) -> Result<AwaitOutcome, UnknownJob> {
    let job = sh.job(job_id).ok_or_else(|| UnknownJob(job_id.into()))?;
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

/// [`super::Scheduler::cancel`].
pub(super) fn cancel(sh: &Shared, job_id: &str) -> Result<bool, UnknownJob> {
    let job = sh.job(job_id).ok_or_else(|| UnknownJob(job_id.into()))?;
    let was_running = job.phase() == Phase::Running;
    if job.finish(Phase::Cancelled, Vec::new(), Some("cancelled by request".into()), |_| {
        sh.count_end(&job, Phase::Cancelled)
    }) {
        sh.drop_queued(&job);
        tracing::info!(job = %job_id, was_running, "job cancelled");
    }
    Ok(was_running)
}

/// [`super::Scheduler::prune`] (handed back: see `submit::existing`).
pub(super) fn prune(sh: &Shared) -> usize {
    let retention = Duration::from_secs(sh.config.daemon.job_retention_secs);
    // Lock order as in `submit`: request ids, then jobs (then a job's progress).
    let mut ids = sh.by_request_id.lock();
    let mut jobs = sh.jobs.lock();
    let old: Vec<String> = jobs
        .values()
        .filter(|j| {
            let p = j.state.progress.lock();
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
