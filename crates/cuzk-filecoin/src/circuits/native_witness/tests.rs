//! A native witness must equal the witness of storage-proofs' circuit value for value. PoRep:
//! on the real 2 KiB fixture sector, and on synthetic sectors of every tree shape (2 KiB:
//! base tree only; 32 GiB: sub-trees; 64 GiB: sub- and top-trees). PoSt: WinningPoSt and
//! WindowPoSt on the fixture sector.

use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB};
use storage_proofs_core::merkle::MerkleTreeTrait;

use crate::circuits::porep::{decode_c1, Sector};
use crate::circuits::Partition;
use crate::fixtures::synthetic::{registered_porep, synthetic_c1};
use crate::{ProofKind, SectorSize};

fn assert_same_witness(native: Partition, gadgets: Partition, what: &str) {
    let (inputs, aux) = native.circuit.witness().unwrap();
    let (want_inputs, want_aux) = gadgets.circuit.witness_by_gadgets().unwrap();
    assert_eq!(inputs, want_inputs, "{what}: inputs");
    assert_eq!(aux.len(), want_aux.len(), "{what}: aux count");
    if let Some(i) = aux.iter().zip(&want_aux).position(|(a, b)| a != b) {
        panic!("{what}: aux {i} of {} differs", aux.len());
    }
}

/// Partitions `ks` of a synthetic sector, cut to their first `challenges` challenges.
fn synthetic_partitions<Tree: 'static + MerkleTreeTrait>(
    size: SectorSize,
    ks: &[usize],
    challenges: usize,
) -> Vec<(Partition, Partition)> {
    let registered = registered_porep(size);
    let c1 = synthetic_c1(registered, 7).unwrap();
    let (sector, vanilla) = Sector::<Tree>::decode(registered, decode_c1(&c1.json, 0).unwrap()).unwrap();
    ks.iter()
        .map(|&k| {
            let proofs = vanilla[k][..challenges.min(vanilla[k].len())].to_vec();
            (sector.partition(k, &proofs).unwrap(), sector.partition(k, &proofs).unwrap())
        })
        .collect()
}

#[test]
fn equals_the_circuit_on_the_fixture_sector() {
    let (dir, manifest) = crate::fixtures::test_inputs();
    let req = crate::fixtures::requests::request(dir, manifest, ProofKind::PoRepSealCommit).unwrap();
    let (a, b) = (crate::prepare(&req).unwrap(), crate::prepare(&req).unwrap());
    assert!(!a.partitions.is_empty());
    for (p, q) in a.partitions.into_iter().zip(b.partitions) {
        let what = format!("fixture partition {}", p.index);
        assert_same_witness(p, q, &what);
    }
}

#[test]
fn equals_the_circuit_on_synthetic_2k() {
    for (p, q) in synthetic_partitions::<SectorShape2KiB>(SectorSize::S2KiB, &[0], usize::MAX) {
        let what = format!("2 KiB partition {}", p.index);
        assert_same_witness(p, q, &what);
    }
}

#[test]
fn equals_the_circuit_on_32g_and_64g_challenges() {
    // One challenge of a large sector is ~7 M constraints through the gadgets; its Merkle
    // paths have the real depths and sub/top-tree arities.
    for (p, q) in synthetic_partitions::<SectorShape32GiB>(SectorSize::S32GiB, &[3], 1) {
        assert_same_witness(p, q, "32 GiB, one challenge");
    }
    for (p, q) in synthetic_partitions::<SectorShape64GiB>(SectorSize::S64GiB, &[0], 1) {
        assert_same_witness(p, q, "64 GiB, one challenge");
    }
}

#[test]
fn compact_witness_equals_the_plain_one() {
    let (p, q) = synthetic_partitions::<SectorShape2KiB>(SectorSize::S2KiB, &[0], usize::MAX).pop().unwrap();
    let (inputs, aux) = p.circuit.witness().unwrap();
    let (compact_inputs, compact) = q.circuit.witness_compact(inputs.len(), aux.len()).unwrap();
    assert_eq!(compact_inputs, inputs);
    assert!(compact.to_vec() == aux);
}

