//! Smoke test of the real `cuzk-daemon` binary: start it on a temporary unix socket with an
//! empty parameter directory, talk to it with the generated gRPC client (status, input
//! errors, SRS errors, unknown jobs, metrics) and over HTTP, then stop it with SIGTERM and
//! check it exits 0 and removes its socket. Nothing is proved here.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cuzk_proto::client::ProvingEngineClient;
use cuzk_proto::v1::{
    AwaitProofRequest, CancelProofRequest, EvictSrsRequest, GetMetricsRequest, GetStatusRequest, PreloadSrsRequest,
    ProofKind, SubmitProofRequest,
};
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};
use tonic::Code;

/// Kills the daemon if the test fails before it is stopped properly.
struct Daemon(Option<Child>);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Daemon {
    fn pid(&self) -> i32 {
        self.0.as_ref().expect("daemon running").id() as i32
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.0.as_mut().expect("daemon running").try_wait().expect("polling the daemon")
    }

    fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                self.0 = None;
                return status;
            }
            assert!(start.elapsed() < limit, "daemon did not exit within {limit:?} of SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn connect(socket: &Path) -> Channel {
    let path = socket.to_path_buf();
    // The URI is required by the API but unused: every connection goes to the socket.
    Endpoint::try_from("http://[::]:50051")
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
        }))
        .await
        .expect("connecting over the unix socket")
}

/// Wait until the daemon answers on its socket (or fail with its exit status).
async fn wait_ready(daemon: &mut Daemon, socket: &Path) -> ProvingEngineClient<Channel> {
    let start = Instant::now();
    loop {
        if let Some(status) = daemon.exited() {
            panic!("cuzk-daemon exited during start-up: {status}");
        }
        if socket.exists() {
            let mut client = ProvingEngineClient::new(connect(socket).await);
            if client.get_status(GetStatusRequest {}).await.is_ok() {
                return client;
            }
        }
        assert!(start.elapsed() < Duration::from_secs(60), "daemon did not come up on {}", socket.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn http_get(port: u16, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connecting to the HTTP port");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_serves_status_and_rejects_bad_requests_then_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path().join("params");
    std::fs::create_dir(&params).unwrap();
    // The daemon creates the socket's directory itself.
    let socket: PathBuf = dir.path().join("run").join("cuzk.sock");
    let http_port = free_tcp_port();
    let config = dir.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nlisten = \"unix://{}\"\nhttp_listen = \"127.0.0.1:{http_port}\"\nshutdown_grace_secs = 5\n\n\
             [srs]\nparam_dir = \"{}\"\n\n[gpus]\nbackend = \"cpu\"\n",
            socket.display(),
            params.display()
        ),
    )
    .unwrap();

    let child = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .arg("--config")
        .arg(&config)
        .arg("--log-level")
        .arg("info")
        .stdin(Stdio::null())
        .spawn()
        .expect("starting cuzk-daemon");
    let mut daemon = Daemon(Some(child));
    let mut client = wait_ready(&mut daemon, &socket).await;

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
    assert!(status.contains("\"backend\"") && status.contains("\"queues\""), "{status}");

    // Nothing was queued by the rejected submits.
    let st = client.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(st.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{st:?}");
    drop(client);

    // SIGTERM: clean exit, socket removed.
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    let rc = unsafe { libc::kill(daemon.pid(), libc::SIGTERM) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    let status = daemon.wait_exit(Duration::from_secs(30));
    assert!(status.success(), "cuzk-daemon exited with {status}");
    assert!(!socket.exists(), "socket {} left behind", socket.display());
}
