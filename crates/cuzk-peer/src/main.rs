//! `cuzk-peer-c2`: the system cuzk is measured against — filecoin-proofs' own provers, called
//! the way Curio calls them when it does not use a proving daemon: PoRep C2
//! (`seal_commit_phase2`, `--kind porep`, the default), WinningPoSt
//! (`generate_winning_post_with_vanilla`, `--kind winning`) and one WindowPoSt partition
//! (`generate_single_window_post_with_vanilla`, `--kind wpost`). Built with the `supraseal`
//! feature, bellperson hands every proof to SupraSeal's CUDA prover (supraseal-c2); with `gpu`,
//! to its own CUDA prover (ec-gpu kernels); with neither, to its CPU prover.
//!
//! Inputs: PoRep takes the same C1 file as `cuzk-bench single` (`--c1`: Curio's envelope or the
//! bare JSON); PoSt takes a directory written by `cuzk-bench gen-consistent --circuit winning-…`
//! or `wpost-…` (`--inputs`: its `input-set.json` and vanilla proof files).
//!
//! `--runs N` (default 1) proves N times in this one process and prints one JSON line per run:
//! run number, kind, prover, wall time, peak RSS of that run, and what filecoin-proofs returned.
//! filecoin-proofs keeps parameters in memory after their first use, so **run 1 includes reading
//! the parameters from disk and later runs do not**: run 2 is the peer's time with parameters
//! loaded, the one to set beside a preloaded daemon. Each run reads its inputs from disk again,
//! as a request would bring them. The process exits non-zero if any run failed.
//!
//! Every proof is verified. `seal_commit_phase2` verifies its own proof before returning it;
//! PoSt proofs are checked here with `verify_winning_post` / `verify_window_post` against the
//! input set's randomness, prover id and comm_r of every sector (see `post`). So `ok` means the
//! proof verified, and a proof that does not is an error. With synthetic PoRep inputs and
//! parameters that check fails by construction; the error says so, and the time is then "up
//! to and including the failed self-check". bellperson's and filecoin-proofs' own log lines
//! (RUST_LOG=info) carry the breakdown: synthesis time and prover time.

mod post;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use base64::Engine;
use clap::{CommandFactory, Parser, ValueEnum};
use filecoin_proofs_api::seal::{seal_commit_phase2, SealCommitPhase1Output};
use filecoin_proofs_api::{PoStType, SectorId};

#[derive(Parser)]
#[command(
    version,
    about = "filecoin-proofs' own PoRep C2, WinningPoSt and WindowPoSt provers, N proofs in one process \
             (the peer cuzk is benchmarked against)"
)]
struct Args {
    /// What to prove.
    #[arg(long, value_enum, default_value_t = Kind::Porep)]
    kind: Kind,
    /// PoRep: the C1 output, Curio's JSON envelope ({SectorNum, Phase1Out (base64), SectorSize})
    /// or the bare SealCommitPhase1Output JSON.
    #[arg(long, conflicts_with = "inputs")]
    c1: Option<PathBuf>,
    /// PoSt: a `cuzk-bench gen-consistent` directory (input-set.json and the vanilla proofs)
    /// of a winning-… or wpost-… circuit; the WindowPoSt partition is the set's (index 0).
    #[arg(long)]
    inputs: Option<PathBuf>,
    /// Parameter directory (sets FIL_PROOFS_PARAMETER_CACHE); default: filecoin-proofs' own
    /// (the environment variable, else /var/tmp/filecoin-proof-parameters).
    #[arg(long)]
    param_dir: Option<PathBuf>,
    /// Proofs to make one after another in this process; the first includes the parameter load.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// PoRep: the sector number, when the C1 file is bare JSON (an envelope carries its own).
    #[arg(long, default_value_t = 1, conflicts_with = "inputs")]
    sector_number: u64,
    /// PoRep: the prover id, 32 bytes in hex (default: all zero). PoSt sets carry their own.
    #[arg(long, conflicts_with = "inputs")]
    prover_id: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// PoRep C2 (seal_commit_phase2) of a C1 file.
    Porep,
    /// WinningPoSt of a gen-consistent set.
    Winning,
    /// One WindowPoSt partition of a gen-consistent set.
    Wpost,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Porep => "porep",
            Kind::Winning => "winning",
            Kind::Wpost => "wpost",
        }
    }
}

