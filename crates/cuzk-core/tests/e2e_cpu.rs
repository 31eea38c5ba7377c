//! End to end on the CPU backend: each of the four proof types at 2 KiB, from Curio-shaped
//! inputs to a proof that filecoin-proofs' own verify functions accept; tampered proofs fail.

mod common;

use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::ProofKind;

fn prove_and_check(kind: ProofKind) -> Vec<u8> {
    let f = common::fixture();
    let req = request(&f.dir, &f.manifest, kind).unwrap();
    let out = f.engine.prove(&req).unwrap_or_else(|e| panic!("proving {kind}: {e}"));
    assert_eq!(out.proof.len(), 192 * out.partitions);
    assert_eq!(out.verification, cuzk_core::Verification::Verified, "real parameters: verified before returned");
    assert!(
        verify_with_filecoin_proofs(&f.dir, &f.manifest, kind, &out.proof).unwrap(),
        "filecoin-proofs rejects cuzk's {kind} proof"
    );
    // Flip one bit in C of the last partition: now it must fail.
    let mut tampered = out.proof.clone();
    let n = tampered.len();
    tampered[n - 10] ^= 0x01;
    let still_valid = verify_with_filecoin_proofs(&f.dir, &f.manifest, kind, &tampered).unwrap_or(false);
    assert!(!still_valid, "a tampered {kind} proof must not verify");
    out.proof
}

#[test]
fn winning_post_verifies_with_filecoin_proofs() {
    prove_and_check(ProofKind::WinningPost);
}

#[test]
fn window_post_partition_verifies_with_filecoin_proofs() {
    prove_and_check(ProofKind::WindowPostPartition);
}

#[test]
fn snap_deals_update_verifies_with_filecoin_proofs() {
    prove_and_check(ProofKind::SnapDealsUpdate);
}

#[test]
fn porep_c2_verifies_with_filecoin_proofs_from_envelope_and_bare_c1() {
    prove_and_check(ProofKind::PoRepSealCommit);
    // The bare SealCommitPhase1Output JSON is accepted as well as Curio's envelope, and
    // describes the same statement (same partitions, same public inputs).
    let f = common::fixture();
    let envelope = request(&f.dir, &f.manifest, ProofKind::PoRepSealCommit).unwrap();
    let mut bare = envelope.clone();
    bare.vanilla_proof = f.manifest.porep_c1(&f.dir).unwrap();
    assert_ne!(bare.vanilla_proof, envelope.vanilla_proof);
    let (pe, pb) = (cuzk_filecoin::prepare(&envelope).unwrap(), cuzk_filecoin::prepare(&bare).unwrap());
    assert_eq!(pe.partitions.len(), pb.partitions.len());
    for (x, y) in pe.partitions.iter().zip(&pb.partitions) {
        assert_eq!(x.public_inputs, y.public_inputs);
    }
}

#[test]
fn both_synthesis_paths_are_exercised() {
    // The shared engine runs the pre-compiled (PCE) path, the default…
    let f = common::fixture();
    assert!(f.engine.pce.is_some(), "PCE is on by default");
    // …and with PCE switched off, plain synthesis proves just as well.
    let mut config = f.engine.config.clone();
    config.apply_env(|k| (k == "CUZK_DISABLE_PCE").then(|| "1".to_string()));
    let plain = cuzk_core::Engine::new(config).unwrap();
    assert!(plain.pce.is_none());
    let req = request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap();
    let out = plain.prove(&req).unwrap();
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, ProofKind::WindowPostPartition, &out.proof).unwrap());
}
