//! Pre-compiled constraint systems (PCE), one per circuit type: loaded from the on-disk cache
//! (`<pce dir>/<circuit id>.pce`, memory-mapped) or extracted once from the blank circuit and
//! saved. A file that is corrupt, truncated or for another circuit is logged and replaced.
//! Concurrent first uses of one circuit wait for a single extraction. In the daemon a
//! synthesis worker asks for the matrices while it holds its partition's memory reservation,
//! so an extraction (which peaks below one partition's working set) runs inside the budget; a
//! preload holds no such reservation, so it reserves the extraction's peak itself first
//! ([`PceCache::get_for_preload`], [`extraction_peak_bytes`]) and is refused without room.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cuzk_filecoin::params::{blank_circuit, param_files};
use cuzk_filecoin::{CircuitId, ProofKind, SectorSize};
use cuzk_groth16::SrsShape;
use cuzk_pce::{cache, PreCompiled};
use parking_lot::Mutex;

use crate::config::Config;
use crate::error::EngineError;
use crate::memory::{MemoryBudget, Reservation};

type Slot = Arc<Mutex<Option<Arc<PreCompiled>>>>;

pub struct PceCache {
    dir: PathBuf,
    param_dir: PathBuf,
    slots: Mutex<BTreeMap<CircuitId, Slot>>,
    /// The daemon's memory budget ([`PceCache::with_budget`]; none in the in-process engine),
    /// and what the resident matrices hold of it (they stay for the process's life).
    budget: Option<Arc<MemoryBudget>>,
    held: Mutex<Vec<Reservation>>,
}

/// How a `get` was satisfied, for logs, metrics and the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PceSource {
    Memory,
    DiskCache,
    Extracted,
}

impl PceCache {
    /// The cache in `dir`, rid of what interrupted saves left there (`cache::sweep_temp_files`:
    /// only temporary files no live save holds, so a second daemon on the same directory
    /// loses nothing).
    pub fn new(dir: PathBuf, param_dir: PathBuf) -> Self {
        cache::sweep_temp_files(&dir);
        PceCache { dir, param_dir, slots: Mutex::default(), budget: None, held: Mutex::default() }
    }

