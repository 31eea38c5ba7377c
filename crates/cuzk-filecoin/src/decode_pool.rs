//! The threads a submit hashes, decodes and checks its vanilla proofs on.
//!
//! A 32 GiB WindowPoSt partition arrives as 2349 bincode vanilla proofs (~59 MB); decoding
//! them one after another took ~250 ms of the ~450 ms that `prepare` cost on the 2-core dev
//! box, all of it before the partition could even be queued. Each sector's proof decodes
//! on its own, so they are spread over threads.
//!
//! Not rayon's global pool: the general workers keep that busy with PoRep synthesis, and a
//! job injected from outside waits until some worker's own deque runs dry. A deadline proof's
//! decoding would queue behind PoRep exactly as its synthesis once did (see the critical
//! lane's private pools in cuzk-core). This pool runs nothing but decoding, so its threads
//! sleep between submits and share the cores with the rest by the OS's fair scheduling.

use std::sync::OnceLock;

use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

/// Fewer items than this decode on the calling thread: a WinningPoSt's single sector, a
/// test's handful, cost less than waking the pool.
const PARALLEL_FROM: usize = 16;

fn pool() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cuzk-decode-{i}"))
            .build()
            .expect("spawning the decode threads")
    })
}

/// `f` over every item, in order, spread over the decode threads when there are enough of
/// them. Every item is tried; of the errors, the one of the lowest index is returned, so
/// the message a client gets does not depend on thread timing.
pub fn try_map<T: Sync, U: Send, E: Send>(
    items: &[T],
    f: impl Fn(usize, &T) -> Result<U, E> + Sync,
) -> Result<Vec<U>, E> {
    let results: Vec<Result<U, E>> = if items.len() < PARALLEL_FROM {
        items.iter().enumerate().map(|(i, t)| f(i, t)).collect()
    } else {
        pool().install(|| items.par_iter().enumerate().map(|(i, t)| f(i, t)).collect())
    };
    results.into_iter().collect()
}

/// `f` over every item, in order, spread over the decode threads when there are enough of
/// them.
pub fn map<T: Sync, U: Send>(items: &[T], f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    if items.len() < PARALLEL_FROM {
        items.iter().map(f).collect()
    } else {
        pool().install(|| items.par_iter().map(&f).collect())
    }
}

/// Drop `value` on a decode thread: freeing a partition's decoded proofs is tens of thousands
/// of small frees (~30 ms for a 32 GiB WindowPoSt), which the submit need not wait for.
pub fn drop_later<T: Send + 'static>(value: T) {
    pool().spawn(move || drop(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_their_order_and_the_first_error_wins() {
        let items: Vec<u32> = (0..1000).collect();
        let doubled = try_map(&items, |i, v| Ok::<_, String>((i as u32, v * 2))).unwrap();
        assert!(doubled.iter().enumerate().all(|(i, &(j, d))| i as u32 == j && d == 2 * i as u32));

        let err = try_map(&items, |_, &v| if v % 300 == 299 { Err(format!("bad {v}")) } else { Ok(v) }).unwrap_err();
        assert_eq!(err, "bad 299");
        let err = try_map(&items[..5], |_, &v| if v >= 3 { Err(v) } else { Ok(v) }).unwrap_err();
        assert_eq!(err, 3);
        assert_eq!(map(&items, |v| v + 1), (1..1001).collect::<Vec<_>>());
    }
}
