//! 200 concurrent gRPC clients against one real daemon (issue #15, hardening), each on its
//! own unix-socket connection, all let go at once: most send bad requests (malformed C1 and
//! vanilla bytes, unknown or mismatched registered proofs and kinds, a 50-fold PoRep inside
//! the message limit, a message over it), a few send good 2 KiB ones. It proves that under
//! that load every bad request is refused at submit with its own clear gRPC error (not a hang,
//! not a crash, not swallowed into the queue), every good request gets its own proof that
//! filecoin-proofs' verifier accepts (distinct jobs, distinct proofs, nothing lost or
//! swapped: the counters add up exactly), the daemon's peak RSS stays within a bound derived
//! from what the clients sent, and afterwards the daemon still proves and stops cleanly.
//! Timeouts are generous and only there so that a hang fails instead of blocking CI.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::fixtures::{shared_fixture_set, Manifest};
use cuzk_filecoin::ProofKind;
use cuzk_proto::client::ProvingEngineClient;
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_proto::v1::{AwaitProofRequest, AwaitProofResponse, GetStatusRequest, SubmitProofRequest};
use serde_json::Value;
use tokio::sync::Barrier;
use tonic::transport::Channel;
use tonic::Code;

const CLIENTS: usize = 200;
/// The daemon's `max_message_bytes` here: room for the 50-fold PoRep (~5 MB), not for 9 MiB.
const MAX_MESSAGE: usize = 8 << 20;
/// The good requests, spread evenly among the 200 clients (the rest are bad). 2 KiB WinningPoSt
/// and WindowPoSt take seconds on 2 cores, SnapDeals longer: one of it, a long proof with a
/// large working set in the pipeline during the flood. Not a PoRep: on CI's 2 cores it cost
/// ~30 s more, twice (here and in the warm-up), and good PoRep requests are proved by the
/// daemon and verified with filecoin-proofs in `grafana_dashboard.rs` and `go_client.rs`.
const GOOD: [ProofKind; 10] = {
    use ProofKind::*;
    [
        WinningPost,
        WindowPostPartition,
        WinningPost,
        WinningPost,
        SnapDealsUpdate,
        WinningPost,
        WindowPostPartition,
        WinningPost,
        WinningPost,
        WindowPostPartition,
    ]
};
/// No client may take longer than this for all its calls (a hang fails, it does not block).
const CLIENT_LIMIT: Duration = Duration::from_secs(600);
/// A bad request is refused at submit; this is only a bound against a hang, not a speed test.
const REFUSAL_LIMIT: Duration = Duration::from_secs(120);

/// A bad request and how it must be refused: one of `codes`, a message containing `says`.
#[derive(Clone)]
struct Bad {
    what: &'static str,
    msg: SubmitProofRequest,
    codes: &'static [Code],
    says: &'static str,
}

fn wire(dir: &Path, m: &Manifest, kind: ProofKind) -> SubmitProofRequest {
    common::submit_request(request(dir, m, kind).unwrap(), "", 0)
}