#[test]
fn post_equals_the_circuit_on_the_fixture_sector() {
    let (dir, manifest) = crate::fixtures::test_inputs();
    for kind in [ProofKind::WinningPost, ProofKind::WindowPostPartition] {
        let req = crate::fixtures::requests::request(dir, manifest, kind).unwrap();
        let (a, b) = (crate::prepare(&req).unwrap(), crate::prepare(&req).unwrap());
        assert_eq!(a.partitions.len(), 1);
        for (p, q) in a.partitions.into_iter().zip(b.partitions) {
            assert_same_witness(p, q, &format!("{kind}"));
        }
    }
}

#[test]
fn snap_equals_the_circuit_on_the_fixture_update() {
    let (dir, manifest) = crate::fixtures::test_inputs();
    let req = crate::fixtures::requests::request(dir, manifest, ProofKind::SnapDealsUpdate).unwrap();
    let (a, b) = (crate::prepare(&req).unwrap(), crate::prepare(&req).unwrap());
    assert!(!a.partitions.is_empty());
    for (p, q) in a.partitions.into_iter().zip(b.partitions) {
        let what = format!("SnapDeals fixture partition {}", p.index);
        assert_same_witness(p, q, &what);
    }
}

/// Partition 0 of a generated update of `registered`, cut to its first `challenges`
/// challenges (the circuit's challenge count with it: partition 0's first challenges are the
/// same whatever the count): (native, gadgets).
fn snap_partition_cut<Tree: 'static + MerkleTreeTrait>(
    registered: filecoin_proofs_api::RegisteredUpdateProof,
    challenges: usize,
) -> (Partition, Partition) {
    use crate::circuits::snap::circuits;
    use crate::circuits::WithNativeWitness;
    use crate::fixtures::consistent::snap::{consistent_snap, go_abi_number};
    use crate::request::ProofRequest;

    let snap = consistent_snap(registered, 7).unwrap();
    let req = ProofRequest {
        kind: Some(ProofKind::SnapDealsUpdate),
        registered_proof: go_abi_number(registered).unwrap(),
        comm_r_old: snap.comm_r_old.to_vec(),
        comm_r_new: snap.comm_r_new.to_vec(),
        comm_d_new: snap.comm_d_new.to_vec(),
        vanilla_proofs: snap.vanilla_proofs.clone(),
        ..Default::default()
    };
    let partition_0 = || {
        let (k, mut circuit, _) = circuits::<Tree>(registered, &req).unwrap().into_iter().next().unwrap();
        assert_eq!(k, 0);
        circuit.pub_params.challenge_count = challenges;
        circuit.priv_inputs.challenge_proofs.truncate(challenges);
        circuit
    };
    let circuit = partition_0();
    let native = crate::circuits::native_witness::snap::SnapInputs::new(&circuit).unwrap();
    (
        Partition { index: 0, circuit: Box::new(WithNativeWitness { circuit, native }), public_inputs: vec![] },
        Partition { index: 0, circuit: Box::new(partition_0()), public_inputs: vec![] },
    )
}

#[test]
fn snap_equals_the_circuit_on_32g_and_64g_challenges() {
    // The real tree shapes (32 GiB: sub-trees; 64 GiB: sub- and top-trees), tree D depths,
    // apex trees and h values; two challenges, so that one digest gives both.
    use filecoin_proofs_api::RegisteredUpdateProof;
    let (p, q) = snap_partition_cut::<SectorShape32GiB>(RegisteredUpdateProof::StackedDrg32GiBV1, 2);
    assert_same_witness(p, q, "SnapDeals 32 GiB, two challenges");
    let (p, q) = snap_partition_cut::<SectorShape64GiB>(RegisteredUpdateProof::StackedDrg64GiBV1, 2);
    assert_same_witness(p, q, "SnapDeals 64 GiB, two challenges");
}
