//! The rayon pools that deadline work runs its parallel stages on. Synthesis, parameter
//! loading, the host side of proving and verification are all rayon work; on the one global
//! pool a WinningPoSt's tasks queue behind those of every PoRep and WindowPoSt partition being
//! synthesized — measured on the H200: 1.2 s instead of 0.01 s for a 32 GiB WinningPoSt's
//! witness while a 2349-sector WindowPoSt partition was synthesized. A pool of its own gets a
//! share of the cores from the OS instead, whichever worker (lane or general) took the work.

use rayon::{ThreadPool, ThreadPoolBuilder};

use super::job::Priority;

/// One pool per deadline class, present while `pipeline.deadline_lane` is on. HIGH work's
/// (WindowPoSt) is as wide as the machine: it shares the cores with the global pool, about
/// half each while both are busy. CRITICAL work's (WinningPoSt) has 4 threads: its witness is
/// small, and it must not wait for a WindowPoSt's either.
#[derive(Default)]
pub(crate) struct RayonLanes {
    high: Option<ThreadPool>,
    critical: Option<ThreadPool>,
}

impl RayonLanes {
    pub fn new(enabled: bool) -> Self {
        if !enabled {
            return RayonLanes::default();
        }
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        RayonLanes { high: Some(pool("cuzk-high-rayon", cores)), critical: Some(pool("cuzk-critical-rayon", cores.min(4))) }
    }

    /// Runs `stage` (one partition's synthesis, or its proving and verification) on the pool
    /// of its priority, or where it is called for PoRep and SnapDeals work. Thread-locals set
    /// outside (the job context of `faults`) are not seen inside: enter them in `stage`.
    pub fn run<R: Send>(&self, priority: Priority, stage: impl FnOnce() -> R + Send) -> R {
        let pool = match priority {
            Priority::Critical => self.critical.as_ref(),
            Priority::High => self.high.as_ref(),
            Priority::Low | Priority::Normal => None,
        };
        match pool {
            Some(pool) => pool.install(stage),
            None => stage(),
        }
    }
}

fn pool(name: &'static str, threads: usize) -> ThreadPool {
    let pool = ThreadPoolBuilder::new().num_threads(threads).thread_name(move |i| format!("{name}-{i}")).build();
    pool.expect("starting a deadline class's rayon pool")
}
