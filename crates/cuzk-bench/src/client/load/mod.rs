//! `cuzk-bench load`: many clients against a running daemon for a fixed time, each sending a
//! mix of good, bad and oversized requests, to show that under load nothing is lost, every
//! proof returned verifies, bad input is refused with INVALID_ARGUMENT and a message over the
//! daemon's `max_message_bytes` is refused without harm.
//!
//! `-c` clients (default 200), each on its own connection, loop until `--duration` (default
//! 60 s) is over; no request starts after it. Each turn a client picks a class by the `--mix`
//! weights (good:bad:oversized, default 2:1:1) from its own seeded generator:
//! - good: the 2 KiB fixture set's four kinds in turn, as Curio encodes them; the proof that
//!   comes back is checked with filecoin-proofs' own verifier (as `single` does);
//! - bad: malformed payloads, a wrong or unknown registered proof, truncated vanilla proofs
//!   and C1 output; the answer must be INVALID_ARGUMENT;
//! - oversized: a PoRep whose C1 bytes make the message `--oversize-bytes` long; the daemon
//!   must refuse it (tonic's size check answers OUT_OF_RANGE).
//!
//! RESOURCE_EXHAUSTED is the daemon's documented backpressure (full decoding or receiving
//! slots, full queues): it is counted and shown for every class, never taken as a loss.
//!
//! Good requests go as SubmitProof then AwaitProof. Prove is exactly those two inside the
//! daemon (Curio calls Prove), but a Prove still open when the run ends says nothing about
//! where its job is; with the job id, a wait that times out at the end of `--drain` is the
//! daemon saying it still holds the job (TIMEOUT: queued or running), and the job is then
//! cancelled. So every good request ends in exactly one column: verified, failed
//! verification, still held at the end, or lost (no answer in time, or any other answer).
//! The command exits non-zero when a proof failed verification or anything was lost or
//! wrongly answered.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::fixtures::Manifest;
use cuzk_filecoin::ProofKind;
use cuzk_proto::v1;
use tokio::time::{timeout, timeout_at, Instant};
use tonic::Code;

use super::connect::{connect, Client};
use super::{status_name, to_wire};
use crate::demo::KINDS;

mod report;
use report::report;

/// How long past the drain's end an AwaitProof (which the daemon ends at the drain's end
/// with TIMEOUT) may take to come back before it counts as unanswered.
const ANSWER_GRACE: Duration = Duration::from_secs(15);
/// A bound on each CancelProof sent for a job still held at the end.
const CANCEL_LIMIT: Duration = Duration::from_secs(10);
/// Pause after a RESOURCE_EXHAUSTED, as a client that retries would (the daemon says "retry
/// shortly"); without it a refused client would hammer the gate it was refused at.
const BACKOFF: Duration = Duration::from_millis(200);

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    fixtures: crate::FixtureDir,
    /// Concurrent clients, each on its own connection.
    #[arg(short = 'c', long, default_value_t = 200)]
    clients: usize,
    /// Seconds during which clients start requests.
    #[arg(long, default_value_t = 60)]
    duration: u64,
    /// Seconds after --duration that requests in flight are waited for; good jobs the daemon
    /// still holds then are counted as such and cancelled.
    #[arg(long, default_value_t = 60)]
    drain: u64,
    /// Weights of good:bad:oversized requests.
    #[arg(long, default_value = "2:1:1", value_parser = parse_mix)]
    mix: [u64; 3],
    /// Length of an oversized message in bytes: must exceed the daemon's
    /// daemon.max_message_bytes (configure that down for the test; 256 MiB is the most this
    /// client sends).
    #[arg(long, default_value_t = (1 << 20) + (64 << 10))]
    oversize_bytes: usize,
    /// Seed of the clients' choices (client i uses seed + i).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// `--mix`: three weights "G:B:O", not all zero.