/// The kinds of bad request the clients cycle through.
fn bad_templates(dir: &Path, m: &Manifest) -> Vec<Bad> {
    use Code::*;
    let mut garbage = wire(dir, m, ProofKind::PoRepSealCommit);
    garbage.vanilla_proof = b"{\"SectorNum\": 1, \"Phase1Out\": \"%%%\"".to_vec();
    let unknown_proof = SubmitProofRequest { registered_proof: 77, ..wire(dir, m, ProofKind::WinningPost) };
    let snap_as_winning =
        SubmitProofRequest { proof_kind: ProofKind::WinningPost as i32, ..wire(dir, m, ProofKind::SnapDealsUpdate) };
    let unknown_kind = SubmitProofRequest { proof_kind: 9, ..wire(dir, m, ProofKind::WindowPostPartition) };
    let mut truncated = wire(dir, m, ProofKind::WinningPost);
    let half = truncated.vanilla_proofs[0].len() / 2;
    truncated.vanilla_proofs[0].truncate(half);
    let mut three_sectors = wire(dir, m, ProofKind::WindowPostPartition);
    three_sectors.vanilla_proofs = vec![three_sectors.vanilla_proofs[0].clone(); 3];
    // A PoRep C1 output (bare JSON) with 50 times the challenges of its one partition: valid
    // JSON of the right shape, ~5 MB, refused by the size checks before any circuit is built.
    let mut c1: Value = serde_json::from_slice(&m.porep_c1(dir).unwrap()).unwrap();
    let partitions = c1["vanilla_proofs"].as_object_mut().unwrap().values_mut().next().unwrap();
    let challenges = partitions[0].as_array_mut().unwrap();
    let one = challenges.clone();
    (1..50).for_each(|_| challenges.extend(one.iter().cloned()));
    let fifty_fold = SubmitProofRequest {
        vanilla_proof: serde_json::to_vec(&c1).unwrap(),
        ..wire(dir, m, ProofKind::PoRepSealCommit)
    };
    assert!(fifty_fold.vanilla_proof.len() < MAX_MESSAGE, "the 50-fold PoRep must reach the size checks");
    let over_limit = SubmitProofRequest {
        vanilla_proof: vec![b' '; MAX_MESSAGE + (1 << 20)],
        ..wire(dir, m, ProofKind::PoRepSealCommit)
    };
    let bad = |what, msg, codes, says| Bad { what, msg, codes, says };
    vec![
        bad("garbage C1", garbage, &[InvalidArgument], "JSON"),
        bad("registered proof 77", unknown_proof, &[InvalidArgument], "77"),
        bad("SnapDeals as WinningPoSt", snap_as_winning, &[InvalidArgument], "FallbackPoStSectorProof"),
        bad("proof kind 9", unknown_kind, &[InvalidArgument], "proof_kind"),
        bad("truncated vanilla", truncated, &[InvalidArgument], "end of file"),
        bad("3 sectors in one WindowPoSt", three_sectors, &[InvalidArgument], "got 3"),
        bad("50x challenges", fifty_fold, &[InvalidArgument], "challenges"),
        bad("over max_message_bytes", over_limit, &[OutOfRange, ResourceExhausted], "too large"),
    ]
}

/// Submit, retrying while every decoding slot is busy: RESOURCE_EXHAUSTED naming
/// `max_concurrent_decodes` says "retry shortly", and a client like Curio does.
async fn submit(
    c: &mut ProvingEngineClient<Channel>,
    msg: &SubmitProofRequest,
    retries: &AtomicUsize,
) -> Result<String, tonic::Status> {
    loop {
        match c.submit_proof(msg.clone()).await {
            Err(e) if e.code() == Code::ResourceExhausted && e.message().contains("max_concurrent_decodes") => {
                retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await; // a retry back-off, not a sync
            }
            r => return r.map(|r| r.into_inner().job_id),
        }
    }
}

/// One good request end to end on `c`: its job id and terminal response.
async fn prove(
    c: &mut ProvingEngineClient<Channel>,
    msg: &SubmitProofRequest,
    retries: &AtomicUsize,
) -> (String, AwaitProofResponse) {
    let job =
        submit(c, msg, retries).await.unwrap_or_else(|e| panic!("good request {} refused: {e:?}", msg.request_id));
    let res =
        c.await_proof(AwaitProofRequest { job_id: job.clone(), timeout_ms: 0 }).await.expect("await").into_inner();
    (job, res)
}

fn check_proof(dir: &Path, m: &Manifest, kind: ProofKind, rid: &str, res: &AwaitProofResponse) {
    assert_eq!(res.status(), Status::Completed, "{rid} ({kind}): {}", res.error_message);
    assert!(
        verify_with_filecoin_proofs(dir, m, kind, &res.proof).unwrap(),
        "{rid} ({kind}): filecoin-proofs rejects the proof"
    );
}

/// A `/proc/<pid>/status` figure in bytes (`VmRSS`, `VmHWM` = peak RSS).
fn proc_bytes(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("reading the daemon's /proc status");
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("no {field} in {status}"));
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() << 10
}

