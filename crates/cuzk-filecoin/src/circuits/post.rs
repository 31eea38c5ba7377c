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
use filecoin_proofs::{as_safe_commitment, partition_vanilla_proofs, with_shape, FallbackPoStSectorProof, PoStConfig};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_post::fallback::{
    self, generate_leaf_challenge, get_challenge_index, FallbackPoStCircuit, FallbackPoStCompound, PublicSector, Sector,
};

use super::native_witness::post::PostInputs;
use super::{bincode_error, check_merkle_path, circuit_error, Partition, WithNativeWitness};
use crate::decode_pool;
use crate::error::InputError;
use crate::request::{post_randomness, prover_id_from_miner, ProofRequest};

pub(super) fn prepare_winning(
    registered: RegisteredPoStProof,
    req: &ProofRequest,
) -> Result<Vec<Partition>, InputError> {
    let size = u64::from(registered.sector_size());
    with_shape!(size, prepare_shaped, registered, req, false)
}

pub(super) fn prepare_window(
    registered: RegisteredPoStProof,
    req: &ProofRequest,
) -> Result<Vec<Partition>, InputError> {
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
    // Every sector opens exactly the registered proof's challenges along full-depth paths
    // (sector counts are checked below, per PoSt type), before any circuit is built.
    let nodes = (u64::from(config.sector_size) / 32) as usize;
    let vanilla = decode_pool::try_map(&req.vanilla_proofs, |i, bytes| {
        decode_sector::<Tree>(i, bytes, config.challenge_count, nodes)
    })?;
    let k = window.then_some(req.partition_index as usize);
    let pub_inputs = public_inputs::<Tree>(req, &vanilla, k)?;

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
        let verify_sectors = pub_inputs.sectors.clone();
        let setup = compound_proof::SetupParams {
            vanilla_params: window_post_setup_params(&config),
            partitions: None,
            priority: false,
        };
        let pp = FallbackPoStCompound::<Tree>::setup(&setup).map_err(circuit_error("WindowPoSt setup"))?;
        let proof = window_partition_proof(&pub_inputs.sectors, vanilla, config.sector_count);
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
        let setup = compound_proof::SetupParams {
            vanilla_params: winning_post_setup_params(&config).map_err(circuit_error("WinningPoSt setup"))?,
            partitions: None,
            priority: false,
        };
        let pp = FallbackPoStCompound::<Tree>::setup(&setup).map_err(circuit_error("WinningPoSt setup"))?;
        let mut proofs = partition_vanilla_proofs(&config, &pp.vanilla_params, &pub_inputs, 1, &vanilla)
            .map_err(circuit_error("WinningPoSt vanilla proofs"))?;
        if proofs.len() != 1 {
            return Err(InputError::WrongCount {
                what: "WinningPoSt partitions",
                expected: "1".into(),
                got: proofs.len(),
            });
        }
        let repeated = (0..pp.vanilla_params.sector_count).flat_map(|_| pub_inputs.sectors.iter().cloned()).collect();
        (pub_inputs, pp, proofs.remove(0), repeated)
    };

    let circuit = partition_circuit::<Tree>(&pub_inputs, &partition_proof, setup.vanilla_params.sector_count)?;
    let verify_inputs = fallback::PublicInputs { sectors: verify_sectors, ..pub_inputs };
    let inputs = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::generate_public_inputs(
        &verify_inputs,
        &setup.vanilla_params,
        Some(0),
    )
    .map_err(circuit_error("PoSt public inputs"))?;
    let native = PostInputs::new(&circuit, &partition_proof)
        .map_err(|reason| InputError::Invalid { what: "PoSt vanilla proofs", reason })?;
    decode_pool::drop_later(partition_proof);
    Ok(vec![Partition { index: 0, circuit: Box::new(WithNativeWitness { circuit, native }), public_inputs: inputs }])
}

