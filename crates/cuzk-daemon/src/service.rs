//! The gRPC service: `cuzk.v1.ProvingEngine` implemented on the scheduler. It converts wire
//! messages to the engine's types and back, runs blocking scheduler calls off the async
//! executor, and maps each engine error to the gRPC status a client can act on.

use std::sync::Arc;
use std::time::Duration;

use cuzk_core::error::EngineError;
use cuzk_core::scheduler::{AwaitOutcome, JobResult, Phase, Priority, Scheduler, SubmitError, UnknownJob};
use cuzk_core::srs_cache::EvictOutcome;
use cuzk_filecoin::{ProofKind, ProofRequest};
use cuzk_proto::server::ProvingEngine;
use cuzk_proto::v1::{
    await_proof_response, srs_status, AwaitProofRequest, AwaitProofResponse, CancelProofRequest, CancelProofResponse,
    EvictSrsRequest, EvictSrsResponse, GetMetricsRequest, GetMetricsResponse, GetStatusRequest, GetStatusResponse,
    GpuStatus, PreloadSrsRequest, PreloadSrsResponse, ProveRequest, ProveResponse, QueueStatus, SrsStatus,
    SubmitProofRequest, SubmitProofResponse,
};
use tonic::{Request, Response, Status};

use crate::receive_gate::Received;

/// How long a submit waits for a decoding slot (`daemon.max_concurrent_decodes`) before it is
/// refused with RESOURCE_EXHAUSTED: long enough to ride out a burst (a deadline's WindowPoSt
/// partitions at once), short enough that a flood is turned away, not queued in memory.
const DECODE_WAIT: Duration = Duration::from_secs(10);

/// The service object tonic serves; cheap to clone (one shared scheduler).
#[derive(Clone)]
pub struct Service {
    scheduler: Arc<Scheduler>,
    /// Slots for decoding and splitting requests (`daemon.max_concurrent_decodes`).
    decodes: Arc<tokio::sync::Semaphore>,
    decode_wait: Duration,
}

impl Service {
    pub fn new(scheduler: Arc<Scheduler>) -> Self {
        let decodes = Arc::new(tokio::sync::Semaphore::new(scheduler.config().daemon.max_concurrent_decodes));
        Service { scheduler, decodes, decode_wait: DECODE_WAIT }
    }

    /// Convert, validate and enqueue one request (decoding runs on a blocking thread, at most
    /// `daemon.max_concurrent_decodes` at once). `received` is the message's admission by the
    /// receive gate: its receiving slot is kept while the message waits here for a decoding
    /// slot, and handed over once it has one, so that received messages waiting here count
    /// against the gate's bound (receive_gate.rs: at most 2 × max_concurrent_decodes large
    /// messages in the daemon).
    async fn submit(&self, msg: SubmitProofRequest, received: Option<Received>) -> Result<SubmitProofResponse, Status> {
        let (request_id, priority, request) = to_engine_request(msg)?;
        let slot = match tokio::time::timeout(self.decode_wait, self.decodes.clone().acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            _ => {
                tracing::warn!(request_id = %request_id, "SubmitProof rejected: every decoding slot busy");
                return Err(Status::resource_exhausted(format!(
                    "{} requests are being decoded already (daemon.max_concurrent_decodes); retry shortly",
                    self.scheduler.config().daemon.max_concurrent_decodes
                )));
            }
        };
        if let Some(r) = &received {
            r.hand_over();
        }
        let scheduler = self.scheduler.clone();
        let rid = request_id.clone();
        // The slot moves into the blocking task: held while the decoding really runs, even if
        // the client goes away meanwhile. The admission too: the message is in the daemon
        // until the decoding is done (the gate's count of resident messages).
        let outcome = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            let _received = received;
            scheduler.submit(&rid, priority, request)
        })
        .await
        .map_err(|e| Status::internal(format!("submit task failed: {e}")))?
        .map_err(|e| {
            tracing::warn!(request_id = %request_id, error = %e, "SubmitProof rejected");
            submit_error_status(e)
        })?;
        if outcome.existing {
            tracing::info!(request_id = %request_id, job = %outcome.job_id, "SubmitProof: existing job for this request_id");
        }
        Ok(SubmitProofResponse {
            job_id: outcome.job_id,
            queue_position: outcome.queue_position,
            assigned_gpu: String::new(),
        })
    }

    /// Wait for a job; `None` waits until it ends.
    async fn wait(&self, job_id: &str, timeout: Option<Duration>) -> Result<AwaitProofResponse, Status> {
        match self.scheduler.await_job(job_id, timeout).await.map_err(unknown_job_status)? {
            AwaitOutcome::Done(result) => Ok(result_response(job_id, result)),
            AwaitOutcome::TimedOut => {
                let mut resp = AwaitProofResponse { job_id: job_id.to_string(), ..Default::default() };
                resp.set_status(await_proof_response::Status::Timeout);
                Ok(resp)
            }
        }
    }
}

