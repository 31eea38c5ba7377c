//! Many clients at once, mixing good, malformed and oversized requests: every bad one is
//! refused at submit with an input error, every good one is proved and verifies, and nothing
//! is lost (each accepted job ends Completed, the counters add up).

mod common;

use std::time::Duration;

use cuzk_core::scheduler::{AwaitOutcome, Phase, Scheduler, SubmitError};
use cuzk_core::Config;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::{ProofKind, ProofRequest};
use serde_json::Value;

fn req(kind: ProofKind) -> ProofRequest {
    let f = common::fixture();
    request(&f.dir, &f.manifest, kind).unwrap()
}

/// A PoRep C1 output (bare JSON) with 50 times the challenges of its one partition.
fn oversized_porep() -> ProofRequest {
    let f = common::fixture();
    let mut r = req(ProofKind::PoRepSealCommit);
    let mut c1: Value = serde_json::from_slice(&f.manifest.porep_c1(&f.dir).unwrap()).unwrap();
    let partitions = c1["vanilla_proofs"].as_object_mut().unwrap().values_mut().next().unwrap();
    let challenges = partitions[0].as_array_mut().unwrap();
    let one = challenges.clone();
    for _ in 1..50 {
        challenges.extend(one.iter().cloned());
    }
    r.vanilla_proof = serde_json::to_vec(&c1).unwrap();
    r
}

/// The bad requests one client sends, each with what it must be refused as.
fn bad_requests() -> Vec<(&'static str, ProofRequest)> {
    let mut garbage = req(ProofKind::PoRepSealCommit);
    garbage.vanilla_proof = b"{\"SectorNum\": 1, \"Phase1Out\": \"%%%\"".to_vec();
    let mut too_many_sectors = req(ProofKind::WindowPostPartition);
    too_many_sectors.vanilla_proofs = vec![too_many_sectors.vanilla_proofs[0].clone(); 3];
    let mut truncated = req(ProofKind::WinningPost);
    let half = truncated.vanilla_proofs[0].len() / 2;
    truncated.vanilla_proofs[0].truncate(half);
    vec![
        ("garbage C1", garbage),
        ("50x challenges", oversized_porep()),
        ("3 sectors", too_many_sectors),
        ("truncated", truncated),
    ]
}

#[test]
fn concurrent_clients_mixing_good_bad_and_oversized_requests() {
    let f = common::fixture();
    let mut config = Config::default();
    config.srs.param_dir = f.dir.join("params");
    let s = Scheduler::start(config, None).unwrap();
    const CLIENTS: usize = 6;
    // Two good requests per client, each under its own id, both WindowPoSt, the cheapest
    // proof: the kind is nothing to what is counted here, and a WinningPoSt is ~3 times the
    // work on CI's 2 cores.
    let good_kinds = [ProofKind::WindowPostPartition, ProofKind::WindowPostPartition];

    let accepted: Vec<(ProofKind, String)> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let s = &s;
                scope.spawn(move || {
                    let mut accepted = Vec::new();
                    let bad = bad_requests();
                    // Interleave: good, bad, good, bad, … so refusals and work overlap.
                    for (i, kind) in good_kinds.iter().enumerate() {
                        let outcome = s.submit(&format!("client-{c}-good-{i}"), None, req(*kind)).unwrap();
                        assert!(!outcome.existing);
                        accepted.push((*kind, outcome.job_id));
                        for (what, r) in bad.iter().skip(i * 2).take(2) {
                            match s.submit(&format!("client-{c}-bad-{what}"), None, r.clone()) {
                                Err(SubmitError::Input(_)) => {}
                                Err(e) => panic!("{what}: expected an input error, got {e}"),
                                Ok(o) => panic!("{what}: a bad request was accepted as {}", o.job_id),
                            }
                        }
                    }
                    accepted
                })
            })
            .collect();
        clients.into_iter().flat_map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(accepted.len(), CLIENTS * good_kinds.len());

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for (kind, job) in &accepted {
        let r = match rt.block_on(s.await_job(job, Some(Duration::from_secs(900)))).unwrap() {
            AwaitOutcome::Done(r) => r,
            AwaitOutcome::TimedOut => panic!("job {job} was lost: not finished in 15 minutes"),
        };
        assert_eq!(r.phase, Phase::Completed, "{job}: {:?}", r.error);
        assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, *kind, &r.proof).unwrap(), "{job}");
    }
    let st = s.status();
    assert_eq!((st.completed, st.failed, st.cancelled), (accepted.len() as u64, 0, 0));
    s.shutdown(Duration::from_secs(60));
}
