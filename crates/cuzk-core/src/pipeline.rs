//! The stages one partition goes through — synthesize, prove, verify — and the assembly of a
//! job's partition proofs into the bytes filecoin-proofs would return (verified, or flagged
//! unverified when the parameters are synthetic). The in-process engine
//! and the daemon's scheduler both run proofs through these functions; only the scheduling
//! around them differs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_backend::{ProveTimings, ProverBackend, Randomness, Witness, WorkLabel};
use cuzk_filecoin::{catch_panic, Partition};
use cuzk_groth16::{Fr, Proof};
use cuzk_pce::PreCompiled;

use crate::error::EngineError;
use crate::srs_cache::LoadedSrs;
use crate::synthetic::Verification;

/// A partition after synthesis: the prover's input. Plain synthesis leaves the full
/// assignment, a, b, c included; the pre-compiled (PCE) path leaves the witness only, aux
/// compact (2 bits per 0/1 value, ~2 % of its plain size at 32 GiB), so a partition waiting
/// for a prover holds ~90 MB instead of 4–16 GB. [`prove`] turns it into the form the
/// backend takes.
pub struct SynthesizedPartition {
    pub index: usize,
    pub witness: Witness,
    pub public_inputs: Vec<Fr>,
    pub synthesis_time: Duration,
    /// When synthesis started (timelines).
    pub synthesis_start: Instant,
}

impl SynthesizedPartition {
    /// Whether the pre-compiled (PCE) path produced it.
    pub fn via_pce(&self) -> bool {
        !matches!(self.witness, Witness::Assignment(_))
    }

    /// Constraints of the circuit (input rows included).
    pub fn num_constraints(&self) -> usize {
        self.witness.num_constraints()
    }

    /// Heap bytes held while waiting for a prover (a, b, c and the witness dominate).
    pub fn heap_bytes(&self) -> u64 {
        self.witness.heap_bytes()
    }
}

/// A partition's proof before verification.
pub struct ProvedPartition {
    pub index: usize,
    pub proof: Proof,
    pub public_inputs: Vec<Fr>,
    pub synthesis_time: Duration,
    pub prove_timings: ProveTimings,
}

/// Run the circuit and check that the public inputs it allocated are the ones the request
/// implies. A mismatch means the inputs are inconsistent, and it is caught here, before any
/// proving time is spent on a proof that cannot verify.
///
/// With `pce`, only the witness is computed (a, b, c come from the pre-compiled matrices at
/// the prover stage, bit-identical to plain synthesis); without, the circuit is synthesized
/// in full.
pub fn synthesize(partition: Partition, pce: Option<&Arc<PreCompiled>>) -> Result<SynthesizedPartition, EngineError> {
    let start = Instant::now();
    let Partition { index, circuit, public_inputs } = partition;
    let synthesis_error = |message: String| EngineError::Synthesis { partition: index, message };
    // Some storage-proofs gadgets assert on inconsistent witnesses instead of returning an
    // error; that is bad input, and must not take the worker (or the daemon) down.
    let witness = match pce {
        None => {
            let assignment = catch_panic(|| circuit.synthesize())
                .map_err(|m| synthesis_error(format!("circuit panicked: {m}")))?
                .map_err(|e| synthesis_error(e.to_string()))?;
            Witness::Assignment(assignment)
        }
        Some(pc) => {
            let (inputs, aux) = catch_panic(|| circuit.witness_compact(pc.num_inputs, pc.num_aux))
                .map_err(|m| synthesis_error(format!("circuit panicked: {m}")))?
                .map_err(|e| synthesis_error(witness_error_message(e)))?;
            pc.check_witness_len(inputs.len(), aux.len()).map_err(|e| synthesis_error(e.to_string()))?;
            tracing::debug!(
                partition = index,
                witness_ms = start.elapsed().as_millis() as u64,
                stored_in_full = aux.num_others(),
                of = aux.len(),
                "PCE witness"
            );
            Witness::Compact { inputs, aux, matrices: pc.clone() }
        }
    };
    if witness.inputs().get(1..) != Some(&public_inputs[..]) {
        return Err(EngineError::PublicInputMismatch { partition: index });
    }
    Ok(SynthesizedPartition { index, witness, public_inputs, synthesis_time: start.elapsed(), synthesis_start: start })
}

