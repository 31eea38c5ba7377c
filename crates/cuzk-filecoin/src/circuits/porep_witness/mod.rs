//! The witness of one PoRep (StackedDRG) partition, computed without running its hash
//! gadgets.
//!
//! The engine never needs a PoRep partition's constraints per proof (they come from the
//! pre-compiled matrices), only its aux values in allocation order. storage-proofs' circuit
//! computes those by running every gadget, and its hash gadgets — SHA-256 for the labels and
//! tree D, Poseidon for trees C and R and the column hashes, together nearly all of the
//! circuit — spend most of their time building linear combinations a witness-only system
//! throws away. Here the partition is walked in the same order as storage-proofs'
//! `StackedCircuit::synthesize` and `Proof::synthesize` (storage-proofs-porep 19): the
//! hashes come from [`sha256`] and [`poseidon`], which emit exactly the aux values their
//! gadgets would; the small gadgets around them (bit decompositions, `insert`, packing into
//! inputs, `encode`, the one `hash2` per partition) still run as they are.
//!
//! Only a witness-only constraint system ([`WitnessCs`]) can take this path — the native
//! hashes add no constraints — and plain synthesis and PCE extraction keep using
//! storage-proofs' circuit. The result must equal the gadgets' witness value for value:
//! `tests` compare whole partitions, the PCE equivalence tests in cuzk-core compare it with
//! plain synthesis through the recorded matrices, and `cuzk-bench pce-bench --witness-c1`
//! checks whole partitions of any size. The aux count is also checked against the matrices
//! on every proof (`PreCompiled::check_witness_len`).

mod inputs;
mod poseidon;
mod sha256;

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use bellperson::gadgets::multipack;
use ff::PrimeField;
use blstrs::Scalar as Fr;
use filecoin_hashers::{HashFunction, Hasher, PoseidonArity, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::gadgets::insertion::insert;
use storage_proofs_core::gadgets::{constraint, encode::encode};
use storage_proofs_core::merkle::MerkleTreeTrait;
use typenum::Unsigned;
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::TOTAL_PARENTS;

use cuzk_pce::{AuxValues, WitnessCs};

pub(crate) use inputs::PartitionInputs;
use inputs::{ChallengeInputs, ParentColumn, Path};
use sha256::{Bit, BitSink};

impl<S: AuxValues> BitSink for WitnessCs<S> {
    fn bit(&mut self, value: bool) {
        self.aux.push_bit(value);
    }
}

/// Append the partition's witness to `cs` (which holds only ONE so far).
pub(crate) fn synthesize_witness<Tree: MerkleTreeTrait, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    partition: PartitionInputs<Tree>,
) -> Result<(), SynthesisError> {
    let PartitionInputs { replica_id, comm_d, comm_r, comm_r_last, comm_c, challenges, .. } = partition;

    let replica_id = AllocatedNum::alloc(&mut *cs, || Ok(replica_id))?;
    replica_id.inputize(&mut *cs)?;
    let replica_id_bits = to_bits(&reverse_bit_numbering(replica_id.to_bits_le(&mut *cs)?))?;

    let comm_d = AllocatedNum::alloc(&mut *cs, || Ok(comm_d))?;
    comm_d.inputize(&mut *cs)?;
    let comm_r = AllocatedNum::alloc(&mut *cs, || Ok(comm_r))?;
    comm_r.inputize(&mut *cs)?;
    let comm_r_last = AllocatedNum::alloc(&mut *cs, || Ok(comm_r_last))?;
    let comm_c = AllocatedNum::alloc(&mut *cs, || Ok(comm_c))?;

    // comm_r = H(comm_c || comm_r_last)
    let hash = <Tree::Hasher as Hasher>::Function::hash2_circuit(&mut *cs, &comm_c, &comm_r_last)?;
    constraint::equal(&mut *cs, || "comm_r", &comm_r, &hash);

    let roots = Roots { comm_d: &comm_d, comm_c: &comm_c, comm_r_last: &comm_r_last };
    for challenge in challenges {
        synthesize_challenge::<Tree, S>(cs, challenge, &roots, &replica_id_bits)?;
    }
    Ok(())
}

struct Roots<'a> {
    comm_d: &'a AllocatedNum<Fr>,
    comm_c: &'a AllocatedNum<Fr>,
    comm_r_last: &'a AllocatedNum<Fr>,
}

