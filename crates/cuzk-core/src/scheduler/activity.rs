//! What each worker is doing: the job, the stage, and since when ([`StageMark`]), for the
//! watchdog to find a stage that stopped moving. Waits (for memory, or behind another
//! partition's load that waits for memory) are recorded untimed: only work can stall.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::job::Job;

struct Busy {
    job: Arc<Job>,
    stage: &'static str,
    /// When the stage started; None while the worker waits (untimed).
    since: Option<Instant>,
}

/// What each worker is doing now, by worker token.
#[derive(Default)]
pub(super) struct Activity {
    busy: Mutex<HashMap<u64, Busy>>,
    next: AtomicU64,
}

impl Activity {
    /// The jobs whose worker has been in one timed stage longer than `limit`, with the stage,
    /// each reported once: the stage stays named, but is no longer timed.
    pub(super) fn take_stalled(&self, limit: Duration) -> Vec<(Arc<Job>, &'static str)> {
        let mut busy = self.busy.lock();
        busy.values_mut()
            .filter(|b| b.since.is_some_and(|t| t.elapsed() > limit) && !b.job.is_cancelled_or_done())
            .map(|b| {
                b.since = None;
                (b.job.clone(), b.stage)
            })
            .collect()
    }
}

/// A worker's claim on one partition of `job`: registered on creation, updated at every
/// stage, removed on drop (also when the stage panicked).
pub(super) struct StageMark<'a> {
    activity: &'a Activity,
    token: u64,
    stage: Cell<&'static str>,
}

impl<'a> StageMark<'a> {
    /// Start watching a worker on `job`, untimed in `stage` until [`StageMark::set`].
    pub(super) fn new(activity: &'a Activity, job: &Arc<Job>, stage: &'static str) -> Self {
        let token = activity.next.fetch_add(1, Ordering::Relaxed);
        activity.busy.lock().insert(token, Busy { job: job.clone(), stage, since: None });
        StageMark { activity, token, stage: Cell::new(stage) }
    }

    /// Enter a stage that does work: the watchdog times it from now.
    pub(super) fn set(&self, stage: &'static str) {
        self.update(stage, Some(Instant::now()));
    }

    /// Enter a stage that waits for others (memory): not timed.
    pub(super) fn wait(&self, stage: &'static str) {
        self.update(stage, None);
    }

    /// The current stage (named in a caught panic's message).
    pub(super) fn get(&self) -> &'static str {
        self.stage.get()
    }

    fn update(&self, stage: &'static str, since: Option<Instant>) {
        self.stage.set(stage);
        if let Some(b) = self.activity.busy.lock().get_mut(&self.token) {
            b.stage = stage;
            b.since = since;
        }
    }
}

impl Drop for StageMark<'_> {
    fn drop(&mut self) {
        self.activity.busy.lock().remove(&self.token);
    }
}
