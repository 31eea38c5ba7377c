//! Curio's two request-id habits through the real daemon over gRPC (2 KiB WindowPoSt): the
//! partitions of one deadline are sent one after another under the same id with different
//! inputs, and each must get its own valid proof; a job that did not complete (here:
//! cancelled) is retried under the same id, and the retry must be proved, not answered with
//! the old outcome.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::fixtures::{shared_fixture_set, Manifest};
use cuzk_filecoin::{ProofKind, ProofRequest};
use cuzk_proto::client::ProvingEngineClient;
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_proto::v1::{AwaitProofRequest, CancelProofRequest};
use tonic::transport::Channel;

/// As Curio names it: the partition index in the id is always 0.
const WDPOST_ID: &str = "wdpost-1000-0-0a1b2c3d";

fn fixture() -> (PathBuf, Manifest) {
    shared_fixture_set().expect("fixture set")
}

async fn daemon(dir: &Path) -> common::Running {
    common::start(&dir.join("params"), "", "").await
}

async fn submit(c: &mut ProvingEngineClient<Channel>, req: ProofRequest, request_id: &str) -> String {
    c.submit_proof(common::submit_request(req, request_id, 0)).await.expect("submit").into_inner().job_id
}

/// Await a job to its end and require a WindowPoSt proof that filecoin-proofs accepts.
async fn verified_proof(c: &mut ProvingEngineClient<Channel>, job_id: &str, dir: &Path, m: &Manifest) -> Vec<u8> {
    let res =
        c.await_proof(AwaitProofRequest { job_id: job_id.into(), timeout_ms: 0 }).await.expect("await").into_inner();
    assert_eq!(res.status(), Status::Completed, "job {job_id}: {}", res.error_message);
    assert!(
        verify_with_filecoin_proofs(dir, m, ProofKind::WindowPostPartition, &res.proof).unwrap(),
        "job {job_id}: proof rejected"
    );
    res.proof
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_post_partitions_under_one_id_each_get_their_own_proof() {
    let (dir, m) = fixture();
    let mut r = daemon(&dir).await;
    let c = &mut r.client;
    let partition_0 = request(&dir, &m, ProofKind::WindowPostPartition).unwrap();
    // Another partition of the deadline. With the fixture's single sector it proves the same
    // statement (API 1.2 challenges do not depend on the partition index), so filecoin-proofs'
    // check of the fixture accepts both proofs; what matters is that each is its own.
    let partition_1 = ProofRequest { partition_index: 1, ..partition_0.clone() };

    let first = submit(c, partition_0, WDPOST_ID).await;
    let first_proof = verified_proof(c, &first, &dir, &m).await;
    let second = submit(c, partition_1, WDPOST_ID).await;
    assert_ne!(second, first, "the second partition must not get the first partition's job");
    let second_proof = verified_proof(c, &second, &dir, &m).await;
    assert_ne!(second_proof, first_proof, "the second partition must get its own proof");
    r.stop(Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_cancel_is_proved_afresh() {
    let (dir, m) = fixture();
    let mut r = daemon(&dir).await;
    let c = &mut r.client;
    let req = request(&dir, &m, ProofKind::WindowPostPartition).unwrap();

    let cancelled = submit(c, req.clone(), "porep-1000-1").await;
    c.cancel_proof(CancelProofRequest { job_id: cancelled.clone() }).await.unwrap();
    let res = c.await_proof(AwaitProofRequest { job_id: cancelled.clone(), timeout_ms: 0 }).await.unwrap().into_inner();
    assert_eq!(res.status(), Status::Cancelled);

    let retry = submit(c, req, "porep-1000-1").await;
    assert_ne!(retry, cancelled, "a cancelled job is never handed back");
    verified_proof(c, &retry, &dir, &m).await;
    r.stop(Duration::from_secs(30));
}