/// A proof made and verified.
pub(crate) struct Proved {
    bytes: usize,
    /// The filecoin-proofs function that verified it.
    checked_by: &'static str,
    /// PoSt: proving and verifying apart (PoRep's self-check happens inside the prover call).
    prove_s: Option<f64>,
    verify_s: Option<f64>,
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let args = Args::parse();
    let wants_inputs = args.kind != Kind::Porep;
    if (wants_inputs && args.inputs.is_none()) || (!wants_inputs && args.c1.is_none()) {
        let (needs, other) = if wants_inputs { ("--inputs DIR", "--c1") } else { ("--c1 FILE", "--inputs") };
        let msg = format!("--kind {} needs {needs} (and takes no {other})", args.kind.name());
        Args::command().error(clap::error::ErrorKind::MissingRequiredArgument, msg).exit();
    }
    if let Some(dir) = &args.param_dir {
        // filecoin-proofs reads its settings from the environment once, on first use, which
        // is after this line; nothing else runs yet, so setting it here is race-free.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
    }
    let prover = if cfg!(feature = "supraseal") {
        "filecoin-proofs + supraseal-c2"
    } else if cfg!(feature = "gpu") {
        "filecoin-proofs + bellperson CUDA"
    } else {
        "filecoin-proofs (bellperson CPU)"
    };
    let mut failed = 0;
    for run in 1..=args.runs {
        // Each run's own peak: the parameters stay resident after run 1, so later peaks still
        // count them, but not run 1's load-time transients.
        let reset = reset_peak_rss();
        let start = Instant::now();
        let outcome = prove_once(&args);
        let wall = start.elapsed().as_secs_f64();
        let (result, error) = match &outcome {
            Ok(p) => (format!("ok: {} proof bytes, verified by {}", p.bytes, p.checked_by), None),
            Err(e) => ("error".to_string(), Some(format!("{e:#}"))),
        };
        failed += usize::from(outcome.is_err());
        let line = serde_json::json!({
            "run": run,
            "runs": args.runs,
            "kind": args.kind.name(),
            "prover": prover,
            "includes_param_load": run == 1,
            "wall_s": wall,
            "prove_s": outcome.as_ref().ok().and_then(|p| p.prove_s),
            "verify_s": outcome.as_ref().ok().and_then(|p| p.verify_s),
            "peak_rss_bytes": peak_rss_bytes(),
            "peak_rss_scope": if reset { "this run" } else { "the process so far" },
            "result": result,
            "error": error,
        });
        // stdout is line-buffered: each run's line is out before the next run starts, so a
        // later run killed for memory does not take the earlier figures with it.
        println!("{line}");
    }
    std::process::exit(if failed == 0 { 0 } else { 1 });
}

fn prove_once(args: &Args) -> Result<Proved> {
    match args.kind {
        Kind::Porep => prove_porep(args),
        Kind::Winning => post::prove(args.inputs.as_deref().expect("checked in main"), PoStType::Winning),
        Kind::Wpost => post::prove(args.inputs.as_deref().expect("checked in main"), PoStType::Window),
    }
}

/// Curio's C1 envelope (see ../shared/notes/wire-api.md).
#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
}

/// One C2 from the C1 file.
fn prove_porep(args: &Args) -> Result<Proved> {
    let path = args.c1.as_deref().expect("checked in main");
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
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
    let prover_id = match args.prover_id.as_deref() {
        Some(hex) => hex32("--prover-id", hex)?,
        None => [0; 32],
    };
    let out = seal_commit_phase2(c1, prover_id, SectorId::from(sector_number)).context("seal_commit_phase2")?;
    Ok(Proved { bytes: out.proof.len(), checked_by: "seal_commit_phase2's own check", prove_s: None, verify_s: None })
}

/// 64 hex digits as 32 bytes; `name` goes into the error.
pub(crate) fn hex32(name: &str, hex: &str) -> Result<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex, &mut out)
        .with_context(|| format!("{name} wants 64 hex digits, got {:?}", hex.chars().take(80).collect::<String>()))?;
    Ok(out)
}

/// Reset the kernel's peak-RSS counter (VmHWM) of this process; false where that is not
/// possible (not Linux, or a kernel before 4.0).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's peak resident set (VmHWM) since the last reset, if the platform reports it.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
