//! The one host-memory budget of the daemon. It counts, in three parts:
//!
//! * *resident*: what stays loaded between jobs: each circuit's Groth16 parameters (the host
//!   copy: 44 GiB for porep-32g) and its PCE matrices (7 GiB). Parameters are reserved before
//!   they are read, and a load that does not fit makes room by evicting idle parameters
//!   (least recently used first) or waits for jobs to release theirs (see `SrsCache`);
//! * *waiting*: what a partition holds from the start of its synthesis until its proof is
//!   done. On the PCE path, the compact witness (~90 MB for a 32 GiB PoRep partition, whose
//!   aux values are 98.7 % zeros and ones at 2 bits each); on the plain path, the whole
//!   proving assignment.
//! * *proving*: what a prover worker adds while it works on a partition: the expanded witness,
//!   and on the host a/b/c path also a, b, c and the backend's dense scalar copies.
//!
//! Synthesis waits until its partition's waiting bytes fit beside what is resident and a
//! headroom of one proving set per prover worker (for the largest circuit admitted so far). So provers never wait
//! for memory: if they could, waiting partitions could fill the budget while every prover
//! waited for room to expand one, and nothing would ever free it. Estimates start from a
//! table of measured constraint counts, then follow what synthesis produced.

use std::collections::HashMap;
use std::sync::Arc;

use cuzk_backend::{HostMemory, WitnessForm};
use cuzk_filecoin::{CircuitId, ProofKind, SectorSize};
use parking_lot::{Condvar, Mutex};

/// Bytes a prover adds for one partition of `constraints` constraints (aux ≈ constraints in
/// these circuits), by the form its witness reaches the backend in:
/// * `Assignment`: a, b, c padded to the FFT domain (3 × 32 bytes each), the witness and the
///   backend's dense A/B scalar copies (≈ 2 × 32 bytes per constraint);
/// * `Expanded`: the expanded witness (32 bytes per variable) and, when B_G2 runs on the
///   CPU, its scalars (≤ 8 bytes per constraint at PoRep's 25 % B density). Measured on the
///   32 GiB PoRep (H200 host, plain witnesses waiting): 4.0 GiB of RSS per partition against
///   3.9 GiB of witness;
/// * `Compact`: only the per-word offsets of the compact tags (4 bytes per 32 values),
///   rounded up to 1 byte per constraint. (A partition whose device attempt fails and is
///   retried on the CPU expands and evaluates on the host beyond this, as before.)
pub fn working_set_bytes(constraints: usize, form: WitnessForm) -> u64 {
    let domain = constraints.max(1).next_power_of_two() as u64;
    match form {
        WitnessForm::Assignment => 96 * domain + 64 * constraints as u64,
        WitnessForm::Expanded => 40 * constraints as u64,
        WitnessForm::Compact => constraints as u64,
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
    /// Parameters and matrices loaded.
    resident: u64,
    /// Held by waiting reservations (synthesis until proof end).
    waiting: u64,
    /// Held by provers.
    proving: u64,
    /// The most ever reserved at once (all three parts), for tests and `/status`.
    peak: u64,
    /// The largest proving set of any circuit admitted so far (sizes the headroom).
    max_proving: u64,
}

pub struct MemoryBudget {
    limit: u64,
    /// What the prover stage adds (see `working_set_bytes`).
    form: WitnessForm,
    /// Whether partitions wait as compact witnesses (PCE on) or as full assignments.
    compact: bool,
    prover_workers: u64,
    state: Mutex<State>,
    freed: Condvar,
    observed: Mutex<HashMap<CircuitId, Observed>>,
}

impl State {
    fn slot(&mut self, part: Part) -> &mut u64 {
        match part {
            Part::Resident => &mut self.resident,
            Part::Waiting => &mut self.waiting,
            Part::Proving => &mut self.proving,
        }
    }

    fn total(&self) -> u64 {
        self.resident + self.waiting + self.proving
    }

    fn add(&mut self, part: Part, bytes: u64) {
        *self.slot(part) += bytes;
        self.peak = self.peak.max(self.total());
    }
}

/// The three parts the budget counts (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Resident,
    Waiting,
    Proving,
}

/// Memory held by one partition in one part, or by one circuit's loaded parameters or
/// matrices; released on drop.
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
    part: Part,
}

