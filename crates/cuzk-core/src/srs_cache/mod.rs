//! Resident Groth16 parameters: each circuit's SRS is loaded once, shared by every job that
//! needs it, and stays until evicted. Concurrent first uses of one circuit wait for a single
//! load. Eviction of parameters that a job still holds is refused, never pulled from under it.
//! Circuits listed in `srs.synthetic` get random parameters instead of files (benchmarks
//! only; see `crate::synthetic`); circuits listed in `srs.generated` get parameters from
//! cuzk's own INSECURE setup over their PCE matrices (tests and benchmarks at sizes whose
//! ceremony files are out of reach; their proofs verify against the generated key).
//!
//! With a memory budget (the daemon's cache, [`SrsCache::with_budget`]), every load is reserved
//! before it starts (the file's size, or a generated setup's points plus its evaluations); a
//! load that does not fit evicts idle parameters of other circuits, least recently used first,
//! then waits for jobs to release theirs, and is refused when nothing can ever make room. The
//! prover backend comes with the budget and sees every load and eviction (`budget`).
//! Without one (the in-process engine), loads stay on the host as they were made.
//!
//! This module is the cache: load-once slots, room made in the budget (least recently used
//! first, the deadline circuits pinned), eviction and the resident list. Each parameter source
//! is a module of its own (`files`, `synthetic`, `generated`; `sources` picks one per circuit).

mod budget;
mod files;
mod generated;
mod sources;
mod synthetic;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use budget::Budget;
use cuzk_backend::ProverBackend;
use cuzk_filecoin::{CircuitId, ProofKind};
use cuzk_groth16::srs_sink::QuerySink;
use cuzk_groth16::{PreparedVerifyingKey, Srs, SubgroupCheck};
use parking_lot::Mutex;
use sources::Sources;

use crate::config::Config;
use crate::error::EngineError;
use crate::memory::{MemoryBudget, Reservation};

/// One circuit's parameters, decoded and validated, with the prepared verifying key.
pub struct LoadedSrs {
    pub circuit: CircuitId,
    pub srs: Srs,
    pub pvk: PreparedVerifyingKey,
    pub bytes: u64,
    pub load_time: Duration,
    /// When a job last asked for these parameters (ns since the cache was made): the LRU key.
    last_used: AtomicU64,
    /// The load's share of the memory budget, released with the parameters.
    _memory: Option<Reservation>,
}

type Slot = Arc<Mutex<Option<Arc<LoadedSrs>>>>;

/// How often a caller queued behind another's load rechecks whether that load waits.
const SLOT_POLL: Duration = Duration::from_millis(200);

/// Runs its closure when dropped (also while unwinding).
struct Finally<F: FnMut()>(F);

impl<F: FnMut()> Drop for Finally<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

pub struct SrsCache {
    sources: Sources,
    slots: Mutex<BTreeMap<CircuitId, Slot>>,
    /// Circuits whose load is waiting for other jobs to free memory (not working): callers
    /// queued behind such a load on its slot are waiting too, not stuck.
    waiting_for_memory: Mutex<BTreeSet<CircuitId>>,
    /// The daemon's (see `budget`); none in the in-process engine.
    budget: Option<Budget>,
    epoch: Instant,
    /// Never evicted to make room for another load: the preloaded WinningPoSt and WindowPoSt
    /// circuits, whose deadlines cannot wait for a reload (an explicit EvictSRS still works).
    pinned: BTreeSet<CircuitId>,
}

/// A resident entry as status reports show it.
#[derive(Clone, Debug)]
pub struct ResidentSrs {
    pub circuit: CircuitId,
    pub bytes: u64,
    /// Jobs holding it right now.
    pub in_use: usize,
    /// Generated random parameters (`srs.synthetic`), not a trusted setup.
    pub synthetic: bool,
    /// From a known trapdoor (`srs.generated`, or a file marked INSECURE): proofs verify
    /// but can be forged by anyone with the seed.
    pub insecure: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum EvictOutcome {
    NotLoaded,
    Freed {
        bytes: u64,
    },
    InUse {
        holders: usize,
    },
    /// A load of these parameters is in progress.
    Loading,
}

impl SrsCache {
    /// A cache of the parameter files in `dir`.
    pub fn new(dir: PathBuf, check: SubgroupCheck) -> Self {
        SrsCache::with_sources(Sources::files(dir, check))
    }

    fn with_sources(sources: Sources) -> Self {
        SrsCache {
            sources,
            slots: Mutex::new(BTreeMap::new()),
            waiting_for_memory: Mutex::new(BTreeSet::new()),
            budget: None,
            epoch: Instant::now(),
            pinned: BTreeSet::new(),
        }
    }

