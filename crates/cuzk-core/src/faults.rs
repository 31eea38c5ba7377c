//! Fault injection for tests: make a named worker stage panic (or stall until released) for
//! one job, so the tests can prove that a panic anywhere in a worker fails only that job, that
//! admission caps hold while jobs are stuck, and that a stalled job is caught by the watchdog.
//!
//! Always compiled, inert unless a test arms it: every stage calls [`hit`], which costs one
//! relaxed atomic load while nothing is armed. Nothing in the configuration or on the wire can
//! arm a fault; only Rust code linking this crate can (the tests). Faults are matched by the
//! job's `request_id`, which the worker publishes in a thread-local while it works on that
//! job's partition ([`JobContext`]), so tests running in parallel in one process, each with
//! their own request ids, never trip over each other's faults — including inside the
//! parameter and PCE caches, which know nothing about jobs.

use parking_lot::{Condvar, Mutex};
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The stages a worker runs for a job, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// `PceCache::get` while loading or extracting the matrices (slot lock held).
    PceLoad,
    /// The synthesis worker's call into `pipeline::synthesize`.
    Synthesis,
    /// `SrsCache::get` while loading and checking parameters (slot lock held).
    SrsLoad,
    /// The prover worker's call into `pipeline::prove`.
    Prove,
    /// `pipeline::verify_and_assemble`, for the job's last partition.
    Verify,
}

impl Stage {
    pub const ALL: [Stage; 5] = [Stage::PceLoad, Stage::Synthesis, Stage::SrsLoad, Stage::Prove, Stage::Verify];

    /// The name used in error messages ("internal error: panic in <name>: …").
    pub fn name(self) -> &'static str {
        match self {
            Stage::PceLoad => "PCE load/extraction",
            Stage::Synthesis => "synthesis",
            Stage::SrsLoad => "parameter load/verification",
            Stage::Prove => "prove",
            Stage::Verify => "verify and assemble",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What an armed fault does when its stage is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Panic,
    /// Block the worker at the stage until the test calls [`release`] (a stalled stage).
    Hold,
}

struct Fault {
    stage: Stage,
    request_id: String,
    action: Action,
}

/// Number of armed faults; the fast path of [`hit`] reads only this.
static ARMED: AtomicUsize = AtomicUsize::new(0);
static FAULTS: Mutex<Vec<Fault>> = Mutex::new(Vec::new());
/// (stage, request id) pairs whose [`Action::Hold`] the test has released.
static RELEASED: Mutex<Vec<(Stage, String)>> = Mutex::new(Vec::new());
static RELEASE: Condvar = Condvar::new();

thread_local! {
    static CURRENT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Arm a one-shot fault: the next time a worker reaches `stage` for a job submitted under
/// `request_id`, it does `action` (then the fault is gone). Tests only.
pub fn arm(stage: Stage, request_id: &str, action: Action) {
    FAULTS.lock().push(Fault { stage, request_id: request_id.to_string(), action });
    ARMED.fetch_add(1, Ordering::SeqCst);
}

/// Let a worker held at `stage` for `request_id` ([`Action::Hold`]) go on; also lets it pass
/// at once if it has not got there yet.
pub fn release(stage: Stage, request_id: &str) {
    RELEASED.lock().push((stage, request_id.to_string()));
    RELEASE.notify_all();
}

/// Whether a fault armed for (`stage`, `request_id`) is still waiting to fire.
pub fn is_armed(stage: Stage, request_id: &str) -> bool {
    FAULTS.lock().iter().any(|f| f.stage == stage && f.request_id == request_id)
}

/// Marks the current thread as working for the job with this request id until dropped.
pub(crate) struct JobContext {
    previous: Option<String>,
}

impl JobContext {
    pub(crate) fn enter(request_id: &str) -> JobContext {
        // Only worth the allocation when a test has armed something.
        let value = (ARMED.load(Ordering::Relaxed) > 0).then(|| request_id.to_string());
        JobContext { previous: CURRENT.with(|c| c.replace(value)) }
    }
}

impl Drop for JobContext {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Called by every stage: fires the fault armed for it and the current job, if any.
pub(crate) fn hit(stage: Stage) {
    if ARMED.load(Ordering::Relaxed) == 0 {
        return;
    }
    let Some(request_id) = CURRENT.with(|c| c.borrow().clone()) else { return };
    let action = {
        let mut faults = FAULTS.lock();
        let Some(i) = faults.iter().position(|f| f.stage == stage && f.request_id == request_id) else { return };
        ARMED.fetch_sub(1, Ordering::SeqCst);
        faults.remove(i).action
    };
    match action {
        Action::Panic => panic!("injected fault at {stage} for request {request_id}"),
        Action::Hold => {
            let mut released = RELEASED.lock();
            while !released.iter().any(|(s, r)| *s == stage && *r == request_id) {
                RELEASE.wait(&mut released);
            }
        }
    }
}
