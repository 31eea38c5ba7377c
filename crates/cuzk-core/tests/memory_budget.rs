//! One memory budget for everything, on real 2 KiB work: parameters and PCE matrices count
//! against it beside the partitions' working sets. A budget too small for two circuits'
//! parameters at once still runs a mix of them (loads evict idle parameters, least recently
//! used first, or wait for jobs to release theirs), never reserves more than its limit, and a
//! preload that can never fit is refused instead of taking the host's memory.
//!
//! The mix's PoRep takes its parameters and every reservation a proof makes, then fails at
//! the prover by an injected fault instead of proving: the budget sees the same either way
//! (the prover's share is reserved before the prover starts), and a 2 KiB PoRep proof costs
//! CI ~30 s. PoRep is proved and verified through the scheduler in `deadline_lane.rs`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use cuzk_core::faults::{self, Action, Stage};
use cuzk_core::scheduler::{AwaitOutcome, JobResult, Phase, Scheduler};
use cuzk_core::EngineError;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::ProofKind;

fn scheduler(budget: u64) -> Arc<Scheduler> {
    common::scheduler_with_budget(budget)
}

fn file_len(dir: &std::path::Path, prefix: &str) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(prefix) && name.ends_with(".params")
        })
        .map(|e| e.metadata().unwrap().len())
        .unwrap_or_else(|| panic!("no {prefix}*.params in {}", dir.display()))
}

#[test]
fn a_budget_for_one_circuit_at_a_time_proves_a_mix_and_never_exceeds_its_limit() {
    let f = common::fixture();
    let params = f.dir.join("params");
    let porep = file_len(&params, "v28-stacked-proof-of-replication");
    let snap = file_len(&params, "v28-empty-sector-update");
    // PoRep alone needs its parameters plus ~1.9 GB (matrices 152 MB, a partition's compact
    // witness ~90 MB, and a working set of ~575 MB for each of the three provers: the general
    // one, the deadline lane's and the critical lane's); both circuits' parameters side by
    // side would need SnapDeals' whole file and its matrices beyond that. So this budget runs
    // each circuit, and makes the SnapDeals load evict PoRep's parameters.
    let budget = porep + snap / 2 + (2100 << 20);
    let s = scheduler(budget);
    // The PoRep fails where its proof would start (see the top of this file).
    let porep_id = "memory-budget-porep";
    faults::arm(Stage::Prove, porep_id, Action::Panic);
    let submit = |id: &str, kind| s.submit(id, None, request(&f.dir, &f.manifest, kind).unwrap()).unwrap().job_id;
    let porep_job = submit(porep_id, ProofKind::PoRepSealCommit);
    let jobs: Vec<(ProofKind, String)> =
        [ProofKind::SnapDealsUpdate, ProofKind::WinningPost].into_iter().map(|kind| (kind, submit("", kind))).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let wait = |kind: ProofKind, job: &str| -> JobResult {
        match rt.block_on(s.await_job(job, Some(Duration::from_secs(900)))).unwrap() {
            AwaitOutcome::Done(r) => r,
            AwaitOutcome::TimedOut => panic!("{kind:?} did not finish"),
        }
    };
    let r = wait(ProofKind::PoRepSealCommit, &porep_job);
    assert!(!faults::is_armed(Stage::Prove, porep_id), "the PoRep never reached the prover: {:?}", r.error);
    assert_eq!(r.phase, Phase::Failed);
    let message = r.error.unwrap_or_default();
    assert!(message.contains("injected fault"), "the PoRep failed for another reason: {message}");
    for (kind, job) in &jobs {
        let r = wait(*kind, job);
        assert_eq!(r.phase, Phase::Completed, "{kind:?}: {:?}", r.error);
        assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, *kind, &r.proof).unwrap(), "{kind:?}");
    }
    let st = s.status();
    assert!(st.memory_peak <= budget, "peak {} > limit {budget}", st.memory_peak);
    assert!(st.memory_peak > porep, "the PoRep parameters were counted (peak {})", st.memory_peak);
    let resident: Vec<String> = st.resident_srs.iter().map(|r| r.circuit.to_string()).collect();
    assert!(
        !resident.contains(&"porep-2k".to_string()),
        "PoRep's parameters were evicted for SnapDeals': {resident:?}"
    );
    assert!(resident.contains(&"snap-2k".to_string()), "{resident:?}");
    assert!(
        st.memory_resident > 0 && st.memory_resident <= st.memory_used,
        "{} of {}",
        st.memory_resident,
        st.memory_used
    );
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn a_preload_that_can_never_fit_is_refused() {
    let s = scheduler(100 << 20);
    let e = s.preload("porep-2k").unwrap_err();
    assert!(matches!(e, EngineError::ResourceExhausted(_)), "{e}");
    assert!(e.to_string().contains("porep-2k") && e.to_string().contains("budget"), "{e}");
    assert!(s.status().resident_srs.is_empty());
    // Small parameters still load under the same budget, and so do their PCE matrices: the
    // budget holds both.
    s.preload("wpost-2k").unwrap();
    let st = s.status();
    assert_eq!(st.resident_srs.len(), 1);
    assert!(st.memory_resident > st.resident_srs[0].bytes, "the preloaded matrices are counted too");
    s.shutdown(Duration::from_secs(10));
}

