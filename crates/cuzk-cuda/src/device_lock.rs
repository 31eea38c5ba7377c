//! The per-device lock of the device-exclusive region, with lanes for deadline work.
//!
//! One partition owns a device's streams at a time. A PoRep partition holds the device for
//! ~2 s at 32 GiB, and a WinningPoSt that arrives meanwhile would wait all of it; a 32 GiB
//! WindowPoSt partition holds it ~7 s. So callers come in classes ([`Urgency`]): Normal
//! (PoRep, SnapDeals), High (WindowPoSt) and Critical (WinningPoSt). A waiting caller is
//! granted the device before any less urgent waiter, and a holder checks at each phase
//! boundary (after the mat-vec, the NTT and every MSM, and inside the long MSMs: when its
//! kernels have finished and the device is idle; see `imp/phases.rs`) whether more urgent work
//! waits; if so it hands the device over, and takes it back once no more urgent work waits or
//! runs. Handing over nests: a PoRep partition paused for a WindowPoSt, and that WindowPoSt
//! paused for a WinningPoSt, resume in the reverse order.
//!
//! The holder's device buffers stay allocated while it is paused, so the more urgent partition
//! works in what is left. Each urgent caller states the device bytes it needs; a holder hands
//! over only when some more urgent waiter's need fits the memory free at that boundary, and
//! while it is paused only waiters above it that fit there may run. The others wait for the
//! holder to finish — a few seconds — instead of failing on an allocation beside its buffers.
//! (A 32 GiB WindowPoSt partition asks for ~23 GiB; beside a paused 32 GiB PoRep partition that
//! fits only when the device is not already full of resident parameters.)

use cuzk_backend::Urgency;
use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct State {
    held: bool,
    /// Urgent callers waiting: class and the device bytes each needs (one entry per caller).
    waiting: Vec<(Urgency, u64)>,
    /// Holders that handed the device to more urgent work, the innermost last: class, and the
    /// device memory that was free when it handed over (the most any caller may need to run
    /// before it resumes). They get the device back before any waiter of their class or
    /// below (they were first, and hold device buffers).
    paused: Vec<(Urgency, u64)>,
}

impl State {
    /// Whether a caller of class `u` that needs `need` bytes may run beside the paused
    /// holders: above the innermost one's class, in its room.
    fn fits_beside_paused(&self, u: Urgency, need: u64) -> bool {
        self.paused.last().is_none_or(|&(pu, room)| u > pu && need <= room)
    }

    /// Whether an urgent caller may take the device now: it is free, the caller fits beside
    /// the paused holders, and no more urgent waiter that fits goes first.
    fn may_take(&self, u: Urgency, need: u64) -> bool {
        !self.held
            && self.fits_beside_paused(u, need)
            && !self.waiting.iter().any(|&(wu, wn)| wu > u && self.fits_beside_paused(wu, wn))
    }

    /// Whether a caller more urgent than `u` waits whose need fits in `room` bytes.
    fn more_urgent_fitting(&self, u: Urgency, room: u64) -> bool {
        self.waiting.iter().any(|&(wu, need)| wu > u && need <= room)
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
    urgency: Urgency,
    /// Times this holder handed the device to more urgent work.
    pub yielded: u32,
}

/// What a phase boundary did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Boundary {
    /// No more urgent work waits.
    Kept,
    /// More urgent work ran; this holder has the device back.
    Yielded,
    /// More urgent work waits, but none of it fits beside this holder's buffers: it runs when
    /// this holder is done.
    NoRoom,
}

impl DeviceLock {
    /// Wait for the device as normal work: after every urgent caller, and after any holder
    /// paused for urgent work.
    pub fn lock(&self) -> DeviceGuard<'_> {
        let mut s = self.state.lock();
        while s.held || !s.waiting.is_empty() || !s.paused.is_empty() {
            self.changed.wait(&mut s);
        }
        s.held = true;
        DeviceGuard { lock: self, urgency: Urgency::Normal, yielded: 0 }
    }

    /// Wait for the device as work of class `urgency` that needs `need` bytes of device memory:
    /// before every less urgent waiter, and at a less urgent holder's phase boundary when
    /// `need` fits there. `Urgency::Normal` is [`Self::lock`].
    pub fn lock_urgent(&self, urgency: Urgency, need: u64) -> DeviceGuard<'_> {
        if urgency == Urgency::Normal {
            return self.lock();
        }
        let mut s = self.state.lock();
        s.waiting.push((urgency, need));
        while !s.may_take(urgency, need) {
            self.changed.wait(&mut s);
        }
        let i = s.waiting.iter().position(|&w| w == (urgency, need)).expect("this caller is listed");
        s.waiting.swap_remove(i);
        s.held = true;
        // Others may have been held back by this caller's entry (normal waiters, and the
        // paused holder below, whose wait rechecks).
        self.changed.notify_all();
        DeviceGuard { lock: self, urgency, yielded: 0 }
    }
}