enum Outcome {
    Refused(tonic::Status),
    Proved(String, AwaitProofResponse),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_clients_mixing_good_bad_and_oversized_requests() {
    let (dir, m): (PathBuf, Manifest) = shared_fixture_set().expect("fixture set");
    let mut r = common::start(&dir.join("params"), &format!("max_message_bytes = {MAX_MESSAGE}"), "").await;
    let pid = r.daemon.pid();
    let retries = Arc::new(AtomicUsize::new(0));

    // Warm-up: one proof of each good kind, so parameters and PCE matrices are resident and we
    // learn what proving costs in memory here. The flood is measured from the RSS after it.
    let mut kinds: Vec<ProofKind> = GOOD.to_vec();
    kinds.sort_by_key(|k| *k as i32);
    kinds.dedup();
    for kind in &kinds {
        let rid = format!("warm-up-{kind}");
        let (_, res) =
            prove(&mut r.client, &common::submit_request(request(&dir, &m, *kind).unwrap(), &rid, 0), &retries).await;
        check_proof(&dir, &m, *kind, &rid, &res);
    }
    let (idle_rss, warm_peak) = (proc_bytes(pid, "VmRSS"), proc_bytes(pid, "VmHWM"));

    // The 200 clients' requests: good ones at evenly spaced indices, bad ones cycling through
    // the templates. Every request id is distinct.
    let templates = bad_templates(&dir, &m);
    let good_at: Vec<usize> = (0..GOOD.len()).map(|j| j * CLIENTS / GOOD.len()).collect();
    let mut bad_count = 0;
    let plan: Vec<(SubmitProofRequest, Result<ProofKind, Bad>)> = (0..CLIENTS)
        .map(|i| match good_at.iter().position(|&g| g == i) {
            Some(j) => {
                (common::submit_request(request(&dir, &m, GOOD[j]).unwrap(), &format!("many-good-{i}"), 0), Ok(GOOD[j]))
            }
            None => {
                let mut b = templates[bad_count % templates.len()].clone();
                bad_count += 1;
                b.msg.request_id = format!("many-bad-{i}");
                (b.msg.clone(), Err(b))
            }
        })
        .collect();
    // RSS bound for the flood, over the idle RSS after the warm-up (the kernel's peak is reset
    // to it just before the clients are let go). A submit's message is held whole while it
    // waits for a decoding slot, so all 200 may be held at once: Σ of their sizes (`sent`, a
    // message over the limit counted at the limit: tonic refuses it at its 5-byte header),
    // twice for the wire buffer next to the decoded copy. Each of the max_concurrent_decodes
    // (4) slots may briefly hold its message 3 times over (DaemonConfig docs): 4 × 3 × the
    // limit. Proving: the pipeline holds at most two proofs at once (one synthesis, one
    // prover worker), each needing at most what the costliest warm-up proof took over idle
    // (first-use loads included). Plus 256 MiB for 200 connections, threads and allocator
    // slack. A daemon that copied messages more often than this, ran unbounded decodes or
    // proofs side by side, or held on to refused requests in bulk would exceed it.
    let sent: u64 = plan
        .iter()
        .map(|(msg, _)| {
            (msg.vanilla_proof.len() + msg.vanilla_proofs.iter().map(Vec::len).sum::<usize>()).min(MAX_MESSAGE) as u64
        })
        .sum();
    let proving = warm_peak.saturating_sub(idle_rss);
    let flood_bound = 2 * sent + 4 * 3 * MAX_MESSAGE as u64 + 2 * proving + (256 << 20);

    // All clients connect first, then are let go together (the barrier is the signal).
    let start = Arc::new(Barrier::new(CLIENTS));
    // Reset the kernel's peak RSS (VmHWM) to the current RSS: the flood's peak is its own.
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("resetting the daemon's peak RSS");
    let began = Instant::now();
    let tasks: Vec<_> = plan
        .iter()
        .map(|(msg, expect)| {
            let (socket, start, retries, msg, good) =
                (r.socket.clone(), start.clone(), retries.clone(), msg.clone(), expect.is_ok());
            tokio::spawn(tokio::time::timeout(CLIENT_LIMIT, async move {
                let mut c =
                    ProvingEngineClient::new(common::connect(&socket).await).max_decoding_message_size(MAX_MESSAGE);
                start.wait().await;
                if good {
                    let (job, res) = prove(&mut c, &msg, &retries).await;
                    return (Outcome::Proved(job, res), Duration::ZERO);
                }
                let t = Instant::now();
                match tokio::time::timeout(REFUSAL_LIMIT, submit(&mut c, &msg, &retries)).await {
                    Ok(Ok(job)) => panic!("{}: a bad request was accepted as job {job}", msg.request_id),
                    Ok(Err(e)) => (Outcome::Refused(e), t.elapsed()),
                    Err(_) => panic!("{}: no answer to a bad request within {REFUSAL_LIMIT:?}", msg.request_id),
                }
            }))
        })
        .collect();
    let mut outcomes = Vec::with_capacity(CLIENTS);
    for (i, task) in tasks.into_iter().enumerate() {
        let outcome = task.await.unwrap_or_else(|e| panic!("client {i} panicked: {e}"));
        outcomes.push(outcome.unwrap_or_else(|_| panic!("client {i} hung: nothing within {CLIENT_LIMIT:?}")));
    }
    let flood = began.elapsed();
    assert!(r.daemon.exited().is_none(), "the daemon died under the flood: {:?}", r.daemon.exited());

    // Every bad request refused for its own reason; every good one proved and verified.
    let (mut jobs, mut proofs, mut slowest_refusal, mut seen) =
        (HashSet::new(), HashSet::new(), Duration::ZERO, HashSet::new());
    for ((msg, expect), (outcome, took)) in plan.iter().zip(outcomes) {
        match (expect, outcome) {
            (Err(bad), Outcome::Refused(e)) => {
                assert!(
                    bad.codes.contains(&e.code()),
                    "{} ({}): expected {:?}, got {e:?}",
                    msg.request_id,
                    bad.what,
                    bad.codes
                );
                assert!(
                    e.message().contains(bad.says),
                    "{} ({}): the error does not say {:?}: {e:?}",
                    msg.request_id,
                    bad.what,
                    bad.says
                );
                if seen.insert(bad.what) {
                    println!("{:>28}: {:?} {}", bad.what, e.code(), e.message());
                }
                slowest_refusal = slowest_refusal.max(took);
            }
            (Ok(kind), Outcome::Proved(job, res)) => {
                assert_eq!(res.job_id, job, "{}: AwaitProof answered for another job", msg.request_id);
                check_proof(&dir, &m, *kind, &msg.request_id, &res);
                assert!(jobs.insert(job.clone()), "{}: job {job} was handed to two requests", msg.request_id);
                assert!(proofs.insert(res.proof.clone()), "{}: the same proof came back twice", msg.request_id);
            }
            _ => unreachable!("a client's outcome matches its request"),
        }
    }
    assert_eq!(seen.len(), templates.len(), "every kind of bad request was sent");
    assert_eq!(jobs.len(), GOOD.len(), "every good request got its own job");

    // Memory: the peak over the whole flood, from the kernel.
    let peak = proc_bytes(pid, "VmHWM");
    let mib = |b: u64| b >> 20;
    println!(
        "{CLIENTS} clients ({} good, {bad_count} bad) in {flood:.1?}; slowest refusal {slowest_refusal:.1?}; {} decode-slot retries; \
         RSS idle {} MiB, warm peak {} MiB, flood peak {} MiB (bound {} MiB over idle, {} MiB sent)",
        GOOD.len(), retries.load(Ordering::Relaxed), mib(idle_rss), mib(warm_peak), mib(peak), mib(flood_bound), mib(sent)
    );
    assert!(
        peak <= idle_rss + flood_bound,
        "peak RSS {} MiB exceeds idle {} MiB + {} MiB",
        mib(peak),
        mib(idle_rss),
        mib(flood_bound)
    );

    // Still serving: a fresh client's good request after the flood.
    let mut c = ProvingEngineClient::new(common::connect(&r.socket).await);
    let after = common::submit_request(request(&dir, &m, ProofKind::WinningPost).unwrap(), "after-the-flood", 0);
    let (_, res) = tokio::time::timeout(CLIENT_LIMIT, prove(&mut c, &after, &retries))
        .await
        .expect("the request after the flood hung");
    check_proof(&dir, &m, ProofKind::WinningPost, "after-the-flood", &res);

    // Nothing lost, nothing extra: exactly the warm-ups, the good ones and the last one were
    // proved, none failed (no bad request slipped into the queue), and the queues are empty.
    let st = c.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_eq!(st.total_proofs_completed, (kinds.len() + GOOD.len() + 1) as u64, "{st:?}");
    assert_eq!(st.total_proofs_failed, 0, "{st:?}");
    assert!(st.queues.iter().all(|q| q.pending == 0 && q.in_progress == 0), "{st:?}");
    r.stop(Duration::from_secs(60));
}
