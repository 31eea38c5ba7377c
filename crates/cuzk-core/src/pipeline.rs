//! The stages one partition goes through — synthesize, prove, verify — and the assembly of a
//! job's partition proofs into the bytes filecoin-proofs would return (verified, or flagged
//! unverified when the parameters are synthetic). The in-process engine
//! and the daemon's scheduler both run proofs through these functions; only the scheduling
//! around them differs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_filecoin::{catch_panic, Partition};
use cuzk_groth16::{Fr, Proof, ProveTimings, ProverBackend, ProvingAssignment, Randomness, WorkLabel};
use cuzk_pce::{CompactFrVec, PreCompiled};

use crate::error::EngineError;
use crate::srs_cache::LoadedSrs;
use crate::synthetic::Verification;

/// What synthesis leaves for the prover.
pub enum Synthesized {
    /// Plain synthesis: the full proving assignment, a, b, c included.
    Full(ProvingAssignment),
    /// The pre-compiled (PCE) path: the witness only, aux compact (2 bits per 0/1 value, ~2 %
    /// of its plain size at 32 GiB). The prover stage expands it and evaluates a, b, c from
    /// the matrices — on the host, or on the device for a backend that evaluates matrices —
    /// so a partition waiting for a prover holds ~90 MB instead of 4–16 GB.
    Witness { inputs: Vec<Fr>, aux: CompactFrVec, matrices: Arc<PreCompiled> },
}

/// A partition after synthesis: the prover's input.
pub struct SynthesizedPartition {
    pub index: usize,
    pub work: Synthesized,
    pub public_inputs: Vec<Fr>,
    pub synthesis_time: Duration,
    /// When synthesis started (timelines).
    pub synthesis_start: Instant,
}

impl SynthesizedPartition {
    /// Whether the pre-compiled (PCE) path produced it.
    pub fn via_pce(&self) -> bool {
        matches!(self.work, Synthesized::Witness { .. })
    }

    /// Constraints of the circuit (input rows included).
    pub fn num_constraints(&self) -> usize {
        match &self.work {
            Synthesized::Full(a) => a.num_constraints(),
            Synthesized::Witness { matrices, .. } => matrices.num_constraints,
        }
    }

    /// Heap bytes held while waiting for a prover (a, b, c and the witness dominate).
    pub fn heap_bytes(&self) -> u64 {
        match &self.work {
            Synthesized::Full(w) => (32 * (w.a.len() + w.b.len() + w.c.len() + w.input_assignment.len() + w.aux_assignment.len())) as u64,
            Synthesized::Witness { inputs, aux, .. } => 32 * inputs.len() as u64 + aux.heap_bytes(),
        }
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
    let work = match pce {
        None => {
            let assignment = catch_panic(|| circuit.synthesize())
                .map_err(|m| synthesis_error(format!("circuit panicked: {m}")))?
                .map_err(|e| synthesis_error(e.to_string()))?;
            Synthesized::Full(assignment)
        }
        Some(pc) => {
            let (inputs, aux) = catch_panic(|| circuit.witness_compact(pc.num_inputs, pc.num_aux))
                .map_err(|m| synthesis_error(format!("circuit panicked: {m}")))?
                .map_err(|e| synthesis_error(witness_error_message(e)))?;
            pc.check_witness_len(inputs.len(), aux.len()).map_err(|e| synthesis_error(e.to_string()))?;
            tracing::debug!(partition = index, witness_ms = start.elapsed().as_millis() as u64,
                stored_in_full = aux.num_others(), of = aux.len(), "PCE witness");
            Synthesized::Witness { inputs, aux, matrices: pc.clone() }
        }
    };
    let inputs = match &work {
        Synthesized::Full(a) => &a.input_assignment,
        Synthesized::Witness { inputs, .. } => inputs,
    };
    if inputs.get(1..) != Some(&public_inputs[..]) {
        return Err(EngineError::PublicInputMismatch { partition: index });
    }
    Ok(SynthesizedPartition { index, work, public_inputs, synthesis_time: start.elapsed(), synthesis_start: start })
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
/// backend's device status. A compact witness goes to a backend that expands it on its
/// device as it is, or is expanded here (timed as `witness_expand`) and its a, b, c
/// evaluated by the backend on its device, or here on the host (timed as `matvec`).
pub fn prove(backend: &dyn ProverBackend, srs: &LoadedSrs, s: SynthesizedPartition, label: &WorkLabel) -> Result<ProvedPartition, EngineError> {
    let SynthesizedPartition { index, work, public_inputs, synthesis_time, .. } = s;
    let rs = Randomness::random(&mut rand::rngs::OsRng);
    let internal = |e: cuzk_pce::PceError| EngineError::Internal(format!("partition {index}: {e}"));
    let prove_error = |source| EngineError::Prove { partition: index, source };
    let proved = catch_panic(|| -> Result<(Proof, ProveTimings), EngineError> {
        match work {
            Synthesized::Full(assignment) => backend.prove(&srs.srs, assignment, rs, label).map_err(prove_error),
            Synthesized::Witness { inputs, aux, matrices } if backend.evaluates_matrices() && backend.expands_compact_witness() => {
                // The backend takes the witness as it waits, compact, and expands it on its
                // device: the full aux vector never exists on the host.
                let started = Instant::now();
                let (proof, mut t) = backend.prove_compact(&srs.srs, &*matrices, inputs, aux, rs, label).map_err(prove_error)?;
                t.total = started.elapsed();
                Ok((proof, t))
            }
            Synthesized::Witness { inputs, aux, matrices } => {
                let started = Instant::now();
                let aux = aux.to_vec();
                let expanded = Instant::now();
                let (witness_expand, on_device) = (expanded - started, backend.evaluates_matrices());
                let (result, host_matvec) = if on_device {
                    let w = cuzk_pce::witness_assignment(&matrices, inputs, aux).map_err(internal)?;
                    (backend.prove_witness(&srs.srs, &*matrices, w, rs, label), Duration::ZERO)
                } else {
                    let w = cuzk_pce::evaluate(&matrices, inputs, aux).map_err(internal)?;
                    let matvec = expanded.elapsed();
                    (backend.prove(&srs.srs, w, rs, label), matvec)
                };
                let (proof, mut t) = result.map_err(prove_error)?;
                t.witness_expand = witness_expand;
                t.matvec += host_matvec;
                t.total = started.elapsed();
                Ok((proof, t))
            }
        }
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
