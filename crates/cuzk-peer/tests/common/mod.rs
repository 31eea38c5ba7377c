//! Running `cuzk-peer-c2` as its users do — a separate process — and reading its JSON lines.

// Each test binary compiles this module on its own and reads only part of what it returns.
#![allow(dead_code)]

use std::process::Command;

/// What one run of the binary left: its exit status, one parsed JSON report per proof, and
/// stderr (usage errors go there, not to stdout).
pub struct PeerRun {
    pub success: bool,
    pub code: Option<i32>,
    pub reports: Vec<serde_json::Value>,
    pub stderr: String,
}

pub fn peer(args: &[&std::ffi::OsStr]) -> PeerRun {
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk-peer-c2")).args(args).env("RUST_LOG", "warn").output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let reports =
        stdout.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"))).collect();
    PeerRun {
        success: out.status.success(),
        code: out.status.code(),
        reports,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
