//! `cuzk-bench` writes plain text when its output is not a terminal: no ANSI escape sequences
//! in a log file, a CI log or a pipe into grep (the daemon does the same for the journal).
//!
//! Runs the real binary with stdout and stderr piped. The command is one that logs several
//! lines within milliseconds and needs no daemon or fixtures: `status` against a socket
//! that does not exist, with `--log trace`, so tonic logs its connection attempts before
//! the command fails. `--help` is checked too (clap styles its help on a terminal).

use std::process::{Command, Output, Stdio};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk-bench"))
        .args(args)
        .stdin(Stdio::null())
        .env_remove("NO_COLOR") // the test must not pass only because the caller set it
        .output()
        .expect("running cuzk-bench")
}

fn assert_plain(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(!text.contains('\x1b'), "{what} holds an escape sequence:\n{}", text.escape_debug());
}

#[test]
fn piped_logs_and_help_have_no_ansi_escapes() {
    let socket = tempfile::tempdir().unwrap().path().join("absent.sock");
    let addr = format!("unix://{}", socket.display());
    let out = run(&["--log", "trace", "--addr", &addr, "status"]);
    assert!(!out.status.success(), "status without a daemon must fail");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Without a log line this test would check nothing: tonic's connection attempt logs.
    assert!(stderr.contains("TRACE"), "no log line on stderr:\n{stderr}");
    assert!(stderr.contains("cannot connect to cuzk-daemon"), "{stderr}");
    assert_plain("status's stderr", &out.stderr);
    assert_plain("status's stdout", &out.stdout);

    let help = run(&["--help"]);
    assert!(help.status.success() && String::from_utf8_lossy(&help.stdout).contains("Usage:"));
    assert_plain("--help", &help.stdout);
}
