//! `cuzk-peer-c2`: the system cuzk is measured against — filecoin-proofs' own PoRep C2
//! (`seal_commit_phase2`), one process per proof, parameters read from disk each time. That is
//! how Curio runs C2 today when it does not use a proving daemon. Built with the `supraseal`
//! feature, bellperson hands the proof to SupraSeal's CUDA prover (supraseal-c2); without it,
//! to bellperson's CPU prover.
//!
//! It takes the same C1 file as `cuzk-bench single` (Curio's envelope or the bare JSON) and
//! prints one JSON line: wall time, peak RSS, and what `seal_commit_phase2` returned.
//! filecoin-proofs verifies every proof before returning it, so a result of `ok` means the
//! proof verified. With synthetic inputs and parameters that check fails by construction;
//! the error says so, and the time is then "up to and including the failed self-check".
//! bellperson's and filecoin-proofs' own log lines (RUST_LOG=info) carry the breakdown:
//! synthesis time and prover time.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use base64::Engine;
use clap::Parser;
use filecoin_proofs_api::seal::{seal_commit_phase2, SealCommitPhase1Output};
use filecoin_proofs_api::SectorId;

#[derive(Parser)]
#[command(
    version,
    about = "filecoin-proofs' own PoRep C2, one proof per process (the peer cuzk is benchmarked against)"
)]
struct Args {
    /// C1 output: Curio's JSON envelope ({SectorNum, Phase1Out (base64), SectorSize}) or
    /// the bare SealCommitPhase1Output JSON.
    #[arg(long)]
    c1: PathBuf,
    /// Parameter directory (sets FIL_PROOFS_PARAMETER_CACHE); default: filecoin-proofs' own
    /// (the environment variable, else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    param_dir: Option<PathBuf>,
    /// Sector number, when the C1 file is bare JSON (an envelope carries its own).
    #[arg(long, default_value_t = 1)]
    sector_number: u64,
    /// Prover id, 32 bytes in hex (default: all zero).
    #[arg(long)]
    prover_id: Option<String>,
}

/// Curio's C1 envelope (see ../shared/notes/wire-api.md).
#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let args = Args::parse();
    let start = Instant::now();
    let outcome = run(&args);
    let wall = start.elapsed().as_secs_f64();
    let (result, error) = match &outcome {
        Ok(len) => (format!("ok: {len} proof bytes, verified by seal_commit_phase2's own check"), None),
        Err(e) => ("error".to_string(), Some(format!("{e:#}"))),
    };
    let line = serde_json::json!({
        "prover": if cfg!(feature = "supraseal") { "filecoin-proofs + supraseal-c2" } else { "filecoin-proofs (bellperson CPU)" },
        "wall_s": wall,
        "peak_rss_bytes": peak_rss_bytes(),
        "result": result,
        "error": error,
    });
    println!("{line}");
    std::process::exit(if outcome.is_ok() { 0 } else { 1 });
}

/// One C2; returns the proof's length.
fn run(args: &Args) -> Result<usize> {
    if let Some(dir) = &args.param_dir {
        // filecoin-proofs reads its settings from the environment once, on first use, which
        // is after this line; nothing else runs yet, so setting it here is race-free.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let raw = std::fs::read(&args.c1).with_context(|| format!("reading {}", args.c1.display()))?;
    let (json, sector_number) = match serde_json::from_slice::<Envelope>(&raw) {
        Ok(env) => {
            let json = base64::engine::general_purpose::STANDARD
                .decode(env.phase1_out.as_bytes())
                .context("the envelope's phase1_out is not base64")?;
            (json, env.sector_num)
        }
        Err(_) => (raw, args.sector_number),
    };
    let c1: SealCommitPhase1Output = serde_json::from_slice(&json).context("parsing the C1 output")?;
    let prover_id = parse_prover_id(args.prover_id.as_deref())?;
    let out = seal_commit_phase2(c1, prover_id, SectorId::from(sector_number)).context("seal_commit_phase2")?;
    Ok(out.proof.len())
}

fn parse_prover_id(hex: Option<&str>) -> Result<[u8; 32]> {
    let mut id = [0u8; 32];
    let Some(hex) = hex else { return Ok(id) };
    anyhow::ensure!(hex.len() == 64, "--prover-id wants 64 hex digits, got {}", hex.len());
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).context("--prover-id is not hex")?;
    }
    Ok(id)
}

/// The process's peak resident set (VmHWM), if the platform reports it.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
