//! Fault injection for the GPU suite: make the next partition's device region panic once, so
//! a test can show what the prover leaves behind when it does (the CPU B_G2 thread joined
//! before the parameters can go). Always compiled, inert unless a test arms it: the device
//! region checks one relaxed atomic. Nothing in the configuration or on the wire reaches it.

use std::sync::atomic::{AtomicBool, Ordering};

static PANIC_IN_DEVICE_REGION: AtomicBool = AtomicBool::new(false);

/// The next device region to start panics (then the fault is gone). Tests only.
pub fn panic_in_next_device_region() {
    PANIC_IN_DEVICE_REGION.store(true, Ordering::SeqCst);
}

/// Called inside every device region (by the CUDA prover; public so that the crate built
/// without CUDA, whose tests run in CI, has a caller too).
pub fn device_region() {
    if PANIC_IN_DEVICE_REGION.load(Ordering::Relaxed) && PANIC_IN_DEVICE_REGION.swap(false, Ordering::SeqCst) {
        panic!("injected fault: panic in the device region");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_armed_fault_fires_once() {
        device_region();
        panic_in_next_device_region();
        assert!(std::panic::catch_unwind(device_region).is_err());
        device_region();
    }
}
