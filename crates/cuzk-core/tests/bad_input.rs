//! Bad input gets a typed error that says what is wrong — never a panic, never a proof.

mod common;

use cuzk_core::{Config, Engine, EngineError};
use cuzk_filecoin::fixtures::requests::request;
use cuzk_filecoin::{InputError, ProofKind, ProofRequest};

fn req(kind: ProofKind) -> ProofRequest {
    let f = common::fixture();
    request(&f.dir, &f.manifest, kind).unwrap()
}

fn err(r: &ProofRequest) -> EngineError {
    match common::fixture().engine.prove(r) {
        Ok(_) => panic!("a bad request produced a proof"),
        Err(e) => e,
    }
}

#[test]
fn garbage_and_truncated_porep_c1() {
    let mut r = req(ProofKind::PoRepSealCommit);
    r.vanilla_proof = b"{not json".to_vec();
    assert!(matches!(err(&r), EngineError::Input(InputError::BadC1Json(_))));

    let good = req(ProofKind::PoRepSealCommit).vanilla_proof;
    r.vanilla_proof = good[..good.len() / 2].to_vec();
    let e = err(&r);
    assert!(matches!(e, EngineError::Input(InputError::BadC1Json(_))), "{e}");

    // An envelope whose Phase1Out is not base64.
    r.vanilla_proof = br#"{"SectorNum": 1, "Phase1Out": "%%%", "SectorSize": 2048}"#.to_vec();
    assert!(matches!(err(&r), EngineError::Input(InputError::BadC1Base64(_))));

    // Envelope sector size disagrees with the request.
    r = req(ProofKind::PoRepSealCommit);
    r.sector_size = 2048;
    let mut env: serde_json::Value = serde_json::from_slice(&r.vanilla_proof).unwrap();
    env["SectorSize"] = 8388608u64.into();
    r.vanilla_proof = serde_json::to_vec(&env).unwrap();
    assert!(matches!(err(&r), EngineError::Input(InputError::EnvelopeSectorSizeMismatch { .. })));
}

#[test]
fn registered_proof_problems() {
    let mut r = req(ProofKind::PoRepSealCommit);
    r.registered_proof = 99;
    assert!(matches!(err(&r), EngineError::Input(InputError::UnknownRegisteredProof { .. })));

    // V1 (0) requested but the C1 output is for V1_1 (5).
    r.registered_proof = 0;
    let e = err(&r);
    assert!(matches!(e, EngineError::Input(InputError::RegisteredProofMismatch { .. })), "{e}");
    assert!(e.to_string().contains("StackedDrg2KiBV1_1"), "{e}");

    // Wrong sector size for the registered proof.
    let mut r = req(ProofKind::WinningPost);
    r.sector_size = 32 << 30;
    assert!(matches!(err(&r), EngineError::Input(InputError::SectorSizeMismatch { .. })));

    // A WindowPoSt number sent as WinningPoSt.
    let mut r = req(ProofKind::WinningPost);
    r.registered_proof = 10;
    assert!(matches!(err(&r), EngineError::Input(InputError::WrongKindForProof { .. })));

    let mut r = req(ProofKind::WinningPost);
    r.kind = None;
    assert!(matches!(err(&r), EngineError::Input(InputError::Invalid { what: "proof_kind", .. })));
}

