//! The stages one partition goes through — synthesize, prove, verify — and the assembly of a
//! job's partition proofs into the bytes filecoin-proofs would return (verified, or flagged
//! unverified when the parameters are synthetic). The in-process engine
//! and the daemon's scheduler both run proofs through these functions; only the scheduling
//! around them differs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_filecoin::{catch_panic, Partition};
use cuzk_groth16::{Fr, Proof, ProveTimings, ProverBackend, ProvingAssignment, Randomness, WorkLabel};
use cuzk_pce::PreCompiled;

use crate::error::EngineError;
use crate::srs_cache::LoadedSrs;
use crate::synthetic::Verification;

/// A partition after synthesis: the prover's input.
pub struct SynthesizedPartition {
    pub index: usize,
    pub assignment: ProvingAssignment,
    pub public_inputs: Vec<Fr>,
    pub synthesis_time: Duration,
    /// When synthesis started (timelines).
    pub synthesis_start: Instant,
    /// Whether the pre-compiled (PCE) path produced it.
    pub via_pce: bool,
    /// Set when a, b, c were left for the backend to evaluate from these matrices on its
    /// device (the assignment then holds the witness and densities only).
    pub deferred_matrices: Option<Arc<PreCompiled>>,
}

impl SynthesizedPartition {
    /// Constraints of the circuit (input rows included), also when a, b, c were deferred to
    /// the backend.
    pub fn num_constraints(&self) -> usize {
        self.deferred_matrices.as_ref().map_or(self.assignment.num_constraints(), |pc| pc.num_constraints)
    }

    /// Approximate heap bytes held (a, b, c and the witness dominate).
    pub fn heap_bytes(&self) -> u64 {
        let w = &self.assignment;
        (32 * (w.a.len() + w.b.len() + w.c.len() + w.input_assignment.len() + w.aux_assignment.len())) as u64
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

/// Run the circuit into a proving assignment and check that the public inputs it allocated
/// are the ones the request implies. A mismatch means the inputs are inconsistent, and it is
/// caught here, before any proving time is spent on a proof that cannot verify.
///
/// With `pce`, only the witness is computed and a, b, c come from the pre-compiled matrices
/// (bit-identical to plain synthesis) — on the CPU here, or, with `defer_matvec` (a backend
/// that evaluates matrices itself), later on the device; without, the circuit is
/// synthesized in full.
pub fn synthesize(partition: Partition, pce: Option<&Arc<PreCompiled>>, defer_matvec: bool) -> Result<SynthesizedPartition, EngineError> {
    let start = Instant::now();
    let Partition { index, circuit, public_inputs } = partition;
    let synthesis_error = |message: String| EngineError::Synthesis { partition: index, message };
    // Some storage-proofs gadgets assert on inconsistent witnesses instead of returning an
    // error; that is bad input, and must not take the worker (or the daemon) down.
    let (assignment, deferred_matrices) = match pce {
        None => {
            let assignment = catch_panic(|| circuit.synthesize())
                .map_err(|m| synthesis_error(format!("circuit panicked: {m}")))?
                .map_err(|e| synthesis_error(e.to_string()))?;
            (assignment, None)
        }
        Some(pc) => {
            let (inputs, aux) = catch_panic(|| circuit.witness_sized(pc.num_inputs, pc.num_aux))
                .map_err(|m| synthesis_error(format!("circuit panicked: {m}")))?
                .map_err(|e| synthesis_error(e.to_string()))?;
            if defer_matvec {
                let w = cuzk_pce::witness_assignment(pc, inputs, aux).map_err(|e| synthesis_error(e.to_string()))?;
                (w, Some(pc.clone()))
            } else {
                let witness_time = start.elapsed();
                let assignment = cuzk_pce::evaluate(pc, inputs, aux).map_err(|e| synthesis_error(e.to_string()))?;
                tracing::debug!(partition = index, witness_ms = witness_time.as_millis() as u64,
                    matvec_ms = (start.elapsed() - witness_time).as_millis() as u64, "PCE synthesis");
                (assignment, None)
            }
        }
    };
    if assignment.input_assignment.get(1..) != Some(&public_inputs[..]) {
        return Err(EngineError::PublicInputMismatch { partition: index });
    }
    Ok(SynthesizedPartition { index, assignment, public_inputs, synthesis_time: start.elapsed(), synthesis_start: start, via_pce: pce.is_some(), deferred_matrices })
}

/// Prove one synthesized partition with fresh randomness. `label` names its job in the
/// backend's device status.
pub fn prove(backend: &dyn ProverBackend, srs: &LoadedSrs, s: SynthesizedPartition, label: &WorkLabel) -> Result<ProvedPartition, EngineError> {
    let SynthesizedPartition { index, assignment, public_inputs, synthesis_time, deferred_matrices, .. } = s;
    let rs = Randomness::random(&mut rand::rngs::OsRng);
    let (proof, prove_timings) = catch_panic(|| match &deferred_matrices {
        Some(pc) => backend.prove_witness(&srs.srs, &**pc, assignment, rs, label),
        None => backend.prove(&srs.srs, assignment, rs, label),
    })
        .map_err(|m| EngineError::Internal(format!("partition {index}: prover panicked: {m}")))?
        .map_err(|source| EngineError::Prove { partition: index, source })?;
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
pub fn verify_and_assemble(srs: &LoadedSrs, mut proved: Vec<ProvedPartition>, total: usize) -> Result<Assembled, EngineError> {
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