fn parse_mix(s: &str) -> Result<[u64; 3]> {
    let parts: Vec<u64> = s
        .split(':')
        .map(|p| p.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .context("--mix is G:B:O, three integers")?;
    match parts[..] {
        [g, b, o] if g + b + o > 0 => Ok([g, b, o]),
        [_, _, _] => bail!("--mix: at least one weight must be positive"),
        _ => bail!("--mix is G:B:O, three integers (e.g. 2:1:1)"),
    }
}

/// What a request is meant to test, and so which answers are right for it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Good,
    Bad,
    Oversized,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Good => "good",
            Class::Bad => "bad",
            Class::Oversized => "oversized",
        }
    }

    /// The refusal a bad or oversized request must get (RESOURCE_EXHAUSTED aside).
    fn expected(self) -> Option<Code> {
        match self {
            Class::Good => None,
            Class::Bad => Some(Code::InvalidArgument),
            Class::Oversized => Some(Code::OutOfRange),
        }
    }
}

/// One request a client may send; `msg.request_id` is filled in per send.
struct Template {
    label: String,
    class: Class,
    kind: ProofKind,
    msg: v1::SubmitProofRequest,
}

/// Counts for one template.
#[derive(Default)]
struct Row {
    sent: u64,
    /// The first answer, by gRPC code ("Ok" = accepted), plus "no answer".
    codes: BTreeMap<String, u64>,
    verified: u64,
    /// Completed, but filecoin-proofs rejected the proof or could not check it.
    bad_proof: u64,
    /// Good: the daemon still held the job when the drain ended (then cancelled).
    held_at_end: u64,
    /// Good: no answer in time, or an answer other than a proof or backpressure. Bad and
    /// oversized: any answer but the expected refusal or backpressure.
    lost: u64,
    /// Submit to verified proof, for the good ones.
    latencies: Vec<Duration>,
}

struct Shared {
    templates: Vec<Template>,
    rows: Vec<Mutex<Row>>,
    /// Distinct reasons for anything counted as lost or failing verification, with counts.
    problems: Mutex<BTreeMap<String, u64>>,
    /// By class, the template indices a client picks from.
    by_class: [Vec<usize>; 3],
    mix: [u64; 3],
    dir: PathBuf,
    manifest: Manifest,
    start: Instant,
    end: Instant,
    drain_end: Instant,
    /// When the last request was started, measured from `start` (to show none began late).
    last_start: Mutex<Duration>,
}

impl Shared {
    fn row(&self, t: usize, f: impl FnOnce(&mut Row)) {
        f(&mut self.rows[t].lock().expect("row lock"));
    }

    fn code(&self, t: usize, code: &str) {
        self.row(t, |r| *r.codes.entry(code.to_string()).or_default() += 1);
    }

    fn problem(&self, t: usize, what: String) {
        let key = format!("{}: {what}", self.templates[t].label);
        *self.problems.lock().expect("problems lock").entry(key).or_default() += 1;
    }

    fn lost(&self, t: usize, what: String) {
        self.row(t, |r| r.lost += 1);
        self.problem(t, what);
    }
}

