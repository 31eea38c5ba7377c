//! `cuzk-bench` as a client of `cuzk-daemon` (the `cuzk.v1.ProvingEngine` gRPC API): one
//! proof (`single`), many (`batch`), many clients mixing good, bad and oversized requests
//! (`load`), `status`, `metrics`, parameter residency (`preload`, `evict`), `cancel`; plus
//! `gen-vanilla`, which makes Curio-encoded vanilla proofs from a real sealed sector (no
//! daemon needed). One module per subcommand; shared helpers here.

pub mod admin;
pub mod batch;
pub mod connect;
pub mod gen_vanilla;
pub mod load;
pub mod single;
pub mod status;

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::{ProofKind, ProofRequest};
use cuzk_proto::v1;

/// Run an async client command to completion on a small runtime.
pub fn block_on<T>(fut: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(fut)
}

/// `--kind`: `porep`, `winning`, `wpost` (or `window`), `snap`.
pub fn parse_kind(s: &str) -> Result<ProofKind> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "porep" | "c2" => ProofKind::PoRepSealCommit,
        "winning" | "winningpost" => ProofKind::WinningPost,
        "wpost" | "window" | "windowpost" => ProofKind::WindowPostPartition,
        "snap" | "snapdeals" | "update" => ProofKind::SnapDealsUpdate,
        _ => bail!("unknown proof kind {s:?} (expected porep, winning, wpost or snap)"),
    })
}

/// `--priority`: `low`, `normal`, `high`, `critical` (unset: the kind's default).
pub fn parse_priority(s: &str) -> Result<v1::Priority> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "low" => v1::Priority::Low,
        "normal" => v1::Priority::Normal,
        "high" => v1::Priority::High,
        "critical" => v1::Priority::Critical,
        _ => bail!("unknown priority {s:?} (expected low, normal, high or critical)"),
    })
}

/// A 32-byte value given in hex on the command line.
pub fn parse_hex32(name: &str, s: &str) -> Result<[u8; 32]> {
    let s = s.trim().trim_start_matches("0x");
    let v = hex::decode(s).with_context(|| format!("{name} is not hex"))?;
    v.as_slice()
        .try_into()
        .map_err(|_| anyhow::anyhow!("{name} must be 32 bytes (64 hex digits), got {} bytes", v.len()))
}

/// The engine-side request as the wire message Curio sends.
pub fn to_wire(req: &ProofRequest, request_id: String, priority: Option<v1::Priority>) -> v1::SubmitProofRequest {
    let kind = req.kind.map_or(0, |k| k as i32);
    v1::SubmitProofRequest {
        request_id,
        proof_kind: kind,
        sector_size: req.sector_size,
        registered_proof: req.registered_proof,
        priority: priority.map_or(0, |p| p as i32),
        vanilla_proof: req.vanilla_proof.clone(),
        vanilla_proofs: req.vanilla_proofs.clone(),
        sector_number: req.sector_number,
        miner_id: req.miner_id,
        randomness: req.randomness.clone(),
        partition_index: req.partition_index,
        comm_r_old: req.comm_r_old.clone(),
        comm_r_new: req.comm_r_new.clone(),
        comm_d_new: req.comm_d_new.clone(),
    }
}

/// The name of an AwaitProofResponse status number.
pub fn status_name(status: i32) -> &'static str {
    v1::await_proof_response::Status::try_from(status).map_or("UNKNOWN", |s| s.as_str_name())
}

/// Milliseconds from the wire as "1.23 s".
pub fn ms(v: u64) -> String {
    crate::report::secs(Duration::from_millis(v))
}

/// A two-column "what | value" table without a header, in the style of `report::table`.
pub fn kv_table() -> comfy_table::Table {
    use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
    t
}
