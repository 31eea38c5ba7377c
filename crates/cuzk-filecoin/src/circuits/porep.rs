//! PoRep C2 (SealCommit phase 2): C1 output → one StackedDRG circuit per partition.
//!
//! Accepts Curio's envelope `{"SectorNum", "Phase1Out": base64(C1 JSON), "SectorSize"}` or
//! the bare filecoin-proofs-api `SealCommitPhase1Output` JSON.

use blstrs::Scalar as Fr;
use filecoin_hashers::Domain;
use filecoin_proofs::constants::{DefaultPieceDomain, DefaultPieceHasher};
use filecoin_proofs::parameters::setup_params;
use filecoin_proofs::{as_safe_commitment, with_shape, VanillaSealProof};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::RegisteredSealProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

use super::native_witness::porep::PartitionInputs;
use super::{check_merkle_path, circuit_error, Partition, WithNativeWitness};
use crate::error::InputError;
use crate::request::ProofRequest;

#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    _sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// Decode the C1 bytes (envelope or bare JSON) into filecoin-proofs-api's C1 output.
pub fn decode_c1(bytes: &[u8], requested_size: u64) -> Result<SealCommitPhase1Output, InputError> {
    use base64::Engine as _;
    let json = match serde_json::from_slice::<Envelope>(bytes) {
        Ok(env) => {
            if requested_size != 0 && env.sector_size != requested_size {
                return Err(InputError::EnvelopeSectorSizeMismatch {
                    envelope: env.sector_size,
                    requested: requested_size,
                });
            }
            base64::engine::general_purpose::STANDARD
                .decode(env.phase1_out.as_bytes())
                .map_err(|e| InputError::BadC1Base64(e.to_string()))?
        }
        // Not an envelope: the bytes should be the C1 JSON itself.
        Err(e) if e.is_data() => bytes.to_vec(),
        Err(e) => return Err(InputError::BadC1Json(e.to_string())),
    };
    serde_json::from_slice(&json).map_err(|e| InputError::BadC1Json(e.to_string()))
}

pub(super) fn prepare(registered: RegisteredSealProof, req: &ProofRequest) -> Result<Vec<Partition>, InputError> {
    let c1 = decode_c1(&req.vanilla_proof, req.sector_size)?;
    if c1.registered_proof != registered {
        return Err(InputError::RegisteredProofMismatch {
            in_c1: format!("{:?}", c1.registered_proof),
            requested: format!("{registered:?} (registered_proof {})", req.registered_proof),
        });
    }
    for (name, v) in [("comm_d", &c1.comm_d), ("comm_r", &c1.comm_r), ("seed", &c1.seed)] {
        if *v == [0u8; 32] {
            return Err(InputError::Invalid { what: name, reason: "all zero in C1 output".into() });
        }
    }
    let size = u64::from(registered.sector_size());
    with_shape!(size, prepare_shaped, registered, c1)
}

fn prepare_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredSealProof,
    c1: SealCommitPhase1Output,
) -> Result<Vec<Partition>, InputError> {
    let (sector, vanilla) = Sector::<Tree>::decode(registered, c1)?;
    vanilla.iter().enumerate().map(|(k, proofs)| sector.partition(k, proofs)).collect()
}

/// Refuse vanilla proofs larger than the registered proof's circuit, before any circuit is
/// built: each partition has exactly the proof's challenges, and each challenge the proof's
/// layers, parents and Merkle path lengths. storage-proofs would build a bigger circuit from
/// whatever it is given (a C1 with 50× the challenges would be synthesized in full).
fn check_vanilla_shape<Tree: 'static + MerkleTreeTrait>(
    vp: &stacked::PublicParams<Tree>,
    sector_size: u64,
    vanilla: &[Vec<VanillaSealProof<Tree>>],
) -> Result<(), InputError> {
    use storage_proofs_core::drgraph::Graph;
    let challenges = vp.challenges.num_challenges_per_partition();
    if let Some(p) = vanilla.iter().find(|p| p.len() != challenges) {
        return Err(InputError::WrongCount {
            what: "challenges (vanilla proofs) in each C1 partition",
            expected: challenges.to_string(),
            got: p.len(),
        });
    }
    let nodes = (sector_size / 32) as usize;
    let (drg, exp) = (vp.graph.base_graph().degree(), vp.graph.expansion_degree());
    let what = "C1 vanilla proofs";
    for proof in vanilla.iter().flatten() {
        let columns = &proof.replica_column_proofs;
        let counts = [
            ("labelling proofs (layers)", proof.labeling_proofs.len(), vp.num_layers),
            ("DRG parent columns", columns.drg_parents.len(), drg),
            ("expander parent columns", columns.exp_parents.len(), exp),
        ];
        if let Some((name, got, expected)) = counts.into_iter().find(|(_, got, expected)| got != expected) {
            return Err(InputError::Invalid {
                what,
                reason: format!("a challenge has {got} {name}; the registered proof has {expected}"),
            });
        }
        check_merkle_path(what, &proof.comm_d_proofs, nodes)?;
        check_merkle_path(what, &proof.comm_r_last_proof, nodes)?;
    }
    Ok(())
}

