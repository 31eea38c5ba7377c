//! Pre-compiled constraint systems (PCE), one per circuit type: loaded from the on-disk cache
//! (`<pce dir>/<circuit id>.pce`, memory-mapped) or extracted once from the blank circuit and
//! saved. A file that is corrupt, truncated or for another circuit is logged and replaced.
//! Concurrent first uses of one circuit wait for a single extraction. In the daemon a
//! synthesis worker asks for the matrices while it holds its partition's memory reservation,
//! so an extraction (which peaks below one partition's working set) runs inside the budget.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cuzk_filecoin::params::{blank_circuit, param_files};
use cuzk_filecoin::CircuitId;
use cuzk_groth16::SrsShape;
use cuzk_pce::{cache, PreCompiled};
use parking_lot::Mutex;

use crate::config::Config;
use crate::error::EngineError;
use crate::scheduler::{MemoryBudget, Reservation};

type Slot = Arc<Mutex<Option<Arc<PreCompiled>>>>;

pub struct PceCache {
    dir: PathBuf,
    param_dir: PathBuf,
    slots: Mutex<BTreeMap<CircuitId, Slot>>,
    /// The daemon's memory budget, and what the resident matrices hold of it (they stay for
    /// the process's life).
    budget: std::sync::OnceLock<Arc<MemoryBudget>>,
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
        PceCache { dir, param_dir, slots: Mutex::default(), budget: std::sync::OnceLock::new(), held: Mutex::default() }
    }

    /// Count the matrices this cache keeps resident against `budget` from now on (only the
    /// first call takes effect).
    pub fn attach_budget(&self, budget: Arc<MemoryBudget>) {
        let _ = self.budget.set(budget);
    }

    /// Bytes `circuit`'s matrices will take when resident, as far as known without loading
    /// them: its cache file's size (the matrices are mapped from it), else 0.
    pub fn expected_bytes(&self, circuit: CircuitId) -> u64 {
        std::fs::metadata(self.path(circuit)).map_or(0, |m| m.len())
    }

    /// The cache `config` asks for, or None when PCE is switched off.
    pub fn from_config(config: &Config) -> Option<Arc<Self>> {
        config.pce.enabled.then(|| Arc::new(Self::new(config.pce_cache_dir(), config.srs.param_dir.clone())))
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
        let slot = self.slots.lock().entry(circuit).or_default().clone();
        let mut guard = slot.lock();
        if let Some(pc) = guard.as_ref() {
            return Ok((pc.clone(), PceSource::Memory));
        }
        let (pc, source) = self.load_or_extract(circuit)?;
        if let Some(budget) = self.budget.get() {
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
        Ok(Arc::new(self.load_or_extract(circuit)?.0))
    }

    /// The Groth16 parameter sizes of `circuit`, from its matrices (not kept, see
    /// [`PceCache::get_unpinned`]).
    pub fn srs_shape(&self, circuit: CircuitId) -> Result<SrsShape, EngineError> {
        Ok(self.get_unpinned(circuit)?.srs_shape())
    }

    /// From the disk cache, or extracted from the blank circuit and saved.
    fn load_or_extract(&self, circuit: CircuitId) -> Result<(PreCompiled, PceSource), EngineError> {
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

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::time::{Duration, SystemTime};

    use super::*;

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
