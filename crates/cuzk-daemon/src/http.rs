//! The optional HTTP endpoint (`daemon.http_listen`): `GET /metrics` for Prometheus,
//! `GET /status` as JSON for people and scripts, and `GET /timeline.csv`, the recent
//! per-partition timeline (synthesis, prover, device spans) for benchmarks. All read the
//! scheduler's live state.

use std::future::Future;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use cuzk_core::scheduler::{Scheduler, StatusSnapshot};
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// Content type of the Prometheus text exposition format.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4";

/// Bind `addr` (`host:port`); returns the listener and its actual address.
pub async fn bind(addr: &str) -> Result<(TcpListener, String)> {
    let listener = TcpListener::bind(addr).await.with_context(|| format!("binding HTTP listener {addr}"))?;
    let local = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| addr.to_string());
    Ok((listener, local))
}

/// Serve `/metrics` and `/status` until `shutdown` completes.
pub async fn serve(listener: TcpListener, scheduler: Arc<Scheduler>, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/timeline.csv", get(timeline))
        .with_state(scheduler);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await.context("HTTP server")
}

async fn metrics(State(scheduler): State<Arc<Scheduler>>) -> impl IntoResponse {
    ([(CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE)], scheduler.metrics_text())
}

async fn timeline(State(scheduler): State<Arc<Scheduler>>) -> impl IntoResponse {
    ([(CONTENT_TYPE, "text/csv")], scheduler.timeline_csv())
}

async fn status(State(scheduler): State<Arc<Scheduler>>) -> impl IntoResponse {
    let body = status_json(&scheduler.status());
    ([(CONTENT_TYPE, "application/json")], body.to_string())
}

/// The `/status` document.
pub fn status_json(st: &StatusSnapshot) -> Value {
    let queues: Vec<Value> = st
        .queues
        .iter()
        .map(|(kind, q)| json!({ "proof_kind": kind.name(), "pending": q.pending, "in_progress": q.in_progress }))
        .collect();
    let srs: Vec<Value> = st
        .resident_srs
        .iter()
        .map(|r| json!({ "circuit_id": r.circuit.to_string(), "bytes": r.bytes, "in_use": r.in_use, "synthetic": r.synthetic, "insecure": r.insecure }))
        .collect();
    let devices: Vec<Value> = st
        .devices
        .iter()
        .map(|d| {
            json!({
                "ordinal": d.ordinal, "name": d.name, "memory_total_bytes": d.memory_total,
                "memory_free_bytes": d.memory_free, "resident_bytes": d.resident_bytes,
                "partitions_proved": d.partitions_proved, "failures": d.failures,
                "busy_seconds": d.busy.as_secs_f64(), "active_partitions": d.active,
                "current_job_id": d.current.as_ref().map(|c| c.job_id.as_str()),
                "current_proof_kind": d.current.as_ref().map(|c| c.proof_kind.as_str()),
            })
        })
        .collect();
    json!({
        "backend": st.backend,
        "devices": devices,
        "workers": { "synthesis": st.synthesis_workers, "prover": st.prover_workers },
        "queues": queues,
        "resident_srs": srs,
        "totals": { "completed": st.completed, "failed": st.failed, "cancelled": st.cancelled },
        "uptime_seconds": st.uptime.as_secs(),
        "memory": {
            "used_bytes": st.memory_used, "limit_bytes": st.memory_limit,
            "resident_bytes": st.memory_resident, "peak_bytes": st.memory_peak,
            "process_rss_bytes": st.process_rss, "process_peak_rss_bytes": st.process_peak_rss,
        },
        "partitions_in_flight": st.partitions_in_flight,
    })
}
