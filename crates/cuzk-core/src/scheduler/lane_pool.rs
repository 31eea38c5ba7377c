//! The critical lane's private rayon pools. Synthesis, parameter loading, the host side of
//! proving and verification are all rayon work. On the one global pool a WinningPoSt's tasks
//! queue behind those of every PoRep and WindowPoSt partition being synthesized: on the H200
//! a WinningPoSt's witness would wait for a whole WindowPoSt synthesis (BENCHMARKS.md,
//! 2026-12-04 a2816fd). A pool of its own gets its share of the cores from the OS instead.
//!
//! Each of the critical lane's two workers owns one pool, and only that worker's thread ever
//! installs into it, one stage at a time. That is what makes it safe. A stage is installed
//! whole, waits included (memory, a parameter slot, the device lock); on a pool shared by
//! several workers, a pool thread waiting in a `join` can steal another worker's installed
//! stage and run it to the end first: two partitions then finish together, and a stolen stage
//! that waits on something held lower on the same stack never returns. With one stage per
//! pool, everything a pool thread can steal belongs to the stage it is working for.

use rayon::{ThreadPool, ThreadPoolBuilder};

/// Where one worker runs its stages: on its own pool (critical lane), else on the global one.
pub(super) struct LanePool(Option<ThreadPool>);

impl LanePool {
    /// The pool for one worker: its own if it is a critical-lane worker (`critical`), else
    /// none. `role` ("synth", "prove") names its threads
    /// `cuzk-critical-<role>-rayon-<i>`. As wide as the machine: a WinningPoSt's stages are
    /// short, and while none runs the threads sleep. Should the threads fail to start, the
    /// worker runs on the global pool (slower under load, never wrong) and says so.
    pub fn for_worker(critical: bool, role: &'static str) -> Self {
        if !critical {
            return LanePool(None);
        }
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        let built = ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("cuzk-critical-{role}-rayon-{i}"))
            .build();
        match built {
            Ok(pool) => LanePool(Some(pool)),
            Err(e) => {
                tracing::warn!(role, error = %e, "critical lane: no rayon pool of its own; its work shares the global pool");
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