/// Wire request → (request id, priority, engine request). Unknown enum values are client
/// errors.
pub fn to_engine_request(m: SubmitProofRequest) -> Result<(String, Option<Priority>, ProofRequest), Status> {
    let kind = ProofKind::from_wire(m.proof_kind).ok_or_else(|| {
        Status::invalid_argument(format!(
            "proof_kind must be POREP_SEAL_COMMIT (1), SNAP_DEALS_UPDATE (2), WINDOW_POST_PARTITION (3) or WINNING_POST (4), got {}",
            m.proof_kind
        ))
    })?;
    let priority = match m.priority {
        0 => None,
        p => Some(Priority::from_wire(p).ok_or_else(|| {
            Status::invalid_argument(format!("priority must be 0 (unspecified) or LOW..CRITICAL (1-4), got {p}"))
        })?),
    };
    let request = ProofRequest {
        kind: Some(kind),
        registered_proof: m.registered_proof,
        sector_size: m.sector_size,
        vanilla_proof: m.vanilla_proof,
        vanilla_proofs: m.vanilla_proofs,
        sector_number: m.sector_number,
        miner_id: m.miner_id,
        randomness: m.randomness,
        partition_index: m.partition_index,
        comm_r_old: m.comm_r_old,
        comm_r_new: m.comm_r_new,
        comm_d_new: m.comm_d_new,
    };
    Ok((m.request_id, priority, request))
}

fn submit_error_status(e: SubmitError) -> Status {
    let message = e.to_string();
    match e {
        SubmitError::Input(_) => Status::invalid_argument(message),
        SubmitError::ResourceExhausted(_) => Status::resource_exhausted(message),
        SubmitError::ShuttingDown => Status::unavailable(message),
    }
}

fn unknown_job_status(e: UnknownJob) -> Status {
    Status::not_found(e.to_string())
}

/// Errors of PreloadSRS / EvictSRS: a bad circuit id is the client's mistake; missing or
/// unusable parameter files are the operator's to fix.
fn srs_error_status(e: EngineError) -> Status {
    let message = e.to_string();
    match e {
        EngineError::Input(_) => Status::invalid_argument(message),
        EngineError::SrsMissing { .. } | EngineError::Srs(_) => Status::failed_precondition(message),
        EngineError::ResourceExhausted(_) => Status::resource_exhausted(message),
        _ => Status::internal(message),
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u64::MAX as u128) as u64
}

