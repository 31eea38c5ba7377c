//! The per-device lock of the device-exclusive region, with a lane for deadline work.
//!
//! One partition owns a device's streams at a time. A PoRep partition holds the device for
//! ~2 s at 32 GiB, and a WinningPoSt that arrives meanwhile would wait all of it. So waiters
//! come in two classes: *urgent* ones (deadline proofs: WinningPoSt, WindowPoSt) are granted
//! the device before any normal waiter, and a normal holder checks at each phase boundary
//! (after the mat-vec, the NTT and every MSM, and between the steps of a long dense MSM: when
//! its kernels have finished and the device is idle; see `imp/phases.rs`)
//! whether urgent work waits; if so it hands the device over, and takes it back once no urgent
//! work waits or runs.
//!
//! The holder's device buffers stay allocated while it is paused, so the urgent partition
//! works in what is left. Each urgent caller states the device bytes it needs; the holder hands
//! over only when some waiter's need fits the memory free at that boundary, and while it is
//! paused only the waiters that fit may run. The others wait for the holder to finish — a few
//! seconds at most — instead of failing on an allocation beside its buffers. (A 32 GiB
//! WindowPoSt partition asks for ~23 GiB; beside a paused 32 GiB PoRep partition that fits
//! only when the device is not already full of resident parameters.)

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct State {
    held: bool,
    /// The device bytes each waiting urgent caller needs (one entry per caller).
    urgent_needs: Vec<u64>,
    /// Normal holders that handed the device to urgent work; they get it back before any
    /// normal waiter (they were first, and hold device buffers).
    paused: usize,
    /// While a holder is paused: the device memory that was free when it handed over, the
    /// most any urgent caller may need to run before it resumes.
    lent: Option<u64>,
}

impl State {
    /// Whether an urgent caller waits that may run in `room` bytes.
    fn urgent_fitting(&self, room: u64) -> bool {
        self.urgent_needs.iter().any(|&need| need <= room)
    }
}

#[derive(Default)]
pub struct DeviceLock {
    state: Mutex<State>,
    changed: Condvar,
}

/// The device, held until dropped.
pub struct DeviceGuard<'a> {
    lock: &'a DeviceLock,
    urgent: bool,
    /// Times this holder handed the device to urgent work.
    pub yielded: u32,
}

/// What a phase boundary did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// No urgent work waits (or this holder is urgent itself).
    Kept,
    /// Urgent work ran; this holder has the device back.
    Yielded,
    /// Urgent work waits, but none of it fits beside this holder's buffers: it runs when
    /// this holder is done.
    NoRoom,
}

impl DeviceLock {
    /// Wait for the device as normal work: after every urgent caller, and after any holder
    /// paused for urgent work.
    pub fn lock(&self) -> DeviceGuard<'_> {
        let mut s = self.state.lock();
        while s.held || !s.urgent_needs.is_empty() || s.paused > 0 {
            self.changed.wait(&mut s);
        }
        s.held = true;
        DeviceGuard { lock: self, urgent: false, yielded: 0 }
    }

    /// Wait for the device as urgent work that needs `need` bytes of device memory: before
    /// every normal waiter, and at a normal holder's phase boundary when `need` fits there.
    pub fn lock_urgent(&self, need: u64) -> DeviceGuard<'_> {
        let mut s = self.state.lock();
        s.urgent_needs.push(need);
        while s.held || s.lent.is_some_and(|room| need > room) {
            self.changed.wait(&mut s);
        }
        let i = s.urgent_needs.iter().position(|&n| n == need).expect("this caller's need is listed");
        s.urgent_needs.swap_remove(i);
        s.held = true;
        DeviceGuard { lock: self, urgent: true, yielded: 0 }
    }

}

impl DeviceGuard<'_> {
    /// A phase boundary of a normal holder: if urgent work waits that fits in the device
    /// memory free now (`free`, asked only then), let it have the device and take it back
    /// afterwards. Call only when this holder's kernels have all finished.
    pub fn yield_to_urgent(&mut self, free: impl FnOnce() -> u64) -> Boundary {
        if self.urgent {
            return Boundary::Kept;
        }
        let mut s = self.lock.state.lock();
        if s.urgent_needs.is_empty() {
            return Boundary::Kept;
        }
        let room = free();
        if !s.urgent_fitting(room) {
            return Boundary::NoRoom;
        }
        s.held = false;
        s.paused += 1;
        s.lent = Some(room);
        self.lock.changed.notify_all();
        // Back as soon as no urgent work that fits waits or runs; normal waiters stay behind
        // (`paused`), and urgent work that does not fit waits for this holder's end.
        while s.held || s.urgent_fitting(room) {
            self.lock.changed.wait(&mut s);
        }
        s.lent = None;
        s.paused -= 1;
        s.held = true;
        self.yielded += 1;
        Boundary::Yielded
    }
}

