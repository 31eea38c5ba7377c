//! `cuzk-bench single`: one proof through the daemon. The inputs come from the fixture set
//! (`--fixtures DIR --kind K`, and the proof is then checked with filecoin-proofs' verifier),
//! from a consistent input set (`--consistent DIR`, checked with filecoin-proofs when
//! `--verify-dir` holds the generated verifying key in `params/`), or from files (`--c1` for
//! PoRep, `--vanilla` for PoSt/SnapDeals, plus the scalar fields).
//! Sends `Prove`, or `SubmitProof` (+ `AwaitProof` with `--timeout-ms`) and prints the job's
//! outcome and timings as a table. A job proved with synthetic parameters (daemon configured
//! with `srs.synthetic`) is reported as UNVERIFIED with its timings, and exits 0.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_core::synthetic::is_unverified_message;
use cuzk_filecoin::fixtures::consistent::inputs::InputSet;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::{ProofKind, ProofRequest};
use cuzk_proto::v1;

use super::connect::{connect, rpc_error};
use super::{kv_table, ms, parse_hex32, parse_kind, parse_priority, status_name, to_wire};
use crate::report::secs;

#[derive(clap::Args)]
pub struct Args {
    /// Fixture set to take the inputs from (used unless --c1 or --vanilla is given).
    #[command(flatten)]
    fixtures: crate::FixtureDir,
    /// Proof kind: porep, winning, wpost or snap (taken from the set with --consistent).
    #[arg(long, value_parser = parse_kind, required_unless_present = "consistent")]
    kind: Option<ProofKind>,
    /// A consistent input set (`cuzk-bench gen-consistent`) to take every input from.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["c1", "vanilla"])]
    consistent: Option<PathBuf>,
    /// With --consistent: check the proof with filecoin-proofs' verifier, reading the
    /// verifying key from DIR/params (`cuzk-bench gen-setup --vk-only --out DIR/params`).
    #[arg(long, value_name = "DIR", requires = "consistent")]
    verify_dir: Option<PathBuf>,
    /// Go abi registered-proof number (file mode; required there).
    #[arg(long)]
    registered_proof: Option<u64>,
    /// PoRep: the C1 output (Curio's JSON envelope or the bare SealCommitPhase1Output JSON).
    #[arg(long, value_name = "FILE")]
    c1: Option<PathBuf>,
    /// PoSt / SnapDeals: one bincode vanilla proof per file (repeat, in order).
    #[arg(long, value_name = "FILE")]
    vanilla: Vec<PathBuf>,
    /// PoSt challenge randomness, 32 bytes in hex.
    #[arg(long, value_name = "HEX")]
    randomness: Option<String>,
    /// The miner's actor id (PoSt, PoRep).
    #[arg(long)]
    miner_id: Option<u64>,
    /// The sector number (PoRep: must match the C1 output).
    #[arg(long)]
    sector_number: Option<u64>,
    /// WindowPoSt partition index.
    #[arg(long)]
    partition_index: Option<u32>,
    /// SnapDeals: the sector key's CommR (hex).
    #[arg(long, value_name = "HEX")]
    comm_r_old: Option<String>,
    /// SnapDeals: the updated replica's CommR (hex).
    #[arg(long, value_name = "HEX")]
    comm_r_new: Option<String>,
    /// SnapDeals: the new data's CommD (hex).
    #[arg(long, value_name = "HEX")]
    comm_d_new: Option<String>,
    /// low, normal, high or critical (default: the kind's default).
    #[arg(long, value_parser = parse_priority)]
    priority: Option<v1::Priority>,
    /// Idempotency key sent as request_id (default: none).
    #[arg(long, default_value = "")]
    request_id: String,
    /// Only submit: print the job id and return without waiting.
    #[arg(long, conflicts_with = "timeout_ms")]
    submit_only: bool,
    /// Submit, then AwaitProof with this timeout (instead of one Prove call).
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Write the proof bytes here.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

impl Args {
    fn file_mode(&self) -> bool {
        self.c1.is_some() || !self.vanilla.is_empty()
    }