/// The statement's public side: the randomness, the miner's prover id and each vanilla
/// proof's sector (`k`: the WindowPoSt partition index; none for WinningPoSt).
fn public_inputs<Tree: MerkleTreeTrait>(
    req: &ProofRequest,
    vanilla: &[FallbackPoStSectorProof<Tree>],
    k: Option<usize>,
) -> Result<fallback::PublicInputs<<Tree::Hasher as filecoin_hashers::Hasher>::Domain>, InputError> {
    let randomness = post_randomness(&req.randomness)?;
    let randomness = as_safe_commitment(&randomness, "randomness")
        .map_err(|e| InputError::BadFieldElement { name: "randomness", reason: format!("{e:#}") })?;
    let prover_id = as_safe_commitment(&prover_id_from_miner(req.miner_id), "prover_id")
        .map_err(|e| InputError::BadFieldElement { name: "prover_id", reason: format!("{e:#}") })?;
    let sectors = vanilla.iter().map(|p| PublicSector { id: p.sector_id, comm_r: p.comm_r }).collect();
    Ok(fallback::PublicInputs { randomness, prover_id, sectors, k })
}

/// The circuit `FallbackPoStCompound::circuit` builds for partition 0 of `pub_inputs` (how
/// filecoin-proofs synthesizes the single partition it was given): each slot's
/// `Sector::circuit` of its public sector, the last one repeated where the proof pads, and the
/// prover id. Built here only to run the sectors on the decode threads (~50 ms for 2349
/// sectors on one core).
fn partition_circuit<Tree: 'static + MerkleTreeTrait>(
    pub_inputs: &fallback::PublicInputs<<Tree::Hasher as filecoin_hashers::Hasher>::Domain>,
    proof: &fallback::Proof<Tree::Proof>,
    sector_count: usize,
) -> Result<FallbackPoStCircuit<Tree>, InputError> {
    let public = &pub_inputs.sectors;
    if public.is_empty() || public.len() > sector_count || proof.sectors.len() != sector_count {
        return Err(InputError::WrongCount {
            what: "sector proofs for the PoSt circuit",
            expected: format!("{sector_count}, for 1 to {sector_count} public sectors"),
            got: proof.sectors.len(),
        });
    }
    let sectors = decode_pool::try_map(&proof.sectors, |i, sector_proof| {
        Sector::circuit(&public[i.min(public.len() - 1)], sector_proof).map_err(circuit_error("PoSt circuit"))
    })?;
    Ok(FallbackPoStCircuit { prover_id: Some(pub_inputs.prover_id.into()), sectors })
}

/// Vanilla proof `index`: one sector's (filecoin-proofs' `generate_single_vanilla_proof`),
/// opening `challenge_count` leaves of a tree of `nodes` leaves along full-depth paths, each
/// path's root the sector's comm_r_last.
fn decode_sector<Tree: 'static + MerkleTreeTrait>(
    index: usize,
    bytes: &[u8],
    challenge_count: usize,
    nodes: usize,
) -> Result<FallbackPoStSectorProof<Tree>, InputError> {
    let p = bincode::deserialize::<FallbackPoStSectorProof<Tree>>(bytes).map_err(bincode_error(
        "vanilla proof",
        index,
        "FallbackPoStSectorProof",
    ))?;
    // More sector proofs inside one would each become sectors of the circuit.
    let inner = &p.vanilla_proof.sectors;
    if inner.len() != 1 {
        return Err(InputError::WrongCount {
            what: "sector proofs inside each vanilla proof",
            expected: "1".into(),
            got: inner.len(),
        });
    }
    let openings = &inner[0].inclusion_proofs;
    if openings.len() != challenge_count {
        return Err(InputError::WrongCount {
            what: "challenge openings per sector in the vanilla proofs",
            expected: challenge_count.to_string(),
            got: openings.len(),
        });
    }
    for o in openings {
        check_merkle_path("PoSt vanilla proofs", o, nodes)?;
        if o.root() != inner[0].comm_r_last {
            return Err(InputError::Invalid {
                what: "PoSt vanilla proofs",
                reason: format!(
                    "sector {}: an inclusion proof's root is not the sector's comm_r_last",
                    u64::from(p.sector_id)
                ),
            });
        }
    }
    Ok(p)
}

