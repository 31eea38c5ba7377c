//! Witnesses computed without running the circuits' hash gadgets.
//!
//! The engine never needs a partition's constraints per proof (they come from the
//! pre-compiled matrices), only its aux values in allocation order. storage-proofs' circuits
//! compute those by running every gadget, and their hash gadgets — SHA-256 for PoRep labels
//! and tree D, Poseidon for the Merkle trees of sectors and PoRep's column hashes, together
//! nearly all of these circuits — spend most of their time building linear combinations a
//! witness-only system throws away. Here a partition is walked in the same order as
//! storage-proofs' `synthesize` (storage-proofs 19): the hashes come from [`sha256`] and
//! [`poseidon`], which emit exactly the aux values their gadgets would; the small gadgets
//! around them (bit decompositions, `insert`, packing into inputs, `encode`, `hash2`) still
//! run as they are.
//!
//! * [`porep`] — a StackedDRG (PoRep C2) partition; its inputs come from `porep_inputs`.
//! * [`post`] — a FallbackPoSt (WinningPoSt, WindowPoSt) partition.
//! * [`snap`] — a SnapDeals (EmptySectorUpdate) partition.
//! * this file — what both share: bits, packing, and the two Merkle path walkers.
//!
//! Only a witness-only constraint system ([`WitnessCs`]) can take this path — the native
//! hashes add no constraints — and plain synthesis and PCE extraction keep using
//! storage-proofs' circuits. The result must equal the gadgets' witness value for value:
//! `tests` compare whole partitions, the PCE equivalence tests in cuzk-core compare it with
//! plain synthesis through the recorded matrices, and `cuzk-bench pce-bench --witness-c1`
//! checks whole PoRep partitions of any size. The aux count is also checked against the
//! matrices on every proof (`PreCompiled::check_witness_len`).

pub(crate) mod porep;
mod porep_inputs;
mod poseidon;
pub(crate) mod post;
mod sha256;
pub(crate) mod snap;

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use bellperson::gadgets::multipack;
use blstrs::Scalar as Fr;
use cuzk_pce::{AuxValues, WitnessCs};
use ff::PrimeField;
use filecoin_hashers::PoseidonArity;
use rayon::prelude::*;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::insertion::insert;
use storage_proofs_core::merkle::MerkleTreeTrait;
use typenum::Unsigned;

use sha256::{Bit, BitSink};

/// A Merkle path as (siblings, index in its node) per level, leaf upwards — the form
/// storage-proofs builds its `AuthPath` from; the walkers below take it directly.
pub(crate) type Path = Vec<(Vec<Option<Fr>>, Option<usize>)>;

impl<S: AuxValues> BitSink for WitnessCs<S> {
    fn bit(&mut self, value: bool) {
        self.aux.push_bit(value);
    }
}

/// Synthesizes `items` in parallel, a chunk per thread, each chunk into its own witness, and
/// appends the chunks to `cs` in item order. Every item has one layout, so a chunk reserves
/// room for all its items once the first is done, and the chunks are appended without
/// regrowing (a compact witness takes their stored values over as they are): no vector is
/// regrown on the way. Regrowing copied everything held so far
/// and faulted in fresh pages, about half the CPU time of a 2349-sector WindowPoSt witness
/// (`perf` of `cuzk-bench pce-bench --witness-inputs`, BENCHMARKS).
pub(crate) fn synthesize_in_chunks<T: Sync, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    items: &[T],
    each: impl Fn(&mut WitnessCs<S>, &T) -> Result<(), SynthesisError> + Sync,
) -> Result<(), SynthesisError> {
    let chunk = items.len().div_ceil(rayon::current_num_threads()).max(1);
    let parts = items
        .par_chunks(chunk)
        .map(|items| {
            let mut part = WitnessCs::<S>::new_with_one();
            for (i, item) in items.iter().enumerate() {
                each(&mut part, item)?;
                if i == 0 {
                    part.reserve_repeats(items.len() - 1);
                }
            }
            Ok(part)
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    cs.extend_from_parts(parts);
    Ok(())
}

/// `PoRCircuit` for tree D (binary, SHA-256, no sub- or top-trees; the path private), with
/// each level's hash computed natively: per level the index bit and the sibling, the pair
/// ordered by the index (`insert`), both unpacked to bits, hashed and packed.
pub(crate) fn sha256_tree_inclusion<S: AuxValues>(
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
            input.extend(num_bits_bytewise_reversed(cs, node)?);
        }
        let digest = sha256::sha256(cs, &input);
        cur = pack_digest(cs, &digest)?;
    }
    multipack::pack_into_inputs(&mut *cs, &index_bits)?;
    constraint::equal(&mut *cs, || "tree D root", &cur, root);
    Ok(())
}

/// `multipack::pack_bits` over the first CAPACITY bits of the byte-reversed digest: how a
/// SHA-256 digest becomes a field element (one aux value).
pub(crate) fn pack_digest<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    digest: &[Bit],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let mut bytes = [0u8; 32];
    for (i, bit) in reverse_bits_in_bytes(digest).take(Fr::CAPACITY as usize).enumerate() {
        bytes[i / 8] |= u8::from(bit.value()) << (i % 8);
    }
    let value = Option::from(Fr::from_bytes_le(&bytes)).ok_or(SynthesisError::Unsatisfiable)?;
    AllocatedNum::alloc(&mut *cs, || Ok(value))
}

/// A number's bits by the `to_bits_le` gadget (its witness: one variable per bit), in the
/// order the hash inputs use them: each byte's bits reversed (`reverse_bit_numbering`).
pub(crate) fn num_bits_bytewise_reversed<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    num: &AllocatedNum<Fr>,
) -> Result<Vec<Bit>, SynthesisError> {
    Ok(reverse_bits_in_bytes(&to_bits(&num.to_bits_le(&mut *cs)?)?).collect())
}

/// `reverse_bit_numbering` on native bits: a partial last byte is padded with constant
/// zeros first (a field element's 255 bits become 32 bytes).
fn reverse_bits_in_bytes(bits: &[Bit]) -> impl Iterator<Item = Bit> + '_ {
    bits.chunks(8).flat_map(|byte| (0..8).rev().map(move |i| byte.get(i).copied().unwrap_or(Bit::Const(false))))
}

/// The gadget's booleans as native bits (their values must be known: witness mode).
pub(crate) fn to_bits(booleans: &[Boolean]) -> Result<Vec<Bit>, SynthesisError> {
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

/// `PoRCircuit` for a Poseidon tree of `Tree`'s shape (the path private), each level's hash
/// computed natively. The path splits as storage-proofs' `AuthPath` splits it: the last
/// level is the top tree's (if any), the one before it the sub-tree's (if any). Returns the
/// root the path hashes to, which the circuit constrains to equal `root` (a witness-only
/// system does not check it; callers whose inputs are never synthetic may).
pub(crate) fn poseidon_tree_inclusion<Tree: MerkleTreeTrait, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    mut path: Path,
    root: &AllocatedNum<Fr>,
    leaf: &AllocatedNum<Fr>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
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
    Ok(cur)
}

/// A witness value that breaks one of the circuit's equalities: the request's data are
/// inconsistent. Carried as `InvalidData` (SynthesisError has no variant with a message);
/// the engine reports the message as it is.
pub(crate) fn inconsistent_input(message: String) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::new(std::io::ErrorKind::InvalidData, message))
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
