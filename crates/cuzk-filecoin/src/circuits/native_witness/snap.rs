//! The witness of one SnapDeals (EmptySectorUpdate) partition, in the allocation order of
//! storage-proofs-update 19's `EmptySectorUpdateCircuit::synthesize`.
//!
//! Nearly all of that circuit is Merkle paths: per challenge one path in tree D (binary,
//! SHA-256) from the leaf up to the partition's apex leaf, and one path in each of the old
//! and the new tree R (Poseidon, the sector's shape); per partition the apex tree (SHA-256)
//! and its path to comm_d. Their hashes come from [`super::sha256`] and [`super::poseidon`].
//! The rest (the challenge derivation, ρ, the encoding, the selections and packings) is small
//! and runs through the same gadgets the circuit uses, or through functions here that
//! allocate what storage-proofs-update's crate-private gadgets allocate, value for value.
//!
//! Challenges are independent given the partition's shared values (φ, the roots, the apex
//! leaves), so they are computed in parallel chunks, each into its own system, and appended
//! in order: the same witness as one sequential pass (as `post` does with sectors).

use bellpepper_core::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use bellperson::gadgets::multipack::pack_bits;
use blstrs::Scalar as Fr;
use cuzk_pce::{AuxValues, WitnessCs};
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::{HashFunction, Hasher, PoseidonArity};
use neptune::circuit::poseidon_hash;
use storage_proofs_core::gadgets::insertion::{insert, select};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::EmptySectorUpdateCircuit;
use storage_proofs_update::constants::{hs, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use typenum::Unsigned;

use super::{num_bits_bytewise_reversed, pack_digest, poseidon, sha256};
use crate::circuits::NativeWitness;

/// One challenge's leaves and paths (siblings per level, leaf upwards).
struct ChallengeInputs {
    leaf_r_old: Fr,
    path_r_old: Vec<Vec<Fr>>,
    leaf_d_new: Fr,
    path_d_new: Vec<Vec<Fr>>,
    leaf_r_new: Fr,
    path_r_new: Vec<Vec<Fr>>,
}

/// What the partition's circuit holds, as values.
pub(crate) struct SnapInputs<TreeR: MerkleTreeTrait> {
    sector_nodes: usize,
    challenge_count: usize,
    challenge_bit_len: usize,
    partition_bit_len: usize,
    apex_leaf_bit_len: usize,
    k_and_h_select: Fr,
    comm_r_old: Fr,
    comm_d_new: Fr,
    comm_r_new: Fr,
    comm_c: Fr,
    root_r_old: Fr,
    root_r_new: Fr,
    apex_leaves: Vec<Fr>,
    challenges: Vec<ChallengeInputs>,
    _tree: std::marker::PhantomData<fn() -> TreeR>,
}

impl<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapInputs<TreeR> {
    /// The values of a circuit storage-proofs-update built (every one must be set).
    pub fn new(circuit: &EmptySectorUpdateCircuit<TreeR>) -> Result<Self, String> {
        let value = |v: Option<Fr>, what: &str| v.ok_or_else(|| format!("the circuit has no {what}"));
        let path = |p: &[Vec<Option<Fr>>], what: &str| -> Result<Vec<Vec<Fr>>, String> {
            p.iter().map(|level| level.iter().map(|s| value(*s, what)).collect()).collect()
        };
        let (pp, public, private) = (&circuit.pub_params, &circuit.pub_inputs, &circuit.priv_inputs);
        let challenges = private
            .challenge_proofs
            .iter()
            .map(|c| {
                Ok(ChallengeInputs {
                    leaf_r_old: value(c.leaf_r_old, "leaf_r_old")?,
                    path_r_old: path(&c.path_r_old, "path_r_old sibling")?,
                    leaf_d_new: value(c.leaf_d_new, "leaf_d_new")?,
                    path_d_new: path(&c.path_d_new, "path_d_new sibling")?,
                    leaf_r_new: value(c.leaf_r_new, "leaf_r_new")?,
                    path_r_new: path(&c.path_r_new, "path_r_new sibling")?,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let apex_ok = pp.apex_leaf_count.is_power_of_two() && private.apex_leafs.len() == pp.apex_leaf_count;
        if challenges.is_empty() || challenges.len() != pp.challenge_count || !apex_ok {
            return Err(format!(
                "{} challenge proofs and {} apex leaves, expected {} and {}",
                challenges.len(),
                private.apex_leafs.len(),
                pp.challenge_count,
                pp.apex_leaf_count
            ));
        }
        if challenges
            .iter()
            .any(|c| c.path_d_new.len() != pp.challenge_bit_len || c.path_d_new.iter().any(|l| l.len() != 1))
        {
            return Err("a tree D path of the wrong shape".into());
        }
        Ok(SnapInputs {
            sector_nodes: pp.sector_nodes,
            challenge_count: pp.challenge_count,
            challenge_bit_len: pp.challenge_bit_len,
            partition_bit_len: pp.partition_bit_len,
            apex_leaf_bit_len: pp.apex_leaf_bit_len,
            k_and_h_select: value(public.k_and_h_select, "k_and_h_select")?,
            comm_r_old: value(public.comm_r_old, "comm_r_old")?,
            comm_d_new: value(public.comm_d_new, "comm_d_new")?,
            comm_r_new: value(public.comm_r_new, "comm_r_new")?,
            comm_c: value(private.comm_c, "comm_c")?,
            root_r_old: value(private.root_r_old, "root_r_old")?,
            root_r_new: value(private.root_r_new, "root_r_new")?,
            apex_leaves: private.apex_leafs.iter().map(|l| value(*l, "apex leaf")).collect::<Result<_, _>>()?,
            challenges,
            _tree: std::marker::PhantomData,
        })
    }
}

impl<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> NativeWitness for SnapInputs<TreeR> {
    fn synthesize_witness<S: AuxValues>(self, cs: &mut WitnessCs<S>) -> Result<(), SynthesisError> {
        synthesize_witness(cs, self)
    }
}

/// The values every challenge uses.
struct Shared {
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    hs: Vec<usize>,
    phi: AllocatedNum<Fr>,
    root_r_old: AllocatedNum<Fr>,
    root_r_new: AllocatedNum<Fr>,
    apex_leaves: Vec<AllocatedNum<Fr>>,
}

fn alloc<S: AuxValues>(cs: &mut WitnessCs<S>, v: Fr) -> Result<AllocatedNum<Fr>, SynthesisError> {
    AllocatedNum::alloc(&mut *cs, || Ok(v))
}

fn alloc_path<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    path: &[Vec<Fr>],
) -> Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError> {
    path.iter().map(|level| level.iter().map(|s| alloc(cs, *s)).collect()).collect()
}

fn synthesize_witness<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    inputs: SnapInputs<TreeR>,
) -> Result<(), SynthesisError> {
    let hs = hs(inputs.sector_nodes).to_vec();
    let bit_len = inputs.partition_bit_len + hs.len();

    // k and h_select: one public input, its low bits allocated.
    let k_and_h_select = alloc(cs, inputs.k_and_h_select)?;
    k_and_h_select.inputize(&mut *cs)?;
    let bits = inputs
        .k_and_h_select
        .to_le_bits()
        .into_iter()
        .take(bit_len)
        .map(|b| AllocatedBit::alloc(&mut *cs, Some(b)))
        .collect::<Result<Vec<_>, _>>()?;
    let partition_bits = bits[..inputs.partition_bit_len].to_vec();
    let h_select_bits = bits[inputs.partition_bit_len..].to_vec();
    let partition = pack_bits(&mut *cs, &partition_bits.iter().cloned().map(Boolean::from).collect::<Vec<_>>())?;

    let comm_r_old = alloc(cs, inputs.comm_r_old)?;
    comm_r_old.inputize(&mut *cs)?;
    let comm_d_new = alloc(cs, inputs.comm_d_new)?;
    comm_d_new.inputize(&mut *cs)?;
    let comm_r_new = alloc(cs, inputs.comm_r_new)?;
    comm_r_new.inputize(&mut *cs)?;
    let phi = poseidon_hash(&mut *cs, vec![comm_d_new.clone(), comm_r_old], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;

    let comm_c = alloc(cs, inputs.comm_c)?;
    let root_r_old = alloc(cs, inputs.root_r_old)?;
    let root_r_new = alloc(cs, inputs.root_r_new)?;
    let apex_leaves = inputs.apex_leaves.iter().map(|l| alloc(cs, *l)).collect::<Result<Vec<_>, _>>()?;
    // Every challenge's tree D path ends in the partition's path (checked by the vanilla
    // verifier at submit); the circuit takes it from the first.
    let partition_path =
        alloc_path(cs, &inputs.challenges[0].path_d_new[inputs.challenge_bit_len - inputs.partition_bit_len..])?;

    // comm_r = H(comm_c || root_r), old and new: the gadget (two hashes a partition).
    <TreeRHasher as Hasher>::Function::hash2_circuit(&mut *cs, &comm_c, &root_r_old)?;
    <TreeRHasher as Hasher>::Function::hash2_circuit(&mut *cs, &comm_c, &root_r_new)?;

    // The apex tree over this partition's apex leaves, and its root's path to comm_d.
    let mut row = apex_leaves.clone();
    while row.len() > 1 {
        row = row.chunks(2).map(|pair| sha256_hash2(cs, &pair[0], &pair[1])).collect::<Result<_, _>>()?;
    }
    sha256_por(cs, &partition_bits, row.pop().ok_or(SynthesisError::Unsatisfiable)?, partition_path)?;

    let bits_per_challenge = inputs.challenge_bit_len - inputs.partition_bit_len;
    let generated = challenge_bits(cs, &comm_r_new, &partition, inputs.challenge_count, bits_per_challenge)?;

    let shared = Shared { partition_bits, h_select_bits, hs, phi, root_r_old, root_r_new, apex_leaves };
    let layout = (inputs.challenge_bit_len, inputs.partition_bit_len, inputs.apex_leaf_bit_len);
    let work: Vec<(Vec<AllocatedBit>, ChallengeInputs)> = generated.into_iter().zip(inputs.challenges).collect();
    super::synthesize_in_chunks(cs, &work, |part, (bits, challenge)| {
        synthesize_challenge::<TreeR, S>(part, bits, challenge, &shared, layout)
    })
}

fn synthesize_challenge<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    generated: &[AllocatedBit],
    challenge: &ChallengeInputs,
    shared: &Shared,
    (challenge_bit_len, partition_bit_len, apex_leaf_bit_len): (usize, usize, usize),
) -> Result<(), SynthesisError> {
    let c_bits: Vec<AllocatedBit> = generated.iter().chain(&shared.partition_bits).cloned().collect();
    let c_high = challenge_high_bits(cs, &c_bits, &shared.h_select_bits, &shared.hs)?;
    let rho = poseidon_hash(&mut *cs, vec![shared.phi.clone(), c_high], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;

    let leaf_r_old = alloc(cs, challenge.leaf_r_old)?;
    let leaf_d_new = alloc(cs, challenge.leaf_d_new)?;
    // leaf_r_new = leaf_r_old + leaf_d_new · ρ: the product, then the sum.
    let product = leaf_d_new.mul(&mut *cs, &rho)?;
    let product = product.get_value().ok_or(SynthesisError::AssignmentMissing)?;
    let leaf_r_new = alloc(cs, challenge.leaf_r_old + product)?;
    // The replica the vanilla proof opened must be this encoding (the circuit asserts it).
    if leaf_r_new.get_value() != Some(challenge.leaf_r_new) {
        return Err(SynthesisError::Unsatisfiable);
    }

    // The circuit enforces each computed root against the given one (no aux); a witness
    // that breaks one would not verify, so say so here, where the cause is known.
    let path_r_old = alloc_path(cs, &challenge.path_r_old)?;
    let root_r_old = poseidon_por::<TreeR, S>(cs, &c_bits, leaf_r_old, path_r_old)?;
    let path_r_new = alloc_path(cs, &challenge.path_r_new)?;
    let root_r_new = poseidon_por::<TreeR, S>(cs, &c_bits, leaf_r_new, path_r_new)?;
    if root_r_old.get_value() != shared.root_r_old.get_value()
        || root_r_new.get_value() != shared.root_r_new.get_value()
    {
        return Err(SynthesisError::Unsatisfiable);
    }

    let to_apex = challenge_bit_len - partition_bit_len - apex_leaf_bit_len;
    let apex_bits: Vec<Boolean> =
        c_bits[to_apex..to_apex + apex_leaf_bit_len].iter().cloned().map(Boolean::from).collect();
    let apex_leaf = select(&mut *cs, &shared.apex_leaves, &apex_bits)?;
    let path_to_apex = alloc_path(cs, &challenge.path_d_new[..to_apex])?;
    let root = sha256_por(cs, &c_bits[..to_apex], leaf_d_new, path_to_apex)?;
    if root.get_value() != apex_leaf.get_value() {
        return Err(SynthesisError::Unsatisfiable);
    }
    Ok(())
}

/// `gen_challenge_bits`: per digest its index (k · digests + j), the digest
/// H(comm_r_new ‖ index), and the digest's 255 bits; challenges take consecutive chunks.
fn challenge_bits<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    comm_r_new: &AllocatedNum<Fr>,
    partition: &AllocatedNum<Fr>,
    challenges: usize,
    bits_per_challenge: usize,
) -> Result<Vec<Vec<AllocatedBit>>, SynthesisError> {
    let per_digest = Fr::CAPACITY as usize / bits_per_challenge;
    let digests = challenges.div_ceil(per_digest);
    let k = partition.get_value().ok_or(SynthesisError::AssignmentMissing)?;
    let mut out = Vec::with_capacity(challenges);
    for j in 0..digests {
        let index = alloc(cs, k * Fr::from(digests as u64) + Fr::from(j as u64))?;
        let digest = poseidon_hash(&mut *cs, vec![comm_r_new.clone(), index], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;
        let bits = field_into_allocated_bits_le(&mut *cs, digest.get_value())?;
        let take = if j + 1 == digests { challenges - out.len() } else { per_digest };
        out.extend(bits.chunks(bits_per_challenge).take(take).map(<[AllocatedBit]>::to_vec));
    }
    Ok(out)
}

/// `get_challenge_high_bits`: per h in `hs` the challenge's h high bits packed, times its
/// h_select bit; then their sum (the selected one).
fn challenge_high_bits<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    c_bits: &[AllocatedBit],
    h_select_bits: &[AllocatedBit],
    hs: &[usize],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    if hs.len() != h_select_bits.len() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let bits: Vec<Boolean> = c_bits.iter().cloned().map(Boolean::from).collect();
    let mut sum = Fr::ZERO;
    for (h, select) in hs.iter().zip(h_select_bits) {
        let high = pack_bits(&mut *cs, &bits[bits.len() - h..])?;
        let chosen = if select.get_value().ok_or(SynthesisError::AssignmentMissing)? {
            high.get_value().ok_or(SynthesisError::AssignmentMissing)?
        } else {
            Fr::ZERO
        };
        alloc(cs, chosen)?;
        sum += chosen;
    }
    alloc(cs, sum)
}

/// SHA-256 `hash2_circuit` (also tree D's `hash_multi_leaf_circuit`): both numbers' bits,
/// each byte's bits reversed, hashed, and the digest packed.
fn sha256_hash2<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    a: &AllocatedNum<Fr>,
    b: &AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut input = num_bits_bytewise_reversed(cs, a)?;
    input.extend(num_bits_bytewise_reversed(cs, b)?);
    let digest = sha256::sha256(cs, &input);
    pack_digest(cs, &digest)
}

/// `por_no_challenge_input` for tree D (binary SHA-256; siblings allocated by the caller):
/// per level the node put in its place by the challenge bit, and the hash. Returns the root
/// it computes (the circuit enforces it against the given one, which adds no aux).
fn sha256_por<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    bits: &[AllocatedBit],
    leaf: AllocatedNum<Fr>,
    path: Vec<Vec<AllocatedNum<Fr>>>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    if bits.len() != path.len() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut cur = leaf;
    for (bit, siblings) in bits.iter().zip(path) {
        let pair = insert(&mut *cs, &cur, &[Boolean::from(bit.clone())], &siblings)?;
        cur = sha256_hash2(cs, &pair[0], &pair[1])?;
    }
    Ok(cur)
}

/// `por_no_challenge_input` for tree R (Poseidon, base + optional sub and top levels): the
/// challenge bits, consumed in order, give each level's insertion index.
fn poseidon_por<Tree: MerkleTreeTrait, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    bits: &[AllocatedBit],
    leaf: AllocatedNum<Fr>,
    path: Vec<Vec<AllocatedNum<Fr>>>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let (sub, top) = (Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize());
    let upper = usize::from(sub > 0) + usize::from(top > 0);
    let base = path.len().checked_sub(upper).ok_or(SynthesisError::Unsatisfiable)?;
    let mut bits = bits.iter().cloned().map(Boolean::from);
    let mut cur = leaf;
    for (level, siblings) in path.into_iter().enumerate() {
        cur = if level < base {
            poseidon_level::<Tree::Arity, S>(cs, cur, &siblings, &mut bits)?
        } else if level == base && sub > 0 {
            poseidon_level::<Tree::SubTreeArity, S>(cs, cur, &siblings, &mut bits)?
        } else {
            poseidon_level::<Tree::TopTreeArity, S>(cs, cur, &siblings, &mut bits)?
        };
    }
    if bits.next().is_some() {
        return Err(SynthesisError::Unsatisfiable);
    }
    Ok(cur)
}

fn poseidon_level<A: 'static + PoseidonArity, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    cur: AllocatedNum<Fr>,
    siblings: &[AllocatedNum<Fr>],
    bits: &mut impl Iterator<Item = Boolean>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let arity = A::to_usize();
    if siblings.len() + 1 != arity {
        return Err(SynthesisError::Unsatisfiable);
    }
    let index: Vec<Boolean> = bits.take(arity.trailing_zeros() as usize).collect();
    if index.len() != arity.trailing_zeros() as usize {
        return Err(SynthesisError::Unsatisfiable);
    }
    let children = insert(&mut *cs, &cur, &index, siblings)?;
    poseidon::poseidon_hash(cs, &children, A::PARAMETERS())
}
