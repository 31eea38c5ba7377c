//! The host-memory budget for partition working sets, in two parts:
//!
//! * *waiting*: what a partition holds from the start of its synthesis until its proof is
//!   done. On the PCE path, the compact witness (~90 MB for a 32 GiB PoRep partition, whose
//!   aux values are 98.7 % zeros and ones at 2 bits each); on the plain path, the whole
//!   proving assignment.
//! * *proving*: what a prover worker adds while it works on a partition: the expanded witness,
//!   and on the host a/b/c path also a, b, c and the backend's dense scalar copies.
//!
//! Synthesis waits until its partition's waiting bytes fit beside a headroom of one proving
//! set per prover worker (for the largest circuit admitted so far). So provers never wait
//! for memory: if they could, waiting partitions could fill the budget while every prover
//! waited for room to expand one, and nothing would ever free it. Estimates start from a
//! table of measured constraint counts, then follow what synthesis produced.

use std::collections::HashMap;
use std::sync::Arc;

use cuzk_filecoin::{CircuitId, ProofKind, SectorSize};
use parking_lot::{Condvar, Mutex};

/// Bytes a prover adds for one partition of `constraints` constraints (aux ≈ constraints in
/// these circuits):
/// * host a/b/c (`host_abc`): a, b, c padded to the FFT domain (3 × 32 bytes each), the
///   witness and the backend's dense A/B scalar copies (≈ 2 × 32 bytes per constraint);
/// * GPU-resident PCE path (`host_abc` false): the expanded witness (32 bytes per variable)
///   and, when B_G2 runs on the CPU, its scalars (≤ 8 bytes per constraint at PoRep's 25 %
///   B density). Measured on the 32 GiB PoRep (H200 host, plain witnesses waiting): 4.0 GiB
///   of RSS per partition against 3.9 GiB of witness.
pub fn working_set_bytes(constraints: usize, host_abc: bool) -> u64 {
    let domain = constraints.max(1).next_power_of_two() as u64;
    if host_abc {
        96 * domain + 64 * constraints as u64
    } else {
        40 * constraints as u64
    }
}

/// A compact witness before any was measured: every value stored in full (32 bytes and its
/// 2-bit tag), the most it can be.
fn compact_upper_bound(constraints: usize) -> u64 {
    33 * constraints as u64
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

/// One partition's memory, by stage (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    pub waiting: u64,
    pub proving: u64,
}

#[derive(Clone, Copy)]
struct Observed {
    constraints: usize,
    /// What a partition held while waiting (the compact witness), when measured.
    waiting: Option<u64>,
}

#[derive(Default)]
struct State {
    /// Held by waiting reservations (synthesis until proof end).
    waiting: u64,
    /// Held by provers.
    proving: u64,
    /// The largest proving set of any circuit admitted so far (sizes the headroom).
    max_proving: u64,
}

pub struct MemoryBudget {
    limit: u64,
    /// Whether the prover stage builds a, b, c in host memory (see `working_set_bytes`).
    host_abc: bool,
    /// Whether partitions wait as compact witnesses (PCE on) or as full assignments.
    compact: bool,
    prover_workers: u64,
    state: Mutex<State>,
    freed: Condvar,
    observed: Mutex<HashMap<CircuitId, Observed>>,
}

/// Memory held by one partition at one stage; released on drop.
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
    proving: bool,
}

impl Reservation {
    /// Set the held amount to what was measured (after synthesis). Growing never waits: the
    /// work is already done and the memory already in use.
    pub fn resize(&mut self, bytes: u64) {
        let mut s = self.budget.state.lock();
        let slot = if self.proving { &mut s.proving } else { &mut s.waiting };
        *slot = *slot - self.bytes + bytes;
        drop(s);
        if bytes < self.bytes {
            self.budget.freed.notify_all();
        }
        self.bytes = bytes;
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut s = self.budget.state.lock();
        if self.proving {
            s.proving -= self.bytes;
        } else {
            s.waiting -= self.bytes;
        }
        drop(s);
        self.budget.freed.notify_all();
    }
}

impl MemoryBudget {
    pub fn new(limit: u64, host_abc: bool, compact: bool, prover_workers: usize) -> Arc<Self> {
        Arc::new(MemoryBudget {
            limit,
            host_abc,
            compact,
            prover_workers: prover_workers.max(1) as u64,
            state: Mutex::default(),
            freed: Condvar::new(),
            observed: Mutex::default(),
        })
    }

