//! The witness of one PoRep (StackedDRG) partition, in the allocation order of
//! storage-proofs-porep's `StackedCircuit::synthesize` and `Proof::synthesize`: the
//! commitments, then per challenge the data leaf in tree D, the parents' columns (hashed and
//! opened in tree C), the challenge, the label of the challenged node in every layer
//! (SHA-256 over replica id, layer, node and 37 parents), the encoded node in tree R, and the
//! challenged column in tree C.

use bellpepper_core::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_pce::{AuxValues, WitnessCs};
use filecoin_hashers::{PoseidonArity, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::gadgets::{constraint, encode::encode};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::TOTAL_PARENTS;
use typenum::U2;

pub(crate) use super::porep_inputs::PartitionInputs;
use super::porep_inputs::{ChallengeInputs, ParentColumn};
use super::sha256::{self, Bit};
use super::{
    num_bits_bytewise_reversed, pack_digest, poseidon, poseidon_tree_inclusion, sha256_tree_inclusion, to_bits,
};
use crate::circuits::NativeWitness;

impl<Tree: 'static + MerkleTreeTrait> NativeWitness for PartitionInputs<Tree> {
    fn synthesize_witness<S: AuxValues>(self, cs: &mut WitnessCs<S>) -> Result<(), SynthesisError> {
        synthesize_witness(cs, self)
    }
}

fn synthesize_witness<Tree: MerkleTreeTrait, S: AuxValues>(
    cs: &mut WitnessCs<S>,
    partition: PartitionInputs<Tree>,
) -> Result<(), SynthesisError> {
    let PartitionInputs { replica_id, comm_d, comm_r, comm_r_last, comm_c, challenges, .. } = partition;

    let replica_id = AllocatedNum::alloc(&mut *cs, || Ok(replica_id))?;
    replica_id.inputize(&mut *cs)?;
    let replica_id_bits = num_bits_bytewise_reversed(cs, &replica_id)?;

    let comm_d = AllocatedNum::alloc(&mut *cs, || Ok(comm_d))?;
    comm_d.inputize(&mut *cs)?;
    let comm_r = AllocatedNum::alloc(&mut *cs, || Ok(comm_r))?;
    comm_r.inputize(&mut *cs)?;
    let comm_r_last = AllocatedNum::alloc(&mut *cs, || Ok(comm_r_last))?;
    let comm_c = AllocatedNum::alloc(&mut *cs, || Ok(comm_c))?;

    // comm_r = H(comm_c || comm_r_last): Poseidon's `hash2_circuit` is the arity-2 hash.
    let hash =
        poseidon::poseidon_hash(cs, &[comm_c.clone(), comm_r_last.clone()], <U2 as PoseidonArity>::PARAMETERS())?;
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
    let ChallengeInputs { data_leaf, comm_d_path, node, comm_r_last_path, comm_c_path, drg_parents, exp_parents } =
        challenge;

    // The data leaf, in tree D.
    let data_leaf = AllocatedNum::alloc(&mut *cs, || Ok(data_leaf))?;
    sha256_tree_inclusion(cs, comm_d_path, roots.comm_d, &data_leaf)?;

    // The parents' columns, each hashed and opened in tree C.
    let columns =
        |parents: Vec<ParentColumn>, cs: &mut WitnessCs<S>| -> Result<Vec<Vec<AllocatedNum<Fr>>>, SynthesisError> {
            parents
                .into_iter()
                .map(|parent| {
                    let rows = parent
                        .rows
                        .iter()
                        .map(|v| AllocatedNum::alloc(&mut *cs, || Ok(*v)))
                        .collect::<Result<Vec<_>, _>>()?;
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
            parents.push(num_bits_bytewise_reversed(cs, &column[layer - 1])?);
        }
        // Expander parents are stored from layer 2 on, so layer L reads their row L-1.
        if layer > 1 {
            for column in &exp {
                parents.push(num_bits_bytewise_reversed(cs, &column[layer - 2])?);
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
    poseidon_tree_inclusion::<Tree, S>(cs, comm_c_path, roots.comm_c, &column)?;
    Ok(())
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

/// The column hash (Poseidon over the column's rows), as storage-proofs' circuit has it.
fn column_hash<S: AuxValues>(
    cs: &mut WitnessCs<S>,
    rows: &[AllocatedNum<Fr>],
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    match rows.len() {
        2 => poseidon::poseidon_hash(cs, rows, &*POSEIDON_CONSTANTS_2),
        11 => poseidon::poseidon_hash(cs, rows, &*POSEIDON_CONSTANTS_11),
        _ => Err(SynthesisError::Unsatisfiable),
    }
}
