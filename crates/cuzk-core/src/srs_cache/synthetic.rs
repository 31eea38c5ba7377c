//! Random parameters for the circuits `srs.synthetic` lists (benchmarks only; how their
//! proofs are flagged is `crate::synthetic`), shaped after each circuit's PCE matrices: read
//! from the same cache files the engine's PCE cache uses, and never kept resident here.

use std::collections::BTreeSet;

use cuzk_filecoin::CircuitId;
use cuzk_groth16::Srs;

use crate::config::Config;
use crate::error::EngineError;
use crate::pce_cache::PceCache;

pub(super) struct SyntheticSource {
    circuits: BTreeSet<CircuitId>,
    shapes: PceCache,
}

impl SyntheticSource {
    /// The source `srs.synthetic` asks for; None when it lists nothing.
    pub(super) fn from_config(config: &Config) -> Option<Self> {
        // `validate` has checked the ids; an unparsable one here would be a bug upstream.
        let circuits: BTreeSet<CircuitId> = config.synthetic_circuits().unwrap_or_default().into_iter().collect();
        if circuits.is_empty() {
            return None;
        }
        let list: Vec<String> = circuits.iter().map(|c| c.to_string()).collect();
        tracing::warn!(
            circuits = %list.join(", "),
            "srs.synthetic is set: these circuits get RANDOM parameters (benchmarks only); their proofs \
             cannot verify and are returned unverified and flagged, never as verified proofs"
        );
        let shapes = PceCache::new(config.pce_cache_dir(), config.srs.param_dir.clone());
        Some(SyntheticSource { circuits, shapes })
    }

    pub(super) fn serves(&self, circuit: CircuitId) -> bool {
        self.circuits.contains(&circuit)
    }

    /// The points' bytes.
    pub(super) fn load_bytes(&self, circuit: CircuitId) -> Result<u64, EngineError> {
        Ok(self.shapes.srs_shape_and_bytes(circuit)?.1)
    }

    pub(super) fn load(&self, circuit: CircuitId) -> Result<Srs, EngineError> {
        crate::synthetic::build_srs(circuit, &self.shapes)
    }
}
