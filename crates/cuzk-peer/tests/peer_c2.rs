//! `cuzk-peer-c2` is a benchmark peer, so its numbers are only worth something if it really
//! runs filecoin-proofs' C2 to the end. On the 2 KiB fixture (insecure test parameters) it
//! must return a proof that passed filecoin-proofs' own post-C2 verification (from Curio's
//! envelope); a damaged bare C1 JSON must fail with an error that says so.
//! (Built without the `supraseal` feature here: bellperson's CPU prover.)

use std::path::Path;
use std::process::Command;

use cuzk_filecoin::fixtures::shared_fixture_set;

fn peer(c1: &Path, params: &Path, extra: &[&str]) -> (bool, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk-peer-c2"))
        .arg("--c1")
        .arg(c1)
        .arg("--param-dir")
        .arg(params)
        .args(extra)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let line = String::from_utf8(out.stdout).unwrap();
    let report: serde_json::Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    (out.status.success(), report)
}

#[test]
fn proves_and_verifies_the_fixture_c1() {
    let (dir, m) = shared_fixture_set().expect("making the fixture set");
    let prover_id: String = m.prover_id().unwrap().iter().map(|b| format!("{b:02x}")).collect();
    let params = dir.join("params");
    let (ok, report) = peer(&dir.join(&m.porep_c1_envelope_file), &params, &["--prover-id", &prover_id]);
    assert!(ok, "{report}");
    let result = report["result"].as_str().unwrap();
    assert!(result.starts_with("ok: 192 proof bytes"), "{result}");
    assert!(report["wall_s"].as_f64().unwrap() > 0.0);
    assert!(report["peak_rss_bytes"].as_u64().unwrap() > 1 << 20);

    // A C1 whose bytes were damaged: an error, and the process says so in its report.
    let tmp = tempfile::tempdir().unwrap();
    let mut json = m.porep_c1(&dir).unwrap();
    let at = json.len() / 2;
    json[at..at + 8].copy_from_slice(b"}}}}}}}}");
    std::fs::write(tmp.path().join("bad.json"), json).unwrap();
    let (ok, report) = peer(&tmp.path().join("bad.json"), &params, &[]);
    assert!(!ok);
    assert!(report["error"].as_str().unwrap().contains("parsing the C1 output"), "{report}");
}
