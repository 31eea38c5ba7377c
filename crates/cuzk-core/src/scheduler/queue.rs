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

    /// The highest-priority item if `wanted(its priority)`, waiting until there is one; None
    /// once the queue is closed. The deadline lane pops with `Priority::is_deadline`.
    pub fn pop_if(&self, wanted: impl Fn(Priority) -> bool) -> Option<T> {
        let mut s = self.state.lock();
        loop {
            if s.closed {
                return None;
            }
            if s.heap.peek().is_some_and(|e| wanted(e.key.0)) {
                return s.heap.pop().map(|e| e.item);
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
        // The deadline lane takes only HIGH and CRITICAL work, the best first.
        q.push(WorkKey::new(Priority::Normal, 6, 0), "porep-6/0");
        q.push(WorkKey::new(Priority::High, 7, 0), "wpost-7/0");
        assert_eq!(q.pop_if(Priority::is_deadline), Some("wpost-7/0"));
        let lane = std::thread::scope(|sc| {
            let waiter = sc.spawn(|| q.pop_if(Priority::is_deadline));
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!waiter.is_finished(), "NORMAL work is not the lane's");
            q.push(WorkKey::new(Priority::Critical, 8, 0), "winning-8/0");
            waiter.join().unwrap()
        });
        assert_eq!(lane, Some("winning-8/0"));
        assert_eq!(q.pop(), Some("porep-6/0"));
        q.close();
        assert_eq!(q.pop(), None);
    }
}
