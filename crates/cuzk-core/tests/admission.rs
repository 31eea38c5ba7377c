//! Bounded admission: beyond `pipeline.max_queued_jobs` jobs or `max_queued_partitions`
//! partitions queued or running, a submit is RESOURCE_EXHAUSTED; the jobs already admitted
//! are proved, and once they finish there is room again. The queue is kept full
//! deterministically by holding the only synthesis worker at a fault hook.

mod common;

use std::sync::Arc;
use std::time::Duration;

use cuzk_core::faults::{self, Action, Stage};
use cuzk_core::scheduler::{AwaitOutcome, JobResult, Phase, Priority, Scheduler, SubmitError};
use cuzk_core::Config;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::{ProofKind, ProofRequest};

fn scheduler(max_jobs: usize, max_partitions: usize) -> Arc<Scheduler> {
    let f = common::fixture();
    let mut config = Config::default();
    config.srs.param_dir = f.dir.join("params");
    config.pipeline.max_queued_jobs = max_jobs;
    config.pipeline.max_queued_partitions = max_partitions;
    Scheduler::start(config, None).unwrap()
}

/// NORMAL priority: only the general workers (one synthesis worker) take these jobs, so the
/// held job keeps the rest queued.
const PRIORITY: Option<Priority> = Some(Priority::Normal);

/// Every job here is a WindowPoSt, the cheapest proof: the caps count jobs and partitions,
/// whatever their kind.
fn req() -> ProofRequest {
    let f = common::fixture();
    request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap()
}

fn wait(s: &Scheduler, job: &str) -> JobResult {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(s.await_job(job, Some(Duration::from_secs(600)))).unwrap() {
        AwaitOutcome::Done(r) => r,
        AwaitOutcome::TimedOut => panic!("job {job} did not finish in 10 minutes"),
    }
}

/// Submit a job under `rid` whose synthesis holds the (only) synthesis worker until released,
/// and return once the worker is inside the hold.
fn held_job(s: &Scheduler, rid: &str) -> String {
    faults::arm(Stage::Synthesis, rid, Action::Hold);
    let job = s.submit(rid, PRIORITY, req()).unwrap().job_id;
    while faults::is_armed(Stage::Synthesis, rid) {
        std::thread::sleep(Duration::from_millis(10));
    }
    job
}

fn exhausted(r: Result<cuzk_core::scheduler::SubmitOutcome, SubmitError>, cap: &str) {
    match r {
        Err(e @ SubmitError::ResourceExhausted(_)) => assert!(e.to_string().contains(cap), "{e}"),
        Err(e) => panic!("expected RESOURCE_EXHAUSTED naming {cap}, got {e}"),
        Ok(o) => panic!("a submit beyond {cap} was accepted as {}", o.job_id),
    }
}

#[test]
fn jobs_beyond_max_queued_jobs_are_refused_until_room_is_made() {
    let f = common::fixture();
    let s = scheduler(2, 100);
    let held = held_job(&s, "admission-jobs-held");
    let queued = s.submit("admission-jobs-queued", PRIORITY, req()).unwrap();
    assert_eq!(s.job(&queued.job_id).unwrap().phase(), Phase::Queued);
    exhausted(s.submit("admission-jobs-third", PRIORITY, req()), "max_queued_jobs");
    // An identical resubmission of an admitted job is answered with it, not refused.
    let again = s.submit("admission-jobs-queued", PRIORITY, req()).unwrap();
    assert!(again.existing && again.job_id == queued.job_id);

    faults::release(Stage::Synthesis, "admission-jobs-held");
    for job in [&held, &queued.job_id] {
        let r = wait(&s, job);
        assert_eq!(r.phase, Phase::Completed, "{:?}", r.error);
        assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, ProofKind::WindowPostPartition, &r.proof).unwrap());
    }
    // Both finished: room again.
    let third = s.submit("admission-jobs-third", PRIORITY, req()).unwrap();
    assert_eq!(wait(&s, &third.job_id).phase, Phase::Completed);
    s.shutdown(Duration::from_secs(60));
}

#[test]
fn partitions_beyond_max_queued_partitions_are_refused() {
    let s = scheduler(100, 1);
    let held = held_job(&s, "admission-partitions-held");
    exhausted(s.submit("admission-partitions-second", PRIORITY, req()), "max_queued_partitions");
    faults::release(Stage::Synthesis, "admission-partitions-held");
    assert_eq!(wait(&s, &held).phase, Phase::Completed);
    let second = s.submit("admission-partitions-second", PRIORITY, req()).unwrap();
    assert_eq!(wait(&s, &second.job_id).phase, Phase::Completed);
    s.shutdown(Duration::from_secs(60));
}

#[test]
fn zero_caps_are_configuration_errors() {
    let mut config = Config::default();
    config.pipeline.max_queued_jobs = 0;
    assert!(config.validate().unwrap_err().to_string().contains("max_queued_jobs"));
    let mut config = Config::default();
    config.daemon.max_concurrent_decodes = 0;
    assert!(config.validate().unwrap_err().to_string().contains("max_concurrent_decodes"));
}
