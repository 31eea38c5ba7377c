//! A computation on a CPU thread beside a partition's device region (B in G2 with
//! `gpus.b_g2 = "cpu"`) that is joined however the partition ends. Pure logic, no CUDA:
//! compiled and tested on every build.
//!
//! Why: the thread reads the parameters' points through a slice the borrow checker cannot see
//! (`std::thread::spawn` needs `'static`), promised to outlive it because the partition joins
//! the thread in `finish`. A panic in the device region skipped that join: the handle was
//! dropped, the thread ran on detached, the job failed, the cache could evict the parameters,
//! and the thread went on reading freed memory (issue #36, item 10). Dropping a [`CpuTask`]
//! joins it, so unwinding waits for the thread before the borrow of the points ends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

pub struct CpuTask<T: Send + 'static> {
    handle: Option<JoinHandle<T>>,
}

/// Tasks whose thread is still running, process-wide (the GPU suite checks that none is left
/// behind by a failed partition).
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// How many tasks' threads are running now.
pub fn running() -> usize {
    RUNNING.load(Ordering::SeqCst)
}

impl<T: Send + 'static> CpuTask<T> {
    /// Run `f` on a new thread.
    ///
    /// # Safety
    /// Whatever `f` borrows through raw pointers must outlive this value: the task is joined
    /// by [`CpuTask::join`] or on drop, never later.
    pub unsafe fn spawn(f: impl FnOnce() -> T + Send + 'static) -> Self {
        /// Counts the thread out however it ends (its closure may panic).
        struct Running;
        impl Drop for Running {
            fn drop(&mut self) {
                RUNNING.fetch_sub(1, Ordering::SeqCst);
            }
        }
        RUNNING.fetch_add(1, Ordering::SeqCst);
        CpuTask {
            handle: Some(std::thread::spawn(move || {
                let _running = Running;
                f()
            })),
        }
    }

    /// Wait for the result. A panic on the thread is resumed here.
    pub fn join(mut self) -> T {
        let handle = self.handle.take().expect("joined once");
        match handle.join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl<T: Send + 'static> Drop for CpuTask<T> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            // The result (or the thread's panic) is of no use now; the wait is the point.
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_panic_beside_the_task_waits_for_it_before_unwinding_past() {
        let done = Arc::new(AtomicBool::new(false));
        let seen = {
            let done = done.clone();
            std::panic::catch_unwind(move || {
                let flag = done.clone();
                // SAFETY: the closure owns everything it uses.
                let _task = unsafe {
                    CpuTask::spawn(move || {
                        std::thread::sleep(Duration::from_millis(300));
                        flag.store(true, Ordering::SeqCst);
                    })
                };
                panic!("the device region failed");
            })
        };
        assert!(seen.is_err());
        assert!(done.load(Ordering::SeqCst), "unwinding went past the task before it finished");
    }

    #[test]
    fn join_returns_the_result_and_resumes_a_panic() {
        let t = unsafe { CpuTask::spawn(|| 6 * 7) };
        assert_eq!(t.join(), 42);
        let t = unsafe { CpuTask::spawn(|| -> u32 { panic!("B in G2 failed") }) };
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.join())).is_err());
    }
}