    /// 70 % of physical memory, or 8 GiB when it cannot be read.
    pub fn default_limit() -> u64 {
        physical_memory().map_or(8 << 30, |m| m / 10 * 7)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes reserved now, both stages.
    pub fn used(&self) -> u64 {
        let s = self.state.lock();
        s.waiting + s.proving
    }

    /// The per-partition estimate for `circuit`.
    pub fn estimate(&self, circuit: CircuitId) -> Estimate {
        let seen = self.observed.lock().get(&circuit).copied();
        let constraints = seen.map_or_else(|| table_constraints(circuit), |o| o.constraints);
        if self.compact {
            let waiting = seen.and_then(|o| o.waiting).unwrap_or_else(|| compact_upper_bound(constraints));
            Estimate { waiting, proving: working_set_bytes(constraints, self.host_abc) }
        } else {
            // The full assignment waits; the prover adds little beyond it.
            Estimate { waiting: working_set_bytes(constraints, true), proving: 0 }
        }
    }

    /// Record what synthesis produced, so later estimates are exact: the constraint count
    /// and the bytes the partition holds while it waits.
    pub fn observe(&self, circuit: CircuitId, constraints: usize, waiting_bytes: u64) {
        self.observed.lock().insert(circuit, Observed { constraints, waiting: Some(waiting_bytes) });
    }

    /// Whether a partition of `circuit` can ever be admitted.
    pub fn fits(&self, circuit: CircuitId) -> bool {
        let e = self.estimate(circuit);
        e.waiting + self.prover_workers * e.proving <= self.limit
    }

    /// Admit a partition to synthesis: block until its waiting bytes fit beside the provers'
    /// headroom (or `give_up()` turns true, checked whenever memory is freed and every
    /// 200 ms), then hold them.
    pub fn reserve_waiting(self: &Arc<Self>, e: Estimate, give_up: impl Fn() -> bool) -> Option<Reservation> {
        let mut s = self.state.lock();
        s.max_proving = s.max_proving.max(e.proving);
        loop {
            let headroom = self.prover_workers * s.max_proving;
            // A partition that cannot fit even alone (fits() refuses those at submission, but
            // a bigger circuit admitted since may have raised the headroom) still runs when
            // nothing else waits, rather than never.
            if s.waiting + e.waiting + headroom <= self.limit || s.waiting == 0 {
                s.waiting += e.waiting;
                return Some(Reservation { budget: self.clone(), bytes: e.waiting, proving: false });
            }
            if give_up() {
                return None;
            }
            self.freed.wait_for(&mut s, std::time::Duration::from_millis(200));
        }
    }

    /// A prover's share for one partition. Never waits (see the module comment); the
    /// headroom kept by [`MemoryBudget::reserve_waiting`] is what makes room for it.
    pub fn reserve_proving(self: &Arc<Self>, bytes: u64) -> Reservation {
        self.state.lock().proving += bytes;
        Reservation { budget: self.clone(), bytes, proving: true }
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

    fn est(waiting: u64, proving: u64) -> Estimate {
        Estimate { waiting, proving }
    }

    #[test]
    fn waiting_reservations_leave_the_provers_headroom_and_release_on_drop() {
        // 100 bytes, two provers of 20 each: 60 bytes for waiting partitions.
        let b = MemoryBudget::new(100, false, true, 2);
        let r1 = b.reserve_waiting(est(50, 20), || false).unwrap();
        assert_eq!(b.used(), 50);
        // 50 + 20 > 60: it waits; the give-up hook lets the caller stop waiting.
        assert!(b.reserve_waiting(est(20, 20), || true).is_none());
        // Provers never wait, even with the waiting share full.
        let p1 = b.reserve_proving(20);
        let p2 = b.reserve_proving(20);
        assert_eq!(b.used(), 90);
        let b2 = b.clone();
        let waiter = std::thread::spawn(move || b2.reserve_waiting(est(20, 20), || false).map(|r| r.bytes()));
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop((p1, p2));
        assert!(!waiter.is_finished(), "freeing provers' memory does not make room for waiting partitions");
        drop(r1);
        assert_eq!(waiter.join().unwrap(), Some(20));
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn a_measured_size_replaces_the_estimate_in_the_reservation() {
        let b = MemoryBudget::new(100, false, true, 1);
        let mut r = b.reserve_waiting(est(60, 10), || false).unwrap();
        r.resize(5);
        assert_eq!(b.used(), 5);
        let _other = b.reserve_waiting(est(60, 10), || false).expect("room after the shrink");
        drop(r);
        assert_eq!(b.used(), 60);
    }

    #[test]
    fn headroom_follows_the_largest_circuit_admitted() {
        let b = MemoryBudget::new(100, false, true, 2);
        let _big = b.reserve_waiting(est(10, 40), || false).unwrap();
        // 10 + 10 + 2 × 40 = 100 fits; one more small partition would eat a big one's room.
        let _small = b.reserve_waiting(est(10, 1), || false).unwrap();
        assert!(b.reserve_waiting(est(1, 1), || true).is_none());
    }

    #[test]
    fn estimates_learn_from_synthesis() {
        let c = CircuitId::parse("porep-32g").unwrap();
        // Plain synthesis: the whole assignment waits.
        let plain = MemoryBudget::new(1 << 40, true, false, 1);
        assert!(plain.estimate(c).waiting > 16 << 30, "32 GiB PoRep partitions need >16 GiB");
        // PCE with a, b, c made on the device: a prover expands the witness (3.9 GiB at
        // 32 GiB) and at most B_G2's host scalars stay on the host.
        let device = MemoryBudget::new(1 << 40, false, true, 1);
        let e = device.estimate(c);
        assert!(e.proving < 5 << 30 && e.proving > 4 << 30, "{e:?}");
        // Until a compact witness was measured, it is assumed to be stored in full.
        assert!(e.waiting >= 32 * 130_000_000, "{e:?}");
        device.observe(c, 130_278_869, 92 << 20);
        assert_eq!(device.estimate(c).waiting, 92 << 20);
        plain.observe(c, 1000, 0);
        assert_eq!(plain.estimate(c).waiting, working_set_bytes(1000, true));
        assert!(!MemoryBudget::new(1 << 30, true, true, 1).fits(c));
    }
}
