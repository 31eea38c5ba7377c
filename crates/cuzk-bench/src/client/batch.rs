//! `cuzk-bench batch`: many proofs through the daemon at once. `-c COUNT` `Prove` calls of the
//! fixture set's `--kind` (or `--mix`: the four kinds in turn), at most `-j CONCURRENCY` in
//! flight, each with a unique request id (`batch-<pid>-<i>`). Every proof is checked with
//! filecoin-proofs' verifier unless `--no-verify`. Prints latency percentiles and throughput.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::fixtures::Manifest;
use cuzk_filecoin::ProofKind;
use cuzk_proto::v1;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::Semaphore;

use super::connect::{connect, rpc_error};
use super::{kv_table, parse_kind, parse_priority, status_name, to_wire};
use crate::demo::KINDS;
use crate::report::{secs, table};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    fixtures: crate::FixtureDir,
    /// Proof kind: porep, winning, wpost or snap.
    #[arg(long, value_parser = parse_kind, default_value = "wpost", conflicts_with = "mix")]
    kind: ProofKind,
    /// Cycle through all four kinds (winning, wpost, snap, porep).
    #[arg(long)]
    mix: bool,
    /// Number of proofs.
    #[arg(short = 'c', long, default_value_t = 10)]
    count: usize,
    /// Proofs in flight at once.
    #[arg(short = 'j', long, default_value_t = 2)]
    concurrency: usize,
    /// low, normal, high or critical (default: each kind's default).
    #[arg(long, value_parser = parse_priority)]
    priority: Option<v1::Priority>,
    /// Skip checking each proof with filecoin-proofs' verifier.
    #[arg(long)]
    no_verify: bool,
}

/// What happened to one proof.
struct Outcome {
    kind: ProofKind,
    latency: Duration,
    /// `None` when it succeeded (and verified, unless verification is off).
    error: Option<String>,
}

pub async fn run(addr: &str, args: Args) -> Result<()> {
    if args.count == 0 || args.concurrency == 0 {
        bail!("-c and -j must be at least 1");
    }
    let dir = args.fixtures.dir.clone();
    let manifest = Arc::new(
        cuzk_filecoin::fixtures::load(&dir)
            .with_context(|| format!("no fixture set in {} (make it with `cuzk-bench fixtures`)", dir.display()))?,
    );
    let kinds: Vec<ProofKind> = if args.mix { KINDS.to_vec() } else { vec![args.kind] };
    let mut requests = BTreeMap::new();
    for &k in &kinds {
        requests.insert(k, request(&dir, &manifest, k)?);
    }
    let client = connect(addr).await?;

    let bar = ProgressBar::new(args.count as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40.cyan/blue}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message("ok 0, failed 0");
    let limit = Arc::new(Semaphore::new(args.concurrency));
    let pid = std::process::id();
    let wall = Instant::now();
    let mut outcomes = Vec::with_capacity(args.count);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..args.count {
        let kind = kinds[i % kinds.len()];
        let submit = to_wire(&requests[&kind], format!("batch-{pid}-{i}"), args.priority);
        let permit = limit.clone().acquire_owned().await.expect("semaphore is never closed");
        let mut client = client.clone();
        let (dir, manifest, verify) = (dir.clone(), manifest.clone(), !args.no_verify);
        tasks.spawn(async move {
            let _permit = permit;
            let start = Instant::now();
            let reply = client.prove(v1::ProveRequest { submit: Some(submit) }).await;
            let latency = start.elapsed();
            let error = match reply {
                Err(s) => Some(rpc_error("Prove", s).to_string()),
                Ok(r) => match r.into_inner().result {
                    None => Some("Prove returned no result".into()),
                    Some(r) => check(r, kind, verify, dir, manifest).await,
                },
            };
            Outcome { kind, latency, error }
        });
        // Collect whatever finished meanwhile, so the bar moves while we are still submitting.
        while let Some(done) = tasks.try_join_next() {
            outcomes.push(record(&bar, &outcomes, done)?);
        }
    }
    while let Some(done) = tasks.join_next().await {
        outcomes.push(record(&bar, &outcomes, done)?);
    }
    let wall = wall.elapsed();
    bar.finish_and_clear();
    summary(&outcomes, &kinds, wall, args.concurrency);
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.error.is_some()).collect();
    if !failed.is_empty() {
        // The distinct reasons, each once, with how often they occurred.
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        for o in &failed {
            *reasons.entry(o.error.as_deref().unwrap_or_default()).or_default() += 1;
        }
        for (reason, n) in reasons {
            eprintln!("{n} × {reason}");
        }
        bail!("{} of {} proofs failed", failed.len(), outcomes.len());
    }
    Ok(())
}