    /// The daemon's cache: every load counted against `memory`, and offered to `backend`,
    /// which also forgets the evicted ones (see `budget`).
    pub fn with_budget(mut self, memory: Arc<MemoryBudget>, backend: Arc<dyn ProverBackend>) -> Self {
        self.budget = Some(Budget::new(memory, backend));
        self
    }

    /// The cache `config` describes. When `srs.generated` lists circuits, `backend` does
    /// their fixed-base multiplications if it has an engine for them
    /// ([`ProverBackend::fixed_base`]), else the CPU does.
    pub fn from_config(config: &Config, backend: &dyn ProverBackend) -> Self {
        let mut cache = Self::with_sources(Sources::from_config(config, backend));
        cache.pinned = config
            .srs
            .preload
            .iter()
            .filter_map(|id| CircuitId::parse(id).ok())
            .filter(|c| matches!(c.kind, ProofKind::WinningPost | ProofKind::WindowPostPartition))
            .collect();
        cache
    }

    /// Whether `circuit`'s parameters are synthetic (`srs.synthetic`).
    pub fn is_synthetic(&self, circuit: CircuitId) -> bool {
        self.sources.is_synthetic(circuit)
    }

    /// The parameters of `circuit`, loading them if needed. Returns whether this call loaded.
    /// A load that finds no room in the budget, even after evicting idle parameters, is
    /// refused at once ([`SrsCache::get_or_wait`] waits instead).
    pub fn get(&self, circuit: CircuitId) -> Result<(Arc<LoadedSrs>, bool), EngineError> {
        self.get_or_wait(circuit, || true, |_| {})
    }

