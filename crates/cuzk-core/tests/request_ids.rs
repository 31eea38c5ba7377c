//! Request ids never hand a client another request's result (scheduler level, CPU backend,
//! 2 KiB WindowPoSt and WinningPoSt work). An id re-attaches to a queued, running or completed
//! job with identical inputs; different inputs under a used id (Curio's WindowPoSt partitions
//! share one id) are proved afresh, each with its own proof; a failed or cancelled job (Curio
//! retries PoRep and SnapDeals under the same id) is never handed back; a job handed back is
//! not pruned before its client can await it.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cuzk_backend::{CpuBackend, ProveTimings, ProverBackend, Witness, WorkLabel};
use cuzk_core::scheduler::{AwaitOutcome, JobResult, Phase, Priority, Scheduler, SubmitError, SubmitOutcome};
use cuzk_core::Config;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::{ProofKind, ProofRequest};
use cuzk_groth16::{Proof, ProveError, Randomness, Srs};

/// Curio's WindowPoSt request id: the partition index in it is always 0.
const WDPOST_ID: &str = "wdpost-1000-0-0a1b2c3d";

fn scheduler(backend: Option<Arc<dyn ProverBackend>>) -> Arc<Scheduler> {
    let f = common::fixture();
    let mut config = Config::default();
    config.srs.param_dir = f.dir.join("params");
    Scheduler::start(config, backend).unwrap()
}

fn fixture_request(kind: ProofKind) -> ProofRequest {
    let f = common::fixture();
    request(&f.dir, &f.manifest, kind).unwrap()
}

fn window() -> ProofRequest {
    fixture_request(ProofKind::WindowPostPartition)
}

fn submit(s: &Scheduler, id: &str, req: ProofRequest) -> SubmitOutcome {
    s.submit(id, None, req).unwrap()
}

fn wait(s: &Scheduler, job: &str) -> JobResult {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(s.await_job(job, Some(Duration::from_secs(300)))).unwrap() {
        AwaitOutcome::Done(r) => r,
        AwaitOutcome::TimedOut => panic!("job {job} did not finish in 5 minutes"),
    }
}

/// Wait for a job and require a proof that filecoin-proofs accepts.
fn wait_verified(s: &Scheduler, job: &str, kind: ProofKind) -> Vec<u8> {
    let r = wait(s, job);
    assert_eq!(r.phase, Phase::Completed, "job {job}: {:?}", r.error);
    let f = common::fixture();
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, kind, &r.proof).unwrap(), "job {job}: proof rejected");
    r.proof
}

/// The CPU prover, made to fail the next `prove` call while `fail_next` is set (a transient
/// failure: the retry must run, not be answered with this failure).
struct FlakyProver {
    fail_next: AtomicBool,
}

impl ProverBackend for FlakyProver {
    fn name(&self) -> String {
        "flaky-cpu".into()
    }

    fn prove(
        &self,
        srs: &Srs,
        a: Witness,
        rs: Randomness,
        label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError> {
        if self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(ProveError::Backend { backend: self.name(), message: "injected transient failure".into() });
        }
        CpuBackend.prove(srs, a, rs, label)
    }
}