/// A terminal job as AwaitProof / Prove report it.
fn result_response(job_id: &str, r: JobResult) -> AwaitProofResponse {
    use await_proof_response::Status as S;
    let status = match r.phase {
        Phase::Completed => S::Completed,
        Phase::Failed => S::Failed,
        Phase::Cancelled => S::Cancelled,
        Phase::Queued | Phase::Running => S::Unknown,
    };
    let mut resp = AwaitProofResponse {
        job_id: job_id.to_string(),
        proof: r.proof,
        error_message: r.error.unwrap_or_default(),
        queue_wait_ms: ms(r.timings.queue_wait),
        srs_load_ms: ms(r.timings.srs_load),
        synthesis_ms: ms(r.timings.synthesis),
        gpu_compute_ms: ms(r.timings.prove),
        total_ms: ms(r.timings.total),
        ..Default::default()
    };
    resp.set_status(status);
    resp
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Status> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Status::internal(format!("blocking task failed: {e}")))
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        mut request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        let received = Received::take(request.extensions_mut());
        self.submit(request.into_inner(), received).await.map(Response::new)
    }

    async fn await_proof(&self, request: Request<AwaitProofRequest>) -> Result<Response<AwaitProofResponse>, Status> {
        let m = request.into_inner();
        let timeout = (m.timeout_ms > 0).then(|| Duration::from_millis(m.timeout_ms));
        self.wait(&m.job_id, timeout).await.map(Response::new)
    }

    async fn prove(&self, mut request: Request<ProveRequest>) -> Result<Response<ProveResponse>, Status> {
        let received = Received::take(request.extensions_mut());
        let submit =
            request.into_inner().submit.ok_or_else(|| Status::invalid_argument("ProveRequest.submit is required"))?;
        let job = self.submit(submit, received).await?;
        let result = self.wait(&job.job_id, None).await?;
        Ok(Response::new(ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> Result<Response<CancelProofResponse>, Status> {
        let job_id = request.into_inner().job_id;
        let was_running = self.scheduler.cancel(&job_id).map_err(unknown_job_status)?;
        Ok(Response::new(CancelProofResponse { was_running }))
    }

    async fn get_status(&self, _request: Request<GetStatusRequest>) -> Result<Response<GetStatusResponse>, Status> {
        let st = self.scheduler.status();
        let queues = st
            .queues
            .iter()
            .map(|(kind, q)| QueueStatus {
                proof_kind: kind.name().to_string(),
                pending: q.pending,
                in_progress: q.in_progress,
            })
            .collect();
        let loaded_srs = st
            .resident_srs
            .iter()
            .map(|r| {
                let mut s = SrsStatus {
                    circuit_id: r.circuit.to_string(),
                    size_bytes: r.bytes,
                    ref_count: r.in_use.min(u32::MAX as usize) as u32,
                    ..Default::default()
                };
                s.set_tier(srs_status::Tier::Hot);
                s
            })
            .collect();
        Ok(Response::new(GetStatusResponse {
            // Empty on the CPU backend. current_job_id / current_proof_kind name the partition
            // holding the device at this instant (empty when idle).
            gpus: st
                .devices
                .iter()
                .map(|d| GpuStatus {
                    ordinal: d.ordinal,
                    name: d.name.clone(),
                    vram_total_bytes: d.memory_total,
                    vram_free_bytes: d.memory_free,
                    current_job_id: d.current.as_ref().map(|c| c.job_id.clone()).unwrap_or_default(),
                    current_proof_kind: d.current.as_ref().map(|c| c.proof_kind.clone()).unwrap_or_default(),
                })
                .collect(),
            loaded_srs,
            queues,
            total_proofs_completed: st.completed,
            total_proofs_failed: st.failed,
            uptime_seconds: st.uptime.as_secs(),
            // The proto's "working-set memory reserved by partitions in flight": loaded
            // parameters and matrices are not in it (they were until issue #37).
            pinned_memory_bytes: st.memory_working,
            pinned_memory_limit_bytes: st.memory_limit,
        }))
    }

    async fn get_metrics(&self, _request: Request<GetMetricsRequest>) -> Result<Response<GetMetricsResponse>, Status> {
        Ok(Response::new(GetMetricsResponse { prometheus_text: self.scheduler.metrics_text() }))
    }

    async fn preload_srs(&self, request: Request<PreloadSrsRequest>) -> Result<Response<PreloadSrsResponse>, Status> {
        let circuit = request.into_inner().circuit_id;
        let scheduler = self.scheduler.clone();
        let id = circuit.clone();
        let (already_loaded, took) = blocking(move || scheduler.preload(&id)).await?.map_err(|e| {
            tracing::warn!(%circuit, error = %e, "PreloadSRS failed");
            srs_error_status(e)
        })?;
        tracing::info!(%circuit, already_loaded, ms = ms(took), "PreloadSRS");
        Ok(Response::new(PreloadSrsResponse { already_loaded, load_time_ms: ms(took) }))
    }

    async fn evict_srs(&self, request: Request<EvictSrsRequest>) -> Result<Response<EvictSrsResponse>, Status> {
        let circuit = request.into_inner().circuit_id;
        let scheduler = self.scheduler.clone();
        let id = circuit.clone();
        // Off the async threads: dropping gigabytes of points takes a while.
        let outcome = blocking(move || scheduler.evict(&id)).await?.map_err(srs_error_status)?;
        tracing::info!(%circuit, ?outcome, "EvictSRS");
        let resp = match outcome {
            EvictOutcome::NotLoaded => EvictSrsResponse { was_loaded: false, freed_bytes: 0 },
            EvictOutcome::Freed { bytes } => EvictSrsResponse { was_loaded: true, freed_bytes: bytes },
            EvictOutcome::InUse { holders } => {
                return Err(Status::failed_precondition(format!(
                    "parameters for {circuit} are in use by {holders} job(s); evict again when they finish"
                )))
            }
            EvictOutcome::Loading => {
                return Err(Status::failed_precondition(format!(
                    "parameters for {circuit} are being loaded right now; evict again when the load ends"
                )))
            }
        };
        Ok(Response::new(resp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_enums_are_checked() {
        let ok = SubmitProofRequest { proof_kind: 4, priority: 0, ..Default::default() };
        let (_, prio, req) = to_engine_request(ok).unwrap();
        assert_eq!(prio, None);
        assert_eq!(req.kind, Some(ProofKind::WinningPost));
        let (_, prio, _) =
            to_engine_request(SubmitProofRequest { proof_kind: 1, priority: 3, ..Default::default() }).unwrap();
        assert_eq!(prio, Some(Priority::High));
        for bad in [
            SubmitProofRequest { proof_kind: 0, ..Default::default() },
            SubmitProofRequest { proof_kind: 9, ..Default::default() },
            SubmitProofRequest { proof_kind: 1, priority: 5, ..Default::default() },
            SubmitProofRequest { proof_kind: 1, priority: -1, ..Default::default() },
        ] {
            assert_eq!(to_engine_request(bad).unwrap_err().code(), tonic::Code::InvalidArgument);
        }
    }

    /// With every decoding slot taken, a submit is RESOURCE_EXHAUSTED (after the wait, zero
    /// here); with a slot free the same submit is decoded (and refused as bad input).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn submits_beyond_the_decoding_slots_are_resource_exhausted() {
        let mut config = cuzk_core::Config::default();
        config.gpus.backend = "cpu".into();
        config.daemon.max_concurrent_decodes = 2;
        let scheduler = Scheduler::start(config, None).unwrap();
        let mut svc = Service::new(scheduler.clone());
        svc.decode_wait = Duration::ZERO;
        let garbage = || SubmitProofRequest {
            proof_kind: 1,
            registered_proof: 5,
            sector_size: 2048,
            vanilla_proof: b"{".to_vec(),
            ..Default::default()
        };
        let taken = svc.decodes.clone().acquire_many_owned(2).await.unwrap();
        let e = svc.submit(garbage(), None).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
        assert!(e.message().contains("max_concurrent_decodes"), "{e:?}");
        drop(taken);
        let e = svc.submit(garbage(), None).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "a free slot lets the request be decoded: {e:?}");
        assert_eq!(svc.decodes.available_permits(), 2, "the slot is returned after decoding");
        scheduler.shutdown(Duration::from_secs(5));
    }

    /// Issue #36 item 4: what bounds large messages is how many are in the daemon, not only
    /// how many are being received. One decoding slot (`max_concurrent_decodes = 1`), held by
    /// the test as a decode in progress; eight clients, each on its own connection, send a
    /// 64 MiB SubmitProof at once. While the decode is held, only one message may be in: let
    /// in and waiting for the decoding slot (the old gate let each one go at the end of its
    /// body, and all eight waited in their handlers, 512 MiB). Once it is let go, one is
    /// decoded while the next waits: never more than two, counted by the gate from when it
    /// lets a message in until the handler has decoded or refused it. Every message is then
    /// decoded (and refused as garbage), none turned away.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn large_messages_in_the_daemon_are_bounded_while_a_decode_is_held() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

        use cuzk_proto::client::ProvingEngineClient;
        use cuzk_proto::server::ProvingEngineServer;

        use crate::receive_gate::ReceiveGate;

        const CLIENTS: usize = 8;
        const MESSAGE: usize = 64 << 20;
        let mut config = cuzk_core::Config::default();
        config.gpus.backend = "cpu".into();
        config.daemon.max_concurrent_decodes = 1;
        let scheduler = Scheduler::start(config, None).unwrap();
        let svc = Service::new(scheduler.clone());
        let held = svc.decodes.clone().acquire_owned().await.unwrap();
        // Long waits: here nothing may be refused for want of a slot, only be bounded.
        let gate = ReceiveGate::new(
            ProvingEngineServer::new(svc.clone()).max_decoding_message_size(MESSAGE + (1 << 20)),
            1,
            Duration::from_secs(300),
        );
        let resident = gate.resident();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(gate)
                .serve_with_incoming_shutdown(tokio_stream::wrappers::TcpListenerStream::new(listener), async {
                    stopped.await.unwrap_or(())
                }),
        );
        // The most messages ever in at once, sampled until the clients are done.
        let (peak, done) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let sampler = {
            let (resident, peak, done) = (resident.clone(), peak.clone(), done.clone());
            tokio::spawn(async move {
                while !done.load(Ordering::SeqCst) {
                    peak.fetch_max(resident.load(Ordering::SeqCst), Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
        };
        let clients: Vec<_> = (0..CLIENTS)
            .map(|i| {
                tokio::spawn(async move {
                    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                        .unwrap()
                        .connect()
                        .await
                        .unwrap();
                    let msg = SubmitProofRequest {
                        request_id: format!("large-{i}"),
                        proof_kind: 1,
                        registered_proof: 5,
                        sector_size: 2048,
                        vanilla_proof: vec![b'{'; MESSAGE],
                        ..Default::default()
                    };
                    ProvingEngineClient::new(channel).submit_proof(msg).await
                })
            })
            .collect();
        // Long enough for all eight to be received several times over (each takes well under
        // a second here), had nothing held them back.
        let start = std::time::Instant::now();
        while resident.load(Ordering::SeqCst) < CLIENTS && start.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(resident.load(Ordering::SeqCst), 1, "messages in the daemon while the only decoding slot is held");
        drop(held);
        for (i, c) in clients.into_iter().enumerate() {
            let e = c.await.unwrap().expect_err("garbage is refused");
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "client {i} was decoded, not turned away: {e:?}");
        }
        done.store(true, Ordering::SeqCst);
        sampler.await.unwrap();
        let peak = peak.load(Ordering::SeqCst);
        assert!(
            peak <= 2,
            "{peak} messages of {MESSAGE} bytes were in the daemon at once with max_concurrent_decodes = 1"
        );
        assert_eq!(resident.load(Ordering::SeqCst), 0, "every message was let go of");
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        scheduler.shutdown(Duration::from_secs(5));
    }

    #[test]
    fn terminal_phases_map_to_wire_status() {
        let r =
            JobResult { phase: Phase::Failed, proof: vec![], error: Some("boom".into()), timings: Default::default() };
        let resp = result_response("j", r);
        assert_eq!(resp.status(), await_proof_response::Status::Failed);
        assert_eq!(resp.error_message, "boom");
    }
}
