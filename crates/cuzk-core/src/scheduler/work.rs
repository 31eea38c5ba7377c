//! What the two work queues hold: a partition waiting for synthesis, and a synthesized one
//! waiting for a prover together with what it holds meanwhile (its memory reservation, its
//! circuit's parameters, its count in the in-flight gauge).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cuzk_filecoin::Partition;

use super::job::Job;
use crate::memory::Reservation;
use crate::pipeline::SynthesizedPartition;
use crate::srs_cache::LoadedSrs;

/// A partition waiting for synthesis.
pub struct PendingWork {
    pub job: Arc<Job>,
    pub partition: Partition,
}

/// A synthesized partition waiting for a prover, holding its memory reservation and its
/// circuit's parameters.
pub struct ReadyWork {
    pub job: Arc<Job>,
    pub synthesized: SynthesizedPartition,
    pub(super) srs: Arc<LoadedSrs>,
    pub(super) _memory: Reservation,
    pub(super) _in_flight: InFlight,
}

/// Counts a partition in the in-flight gauge from synthesis start to proof end.
pub(super) struct InFlight(Arc<AtomicU64>);

impl InFlight {
    pub(super) fn enter(gauge: &Arc<AtomicU64>) -> Self {
        gauge.fetch_add(1, Ordering::Relaxed);
        InFlight(gauge.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
