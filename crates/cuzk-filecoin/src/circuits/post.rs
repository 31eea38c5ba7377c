//! WinningPoSt and WindowPoSt (one partition per request): bincode `FallbackPoStSectorProof`
//! vanilla proofs + randomness + miner id → one FallbackPoSt circuit.
//!
//! A WindowPoSt partition is assembled here, not by filecoin-proofs'
//! `single_partition_vanilla_proofs`: that one re-hashes every path (23,490 at 32 GiB) to
//! check them before returning, ~2 s of a deadline proof before it is queued. Here submit
//! checks what costs next to nothing: counts, path shapes, every path's root is its sector's
//! comm_r_last, and every path opens the leaf its challenge names (one SHA-256 each, so
//! vanilla proofs for another randomness or sector are refused at once). The Poseidon hashes
//! themselves are checked where the witness computes them (`native_witness::post`).

use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, partition_vanilla_proofs, with_shape, FallbackPoStSectorProof, PoStConfig,
};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_post::fallback::{self, generate_leaf_challenge, get_challenge_index, FallbackPoStCompound, PublicSector};

use super::native_witness::post::PostInputs;
use super::{bincode_error, check_merkle_path, circuit_error, Partition, WithNativeWitness};
use crate::error::InputError;
use crate::request::{post_randomness, prover_id_from_miner, ProofRequest};

pub(super) fn prepare_winning(registered: RegisteredPoStProof, req: &ProofRequest) -> Result<Vec<Partition>, InputError> {
    let size = u64::from(registered.sector_size());
    with_shape!(size, prepare_shaped, registered, req, false)
}

pub(super) fn prepare_window(registered: RegisteredPoStProof, req: &ProofRequest) -> Result<Vec<Partition>, InputError> {
    let size = u64::from(registered.sector_size());
    with_shape!(size, prepare_shaped, registered, req, true)
}

fn prepare_shaped<Tree: 'static + MerkleTreeTrait>(
    registered: RegisteredPoStProof,
    req: &ProofRequest,
    window: bool,
) -> Result<Vec<Partition>, InputError> {
    let config: PoStConfig = registered.as_v1_config();
    if req.vanilla_proofs.is_empty() {
        return Err(InputError::WrongCount { what: "vanilla proofs", expected: "at least 1".into(), got: 0 });
    }
    let vanilla = req
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize::<FallbackPoStSectorProof<Tree>>(b)
                .map_err(bincode_error("vanilla proof", i, "FallbackPoStSectorProof"))
        })
        .collect::<Result<Vec<_>, _>>()?;

    // Every sector opens exactly the registered proof's challenges along full-depth paths
    // (sector counts are checked below, per PoSt type), before any circuit is built.
    let nodes = (u64::from(config.sector_size) / 32) as usize;
    for p in &vanilla {
        // One vanilla proof is one sector's (filecoin-proofs' `generate_single_vanilla_proof`);
        // more inside one would each become sectors of the circuit.
        let inner = &p.vanilla_proof.sectors;
        if inner.len() != 1 {
            return Err(InputError::WrongCount { what: "sector proofs inside each vanilla proof", expected: "1".into(), got: inner.len() });
        }
        let openings = &inner[0].inclusion_proofs;
        if openings.len() != config.challenge_count {
            return Err(InputError::WrongCount {
                what: "challenge openings per sector in the vanilla proofs",
                expected: config.challenge_count.to_string(),
                got: openings.len(),
            });
        }
        for o in openings {
            check_merkle_path("PoSt vanilla proofs", o, nodes)?;
            if o.root() != inner[0].comm_r_last {
                return Err(InputError::Invalid {
                    what: "PoSt vanilla proofs",
                    reason: format!("sector {}: an inclusion proof's root is not the sector's comm_r_last", u64::from(p.sector_id)),
                });
            }
        }
    }
    let randomness = post_randomness(&req.randomness)?;
    let randomness = as_safe_commitment(&randomness, "randomness")
        .map_err(|e| InputError::BadFieldElement { name: "randomness", reason: format!("{e:#}") })?;
    let prover_id = as_safe_commitment(&prover_id_from_miner(req.miner_id), "prover_id")
        .map_err(|e| InputError::BadFieldElement { name: "prover_id", reason: format!("{e:#}") })?;
    let sectors = vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect();

    // `verify_sectors`: the sector list the verifier derives public inputs from. For
    // WinningPoSt, filecoin-proofs' verifier repeats the sectors to fill the circuit's
    // "sector" slots (one challenge each), while its prover passes them once and lets the
    // circuit repeat the last one; both describe the same statement.
    let (pub_inputs, setup, partition_proof, verify_sectors) = if window {
        if vanilla.len() > config.sector_count {
            return Err(InputError::WrongCount {
                what: "vanilla proofs for one WindowPoSt partition",
                expected: format!("at most {}", config.sector_count),
                got: vanilla.len(),
            });
        }
        let pub_inputs = fallback::PublicInputs {
            randomness,
            prover_id,
            sectors,
            k: Some(req.partition_index as usize),
        };
        let verify_sectors = pub_inputs.sectors.clone();
        let setup = compound_proof::SetupParams {
            vanilla_params: window_post_setup_params(&config),
            partitions: None,
            priority: false,
        };
        let pp = FallbackPoStCompound::<Tree>::setup(&setup).map_err(circuit_error("WindowPoSt setup"))?;
        let proof = window_partition_proof(&pub_inputs.sectors, &vanilla, config.sector_count);
        check_window_challenges::<Tree>(&pp.vanilla_params, &pub_inputs, &proof)?;
        (pub_inputs, pp, proof, verify_sectors)
    } else {
        if vanilla.len() != config.sector_count {
            return Err(InputError::WrongCount {
                what: "WinningPoSt vanilla proofs",
                expected: config.sector_count.to_string(),
                got: vanilla.len(),
            });
        }
        let pub_inputs = fallback::PublicInputs { randomness, prover_id, sectors, k: None };
        let setup = compound_proof::SetupParams {
            vanilla_params: winning_post_setup_params(&config).map_err(circuit_error("WinningPoSt setup"))?,
            partitions: None,
            priority: false,
        };
        let pp = FallbackPoStCompound::<Tree>::setup(&setup).map_err(circuit_error("WinningPoSt setup"))?;
        let mut proofs = partition_vanilla_proofs(&config, &pp.vanilla_params, &pub_inputs, 1, &vanilla)
            .map_err(circuit_error("WinningPoSt vanilla proofs"))?;
        if proofs.len() != 1 {
            return Err(InputError::WrongCount { what: "WinningPoSt partitions", expected: "1".into(), got: proofs.len() });
        }
        let repeated = (0..pp.vanilla_params.sector_count).flat_map(|_| pub_inputs.sectors.iter().cloned()).collect();
        (pub_inputs, pp, proofs.remove(0), repeated)
    };

    // As filecoin-proofs does, the (single) partition is synthesized as partition 0 of the
    // public inputs it was given.
    let circuit = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::circuit(
        &pub_inputs,
        Default::default(),
        &partition_proof,
        &setup.vanilla_params,
        Some(0),
    )
    .map_err(circuit_error("PoSt circuit"))?;
    let verify_inputs = fallback::PublicInputs { sectors: verify_sectors, ..pub_inputs };
    let inputs = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::generate_public_inputs(
        &verify_inputs,
        &setup.vanilla_params,
        Some(0),
    )
    .map_err(circuit_error("PoSt public inputs"))?;
    let native = PostInputs::new(&circuit, &partition_proof).map_err(|reason| InputError::Invalid { what: "PoSt vanilla proofs", reason })?;
    Ok(vec![Partition { index: 0, circuit: Box::new(WithNativeWitness { circuit, native }), public_inputs: inputs }])
}

