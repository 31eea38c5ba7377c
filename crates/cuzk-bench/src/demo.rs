//! `cuzk-bench demo`: the main job on the embedded CPU default — prove the four Filecoin
//! proof types from Curio-shaped inputs, check every proof with filecoin-proofs' verifier,
//! and print where the time went.

use std::path::Path;

use anyhow::{bail, Context};
use cuzk_core::{Config, Engine};
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::ProofKind;

use crate::report::{bytes, secs, table};

pub const KINDS: [ProofKind; 4] =
    [ProofKind::WinningPost, ProofKind::WindowPostPartition, ProofKind::SnapDealsUpdate, ProofKind::PoRepSealCommit];

/// An engine over the fixture set's (test) parameters.
pub fn fixture_engine(dir: &Path) -> anyhow::Result<Engine> {
    let mut config = Config::default();
    config.srs.param_dir = dir.join("params");
    Ok(Engine::new(config)?)
}

pub fn run(dir: &Path) -> anyhow::Result<()> {
    let manifest = crate::fixtures::run(dir)?;
    let engine = fixture_engine(dir)?;
    let mut t = table(&[
        "proof",
        "partitions",
        "params load",
        "synthesis",
        "prove",
        "verify",
        "total",
        "filecoin-proofs verify",
    ]);
    let mut failures = 0;
    for kind in KINDS {
        let req = request(dir, &manifest, kind)?;
        eprintln!("proving {kind} …");
        let out = engine.prove(&req).with_context(|| format!("proving {kind}"))?;
        let independent = verify_with_filecoin_proofs(dir, &manifest, kind, &out.proof)?;
        failures += usize::from(!independent);
        let tm = &out.timings;
        t.add_row(vec![
            format!("{kind} ({})", out.circuit),
            out.partitions.to_string(),
            secs(tm.srs_load),
            secs(tm.synthesis),
            secs(tm.prove),
            secs(tm.verify),
            secs(tm.total),
            if independent { "valid".into() } else { "INVALID".to_string() },
        ]);
    }
    println!("{t}");
    println!("parameters resident: {} (insecure 2 KiB test parameters)", bytes(engine.srs.resident_bytes()));
    if failures > 0 {
        bail!("{failures} proof(s) failed filecoin-proofs' verification");
    }
    Ok(())
}