    /// The daemon's cache: the matrices it keeps resident count against `budget`, and a
    /// preload's extraction reserves its peak there first.
    pub fn with_budget(mut self, budget: Arc<MemoryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Bytes `circuit`'s matrices will take when resident, as far as known without loading
    /// them: its cache file's size (the matrices are mapped from it), else 0.
    pub fn expected_bytes(&self, circuit: CircuitId) -> u64 {
        std::fs::metadata(self.path(circuit)).map_or(0, |m| m.len())
    }

    /// The cache `config` asks for, or None when PCE is switched off.
    pub fn from_config(config: &Config) -> Option<Self> {
        config.pce.enabled.then(|| Self::new(config.pce_cache_dir(), config.srs.param_dir.clone()))
    }

    pub fn path(&self, circuit: CircuitId) -> PathBuf {
        self.dir.join(format!("{circuit}.pce"))
    }

    /// Identity written into (and required of) the cache file: the circuit id plus
    /// storage-proofs' parameter identifier, which changes whenever the circuit does.
    fn identity(&self, circuit: CircuitId) -> Result<String, EngineError> {
        let files = param_files(&self.param_dir, circuit)
            .map_err(|e| EngineError::Internal(format!("identifying circuit {circuit}: {e:#}")))?;
        Ok(format!("cuzk-pce/{circuit}/{}", files.identifier))
    }

    pub fn get(&self, circuit: CircuitId) -> Result<(Arc<PreCompiled>, PceSource), EngineError> {
        self.get_reserving(circuit, false)
    }

    /// [`PceCache::get`] for a caller that holds no reservation of its own (a preload): an
    /// extraction first reserves its peak ([`extraction_peak_bytes`]) in the attached budget,
    /// and is refused with RESOURCE_EXHAUSTED when the budget has no room for it, instead of
    /// growing the daemon past its budget (issue #36, item 7: a first start next to Curio).
    pub fn get_for_preload(&self, circuit: CircuitId) -> Result<(Arc<PreCompiled>, PceSource), EngineError> {
        self.get_reserving(circuit, true)
    }

    fn get_reserving(&self, circuit: CircuitId, reserve: bool) -> Result<(Arc<PreCompiled>, PceSource), EngineError> {
        let slot = self.slots.lock().entry(circuit).or_default().clone();
        let mut guard = slot.lock();
        if let Some(pc) = guard.as_ref() {
            return Ok((pc.clone(), PceSource::Memory));
        }
        let (pc, source) = self.load_or_extract(circuit, reserve)?;
        if let Some(budget) = &self.budget {
            // Already in memory (or mapped): counted as they are, so the loads and partitions
            // admitted after them see the room they take.
            self.held.lock().push(budget.hold_resident(pc.stats().bytes_resident as u64));
        }
        let pc = Arc::new(pc);
        *guard = Some(pc.clone());
        Ok((pc, source))
    }

    /// `circuit`'s matrices without keeping them here: the resident ones if this cache holds
    /// them, else loaded or extracted (and saved) for the caller alone. Whoever needs them
    /// once (a parameter shape, a generated setup) must not pin gigabytes of matrices beside
    /// the engine's own copy.
    pub fn get_unpinned(&self, circuit: CircuitId) -> Result<Arc<PreCompiled>, EngineError> {
        let slot = self.slots.lock().get(&circuit).cloned();
        if let Some(pc) = slot.as_ref().and_then(|s| s.lock().clone()) {
            return Ok(pc);
        }
        Ok(Arc::new(self.load_or_extract(circuit, false)?.0))
    }

    /// The Groth16 parameter sizes of `circuit`, from its matrices (not kept, see
    /// [`PceCache::get_unpinned`]).
    pub fn srs_shape(&self, circuit: CircuitId) -> Result<SrsShape, EngineError> {
        Ok(self.get_unpinned(circuit)?.srs_shape())
    }

    /// [`PceCache::srs_shape`], and the host bytes the parameters' points take.
    pub fn srs_shape_and_bytes(&self, circuit: CircuitId) -> Result<(SrsShape, u64), EngineError> {
        let shape = self.srs_shape(circuit)?;
        let points = shape
            .resident_bytes()
            .ok_or_else(|| EngineError::Internal(format!("{circuit}: no evaluation domain fits the circuit")))?;
        Ok((shape, points))
    }

    /// From the disk cache, or extracted from the blank circuit and saved; `reserve`: the
    /// extraction's peak is reserved in the attached budget for its length first.
    fn load_or_extract(&self, circuit: CircuitId, reserve: bool) -> Result<(PreCompiled, PceSource), EngineError> {
        // As in `SrsCache::load`: a panic here leaves the slot empty and unlocked (retryable).
        crate::faults::hit(crate::faults::Stage::PceLoad);
        let path = self.path(circuit);
        let identity = self.identity(circuit)?;
        match cache::load(&path, &identity) {
            Ok(pc) => Ok((pc, PceSource::DiskCache)),
            Err(e) => {
                if !e.is_missing() {
                    tracing::warn!(%circuit, path = %path.display(), error = %e, "PCE cache file unusable; re-extracting");
                }
                let _room = match self.budget.as_ref().filter(|_| reserve) {
                    Some(budget) => {
                        let need = extraction_peak_bytes(circuit);
                        Some(budget.try_reserve_resident(need).ok_or_else(|| {
                            EngineError::ResourceExhausted(format!(
                                "extracting the PCE matrices of {circuit} peaks at about {} MiB, but {} MiB of the {} MiB memory budget \
                                 are in use (memory.budget_bytes); it is extracted on first use instead, inside that proof's share",
                                need >> 20,
                                budget.used() >> 20,
                                budget.limit() >> 20
                            ))
                        })?)
                    }
                    None => None,
                };
                let start = Instant::now();
                let pc = blank_circuit(circuit)
                    .map_err(|e| EngineError::Internal(format!("blank circuit for {circuit}: {e:#}")))?
                    .extract()
                    .map_err(|e| EngineError::Internal(format!("extracting {circuit}: {e}")))?;
                tracing::info!(%circuit, ms = start.elapsed().as_millis() as u64, stats = %pc.stats(), "PCE extracted");
                let saved = std::fs::create_dir_all(&self.dir)
                    .map_err(|source| cache::CacheError::Io { path: self.dir.clone(), source })
                    .and_then(|_| cache::save(&pc, &path, &identity));
                if let Err(e) = saved {
                    // Still usable from memory; the next process extracts again.
                    tracing::warn!(%circuit, path = %path.display(), error = %e, "could not save PCE cache");
                }
                Ok((pc, PceSource::Extracted))
            }
        }
    }
}

/// The host bytes an extraction of `circuit` peaks at. The matrices' size is known only once
/// extracted, so this is from measured figures: porep-32g's extraction peaked at 14.4 GB of
/// RSS for 6.9 GiB of matrices (BENCHMARKS.md), about twice what it leaves. What the circuits
/// leave, measured: at 32 GiB PoRep 7.0, WindowPoSt (2349 sectors) 10.0, SnapDeals 4.2 and
/// WinningPoSt 0.03 GiB (64 GiB circuits are of the same size); at 2 KiB PoRep 145, SnapDeals
/// 91, WinningPoSt 7.4 and WindowPoSt 1.8 MiB. The 8 and 512 MiB circuits, not measured, lie
/// between, so 32 GiB's figures bound them from above.
pub fn extraction_peak_bytes(circuit: CircuitId) -> u64 {
    const MIB: u64 = 1 << 20;
    let leaves = match (circuit.size, circuit.kind) {
        (SectorSize::S2KiB, ProofKind::PoRepSealCommit) => 150 * MIB,
        (SectorSize::S2KiB, ProofKind::SnapDealsUpdate) => 96 * MIB,
        (SectorSize::S2KiB, ProofKind::WinningPost) => 8 * MIB,
        (SectorSize::S2KiB, ProofKind::WindowPostPartition) => 2 * MIB,
        (_, ProofKind::PoRepSealCommit) => 7 * 1024 * MIB,
        (_, ProofKind::WindowPostPartition) => 10 * 1024 * MIB,
        (_, ProofKind::SnapDealsUpdate) => 4300 * MIB,
        (_, ProofKind::WinningPost) => 32 * MIB,
    };
    2 * leaves
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::time::{Duration, SystemTime};

    use super::*;
    use cuzk_backend::WitnessForm;

    /// Issue #36, item 7: a preload whose extraction cannot fit the budget is refused before
    /// anything is extracted (it used to extract porep-32g, ~14 GB of RSS, outside the budget).
    #[test]
    fn a_preload_whose_extraction_does_not_fit_the_budget_is_refused_before_extracting() {
        let dir = tempfile::tempdir().unwrap();
        let budget = MemoryBudget::new(4 << 30, WitnessForm::Compact, true, 1);
        let cache = PceCache::new(dir.path().join("pce"), dir.path().to_path_buf()).with_budget(budget.clone());
        let porep = CircuitId::parse("porep-32g").unwrap();
        let started = Instant::now();
        let e = cache.get_for_preload(porep).expect_err("14 GiB of extraction in a 4 GiB budget");
        assert!(matches!(e, EngineError::ResourceExhausted(_)), "{e}");
        assert!(e.to_string().contains("porep-32g") && e.to_string().contains("memory.budget_bytes"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "refused at once, not after an extraction");
        assert!(!cache.path(porep).exists(), "nothing extracted or saved");
        assert_eq!(budget.used(), 0, "nothing left reserved");
        // With room, a small circuit extracts as before, its reservation given back after.
        let wpost = CircuitId::parse("wpost-2k").unwrap();
        let (pc, source) = cache.get_for_preload(wpost).unwrap();
        assert_eq!(source, PceSource::Extracted);
        assert_eq!(budget.used(), pc.stats().bytes_resident as u64, "only the matrices stay counted");
    }

    #[test]
    fn extraction_peaks_are_twice_the_measured_matrices_and_bounded_below_32_gib() {
        let id = |s| CircuitId::parse(s).unwrap();
        assert_eq!(extraction_peak_bytes(id("porep-32g")), 14 << 30);
        assert!(extraction_peak_bytes(id("wpost-32g")) > extraction_peak_bytes(id("porep-32g")));
        assert_eq!(extraction_peak_bytes(id("porep-2k")), 300 << 20);
        assert!(extraction_peak_bytes(id("winning-8m")) <= extraction_peak_bytes(id("winning-32g")));
    }

    /// Issue #36 item 11a: a daemon killed while saving leaves a temporary file of up to
    /// 10 GB in the cache directory; the next one to open the cache removes it, and keeps
    /// the cache files.
    #[test]
    fn opening_the_cache_sweeps_stale_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - Duration::from_secs(86400);
        let aged = |name: &str| {
            let p = dir.path().join(name);
            File::create(&p).unwrap().set_modified(old).unwrap();
            p
        };
        // The name the save of this version leaves, and the one earlier versions left.
        let leaks = [aged(".pce-partial-AbC123"), aged(".tmpAbC123")];
        let kept = aged("porep-32g.pce");
        let _cache = PceCache::new(dir.path().to_path_buf(), "/nonexistent".into());
        for leak in &leaks {
            assert!(!leak.exists(), "{} left behind", leak.display());
        }
        assert!(kept.exists());
    }
}