impl DeviceGuard<'_> {
    /// A phase boundary: if more urgent work waits that fits in the device memory free now
    /// (`free`, asked only then), let it have the device and take it back afterwards. Call
    /// only when this holder's kernels have all finished.
    pub fn yield_to_urgent(&mut self, free: impl FnOnce() -> u64) -> Boundary {
        let u = self.urgency;
        let mut s = self.lock.state.lock();
        if !s.waiting.iter().any(|&(wu, _)| wu > u) {
            return Boundary::Kept;
        }
        let room = free();
        if !s.more_urgent_fitting(u, room) {
            return Boundary::NoRoom;
        }
        s.held = false;
        let depth = s.paused.len();
        s.paused.push((u, room));
        self.lock.changed.notify_all();
        // Back as soon as no more urgent work that fits waits or runs, and every holder that
        // paused after this one has resumed; less urgent waiters stay behind (`paused`), and
        // more urgent work that does not fit waits for this holder's end.
        while s.held || s.paused.len() != depth + 1 || s.more_urgent_fitting(u, room) {
            self.lock.changed.wait(&mut s);
        }
        s.paused.pop();
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

    const HIGH: Urgency = Urgency::High;
    const CRITICAL: Urgency = Urgency::Critical;

    fn wait_for_urgent(lock: &DeviceLock, n: usize) {
        while lock.state.lock().waiting.len() < n {
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
                let _g = lock.lock_urgent(HIGH, GIB);
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

    /// A holder never hands the device to work of its own class: a WinningPoSt does not yield
    /// to a WinningPoSt, nor a WindowPoSt to a WindowPoSt.
    #[test]
    fn a_holder_never_yields_to_its_own_class() {
        for u in [HIGH, CRITICAL] {
            let lock = Arc::new(DeviceLock::default());
            let mut g = lock.lock_urgent(u, GIB);
            let l2 = lock.clone();
            let other = std::thread::spawn(move || drop(l2.lock_urgent(u, GIB)));
            wait_for_urgent(&lock, 1);
            assert_eq!(g.yield_to_urgent(|| u64::MAX), Boundary::Kept, "{u:?}");
            drop(g);
            other.join().unwrap();
        }
    }

    /// A WindowPoSt holder hands the device to a WinningPoSt at its next boundary. Nested:
    /// a PoRep paused for that WindowPoSt stays paused until the WindowPoSt has resumed and
    /// finished, and a second WindowPoSt that arrived meanwhile (it may not run beside the
    /// paused first one) runs before the PoRep resumes.
    #[test]
    fn a_winning_post_passes_a_window_post_that_passed_a_porep() {
        let lock = Arc::new(DeviceLock::default());
        let order = Arc::new(Mutex::new(Vec::<&str>::new()));
        let waits = |lock: &DeviceLock, u: Urgency| {
            while !lock.state.lock().waiting.iter().any(|&(wu, _)| wu == u) {
                std::thread::yield_now();
            }
        };
        let holding = Arc::new(std::sync::Barrier::new(2));
        let porep = {
            let (lock, order, holding) = (lock.clone(), order.clone(), holding.clone());
            std::thread::spawn(move || {
                let mut g = lock.lock();
                holding.wait();
                waits(&lock, HIGH);
                assert_eq!(g.yield_to_urgent(|| 16 * GIB), Boundary::Yielded);
                order.lock().push("porep resumes");
            })
        };
        holding.wait();
        let window1 = {
            let (lock, order) = (lock.clone(), order.clone());
            std::thread::spawn(move || {
                let mut g = lock.lock_urgent(HIGH, 8 * GIB);
                order.lock().push("window 1");
                waits(&lock, CRITICAL);
                assert_eq!(g.yield_to_urgent(|| 4 * GIB), Boundary::Yielded, "a WindowPoSt yields to a WinningPoSt");
                order.lock().push("window 1 resumes");
                std::thread::sleep(Duration::from_millis(20));
                order.lock().push("window 1 done");
            })
        };
        while order.lock().is_empty() {
            std::thread::yield_now();
        }
        let plain = |u: Urgency, need: u64, name: &'static str| {
            let (lock, order) = (lock.clone(), order.clone());
            std::thread::spawn(move || {
                let _g = lock.lock_urgent(u, need);
                order.lock().push(name);
                std::thread::sleep(Duration::from_millis(20));
            })
        };
        let window2 = plain(HIGH, 8 * GIB, "window 2");
        waits(&lock, HIGH);
        let winning = plain(CRITICAL, GIB, "winning");
        for t in [winning, window1, window2, porep] {
            t.join().unwrap();
        }
        assert_eq!(
            *order.lock(),
            ["window 1", "winning", "window 1 resumes", "window 1 done", "window 2", "porep resumes"]
        );
        assert_eq!(state_of(&lock), (false, 0, 0));
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
                    Some(need) => lock.lock_urgent(HIGH, need),
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
        assert_eq!(
            *order.lock(),
            ["holder goes on", "small urgent", "holder resumes", "holder done", "big urgent", "normal waiter"]
        );
        assert_eq!(state_of(&lock), (false, 0, 0));
    }

    /// (held, urgent callers waiting, paused holders).
    fn state_of(lock: &DeviceLock) -> (bool, usize, usize) {
        let s = lock.state.lock();
        (s.held, s.waiting.len(), s.paused.len())
    }
}
