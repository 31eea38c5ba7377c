//! Nothing a worker does for one job can hang it or take the scheduler down: a panic injected
//! at each worker stage (`cuzk_core::faults`) fails exactly that job with a message naming
//! the stage, every reservation is released, and the next job of the same circuit — which
//! must find the parameter and PCE caches usable again — is proved and verified. A stage
//! that hangs instead is failed by the watchdog after `pipeline.stall_timeout_secs`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use cuzk_core::faults::{self, Action, Stage};
use cuzk_core::scheduler::{AwaitOutcome, JobResult, Phase, Priority, Scheduler};
use cuzk_core::Config;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::ProofKind;

fn config() -> Config {
    let f = common::fixture();
    let mut config = Config::default();
    config.srs.param_dir = f.dir.join("params");
    config
}

fn scheduler() -> Arc<Scheduler> {
    Scheduler::start(config(), None).unwrap()
}

/// The tests that time a stage against a stall limit of a few seconds run one at a time: on a
/// 2-core machine another test's proofs beside them can stretch a debug build's CPU proof
/// past the limit.
fn one_at_a_time() -> parking_lot::MutexGuard<'static, ()> {
    static TIMED: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
    TIMED.lock()
}

/// NORMAL priority throughout: only the general workers (one synthesis, one prover) take
/// such work, so a later job completing shows that the very worker that panicked lives on.
const PRIORITY: Option<Priority> = Some(Priority::Normal);

/// The job's end, or None if it has not ended in 10 minutes (a hang: the bug this file is for).
fn wait(s: &Scheduler, job: &str) -> Option<JobResult> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(s.await_job(job, Some(Duration::from_secs(600)))).unwrap() {
        AwaitOutcome::Done(r) => Some(r),
        AwaitOutcome::TimedOut => None,
    }
}

/// One stage: a fresh scheduler (so its first job really loads the parameters and the PCE
/// matrices, with one synthesis and one prover worker), a job whose stage panics, then a good
/// job of the same circuit on the same workers.
fn panic_at(stage: Stage, kind: ProofKind) {
    let f = common::fixture();
    let s = scheduler();
    let rid = format!("supervision-panic-{stage:?}-{kind:?}");
    faults::arm(stage, &rid, Action::Panic);
    let bad = s.submit(&rid, PRIORITY, request(&f.dir, &f.manifest, kind).unwrap()).unwrap();
    let r = wait(&s, &bad.job_id).unwrap_or_else(|| panic!("a panic in {stage} left job {} running", bad.job_id));
    assert!(!faults::is_armed(stage, &rid), "the fault at {stage} never fired");
    assert_eq!(r.phase, Phase::Failed, "{stage}: {:?}", r.error);
    let message = r.error.unwrap_or_default();
    assert!(message.starts_with(&format!("internal error: panic in {}: ", stage.name())), "{stage}: {message}");
    assert!(message.contains("injected fault"), "the panic's own message is kept: {message}");
    assert!(r.proof.is_empty());

    // The workers survived, and the caches the panic may have unwound through are usable.
    let good = s
        .submit(&format!("supervision-after-{stage:?}-{kind:?}"), PRIORITY, request(&f.dir, &f.manifest, kind).unwrap())
        .unwrap();
    let r = wait(&s, &good.job_id).unwrap_or_else(|| panic!("after a panic in {stage}, the next job never finished"));
    assert_eq!(r.phase, Phase::Completed, "after a panic in {stage}: {:?}", r.error);
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, kind, &r.proof).unwrap());

    let st = s.status();
    assert_eq!((st.completed, st.failed), (1, 1), "{stage}");
    s.shutdown(Duration::from_secs(60));
    // Only the loaded parameters and matrices stay reserved: every partition's reservation,
    // the failed one's included, was released.
    let st = s.status();
    assert_eq!(st.memory_used - st.memory_resident, 0, "{stage}: a partition's reservation leaked");
    assert_eq!(st.partitions_in_flight, 0, "{stage}");
}