/// The partition proof filecoin-proofs assembles for a WindowPoSt partition: per public
/// sector, the sector proof of the first vanilla proof with its id, the last one repeated to
/// fill the partition's `sector_count` slots. Every public sector is one of `vanilla`'s, and
/// there is at least one (checked by the caller).
fn window_partition_proof<Tree: MerkleTreeTrait>(
    sectors: &[PublicSector<<Tree::Hasher as filecoin_hashers::Hasher>::Domain>],
    vanilla: &[FallbackPoStSectorProof<Tree>],
    sector_count: usize,
) -> fallback::Proof<Tree::Proof> {
    let mut proofs = Vec::with_capacity(sector_count);
    for sector in sectors {
        let found = vanilla.iter().find(|p| p.sector_id == sector.id).expect("public sectors come from the vanilla proofs");
        proofs.extend(found.vanilla_proof.sectors.iter().cloned());
    }
    while proofs.len() < sector_count {
        proofs.push(proofs.last().expect("at least one sector").clone());
    }
    fallback::Proof { sectors: proofs }
}

/// Every path of the partition opens the leaf its challenge names, as filecoin-proofs' check
/// of the assembled partition requires (the challenges come from the randomness and the
/// sector id by SHA-256; only the Poseidon hashing of the paths is left to the witness).
fn check_window_challenges<Tree: MerkleTreeTrait>(
    pp: &fallback::PublicParams,
    pub_inputs: &fallback::PublicInputs<<Tree::Hasher as filecoin_hashers::Hasher>::Domain>,
    proof: &fallback::Proof<Tree::Proof>,
) -> Result<(), InputError> {
    let partition = pub_inputs.k.unwrap_or(0);
    for (i, (sector, sector_proof)) in pub_inputs.sectors.iter().zip(&proof.sectors).enumerate() {
        for (n, opening) in sector_proof.inclusion_proofs.iter().enumerate() {
            let index = get_challenge_index(pp.api_version, partition * pp.sector_count + i, pp.challenge_count, n);
            let leaf = generate_leaf_challenge(pp, pub_inputs.randomness, u64::from(sector.id), index);
            if opening.path_index() as u64 != leaf {
                return Err(InputError::Invalid {
                    what: "PoSt vanilla proofs",
                    reason: format!(
                        "sector {}: challenge {n} opens leaf {}, not the leaf {leaf} this randomness challenges \
                         (vanilla proofs for another randomness or sector?)",
                        u64::from(sector.id),
                        opening.path_index()
                    ),
                });
            }
        }
    }
    Ok(())
}
