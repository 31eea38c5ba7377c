//! The host-memory budget for partition working sets. A partition reserves its estimate
//! before synthesis starts and gives it back when its proof is done, so work waits for
//! memory instead of running the machine out of it. The estimate comes from the circuit's
//! constraint count: first from a table of measured sizes, then from what synthesis saw.

use std::collections::HashMap;
use std::sync::Arc;

use cuzk_filecoin::{CircuitId, ProofKind, SectorSize};
use parking_lot::{Condvar, Mutex};

/// Bytes one partition of `constraints` constraints needs in host memory while synthesized
/// and proved (aux ≈ constraints in these circuits):
/// * host a/b/c (`host_abc`): a, b, c padded to the FFT domain (3 × 32 bytes each), the
///   witness and the backend's dense A/B scalar copies (≈ 2 × 32 bytes per constraint);
/// * GPU-resident PCE path (`host_abc` false): the witness (32 bytes per variable) and, when
///   B_G2 runs on the CPU, its scalars (≤ 8 bytes per constraint at PoRep's 25 % B density).
///   Measured on the 32 GiB PoRep (H200 host, 7 partitions in flight): 4.0 GiB of RSS per
///   partition against 3.9 GiB of witness; the 64-byte estimate used before kept half the
///   memory — and so half the synthesis concurrency — idle.
pub fn working_set_bytes(constraints: usize, host_abc: bool) -> u64 {
    let domain = constraints.max(1).next_power_of_two() as u64;
    if host_abc {
        96 * domain + 64 * constraints as u64
    } else {
        40 * constraints as u64
    }
}

/// Constraints per partition, measured on the real circuits (see shared field notes);
/// sizes nobody measured are over-estimated from their neighbours.
fn table_constraints(c: CircuitId) -> usize {
    use ProofKind::*;
    use SectorSize::*;
    match (c.kind, c.size) {
        (PoRepSealCommit, S2KiB) => 2_690_000,
        (PoRepSealCommit, S8MiB) => 3_840_000,
        (PoRepSealCommit, S512MiB) => 4_420_000,
        (PoRepSealCommit, S32GiB) => 130_280_000,
        (PoRepSealCommit, S64GiB) => 131_190_000,
        (WinningPost, S2KiB) => 90_800,
        (WinningPost, S8MiB) => 230_700,
        (WinningPost, S512MiB) => 300_600,
        (WinningPost, _) => 400_000,
        (WindowPostPartition, S2KiB) => 21_900,
        (WindowPostPartition, S8MiB) => 64_300,
        (WindowPostPartition, S512MiB) => 1_000_000,
        (WindowPostPartition, S32GiB) => 125_300_000,
        (WindowPostPartition, S64GiB) => 129_900_000,
        (SnapDealsUpdate, S2KiB) => 1_710_000,
        (SnapDealsUpdate, S8MiB) => 10_000_000,
        (SnapDealsUpdate, S512MiB) => 40_000_000,
        (SnapDealsUpdate, S32GiB) => 81_000_000,
        (SnapDealsUpdate, S64GiB) => 85_000_000,
    }
}

#[derive(Default)]
struct State {
    used: u64,
}

pub struct MemoryBudget {
    limit: u64,
    /// Whether partitions hold a, b, c in host memory (see `working_set_bytes`).
    host_abc: bool,
    state: Mutex<State>,
    freed: Condvar,
    observed: Mutex<HashMap<CircuitId, usize>>,
}

/// Memory held by one partition; released on drop.
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut s = self.budget.state.lock();
        s.used -= self.bytes;
        drop(s);
        self.budget.freed.notify_all();
    }
}

impl MemoryBudget {
    pub fn new(limit: u64, host_abc: bool) -> Arc<Self> {
        Arc::new(MemoryBudget { limit, host_abc, state: Mutex::default(), freed: Condvar::new(), observed: Mutex::default() })
    }

    /// 70 % of physical memory, or 8 GiB when it cannot be read.
    pub fn default_limit() -> u64 {
        physical_memory().map_or(8 << 30, |m| m / 10 * 7)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn used(&self) -> u64 {
        self.state.lock().used
    }

    /// The per-partition estimate for `circuit`.
    pub fn estimate(&self, circuit: CircuitId) -> u64 {
        let constraints = self.observed.lock().get(&circuit).copied().unwrap_or_else(|| table_constraints(circuit));
        working_set_bytes(constraints, self.host_abc)
    }

    /// Record what synthesis actually produced, so later estimates are exact.
    pub fn observe(&self, circuit: CircuitId, constraints: usize) {
        self.observed.lock().insert(circuit, constraints);
    }

    /// Whether a partition of `circuit` can ever fit.
    pub fn fits(&self, circuit: CircuitId) -> bool {
        self.estimate(circuit) <= self.limit
    }

    /// Block until `bytes` are free (or `give_up()` turns true, checked whenever memory is
    /// freed and every 200 ms), then hold them.
    pub fn reserve(self: &Arc<Self>, bytes: u64, give_up: impl Fn() -> bool) -> Option<Reservation> {
        let bytes = bytes.min(self.limit);
        let mut s = self.state.lock();
        while s.used + bytes > self.limit {
            if give_up() {
                return None;
            }
            self.freed.wait_for(&mut s, std::time::Duration::from_millis(200));
        }
        s.used += bytes;
        Some(Reservation { budget: self.clone(), bytes })
    }
}

fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_wait_for_memory_and_release_on_drop() {
        let b = MemoryBudget::new(100, true);
        let r1 = b.reserve(60, || false).unwrap();
        assert_eq!(b.used(), 60);
        // Does not fit now; the give-up hook lets the caller stop waiting.
        assert!(b.reserve(50, || true).is_none());
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || b2.reserve(50, || false).map(|r| r.bytes));
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(r1);
        assert_eq!(waiter.join().unwrap(), Some(50));
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn estimates_learn_from_synthesis() {
        let b = MemoryBudget::new(1 << 40, true);
        let c = CircuitId::parse("porep-32g").unwrap();
        assert!(b.estimate(c) > 16 << 30, "32 GiB PoRep partitions need >16 GiB");
        // a, b, c made on the device: only the witness (3.9 GiB at 32 GiB, 4.0 GiB of RSS
        // measured per partition) and at most B_G2's host scalars stay on the host.
        let device = MemoryBudget::new(1 << 40, false).estimate(c);
        assert!(device < 5 << 30 && device > 4 << 30, "{device}");
        b.observe(c, 1000);
        assert_eq!(b.estimate(c), working_set_bytes(1000, true));
        assert!(!MemoryBudget::new(1 << 30, true).fits(c));
    }
}
