//! `cuzk-bench status` (GetStatus as tables, or `--json`) and `cuzk-bench metrics` (the
//! Prometheus text exposition from GetMetrics).

use anyhow::Result;
use cuzk_proto::v1;
use serde_json::json;

use super::connect::{connect, rpc_error};
use super::kv_table;
use crate::report::{bytes, table};

#[derive(clap::Args)]
pub struct Args {
    /// Print the status as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

pub async fn run(addr: &str, args: Args) -> Result<()> {
    let mut client = connect(addr).await?;
    let st = client.get_status(v1::GetStatusRequest {}).await.map_err(|s| rpc_error("GetStatus", s))?.into_inner();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&st))?);
    } else {
        print_tables(addr, &st);
    }
    Ok(())
}

pub async fn metrics(addr: &str) -> Result<()> {
    let mut client = connect(addr).await?;
    let m = client.get_metrics(v1::GetMetricsRequest {}).await.map_err(|s| rpc_error("GetMetrics", s))?.into_inner();
    print!("{}", m.prometheus_text);
    if !m.prometheus_text.ends_with('\n') {
        println!();
    }
    Ok(())
}

fn tier_name(tier: i32) -> &'static str {
    v1::srs_status::Tier::try_from(tier).map_or("?", |t| t.as_str_name())
}

/// "3d 4h 05m 06s" style uptime.
fn uptime(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h) {
        (0, 0) => format!("{m}m {s:02}s"),
        (0, _) => format!("{h}h {m:02}m {s:02}s"),
        _ => format!("{d}d {h}h {m:02}m {s:02}s"),
    }
}

fn print_tables(addr: &str, st: &v1::GetStatusResponse) {
    let mut o = kv_table();
    o.add_row(vec!["daemon".to_string(), addr.to_string()]);
    o.add_row(vec!["uptime".to_string(), uptime(st.uptime_seconds)]);
    o.add_row(vec!["proofs completed".to_string(), st.total_proofs_completed.to_string()]);
    o.add_row(vec!["proofs failed".to_string(), st.total_proofs_failed.to_string()]);
    let limit = st.pinned_memory_limit_bytes;
    let used = st.pinned_memory_bytes;
    let pct = if limit > 0 { format!(" ({:.1} %)", used as f64 * 100.0 / limit as f64) } else { String::new() };
    o.add_row(vec!["working memory".to_string(), format!("{} of {}{pct}", bytes(used), bytes(limit))]);
    o.add_row(vec![
        "devices".to_string(),
        if st.gpus.is_empty() { "none (CPU backend)".to_string() } else { st.gpus.len().to_string() },
    ]);
    println!("{o}");

    let mut q = table(&["queue", "pending", "in progress"]);
    for qs in &st.queues {
        q.add_row(vec![qs.proof_kind.clone(), qs.pending.to_string(), qs.in_progress.to_string()]);
    }
    if st.queues.is_empty() {
        q.add_row(vec!["(none reported)".to_string(), String::new(), String::new()]);
    }
    println!("{q}");

    let mut s = table(&["resident parameters", "tier", "size", "jobs using"]);
    for p in &st.loaded_srs {
        s.add_row(vec![
            p.circuit_id.clone(),
            tier_name(p.tier).to_string(),
            bytes(p.size_bytes),
            p.ref_count.to_string(),
        ]);
    }
    if st.loaded_srs.is_empty() {
        s.add_row(vec!["(none)".to_string(), String::new(), String::new(), String::new()]);
    } else {
        let total: u64 = st.loaded_srs.iter().map(|p| p.size_bytes).sum();
        s.add_row(vec![format!("total ({})", st.loaded_srs.len()), String::new(), bytes(total), String::new()]);
    }
    println!("{s}");

    if !st.gpus.is_empty() {
        let mut g = table(&["GPU", "name", "VRAM free / total", "current job", "kind"]);
        for d in &st.gpus {
            g.add_row(vec![
                d.ordinal.to_string(),
                d.name.clone(),
                format!("{} / {}", bytes(d.vram_free_bytes), bytes(d.vram_total_bytes)),
                if d.current_job_id.is_empty() { "idle".to_string() } else { d.current_job_id.clone() },
                d.current_proof_kind.clone(),
            ]);
        }
        println!("{g}");
    }
}

fn to_json(st: &v1::GetStatusResponse) -> serde_json::Value {
    json!({
        "uptime_seconds": st.uptime_seconds,
        "total_proofs_completed": st.total_proofs_completed,
        "total_proofs_failed": st.total_proofs_failed,
        "pinned_memory_bytes": st.pinned_memory_bytes,
        "pinned_memory_limit_bytes": st.pinned_memory_limit_bytes,
        "queues": st.queues.iter().map(|q| json!({
            "proof_kind": q.proof_kind, "pending": q.pending, "in_progress": q.in_progress,
        })).collect::<Vec<_>>(),
        "loaded_srs": st.loaded_srs.iter().map(|p| json!({
            "circuit_id": p.circuit_id, "tier": tier_name(p.tier), "size_bytes": p.size_bytes, "ref_count": p.ref_count,
        })).collect::<Vec<_>>(),
        "gpus": st.gpus.iter().map(|g| json!({
            "ordinal": g.ordinal, "name": g.name, "vram_total_bytes": g.vram_total_bytes,
            "vram_free_bytes": g.vram_free_bytes, "current_job_id": g.current_job_id,
            "current_proof_kind": g.current_proof_kind,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::uptime;

    #[test]
    fn uptime_reads_well() {
        assert_eq!(uptime(5), "0m 05s");
        assert_eq!(uptime(3725), "1h 02m 05s");
        assert_eq!(uptime(90_061), "1d 1h 01m 01s");
    }
}
