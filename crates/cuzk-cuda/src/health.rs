//! Per-device health: a circuit breaker so that a device that keeps failing (a driver fault,
//! a card fallen off the bus) stops being the first choice for every partition. After
//! `TRIP_AFTER` consecutive failed attempts the device is benched for a while (doubling on
//! each new trip, up to a cap) and partitions go to the others; one success resets it.
//! A *sticky* error is different: the CUDA context is corrupt and every later call on that
//! device fails until the process restarts, so the device is taken out of service for good
//! ([`DeviceHealth::mark_lost`]), and with none left the daemon exits non-zero for systemd
//! to restart it. Out-of-memory and bad arguments are not sticky: retry later.
//! Pure logic, no CUDA: compiled and tested on every build.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Consecutive failures that bench a device.
pub const TRIP_AFTER: u32 = 3;
const FIRST_BENCH: Duration = Duration::from_secs(30);
const MAX_BENCH: Duration = Duration::from_secs(600);

/// Whether a glue error code (sppark's: minus the `cudaError_t`) means the device's context
/// is corrupt for the rest of the process: illegal address or instruction, a kernel that
/// faulted or hit the watchdog, an uncorrectable ECC error. These are CUDA's "sticky" errors.
pub fn is_sticky(code: i32) -> bool {
    const STICKY: [i32; 10] = [
        214, // cudaErrorECCUncorrectable
        700, // cudaErrorIllegalAddress
        702, // cudaErrorLaunchTimeout
        710, // cudaErrorAssert (a device-side assert)
        714, // cudaErrorHardwareStackError
        715, // cudaErrorIllegalInstruction
        716, // cudaErrorMisalignedAddress
        717, // cudaErrorInvalidAddressSpace
        718, // cudaErrorInvalidPc
        719, // cudaErrorLaunchFailure
    ];
    code < 0 && STICKY.contains(&-code)
}

#[derive(Debug, Default)]
struct State {
    /// A sticky error was seen: out of service until the process restarts.
    lost: bool,
    consecutive_failures: u32,
    benched_until: Option<Instant>,
    /// How long the next trip benches the device.
    next_bench: Option<Duration>,
}

#[derive(Debug, Default)]
pub struct DeviceHealth {
    state: Mutex<State>,
}

impl DeviceHealth {
    pub fn record_success(&self) {
        let mut s = self.state.lock();
        let lost = s.lost;
        *s = State { lost, ..State::default() };
    }

    /// Out of service for the rest of the process (a sticky error).
    pub fn mark_lost(&self) {
        self.state.lock().lost = true;
    }

    pub fn is_lost(&self) -> bool {
        self.state.lock().lost
    }

    /// Count a failed attempt; returns the bench time if this failure tripped the breaker.
    pub fn record_failure(&self, now: Instant) -> Option<Duration> {
        let mut s = self.state.lock();
        s.consecutive_failures += 1;
        if s.consecutive_failures < TRIP_AFTER {
            return None;
        }
        let bench = s.next_bench.unwrap_or(FIRST_BENCH);
        s.benched_until = Some(now + bench);
        s.next_bench = Some((bench * 2).min(MAX_BENCH));
        s.consecutive_failures = 0;
        Some(bench)
    }

    /// Whether the device should be offered work now.
    pub fn available(&self, now: Instant) -> bool {
        let s = self.state.lock();
        !s.lost && s.benched_until.is_none_or(|until| now >= until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_after_consecutive_failures_backs_off_and_resets_on_success() {
        let h = DeviceHealth::default();
        let t0 = Instant::now();
        assert!(h.available(t0));
        assert_eq!(h.record_failure(t0), None);
        assert_eq!(h.record_failure(t0), None);
        assert_eq!(h.record_failure(t0), Some(FIRST_BENCH));
        assert!(!h.available(t0 + FIRST_BENCH / 2));
        assert!(h.available(t0 + FIRST_BENCH));
        // Still failing after the bench: the next trip benches twice as long.
        let t1 = t0 + FIRST_BENCH;
        h.record_failure(t1);
        h.record_failure(t1);
        assert_eq!(h.record_failure(t1), Some(FIRST_BENCH * 2));
        // A success in between resets everything.
        h.record_success();
        assert!(h.available(t1));
        h.record_failure(t1);
        h.record_success();
        h.record_failure(t1);
        h.record_failure(t1);
        assert_eq!(h.record_failure(t1), Some(FIRST_BENCH), "the back-off restarts after a success");
    }

    #[test]
    fn sticky_errors_are_told_from_the_others_and_a_lost_device_stays_lost() {
        assert!(
            is_sticky(-700) && is_sticky(-719) && is_sticky(-214) && is_sticky(-710),
            "cudaErrorAssert (710) is sticky too"
        );
        // Out of memory (cudaErrorMemoryAllocation = 2), invalid value (1), the glue's own
        // codes and success are not.
        for code in [-2, -1, -100001, -100002, -100003, 0, 700] {
            assert!(!is_sticky(code), "{code}");
        }
        let h = DeviceHealth::default();
        let now = Instant::now();
        h.mark_lost();
        assert!(h.is_lost() && !h.available(now));
        h.record_success();
        assert!(h.is_lost() && !h.available(now + MAX_BENCH * 2), "nothing brings a lost device back");
    }

    #[test]
    fn back_off_is_capped() {
        let h = DeviceHealth::default();
        let now = Instant::now();
        let mut last = Duration::ZERO;
        for _ in 0..20 {
            for _ in 0..TRIP_AFTER {
                if let Some(b) = h.record_failure(now) {
                    last = b;
                }
            }
        }
        assert_eq!(last, MAX_BENCH);
    }
}
