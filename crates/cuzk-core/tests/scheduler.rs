//! The scheduler on real 2 KiB work: priorities, cancellation of queued and running jobs,
//! await timeouts, idempotent request ids and the memory budget. Its PoRep jobs only occupy
//! the general workers (one held at a fault hook, one queued) and are cancelled, not proved:
//! each 2 KiB PoRep proof costs CI ~30 s, and `deadline_lane.rs` and `memory_budget.rs` prove
//! and verify PoRep through the scheduler.

mod common;

use std::sync::Arc;
use std::time::Duration;

use cuzk_core::faults::{self, Action, Stage};
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

    // Two PoRep jobs: the first running, held in its synthesis by a fault hook (so it holds
    // the only general synthesis worker), the second queued behind it. Then a WinningPoSt
    // (CRITICAL by default) and a low-priority WindowPoSt.
    faults::arm(Stage::Synthesis, "porep-a", Action::Hold);
    let a = porep("porep-a");
    while faults::is_armed(Stage::Synthesis, "porep-a") {
        std::thread::sleep(Duration::from_millis(10));
    }
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
    assert_eq!(s.job(&b.job_id).unwrap().phase(), Phase::Queued, "WinningPoSt must overtake the queued PoRep");

    // Cancel the queued PoRep, then the running one; once its synthesis returns, it is
    // dropped before the prover, and its memory is released.
    assert!(!s.cancel(&b.job_id).unwrap(), "the second PoRep was still queued");
    assert!(s.cancel(&a.job_id).unwrap(), "the first PoRep was running");
    faults::release(Stage::Synthesis, "porep-a");
    for job in [&a.job_id, &b.job_id] {
        assert_eq!(wait(&s, job).phase, Phase::Cancelled);
    }
    let st = s.status();
    assert_eq!(st.completed, 1);
    assert_eq!(st.cancelled, 3);
    let metrics = s.metrics_text();
    assert!(metrics.contains("cuzk_proofs_completed_total{kind=\"winning\"} 1"), "{metrics}");
    assert!(metrics.contains("cuzk_proofs_cancelled_total{kind=\"porep\"} 2"), "{metrics}");
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