/// The job's outcome as an error message, if it is one; verifies a completed proof.
async fn check(
    r: v1::AwaitProofResponse,
    kind: ProofKind,
    verify: bool,
    dir: std::path::PathBuf,
    m: Arc<Manifest>,
) -> Option<String> {
    let status = status_name(r.status);
    if status != "COMPLETED" {
        return Some(format!("{kind}: job {status}: {}", r.error_message));
    }
    if !verify {
        return None;
    }
    let proof = r.proof;
    let verdict = tokio::task::spawn_blocking(move || verify_with_filecoin_proofs(&dir, &m, kind, &proof)).await;
    match verdict {
        Ok(Ok(true)) => None,
        Ok(Ok(false)) => Some(format!("{kind}: proof INVALID (filecoin-proofs' verifier rejected it)")),
        Ok(Err(e)) => Some(format!("{kind}: proof could not be verified: {e:#}")),
        Err(e) => Some(format!("{kind}: verification task failed: {e}")),
    }
}

/// One finished task: advance the bar and pass the outcome on.
fn record(bar: &ProgressBar, so_far: &[Outcome], done: Result<Outcome, tokio::task::JoinError>) -> Result<Outcome> {
    let outcome = done.context("a proof task panicked")?;
    let failed = so_far.iter().filter(|o| o.error.is_some()).count() + usize::from(outcome.error.is_some());
    bar.inc(1);
    bar.set_message(format!("ok {}, failed {failed}", so_far.len() + 1 - failed));
    if let Some(e) = &outcome.error {
        bar.println(format!("failed: {e}"));
    }
    Ok(outcome)
}

/// Latency statistics over the successful proofs of one group.
fn latency_row(label: String, group: &[&Outcome]) -> Vec<String> {
    let mut ok: Vec<Duration> = group.iter().filter(|o| o.error.is_none()).map(|o| o.latency).collect();
    ok.sort();
    let failed = group.len() - ok.len();
    let mut row = vec![label, ok.len().to_string(), failed.to_string()];
    if ok.is_empty() {
        row.extend(std::iter::repeat_n("-".to_string(), 5));
        return row;
    }
    let avg = ok.iter().sum::<Duration>() / ok.len() as u32;
    let pct = |p: f64| ok[((p * ok.len() as f64).ceil() as usize).clamp(1, ok.len()) - 1];
    row.extend([avg, ok[0], ok[ok.len() - 1], pct(0.50), pct(0.95)].map(secs));
    row
}

fn summary(outcomes: &[Outcome], kinds: &[ProofKind], wall: Duration, concurrency: usize) {
    let mut t = table(&["proof", "ok", "failed", "avg", "min", "max", "p50", "p95"]);
    if kinds.len() > 1 {
        for &k in kinds {
            let group: Vec<&Outcome> = outcomes.iter().filter(|o| o.kind == k).collect();
            t.add_row(latency_row(k.to_string(), &group));
        }
    }
    let all: Vec<&Outcome> = outcomes.iter().collect();
    t.add_row(latency_row(if kinds.len() > 1 { "all".into() } else { kinds[0].to_string() }, &all));
    println!("{t}");
    let ok = outcomes.iter().filter(|o| o.error.is_none()).count();
    let mut s = kv_table();
    s.add_row(vec!["proofs".to_string(), format!("{} ({ok} ok, {} failed)", outcomes.len(), outcomes.len() - ok)]);
    s.add_row(vec!["concurrency".to_string(), concurrency.to_string()]);
    s.add_row(vec!["wall time".to_string(), secs(wall)]);
    s.add_row(vec![
        "throughput".to_string(),
        format!("{:.2} proofs/min", ok as f64 * 60.0 / wall.as_secs_f64().max(1e-9)),
    ]);
    println!("{s}");
    println!("(latency: client round-trip of each Prove call, successful proofs only)");
}