#[test]
fn identical_inputs_attach_while_in_progress_and_after_completion() {
    let s = scheduler(None);
    let first = submit(&s, WDPOST_ID, window());
    assert!(!first.existing);
    // Resubmitted at once: the job is still queued or running.
    let again = submit(&s, WDPOST_ID, window());
    assert!(again.existing && again.job_id == first.job_id, "an identical resubmission returns the same job");
    // Priority orders work but does not change the proof, so it does not count as an input.
    let other_priority = s.submit(WDPOST_ID, Some(Priority::Low), window()).unwrap();
    assert!(other_priority.existing && other_priority.job_id == first.job_id, "priority is not an input");

    let proof = wait_verified(&s, &first.job_id, ProofKind::WindowPostPartition);
    let after = submit(&s, WDPOST_ID, window());
    assert!(after.existing && after.job_id == first.job_id, "a completed job is handed back for identical inputs");
    assert_eq!(wait(&s, &after.job_id).proof, proof);
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn different_inputs_under_one_id_each_get_their_own_proof() {
    let s = scheduler(None);
    // Curio's WindowPoSt loop: the partitions of one deadline under one id, each with its own
    // partition index or vanilla proofs. A partition index other than 0 proves the same
    // statement here (API 1.2 challenges do not depend on it), so filecoin-proofs' check of
    // the fixture accepts every one of these proofs; a duplicated sector proof is what the
    // circuit pads one sector to anyway.
    let partition_1 = ProofRequest { partition_index: 1, ..window() };
    let mut two_sectors = window();
    two_sectors.vanilla_proofs.push(two_sectors.vanilla_proofs[0].clone());
    let mut jobs = Vec::new();
    for req in [window(), partition_1, two_sectors] {
        let out = submit(&s, WDPOST_ID, req);
        assert!(!out.existing, "different inputs under a used id are proved afresh");
        assert!(jobs.iter().all(|j| *j != out.job_id), "a new job for different inputs");
        jobs.push(out.job_id);
    }
    // Even another proof kind under the same id is proved, not refused.
    let winning = submit(&s, WDPOST_ID, fixture_request(ProofKind::WinningPost));
    assert!(!winning.existing);

    let proofs: Vec<Vec<u8>> = jobs.iter().map(|j| wait_verified(&s, j, ProofKind::WindowPostPartition)).collect();
    for (i, p) in proofs.iter().enumerate() {
        assert!(proofs[..i].iter().all(|q| q != p), "job {} returned another job's proof", jobs[i]);
    }
    wait_verified(&s, &winning.job_id, ProofKind::WinningPost);
    // The id names every job: resubmitting the newest one's inputs attaches to it, and so
    // does a retry of partition 0 after the later partitions were sent (issue #36, item 8:
    // only the newest job was a candidate, so partition 0 was proved a second time).
    let again = submit(&s, WDPOST_ID, fixture_request(ProofKind::WinningPost));
    assert!(again.existing && again.job_id == winning.job_id);
    let retry_p0 = submit(&s, WDPOST_ID, window());
    assert!(
        retry_p0.existing && retry_p0.job_id == jobs[0],
        "partition 0 retried after partition 1: its job, not a new one"
    );
    let retry_p1 = submit(&s, WDPOST_ID, ProofRequest { partition_index: 1, ..window() });
    assert!(retry_p1.existing && retry_p1.job_id == jobs[1]);
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_failed_job_is_proved_afresh() {
    let backend = Arc::new(FlakyProver { fail_next: AtomicBool::new(true) });
    let s = scheduler(Some(backend.clone()));
    // Curio's PoRep/SnapDeals habit (here on WindowPoSt, for speed): the job fails, and the
    // same request comes back under the same id seconds later.
    let failed = submit(&s, "porep-1000-1", window());
    let r = wait(&s, &failed.job_id);
    assert_eq!(r.phase, Phase::Failed, "the injected failure fails the job");
    assert!(r.error.unwrap_or_default().contains("injected"));

    let retry = submit(&s, "porep-1000-1", window());
    assert!(!retry.existing && retry.job_id != failed.job_id, "a failed job is never handed back");
    wait_verified(&s, &retry.job_id, ProofKind::WindowPostPartition);
    assert_eq!(wait(&s, &failed.job_id).phase, Phase::Failed, "the old job keeps its own result");
    assert!(!backend.fail_next.load(Ordering::SeqCst));
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_request_refused_at_submit_leaves_the_id_alone() {
    let s = scheduler(None);
    let first = submit(&s, WDPOST_ID, window());
    // WindowPoSt vanilla proofs for another randomness: refused with an input error (the
    // client's mistake, not a different proof), and the id keeps naming the first job.
    let wrong = ProofRequest { randomness: fixture_request(ProofKind::WinningPost).randomness, ..window() };
    assert!(matches!(s.submit(WDPOST_ID, None, wrong), Err(SubmitError::Input(_))));
    let again = submit(&s, WDPOST_ID, window());
    assert!(again.existing && again.job_id == first.job_id);
    wait_verified(&s, &first.job_id, ProofKind::WindowPostPartition);
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_cancelled_job_is_proved_afresh() {
    let s = scheduler(None);
    let cancelled = submit(&s, WDPOST_ID, window());
    s.cancel(&cancelled.job_id).unwrap();
    assert_eq!(wait(&s, &cancelled.job_id).phase, Phase::Cancelled);
    let retry = submit(&s, WDPOST_ID, window());
    assert!(!retry.existing && retry.job_id != cancelled.job_id, "a cancelled job is never handed back");
    wait_verified(&s, &retry.job_id, ProofKind::WindowPostPartition);
    s.shutdown(Duration::from_secs(10));
}

/// Issue #36 item 8: a completed job handed back for a resubmitted id is still there when the
/// client awaits it, even if its retention had run out and the pruner runs in between. The
/// job finished longer ago than `job_retention_secs` (2 s here) but is not pruned yet (the
/// daemon prunes every 30 s), a resubmission is answered with it, the prune is forced before
/// the await: the await returns the proof (it was NOT_FOUND: the server had just named the
/// job). The hand-out starts its retention over, and once that has run out it goes too.
#[test]
fn a_completed_job_handed_back_survives_a_prune_before_its_await() {
    let mut config = Config::default();
    config.srs.param_dir = common::fixture().dir.join("params");
    config.daemon.job_retention_secs = 2;
    let retention = Duration::from_secs(2);
    let s = Scheduler::start(config, None).unwrap();
    let first = submit(&s, WDPOST_ID, window());
    let proof = wait_verified(&s, &first.job_id, ProofKind::WindowPostPartition);
    std::thread::sleep(retention + Duration::from_millis(100));
    let again = submit(&s, WDPOST_ID, window());
    assert!(again.existing && again.job_id == first.job_id, "the completed job is handed back");
    let pruned = s.prune();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(s.await_job(&again.job_id, Some(Duration::from_secs(5)))) {
        Ok(AwaitOutcome::Done(r)) => assert_eq!(r.proof, proof, "the job's own proof"),
        Ok(AwaitOutcome::TimedOut) => panic!("a completed job timed out"),
        Err(e) => panic!("the job the server just handed out is gone ({pruned} pruned): {e}"),
    }
    assert_eq!(pruned, 0);
    std::thread::sleep(retention + Duration::from_millis(100));
    assert_eq!(s.prune(), 1, "retention counts from the hand-out, then the job is forgotten");
    assert!(s.job(&first.job_id).is_none());
    s.shutdown(Duration::from_secs(10));
}