/// splitmix64: each client's own reproducible choices, without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The good requests (one per kind), the bad ones and the oversized one.
fn templates(dir: &std::path::Path, m: &Manifest, oversize: usize) -> Result<Vec<Template>> {
    let mut good = BTreeMap::new();
    for kind in KINDS {
        good.insert(kind, to_wire(&request(dir, m, kind)?, String::new(), None));
    }
    let mut out: Vec<Template> = KINDS
        .iter()
        .map(|&kind| Template { label: format!("good {kind}"), class: Class::Good, kind, msg: good[&kind].clone() })
        .collect();
    let mut bad = |label: &str, kind: ProofKind, edit: &dyn Fn(&mut v1::SubmitProofRequest)| {
        let mut msg = good[&kind].clone();
        edit(&mut msg);
        out.push(Template { label: format!("bad {kind}: {label}"), class: Class::Bad, kind, msg });
    };
    // Malformed: JSON cut inside a string, and bytes that are no bincode vanilla proof.
    bad("C1 JSON malformed", ProofKind::PoRepSealCommit, &|m| {
        m.vanilla_proof = b"{\"SectorNum\": 1, \"Phase1Out\": \"%%%".to_vec()
    });
    bad("vanilla proof random bytes", ProofKind::WindowPostPartition, &|m| {
        let mut rng = Rng(7);
        m.vanilla_proofs[0].iter_mut().for_each(|b| *b = rng.next() as u8);
    });
    // Registered proofs: a number no proof has, and another kind's (WindowPoSt's on a
    // WinningPoSt request).
    bad("registered proof 77", ProofKind::WinningPost, &|m| m.registered_proof = 77);
    let window_rp = m.window_registered_proof;
    bad("WindowPoSt's registered proof", ProofKind::WinningPost, &|m| m.registered_proof = window_rp);
    // Truncated: the second half of the bytes gone.
    bad("vanilla proof truncated", ProofKind::WinningPost, &|m| {
        let half = m.vanilla_proofs[0].len() / 2;
        m.vanilla_proofs[0].truncate(half);
    });
    bad("vanilla proof truncated", ProofKind::SnapDealsUpdate, &|m| {
        let half = m.vanilla_proofs[0].len() / 2;
        m.vanilla_proofs[0].truncate(half);
    });
    bad("C1 output truncated", ProofKind::PoRepSealCommit, &|m| {
        let half = m.vanilla_proof.len() / 2;
        m.vanilla_proof.truncate(half);
    });
    // The C1 bytes alone are `oversize` long, so the whole message (what the daemon's limit
    // is compared with) is a few hundred bytes more.
    let mut msg = good[&ProofKind::PoRepSealCommit].clone();
    msg.vanilla_proof = vec![b' '; oversize];
    out.push(Template {
        label: format!("oversized (C1 of {oversize} B)"),
        class: Class::Oversized,
        kind: ProofKind::PoRepSealCommit,
        msg,
    });
    Ok(out)
}

pub async fn run(addr: &str, args: Args) -> Result<()> {
    if args.clients == 0 || args.duration == 0 {
        bail!("-c and --duration must be at least 1");
    }
    let dir = args.fixtures.dir.clone();
    let manifest = cuzk_filecoin::fixtures::load(&dir)
        .with_context(|| format!("no fixture set in {} (make it with `cuzk-bench fixtures`)", dir.display()))?;
    // filecoin-proofs reads its directories once per process: set them before any verifier
    // runs on a blocking thread.
    cuzk_filecoin::fixtures::set_filecoin_env(&dir)?;
    let templates = templates(&dir, &manifest, args.oversize_bytes)?;
    let mut by_class: [Vec<usize>; 3] = Default::default();
    for (i, t) in templates.iter().enumerate() {
        by_class[t.class as usize].push(i);
    }

    // Every client connected before the clock starts, so the run measures requests, not
    // 200 handshakes.
    let mut clients = Vec::with_capacity(args.clients);
    for i in 0..args.clients {
        clients.push(connect(addr).await.with_context(|| format!("client {i}"))?);
    }
    let start = Instant::now();
    let end = start + Duration::from_secs(args.duration);
    let drain_end = end + Duration::from_secs(args.drain);
    let rows = templates.iter().map(|_| Mutex::default()).collect();
    let shared = Arc::new(Shared {
        templates,
        rows,
        problems: Mutex::default(),
        by_class,
        mix: args.mix,
        dir,
        manifest,
        start,
        end,
        drain_end,
        last_start: Mutex::default(),
    });
    eprintln!(
        "{} clients for {} s (then up to {} s for what is in flight), mix good:bad:oversized {}:{}:{} …",
        args.clients, args.duration, args.drain, args.mix[0], args.mix[1], args.mix[2]
    );
    let mut tasks = tokio::task::JoinSet::new();
    for (i, c) in clients.into_iter().enumerate() {
        tasks.spawn(client_loop(i, c, args.seed.wrapping_add(i as u64), shared.clone()));
    }
    // Clients end by themselves (every call is bounded by the drain's end); this bound only
    // turns a bug here into an error instead of a hang. Verifications may still be running.
    let bound = drain_end + ANSWER_GRACE + CANCEL_LIMIT + Duration::from_secs(120);
    let mut stuck = 0;
    loop {
        match timeout_at(bound, tasks.join_next()).await {
            Ok(None) => break,
            Ok(Some(done)) => done.context("a client task panicked")?,
            Err(_) => {
                stuck = tasks.len();
                tasks.abort_all();
                break;
            }
        }
    }
    let finished = start.elapsed();

    let status = match connect(addr).await {
        Ok(mut c) => timeout(Duration::from_secs(30), c.get_status(v1::GetStatusRequest {}))
            .await
            .ok()
            .and_then(|r| r.ok())
            .map(|r| r.into_inner()),
        Err(_) => None,
    };
    report(&shared, &args, finished, status.as_ref());
    let sum = |f: fn(&Row) -> u64| shared.rows.iter().map(|r| f(&r.lock().expect("row lock"))).sum::<u64>();
    let (bad_proofs, lost) = (sum(|r| r.bad_proof), sum(|r| r.lost));
    if stuck > 0 {
        bail!("{stuck} clients had not finished {} s after the drain ended", (bound - drain_end).as_secs());
    }
    if status.is_none() {
        bail!("the daemon did not answer GetStatus after the run");
    }
    if bad_proofs > 0 || lost > 0 {
        bail!("{bad_proofs} proofs failed verification, {lost} requests lost or wrongly answered");
    }
    Ok(())
}