// WindowPoSt at every stage: the kind is nothing to the supervision, and its proofs are the
// cheapest (a WinningPoSt's took ~3 times as long on CI's 2 cores).

#[test]
fn a_panic_while_loading_pce_matrices_fails_only_that_job() {
    panic_at(Stage::PceLoad, ProofKind::WindowPostPartition);
}

#[test]
fn a_panic_in_synthesis_fails_only_that_job() {
    panic_at(Stage::Synthesis, ProofKind::WindowPostPartition);
}

#[test]
fn a_panic_while_loading_parameters_fails_only_that_job() {
    panic_at(Stage::SrsLoad, ProofKind::WindowPostPartition);
}

#[test]
fn a_panic_in_the_prover_fails_only_that_job() {
    panic_at(Stage::Prove, ProofKind::WindowPostPartition);
}

#[test]
fn a_panic_while_verifying_fails_only_that_job() {
    panic_at(Stage::Verify, ProofKind::WindowPostPartition);
}

/// A stage that never returns: the watchdog fails the job after `stall_timeout_secs` with a
/// message naming the stage; once the stage does return, its worker goes on with the next job.
#[test]
fn a_stalled_stage_fails_its_job_and_the_scheduler_goes_on() {
    let _timed = one_at_a_time();
    let f = common::fixture();
    let mut config = config();
    config.pipeline.stall_timeout_secs = 5;
    let s = Scheduler::start(config, None).unwrap();
    // Loaded here, not in a (timed) worker stage of the jobs below. WindowPoSt in the timed
    // tests: the cheapest proof, so the furthest inside the stall limit.
    s.preload("wpost-2k").unwrap();
    let rid = "supervision-stall";
    faults::arm(Stage::Prove, rid, Action::Hold);
    let stuck = s.submit(rid, PRIORITY, request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap()).unwrap();
    let r = wait(&s, &stuck.job_id).expect("a job whose prover hangs must still end");
    assert_eq!(r.phase, Phase::Failed);
    let message = r.error.unwrap_or_default();
    assert!(message.contains("no progress for 5 s in prove"), "{message}");

    faults::release(Stage::Prove, rid);
    let good = s
        .submit(
            "supervision-after-stall",
            PRIORITY,
            request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap(),
        )
        .unwrap();
    let r = wait(&s, &good.job_id).expect("after a stall, the next job never finished");
    assert_eq!(r.phase, Phase::Completed, "{:?}", r.error);
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, ProofKind::WindowPostPartition, &r.proof).unwrap());
    s.shutdown(Duration::from_secs(60));
}

#[test]
fn the_scheduler_reports_a_backend_that_can_never_prove_again() {
    let cpu = scheduler();
    assert!(cpu.backend_usable(), "the CPU backend is always usable");
    cpu.shutdown(Duration::from_secs(5));
    // Every device lost to a sticky error, what `CudaProver::usable` reports then: the daemon
    // exits non-zero on it (cuzk-daemon's main).
    let lost = Scheduler::start(config(), Some(Arc::new(OneDevice::lost()))).unwrap();
    assert!(!lost.backend_usable());
    lost.shutdown(Duration::from_secs(5));
}

/// One "device" over the CPU prover that can be lost: what a CUDA prover with one GPU tells
/// the engine, without a GPU.
#[derive(Default)]
struct OneDevice {
    lost: std::sync::atomic::AtomicBool,
    stalled_jobs: parking_lot::Mutex<Vec<String>>,
}

impl OneDevice {
    fn lost() -> Self {
        OneDevice { lost: true.into(), ..Default::default() }
    }
}

impl cuzk_backend::ProverBackend for OneDevice {
    fn name(&self) -> String {
        "one-device".into()
    }

    fn prove(
        &self,
        srs: &cuzk_groth16::Srs,
        w: cuzk_backend::Witness,
        rs: cuzk_groth16::Randomness,
        label: &cuzk_backend::WorkLabel,
    ) -> Result<(cuzk_groth16::Proof, cuzk_backend::ProveTimings), cuzk_groth16::ProveError> {
        cuzk_backend::CpuBackend.prove(srs, w, rs, label)
    }

