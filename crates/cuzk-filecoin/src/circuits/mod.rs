//! From a [`ProofRequest`] to per-partition circuits: decode the request for its proof type,
//! build each partition's circuit with the storage-proofs crates exactly as filecoin-proofs
//! does, and compute the public inputs each partition proof must verify against.
//!
//! The circuits are generic over the sector's Merkle tree shape; here they are type-erased
//! behind [`PartitionCircuit`] so the engine can schedule partitions of any proof type alike.

mod native_witness;
#[cfg(test)]
mod oversized_tests;
pub(crate) mod porep;
mod post;
mod snap;

use bellpepper_core::{Circuit, SynthesisError};
use cuzk_groth16::{Fr, ProvingAssignment};
use cuzk_pce::{AuxValues, CompactFrVec, PreCompiled, WitnessCs};

use crate::error::InputError;
use crate::registry::{CircuitId, Registered};
use crate::request::ProofRequest;

/// A circuit for one partition. Three ways to run it, which must agree exactly (tests check
/// that they do for every circuit type):
pub trait PartitionCircuit: Send {
    /// Plain synthesis into a proving assignment (ONE allocated, input constraints appended).
    fn synthesize(self: Box<Self>) -> Result<ProvingAssignment, SynthesisError>;
    /// Witness only, for the pre-compiled path: (inputs including ONE, aux).
    fn witness(self: Box<Self>) -> Result<(Vec<Fr>, Vec<Fr>), SynthesisError>;
    /// [`PartitionCircuit::witness`] with the aux values compact (2 bits per 0/1 value) and
    /// the vectors sized up front from the PCE matrices: what the engine keeps per partition.
    fn witness_compact(
        self: Box<Self>,
        num_inputs: usize,
        num_aux: usize,
    ) -> Result<(Vec<Fr>, CompactFrVec), SynthesisError>;
    /// Record the R1CS structure (values are never computed).
    fn extract(self: Box<Self>) -> Result<PreCompiled, SynthesisError>;
    /// [`PartitionCircuit::witness`] computed by running every gadget of the circuit, even
    /// where `witness` takes a faster native path (PoRep): the reference that path is
    /// checked and benchmarked against.
    fn witness_by_gadgets(self: Box<Self>) -> Result<(Vec<Fr>, Vec<Fr>), SynthesisError>;
}

impl<C: Circuit<Fr> + Send> PartitionCircuit for C {
    fn synthesize(self: Box<Self>) -> Result<ProvingAssignment, SynthesisError> {
        let mut cs = ProvingAssignment::new_with_one();
        (*self).synthesize(&mut cs)?;
        cs.finish();
        Ok(cs)
    }

    fn witness(self: Box<Self>) -> Result<(Vec<Fr>, Vec<Fr>), SynthesisError> {
        cuzk_pce::witness(*self)
    }

    fn witness_compact(
        self: Box<Self>,
        num_inputs: usize,
        num_aux: usize,
    ) -> Result<(Vec<Fr>, CompactFrVec), SynthesisError> {
        cuzk_pce::witness_compact(*self, num_inputs, num_aux)
    }

    fn extract(self: Box<Self>) -> Result<PreCompiled, SynthesisError> {
        cuzk_pce::extract(*self)
    }

    fn witness_by_gadgets(self: Box<Self>) -> Result<(Vec<Fr>, Vec<Fr>), SynthesisError> {
        cuzk_pce::witness(*self)
    }
}

/// A witness computed without running the circuit's gadgets (see `native_witness`).
pub(crate) trait NativeWitness: Send {
    /// Append the witness to `cs`, which holds only ONE so far.
    fn synthesize_witness<S: AuxValues>(self, cs: &mut WitnessCs<S>) -> Result<(), SynthesisError>;
}

/// A partition with a native witness: storage-proofs' circuit for plain synthesis and
/// extraction (and as the reference), `native` for the witness the engine computes.
pub(crate) struct WithNativeWitness<C, N> {
    pub circuit: C,
    pub native: N,
}

impl<C: Circuit<Fr> + Send, N: NativeWitness> WithNativeWitness<C, N> {
    fn native_witness<S: AuxValues>(self, num_inputs: usize, num_aux: usize) -> Result<(Vec<Fr>, S), SynthesisError> {
        let mut cs = WitnessCs::<S>::with_capacity(num_inputs, num_aux);
        self.native.synthesize_witness(&mut cs)?;
        Ok((cs.inputs, cs.aux))
    }
}

