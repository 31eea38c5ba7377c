//! Inputs larger (or smaller) than their registered proof allows are refused by `prepare`,
//! before any circuit is built: more challenges per PoRep partition, more layers or parents
//! per challenge, longer Merkle paths, several sectors hidden inside one PoSt vanilla proof,
//! more openings per sector, more SnapDeals challenges. storage-proofs builds a circuit of
//! whatever size it is handed, so without these checks such a request was accepted and
//! synthesized (and only failed at the prover, after all the work).

use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs::FallbackPoStSectorProof;
use serde_json::Value;
use storage_proofs_update::PartitionProof;

use crate::fixtures::requests::request;
use crate::{prepare, InputError, ProofKind, ProofRequest};

fn req(kind: ProofKind) -> ProofRequest {
    let (dir, manifest) = crate::fixtures::test_inputs();
    request(dir, manifest, kind).unwrap()
}

fn refused(r: &ProofRequest) -> InputError {
    match prepare(r) {
        Ok(p) => panic!("an oversized request was accepted ({} partitions)", p.partitions.len()),
        Err(e) => e,
    }
}

/// The fixture's C1 output as JSON, changed by `edit` on its one partition's challenge list,
/// sent bare (decode_c1 accepts the bare JSON as well as Curio's envelope).
fn porep_with(edit: impl FnOnce(&mut Vec<Value>)) -> ProofRequest {
    let mut r = req(ProofKind::PoRepSealCommit);
    let c1 = crate::circuits::porep::decode_c1(&r.vanilla_proof, r.sector_size).unwrap();
    let mut json = serde_json::to_value(&c1).unwrap();
    let partitions = json["vanilla_proofs"].as_object_mut().unwrap().values_mut().next().unwrap();
    let Value::Array(challenges) = &mut partitions[0] else { panic!("C1 partition is not a list") };
    edit(challenges);
    r.vanilla_proof = serde_json::to_vec(&json).unwrap();
    r
}

#[test]
fn the_unchanged_fixtures_are_accepted() {
    // The checks below must not refuse what filecoin-proofs itself produces.
    for kind in ProofKind::ALL {
        prepare(&req(kind)).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
    prepare(&porep_with(|_| {})).unwrap();
}

#[test]
fn porep_with_fifty_times_the_challenges_is_refused() {
    let r = porep_with(|c| {
        let one = c.clone();
        for _ in 1..50 {
            c.extend(one.iter().cloned());
        }
    });
    let e = refused(&r);
    assert!(matches!(e, InputError::WrongCount { got, .. } if got > 50), "{e}");
    assert!(e.to_string().contains("challenges"), "{e}");
    // One challenge too few is as wrong.
    let e = refused(&porep_with(|c| {
        c.pop();
    }));
    assert!(matches!(e, InputError::WrongCount { .. }), "{e}");
}

#[test]
fn porep_challenges_of_the_wrong_shape_are_refused() {
    let e = refused(&porep_with(|c| {
        let layers = c[0]["labeling_proofs"].as_array_mut().unwrap();
        layers.push(layers[0].clone());
    }));
    assert!(e.to_string().contains("labelling proofs"), "{e}");
    let e = refused(&porep_with(|c| {
        let parents = c[1]["replica_column_proofs"]["drg_parents"].as_array_mut().unwrap();
        parents.push(parents[0].clone());
    }));
    assert!(e.to_string().contains("DRG parent columns"), "{e}");
    let e = refused(&porep_with(|c| {
        let path = c[0]["comm_d_proofs"]["data"]["Single"]["path"]["path"].as_array_mut().unwrap();
        path.push(path[0].clone());
    }));
    assert!(e.to_string().contains("Merkle path"), "{e}");
}

type PostProof = FallbackPoStSectorProof<SectorShape2KiB>;

fn post_with(kind: ProofKind, edit: impl FnOnce(&mut PostProof)) -> ProofRequest {
    let mut r = req(kind);
    let mut p: PostProof = bincode::deserialize(&r.vanilla_proofs[0]).unwrap();
    edit(&mut p);
    r.vanilla_proofs[0] = bincode::serialize(&p).unwrap();
    r
}

#[test]
fn post_with_too_many_sectors_or_openings_is_refused() {
    // More sectors than one WindowPoSt partition has (2 at 2 KiB).
    let mut r = req(ProofKind::WindowPostPartition);
    r.vanilla_proofs = vec![r.vanilla_proofs[0].clone(); 3];
    assert!(matches!(refused(&r), InputError::WrongCount { got: 3, .. }));

    // Fifty sectors inside one vanilla proof: each would become a sector of the circuit.
    for kind in [ProofKind::WindowPostPartition, ProofKind::WinningPost] {
        let e = refused(&post_with(kind, |p| {
            let one = p.vanilla_proof.sectors[0].clone();
            p.vanilla_proof.sectors = vec![one; 50];
        }));
        assert!(matches!(e, InputError::WrongCount { got: 50, .. }), "{kind:?}: {e}");
        assert!(e.to_string().contains("sector proofs inside"), "{e}");
    }

    // Openings per sector: 10 for WindowPoSt, 66 for WinningPoSt; one more or one fewer.
    let e = refused(&post_with(ProofKind::WindowPostPartition, |p| {
        let openings = &mut p.vanilla_proof.sectors[0].inclusion_proofs;
        openings.push(openings[0].clone());
    }));
    assert!(matches!(e, InputError::WrongCount { got: 11, .. }), "{e}");
    let e = refused(&post_with(ProofKind::WinningPost, |p| {
        p.vanilla_proof.sectors[0].inclusion_proofs.pop();
    }));
    assert!(matches!(e, InputError::WrongCount { got: 65, .. }), "{e}");
}

#[test]
fn snap_with_extra_challenges_is_refused() {
    let mut r = req(ProofKind::SnapDealsUpdate);
    let mut p: PartitionProof<SectorShape2KiB> = bincode::deserialize(&r.vanilla_proofs[0]).unwrap();
    let one = p.challenge_proofs.clone();
    for _ in 1..50 {
        p.challenge_proofs.extend(one.iter().cloned());
    }
    r.vanilla_proofs[0] = bincode::serialize(&p).unwrap();
    let e = refused(&r);
    assert!(matches!(e, InputError::WrongCount { .. }), "{e}");
    assert!(e.to_string().contains("challenges per SnapDeals partition proof"), "{e}");
}
