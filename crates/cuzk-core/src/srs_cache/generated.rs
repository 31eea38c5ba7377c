//! INSECURE parameters for the circuits `srs.generated` lists: cuzk's own setup over each
//! circuit's PCE matrices, from a known seed (tests and benchmarks at sizes whose ceremony
//! files are out of reach; their proofs verify against the generated key). The fixed-base
//! multiplications run on the backend's engine when it has one (a device), else on the CPU.

use std::collections::BTreeSet;
use std::sync::Arc;

use cuzk_backend::ProverBackend;
use cuzk_filecoin::CircuitId;
use cuzk_groth16::setup::FixedBaseMul;
use cuzk_groth16::srs_sink::QuerySink;
use cuzk_groth16::Srs;

use crate::config::Config;
use crate::error::EngineError;
use crate::pce_cache::PceCache;

/// Which circuits get generated parameters, from which seed, and where their matrices come
/// from (the same cache files the engine's PCE cache uses).
pub(super) struct GeneratedSource {
    circuits: BTreeSet<CircuitId>,
    seed: u64,
    matrices: PceCache,
    mul: Arc<dyn FixedBaseMul>,
}

impl GeneratedSource {
    /// The source `srs.generated` asks for, multiplying on `backend`'s engine
    /// ([`ProverBackend::fixed_base`]) or the CPU's; None when it lists nothing.
    pub(super) fn from_config(config: &Config, backend: &dyn ProverBackend) -> Option<Self> {
        let circuits: BTreeSet<CircuitId> = config.generated_circuits().unwrap_or_default().into_iter().collect();
        if circuits.is_empty() {
            return None;
        }
        let list: Vec<String> = circuits.iter().map(|c| c.to_string()).collect();
        tracing::warn!(
            circuits = %list.join(", "), seed = config.srs.generated_seed,
            "srs.generated is set: these circuits get INSECURE parameters from cuzk's own setup with a known \
             trapdoor; their proofs verify only against the generated key and can be forged by anyone with \
             the seed — tests and benchmarks only, never for proofs that go on chain"
        );
        let matrices = PceCache::new(config.pce_cache_dir(), config.srs.param_dir.clone());
        let mul = crate::backend::setup_engine(backend);
        tracing::info!(engine = %mul.name(), "generated setup: fixed-base multiplications run here");
        Some(GeneratedSource { circuits, seed: config.srs.generated_seed, matrices, mul })
    }

    pub(super) fn serves(&self, circuit: CircuitId) -> bool {
        self.circuits.contains(&circuit)
    }

    /// The points, plus the setup's QAP evaluations (three field elements per variable) while
    /// it runs.
    pub(super) fn load_bytes(&self, circuit: CircuitId) -> Result<u64, EngineError> {
        let (shape, points) = self.matrices.srs_shape_and_bytes(circuit)?;
        Ok(points + 96 * (shape.num_inputs + shape.num_aux) as u64)
    }

    /// The setup of `circuit`, its queries handed to `sink` while they are made when it takes
    /// them (`cuzk_groth16::srs_sink`).
    pub(super) fn load(&self, circuit: CircuitId, sink: Option<&dyn QuerySink>) -> Result<Srs, EngineError> {
        // Not pinned here: once the setup is built, the only resident copy of the
        // matrices is the engine's PCE cache's (mapped from the file this may have saved).
        let pc = self.matrices.get_unpinned(circuit)?;
        tracing::warn!(%circuit, seed = self.seed, "generating INSECURE parameters (srs.generated)");
        cuzk_pce::setup::generate_srs_into(&pc, self.seed, &circuit.to_string(), &*self.mul, sink)
            .map_err(|e| EngineError::Internal(format!("generated setup of {circuit}: {e}")))
    }
}
