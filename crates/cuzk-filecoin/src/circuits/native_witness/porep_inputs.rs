//! What one PoRep partition's witness is computed from, taken out of the vanilla proofs.
//!
//! storage-proofs keeps some of the fields we need crate-private (a column's rows and its
//! inclusion proof, a labelling proof's node), with no accessor, but every vanilla proof is
//! serde-serializable — it arrives as JSON in the C1 output. So the column and labelling
//! proofs are re-read through mirror structs naming the same serialized fields.

use blstrs::Scalar as Fr;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::Hasher;
use filecoin_proofs::VanillaSealProof;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};

use super::Path;

/// One partition: the commitments and one entry per challenge.
pub(crate) struct PartitionInputs<Tree: MerkleTreeTrait> {
    pub replica_id: Fr,
    pub comm_d: Fr,
    pub comm_r: Fr,
    pub comm_r_last: Fr,
    pub comm_c: Fr,
    pub challenges: Vec<ChallengeInputs>,
    _tree: std::marker::PhantomData<fn() -> Tree>,
}

pub(crate) struct ChallengeInputs {
    pub data_leaf: Fr,
    /// In tree D (binary, SHA-256).
    pub comm_d_path: Path,
    /// The challenged node.
    pub node: u64,
    /// In tree R and tree C (Poseidon, the sector's tree shape).
    pub comm_r_last_path: Path,
    pub comm_c_path: Path,
    pub drg_parents: Vec<ParentColumn>,
    pub exp_parents: Vec<ParentColumn>,
}

/// A parent's column (one row per layer) and its inclusion path in tree C.
pub(crate) struct ParentColumn {
    pub rows: Vec<Fr>,
    pub path: Path,
}

#[derive(Deserialize)]
struct ReplicaColumnFields<P, D> {
    c_x: ColumnProofFields<P, D>,
    drg_parents: Vec<ColumnProofFields<P, D>>,
    exp_parents: Vec<ColumnProofFields<P, D>>,
}

#[derive(Deserialize)]
struct ColumnProofFields<P, D> {
    column: ColumnFields<D>,
    inclusion_proof: P,
}

#[derive(Deserialize)]
struct ColumnFields<D> {
    rows: Vec<D>,
}

#[derive(Deserialize)]
struct LabelingFields {
    node: u64,
}

/// Re-read a serializable value as the mirror type `T`.
fn mirror<T: DeserializeOwned>(what: &str, value: &impl serde::Serialize) -> Result<T, String> {
    let json = serde_json::to_value(value).map_err(|e| format!("{what}: {e}"))?;
    serde_json::from_value(json).map_err(|e| format!("{what}: {e}"))
}

impl<Tree: 'static + MerkleTreeTrait> PartitionInputs<Tree> {
    /// From the public commitments and the partition's vanilla proofs (one per challenge).
    pub fn new(replica_id: Fr, comm_d: Fr, comm_r: Fr, proofs: &[VanillaSealProof<Tree>]) -> Result<Self, String> {
        // The native witness hashes trees C and R with Poseidon, as every StackedDRG shape does.
        let hasher = <Tree::Hasher as Hasher>::name();
        if hasher != <PoseidonHasher as Hasher>::name() {
            return Err(format!("trees hashed with {hasher}; the native PoRep witness knows Poseidon only"));
        }
        let first = proofs.first().ok_or("a partition without vanilla proofs")?;
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        if proofs.iter().any(|p| p.comm_r_last() != comm_r_last || p.comm_c() != comm_c) {
            return Err("vanilla proofs of one partition disagree on comm_r_last or comm_c".into());
        }
        let challenges = proofs.iter().map(ChallengeInputs::new::<Tree>).collect::<Result<_, _>>()?;
        Ok(PartitionInputs {
            replica_id,
            comm_d,
            comm_r,
            comm_r_last: comm_r_last.into(),
            comm_c: comm_c.into(),
            challenges,
            _tree: std::marker::PhantomData,
        })
    }
}

impl ChallengeInputs {
    fn new<Tree: 'static + MerkleTreeTrait>(proof: &VanillaSealProof<Tree>) -> Result<Self, String> {
        type Domain<T> = <<T as MerkleTreeTrait>::Hasher as Hasher>::Domain;
        let columns: ReplicaColumnFields<Tree::Proof, Domain<Tree>> =
            mirror("replica column proofs", &proof.replica_column_proofs)?;
        let labeling = proof.labeling_proofs.first().ok_or("a challenge without labelling proofs")?;
        let LabelingFields { node } = mirror("labelling proof", labeling)?;
        let parent = |c: ColumnProofFields<Tree::Proof, Domain<Tree>>| ParentColumn {
            rows: c.column.rows.into_iter().map(Into::into).collect(),
            path: c.inclusion_proof.as_options(),
        };
        Ok(ChallengeInputs {
            data_leaf: proof.comm_d_proofs.leaf().into(),
            comm_d_path: proof.comm_d_proofs.as_options(),
            node,
            comm_r_last_path: proof.comm_r_last_proof.as_options(),
            comm_c_path: columns.c_x.inclusion_proof.as_options(),
            drg_parents: columns.drg_parents.into_iter().map(parent).collect(),
            exp_parents: columns.exp_parents.into_iter().map(parent).collect(),
        })
    }
}
