//! Parameters and matrices on request: a preload (matrices first, onto the devices too, then
//! the parameters) and an eviction.

use std::time::{Duration, Instant};

use cuzk_filecoin::CircuitId;

use super::shared::Shared;
use crate::error::EngineError;
use crate::pce_cache::PceSource;
use crate::srs_cache::EvictOutcome;

/// Load a circuit's PCE matrices now (so that the circuit's first proof neither extracts
/// them nor waits for that: at 32 GiB it takes a minute or more), let the backend put
/// them on its devices, then load its parameters.
///
/// The matrices go first so that a device's room for the parameters is judged with them
/// already there: on one H200, 32 GiB PoRep and WindowPoSt parameters both resident plus
/// both circuits' matrices left no room to prove either, and every proof failed. So the
/// circuits preloaded first — the deadline ones, in a sensible `srs.preload` — keep their
/// parameters resident, and a later one that would leave no room streams them.
/// Returns (already_loaded, load time). Blocking.
pub(super) fn preload(sh: &Shared, circuit: &str) -> Result<(bool, Duration), EngineError> {
    let id = CircuitId::parse(circuit)?;
    let start = Instant::now();
    let matrix_bytes = sh.pce.as_ref().map_or(0, |pce| pce.expected_bytes(id));
    sh.srs.refuse_if_never_fits(id, matrix_bytes)?;
    let pce_now = match &sh.pce {
        Some(pce) => {
            // No partition's reservation covers a preload's extraction: it reserves its own.
            let (matrices, source) = pce.get_for_preload(id)?;
            // Onto the devices too, when they evaluate the matrices (a no-op once there).
            sh.backend.adopt_matrices(&matrices);
            source != PceSource::Memory
        }
        None => false,
    };
    let (_, loaded_now) = sh.srs.get(id)?;
    let loaded = loaded_now || pce_now;
    Ok((!loaded, if loaded { start.elapsed() } else { Duration::ZERO }))
}

pub(super) fn evict(sh: &Shared, circuit: &str) -> Result<EvictOutcome, EngineError> {
    let id = CircuitId::parse(circuit)?;
    Ok(sh.srs.evict(id))
}