impl Reservation {
    /// Set the held amount to what was measured (after synthesis). Growing never waits: the
    /// work is already done and the memory already in use.
    pub fn resize(&mut self, bytes: u64) {
        let mut s = self.budget.state.lock();
        *s.slot(self.part) -= self.bytes;
        s.add(self.part, bytes);
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
        self.budget.release(self.part, self.bytes);
    }
}

/// The budget as a prover backend sees it (cuzk-groth16's `HostMemory`): bytes beyond a
/// prover's share, counted with the provers' and only if they fit now.
impl HostMemory for MemoryBudget {
    fn try_take(&self, bytes: u64) -> bool {
        self.try_add_proving(bytes)
    }

    fn give_back(&self, bytes: u64) {
        self.release(Part::Proving, bytes);
    }
}

impl MemoryBudget {
    pub fn new(limit: u64, form: WitnessForm, compact: bool, prover_workers: usize) -> Arc<Self> {
        Arc::new(MemoryBudget {
            limit,
            form,
            compact,
            prover_workers: prover_workers.max(1) as u64,
            state: Mutex::default(),
            freed: Condvar::new(),
            observed: Mutex::default(),
        })
    }

    /// What this process can really use: the memory available now (`MemAvailable`), or less
    /// where a cgroup limit (systemd's `MemoryMax=`, a container) leaves less, minus a margin
    /// of 5 % (at least 1 GiB) for the allocator, the gRPC buffers and the kernel. 8 GiB when
    /// neither can be read.
    pub fn default_limit() -> u64 {
        let available = match (mem_available(), cgroup_room()) {
            (Some(a), Some(c)) => a.min(c),
            (a, c) => match a.or(c) {
                Some(x) => x,
                None => return 8 << 30,
            },
        };
        available.saturating_sub((available / 20).max(1 << 30))
    }

