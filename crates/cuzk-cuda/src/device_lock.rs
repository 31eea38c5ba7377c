//! The per-device lock of the device-exclusive region, with a lane for deadline work.
//!
//! One partition owns a device's streams at a time. A PoRep partition holds the device for
//! ~3 s at 32 GiB, and a WinningPoSt that arrives meanwhile would wait all of it. So waiters
//! come in two classes: *urgent* ones (deadline proofs: WinningPoSt, WindowPoSt) are granted
//! the device before any normal waiter, and a normal holder checks at each phase boundary
//! (after the NTT and after every MSM, when its kernels have finished and the device is idle)
//! whether urgent work waits; if so it hands the device over, and takes it back once no urgent
//! work waits or runs. Its device buffers stay allocated meanwhile; the urgent partition
//! allocates beside them (a failed allocation fails only that attempt, which is retried).

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct State {
    held: bool,
    /// Urgent callers waiting for the device.
    urgent_waiting: usize,
    /// Normal holders that handed the device to urgent work; they get it back before any
    /// normal waiter (they were first, and hold device buffers).
    paused: usize,
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

impl DeviceLock {
    /// Wait for the device. Urgent callers go before every normal waiter.
    pub fn lock(&self, urgent: bool) -> DeviceGuard<'_> {
        let mut s = self.state.lock();
        if urgent {
            s.urgent_waiting += 1;
            while s.held {
                self.changed.wait(&mut s);
            }
            s.urgent_waiting -= 1;
        } else {
            while s.held || s.urgent_waiting > 0 || s.paused > 0 {
                self.changed.wait(&mut s);
            }
        }
        s.held = true;
        DeviceGuard { lock: self, urgent, yielded: 0 }
    }

    /// Whether urgent work waits for the device now.
    pub fn urgent_waiting(&self) -> bool {
        self.state.lock().urgent_waiting > 0
    }
}

impl DeviceGuard<'_> {
    /// A phase boundary of a normal holder: if urgent work waits, let it have the device and
    /// take it back afterwards. Call only when this holder's kernels have all finished.
    /// Returns whether it yielded.
    pub fn yield_to_urgent(&mut self) -> bool {
        if self.urgent {
            return false;
        }
        let mut s = self.lock.state.lock();
        if s.urgent_waiting == 0 {
            return false;
        }
        s.held = false;
        s.paused += 1;
        self.lock.changed.notify_all();
        // Back as soon as no urgent work waits or runs; normal waiters stay behind (`paused`).
        while s.held || s.urgent_waiting > 0 {
            self.lock.changed.wait(&mut s);
        }
        s.paused -= 1;
        s.held = true;
        self.yielded += 1;
        true
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

    /// A normal holder in a long region with phase boundaries; urgent work arriving mid-way
    /// runs at the next boundary, before the normal holder finishes and before a normal
    /// waiter that came earlier.
    #[test]
    fn urgent_work_runs_at_the_next_phase_boundary() {
        let lock = Arc::new(DeviceLock::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut g = lock.lock(false);
        let spawn = |urgent: bool, name: &'static str| {
            let (lock, order) = (lock.clone(), order.clone());
            std::thread::spawn(move || {
                let _g = lock.lock(urgent);
                order.lock().push(name);
            })
        };
        let normal = spawn(false, "normal waiter");
        std::thread::sleep(Duration::from_millis(50));
        let urgent = spawn(true, "urgent");
        while !lock.urgent_waiting() {
            std::thread::yield_now();
        }
        // Phase 1 done: the boundary hands the device to the urgent caller and takes it back.
        assert!(g.yield_to_urgent());
        order.lock().push("holder resumes");
        assert!(!g.yield_to_urgent(), "nothing urgent waits any more");
        drop(g);
        urgent.join().unwrap();
        normal.join().unwrap();
        assert_eq!(*order.lock(), ["urgent", "holder resumes", "normal waiter"]);
    }

    #[test]
    fn an_urgent_holder_never_yields() {
        let lock = Arc::new(DeviceLock::default());
        let mut g = lock.lock(true);
        let l2 = lock.clone();
        let other = std::thread::spawn(move || drop(l2.lock(true)));
        while !lock.urgent_waiting() {
            std::thread::yield_now();
        }
        assert!(!g.yield_to_urgent());
        drop(g);
        other.join().unwrap();
    }
}