/// The partition proof filecoin-proofs assembles for a WindowPoSt partition: per public
/// sector, the sector proof of the first vanilla proof with its id, the last one repeated to
/// fill the partition's `sector_count` slots. `sectors` are `vanilla`'s, in order, one sector
/// proof inside each (both checked by the caller), and there is at least one. The proofs are
/// moved, not cloned: only a repeated sector id or a repeated last slot costs a copy.
fn window_partition_proof<Tree: MerkleTreeTrait>(
    sectors: &[PublicSector<<Tree::Hasher as filecoin_hashers::Hasher>::Domain>],
    vanilla: Vec<FallbackPoStSectorProof<Tree>>,
    sector_count: usize,
) -> fallback::Proof<Tree::Proof> {
    debug_assert_eq!(sectors.len(), vanilla.len());
    let mut first = std::collections::HashMap::with_capacity(sectors.len());
    let mut proofs: Vec<fallback::SectorProof<Tree::Proof>> = Vec::with_capacity(sector_count.max(sectors.len()));
    for (i, (sector, p)) in sectors.iter().zip(vanilla).enumerate() {
        let at = *first.entry(sector.id).or_insert(i);
        if at == i {
            proofs.extend(p.vanilla_proof.sectors);
        } else {
            let earlier = proofs[at].clone();
            proofs.push(earlier);
        }
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

#[cfg(test)]
mod tests {
    use filecoin_proofs::constants::SectorShape32GiB;
    use filecoin_proofs::single_partition_vanilla_proofs;

    use super::*;
    use crate::fixtures::consistent::post::consistent_post;

    /// What a test can compare of a circuit sector (storage-proofs' `Sector` has no
    /// `PartialEq`; its fields print every value).
    fn described(c: &FallbackPoStCircuit<SectorShape32GiB>) -> Vec<String> {
        let mut all = vec![format!("{:?}", c.prover_id)];
        all.extend(c.sectors.iter().map(|s| {
            format!("{:?} {:?} {:?} {:?} {:?} {:?}", s.id, s.comm_r, s.comm_c, s.comm_r_last, s.leafs, s.paths)
        }));
        all
    }

    /// A 32 GiB WindowPoSt partition of 40 sectors takes the threaded paths (decoding, the
    /// partition proof by moves, `Sector::circuit` per slot), and what they build is what
    /// filecoin-proofs' `single_partition_vanilla_proofs` and storage-proofs'
    /// `FallbackPoStCompound::circuit` build from the same inputs, slot for slot, including
    /// the 2309 padding slots that repeat the last sector.
    #[test]
    fn a_threaded_window_partition_is_the_one_storage_proofs_builds() {
        type Tree = SectorShape32GiB;
        let registered = RegisteredPoStProof::StackedDrgWindow32GiBV1_2;
        let post = consistent_post(registered, 40, 11).unwrap();
        let req = post.request();
        let config = registered.as_v1_config();
        let nodes = (u64::from(config.sector_size) / 32) as usize;
        let vanilla = decode_pool::try_map(&req.vanilla_proofs, |i, b| {
            decode_sector::<Tree>(i, b, config.challenge_count, nodes)
        })
        .unwrap();
        let pub_inputs = public_inputs::<Tree>(&req, &vanilla, Some(0)).unwrap();
        let setup = compound_proof::SetupParams {
            vanilla_params: window_post_setup_params(&config),
            partitions: None,
            priority: false,
        };
        let pp = FallbackPoStCompound::<Tree>::setup(&setup).unwrap();

        let theirs = single_partition_vanilla_proofs(&config, &pp.vanilla_params, &pub_inputs, &vanilla).unwrap();
        let ours = window_partition_proof(&pub_inputs.sectors, vanilla, config.sector_count);
        assert_eq!(ours.sectors.len(), config.sector_count);
        assert_eq!(format!("{:?}", ours.sectors), format!("{:?}", theirs.sectors));

        let reference = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::circuit(
            &pub_inputs,
            Default::default(),
            &theirs,
            &pp.vanilla_params,
            Some(0),
        )
        .unwrap();
        let built = partition_circuit::<Tree>(&pub_inputs, &ours, config.sector_count).unwrap();
        assert_eq!(built.sectors.len(), config.sector_count);
        assert!(described(&built) == described(&reference), "the threaded circuit differs from storage-proofs'");
    }
}