#[test]
fn preloaded_deadline_circuits_are_never_evicted_to_make_room() {
    let f = common::fixture();
    let params = f.dir.join("params");
    let porep = file_len(&params, "v28-stacked-proof-of-replication");
    let snap = file_len(&params, "v28-empty-sector-update");
    // Room for PoRep's or SnapDeals' parameters and matrices beside WinningPoSt's (PoRep:
    // 1.1 GB + 152 MB of matrices; SnapDeals 656 + 96 MB; WinningPoSt < 60 MB), never for
    // PoRep's and SnapDeals' together. Preloads hold no working sets.
    let budget = porep + snap / 2 + (300 << 20);
    let mut config = cuzk_core::Config::default();
    config.srs.param_dir = params.clone();
    config.memory.budget_bytes = budget;
    config.srs.preload = vec!["winning-2k".into()];
    let s = Scheduler::start(config, None).unwrap();
    let winning = cuzk_filecoin::CircuitId::parse("winning-2k").unwrap();
    let load_id = |s: &Scheduler| s.srs().get(winning).unwrap().0.srs.id;
    s.preload("winning-2k").unwrap();
    let first = load_id(&s);
    // Oldest and idle, WinningPoSt's parameters would be the first to go; pinned, PoRep's go.
    s.preload("porep-2k").unwrap();
    s.preload("snap-2k").unwrap();
    let resident: Vec<String> = s.status().resident_srs.iter().map(|r| r.circuit.to_string()).collect();
    assert!(!resident.contains(&"porep-2k".to_string()), "the load had to make room: {resident:?}");
    assert!(resident.contains(&"snap-2k".to_string()) && resident.contains(&"winning-2k".to_string()), "{resident:?}");
    assert_eq!(load_id(&s), first, "WinningPoSt's parameters were never evicted and reloaded");
    // An operator's explicit eviction still works.
    assert!(matches!(s.evict("winning-2k"), Ok(cuzk_core::srs_cache::EvictOutcome::Freed { .. })));
    s.shutdown(Duration::from_secs(10));
}

/// Every prover that can hold a partition at once has a proving set of headroom: with the
/// deadline lane on (the default) one general prover, the deadline prover and the critical
/// one, so three. A client may mark any proof CRITICAL, so the critical prover's share is not
/// a WinningPoSt's small one by rule. A budget one byte short of the waiting set plus three
/// proving sets can never admit a partition; one that holds them exactly can.
#[test]
fn every_lane_prover_has_headroom_in_the_budget() {
    let circuit = cuzk_filecoin::CircuitId::parse("wpost-2k").unwrap();
    let with_budget = |budget: u64| {
        let mut config = cuzk_core::Config::default();
        config.srs.param_dir = common::fixture().dir.join("params");
        config.memory.budget_bytes = budget;
        config.pipeline.prover_workers = 1;
        assert!(config.pipeline.deadline_lane, "the lane is on by default");
        Scheduler::start(config, None).unwrap()
    };
    let probe = with_budget(0);
    let e = probe.memory().estimate(circuit);
    assert_eq!(probe.memory().provers(), 3);
    probe.shutdown(Duration::from_secs(5));
    assert!(e.proving > 0, "{e:?}");

    let exact = e.waiting + 3 * e.proving;
    let s = with_budget(exact);
    assert!(s.memory().fits(circuit, 0), "{e:?} fits {exact} bytes");
    s.shutdown(Duration::from_secs(5));
    let s = with_budget(exact - 1);
    assert!(!s.memory().fits(circuit, 0), "{e:?} cannot fit {} bytes beside three provers", exact - 1);
    let refused = s.submit(
        "",
        None,
        request(&common::fixture().dir, &common::fixture().manifest, ProofKind::WindowPostPartition).unwrap(),
    );
    let message = refused.err().expect("a partition that can never be admitted is refused at submit").to_string();
    assert!(message.contains("3 provers"), "{message}");
    s.shutdown(Duration::from_secs(5));
}
