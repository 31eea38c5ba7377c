//! A daemon killed with SIGKILL in the middle of a proof (no shutdown, its socket file left
//! behind) is started again with the same configuration, and the client resubmits under the
//! same request id, as Curio does after an error: the new daemon comes up on the same socket
//! path and the proof completes and verifies with filecoin-proofs.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::fixtures::shared_fixture_set;
use cuzk_filecoin::ProofKind;
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_proto::v1::AwaitProofRequest;

/// Curio's id for a SnapDeals proof (`snap-<miner>-<sector>`). SnapDeals rather than PoRep:
/// Curio resubmits both under the same id after an error, and the shorter proof (~17 s of CI's
/// CPU against PoRep's ~30 s, proved twice here in part) still lasts well past the 2 s after
/// which the first daemon is killed.
const REQUEST_ID: &str = "snap-1000-7";
const KIND: ProofKind = ProofKind::SnapDealsUpdate;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_killed_mid_way_completes_after_restart_under_the_same_id() {
    let (fixtures, m) = shared_fixture_set().expect("fixture set");
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run").join("cuzk.sock");
    let config = dir.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nlisten = \"unix://{}\"\nstate_dir = \"{}\"\n\n[srs]\nparam_dir = \"{}\"\n",
            socket.display(),
            dir.path().join("state").display(),
            fixtures.join("params").display()
        ),
    )
    .unwrap();
    let start = || {
        let child = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .spawn()
            .expect("starting cuzk-daemon");
        common::Daemon::new(child)
    };
    let wire = || common::submit_request(request(&fixtures, &m, KIND).unwrap(), REQUEST_ID, 0);

    // First life: the proof is accepted and under way when the process is killed.
    let mut first = start();
    let mut client = common::wait_ready(&mut first, &socket).await;
    let job = client.submit_proof(wire()).await.expect("submit").into_inner().job_id;
    let early =
        client.await_proof(AwaitProofRequest { job_id: job.clone(), timeout_ms: 2_000 }).await.unwrap().into_inner();
    assert_eq!(
        early.status(),
        Status::Timeout,
        "a 2 KiB SnapDeals proof on the CPU takes longer than 2 s: the kill lands mid-proof"
    );
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(first.pid(), libc::SIGKILL) }, 0);
    let status = first.wait_exit(Duration::from_secs(30));
    assert!(!status.success(), "killed, not exited: {status}");
    assert!(socket.exists(), "SIGKILL leaves the socket file behind");
    drop(client);

    // Second life on the same socket path: the resubmission is proved.
    let mut second = start();
    let mut client = common::wait_ready(&mut second, &socket).await;
    let job = client.submit_proof(wire()).await.expect("resubmit").into_inner().job_id;
    let done = client.await_proof(AwaitProofRequest { job_id: job, timeout_ms: 0 }).await.unwrap().into_inner();
    assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
    assert!(verify_with_filecoin_proofs(&fixtures, &m, KIND, &done.proof).unwrap());
}