/// One client: requests one after another until the duration is over.
async fn client_loop(id: usize, mut c: Client, seed: u64, sh: Arc<Shared>) {
    let mut rng = Rng(seed);
    // Each client starts its kinds and bad variants at its own offset, so that all of them
    // are in flight from the first second.
    let (mut next_good, mut next_bad, mut n) = (id, id, 0u64);
    let total: u64 = sh.mix.iter().sum();
    let pid = std::process::id();
    while Instant::now() < sh.end {
        let mut pick = rng.next() % total;
        let class = (0..3).find(|&k| {
            let hit = pick < sh.mix[k];
            pick = pick.saturating_sub(sh.mix[k]);
            hit
        });
        let t = match class {
            Some(0) => {
                next_good += 1;
                sh.by_class[0][next_good % sh.by_class[0].len()]
            }
            Some(1) => {
                next_bad += 1;
                sh.by_class[1][next_bad % sh.by_class[1].len()]
            }
            _ => sh.by_class[2][0],
        };
        n += 1;
        let mut msg = sh.templates[t].msg.clone();
        msg.request_id = format!("load-{pid}-{id}-{n}");
        {
            let mut last = sh.last_start.lock().expect("last_start lock");
            *last = (*last).max(sh.start.elapsed());
        }
        sh.row(t, |r| r.sent += 1);
        let backoff = match sh.templates[t].class {
            Class::Good => good(&mut c, t, msg, &sh).await,
            _ => refused(&mut c, t, msg, &sh).await,
        };
        if backoff {
            tokio::time::sleep_until((Instant::now() + BACKOFF).min(sh.end)).await;
        }
    }
}

