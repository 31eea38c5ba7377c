//! The deadline and critical lanes' private rayon pools. Synthesis, parameter loading, the host
//! side of proving and verification are all rayon work. On the one global pool a WinningPoSt's
//! tasks queue behind those of every PoRep and WindowPoSt partition being synthesized: on the
//! H200 a WinningPoSt's witness would wait for a whole WindowPoSt synthesis (BENCHMARKS.md,
//! 2026-12-04 a2816fd). A WindowPoSt's tasks queue the same way behind the PoRep stream's: a
//! 2349-sector partition's synthesis took 1.8–2.3 s beside it (H200, BENCHMARKS.md 2026-12-04
//! 2bd5fb9) against 1.09 s on an idle daemon (H100, 2026-12-06). A pool of its own gets a lane
//! its share of the cores from the OS instead.
//!
//! Each of a lane's two workers owns one pool, and only that worker's thread ever installs
//! into it, one stage at a time. That is what makes it safe. A stage is installed whole, waits
//! included (memory, a parameter slot, the device lock); on a pool shared by several workers, a
//! pool thread waiting in a `join` can steal another worker's installed stage and run it to the
//! end first: two partitions then finish together, and a stolen stage that waits on something
//! held lower on the same stack never returns. With one stage per pool, everything a pool
//! thread can steal belongs to the stage it is working for.

use rayon::{ThreadPool, ThreadPoolBuilder};

use super::workers::Lane;

/// Where one worker runs its stages: on its own pool (deadline and critical lanes), else on
/// the global one.
pub(super) struct LanePool(Option<ThreadPool>);

impl LanePool {
    /// The pool for one worker of `lane`: its own for the deadline and critical lanes, else
    /// none. `role` ("synth", "prove") names its threads `cuzk-<lane>-<role>-rayon-<i>`. As
    /// wide as the machine: the lanes' stages are short and rare (a WinningPoSt, a WindowPoSt
    /// partition), and while none runs the threads sleep. Should the threads fail to start,
    /// the worker runs on the global pool (slower under load, never wrong) and says so.
    pub fn for_worker(lane: Lane, role: &'static str) -> Self {
        let name = match lane {
            Lane::Critical => "critical",
            Lane::Deadline => "deadline",
            Lane::All | Lane::General => return LanePool(None),
        };
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        let built = ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("cuzk-{name}-{role}-rayon-{i}"))
            .build();
        match built {
            Ok(pool) => LanePool(Some(pool)),
            Err(e) => {
                tracing::warn!(lane = name, role, error = %e, "no rayon pool of the lane's own; its work shares the global pool");
                LanePool(None)
            }
        }
    }

    /// Runs one stage on this worker's pool, or in place where it has none. Thread-locals set
    /// outside (the job context of `faults`) are not seen inside: enter them in `stage`.
    pub fn run<R: Send>(&self, stage: impl FnOnce() -> R + Send) -> R {
        match &self.0 {
            Some(pool) => pool.install(stage),
            None => stage(),
        }
    }
}
