//! Verified proofs without the ceremony's files: the real daemon with `srs.generated` (cuzk's
//! INSECURE setup, built in memory from each circuit's PCE matrices) proves consistent inputs
//! (`gen-consistent`'s sparse sectors, periodic ones for SnapDeals) of PoRep, WinningPoSt,
//! WindowPoSt and SnapDeals at 2 KiB and 8 MiB, and filecoin-proofs' own verifiers accept every proof against the generated
//! verifying key written to disk — while a tampered proof or a changed public input is
//! rejected.

mod common;

use std::path::Path;
use std::time::Duration;

use cuzk_core::pce_cache::PceCache;
use cuzk_filecoin::fixtures::consistent::inputs::InputSet;
use cuzk_filecoin::fixtures::set_filecoin_env;
use cuzk_filecoin::params::{param_files, write_generated_vk};
use cuzk_filecoin::CircuitId;
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_proto::v1::{AwaitProofRequest, SubmitProofRequest};

const SEED: u64 = 5;
/// (circuit, PoSt sectors): every size small enough for a 2-core CI machine.
const CIRCUITS: [(&str, usize); 8] = [
    ("porep-2k", 1),
    ("winning-2k", 1),
    ("wpost-2k", 2),
    ("snap-2k", 0),
    ("porep-8m", 1),
    ("winning-8m", 1),
    ("wpost-8m", 2),
    ("snap-8m", 0),
];

fn wire(set: &InputSet, dir: &Path) -> SubmitProofRequest {
    common::submit_request(set.request(dir).unwrap(), &format!("generated-{}", set.circuit), 0)
}

/// The same proof with C replaced by A: valid points, not a valid proof.
fn tampered(proof: &[u8]) -> Vec<u8> {
    let mut p = proof.to_vec();
    for part in p.chunks_mut(192) {
        let a = part[..48].to_vec();
        part[144..].copy_from_slice(&a);
    }
    p
}

/// The set with one public input changed: another sector's commitment (PoRep), another new
/// replica's (SnapDeals) or other challenge randomness (PoSt).
fn with_other_public_input(set: &InputSet, other: &InputSet) -> InputSet {
    let mut s = set.clone();
    if s.comm_r_hex.is_some() {
        s.comm_r_hex = other.comm_r_hex.clone();
    } else if s.comm_r_new_hex.is_some() {
        s.comm_r_new_hex = other.comm_r_new_hex.clone();
    } else {
        s.randomness_hex = other.randomness_hex.clone();
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn generated_setup_proofs_verify_with_filecoin_proofs() {
    let work = tempfile::tempdir().unwrap();
    let params = work.path().join("params");
    let list: Vec<String> = CIRCUITS.iter().map(|(c, _)| format!("\"{c}\"")).collect();
    let mut r = common::start(
        &params,
        "",
        &format!("generated = [{}]\ngenerated_seed = {SEED}\n", list.join(", ")),
    )
    .await;
    // filecoin-proofs reads the verifying keys from <verify>/params.
    let verify = work.path().join("verify");
    set_filecoin_env(&verify).unwrap();

    for (id, sectors) in CIRCUITS {
        let circuit = CircuitId::parse(id).unwrap();
        let dir = work.path().join(id);
        let (set, _) = InputSet::generate(circuit, sectors, 11, &dir).unwrap();
        let job = r.client.submit_proof(wire(&set, &dir)).await.expect("submit").into_inner().job_id;
        let done = r.client.await_proof(AwaitProofRequest { job_id: job, timeout_ms: 900_000 }).await.unwrap().into_inner();
        assert_eq!(done.status, Status::Completed as i32, "{id}: {}", done.error_message);

        // The key filecoin-proofs reads: generated from the same matrices (the daemon's PCE
        // cache) and seed, written as a .vk file.
        let (pc, _) = PceCache::new(params.join("pce"), params.clone()).get(circuit).unwrap();
        let files = param_files(&verify.join("params"), circuit).unwrap();
        write_generated_vk(&files, &cuzk_pce::setup::generate_vk(&pc, SEED).unwrap(), id).unwrap();
        assert!(set.verify_with_filecoin_proofs(&done.proof).unwrap(), "{id}: filecoin-proofs rejected the proof");
        assert!(!set.verify_with_filecoin_proofs(&tampered(&done.proof)).unwrap(), "{id}: a tampered proof verified");
        let (other, _) = InputSet::generate(circuit, sectors, 12, &work.path().join(format!("{id}-other"))).unwrap();
        assert!(
            !with_other_public_input(&set, &other).verify_with_filecoin_proofs(&done.proof).unwrap(),
            "{id}: verified against another public input"
        );
        // (filecoin-proofs caches a key once read, so another seed's key is not tried here;
        // cuzk-pce's setup tests show keys of other seeds differ.)
        eprintln!("{id}: proved by the daemon, verified by filecoin-proofs; {} ms", done.total_ms);
    }
    r.stop(Duration::from_secs(30));
}
