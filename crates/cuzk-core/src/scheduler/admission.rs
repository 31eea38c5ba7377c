//! Bounded admission: caps on the jobs and partitions the scheduler holds at once
//! (`pipeline.max_queued_jobs`, `pipeline.max_queued_partitions`). Every queued job keeps its
//! decoded request and circuits in memory, so without a cap a flood of submits (or a client
//! retrying in a loop) could grow the daemon until the kernel kills it. Beyond a cap a submit
//! is refused with RESOURCE_EXHAUSTED, which Curio retries later.

use super::{Shared, SubmitError};

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
pub(super) fn admit(sh: &Shared, partitions: usize) -> Result<(), SubmitError> {
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