    fn usable(&self) -> bool {
        !self.lost.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn stalled(&self, job_id: &str) -> bool {
        self.stalled_jobs.lock().push(job_id.to_string());
        self.lost.store(true, std::sync::atomic::Ordering::SeqCst);
        true
    }
}

/// Issue #36, item 2: a partition stuck in the prove stage past the stall limit takes its
/// device out of service, like a sticky error; with no device left the backend is unusable,
/// on which the daemon exits non-zero (cuzk-daemon's main). Before, the job was failed and
/// the device kept, its lock held for good and every later partition queued behind it.
#[test]
fn a_stall_in_the_prove_stage_takes_the_device_out_of_service() {
    let _timed = one_at_a_time();
    let f = common::fixture();
    let mut config = config();
    config.pipeline.stall_timeout_secs = 2;
    let backend = Arc::new(OneDevice::default());
    let s = Scheduler::start(config, Some(backend.clone())).unwrap();
    s.preload("wpost-2k").unwrap();
    assert!(s.backend_usable());
    let rid = "supervision-device-stall";
    faults::arm(Stage::Prove, rid, Action::Hold);
    let stuck = s.submit(rid, PRIORITY, request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap()).unwrap();
    let r = wait(&s, &stuck.job_id).expect("a job whose prover hangs must still end");
    assert_eq!(r.phase, Phase::Failed);
    assert!(r.error.unwrap_or_default().contains("no progress for 2 s in prove"));
    assert_eq!(
        *backend.stalled_jobs.lock(),
        vec![stuck.job_id.clone()],
        "the backend was told which job's device hangs"
    );
    assert!(!s.backend_usable(), "the only device is out of service: the daemon exits on this");
    faults::release(Stage::Prove, rid);
    s.shutdown(Duration::from_secs(10));
}

/// A parameter load that waits for other jobs to free memory is waiting, not stalled: the
/// watchdog leaves it alone however long the wait lasts (here more than two stall timeouts),
/// and it loads and proves once the memory is freed. Before, the wait counted as work, and a
/// load queued behind long jobs was failed as "no progress".
#[test]
fn a_parameter_load_waiting_for_memory_is_not_a_stall() {
    let _timed = one_at_a_time();
    let f = common::fixture();
    let mut config = config();
    // Four times the WindowPoSt proof (~1 s on CI's 2 cores), the stage that takes longest
    // once the memory is freed.
    config.pipeline.stall_timeout_secs = 4;
    let s = Scheduler::start(config, None).unwrap();
    // The work of a first use (loading, extracting the PCE matrices) happens here, untimed;
    // the matrices stay in memory after the parameters are evicted.
    s.preload("wpost-2k").unwrap();
    assert!(matches!(s.evict("wpost-2k"), Ok(cuzk_core::srs_cache::EvictOutcome::Freed { .. })));

    // Other work in flight holds the rest of the budget (a partition's proving reservation,
    // which its end will release): the load finds no room and nothing idle to evict, so it waits.
    let budget = s.memory();
    let in_flight = budget.reserve_proving(budget.limit() - budget.used());
    let job = s
        .submit(
            "supervision-waits-for-memory",
            PRIORITY,
            request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap(),
        )
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let early = rt.block_on(s.await_job(&job.job_id, Some(Duration::from_secs(10)))).unwrap();
    if let AwaitOutcome::Done(r) = early {
        panic!("the waiting load ended while memory was still held: {:?} {:?}", r.phase, r.error);
    }

    drop(in_flight);
    let r = wait(&s, &job.job_id).expect("the load never went on after the memory was freed");
    assert_eq!(r.phase, Phase::Completed, "{:?}", r.error);
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, ProofKind::WindowPostPartition, &r.proof).unwrap());
    s.shutdown(Duration::from_secs(60));
}
