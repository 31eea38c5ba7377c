//! Synthetic parameters (`srs.synthetic`) end to end: sized from the PCE matrices, the CPU
//! prover takes them without shape errors, and the proof comes back flagged unverified — from
//! the in-process engine (`Verification::SkippedSynthetic`) and from the scheduler (FAILED with
//! an UNVERIFIED message, counted in `cuzk_unverified_synthetic_proofs_total`). Real
//! parameters keep being verified (`e2e_cpu.rs` asserts `Verification::Verified`).

mod common;

use std::time::Duration;

use cuzk_core::scheduler::{AwaitOutcome, Phase, Scheduler};
use cuzk_core::synthetic::is_unverified_message;
use cuzk_core::{Config, Engine, Verification};
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::fixtures::synthetic::{go_abi_number, registered_porep, synthetic_c1};
use cuzk_filecoin::{ProofKind, ProofRequest, SectorSize};

fn config(param_dir: &std::path::Path, pce_dir: &std::path::Path, synthetic: &str) -> Config {
    let mut c = Config::default();
    c.srs.param_dir = param_dir.into();
    c.pce.cache_dir = pce_dir.into();
    c.srs.synthetic = vec![synthetic.into()];
    c
}

#[test]
fn engine_flags_proofs_made_with_synthetic_parameters() {
    // The fixture's real wpost-2k parameters are right there; the configuration says
    // synthetic, so they are not read.
    let f = common::fixture();
    let pce = tempfile::tempdir().unwrap();
    let engine = Engine::new(config(&f.dir.join("params"), pce.path(), "wpost-2k")).unwrap();
    let req = request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap();
    let out = engine.prove(&req).unwrap();
    assert_eq!(out.verification, Verification::SkippedSynthetic);
    assert_eq!(out.proof.len(), 192);
    assert!(!verify_with_filecoin_proofs(&f.dir, &f.manifest, ProofKind::WindowPostPartition, &out.proof).unwrap());
    let resident = engine.srs.resident();
    assert_eq!(resident.len(), 1);
    assert!(resident[0].synthetic);

    // Circuits not listed still use (and verify against) the real files.
    let winning = engine.prove(&request(&f.dir, &f.manifest, ProofKind::WinningPost).unwrap()).unwrap();
    assert_eq!(winning.verification, Verification::Verified);
}

#[test]
fn synthetic_porep_c1_proves_with_synthetic_parameters_and_no_files() {
    // The issue-#6 benchmark path at 2 KiB: a synthetic C1, no parameter files at all
    // (an empty directory), parameters shaped from the PCE matrices extracted on first use.
    let dir = tempfile::tempdir().unwrap();
    let c1 = synthetic_c1(registered_porep(SectorSize::S2KiB), 3).unwrap();
    let req = ProofRequest {
        kind: Some(ProofKind::PoRepSealCommit),
        registered_proof: go_abi_number(c1.registered).unwrap(),
        vanilla_proof: c1.envelope(1),
        sector_number: 1,
        ..Default::default()
    };
    let engine = Engine::new(config(dir.path(), &dir.path().join("pce"), "porep-2k")).unwrap();
    let out = engine.prove(&req).unwrap();
    assert_eq!(out.verification, Verification::SkippedSynthetic);
    assert_eq!(out.partitions, c1.shape.partitions);
    assert_eq!(out.proof.len(), 192 * c1.shape.partitions);
    assert!(
        std::fs::read_dir(dir.path()).unwrap().all(|e| e.unwrap().file_name() == "pce"),
        "only the PCE cache is written"
    );
}

#[test]
fn scheduler_returns_synthetic_proofs_failed_unverified_and_counts_them() {
    let f = common::fixture();
    let pce = tempfile::tempdir().unwrap();
    let s = Scheduler::start(config(&f.dir.join("params"), pce.path(), "wpost-2k"), None).unwrap();
    let job = s.submit("", None, request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let r = match rt.block_on(s.await_job(&job.job_id, Some(Duration::from_secs(600)))).unwrap() {
        AwaitOutcome::Done(r) => r,
        AwaitOutcome::TimedOut => panic!("job did not finish in 10 minutes"),
    };
    assert_eq!(r.phase, Phase::Failed, "an unverifiable proof must never complete");
    let message = r.error.unwrap_or_default();
    assert!(is_unverified_message(&message), "{message}");
    assert_eq!(r.proof.len(), 192, "the bytes are attached for inspection");
    let metrics = s.metrics_text();
    assert!(metrics.contains("cuzk_unverified_synthetic_proofs_total{kind=\"wpost\"} 1"), "{metrics}");
    assert!(metrics.contains("cuzk_proofs_completed_total{kind=\"wpost\"} 0"), "{metrics}");
    assert_eq!(s.status().failed, 1);
    s.shutdown(Duration::from_secs(5));
}
