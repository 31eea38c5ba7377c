//! The deadline lane (CPU backend, 2 KiB work): a WinningPoSt or WindowPoSt submitted while
//! every general prover worker is stuck in PoRep partitions, with more PoRep queued behind,
//! is proved, verified and returned anyway — by the lane's own workers. Nor does a parameter
//! load that hangs, or a backlog of 100 PoRep jobs, hold the lane up. Without the lane the
//! same WinningPoSt waits for the PoRep, and both are proved and verified once the PoRep may
//! go on. A WinningPoSt also passes a WindowPoSt stuck in the deadline lane (the critical
//! lane). WinningPoSt and WindowPoSt run their parallel work on their lanes' private rayon
//! pools while every thread of the global pool is busy. The deadline lane has a prover for
//! every device.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cuzk_backend::{CpuBackend, DeviceReport, ProveTimings, ProverBackend, Urgency, Witness, WorkLabel};
use cuzk_core::scheduler::{AwaitOutcome, JobResult, Phase, Scheduler};
use cuzk_core::Config;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::{ProofKind, ProofRequest};
use cuzk_groth16::{Proof, ProveError, Randomness, Srs};
use parking_lot::{Condvar, Mutex};

/// The CPU prover, except that work less urgent than `passes` waits at a gate until it opens:
/// the workers proving it are busy for as long as the test wants.
struct GatedProver {
    gate: Mutex<Gate>,
    opened: Condvar,
    held: AtomicUsize,
    passes: Urgency,
    /// Devices it reports (none, as the CPU backend, by default).
    devices: usize,
}

/// What becomes of the work that waits at the gate.
#[derive(Clone, Copy, PartialEq)]
enum Gate {
    Shut,
    /// It is proved.
    Open,
    /// Deadline work is proved; PoRep work (NORMAL urgency) fails at once instead. For tests
    /// whose PoRep only had to keep a prover busy: a 2 KiB PoRep costs CI ~30 s to prove, and
    /// that a PoRep held at the gate is proved once it opens is shown once, by
    /// `without_the_lane_a_winning_post_waits_for_the_porep`.
    DropPoRep,
}

impl Default for GatedProver {
    /// Deadline work passes; PoRep waits.
    fn default() -> Self {
        GatedProver::passing(Urgency::High)
    }
}

impl GatedProver {
    fn passing(passes: Urgency) -> Self {
        GatedProver {
            gate: Mutex::new(Gate::Shut),
            opened: Condvar::new(),
            held: AtomicUsize::new(0),
            passes,
            devices: 0,
        }
    }

    /// Reports `n` devices, as a GPU backend does.
    fn with_devices(self, n: usize) -> Self {
        GatedProver { devices: n, ..self }
    }

    fn open(&self) {
        self.set(Gate::Open);
    }

    /// Open, but fail the PoRep work held here (see [`Gate::DropPoRep`]).
    fn open_dropping_porep(&self) {
        self.set(Gate::DropPoRep);
    }

    fn set(&self, gate: Gate) {
        *self.gate.lock() = gate;
        self.opened.notify_all();
    }
}

impl ProverBackend for GatedProver {
    fn name(&self) -> String {
        "gated-cpu".into()
    }

    fn devices(&self) -> Vec<DeviceReport> {
        (0..self.devices).map(|i| DeviceReport { ordinal: i as u32, ..Default::default() }).collect()
    }

