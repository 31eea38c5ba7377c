//! The rayon pool that CRITICAL work (WinningPoSt) runs its parallel stages on. Synthesis,
//! parameter loading, the host side of proving and verification are all rayon work; on the
//! one global pool a WinningPoSt's tasks queue behind those of every PoRep and WindowPoSt
//! partition being synthesized — measured on the H200: 1.18 s instead of 0.01 s for a 32 GiB
//! WinningPoSt's witness while a 2349-sector WindowPoSt partition was synthesized. A pool of
//! its own gets a share of the cores from the OS instead, whichever worker took the work.
//!
//! Only CRITICAL work has one. A stage is installed whole, waits included (memory, the device
//! lock), and a pool thread waiting in a `join` may steal another installed stage and run it
//! to the end before it returns: two WindowPoSt partitions on a shared pool of their own were
//! entangled so (H200: synthesis 27 s instead of 3.2 s). A WinningPoSt's stages are short
//! (~0.3 s), so the most that costs it is one of them.

use rayon::{ThreadPool, ThreadPoolBuilder};

use super::job::Priority;

/// The CRITICAL pool, present while `pipeline.deadline_lane` is on: 4 threads, as a
/// WinningPoSt's witness is small.
#[derive(Default)]
pub(crate) struct CriticalPool {
    critical: Option<ThreadPool>,
}

impl CriticalPool {
    pub fn new(enabled: bool) -> Self {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        CriticalPool { critical: enabled.then(|| pool("cuzk-critical-rayon", cores.min(4))) }
    }

    /// Runs `stage` (one partition's synthesis, or its proving and verification) on the
    /// CRITICAL pool for CRITICAL work, and where it is called for any other. Thread-locals set
    /// outside (the job context of `faults`) are not seen inside: enter them in `stage`.
    pub fn run<R: Send>(&self, priority: Priority, stage: impl FnOnce() -> R + Send) -> R {
        match self.critical.as_ref().filter(|_| priority == Priority::Critical) {
            Some(pool) => pool.install(stage),
            None => stage(),
        }
    }
}

fn pool(name: &'static str, threads: usize) -> ThreadPool {
    let pool = ThreadPoolBuilder::new().num_threads(threads).thread_name(move |i| format!("{name}-{i}")).build();
    pool.expect("starting the CRITICAL rayon pool")
}
