//! A proof job as the scheduler tracks it: identity, priority, progress over its partitions,
//! its final result, and a watch channel that wakes everyone awaiting it.

use std::time::{Duration, Instant};

use cuzk_backend::Urgency;
use cuzk_filecoin::{CircuitId, ProofKind};
use parking_lot::Mutex;
use tokio::sync::watch;

use super::inputs::InputDigest;
use crate::pipeline::ProvedPartition;

/// Wire priorities (`cuzk.v1.Priority`); higher runs first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    Low = 1,
    Normal = 2,
    High = 3,
    Critical = 4,
}

impl Priority {
    /// Unspecified priority: WinningPoSt is CRITICAL (a missed one loses a block reward),
    /// WindowPoSt HIGH (a missed one is a fault), everything else NORMAL.
    pub fn default_for(kind: ProofKind) -> Priority {
        match kind {
            ProofKind::WinningPost => Priority::Critical,
            ProofKind::WindowPostPartition => Priority::High,
            _ => Priority::Normal,
        }
    }

    /// How the device lock treats this priority's partitions (see cuzk-cuda's device_lock).
    pub fn urgency(self) -> Urgency {
        match self {
            Priority::Critical => Urgency::Critical,
            Priority::High => Urgency::High,
            Priority::Low | Priority::Normal => Urgency::Normal,
        }
    }

    pub fn from_wire(v: i32) -> Option<Priority> {
        [Priority::Low, Priority::Normal, Priority::High, Priority::Critical].into_iter().find(|p| *p as i32 == v)
    }
}

/// Where a job is. Terminal states never change again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Queued,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl Phase {
    pub fn is_terminal(self) -> bool {
        matches!(self, Phase::Completed | Phase::Failed | Phase::Cancelled)
    }
}

#[derive(Clone, Debug, Default)]
pub struct JobTimings {
    pub queue_wait: Duration,
    pub srs_load: Duration,
    pub synthesis: Duration,
    pub prove: Duration,
    pub total: Duration,
}

/// What AwaitProof returns once a job is terminal.
#[derive(Clone, Debug)]
pub struct JobResult {
    pub phase: Phase,
    pub proof: Vec<u8>,
    pub error: Option<String>,
    pub timings: JobTimings,
}

pub(crate) struct Progress {
    pub phase: Phase,
    pub started: Option<Instant>,
    pub finished: Option<Instant>,
    /// When a resubmission under its request id was last answered with this job: pruning
    /// keeps it for the retention window from then too (see `Scheduler::prune`).
    pub handed_out: Option<Instant>,
    pub proved: Vec<ProvedPartition>,
    pub srs_load: Duration,
    /// Sums over the partitions proved so far.
    pub synthesis: Duration,
    pub prove: Duration,
    pub result: Option<JobResult>,
}

pub struct Job {
    pub id: String,
    pub request_id: String,
    /// What the job proves; a resubmitted request id attaches to it only if this matches.
    pub(crate) inputs: InputDigest,
    pub kind: ProofKind,
    pub circuit: CircuitId,
    pub priority: Priority,
    /// Submission order; ties within a priority go to the older job.
    pub seq: u64,
    pub partitions: usize,
    /// When its submit reached the scheduler: before the decoding of its inputs, so a job's
    /// queue wait and total include that (all the client waits for, but the gRPC transfer).
    pub submitted: Instant,
    /// Where it is, and who awaits it.
    pub(crate) state: JobState,
}

/// What changes over a job's life: its progress, and the channel that wakes whoever awaits
/// it when its phase changes.
pub(crate) struct JobState {
    pub(crate) progress: Mutex<Progress>,
    phase_tx: watch::Sender<Phase>,
}

impl JobState {
    /// A job just submitted: queued, nothing done yet.
    pub(crate) fn queued() -> JobState {
        let (phase_tx, _) = watch::channel(Phase::Queued);
        let progress = Progress {
            phase: Phase::Queued,
            started: None,
            finished: None,
            handed_out: None,
            proved: Vec::new(),
            srs_load: Duration::ZERO,
            synthesis: Duration::ZERO,
            prove: Duration::ZERO,
            result: None,
        };
        JobState { progress: Mutex::new(progress), phase_tx }
    }
}

impl Job {
    pub fn phase(&self) -> Phase {
        self.state.progress.lock().phase
    }

    /// Whether a request with inputs `digest` may be answered with this job (the one its
    /// request id points at; see `inputs`): same inputs, and queued, running or completed. A
    /// failed or cancelled job is never handed back, so a retry under the same id is proved
    /// again instead of receiving the old failure until the client gives up.
    pub(crate) fn may_answer(&self, digest: &InputDigest) -> bool {
        self.inputs == *digest && matches!(self.phase(), Phase::Queued | Phase::Running | Phase::Completed)
    }

    pub fn subscribe(&self) -> watch::Receiver<Phase> {
        self.state.phase_tx.subscribe()
    }

    pub fn result(&self) -> Option<JobResult> {
        self.state.progress.lock().result.clone()
    }

    /// Record one proved partition; returns all of them once the last one is in (and None
    /// while some are missing or the job already ended).
    pub(crate) fn record(&self, proved: ProvedPartition) -> Option<Vec<ProvedPartition>> {
        let mut p = self.state.progress.lock();
        if p.phase.is_terminal() {
            return None;
        }
        p.synthesis += proved.synthesis_time;
        p.prove += proved.prove_timings.total;
        p.proved.push(proved);
        (p.proved.len() == self.partitions).then(|| std::mem::take(&mut p.proved))
    }

    pub(crate) fn is_cancelled_or_done(&self) -> bool {
        self.state.progress.lock().phase.is_terminal()
    }

    /// Mark the job running when its first partition starts; returns false if it already ended.
    pub(crate) fn mark_started(&self) -> bool {
        let mut p = self.state.progress.lock();
        if p.phase.is_terminal() {
            return false;
        }
        if p.phase == Phase::Queued {
            p.phase = Phase::Running;
            p.started = Some(Instant::now());
            drop(p);
            self.state.phase_tx.send_replace(Phase::Running);
        }
        true
    }

    /// Move to a terminal phase once; later calls are ignored (first outcome wins).
    /// `account` runs after the outcome is recorded and before anyone awaiting the job is
    /// woken, so counters are already up to date when a client sees the result.
    pub(crate) fn finish(
        &self,
        phase: Phase,
        proof: Vec<u8>,
        error: Option<String>,
        account: impl FnOnce(&JobTimings),
    ) -> bool {
        debug_assert!(phase.is_terminal());
        let mut p = self.state.progress.lock();
        if p.phase.is_terminal() {
            return false;
        }
        let now = Instant::now();
        let timings = JobTimings {
            queue_wait: p.started.unwrap_or(now).duration_since(self.submitted),
            srs_load: p.srs_load,
            synthesis: p.synthesis,
            prove: p.prove,
            total: now.duration_since(self.submitted),
        };
        p.phase = phase;
        p.finished = Some(now);
        p.proved.clear();
        account(&timings);
        p.result = Some(JobResult { phase, proof, error, timings });
        drop(p);
        self.state.phase_tx.send_replace(phase);
        true
    }
}