    fn prove(
        &self,
        srs: &Srs,
        a: Witness,
        rs: Randomness,
        label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError> {
        if label.urgency < self.passes {
            self.held.fetch_add(1, Ordering::SeqCst);
            let mut gate = self.gate.lock();
            while *gate == Gate::Shut {
                self.opened.wait(&mut gate);
            }
            if *gate == Gate::DropPoRep && label.urgency == Urgency::Normal {
                return Err(ProveError::Backend {
                    backend: self.name(),
                    message: format!("{}: dropped at the gate, not proved", label.job_id),
                });
            }
        }
        CpuBackend.prove(srs, a, rs, label)
    }
}

fn scheduler(lane: bool, backend: Arc<GatedProver>) -> Arc<Scheduler> {
    scheduler_with(lane, backend, |_| {})
}

fn scheduler_with(lane: bool, backend: Arc<GatedProver>, tune: impl FnOnce(&mut Config)) -> Arc<Scheduler> {
    let f = common::fixture();
    let mut config = Config::default();
    config.srs.param_dir = f.dir.join("params");
    config.pipeline.deadline_lane = lane;
    tune(&mut config);
    Scheduler::start(config, Some(backend)).unwrap()
}

fn fixture_request(kind: ProofKind) -> ProofRequest {
    let f = common::fixture();
    request(&f.dir, &f.manifest, kind).unwrap()
}

fn wait(s: &Scheduler, job: &str, timeout: Duration) -> Option<JobResult> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    match rt.block_on(s.await_job(job, Some(timeout))).unwrap() {
        AwaitOutcome::Done(r) => Some(r),
        AwaitOutcome::TimedOut => None,
    }
}

fn assert_verified(r: &JobResult, kind: ProofKind) {
    assert_eq!(r.phase, Phase::Completed, "{kind:?}: {:?}", r.error);
    let f = common::fixture();
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, kind, &r.proof).unwrap(), "{kind:?}: proof rejected");
}

/// Submit PoRep work until the general prover is stuck at the gate, plus a backlog behind it.
fn busy_with_porep(s: &Scheduler, backend: &GatedProver, backlog: usize) -> Vec<String> {
    let jobs: Vec<String> = (0..1 + backlog)
        .map(|i| s.submit(&format!("porep-{i}"), None, fixture_request(ProofKind::PoRepSealCommit)).unwrap().job_id)
        .collect();
    while backend.held.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    jobs
}

#[test]
fn deadline_proofs_pass_a_prover_stuck_in_porep_and_a_porep_backlog() {
    let backend = Arc::new(GatedProver::default());
    let s = scheduler(true, backend.clone());
    // One PoRep held in the prover and one queued behind it (the 100-job backlog is the
    // last test's).
    let porep = busy_with_porep(&s, &backend, 1);

    for kind in [ProofKind::WinningPost, ProofKind::WindowPostPartition] {
        let job = s.submit(kind.name(), None, fixture_request(kind)).unwrap().job_id;
        let r =
            wait(&s, &job, Duration::from_secs(300)).unwrap_or_else(|| panic!("{kind:?} waited for the PoRep work"));
        assert_verified(&r, kind);
    }
    assert!(
        porep.iter().all(|j| s.job(j).unwrap().phase() != Phase::Completed),
        "the PoRep work was still held at the gate while the deadline proofs ran"
    );

    // The PoRep work was only there to hold the general prover: it is cancelled, not proved
    // (see `Gate::DropPoRep`).
    for job in &porep {
        s.cancel(job).unwrap();
    }
    backend.open_dropping_porep();
    s.shutdown(Duration::from_secs(30));
    assert!(porep.iter().all(|j| s.job(j).unwrap().phase() == Phase::Cancelled));
}

#[test]
fn without_the_lane_a_winning_post_waits_for_the_porep() {
    let backend = Arc::new(GatedProver::default());
    let s = scheduler(false, backend.clone());
    let porep = busy_with_porep(&s, &backend, 0);
    let job = s.submit("winning", None, fixture_request(ProofKind::WinningPost)).unwrap().job_id;
    assert!(wait(&s, &job, Duration::from_secs(5)).is_none(), "with no lane the only prover is held by PoRep");
    backend.open();
    assert_verified(&wait(&s, &job, Duration::from_secs(300)).unwrap(), ProofKind::WinningPost);
    assert_verified(&wait(&s, &porep[0], Duration::from_secs(900)).unwrap(), ProofKind::PoRepSealCommit);
    s.shutdown(Duration::from_secs(30));
}