    /// The provers that can hold a partition at once, each of which the headroom keeps a
    /// proving set for.
    pub fn provers(&self) -> u64 {
        self.prover_workers
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes reserved now, all parts.
    pub fn used(&self) -> u64 {
        self.state.lock().total()
    }

    /// Bytes reserved by loaded parameters and matrices.
    pub fn resident(&self) -> u64 {
        self.state.lock().resident
    }

    /// Bytes reserved by partitions in flight: their working sets, waiting and proving.
    pub fn working(&self) -> u64 {
        let s = self.state.lock();
        s.waiting + s.proving
    }

    /// The most ever reserved at once.
    pub fn peak(&self) -> u64 {
        self.state.lock().peak
    }

    /// What is spoken for: everything resident and waiting, and the provers' part — their
    /// headroom, or what they hold when that is more (a CPU retry's a, b, c beyond a
    /// prover's share, taken through [`HostMemory`], is memory in use as well).
    fn committed(&self, s: &State) -> u64 {
        s.resident + s.waiting + (self.prover_workers * s.max_proving).max(s.proving)
    }

    /// Reserve `bytes` for parameters about to be loaded, if they fit now beside everything
    /// reserved and the provers' headroom. Never waits: the caller decides whether to evict,
    /// wait ([`MemoryBudget::wait_for_release`]) or refuse.
    pub fn try_reserve_resident(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let mut s = self.state.lock();
        if self.committed(&s) + bytes > self.limit {
            return None;
        }
        s.add(Part::Resident, bytes);
        Some(Reservation { budget: self.clone(), bytes, part: Part::Resident })
    }

    /// Count `bytes` that are already in memory (matrices just loaded or extracted), fitting
    /// or not: refusing them now would free nothing. Later reservations see the room they took.
    pub fn hold_resident(self: &Arc<Self>, bytes: u64) -> Reservation {
        self.state.lock().add(Part::Resident, bytes);
        Reservation { budget: self.clone(), bytes, part: Part::Resident }
    }

    /// Block until some reservation is released or `timeout` passes.
    pub fn wait_for_release(&self, timeout: std::time::Duration) {
        let mut s = self.state.lock();
        self.freed.wait_for(&mut s, timeout);
    }

    /// Whether nothing but resident parameters and matrices is reserved (no partition in
    /// flight that could release memory by finishing).
    pub fn only_resident(&self) -> bool {
        let s = self.state.lock();
        s.waiting == 0 && s.proving == 0
    }

    /// The per-partition estimate for `circuit`.
    pub fn estimate(&self, circuit: CircuitId) -> Estimate {
        let seen = self.observed.lock().get(&circuit).copied();
        let constraints = seen.map_or_else(|| table_constraints(circuit), |o| o.constraints);
        if self.compact {
            let waiting = seen.and_then(|o| o.waiting).unwrap_or_else(|| compact_upper_bound(constraints));
            Estimate { waiting, proving: working_set_bytes(constraints, self.form) }
        } else {
            // The full assignment waits; the prover adds little beyond it.
            Estimate { waiting: working_set_bytes(constraints, WitnessForm::Assignment), proving: 0 }
        }
    }

    /// Record what synthesis produced, so later estimates are exact: the constraint count
    /// and the bytes the partition holds while it waits.
    pub fn observe(&self, circuit: CircuitId, constraints: usize, waiting_bytes: u64) {
        self.observed.lock().insert(circuit, Observed { constraints, waiting: Some(waiting_bytes) });
    }

    /// Whether a partition of `circuit` can ever be admitted, with `resident` bytes of its
    /// own parameters and matrices loaded (everything else can be evicted or finishes).
    pub fn fits(&self, circuit: CircuitId, resident: u64) -> bool {
        let e = self.estimate(circuit);
        resident + e.waiting + self.prover_workers * e.proving <= self.limit
    }

    /// Admit a partition to synthesis: block until its waiting bytes fit beside the provers'
    /// headroom (or `give_up()` turns true, checked whenever memory is freed and every
    /// 200 ms), then hold them.
    pub fn reserve_waiting(self: &Arc<Self>, e: Estimate, give_up: impl Fn() -> bool) -> Option<Reservation> {
        let mut s = self.state.lock();
        s.max_proving = s.max_proving.max(e.proving);
        loop {
            // A partition that cannot fit even alone (fits() refuses those at submission, but
            // a bigger circuit admitted since may have raised the headroom) still runs when
            // nothing else waits, rather than never.
            if self.committed(&s) + e.waiting <= self.limit || s.waiting == 0 {
                s.add(Part::Waiting, e.waiting);
                return Some(Reservation { budget: self.clone(), bytes: e.waiting, part: Part::Waiting });
            }
            if give_up() {
                return None;
            }
            self.freed.wait_for(&mut s, std::time::Duration::from_millis(200));
        }
    }

    /// Extra bytes for a prover beyond its share (a GPU backend retrying a partition on the
    /// CPU, which builds a, b, c on the host, through [`HostMemory`]), only if they fit now:
    /// never waits, since a waiting prover could wait on itself.
    fn try_add_proving(&self, bytes: u64) -> bool {
        let mut s = self.state.lock();
        if s.total() + bytes > self.limit {
            return false;
        }
        s.add(Part::Proving, bytes);
        true
    }

    /// Give back `bytes` of `part`; whoever waits for room looks again.
    fn release(&self, part: Part, bytes: u64) {
        let mut s = self.state.lock();
        *s.slot(part) -= bytes;
        drop(s);
        self.freed.notify_all();
    }

    /// A prover's share for one partition. Never waits (see the module comment); the
    /// headroom kept by [`MemoryBudget::reserve_waiting`] is what makes room for it.
    pub fn reserve_proving(self: &Arc<Self>, bytes: u64) -> Reservation {
        self.state.lock().add(Part::Proving, bytes);
        Reservation { budget: self.clone(), bytes, part: Part::Proving }
    }
}

/// `MemAvailable` of /proc/meminfo: free memory plus what the kernel can reclaim (page cache).
fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Room left under this process's cgroup v2 memory limit (`memory.max` − `memory.current`),
/// or None when there is no limit or no cgroup v2.
fn cgroup_room() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut rooms = Vec::new();
    // cgroup v2: the line "0::/path", its hierarchy at /sys/fs/cgroup, or at
    // /sys/fs/cgroup/unified on a host that mounts v1 and v2 side by side.
    if let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) {
        let path = path.trim().trim_start_matches('/');
        for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            rooms.extend(cgroup_room_in(&std::path::Path::new(root).join(path)));
        }
    }
    // cgroup v1: the line "N:<controllers>:/path" whose controllers include memory (hybrid
    // hosts keep the memory controller there; a limit there bounds us all the same).
    if let Some(path) = own.lines().find_map(v1_memory_path) {
        rooms.extend(cgroup_v1_room_in(
            &std::path::Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/')),
        ));
    }
    rooms.into_iter().min()
}