impl<C: Circuit<Fr> + Send, N: NativeWitness> PartitionCircuit for WithNativeWitness<C, N> {
    fn synthesize(self: Box<Self>) -> Result<ProvingAssignment, SynthesisError> {
        PartitionCircuit::synthesize(Box::new(self.circuit))
    }

    fn witness(self: Box<Self>) -> Result<(Vec<Fr>, Vec<Fr>), SynthesisError> {
        self.native_witness(1, 0)
    }

    fn witness_compact(
        self: Box<Self>,
        num_inputs: usize,
        num_aux: usize,
    ) -> Result<(Vec<Fr>, CompactFrVec), SynthesisError> {
        self.native_witness(num_inputs, num_aux)
    }

    fn extract(self: Box<Self>) -> Result<PreCompiled, SynthesisError> {
        PartitionCircuit::extract(Box::new(self.circuit))
    }

    fn witness_by_gadgets(self: Box<Self>) -> Result<(Vec<Fr>, Vec<Fr>), SynthesisError> {
        PartitionCircuit::witness_by_gadgets(Box::new(self.circuit))
    }
}

/// One partition: its circuit and the public inputs its proof is checked against.
pub struct Partition {
    pub index: usize,
    pub circuit: Box<dyn PartitionCircuit>,
    pub public_inputs: Vec<Fr>,
}

/// A request decoded and split into partitions.
pub struct PreparedProof {
    pub registered: Registered,
    pub circuit_id: CircuitId,
    pub partitions: Vec<Partition>,
}

/// Decode `req` and build its partition circuits. All input validation happens here, before
/// any expensive work: a bad request is an [`InputError`] that says what is wrong.
pub fn prepare(req: &ProofRequest) -> Result<PreparedProof, InputError> {
    // storage-proofs asserts on some malformed inputs instead of returning errors; a request
    // must never take the process down, so a panic here is reported as bad input.
    catch_panic(|| prepare_inner(req)).unwrap_or_else(|message| {
        Err(InputError::Invalid { what: "request", reason: format!("circuit construction panicked: {message}") })
    })
}

/// Run `f`, turning a panic into its message.
pub fn catch_panic<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into())
    })
}

fn prepare_inner(req: &ProofRequest) -> Result<PreparedProof, InputError> {
    let kind = req.kind.ok_or(InputError::Invalid { what: "proof_kind", reason: "unspecified".into() })?;
    let registered = Registered::resolve(kind, req.registered_proof, req.sector_size)?;
    let partitions = match registered {
        Registered::Seal(p) => porep::prepare(p, req)?,
        Registered::Winning(p) => post::prepare_winning(p, req)?,
        Registered::Window(p) => post::prepare_window(p, req)?,
        Registered::Update(p) => snap::prepare(p, req)?,
    };
    Ok(PreparedProof { registered, circuit_id: registered.circuit_id(), partitions })
}

/// Turn storage-proofs' `anyhow` errors at circuit construction into an input error: they
/// only fail on inconsistent inputs (wrong counts, mismatched sectors, bad indices).
fn circuit_error(what: &'static str) -> impl Fn(anyhow::Error) -> InputError {
    move |e| InputError::Invalid { what, reason: format!("{e:#}") }
}

/// Refuse a Merkle inclusion proof whose path is not the shape of the tree it opens (`leaves`
/// leaves): exactly the levels storage-proofs' verifier expects (`expected_len`, the check it
/// makes itself), each with the siblings of one of the tree's arities. Checked at submit, so
/// an oversized vanilla proof never becomes a circuit larger than the registered proof's.
fn check_merkle_path<P: storage_proofs_core::merkle::MerkleProofTrait>(
    what: &'static str,
    proof: &P,
    leaves: usize,
) -> Result<(), InputError> {
    use typenum::Unsigned;
    let path = proof.path();
    let expected = proof.expected_len(leaves);
    if path.len() != expected {
        return Err(InputError::Invalid {
            what,
            reason: format!("a Merkle path of {} levels; the tree has {expected}", path.len()),
        });
    }
    let arities = [P::Arity::to_usize(), P::SubTreeArity::to_usize(), P::TopTreeArity::to_usize()];
    if let Some((siblings, _)) = path.iter().find(|(siblings, _)| !arities.contains(&(siblings.len() + 1))) {
        return Err(InputError::Invalid {
            what,
            reason: format!("a Merkle path level with {} siblings; the tree's arities are {arities:?}", siblings.len()),
        });
    }
    Ok(())
}

fn bincode_error(what: &'static str, index: usize, type_name: &'static str) -> impl Fn(bincode::Error) -> InputError {
    move |e| InputError::BadBincode { what, index, type_name, reason: e.to_string() }
}