/// One challenge, in the order of storage-proofs' `Proof::synthesize`.
fn synthesize_challenge<Tree: MerkleTreeTrait, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    challenge: ChallengeInputs,
    roots: &Roots<'_>,
    replica_id_bits: &[Bit],
) -> Result<(), SynthesisError> {
    let ChallengeInputs { data_leaf, comm_d_path, node, comm_r_last_path, comm_c_path, drg_parents, exp_parents } = challenge;

    // The data leaf, in tree D.
    let data_leaf = AllocatedNum::alloc(&mut *cs, || Ok(data_leaf))?;
    sha256_tree_inclusion(cs, comm_d_path, roots.comm_d, &data_leaf)?;

    // The parents' columns, each hashed and opened in tree C.
    let columns = |parents: Vec<ParentColumn>, cs: &mut WitnessCs<S>| -> Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError> {
        parents
            .into_iter()
            .map(|parent| {
                let rows = parent.rows.iter().map(|v| AllocatedNum::alloc(&mut *cs, || Ok(*v))).collect::<Result<Vec<_>, _>>()?;
                let hash = column_hash(cs, &rows)?;
                poseidon_tree_inclusion::<Tree, S>(cs, parent.path, roots.comm_c, &hash)?;
                Ok(rows)
            })
            .collect()
    };
    let drg = columns(drg_parents, cs)?;
    let exp = columns(exp_parents, cs)?;
    let layers = drg.first().map_or(0, Vec::len);
    if layers == 0 || drg.iter().chain(&exp).any(|c| c.len() != layers) {
        return Err(SynthesisError::Unsatisfiable);
    }

    let node_num = UInt64::alloc(&mut *cs, Some(node))?;
    node_num.pack_into_input(&mut *cs)?;
    let node_bits = to_bits(&node_num.to_bits_be())?;

    // Re-derive the challenged node's label in every layer.
    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents = Vec::with_capacity(drg.len() + exp.len());
        for column in &drg {
            parents.push(to_bits(&reverse_bit_numbering(column[layer - 1].to_bits_le(&mut *cs)?))?);
        }
        // Expander parents are stored from layer 2 on, so layer L reads their row L-1.
        if layer > 1 {
            for column in &exp {
                parents.push(to_bits(&reverse_bit_numbering(column[layer - 2].to_bits_le(&mut *cs)?))?);
            }
        }
        labels.push(label(cs, replica_id_bits, &parents, layer as u32, &node_bits)?);
    }

    // The encoded node, in tree R.
    let key = labels.last().expect("at least one layer");
    let encoded = encode(&mut *cs, key, &data_leaf)?;
    poseidon_tree_inclusion::<Tree, S>(cs, comm_r_last_path, roots.comm_r_last, &encoded)?;

    // The challenged column's hash, in tree C.
    let column = column_hash(cs, &labels)?;
    poseidon_tree_inclusion::<Tree, S>(cs, comm_c_path, roots.comm_c, &column)
}

/// `create_label_circuit`'s witness: SHA-256 over replica id ‖ layer ‖ node ‖ 37 parents,
/// each padded to 32 bytes (parents repeated as the labelling algorithm does), and the
/// digest packed into a field element.
fn label<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    replica_id: &[Bit],
    parents: &[Vec<Bit>],
    layer: u32,
    node_be: &[Bit],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    // Layer 1 has only the base (DRG) parents, repeated; later layers repeat all of them.
    if parents.is_empty() {
        return Err(SynthesisError::Unsatisfiable);
    }
    let expanded = parents.iter().cycle().take(TOTAL_PARENTS);

    const BYTE32: usize = 256;
    let mut input = Vec::with_capacity((2 + TOTAL_PARENTS) * BYTE32);
    input.extend_from_slice(replica_id);
    input.resize(BYTE32, Bit::Const(false));
    input.extend((0..32).rev().map(|i| Bit::Const((layer >> i) & 1 == 1)));
    input.extend_from_slice(node_be);
    input.resize(2 * BYTE32, Bit::Const(false));
    for parent in expanded {
        input.extend_from_slice(parent);
        input.resize(input.len().next_multiple_of(BYTE32), Bit::Const(false));
    }
    if input.len() != (2 + TOTAL_PARENTS) * BYTE32 {
        return Err(SynthesisError::Unsatisfiable);
    }

    let digest = sha256::sha256(cs, &input);
    pack_digest(cs, &digest)
}

/// `PoRCircuit` for tree D (binary, SHA-256, no sub- or top-trees; the path private), with
/// each level's hash computed natively: per level the index bit and the sibling, the pair
/// ordered by the index (`insert`), both unpacked to bits, hashed and packed.
fn sha256_tree_inclusion<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    path: Path,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError> {
    let mut cur = leaf.clone();
    let mut index_bits = Vec::with_capacity(path.len());
    for (siblings, index) in path {
        let bit = Boolean::from(AllocatedBit::alloc(&mut *cs, index.map(|i| i & 1 == 1))?);
        index_bits.push(bit.clone());
        let siblings = siblings
            .into_iter()
            .map(|h| AllocatedNum::alloc(&mut *cs, || h.ok_or(SynthesisError::AssignmentMissing)))
            .collect::<Result<Vec<_>, _>>()?;
        if siblings.len() != 1 {
            return Err(SynthesisError::Unsatisfiable);
        }
        let pair = insert(&mut *cs, &cur, &[bit], &siblings)?;
        let mut input = Vec::with_capacity(512);
        for node in &pair {
            input.extend(reverse_bits_in_bytes(&to_bits(&node.to_bits_le(&mut *cs)?)?));
        }
        let digest = sha256::sha256(cs, &input);
        cur = pack_digest(cs, &digest)?;
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    constraint::equal(&mut *cs, || "tree D root", &cur, root);
    Ok(())
}

/// `multipack::pack_bits` over the first CAPACITY bits of the byte-reversed digest: the
/// field element hashes are turned into (one aux value).
fn pack_digest<S: AuxValues>(cs: &mut WitnessCs<S>, digest: &[Bit]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut bytes = [0u8; 32];
    for (i, bit) in reverse_bits_in_bytes(digest).take(Fr::CAPACITY as usize).enumerate() {
        bytes[i / 8] |= u8::from(bit.value()) << (i % 8);
    }
    let value = Option::from(Fr::from_bytes_le(&bytes)).ok_or(SynthesisError::Unsatisfiable)?;
    AllocatedNum::alloc(&mut *cs, || Ok(value))
}

/// `reverse_bit_numbering` on native bits: a partial last byte is padded with constant
/// zeros first (a field element's 255 bits become 32 bytes).
fn reverse_bits_in_bytes(bits: &[Bit]) -> impl Iterator<Item = Bit> + '_ {
    bits.chunks(8).flat_map(|byte| (0..8).rev().map(move |i| byte.get(i).copied().unwrap_or(Bit::Const(false))))
}

