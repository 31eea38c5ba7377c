//! The optional HTTP endpoint (`daemon.http_listen`): `GET /metrics` for Prometheus,
//! `GET /status` as JSON for people and scripts, and `GET /timeline.csv`, the recent
//! per-partition timeline (synthesis, prover, device spans) for benchmarks. All read the
//! scheduler's live state.
//!
//! None of it is authenticated, so none of it names a job by its id: an id is all
//! CancelProof needs when no admin token is configured. Where a job must be told apart
//! (the timeline's rows, a device's current partition) it is by a tag, the first 8 hex
//! digits of a keyed SHA-256 of its id ([`Scheduler::job_tag`]), from which the id cannot
//! be recovered.

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
pub async fn serve(
    listener: TcpListener,
    scheduler: Arc<Scheduler>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
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
    let body = status_json(&scheduler.status(), |id| scheduler.job_tag(id));
    ([(CONTENT_TYPE, "application/json")], body.to_string())
}

/// The `/status` document; `tag` names a job (see the module docs).
pub fn status_json(st: &StatusSnapshot, tag: impl Fn(&str) -> String) -> Value {
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
                "current_job_tag": d.current.as_ref().map(|c| tag(&c.job_id)),
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use cuzk_backend::{DeviceReport, Urgency, WorkLabel};

    use super::*;

    /// Issue #36 item 9c: `/status` is unauthenticated too; a device's current partition is
    /// named by its job's tag, never its id.
    #[test]
    fn status_names_no_job_id() {
        let id = "porep-7-0123abcd";
        let busy = DeviceReport {
            current: Some(WorkLabel { job_id: id.into(), proof_kind: "porep".into(), urgency: Urgency::Normal }),
            ..Default::default()
        };
        let st = StatusSnapshot {
            queues: vec![],
            resident_srs: vec![],
            completed: 0,
            failed: 0,
            cancelled: 0,
            uptime: Duration::ZERO,
            memory_used: 0,
            memory_limit: 0,
            memory_resident: 0,
            memory_working: 0,
            memory_peak: 0,
            partitions_in_flight: 1,
            synthesis_workers: 1,
            prover_workers: 1,
            backend: "test".into(),
            devices: vec![busy, DeviceReport::default()],
            process_rss: 0,
            process_peak_rss: 0,
        };
        let doc = status_json(&st, |j| format!("tag-of-{}", j.len()));
        let text = doc.to_string();
        assert!(!text.contains("0123abcd"), "{text}");
        assert_eq!(doc["devices"][0]["current_job_tag"], "tag-of-16");
        assert!(doc["devices"][1]["current_job_tag"].is_null());
    }
}
