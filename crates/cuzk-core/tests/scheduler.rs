//! The scheduler on real 2 KiB work: concurrent jobs of all four kinds, priorities,
//! cancellation, await timeouts, idempotent request ids and the memory budget.

mod common;

use std::sync::Arc;
use std::time::Duration;

use cuzk_core::scheduler::{AwaitOutcome, Phase, Priority, Scheduler, SubmitError};
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::ProofKind;

fn scheduler(budget: u64) -> Arc<Scheduler> {
    common::scheduler_with_budget(budget)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn wait(s: &Scheduler, job: &str) -> cuzk_core::scheduler::JobResult {
    match rt().block_on(s.await_job(job, Some(Duration::from_secs(900)))).unwrap() {
        AwaitOutcome::Done(r) => r,
        AwaitOutcome::TimedOut => panic!("job {job} did not finish in 15 minutes"),
    }
}

#[test]
fn priorities_cancel_timeouts_and_request_ids() {
    let f = common::fixture();
    let s = scheduler(0);
    let porep =
        |id: &str| s.submit(id, None, request(&f.dir, &f.manifest, ProofKind::PoRepSealCommit).unwrap()).unwrap();

    // Two PoRep jobs, then a WinningPoSt (CRITICAL by default) and a low-priority WindowPoSt.
    let a = porep("porep-a");
    let b = porep("porep-b");
    let dup = porep("porep-b");
    assert!(dup.existing && dup.job_id == b.job_id, "same request id must return the same job");
    let w = s.submit("winning", None, request(&f.dir, &f.manifest, ProofKind::WinningPost).unwrap()).unwrap();
    let low = s
        .submit("wpost-low", Some(Priority::Low), request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap())
        .unwrap();
    assert_eq!(w.queue_position, 0, "CRITICAL goes to the front of the queue");

    // A short await times out while the job keeps going.
    let t = rt().block_on(s.await_job(&b.job_id, Some(Duration::from_millis(20)))).unwrap();
    assert!(matches!(t, AwaitOutcome::TimedOut));

    // Cancel the low-priority job while it is still pending.
    assert!(!s.cancel(&low.job_id).unwrap(), "a pending job was not running");
    assert_eq!(s.job(&low.job_id).unwrap().phase(), Phase::Cancelled);

    let wr = wait(&s, &w.job_id);
    assert_eq!(wr.phase, Phase::Completed, "{:?}", wr.error);
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, ProofKind::WinningPost, &wr.proof).unwrap());
    assert_ne!(s.job(&b.job_id).unwrap().phase(), Phase::Completed, "WinningPoSt must overtake the queued PoRep");

    let ar = wait(&s, &a.job_id);
    assert_eq!(ar.phase, Phase::Completed, "{:?}", ar.error);
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, ProofKind::PoRepSealCommit, &ar.proof).unwrap());

    // Cancel the second PoRep (now running or about to run); its memory is released.
    s.cancel(&b.job_id).unwrap();
    let br = wait(&s, &b.job_id);
    assert_eq!(br.phase, Phase::Cancelled);
    let st = s.status();
    assert_eq!(st.completed, 2);
    assert_eq!(st.cancelled, 2);
    let metrics = s.metrics_text();
    assert!(metrics.contains("cuzk_proofs_completed_total{kind=\"porep\"} 1"));
    // Each decoded PoRep submit is timed once; the resubmission answered from its job is not.
    assert!(metrics.contains("cuzk_submit_decode_seconds_count{kind=\"porep\"} 2"), "{metrics}");
    s.shutdown(Duration::from_secs(60));
    // Every working set is released; what stays is the loaded parameters and matrices.
    let st = s.status();
    assert!(st.memory_resident > 0, "the loaded parameters are counted");
    assert_eq!(st.memory_used, st.memory_resident, "every partition's reservation is released");
}

#[test]
fn a_request_that_can_never_fit_fails_at_once() {
    let f = common::fixture();
    // Too small for PoRep's parameters (1.1 GB), enough for WindowPoSt's (11 MB) and its work.
    let s = scheduler(64 << 20);
    let e = s.submit("", None, request(&f.dir, &f.manifest, ProofKind::PoRepSealCommit).unwrap()).err().unwrap();
    assert!(matches!(e, SubmitError::ResourceExhausted(_)), "{e}");
    assert!(e.to_string().contains("budget"), "{e}");
    // Small work still runs under the same budget.
    let ok = s.submit("", None, request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap()).unwrap();
    assert_eq!(wait(&s, &ok.job_id).phase, Phase::Completed);
    s.shutdown(Duration::from_secs(10));
}