/// The critical lane: a WinningPoSt is proved while the deadline lane's prover is stuck in a
/// WindowPoSt partition (a 32 GiB one holds it ~10 s) and the general one in PoRep.
#[test]
fn a_winning_post_passes_a_window_post_stuck_in_the_deadline_lane() {
    let backend = Arc::new(GatedProver::passing(Urgency::Critical));
    let s = scheduler(true, backend.clone());
    let porep = busy_with_porep(&s, &backend, 0);
    let window = s.submit("window", None, fixture_request(ProofKind::WindowPostPartition)).unwrap().job_id;
    while backend.held.load(Ordering::SeqCst) < 2 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let job = s.submit("winning", None, fixture_request(ProofKind::WinningPost)).unwrap().job_id;
    let r = wait(&s, &job, Duration::from_secs(300)).expect("the WinningPoSt waited for the WindowPoSt or the PoRep");
    assert_verified(&r, ProofKind::WinningPost);
    assert_ne!(s.job(&window).unwrap().phase(), Phase::Completed, "the WindowPoSt was still held at the gate");
    // The WindowPoSt held at the gate is proved once it opens; the PoRep only held the general
    // prover and is cancelled instead (see `Gate::DropPoRep`).
    s.cancel(&porep[0]).unwrap();
    backend.open_dropping_porep();
    assert_verified(&wait(&s, &window, Duration::from_secs(300)).unwrap(), ProofKind::WindowPostPartition);
    s.shutdown(Duration::from_secs(30));
    assert_eq!(s.job(&porep[0]).unwrap().phase(), Phase::Cancelled);
}

/// One deadline prover per device: on a backend of two devices, two WindowPoSt partitions
/// reach a prover at once (both held at the gate together). With one deadline prover they
/// went one at a time, since the general provers leave HIGH work to the lane.
#[test]
fn the_deadline_lane_has_a_prover_for_every_device() {
    let backend = Arc::new(GatedProver::passing(Urgency::Critical).with_devices(2));
    let s = scheduler(true, backend.clone());
    let jobs: Vec<String> = (0..2)
        .map(|i| {
            s.submit(&format!("window-{i}"), None, fixture_request(ProofKind::WindowPostPartition)).unwrap().job_id
        })
        .collect();
    let until = std::time::Instant::now() + Duration::from_secs(120);
    while backend.held.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(backend.held.load(Ordering::SeqCst), 2, "both WindowPoSt partitions were in a prover at once");
    backend.open();
    for job in &jobs {
        assert_verified(&wait(&s, job, Duration::from_secs(300)).unwrap(), ProofKind::WindowPostPartition);
    }
    s.shutdown(Duration::from_secs(30));
}