    /// Like [`SrsCache::get`], but when other jobs' parameters fill the budget, waits for them
    /// to be released until `give_up()` (checked every 200 ms and whenever memory is freed).
    /// `waiting(true)` is called when the caller starts waiting on others (for memory, or
    /// behind another caller's load that waits for memory) and `waiting(false)` when it works
    /// again: the watchdog times work, never such waits.
    pub fn get_or_wait(
        &self,
        circuit: CircuitId,
        give_up: impl Fn() -> bool,
        waiting: impl Fn(bool),
    ) -> Result<(Arc<LoadedSrs>, bool), EngineError> {
        let slot = self.slots.lock().entry(circuit).or_default().clone();
        let mut guard = loop {
            if let Some(g) = slot.try_lock_for(SLOT_POLL) {
                break g;
            }
            waiting(self.waiting_for_memory.lock().contains(&circuit));
        };
        waiting(false);
        if let Some(loaded) = guard.as_ref() {
            loaded.last_used.store(self.now(), Ordering::Relaxed);
            return Ok((loaded.clone(), false));
        }
        // Under this circuit's slot lock: concurrent first uses wait for this one reservation.
        let memory = self.reserve(circuit, &give_up, &waiting)?;
        let loaded = Arc::new(self.load(circuit, memory)?);
        *guard = Some(loaded.clone());
        Ok((loaded, true))
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The resident bytes `circuit`'s parameters will take, as far as known without loading
    /// anything (the file's size; 0 for generated or synthetic ones): for refusing at submit a
    /// job that can never fit.
    pub fn expected_bytes(&self, circuit: CircuitId) -> u64 {
        self.sources.expected_bytes(circuit)
    }

    /// Refuse now a load of `circuit` that cannot fit the budget even with nothing else
    /// loaded, counting `also` bytes that must be resident beside it (its PCE matrices): a
    /// preload checks this before it loads the matrices, so a refused preload leaves nothing
    /// behind.
    pub fn refuse_if_never_fits(&self, circuit: CircuitId, also: u64) -> Result<(), EngineError> {
        let Some(budget) = &self.budget else { return Ok(()) };
        let need = self.sources.load_bytes(circuit)?;
        let limit = budget.memory.limit();
        if need + also > limit {
            return Err(EngineError::ResourceExhausted(format!(
                "loading the parameters of {circuit} needs {} MiB ({} MiB with its matrices), more than the {} MiB memory budget \
                 holds with nothing else loaded (memory.budget_bytes)",
                need >> 20,
                (need + also) >> 20,
                limit >> 20
            )));
        }
        Ok(())
    }

    /// Room for a load of `circuit` in the budget (None without one): evicting idle
    /// parameters, least recently used first, then waiting for jobs to release theirs.
    fn reserve(
        &self,
        circuit: CircuitId,
        give_up: &impl Fn() -> bool,
        waiting: &impl Fn(bool),
    ) -> Result<Option<Reservation>, EngineError> {
        let Some(budget) = &self.budget else { return Ok(None) };
        let need = self.sources.load_bytes(circuit)?;
        // Whatever way the loop ends, the circuit is no longer waiting and the caller works.
        let _done = Finally(|| {
            self.waiting_for_memory.lock().remove(&circuit);
            waiting(false);
        });
        loop {
            if let Some(r) = budget.memory.try_reserve_resident(need) {
                return Ok(Some(r));
            }
            if self.evict_least_recently_used(circuit) {
                continue;
            }
            // Nothing idle to evict. Jobs in flight will release memory (and their
            // parameters) when they finish; with none, nothing ever will.
            let nothing_will_free = budget.memory.only_resident() && !self.any_held(circuit);
            if nothing_will_free || give_up() {
                let m = &budget.memory;
                return Err(EngineError::ResourceExhausted(format!(
                    "loading the parameters of {circuit} needs {} MiB, but {} MiB of the {} MiB memory budget are in use \
                     ({} MiB by loaded parameters and matrices){}",
                    need >> 20,
                    m.used() >> 20,
                    m.limit() >> 20,
                    m.resident() >> 20,
                    if nothing_will_free { " and nothing can be evicted (memory.budget_bytes)" } else { "" }
                )));
            }
            self.waiting_for_memory.lock().insert(circuit);
            waiting(true);
            budget.memory.wait_for_release(Duration::from_millis(200));
        }
    }

    /// Evict the least recently used parameters that no job holds, other than `keep`'s and
    /// the pinned deadline circuits'. Returns whether anything was freed.
    fn evict_least_recently_used(&self, keep: CircuitId) -> bool {
        let mut idle: Vec<(u64, CircuitId)> = {
            let slots = self.slots.lock();
            slots
                .iter()
                .filter(|(c, _)| **c != keep && !self.pinned.contains(c))
                .filter_map(|(c, slot)| {
                    let guard = slot.try_lock()?;
                    let l = guard.as_ref()?;
                    (Arc::strong_count(l) == 1).then(|| (l.last_used.load(Ordering::Relaxed), *c))
                })
                .collect()
        };
        idle.sort();
        for (_, circuit) in idle {
            if let EvictOutcome::Freed { bytes } = self.evict(circuit) {
                tracing::info!(%circuit, mib = bytes >> 20, "evicted idle parameters (least recently used) to make room");
                return true;
            }
        }
        false
    }

    /// Whether any job holds loaded parameters, or another circuit's load is under way, right
    /// now: either can free memory later. `loading`'s own slot is left out — its caller holds
    /// that lock while it asks, and counting it made every load that could never fit wait
    /// for ever instead of being refused (issue #36, item 1).
    fn any_held(&self, loading: CircuitId) -> bool {
        let slots: Vec<Slot> =
            self.slots.lock().iter().filter(|(c, _)| **c != loading).map(|(_, s)| s.clone()).collect();
        slots.iter().any(|slot| slot.try_lock().is_none_or(|g| g.as_ref().is_some_and(|l| Arc::strong_count(l) > 1)))
    }

    fn load(&self, circuit: CircuitId, memory: Option<Reservation>) -> Result<LoadedSrs, EngineError> {
        // A panic here (tests inject one) unwinds through `get` with the slot's lock held;
        // parking_lot's guard unlocks on unwind and leaves the slot empty, so the next `get`
        // loads again instead of finding a poisoned or half-filled slot.
        crate::faults::hit(crate::faults::Stage::SrsLoad);
        let start = Instant::now();
        let sink = self.budget.as_ref().map(|b| b as &dyn QuerySink);
        let srs = self.sources.load(circuit, sink)?;
        Ok(self.loaded(circuit, srs, start, memory))
    }

    fn loaded(&self, circuit: CircuitId, mut srs: Srs, start: Instant, mut memory: Option<Reservation>) -> LoadedSrs {
        let backend_bytes = self.budget.as_ref().map_or(0, |b| b.adopt(&mut srs));
        let pvk = PreparedVerifyingKey::new(&srs.vk);
        let bytes = srs.resident_bytes() + backend_bytes;
        if backend_bytes > 0 {
            tracing::info!(%circuit, gib = backend_bytes as f64 / (1u64 << 30) as f64, "host memory the prover keeps for these parameters (staged queries), counted with them");
        }
        // The reservation covered the load's peak; from now on it holds what stays.
        if let Some(m) = memory.as_mut() {
            m.resize(bytes);
        }
        let load_time = start.elapsed();
        if srs.insecure {
            tracing::warn!(%circuit, bytes, ms = load_time.as_millis() as u64, path = %srs.path.display(),
                "INSECURE parameters resident (generated setup with a known trapdoor): tests and benchmarks only");
        } else {
            tracing::info!(%circuit, bytes, ms = load_time.as_millis() as u64, synthetic = srs.synthetic, "parameters resident");
        }
        if srs.points_released() {
            tracing::info!(%circuit, host_bytes = bytes, "the devices hold the parameters' points; their host copy was released");
        }
        LoadedSrs { circuit, srs, pvk, bytes, load_time, last_used: AtomicU64::new(self.now()), _memory: memory }
    }

    /// Drop a circuit's parameters if nobody holds them. The daemon's backend sees them last
    /// (`ProverBackend::forget_srs`: it drops its device copies and host pinning there).
    ///
    /// The parameters leave the slot map first, and the backend is told after its lock is
    /// released: the backend takes each device's lock there, behind any deadline work, and
    /// every other circuit's lookup (a WinningPoSt's included), status and metrics need the
    /// map meanwhile (issue #36, item 5). A lookup of this circuit in that window starts a
    /// fresh load, under a new load id, so the backend's copies of the two never meet.
    pub fn evict(&self, circuit: CircuitId) -> EvictOutcome {
        let loaded = {
            let mut slots = self.slots.lock();
            let Some(slot) = slots.get(&circuit).cloned() else { return EvictOutcome::NotLoaded };
            // A slot locked by someone else is being loaded right now: say so instead of
            // waiting for a load that can take a minute.
            let Some(mut guard) = slot.try_lock() else { return EvictOutcome::Loading };
            let Some(loaded) = guard.as_ref() else { return EvictOutcome::NotLoaded };
            let holders = Arc::strong_count(loaded) - 1;
            if holders > 0 {
                return EvictOutcome::InUse { holders };
            }
            let loaded = guard.take().expect("checked above");
            drop(guard);
            slots.remove(&circuit);
            loaded
        };
        let bytes = loaded.bytes;
        if let Some(b) = &self.budget {
            b.forget(&loaded.srs);
        }
        // The budget's share goes with the last reference, after the backend let go.
        drop(loaded);
        EvictOutcome::Freed { bytes }
    }

    pub fn resident(&self) -> Vec<ResidentSrs> {
        let slots: Vec<Slot> = self.slots.lock().values().cloned().collect();
        slots
            .iter()
            .filter_map(|slot| {
                // A slot being loaded is locked; it is not resident yet.
                let guard = slot.try_lock()?;
                let l = guard.as_ref()?;
                Some(ResidentSrs {
                    circuit: l.circuit,
                    bytes: l.bytes,
                    in_use: Arc::strong_count(l) - 1,
                    synthetic: l.srs.synthetic,
                    insecure: l.srs.insecure,
                })
            })
            .collect()
    }

    pub fn resident_bytes(&self) -> u64 {
        self.resident().iter().map(|r| r.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use blstrs::{G1Affine, G2Affine};
    use cuzk_backend::WitnessForm;
    use cuzk_filecoin::params::param_files;
    use group::prime::PrimeCurveAffine;

    /// Parameters of no use but their size, already resident for `circuit`.
    fn resident(cache: &SrsCache, circuit: CircuitId, memory: Reservation) {
        let (g1, g2) = (G1Affine::generator(), G2Affine::generator());
        let vk = cuzk_groth16::VerifyingKey {
            alpha_g1: g1,
            beta_g1: g1,
            beta_g2: g2,
            gamma_g2: g2,
            delta_g1: g1,
            delta_g2: g2,
            ic: vec![g1],
        };
        let pvk = PreparedVerifyingKey::new(&vk);
        let srs = Srs {
            vk,
            h: vec![],
            l: vec![],
            a: vec![],
            b_g1: vec![],
            b_g2: vec![],
            path: "test://pinned".into(),
            synthetic: false,
            insecure: false,
            id: Srs::next_id(),
            released: None,
        };
        let bytes = memory.bytes();
        let loaded = LoadedSrs {
            circuit,
            srs,
            pvk,
            bytes,
            load_time: Duration::ZERO,
            last_used: AtomicU64::new(0),
            _memory: Some(memory),
        };
        cache.slots.lock().insert(circuit, Arc::new(Mutex::new(Some(Arc::new(loaded)))));
    }

    /// A backend that proves nothing and, told to forget parameters, first says so on
    /// `inside`, then waits for `release`: a device held by deadline work.
    struct WaitingBackend {
        inside: Mutex<mpsc::Sender<()>>,
        release: Mutex<mpsc::Receiver<()>>,
    }

    impl ProverBackend for WaitingBackend {
        fn name(&self) -> String {
            "waiting".into()
        }

        fn prove(
            &self,
            _: &Srs,
            _: cuzk_backend::Witness,
            _: cuzk_groth16::Randomness,
            _: &cuzk_backend::WorkLabel,
        ) -> Result<(cuzk_groth16::Proof, cuzk_backend::ProveTimings), cuzk_groth16::ProveError> {
            unreachable!("these tests prove nothing")
        }

        fn forget_srs(&self, _: &Srs) {
            self.inside.lock().send(()).unwrap();
            self.release.lock().recv().unwrap();
        }
    }

    /// Issue #36, item 5: an eviction whose backend waits for a device (held by deadline
    /// work) must not hold up other circuits' lookups: they used to wait on the slot map for
    /// the whole of it.
    #[test]
    fn an_eviction_waiting_for_the_backend_does_not_hold_up_other_lookups() {
        let dir = tempfile::tempdir().unwrap();
        let porep = CircuitId::parse("porep-2k").unwrap();
        let winning = CircuitId::parse("winning-2k").unwrap();
        let memory = MemoryBudget::new(1000, WitnessForm::Compact, true, 1);
        let (inside_tx, inside_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let backend = Arc::new(WaitingBackend { inside: Mutex::new(inside_tx), release: Mutex::new(release_rx) });
        let cache =
            Arc::new(SrsCache::new(dir.path().to_path_buf(), SubgroupCheck::Skip).with_budget(memory.clone(), backend));
        resident(&cache, porep, memory.try_reserve_resident(300).unwrap());
        resident(&cache, winning, memory.try_reserve_resident(10).unwrap());
        let evicting = {
            let cache = cache.clone();
            std::thread::spawn(move || cache.evict(porep))
        };
        inside_rx.recv().unwrap();
        let (done_tx, done_rx) = mpsc::channel();
        {
            let cache = cache.clone();
            std::thread::spawn(move || {
                let r = cache.get(winning).map(|(l, loaded)| (l.circuit, loaded));
                done_tx.send((r.is_ok(), cache.resident().len())).unwrap();
            });
        }
        let got = done_rx.recv_timeout(Duration::from_secs(5));
        assert_eq!(
            got.ok(),
            Some((true, 1)),
            "WinningPoSt's lookup returned while the eviction still waited, and listed only itself"
        );
        assert_eq!(memory.used(), 310, "the evicted parameters stay counted until the backend let go");
        release_tx.send(()).unwrap();
        assert_eq!(evicting.join().unwrap(), EvictOutcome::Freed { bytes: 300 });
        assert_eq!(memory.used(), 10);
    }

    /// Issue #36, item 1: pinned parameters leave too little room, no job holds anything, so
    /// nothing will ever make room: the load is refused at once, without waiting (it used to
    /// count its own slot as another load under way and wait for ever).
    #[test]
    fn a_load_that_can_never_fit_beside_pinned_parameters_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let porep = CircuitId::parse("porep-2k").unwrap();
        let wpost = CircuitId::parse("wpost-2k").unwrap();
        let files = param_files(dir.path(), porep).unwrap();
        std::fs::write(&files.params, vec![0u8; 500]).unwrap();
        let memory = MemoryBudget::new(1000, WitnessForm::Compact, true, 1);
        let mut cache = SrsCache::new(dir.path().to_path_buf(), SubgroupCheck::Skip)
            .with_budget(memory.clone(), Arc::new(cuzk_backend::CpuBackend));
        cache.pinned.insert(wpost);
        resident(&cache, wpost, memory.try_reserve_resident(800).unwrap());
        let waited = AtomicU64::new(0);
        let e = cache
            .get_or_wait(
                porep,
                || {
                    waited.fetch_add(1, Ordering::Relaxed);
                    waited.load(Ordering::Relaxed) > 3
                },
                |_| {},
            )
            .err()
            .expect("500 bytes beside 800 pinned of 1000 cannot load");
        assert!(matches!(e, EngineError::ResourceExhausted(_)), "{e}");
        assert!(e.to_string().contains("nothing can be evicted"), "{e}");
        assert_eq!(waited.load(Ordering::Relaxed), 0, "refused before waiting for anything");
    }
}
