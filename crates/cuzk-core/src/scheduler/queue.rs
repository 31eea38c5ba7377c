//! A blocking priority queue of partition work. Order: higher priority first, then the older
//! job, then the lower partition index — so a CRITICAL job submitted behind a queue of PoRep
//! partitions is next at the following partition boundary.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use parking_lot::{Condvar, Mutex};

use super::job::Priority;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WorkKey(pub Priority, pub Reverse<u64>, pub Reverse<usize>);

impl WorkKey {
    pub fn new(priority: Priority, job_seq: u64, partition: usize) -> Self {
        WorkKey(priority, Reverse(job_seq), Reverse(partition))
    }
}

struct Entry<T> {
    key: WorkKey,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

struct State<T> {
    heap: BinaryHeap<Entry<T>>,
    closed: bool,
}

pub struct WorkQueue<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

impl<T> Default for WorkQueue<T> {
    fn default() -> Self {
        WorkQueue { state: Mutex::new(State { heap: BinaryHeap::new(), closed: false }), ready: Condvar::new() }
    }
}

impl<T> WorkQueue<T> {
    pub fn push(&self, key: WorkKey, item: T) {
        self.state.lock().heap.push(Entry { key, item });
        // All: a deadline-lane worker must see deadline work even when a general worker
        // takes the wake-up.
        self.ready.notify_all();
    }

    /// The highest-priority item, waiting for one; None once the queue is closed.
    #[cfg(test)]
    pub fn pop(&self) -> Option<T> {
        self.pop_if(|_| true)
    }

    /// The best item whose priority is `wanted`, waiting until there is one; None once the
    /// queue is closed. The best wanted item need not be the best item: the general workers
    /// leave CRITICAL work to the critical lane, and a WinningPoSt at the head must not stop
    /// them taking the PoRep partitions behind it.
    pub fn pop_if(&self, wanted: impl Fn(Priority) -> bool) -> Option<T> {
        let mut s = self.state.lock();
        loop {
            if s.closed {
                return None;
            }
            if let Some(item) = take_best(&mut s.heap, &wanted) {
                return Some(item);
            }
            self.ready.wait(&mut s);
        }
    }

    /// Remove (and drop) every item `keep` rejects; returns how many were removed.
    pub fn remove_where(&self, mut reject: impl FnMut(&T) -> bool) -> usize {
        let mut s = self.state.lock();
        let before = s.heap.len();
        s.heap.retain(|e| !reject(&e.item));
        before - s.heap.len()
    }

    /// Items ahead of a new item with `key`.
    pub fn ahead_of(&self, key: WorkKey) -> usize {
        self.state.lock().heap.iter().filter(|e| e.key > key).count()
    }

    /// Wake all waiters and make `pop` return None from now on; queued items are dropped.
    pub fn close(&self) {
        let mut s = self.state.lock();
        s.closed = true;
        s.heap.clear();
        drop(s);
        self.ready.notify_all();
    }
}

/// The best wanted entry: the head when it is wanted (the usual case), else found by a scan
/// and taken out by rebuilding the heap. Queues hold at most a few hundred partitions, and
/// the scan happens only while unwanted work sits at the head.
fn take_best<T>(heap: &mut BinaryHeap<Entry<T>>, wanted: impl Fn(Priority) -> bool) -> Option<T> {
    match heap.peek() {
        None => return None,
        Some(head) if wanted(head.key.0) => return heap.pop().map(|e| e.item),
        Some(_) => {}
    }
    if !heap.iter().any(|e| wanted(e.key.0)) {
        return None;
    }
    let mut entries = std::mem::take(heap).into_vec();
    let best = entries.iter().enumerate().filter(|(_, e)| wanted(e.key.0)).max_by_key(|(_, e)| e.key).map(|(at, _)| at);
    let item = best.map(|at| entries.swap_remove(at).item);
    *heap = BinaryHeap::from(entries);
    item
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_then_age_then_partition() {
        let q = WorkQueue::default();
        q.push(WorkKey::new(Priority::Normal, 1, 0), "porep-1/0");
        q.push(WorkKey::new(Priority::Normal, 1, 1), "porep-1/1");
        q.push(WorkKey::new(Priority::Normal, 2, 0), "porep-2/0");
        q.push(WorkKey::new(Priority::Critical, 3, 0), "winning-3/0");
        assert_eq!(q.ahead_of(WorkKey::new(Priority::High, 4, 0)), 1);
        let order: Vec<_> = (0..4).map(|_| q.pop().unwrap()).collect();
        assert_eq!(order, ["winning-3/0", "porep-1/0", "porep-1/1", "porep-2/0"]);
        q.push(WorkKey::new(Priority::Low, 5, 0), "x");
        assert_eq!(q.remove_where(|s| *s == "x"), 1);
        // A filter for HIGH and CRITICAL work takes the best of those.
        let deadline = |p: Priority| p >= Priority::High;
        q.push(WorkKey::new(Priority::Normal, 6, 0), "porep-6/0");
        q.push(WorkKey::new(Priority::High, 7, 0), "wpost-7/0");
        assert_eq!(q.pop_if(deadline), Some("wpost-7/0"));
        let lane = std::thread::scope(|sc| {
            let waiter = sc.spawn(|| q.pop_if(deadline));
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!waiter.is_finished(), "NORMAL work is not the lane's");
            q.push(WorkKey::new(Priority::Critical, 8, 0), "winning-8/0");
            waiter.join().unwrap()
        });
        assert_eq!(lane, Some("winning-8/0"));
        assert_eq!(q.pop(), Some("porep-6/0"));
        // Work left to the critical lane does not hold up what lies behind it, and what is
        // taken from behind it comes out in order.
        q.push(WorkKey::new(Priority::Critical, 9, 0), "winning-9/0");
        q.push(WorkKey::new(Priority::Normal, 10, 1), "porep-10/1");
        q.push(WorkKey::new(Priority::High, 11, 0), "wpost-11/0");
        q.push(WorkKey::new(Priority::Normal, 10, 0), "porep-10/0");
        let general = |p: Priority| p != Priority::Critical;
        let order: Vec<_> = (0..3).map(|_| q.pop_if(general).unwrap()).collect();
        assert_eq!(order, ["wpost-11/0", "porep-10/0", "porep-10/1"]);
        assert_eq!(q.pop(), Some("winning-9/0"));
        q.close();
        assert_eq!(q.pop(), None);
    }
}