/// A good request end to end. Returns true when it was refused with RESOURCE_EXHAUSTED.
async fn good(c: &mut Client, t: usize, msg: v1::SubmitProofRequest, sh: &Arc<Shared>) -> bool {
    let sent = Instant::now();
    let job = match timeout_at(sh.drain_end, c.submit_proof(msg)).await {
        Err(_) => {
            sh.code(t, "no answer");
            sh.lost(t, "SubmitProof: no answer before the drain ended".into());
            return false;
        }
        Ok(Err(s)) => {
            sh.code(t, &format!("{:?}", s.code()));
            if s.code() == Code::ResourceExhausted {
                return true;
            }
            sh.lost(t, format!("SubmitProof: {:?}: {}", s.code(), s.message()));
            return false;
        }
        Ok(Ok(r)) => {
            sh.code(t, "Ok");
            r.into_inner().job_id
        }
    };
    // The daemon ends the wait itself at the drain's end (TIMEOUT): at least 1 ms, since
    // 0 would mean "until the job ends".
    let left = sh.drain_end.saturating_duration_since(Instant::now()).as_millis().max(1) as u64;
    let wait = v1::AwaitProofRequest { job_id: job.clone(), timeout_ms: left };
    let r = match timeout_at(sh.drain_end + ANSWER_GRACE, c.await_proof(wait)).await {
        Err(_) => {
            sh.lost(t, format!("AwaitProof: no answer {} s after the drain ended", ANSWER_GRACE.as_secs()));
            return false;
        }
        Ok(Err(s)) => {
            sh.lost(t, format!("AwaitProof: {:?}: {}", s.code(), s.message()));
            return false;
        }
        Ok(Ok(r)) => r.into_inner(),
    };
    if r.job_id != job {
        sh.lost(t, format!("AwaitProof for {job} answered for {}", r.job_id));
        return false;
    }
    match status_name(r.status) {
        "COMPLETED" => {}
        "TIMEOUT" => {
            // Still queued or running at the end: the daemon has it; free it for whatever
            // runs next on this daemon.
            sh.row(t, |row| row.held_at_end += 1);
            if let Ok(Err(s)) = timeout(CANCEL_LIMIT, c.cancel_proof(v1::CancelProofRequest { job_id: job })).await {
                sh.problem(t, format!("(not counted) CancelProof at the end: {:?}: {}", s.code(), s.message()));
            }
            return false;
        }
        other => {
            sh.lost(t, format!("job {other}: {}", r.error_message));
            return false;
        }
    }
    let latency = sent.elapsed();
    let kind = sh.templates[t].kind;
    let check = sh.clone();
    let verdict =
        tokio::task::spawn_blocking(move || verify_with_filecoin_proofs(&check.dir, &check.manifest, kind, &r.proof))
            .await;
    match verdict {
        Ok(Ok(true)) => sh.row(t, |row| {
            row.verified += 1;
            row.latencies.push(latency);
        }),
        Ok(Ok(false)) => {
            sh.row(t, |row| row.bad_proof += 1);
            sh.problem(t, "proof INVALID (filecoin-proofs' verifier rejected it)".into());
        }
        Ok(Err(e)) => {
            sh.row(t, |row| row.bad_proof += 1);
            sh.problem(t, format!("proof could not be verified: {e:#}"));
        }
        Err(e) => {
            sh.row(t, |row| row.bad_proof += 1);
            sh.problem(t, format!("verification task failed: {e}"));
        }
    }
    false
}

/// A bad or oversized request: it must be refused. Returns true on RESOURCE_EXHAUSTED.
async fn refused(c: &mut Client, t: usize, msg: v1::SubmitProofRequest, sh: &Arc<Shared>) -> bool {
    let expected = sh.templates[t].class.expected();
    match timeout_at(sh.drain_end, c.submit_proof(msg)).await {
        Err(_) => {
            sh.code(t, "no answer");
            sh.lost(t, "SubmitProof: no answer before the drain ended".into());
            false
        }
        Ok(Ok(r)) => {
            // Accepted: a wrong answer. The job is cancelled so that it costs nothing more.
            let job = r.into_inner().job_id;
            sh.code(t, "Ok");
            sh.lost(t, format!("accepted as job {job} (cancelled)"));
            let _ = timeout(CANCEL_LIMIT, c.cancel_proof(v1::CancelProofRequest { job_id: job })).await;
            false
        }
        Ok(Err(s)) => {
            sh.code(t, &format!("{:?}", s.code()));
            if Some(s.code()) == expected {
                return false;
            }
            if s.code() == Code::ResourceExhausted {
                return true;
            }
            sh.lost(t, format!("{:?}: {}", s.code(), s.message()));
            false
        }
    }
}
