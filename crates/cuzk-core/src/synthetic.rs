//! Synthetic parameters in the engine (`srs.synthetic`, benchmarks only).
//!
//! A circuit listed there gets parameters generated in memory by
//! [`cuzk_groth16::Srs::synthetic`] — random points of exactly the sizes its PCE matrices
//! imply — instead of parameters read from `srs.param_dir`. Everything downstream runs as with
//! real parameters, except that the proofs cannot verify. So the rule "no proof leaves the
//! engine unverified" becomes "no *unverified* proof leaves it looking verified":
//!
//! * `pipeline::verify_and_assemble` skips verification for synthetic parameters, logs a
//!   warning and returns [`Verification::SkippedSynthetic`] instead of `Verified`;
//! * the in-process engine's `ProofOutput::verification` carries that;
//! * the daemon ends such a job **FAILED** with an `error_message` starting with
//!   [`UNVERIFIED_PREFIX`] (the proof bytes are attached, for inspection), and counts it in
//!   `cuzk_unverified_synthetic_proofs_total{kind}` — so a client that only looks at the
//!   status never takes it for a proof, and a benchmark can still tell it from a real failure.

use std::time::Instant;

use cuzk_filecoin::CircuitId;
use cuzk_groth16::Srs;

use crate::error::EngineError;
use crate::pce_cache::PceCache;

/// Seed of every synthetic parameter set: the points do not matter, only that they are the
/// same from run to run (reproducible benchmarks).
pub const SYNTHETIC_SEED: u64 = 0x5359_4e54_4845_5449; // "SYNTHETI"

/// How every error message of a job proved with synthetic parameters begins.
pub const UNVERIFIED_PREFIX: &str = "UNVERIFIED";

/// Whether a proof was checked before it was returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verification {
    /// Every partition verified against the verifying key.
    Verified,
    /// Proved with synthetic parameters (`srs.synthetic`): not verified, cannot verify, and
    /// must never be used as a proof.
    SkippedSynthetic,
}

/// The error message of a daemon job whose proof was made with synthetic parameters.
pub fn unverified_message(circuit: CircuitId) -> String {
    format!(
        "{UNVERIFIED_PREFIX}: {circuit} was proved with synthetic parameters (srs.synthetic, benchmarks only); \
         the proof attached was not verified, cannot verify, and must not be used"
    )
}

/// Whether a job's error message is the one [`unverified_message`] writes.
pub fn is_unverified_message(message: &str) -> bool {
    message.starts_with(UNVERIFIED_PREFIX)
}

/// Build `circuit`'s synthetic parameters, sized from its PCE matrices.
pub(crate) fn build_srs(circuit: CircuitId, shapes: &PceCache) -> Result<Srs, EngineError> {
    let start = Instant::now();
    let shape = shapes.srs_shape(circuit)?;
    let shape_time = start.elapsed();
    let srs = Srs::synthetic(&shape, SYNTHETIC_SEED, &circuit.to_string())?;
    tracing::warn!(
        %circuit, %shape, bytes = srs.resident_bytes(),
        shape_ms = shape_time.as_millis() as u64, generate_ms = (start.elapsed() - shape_time).as_millis() as u64,
        "SYNTHETIC parameters generated (random points, srs.synthetic): proofs of this circuit will NOT verify"
    );
    Ok(srs)
}