/// The deadline and critical lanes' private rayon pools: a WinningPoSt (critical lane) or a
/// WindowPoSt partition (deadline lane) is synthesized, proved and verified while every thread
/// of the global rayon pool is busy, as it is while PoRep partitions are synthesized on the
/// general workers. Were its parallel work on the global pool, it would wait for all of that.
/// Eight idle general workers of each kind wait beside the lanes' for the same partition, as
/// on a production host (one synthesis worker per core less two): were a general worker to
/// take the deadline work, it would run it on the global pool. (CI caught exactly that: with
/// the general workers taking HIGH work, one took the WindowPoSt.)
fn proved_while_every_global_rayon_thread_is_busy(kind: ProofKind) {
    let s = scheduler_with(true, Arc::new(GatedProver::default()), |c| {
        c.pipeline.synthesis_workers = 8;
        c.pipeline.prover_workers = 8;
    });
    let req = fixture_request(kind);
    // (released, released because the proof took too long)
    let gate = Arc::new((Mutex::new((false, false)), Condvar::new()));
    let started = Arc::new(AtomicUsize::new(0));
    let threads = rayon::current_num_threads();
    for _ in 0..threads {
        let (gate, started) = (gate.clone(), started.clone());
        rayon::spawn(move || {
            started.fetch_add(1, Ordering::SeqCst);
            let mut state = gate.0.lock();
            while !state.0 {
                gate.1.wait(&mut state);
            }
        });
    }
    while started.load(Ordering::SeqCst) < threads {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Should the submit itself wait on the global pool, this frees it in the end, and says so.
    let release = |gate: &(Mutex<(bool, bool)>, Condvar), late: bool| {
        let mut state = gate.0.lock();
        *state = (true, state.1 || late && !state.0);
        gate.1.notify_all();
    };
    let watchdog_gate = gate.clone();
    let watchdog = std::thread::spawn(move || {
        let mut state = watchdog_gate.0.lock();
        if !state.0 {
            watchdog_gate.1.wait_for(&mut state, Duration::from_secs(300));
        }
        drop(state);
        release(&watchdog_gate, true);
    });
    let job = s.submit("lane", None, req).unwrap().job_id;
    let r = wait(&s, &job, Duration::from_secs(300));
    let late = gate.0.lock().1;
    release(&gate, false);
    watchdog.join().unwrap();
    assert!(!late, "the {kind:?} waited for the global rayon pool");
    assert_verified(&r.unwrap_or_else(|| panic!("the {kind:?} waited for the global rayon pool")), kind);
    s.shutdown(Duration::from_secs(30));
}

/// One test for both lanes, one after the other: two tests that each fill the global pool,
/// run at once in this process, would wait for each other's blockers (the pool is one).
#[test]
fn winning_and_window_post_are_proved_while_every_global_rayon_thread_is_busy() {
    for kind in [ProofKind::WinningPost, ProofKind::WindowPostPartition] {
        proved_while_every_global_rayon_thread_is_busy(kind);
    }
}

/// Nothing on the general side holds the lane up: not a parameter load that hangs (the
/// general synthesis worker is stuck loading PoRep's parameters, with their cache slot
/// locked), nor a backlog of 100 PoRep jobs queued behind it. The deadline proofs are made,
/// verified and returned while every PoRep job is still waiting; then cancel ends them all.
#[test]
fn deadline_proofs_pass_a_hung_parameter_load_and_100_queued_porep_jobs() {
    use cuzk_core::faults::{self, Action, Stage};
    let backend = Arc::new(GatedProver::default());
    let s = scheduler(true, backend.clone());
    let loading = "deadline-lane-porep-load";
    faults::arm(Stage::SrsLoad, loading, Action::Hold);
    let mut porep = vec![s.submit(loading, None, fixture_request(ProofKind::PoRepSealCommit)).unwrap().job_id];
    while faults::is_armed(Stage::SrsLoad, loading) {
        std::thread::sleep(Duration::from_millis(20));
    }
    porep.extend((0..100).map(|i| {
        s.submit(&format!("porep-backlog-{i}"), None, fixture_request(ProofKind::PoRepSealCommit)).unwrap().job_id
    }));

    for kind in [ProofKind::WinningPost, ProofKind::WindowPostPartition] {
        let job = s.submit(kind.name(), None, fixture_request(kind)).unwrap().job_id;
        let r = wait(&s, &job, Duration::from_secs(300))
            .unwrap_or_else(|| panic!("{kind:?} waited behind the PoRep load or backlog"));
        assert_verified(&r, kind);
    }
    assert!(porep.iter().all(|j| s.job(j).unwrap().phase() != Phase::Completed), "no PoRep job could have run");
    assert_eq!(backend.held.load(Ordering::SeqCst), 0, "no PoRep partition reached the prover");

    for job in &porep {
        let phase = s.job(job).unwrap().phase();
        assert!(matches!(phase, Phase::Queued | Phase::Running), "{job} ended before its cancel: {phase:?}");
        s.cancel(job).unwrap();
    }
    faults::release(Stage::SrsLoad, loading);
    backend.open();
    s.shutdown(Duration::from_secs(60));
    assert!(porep.iter().all(|j| s.job(j).unwrap().phase() == Phase::Cancelled));
}
