//! The witness of one FallbackPoSt (WinningPoSt or WindowPoSt) partition, in the
//! allocation order of storage-proofs-post's circuit: per sector the three commitments,
//! comm_r = H(comm_c, comm_r_last), then each challenged leaf and its path in tree R.
//!
//! A WindowPoSt partition of 32 GiB sectors is ~2,349 sectors × 10 paths of Poseidon
//! hashes, which is what made its gadget synthesis slow. Like storage-proofs does for
//! extensible constraint systems, sectors are split into chunks computed in parallel, each
//! into its own system, and appended in order — the same witness as one sequential pass.
//!
//! It is also where a WindowPoSt request's vanilla proofs are checked: every path must hash to
//! comm_r_last and comm_r must be H(comm_c, comm_r_last), the two equalities of the circuit a
//! witness-only system does not evaluate. The hashes are computed here anyway; checking them
//! at submit as well (filecoin-proofs' partition assembly re-hashes all 23,490 paths of a
//! 32 GiB partition) cost a deadline proof ~2 s before it was queued. Which leaves the paths
//! open is checked at submit (`circuits/post.rs`).

use bellpepper_core::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_pce::{AuxValues, WitnessCs};
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{Hasher, PoseidonArity};
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, FallbackPoStCircuit};
use typenum::U2;

use super::{inconsistent_input, poseidon, poseidon_tree_inclusion, Path};
use crate::circuits::NativeWitness;

/// One sector of the partition (the circuit's sector list: filecoin-proofs repeats the last
/// sector to fill a partition, and so does this list).
pub(crate) struct SectorInputs {
    /// The sector's id, for errors.
    id: u64,
    comm_r: Fr,
    comm_c: Fr,
    comm_r_last: Fr,
    leaves: Vec<Fr>,
    paths: Vec<Path>,
}

pub(crate) struct PostInputs<Tree: MerkleTreeTrait> {
    sectors: Vec<SectorInputs>,
    _tree: std::marker::PhantomData<fn() -> Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> PostInputs<Tree> {
    /// From the circuit storage-proofs built (values) and the partition's vanilla proof
    /// (paths, which the circuit keeps in a private form), sector by sector.
    pub fn new(circuit: &FallbackPoStCircuit<Tree>, proof: &fallback::Proof<Tree::Proof>) -> Result<Self, String> {
        let hasher = <Tree::Hasher as Hasher>::name();
        if hasher != <PoseidonHasher as Hasher>::name() {
            return Err(format!("trees hashed with {hasher}; the native PoSt witness knows Poseidon only"));
        }
        if circuit.sectors.len() != proof.sectors.len() {
            return Err(format!("{} circuit sectors, {} sector proofs", circuit.sectors.len(), proof.sectors.len()));
        }
        let value = |v: Option<Fr>, what: &str| v.ok_or_else(|| format!("a sector without {what}"));
        // Sector by sector on the decode threads: ~70 ms for 2349 sectors on one core.
        let sectors = crate::decode_pool::try_map(&circuit.sectors, |i, s| {
            let p = &proof.sectors[i];
            let leaves = s.leafs.iter().map(|l| value(*l, "a leaf")).collect::<Result<Vec<_>, _>>()?;
            let paths = p.as_options();
            if paths.len() != leaves.len() {
                return Err(format!("{} leaves, {} paths", leaves.len(), paths.len()));
            }
            let id = value(s.id, "an id")?;
            let id = u64::from_le_bytes(id.to_bytes_le()[..8].try_into().expect("8 bytes"));
            Ok(SectorInputs {
                id,
                comm_r: value(s.comm_r, "comm_r")?,
                comm_c: value(s.comm_c, "comm_c")?,
                comm_r_last: value(s.comm_r_last, "comm_r_last")?,
                leaves,
                paths,
            })
        })?;
        Ok(PostInputs { sectors, _tree: std::marker::PhantomData })
    }
}

impl<Tree: 'static + MerkleTreeTrait> NativeWitness for PostInputs<Tree> {
    fn synthesize_witness<S: AuxValues>(self, cs: &mut WitnessCs<S>) -> Result<(), SynthesisError> {
        synthesize_witness(cs, self)
    }
}

fn synthesize_witness<Tree: MerkleTreeTrait, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    inputs: PostInputs<Tree>,
) -> Result<(), SynthesisError> {
    super::synthesize_in_chunks(cs, &inputs.sectors, synthesize_sector::<Tree, S>)
}

fn synthesize_sector<Tree: MerkleTreeTrait, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    sector: &SectorInputs,
) -> Result<(), SynthesisError> {
    let comm_r_last = AllocatedNum::alloc(&mut *cs, || Ok(sector.comm_r_last))?;
    let comm_c = AllocatedNum::alloc(&mut *cs, || Ok(sector.comm_c))?;
    let comm_r = AllocatedNum::alloc(&mut *cs, || Ok(sector.comm_r))?;
    comm_r.inputize(&mut *cs)?;
    // comm_r = H(comm_c || comm_r_last): Poseidon's `hash2_circuit` is the arity-2 hash.
    let hash = poseidon::poseidon_hash(cs, &[comm_c, comm_r_last.clone()], <U2 as PoseidonArity>::PARAMETERS())?;
    constraint::equal(&mut *cs, || "comm_r", &comm_r, &hash);
    if hash.get_value() != Some(sector.comm_r) {
        return Err(inconsistent_input(format!(
            "sector {}: its vanilla proof's comm_c and comm_r_last do not hash to the sector's comm_r",
            sector.id
        )));
    }
    for (challenge, (leaf, path)) in sector.leaves.iter().zip(&sector.paths).enumerate() {
        let leaf = AllocatedNum::alloc(&mut *cs, || Ok(*leaf))?;
        let root = poseidon_tree_inclusion::<Tree, S>(cs, path.clone(), &comm_r_last, &leaf)?;
        if root.get_value() != Some(sector.comm_r_last) {
            return Err(inconsistent_input(format!(
                "sector {}: the inclusion proof of challenge {challenge} does not hash to comm_r_last (a wrong leaf or path)",
                sector.id
            )));
        }
    }
    Ok(())
}