impl Drop for DeviceGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.lock.state.lock();
        s.held = false;
        drop(s);
        self.lock.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    const GIB: u64 = 1 << 30;

    fn wait_for_urgent(lock: &DeviceLock, n: usize) {
        while lock.state.lock().urgent_needs.len() < n {
            std::thread::yield_now();
        }
    }

    /// A normal holder in a long region with phase boundaries; urgent work arriving mid-way
    /// runs at the next boundary, before the normal holder finishes and before a normal
    /// waiter that came earlier.
    #[test]
    fn urgent_work_runs_at_the_next_phase_boundary() {
        let lock = Arc::new(DeviceLock::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut g = lock.lock();
        let normal = {
            let (lock, order) = (lock.clone(), order.clone());
            std::thread::spawn(move || {
                let _g = lock.lock();
                order.lock().push("normal waiter");
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        let urgent = {
            let (lock, order) = (lock.clone(), order.clone());
            std::thread::spawn(move || {
                let _g = lock.lock_urgent(GIB);
                order.lock().push("urgent");
            })
        };
        wait_for_urgent(&lock, 1);
        // Phase 1 done: the boundary hands the device to the urgent caller and takes it back.
        assert_eq!(g.yield_to_urgent(|| 10 * GIB), Boundary::Yielded);
        order.lock().push("holder resumes");
        assert_eq!(g.yield_to_urgent(|| panic!("free memory is asked only when urgent work waits")), Boundary::Kept);
        drop(g);
        urgent.join().unwrap();
        normal.join().unwrap();
        assert_eq!(*order.lock(), ["urgent", "holder resumes", "normal waiter"]);
    }

    #[test]
    fn an_urgent_holder_never_yields() {
        let lock = Arc::new(DeviceLock::default());
        let mut g = lock.lock_urgent(GIB);
        let l2 = lock.clone();
        let other = std::thread::spawn(move || drop(l2.lock_urgent(GIB)));
        wait_for_urgent(&lock, 1);
        assert_eq!(g.yield_to_urgent(|| u64::MAX), Boundary::Kept);
        drop(g);
        other.join().unwrap();
    }

    /// Urgent work whose buffers do not fit beside the holder's is not given the device at a
    /// boundary (it would fail its allocations there): it runs when the holder is done, still
    /// before any normal waiter. Urgent work that fits runs at the boundary meanwhile, and the
    /// big one does not slip in while the holder is paused.
    #[test]
    fn urgent_work_that_does_not_fit_waits_for_the_holder_to_finish() {
        let lock = Arc::new(DeviceLock::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut g = lock.lock();
        let spawn = |need: Option<u64>, name: &'static str| {
            let (lock, order) = (lock.clone(), order.clone());
            std::thread::spawn(move || {
                let _g = match need {
                    Some(need) => lock.lock_urgent(need),
                    None => lock.lock(),
                };
                order.lock().push(name);
                std::thread::sleep(Duration::from_millis(20));
            })
        };
        let normal = spawn(None, "normal waiter");
        std::thread::sleep(Duration::from_millis(50));
        let big = spawn(Some(17 * GIB), "big urgent");
        wait_for_urgent(&lock, 1);
        assert_eq!(g.yield_to_urgent(|| 16 * GIB), Boundary::NoRoom, "17 GiB does not fit in 16");
        order.lock().push("holder goes on");
        let small = spawn(Some(GIB), "small urgent");
        wait_for_urgent(&lock, 2);
        assert_eq!(g.yield_to_urgent(|| 16 * GIB), Boundary::Yielded, "1 GiB fits in 16");
        order.lock().push("holder resumes");
        assert_eq!(g.yield_to_urgent(|| 16 * GIB), Boundary::NoRoom);
        order.lock().push("holder done");
        drop(g);
        for t in [small, big, normal] {
            t.join().unwrap();
        }
        assert_eq!(*order.lock(), ["holder goes on", "small urgent", "holder resumes", "holder done", "big urgent", "normal waiter"]);
        assert_eq!(state_of(&lock), (false, 0, 0, None));
    }

    /// (held, urgent callers waiting, paused holders, lent room).
    fn state_of(lock: &DeviceLock) -> (bool, usize, usize, Option<u64>) {
        let s = lock.state.lock();
        (s.held, s.urgent_needs.len(), s.paused, s.lent)
    }
}