/// What every partition of one sector's C2 shares.
pub(crate) struct Sector<Tree: 'static + MerkleTreeTrait> {
    public_inputs: stacked::PublicInputs<<Tree::Hasher as filecoin_hashers::Hasher>::Domain, DefaultPieceDomain>,
    vanilla_params: stacked::PublicParams<Tree>,
}

/// Each partition's vanilla proofs, in partition order.
type PartitionProofs<Tree> = Vec<Vec<VanillaSealProof<Tree>>>;

impl<Tree: 'static + MerkleTreeTrait> Sector<Tree> {
    /// The sector's public inputs and parameters, and the vanilla proofs of each partition.
    pub(crate) fn decode(
        registered: RegisteredSealProof,
        c1: SealCommitPhase1Output,
    ) -> Result<(Self, PartitionProofs<Tree>), InputError> {
        let config = registered.as_v1_config();
        let partitions = usize::from(config.partitions);
        let vanilla: Vec<Vec<VanillaSealProof<Tree>>> = c1
            .vanilla_proofs
            .try_into()
            .map_err(|e: anyhow::Error| InputError::Invalid { what: "C1 vanilla proofs", reason: format!("{e:#}") })?;
        if vanilla.len() != partitions || vanilla.iter().any(|p| p.is_empty()) {
            return Err(InputError::WrongCount {
                what: "non-empty partitions of vanilla proofs in C1",
                expected: partitions.to_string(),
                got: vanilla.iter().filter(|p| !p.is_empty()).count(),
            });
        }

        let comm_r = as_safe_commitment::<<Tree::Hasher as filecoin_hashers::Hasher>::Domain, _>(&c1.comm_r, "comm_r")
            .map_err(|e| InputError::BadFieldElement { name: "comm_r", reason: format!("{e:#}") })?;
        let comm_d = DefaultPieceDomain::try_from_bytes(&c1.comm_d)
            .map_err(|e| InputError::BadFieldElement { name: "comm_d", reason: format!("{e:#}") })?;
        let replica_id: Fr = c1.replica_id.into();
        let public_inputs = stacked::PublicInputs {
            replica_id: replica_id.into(),
            tau: Some(stacked::Tau { comm_d, comm_r }),
            k: None,
            seed: Some(c1.seed),
        };
        let setup = compound_proof::SetupParams {
            vanilla_params: setup_params(&config).map_err(circuit_error("PoRep setup"))?,
            partitions: Some(partitions),
            priority: false,
        };
        let pp = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::setup(&setup)
        .map_err(circuit_error("PoRep setup"))?;
        check_vanilla_shape(&pp.vanilla_params, u64::from(config.sector_size), &vanilla)?;
        Ok((Sector { public_inputs, vanilla_params: pp.vanilla_params }, vanilla))
    }

    /// Partition `k` from its vanilla proofs (one per challenge).
    #[allow(clippy::ptr_arg)] // storage-proofs' `circuit` takes a `&Vec`
    pub(crate) fn partition(&self, k: usize, proofs: &Vec<VanillaSealProof<Tree>>) -> Result<Partition, InputError> {
        let tau = self.public_inputs.tau.as_ref().expect("decode sets tau");
        let native =
            PartitionInputs::new(self.public_inputs.replica_id.into(), tau.comm_d.into(), tau.comm_r.into(), proofs)
                .map_err(|reason| InputError::Invalid { what: "C1 vanilla proofs", reason })?;
        let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::circuit(
            &self.public_inputs,
            (),
            proofs,
            &self.vanilla_params,
            Some(k),
        )
        .map_err(circuit_error("PoRep partition circuit"))?;
        let public_inputs = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::generate_public_inputs(
            &self.public_inputs,
            &self.vanilla_params,
            Some(k),
        )
        .map_err(circuit_error("PoRep public inputs"))?;
        Ok(Partition { index: k, circuit: Box::new(WithNativeWitness { circuit, native }), public_inputs })
    }
}
