//! `cuzk-peer-c2` is a benchmark peer, so its numbers are only worth something if it really
//! runs filecoin-proofs' C2 to the end. On the 2 KiB fixture (insecure test parameters) it
//! must return a proof that passed filecoin-proofs' own post-C2 verification (from Curio's
//! envelope); a damaged bare C1 JSON must fail with an error that says so.
//! (Built without the `supraseal` feature here: bellperson's CPU prover.)

mod common;

use cuzk_filecoin::fixtures::shared_fixture_set;

use common::peer;

#[test]
fn proves_and_verifies_the_fixture_c1() {
    let (dir, m) = shared_fixture_set().expect("making the fixture set");
    let prover_id: String = m.prover_id().unwrap().iter().map(|b| format!("{b:02x}")).collect();
    let params = dir.join("params");
    let c1 = dir.join(&m.porep_c1_envelope_file);
    let run = peer(&[
        "--c1".as_ref(),
        c1.as_os_str(),
        "--param-dir".as_ref(),
        params.as_os_str(),
        "--prover-id".as_ref(),
        prover_id.as_ref(),
    ]);
    let [report] = &run.reports[..] else { panic!("one report for one run: {:?}", run.reports) };
    assert!(run.success, "{report}");
    assert_eq!((&report["kind"], &report["run"]), (&"porep".into(), &1.into()), "{report}");
    let result = report["result"].as_str().unwrap();
    assert!(result.starts_with("ok: 192 proof bytes, verified by seal_commit_phase2"), "{result}");
    assert!(report["wall_s"].as_f64().unwrap() > 0.0);
    assert!(report["peak_rss_bytes"].as_u64().unwrap() > 1 << 20);

    // A C1 whose bytes were damaged: an error, and the process says so in its report.
    let tmp = tempfile::tempdir().unwrap();
    let mut json = m.porep_c1(&dir).unwrap();
    let at = json.len() / 2;
    json[at..at + 8].copy_from_slice(b"}}}}}}}}");
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, json).unwrap();
    let run = peer(&["--c1".as_ref(), bad.as_os_str(), "--param-dir".as_ref(), params.as_os_str()]);
    assert_eq!(run.code, Some(1));
    let [report] = &run.reports[..] else { panic!("one report for one run: {:?}", run.reports) };
    assert!(report["error"].as_str().unwrap().contains("parsing the C1 output"), "{report}");
}