/// A witness error as the job reports it: a native witness that found the request's data
/// inconsistent says so in an `InvalidData` I/O error (SynthesisError has no variant with a
/// message), reported as its message alone.
fn witness_error_message<E: std::error::Error + 'static>(e: E) -> String {
    match std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>()) {
        Some(io) if io.kind() == std::io::ErrorKind::InvalidData => io.to_string(),
        _ => e.to_string(),
    }
}

/// Prove one synthesized partition with fresh randomness. `label` names its job in the
/// backend's device status. This is the one place a witness changes form on its way to a
/// backend: a compact witness goes to a backend that expands it on its device as it is, or is
/// expanded here (timed as `witness_expand`) and its a, b, c evaluated by the backend on its
/// device, or here on the host (timed as `matvec`).
pub fn prove(
    backend: &dyn ProverBackend,
    srs: &LoadedSrs,
    s: SynthesizedPartition,
    label: &WorkLabel,
) -> Result<ProvedPartition, EngineError> {
    let SynthesizedPartition { index, witness, public_inputs, synthesis_time, .. } = s;
    let rs = Randomness::random(&mut rand::rngs::OsRng);
    let proved = catch_panic(|| -> Result<(Proof, ProveTimings), EngineError> {
        let started = Instant::now();
        let (witness, change) = witness
            .into_accepted(backend.accepts())
            .map_err(|e| EngineError::Internal(format!("partition {index}: {e}")))?;
        let (proof, mut t) = backend
            .prove(&srs.srs, witness, rs, label)
            .map_err(|source| EngineError::Prove { partition: index, source })?;
        t.witness_expand = change.witness_expand;
        t.matvec += change.matvec;
        t.total = started.elapsed();
        Ok((proof, t))
    })
    .map_err(|m| EngineError::Internal(format!("partition {index}: prover panicked: {m}")))??;
    let (proof, prove_timings) = proved;
    Ok(ProvedPartition { index, proof, public_inputs, synthesis_time, prove_timings })
}

/// A job's proof, assembled: the bytes filecoin-proofs would return, and whether they were
/// verified.
pub struct Assembled {
    /// Concatenated 192-byte partition proofs, in partition order.
    pub proof: Vec<u8>,
    pub verification: Verification,
}

/// Verify every partition proof and concatenate them in partition order. Any invalid
/// partition fails the whole job with the list of valid ones.
///
/// With synthetic parameters (`srs.synthetic`) nothing can verify: verification is skipped,
/// loudly, and the result says so (`Verification::SkippedSynthetic`) — it is never reported
/// as verified.
pub fn verify_and_assemble(
    srs: &LoadedSrs,
    mut proved: Vec<ProvedPartition>,
    total: usize,
) -> Result<Assembled, EngineError> {
    proved.sort_by_key(|p| p.index);
    if proved.len() != total || proved.iter().enumerate().any(|(i, p)| p.index != i) {
        return Err(EngineError::Internal(format!("assembling {} of {total} partitions", proved.len())));
    }
    let proof = proved.iter().flat_map(|p| p.proof.to_bytes()).collect();
    if srs.srs.synthetic {
        tracing::warn!(circuit = %srs.circuit, partitions = total, parameters = %srs.srs.path.display(),
            "proof made with SYNTHETIC parameters: verification skipped; the proof is UNVERIFIED and cannot verify");
        return Ok(Assembled { proof, verification: Verification::SkippedSynthetic });
    }
    let checks: Vec<bool> = proved
        .iter()
        .map(|p| srs.pvk.verify(&p.proof, &p.public_inputs).map_err(|e| EngineError::Internal(e.to_string())))
        .collect::<Result<_, _>>()?;
    if checks.iter().any(|ok| !ok) {
        let valid = checks.iter().enumerate().filter(|(_, ok)| **ok).map(|(i, _)| i).collect();
        return Err(EngineError::InvalidProof { valid, total });
    }
    Ok(Assembled { proof, verification: Verification::Verified })
}
