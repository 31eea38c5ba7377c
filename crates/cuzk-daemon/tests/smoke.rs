//! Smoke test of the real `cuzk-daemon` binary: start it on a temporary unix socket with an
//! empty parameter directory, talk to it with the generated gRPC client (status, input
//! errors, SRS errors, unknown jobs, metrics) and over HTTP, then stop it with SIGTERM and
//! check it exits 0 and removes its socket. Nothing is proved here.

mod common;

use std::time::Duration;

use common::http_get;
use cuzk_proto::v1::{
    AwaitProofRequest, CancelProofRequest, EvictSrsRequest, GetMetricsRequest, GetStatusRequest, PreloadSrsRequest,
    ProofKind, SubmitProofRequest,
};
use tonic::Code;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_serves_status_and_rejects_bad_requests_then_stops_cleanly() {
    let params = tempfile::tempdir().unwrap();
    let mut running = common::start(params.path(), "", "[gpus]\nbackend = \"cpu\"").await;
    let (socket, http_port) = (running.socket.clone(), running.http_port);
    let client = &mut running.client;

    // Status: one queue per proof kind, nothing done yet, nothing resident.
    let st = client.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(st.queues.len(), 4, "{st:?}");
    let mut kinds: Vec<&str> = st.queues.iter().map(|q| q.proof_kind.as_str()).collect();
    kinds.sort();
    assert_eq!(kinds, ["porep", "snap", "winning", "wpost"]);
    assert!(st.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{st:?}");
    assert_eq!((st.total_proofs_completed, st.total_proofs_failed), (0, 0));
    assert!(st.loaded_srs.is_empty() && st.gpus.is_empty(), "{st:?}");
    assert!(st.pinned_memory_limit_bytes > 0);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o660, "socket mode {mode:o}");

    // Garbage C1 bytes for a 2 KiB PoRep (V1_1): rejected at submit, naming the JSON problem.
    let porep = SubmitProofRequest {
        request_id: "porep-1000-1".into(),
        proof_kind: ProofKind::PorepSealCommit as i32,
        registered_proof: 5,
        vanilla_proof: b"definitely not C1 output".to_vec(),
        sector_number: 1,
        miner_id: 1000,
        ..Default::default()
    };
    let err = client.submit_proof(porep.clone()).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("JSON"), "{}", err.message());

    // A registered-proof number that does not exist.
    let err = client.submit_proof(SubmitProofRequest { registered_proof: 999, ..porep.clone() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("999"), "{}", err.message());

    // Unspecified proof kind and out-of-range priority.
    let err = client.submit_proof(SubmitProofRequest { proof_kind: 0, ..porep.clone() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    let err = client.submit_proof(SubmitProofRequest { priority: 7, ..porep.clone() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");

    // Parameters: none in the directory, an invalid circuit id, and nothing to evict.
    let err = client.preload_srs(PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(err.message().contains("porep-2k"), "{}", err.message());
    let err = client.preload_srs(PreloadSrsRequest { circuit_id: "porep-3g".into() }).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    let evicted = client.evict_srs(EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(!evicted.was_loaded);
    assert_eq!(evicted.freed_bytes, 0);

    // Unknown jobs.
    let err = client.await_proof(AwaitProofRequest { job_id: "no-such-job".into(), timeout_ms: 10 }).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = client.cancel_proof(CancelProofRequest { job_id: "no-such-job".into() }).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");

    // Metrics over gRPC and over HTTP.
    let text = client.get_metrics(GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    assert!(text.contains("cuzk_memory_budget_limit_bytes"), "{text}");
    assert!(text.contains("cuzk_partitions_in_flight"), "{text}");
    let metrics = http_get(http_port, "/metrics");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(metrics.to_ascii_lowercase().contains("content-type: text/plain; version=0.0.4"), "{metrics}");
    assert!(metrics.contains("cuzk_memory_budget_limit_bytes"), "{metrics}");
    let status = http_get(http_port, "/status");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    // The backend in use is named: gpus.backend = "cpu" here.
    assert!(status.contains("\"backend\":\"cpu\"") && status.contains("\"queues\""), "{status}");

    // Nothing was queued by the rejected submits.
    let st = client.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(st.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{st:?}");

    // SIGTERM: clean exit, socket removed.
    running.stop(Duration::from_secs(30));
}