#[test]
fn bad_vanilla_proofs_and_fields() {
    // Garbage / truncated bincode.
    let mut r = req(ProofKind::WinningPost);
    r.vanilla_proofs = vec![vec![1, 2, 3]];
    let e = err(&r);
    assert!(matches!(e, EngineError::Input(InputError::BadBincode { index: 0, .. })), "{e}");

    let mut r = req(ProofKind::SnapDealsUpdate);
    let half = r.vanilla_proofs[0].len() / 2;
    r.vanilla_proofs[0].truncate(half);
    assert!(matches!(err(&r), EngineError::Input(InputError::BadBincode { .. })));

    // Wrong number of vanilla proofs.
    let mut r = req(ProofKind::WinningPost);
    let p = r.vanilla_proofs[0].clone();
    r.vanilla_proofs.push(p);
    assert!(matches!(err(&r), EngineError::Input(InputError::WrongCount { .. })));
    r.vanilla_proofs.clear();
    assert!(matches!(err(&r), EngineError::Input(InputError::WrongCount { .. })));

    let mut r = req(ProofKind::SnapDealsUpdate);
    r.vanilla_proofs.push(r.vanilla_proofs[0].clone());
    assert!(matches!(err(&r), EngineError::Input(InputError::WrongCount { .. })));

    // Commitment and randomness lengths.
    let mut r = req(ProofKind::SnapDealsUpdate);
    r.comm_d_new.pop();
    assert!(matches!(err(&r), EngineError::Input(InputError::BadLength { name: "comm_d_new", got: 31 })));
    let mut r = req(ProofKind::WindowPostPartition);
    r.randomness = vec![0; 16];
    assert!(matches!(err(&r), EngineError::Input(InputError::BadLength { name: "randomness", got: 16 })));
}

#[test]
fn inconsistent_inputs_never_yield_a_proof() {
    // Vanilla proofs for one randomness, request with another: caught before returning.
    let mut r = req(ProofKind::WinningPost);
    r.randomness[0] ^= 0xff;
    let e = err(&r);
    assert!(
        matches!(e, EngineError::PublicInputMismatch { .. } | EngineError::InvalidProof { .. } | EngineError::Input(_)),
        "unexpected error {e}"
    );
    assert!(e.is_client_error() || matches!(e, EngineError::InvalidProof { .. }), "{e}");

    // SnapDeals with comm_r_new from another sector.
    let mut r = req(ProofKind::SnapDealsUpdate);
    r.comm_r_new = r.comm_r_old.clone();
    let e = err(&r);
    assert!(
        matches!(
            e,
            EngineError::PublicInputMismatch { .. }
                | EngineError::InvalidProof { .. }
                | EngineError::Input(_)
                | EngineError::Synthesis { .. }
        ),
        "unexpected error {e}"
    );
    // The engine is still fine afterwards.
    let f = common::fixture();
    assert!(f.engine.prove(&req(ProofKind::WindowPostPartition)).is_ok());
}

#[test]
fn missing_and_corrupt_parameter_files_are_clear_errors() {
    let f = common::fixture();
    let empty = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.srs.param_dir = empty.path().into();
    let engine = Engine::new(config.clone()).unwrap();
    let e = engine.prove(&req(ProofKind::WindowPostPartition)).err().expect("no parameters, no proof");
    assert!(matches!(e, EngineError::SrsMissing { .. }), "{e}");
    assert!(e.to_string().contains(".params does not exist"), "{e}");

    // A truncated copy of the real file.
    let files =
        cuzk_filecoin::params::param_files(&f.dir.join("params"), cuzk_filecoin::CircuitId::parse("wpost-2k").unwrap())
            .unwrap();
    let bytes = std::fs::read(&files.params).unwrap();
    let target = empty.path().join(files.params.file_name().unwrap());
    std::fs::write(&target, &bytes[..bytes.len() - 1000]).unwrap();
    let e = engine.prove(&req(ProofKind::WindowPostPartition)).err().expect("truncated parameters, no proof");
    assert!(matches!(e, EngineError::Srs(_)), "{e}");
    assert!(e.to_string().contains("truncated") && e.to_string().contains(&*target.to_string_lossy()), "{e}");

    // Same length, one point corrupted: the on-curve check catches it.
    let mut corrupt = bytes.clone();
    let at = corrupt.len() - 3 * 192 - 5;
    corrupt[at] ^= 0x5a;
    std::fs::write(&target, &corrupt).unwrap();
    let engine = Engine::new(config).unwrap();
    let e = engine.prove(&req(ProofKind::WindowPostPartition)).err().expect("corrupt parameters, no proof");
    assert!(e.to_string().contains("not a valid point") || e.to_string().contains("subgroup"), "{e}");
}
