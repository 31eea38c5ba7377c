//! SnapDeals (empty sector update): bincode `PartitionProof` vanilla proofs + comm_r_old /
//! comm_r_new / comm_d_new → one EmptySectorUpdate circuit per partition, with its native
//! witness (`native_witness::snap`).

use filecoin_hashers::Domain;
use filecoin_proofs::constants::DefaultPieceDomain;
use filecoin_proofs::{with_shape, SectorUpdateConfig};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof, PublicInputs, SetupParams,
};

use super::native_witness::snap::SnapInputs;
use super::{bincode_error, circuit_error, Partition, WithNativeWitness};
use crate::error::InputError;
use crate::request::{commitment, ProofRequest};

pub(super) fn prepare(registered: RegisteredUpdateProof, req: &ProofRequest) -> Result<Vec<Partition>, InputError> {
    let size = u64::from(registered.sector_size());
    with_shape!(size, prepare_shaped, registered, req)
}

/// SnapDeals is only defined over Poseidon trees; `with_shape!` hands us a generic shape, so
/// re-spell it with the update's hasher (the same type for every real shape).
pub(crate) type SnapTree<Tree> = storage_proofs_core::merkle::LCTree<
    TreeRHasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

fn prepare_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredUpdateProof,
    req: &ProofRequest,
) -> Result<Vec<Partition>, InputError> {
    circuits::<Tree>(registered, req)?
        .into_iter()
        .map(|(k, circuit, inputs)| {
            let native = SnapInputs::new(&circuit)
                .map_err(|reason| InputError::Invalid { what: "SnapDeals partition circuit", reason })?;
            Ok(Partition { index: k, circuit: Box::new(WithNativeWitness { circuit, native }), public_inputs: inputs })
        })
        .collect()
}

/// Each partition's index, storage-proofs-update's circuit and its public inputs.
#[allow(clippy::type_complexity)]
pub(crate) fn circuits<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredUpdateProof,
    req: &ProofRequest,
) -> Result<Vec<(usize, EmptySectorUpdateCircuit<SnapTree<Tree>>, Vec<blstrs::Scalar>)>, InputError> {
    let field = |name: &'static str, bytes: &[u8]| -> Result<[u8; 32], InputError> { commitment(name, bytes) };
    let comm_r_old = field("comm_r_old", &req.comm_r_old)?;
    let comm_r_new = field("comm_r_new", &req.comm_r_new)?;
    let comm_d_new = field("comm_d_new", &req.comm_d_new)?;
    let fe =
        |name: &'static str| move |e: anyhow::Error| InputError::BadFieldElement { name, reason: format!("{e:#}") };
    let comm_r_old =
        <TreeRHasher as filecoin_hashers::Hasher>::Domain::try_from_bytes(&comm_r_old).map_err(fe("comm_r_old"))?;
    let comm_r_new =
        <TreeRHasher as filecoin_hashers::Hasher>::Domain::try_from_bytes(&comm_r_new).map_err(fe("comm_r_new"))?;
    let comm_d_new = DefaultPieceDomain::try_from_bytes(&comm_d_new).map_err(fe("comm_d_new"))?;

    let config = SectorUpdateConfig::from_porep_config(&registered.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    if req.vanilla_proofs.len() != partitions {
        return Err(InputError::WrongCount {
            what: "SnapDeals partition vanilla proofs",
            expected: partitions.to_string(),
            got: req.vanilla_proofs.len(),
        });
    }
    let vanilla = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize::<PartitionProof<SnapTree<Tree>>>(b).map_err(bincode_error(
                "vanilla partition proof",
                i,
                "PartitionProof",
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;

    // Counts before verification, so an oversized proof gets a clear message (the vanilla
    // verifier below refuses it too, but only as "does not verify").
    let nodes = (u64::from(config.sector_size) / 32) as usize;
    let challenges = storage_proofs_update::constants::challenge_count(nodes);
    let apex_leaves = storage_proofs_update::constants::apex_leaf_count(nodes);
    for p in &vanilla {
        if p.challenge_proofs.len() != challenges {
            return Err(InputError::WrongCount {
                what: "challenges per SnapDeals partition proof",
                expected: challenges.to_string(),
                got: p.challenge_proofs.len(),
            });
        }
        if p.apex_leafs.len() != apex_leaves {
            return Err(InputError::WrongCount {
                what: "apex leaves per SnapDeals partition proof",
                expected: apex_leaves.to_string(),
                got: p.apex_leafs.len(),
            });
        }
    }
    let public_inputs = PublicInputs { k: partitions, comm_r_old, comm_d_new, comm_r_new, h: config.h };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams { sector_bytes: u64::from(config.sector_size) },
        partitions: Some(partitions),
        priority: false,
    };
    let pp = EmptySectorUpdateCompound::<SnapTree<Tree>>::setup(&setup).map_err(circuit_error("SnapDeals setup"))?;
    // Check the vanilla proofs against the commitments now (cheap next to proving): an
    // inconsistent request is refused at submit instead of failing deep inside synthesis.
    let consistent =
        EmptySectorUpdate::<SnapTree<Tree>>::verify_all_partitions(&pp.vanilla_params, &public_inputs, &vanilla)
            .map_err(circuit_error("SnapDeals vanilla proofs"))?;
    if !consistent {
        return Err(InputError::Invalid {
            what: "SnapDeals vanilla proofs",
            reason: "they do not verify against comm_r_old / comm_r_new / comm_d_new".into(),
        });
    }
    vanilla
        .iter()
        .enumerate()
        .map(|(k, proof)| {
            let circuit = <EmptySectorUpdateCompound<SnapTree<Tree>> as CompoundProof<_, _>>::circuit(
                &public_inputs,
                (),
                proof,
                &pp.vanilla_params,
                Some(k),
            )
            .map_err(circuit_error("SnapDeals partition circuit"))?;
            let inputs = <EmptySectorUpdateCompound<SnapTree<Tree>> as CompoundProof<_, _>>::generate_public_inputs(
                &public_inputs,
                &pp.vanilla_params,
                Some(k),
            )
            .map_err(circuit_error("SnapDeals public inputs"))?;
            Ok((k, circuit, inputs))
        })
        .collect()
}