/// The path of a /proc/self/cgroup line of the v1 memory controller.
fn v1_memory_path(line: &str) -> Option<&str> {
    let mut fields = line.splitn(3, ':');
    let (_id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
    controllers.split(',').any(|c| c == "memory").then_some(path.trim())
}

/// A v1 memory cgroup's limit less its usage; None without a limit (v1 writes one near
/// 2^63 then).
fn cgroup_v1_room_in(dir: &std::path::Path) -> Option<u64> {
    let limit: u64 = std::fs::read_to_string(dir.join("memory.limit_in_bytes")).ok()?.trim().parse().ok()?;
    if limit >= 1 << 60 {
        return None;
    }
    let usage: u64 = std::fs::read_to_string(dir.join("memory.usage_in_bytes")).ok()?.trim().parse().ok()?;
    Some(limit.saturating_sub(usage))
}

fn cgroup_room_in(dir: &std::path::Path) -> Option<u64> {
    let max = std::fs::read_to_string(dir.join("memory.max")).ok()?;
    let max: u64 = max.trim().parse().ok()?; // "max" (no limit) does not parse
    let current: u64 = std::fs::read_to_string(dir.join("memory.current")).ok()?.trim().parse().ok()?;
    Some(max.saturating_sub(current))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_backend::HostBytes;

    fn est(waiting: u64, proving: u64) -> Estimate {
        Estimate { waiting, proving }
    }

    /// Bytes beyond a prover's share, taken as a backend takes them.
    fn take_extra(b: &Arc<MemoryBudget>, bytes: u64) -> Option<HostBytes> {
        HostBytes::take(&(b.clone() as Arc<dyn HostMemory>), bytes)
    }

    #[test]
    fn extra_prover_bytes_are_reserved_only_when_they_fit_now() {
        let b = MemoryBudget::new(100, WitnessForm::Compact, true, 1);
        let held = b.try_reserve_resident(50).unwrap();
        let extra = take_extra(&b, 40).expect("90 of 100");
        assert!(take_extra(&b, 20).is_none(), "110 of 100: refused, not waited for");
        drop(extra);
        assert!(take_extra(&b, 50).is_some(), "released bytes are available again");
        drop(held);
        assert_eq!(b.used(), 0);
    }

    /// Issue #36, item 6: a CPU retry's a, b, c beyond the provers' headroom is counted when
    /// the next partition is admitted (it was not: 40 + 50 + 40 of 100 admitted).
    #[test]
    fn a_provers_extra_bytes_keep_further_partitions_waiting() {
        let b = MemoryBudget::new(100, WitnessForm::Compact, true, 1);
        let _w = b.reserve_waiting(est(40, 10), || false).unwrap();
        let extra = take_extra(&b, 50).expect("40 + 50 of 100");
        assert!(b.reserve_waiting(est(40, 10), || true).is_none(), "40 + 50 + 40 > 100: it must wait");
        assert!(b.try_reserve_resident(20).is_none(), "nor do parameters fit past it");
        drop(extra);
        assert!(b.reserve_waiting(est(40, 10), || true).is_some(), "room once the retry is done");
    }

    #[test]
    fn waiting_reservations_leave_the_provers_headroom_and_release_on_drop() {
        // 100 bytes, two provers of 20 each: 60 bytes for waiting partitions.
        let b = MemoryBudget::new(100, WitnessForm::Expanded, true, 2);
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
    fn the_working_part_is_what_partitions_hold_without_the_resident_part() {
        let b = MemoryBudget::new(100, WitnessForm::Expanded, true, 1);
        let _params = b.try_reserve_resident(30).unwrap();
        let _waiting = b.reserve_waiting(est(10, 20), || false).unwrap();
        let _proving = b.reserve_proving(20);
        assert_eq!((b.used(), b.resident(), b.working()), (60, 30, 30));
    }

    #[test]
    fn a_measured_size_replaces_the_estimate_in_the_reservation() {
        let b = MemoryBudget::new(100, WitnessForm::Expanded, true, 1);
        let mut r = b.reserve_waiting(est(60, 10), || false).unwrap();
        r.resize(5);
        assert_eq!(b.used(), 5);
        let _other = b.reserve_waiting(est(60, 10), || false).expect("room after the shrink");
        drop(r);
        assert_eq!(b.used(), 60);
    }

    #[test]
    fn headroom_follows_the_largest_circuit_admitted() {
        let b = MemoryBudget::new(100, WitnessForm::Expanded, true, 2);
        let _big = b.reserve_waiting(est(10, 40), || false).unwrap();
        // 10 + 10 + 2 × 40 = 100 fits; one more small partition would eat a big one's room.
        let _small = b.reserve_waiting(est(10, 1), || false).unwrap();
        assert!(b.reserve_waiting(est(1, 1), || true).is_none());
    }

    #[test]
    fn estimates_learn_from_synthesis() {
        let c = CircuitId::parse("porep-32g").unwrap();
        // Plain synthesis: the whole assignment waits.
        let plain = MemoryBudget::new(1 << 40, WitnessForm::Assignment, false, 1);
        assert!(plain.estimate(c).waiting > 16 << 30, "32 GiB PoRep partitions need >16 GiB");
        // PCE with a, b, c made on the device: a prover expands the witness (3.9 GiB at
        // 32 GiB) and at most B_G2's host scalars stay on the host.
        let device = MemoryBudget::new(1 << 40, WitnessForm::Expanded, true, 1);
        let e = device.estimate(c);
        assert!(e.proving < 5 << 30 && e.proving > 4 << 30, "{e:?}");
        // Until a compact witness was measured, it is assumed to be stored in full.
        assert!(e.waiting >= 32 * 130_000_000, "{e:?}");
        device.observe(c, 130_278_869, 92 << 20);
        assert_eq!(device.estimate(c).waiting, 92 << 20);
        plain.observe(c, 1000, 0);
        assert_eq!(plain.estimate(c).waiting, working_set_bytes(1000, WitnessForm::Assignment));
        assert!(!MemoryBudget::new(1 << 30, WitnessForm::Assignment, true, 1).fits(c, 0));
        let small = CircuitId::parse("winning-2k").unwrap();
        let b = MemoryBudget::new(1 << 30, WitnessForm::Assignment, true, 1);
        assert!(b.fits(small, 0));
        assert!(!b.fits(small, 1 << 30), "its own parameters count against the budget");
    }

    #[test]
    fn resident_parameters_count_and_leave_the_provers_headroom() {
        let b = MemoryBudget::new(100, WitnessForm::Expanded, true, 2);
        // A partition admitted with a proving set of 20: 40 bytes of headroom from now on.
        let w = b.reserve_waiting(est(10, 20), || false).unwrap();
        assert!(b.try_reserve_resident(51).is_none(), "10 + 51 + 40 > 100");
        let r = b.try_reserve_resident(50).expect("10 + 50 + 40 = 100 fits");
        assert_eq!((b.used(), b.resident()), (60, 50));
        // Waiting partitions now see the parameters: no room for another 10.
        assert!(b.reserve_waiting(est(10, 20), || true).is_none());
        // Matrices already in memory are counted even over the limit.
        let m = b.hold_resident(30);
        assert_eq!(b.used(), 90);
        assert_eq!(b.peak(), 90);
        assert!(!b.only_resident());
        drop(w);
        assert!(b.only_resident());
        drop((r, m));
        assert_eq!((b.used(), b.peak()), (0, 90));
    }

    #[test]
    fn cgroup_room_is_the_limit_minus_the_usage() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("memory.current"), "1000\n").unwrap();
        std::fs::write(dir.path().join("memory.max"), "max\n").unwrap();
        assert_eq!(cgroup_room_in(dir.path()), None, "no limit");
        std::fs::write(dir.path().join("memory.max"), "4096\n").unwrap();
        assert_eq!(cgroup_room_in(dir.path()), Some(3096));
        assert!(MemoryBudget::default_limit() > 0);
    }

    /// A v1 memory limit (hybrid hosts keep the memory controller in v1) bounds the default
    /// budget too; it used to be read from v2's memory.max alone.
    #[test]
    fn a_v1_memory_cgroup_is_read_too() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("memory.usage_in_bytes"), "1000\n").unwrap();
        std::fs::write(dir.path().join("memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        assert_eq!(cgroup_v1_room_in(dir.path()), None, "no limit");
        std::fs::write(dir.path().join("memory.limit_in_bytes"), "4096\n").unwrap();
        assert_eq!(cgroup_v1_room_in(dir.path()), Some(3096));
        assert_eq!(v1_memory_path("7:memory:/system.slice/cuzk.service"), Some("/system.slice/cuzk.service"));
        assert_eq!(v1_memory_path("4:cpu,cpuacct,memory:/x"), Some("/x"));
        assert_eq!(v1_memory_path("3:cpuset:/x"), None);
        assert_eq!(v1_memory_path("0::/x"), None);
    }
}
