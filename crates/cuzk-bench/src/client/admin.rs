//! Small one-RPC commands: `preload CIRCUIT_ID`, `evict CIRCUIT_ID` (parameter residency) and
//! `cancel JOB_ID`.

use anyhow::Result;
use cuzk_proto::v1;

use super::connect::{connect, rpc_error};
use super::kv_table;
use crate::report::bytes;

pub async fn preload(addr: &str, circuit_id: String) -> Result<()> {
    let mut client = connect(addr).await?;
    eprintln!("loading parameters for {circuit_id} …");
    let r = client
        .preload_srs(v1::PreloadSrsRequest { circuit_id: circuit_id.clone() })
        .await
        .map_err(|s| rpc_error("PreloadSRS", s))?
        .into_inner();
    let mut t = kv_table();
    t.add_row(vec!["circuit".to_string(), circuit_id]);
    if r.already_loaded {
        t.add_row(vec!["result".to_string(), "already resident".to_string()]);
    } else {
        t.add_row(vec!["result".to_string(), "loaded".to_string()]);
        t.add_row(vec!["load time".to_string(), super::ms(r.load_time_ms)]);
    }
    println!("{t}");
    Ok(())
}

pub async fn evict(addr: &str, circuit_id: String) -> Result<()> {
    let mut client = connect(addr).await?;
    let r = client
        .evict_srs(v1::EvictSrsRequest { circuit_id: circuit_id.clone() })
        .await
        .map_err(|s| rpc_error("EvictSRS", s))?
        .into_inner();
    let mut t = kv_table();
    t.add_row(vec!["circuit".to_string(), circuit_id]);
    if r.was_loaded {
        t.add_row(vec!["result".to_string(), "evicted".to_string()]);
        t.add_row(vec!["freed".to_string(), bytes(r.freed_bytes)]);
    } else {
        t.add_row(vec!["result".to_string(), "was not resident".to_string()]);
    }
    println!("{t}");
    Ok(())
}

pub async fn cancel(addr: &str, job_id: String) -> Result<()> {
    let mut client = connect(addr).await?;
    let r = client
        .cancel_proof(v1::CancelProofRequest { job_id: job_id.clone() })
        .await
        .map_err(|s| rpc_error("CancelProof", s))?
        .into_inner();
    let mut t = kv_table();
    t.add_row(vec!["job".to_string(), job_id]);
    t.add_row(vec![
        "result".to_string(),
        if r.was_running { "cancelled (it was running)" } else { "cancelled (it was queued or already finished)" }
            .to_string(),
    ]);
    println!("{t}");
    Ok(())
}