/// The gadget's booleans as native bits (their values must be known: witness mode).
fn to_bits(booleans: &[Boolean]) -> Result<Vec<Bit>, SynthesisError> {
    booleans
        .iter()
        .map(|b| {
            let var = |v: Option<bool>| v.ok_or(SynthesisError::AssignmentMissing);
            Ok(match b {
                Boolean::Constant(v) => Bit::Const(*v),
                Boolean::Is(a) => Bit::Is(var(a.get_value())?),
                Boolean::Not(a) => Bit::Not(var(a.get_value())?),
            })
        })
        .collect()
}

/// The column hash (Poseidon over the column's rows), as storage-proofs' circuit has it.
fn column_hash<S: AuxValues>(cs: &mut WitnessCs<S>, rows: &[AllocatedNum<Fr>]) -> Result<AllocatedNum<Fr>, SynthesisError> {
    match rows.len() {
        2 => poseidon::poseidon_hash(cs, rows, &*POSEIDON_CONSTANTS_2),
        11 => poseidon::poseidon_hash(cs, rows, &*POSEIDON_CONSTANTS_11),
        _ => Err(SynthesisError::Unsatisfiable),
    }
}

/// `PoRCircuit` for a Poseidon tree of `Tree`'s shape (the path private), each level's hash
/// computed natively. The path splits as storage-proofs' `AuthPath` splits it: the last
/// level is the top tree's (if any), the one before it the sub-tree's (if any).
fn poseidon_tree_inclusion<Tree: MerkleTreeTrait, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    mut path: Path,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<(), SynthesisError> {
    let has_top = Tree::TopTreeArity::to_usize() > 0;
    let has_sub = Tree::SubTreeArity::to_usize() > 0;
    let upper = if has_top { 2 } else { usize::from(has_sub) };
    if path.len() < upper {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut rest = path.split_off(path.len() - upper);
    let top = if has_top { rest.pop() } else { None };
    let sub = if has_sub { rest.pop() } else { None };

    let mut index_bits = Vec::new();
    let cur = tree_levels::<Tree::Arity, S>(cs, path, leaf.clone(), &mut index_bits)?;
    let cur = tree_levels::<Tree::SubTreeArity, S>(cs, sub.into_iter().collect(), cur, &mut index_bits)?;
    let cur = tree_levels::<Tree::TopTreeArity, S>(cs, top.into_iter().collect(), cur, &mut index_bits)?;
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    constraint::equal(&mut *cs, || "tree root", &cur, root);
    Ok(())
}

/// One part (base, sub or top) of a Poseidon path: per level the index bits and the
/// siblings, the node put in its place among them (`insert`), and the hash.
fn tree_levels<A: 'static + PoseidonArity, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    path: Path,
    mut cur: AllocatedNum<Fr>,
    index_bits: &mut Vec<Boolean>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let arity = A::to_usize();
    if arity == 0 {
        return if path.is_empty() { Ok(cur) } else { Err(SynthesisError::Unsatisfiable) };
    }
    for (siblings, index) in path {
        let mut bits = Vec::with_capacity(arity.trailing_zeros() as usize);
        for i in 0..arity.trailing_zeros() as usize {
            bits.push(Boolean::from(AllocatedBit::alloc(&mut *cs, index.map(|x| (x >> i) & 1 == 1))?));
        }
        index_bits.extend_from_slice(&bits);
        let siblings = siblings
            .into_iter()
            .map(|h| AllocatedNum::alloc(&mut *cs, || h.ok_or(SynthesisError::AssignmentMissing)))
            .collect::<Result<Vec<_>, _>>()?;
        if siblings.len() + 1 != arity {
            return Err(SynthesisError::Unsatisfiable);
        }
        let children = insert(&mut *cs, &cur, &bits, &siblings)?;
        cur = poseidon::poseidon_hash(cs, &children, A::PARAMETERS())?;
    }
    Ok(cur)
}

#[cfg(test)]
mod tests;