    /// The first input flag given that only file mode uses.
    fn file_only_flag(&self) -> Option<&'static str> {
        [
            ("--registered-proof", self.registered_proof.is_some()),
            ("--randomness", self.randomness.is_some()),
            ("--miner-id", self.miner_id.is_some()),
            ("--sector-number", self.sector_number.is_some()),
            ("--partition-index", self.partition_index.is_some()),
            ("--comm-r-old", self.comm_r_old.is_some()),
            ("--comm-r-new", self.comm_r_new.is_some()),
            ("--comm-d-new", self.comm_d_new.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }

    /// The request from files and flags.
    fn file_request(&self) -> Result<ProofRequest> {
        let registered_proof = self.registered_proof.context("--registered-proof is required with --c1/--vanilla")?;
        let hex = |name: &str, v: &Option<String>| -> Result<Vec<u8>> {
            v.as_deref().map_or(Ok(vec![]), |s| parse_hex32(name, s).map(|b| b.to_vec()))
        };
        let read = |p: &PathBuf| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        let kind = self.kind.context("--kind is required with --c1/--vanilla")?;
        let mut req = ProofRequest {
            kind: Some(kind),
            registered_proof,
            sector_number: self.sector_number.unwrap_or(0),
            miner_id: self.miner_id.unwrap_or(0),
            partition_index: self.partition_index.unwrap_or(0),
            randomness: hex("--randomness", &self.randomness)?,
            comm_r_old: hex("--comm-r-old", &self.comm_r_old)?,
            comm_r_new: hex("--comm-r-new", &self.comm_r_new)?,
            comm_d_new: hex("--comm-d-new", &self.comm_d_new)?,
            ..Default::default()
        };
        match kind {
            ProofKind::PoRepSealCommit => {
                let c1 = self.c1.as_ref().context("PoRep needs --c1 FILE")?;
                req.vanilla_proof = read(c1)?;
                if !self.vanilla.is_empty() {
                    bail!("--vanilla is for PoSt and SnapDeals; PoRep takes --c1");
                }
            }
            _ => {
                if self.c1.is_some() {
                    bail!("--c1 is for PoRep; {kind} takes --vanilla FILE (repeatable)");
                }
                if self.vanilla.is_empty() {
                    bail!("{kind} needs at least one --vanilla FILE");
                }
                req.vanilla_proofs = self.vanilla.iter().map(read).collect::<Result<_>>()?;
            }
        }
        Ok(req)
    }
}

pub async fn run(addr: &str, args: Args) -> Result<()> {
    let dir = &args.fixtures.dir;
    let consistent = match &args.consistent {
        Some(set_dir) => {
            if let Some(flag) = args.file_only_flag() {
                bail!("{flag} does not apply with --consistent; every input comes from {}", set_dir.display());
            }
            let set = InputSet::load(set_dir)?;
            if let Some(vdir) = &args.verify_dir {
                cuzk_filecoin::fixtures::set_filecoin_env(vdir)?;
            }
            Some(set)
        }
        None => None,
    };
    let fixture = if args.file_mode() || consistent.is_some() {
        None
    } else {
        let m = cuzk_filecoin::fixtures::load(dir).with_context(|| {
            format!("no fixture set in {} (make it with `cuzk-bench fixtures`, or give --c1/--vanilla)", dir.display())
        })?;
        Some(m)
    };
    let req = match (&fixture, &consistent, &args.consistent) {
        (Some(m), _, _) => {
            if let Some(flag) = args.file_only_flag() {
                bail!("{flag} only applies with --c1/--vanilla; fixture mode takes every input from {}", dir.display());
            }
            request(dir, m, args.kind.context("--kind is required in fixture mode")?)?
        }
        (None, Some(set), Some(set_dir)) => set.request(set_dir)?,
        _ => args.file_request()?,
    };
    let kind = req.kind.context("the request has no kind")?;
    let submit = to_wire(&req, args.request_id.clone(), args.priority);

    let mut client = connect(addr).await?;
    let started = Instant::now();
    if args.submit_only {
        let r = client.submit_proof(submit).await.map_err(|s| rpc_error("SubmitProof", s))?.into_inner();
        let mut t = kv_table();
        t.add_row(vec!["job id".to_string(), r.job_id]);
        t.add_row(vec!["queue position".to_string(), r.queue_position.to_string()]);
        if !r.assigned_gpu.is_empty() {
            t.add_row(vec!["assigned GPU".to_string(), r.assigned_gpu]);
        }
        t.add_row(vec!["client round-trip".to_string(), secs(started.elapsed())]);
        println!("{t}");
        return Ok(());
    }
    let result = match args.timeout_ms {
        Some(timeout_ms) => {
            let job = client.submit_proof(submit).await.map_err(|s| rpc_error("SubmitProof", s))?.into_inner();
            eprintln!("submitted job {} (queue position {}); awaiting …", job.job_id, job.queue_position);
            let wait = v1::AwaitProofRequest { job_id: job.job_id, timeout_ms };
            client.await_proof(wait).await.map_err(|s| rpc_error("AwaitProof", s))?.into_inner()
        }
        None => {
            eprintln!("proving {kind} …");
            let r = client.prove(v1::ProveRequest { submit: Some(submit) }).await.map_err(|s| rpc_error("Prove", s))?;
            r.into_inner().result.context("Prove returned no result")?
        }
    };
    let round_trip = started.elapsed();

    let completed = result.status == v1::await_proof_response::Status::Completed as i32;
    let verdict = match (&fixture, &consistent, completed) {
        (Some(m), _, true) => Some(verify_with_filecoin_proofs(dir, m, kind, &result.proof)?),
        (None, Some(set), true) if args.verify_dir.is_some() => Some(set.verify_with_filecoin_proofs(&result.proof)?),
        _ => None,
    };
    print_result(kind, &result, round_trip, verdict);
    if let (Some(path), true) = (&args.out, completed) {
        std::fs::write(path, &result.proof).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("proof written to {}", path.display());
    }
    match status_name(result.status) {
        "COMPLETED" if verdict == Some(false) => bail!("the proof is INVALID (filecoin-proofs' verifier rejected it)"),
        "COMPLETED" => Ok(()),
        // The daemon proves with synthetic parameters (srs.synthetic): the run is a timing
        // measurement, so it is not an error here — but it is said, never passed as a proof.
        "FAILED" if is_unverified_message(&result.error_message) => {
            eprintln!(
                "UNVERIFIED: proved with synthetic parameters; the timings are real, the proof is not (not written)"
            );
            Ok(())
        }
        "TIMEOUT" => {
            bail!("job {} did not finish within {} ms (it keeps running)", result.job_id, args.timeout_ms.unwrap_or(0))
        }
        other => bail!("job {} {other}: {}", result.job_id, result.error_message),
    }
}

fn print_result(kind: ProofKind, r: &v1::AwaitProofResponse, round_trip: Duration, verdict: Option<bool>) {
    let mut t = kv_table();
    let mut row = |k: &str, v: String| {
        t.add_row(vec![k.to_string(), v]);
    };
    row("proof", kind.to_string());
    row("job id", r.job_id.clone());
    row("status", status_name(r.status).to_string());
    if !r.error_message.is_empty() {
        row("error", r.error_message.clone());
    }
    let timed_out = r.status == v1::await_proof_response::Status::Timeout as i32;
    if timed_out {
        row("client round-trip", secs(round_trip));
        println!("{t}");
        return;
    }
    let partitions = r.proof.len() / 192;
    row("proof bytes", format!("{} ({partitions} partition{})", r.proof.len(), if partitions == 1 { "" } else { "s" }));
    row("queue wait", ms(r.queue_wait_ms));
    row("srs load", ms(r.srs_load_ms));
    row("synthesis", ms(r.synthesis_ms));
    row("prove", ms(r.gpu_compute_ms));
    row("total (daemon)", ms(r.total_ms));
    row("client round-trip", secs(round_trip));
    if let Some(ok) = verdict {
        row("filecoin-proofs verify", if ok { "valid".into() } else { "INVALID".into() });
    }
    println!("{t}");
}
