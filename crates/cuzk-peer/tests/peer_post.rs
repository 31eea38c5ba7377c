//! `cuzk-peer-c2 --kind winning|wpost` on what `cuzk-bench gen-consistent` writes: at 2 KiB
//! (the fixture set's insecure test parameters, bellperson's CPU prover) each PoSt kind must
//! prove twice in one process, with two reports that say the proof verified, and the first
//! alone counting the parameter load; an input set whose public data no longer matches its
//! vanilla proofs must end in an error that says why, and a non-zero exit.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use cuzk_filecoin::fixtures::consistent::inputs::InputSet;
use cuzk_filecoin::fixtures::shared_fixture_set;
use cuzk_filecoin::CircuitId;

use common::{peer, PeerRun};

/// The fixture set's parameter directory (it holds wpost-2k's and winning-2k's), and a fresh
/// consistent input set of `circuit` in a temporary directory.
fn params_and_set(circuit: &str, sectors: usize) -> (PathBuf, tempfile::TempDir) {
    // First: it binds filecoin-proofs' settings in this process, which the generator reads.
    let (fixtures, _) = shared_fixture_set().expect("making the fixture set");
    let tmp = tempfile::tempdir().unwrap();
    InputSet::generate(CircuitId::parse(circuit).unwrap(), sectors, 1, tmp.path()).unwrap();
    (fixtures.join("params"), tmp)
}

fn prove(kind: &str, inputs: &Path, params: &Path, runs: &str) -> PeerRun {
    let args: [&OsStr; 8] = [
        "--kind".as_ref(),
        kind.as_ref(),
        "--inputs".as_ref(),
        inputs.as_os_str(),
        "--param-dir".as_ref(),
        params.as_os_str(),
        "--runs".as_ref(),
        runs.as_ref(),
    ];
    peer(&args)
}

/// Two runs, both verified, in order, the first one marked as including the parameter load.
fn assert_two_verified_runs(run: &PeerRun, kind: &str, verifier: &str) {
    assert!(run.success, "{:?}", run.reports);
    assert_eq!(run.reports.len(), 2, "{:?}", run.reports);
    for (i, report) in run.reports.iter().enumerate() {
        assert_eq!(report["run"], i + 1, "{report}");
        assert_eq!(report["kind"], kind, "{report}");
        assert_eq!(report["includes_param_load"], i == 0, "{report}");
        let result = report["result"].as_str().unwrap();
        assert_eq!(result, format!("ok: 192 proof bytes, verified by {verifier}"), "{report}");
        assert!(report["error"].is_null(), "{report}");
        let (wall, prove, verify) = (
            report["wall_s"].as_f64().unwrap(),
            report["prove_s"].as_f64().unwrap(),
            report["verify_s"].as_f64().unwrap(),
        );
        assert!(prove > 0.0 && verify > 0.0 && prove + verify <= wall, "{report}");
    }
}

/// Rewrite one hex field of the set's input-set.json by flipping the low bit of its first byte
/// (the value stays a field element, so only the proof check can object).
fn tamper(dir: &Path, edit: impl FnOnce(&mut serde_json::Value) -> &mut serde_json::Value) {
    let path = dir.join("input-set.json");
    let mut set: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let field = edit(&mut set);
    let hex = field.as_str().unwrap().to_string();
    let first = u8::from_str_radix(&hex[..2], 16).unwrap() ^ 1;
    *field = format!("{first:02x}{}", &hex[2..]).into();
    std::fs::write(&path, serde_json::to_vec_pretty(&set).unwrap()).unwrap();
}

fn single_error(run: &PeerRun) -> String {
    assert!(!run.success, "a tampered set must fail: {:?}", run.reports);
    assert_eq!(run.code, Some(1));
    let [report] = &run.reports[..] else { panic!("one report for one run: {:?}", run.reports) };
    assert_eq!(report["result"], "error", "{report}");
    report["error"].as_str().unwrap().to_string()
}

#[test]
fn window_post_proves_twice_and_verifies_and_a_changed_comm_r_fails() {
    let (params, set) = params_and_set("wpost-2k", 2);
    assert_two_verified_runs(&prove("wpost", set.path(), &params, "2"), "wpost", "verify_window_post");

    // The second sector's comm_r as the verifier knows it no longer matches the vanilla proof's:
    // proving still succeeds (the vanilla proofs carry their own), the check must not.
    tamper(set.path(), |s| &mut s["sectors"][1][1]);
    let err = single_error(&prove("wpost", set.path(), &params, "1"));
    assert!(err.contains("the WindowPoSt proof did NOT verify: verify_window_post rejected it"), "{err}");
    assert!(err.contains("2 sectors' comm_r"), "{err}");
}

#[test]
fn winning_post_proves_twice_and_verifies_and_changed_randomness_fails() {
    let (params, set) = params_and_set("winning-2k", 1);
    assert_two_verified_runs(&prove("winning", set.path(), &params, "2"), "winning", "verify_winning_post");

    // Other randomness challenges other leaves than the vanilla proof opens: filecoin-proofs
    // refuses to prove it.
    tamper(set.path(), |s| &mut s["randomness_hex"]);
    let err = single_error(&prove("winning", set.path(), &params, "1"));
    assert!(err.starts_with("generate_winning_post_with_vanilla: "), "{err}");
}

#[test]
fn a_set_of_the_other_kind_or_no_set_is_refused() {
    let (params, set) = params_and_set("winning-2k", 1);
    let err = single_error(&prove("wpost", set.path(), &params, "1"));
    assert!(err.contains("holds a WinningPoSt input set (StackedDrgWinning2KiBV1), not the WindowPoSt"), "{err}");

    // A usage error: clap's exit code and message, no report.
    let run = peer(&["--kind".as_ref(), "wpost".as_ref(), "--param-dir".as_ref(), params.as_os_str()]);
    assert_eq!(run.code, Some(2));
    assert!(run.reports.is_empty());
    assert!(run.stderr.contains("--kind wpost needs --inputs DIR"), "{}", run.stderr);
}
