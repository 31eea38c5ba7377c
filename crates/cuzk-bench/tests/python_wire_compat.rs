//! Wire compatibility from another gRPC stack: the real `cuzk-daemon` binary on a temporary
//! unix socket, driven by `scripts/wire_compat.py` (Python grpcio, stubs generated from the
//! .proto at run time): GetStatus, then Prove of the fixture set's WindowPoSt, which must
//! complete with a 192-byte proof. Then SIGTERM, and the daemon must exit 0.
//!
//! Needs `python3` with the `venv` module; the Python packages are installed (pinned) into
//! `target/py-wire-venv` on first use, from PyPI. Anything missing is a test failure, not a
//! skip. The fixture set is made (once per machine, under a file lock) if absent.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cuzk_filecoin::fixtures::shared_fixture_set;

/// Pinned Python packages (grpcio's generated code checks it is at least grpcio-tools' version).
const PY_PACKAGES: [&str; 3] = ["grpcio==1.71.0", "grpcio-tools==1.71.0", "protobuf==5.29.3"];
const PIP_TIMEOUT: Duration = Duration::from_secs(900);
const BUILD_TIMEOUT: Duration = Duration::from_secs(3600);
const DAEMON_START_TIMEOUT: Duration = Duration::from_secs(120);
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(1200);
const DAEMON_STOP_TIMEOUT: Duration = Duration::from_secs(120);

/// A child process killed (and reaped) when dropped, so a failing test leaves nothing behind.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Guard {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("process still owned")
    }

    /// Wait for the process to exit within `limit`; kill it and panic if it does not.
    fn wait(&mut self, what: &str, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child().try_wait().unwrap_or_else(|e| panic!("waiting for {what}: {e}")) {
                self.0 = None;
                return status;
            }
            if start.elapsed() > limit {
                if let Some(mut child) = self.0.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                panic!("{what} did not finish within {limit:?}; killed it");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Run `cmd` to completion within `limit`, output to `log`; returns the status and the log text.
fn run_logged(what: &str, cmd: &mut Command, log: &Path, limit: Duration) -> (ExitStatus, String) {
    let out = File::create(log).unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
    let err = out.try_clone().unwrap();
    eprintln!("[wire-compat] {what}: {cmd:?}");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    let status = Guard(Some(child)).wait(what, limit);
    (status, std::fs::read_to_string(log).unwrap_or_default())
}

/// The fixture set (made if absent), under the same lock the other test binaries use.
fn fixture_dir() -> PathBuf {
    shared_fixture_set().expect("making the fixture set").0
}

/// `target/<profile>/` (where cargo put cuzk-bench, and where cuzk-daemon lives too).
fn profile_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_cuzk-bench")).parent().expect("binary has a directory").to_path_buf()
}

/// The cuzk-daemon binary next to cuzk-bench, built first if it is not there.
fn daemon_binary(scratch: &Path) -> PathBuf {
    let dir = profile_dir();
    let bin = dir.join("cuzk-daemon");
    if bin.is_file() {
        return bin;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-p", "cuzk-daemon"]).current_dir(env!("CARGO_MANIFEST_DIR"));
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some(profile) => {
            cmd.args(["--profile", profile]);
        }
    }
    if let Some(target) = dir.parent() {
        cmd.arg("--target-dir").arg(target);
    }
    let (status, log) = run_logged("building cuzk-daemon", &mut cmd, &scratch.join("cargo-build.log"), BUILD_TIMEOUT);
    assert!(status.success(), "`cargo build -p cuzk-daemon` failed ({status}):\n{log}");
    assert!(bin.is_file(), "cargo built cuzk-daemon but {} is not there", bin.display());
    bin
}

/// `target/py-wire-venv` with grpcio and grpcio-tools, created on first use (under a lock).
fn python_venv(scratch: &Path) -> PathBuf {
    let target = profile_dir().parent().expect("profile dir has a parent").to_path_buf();
    let venv = target.join("py-wire-venv");
    let python = venv.join("bin").join("python");
    let lock = File::create(target.join("py-wire-venv.lock")).unwrap();
    lock.lock().unwrap();
    let ready = || {
        Command::new(&python)
            .args(["-c", "import grpc, grpc_tools.protoc, google.protobuf"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ready() {
        if venv.exists() {
            // A half-made or broken environment: start over.
            std::fs::remove_dir_all(&venv).unwrap_or_else(|e| panic!("removing {}: {e}", venv.display()));
        }
        let system_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
        let (status, log) = run_logged(
            "creating the Python venv",
            Command::new(&system_python).args(["-m", "venv"]).arg(&venv),
            &scratch.join("venv.log"),
            Duration::from_secs(300),
        );
        assert!(
            status.success(),
            "`{system_python} -m venv {}` failed ({status}); is python3-venv installed?\n{log}",
            venv.display()
        );
        let (status, log) = run_logged(
            "installing grpcio and grpcio-tools",
            Command::new(&python)
                .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"])
                .args(PY_PACKAGES),
            &scratch.join("pip.log"),
            PIP_TIMEOUT,
        );
        if !status.success() {
            let _ = std::fs::remove_dir_all(&venv);
            panic!("pip install {} failed ({status}); PyPI must be reachable:\n{log}", PY_PACKAGES.join(" "));
        }
        assert!(ready(), "{} cannot import grpc / grpc_tools after installing them", python.display());
    }
    drop(lock);
    python
}

/// Wait until the daemon accepts connections on `socket` (or fail with its exit status and log).
fn wait_for_socket(daemon: &mut Guard, socket: &Path, log: &Path) {
    let start = Instant::now();
    loop {
        if let Some(status) = daemon.child().try_wait().unwrap() {
            daemon.0 = None;
            panic!(
                "cuzk-daemon exited during start-up ({status}):\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            return;
        }
        assert!(
            start.elapsed() < DAEMON_START_TIMEOUT,
            "cuzk-daemon did not listen on {} within {DAEMON_START_TIMEOUT:?}:\n{}",
            socket.display(),
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn python_grpcio_client_proves_window_post() {
    let fixtures = fixture_dir();
    let tmp = tempfile::Builder::new().prefix("cuzk-wire-").tempdir().unwrap();
    let python = python_venv(tmp.path());
    let daemon_bin = daemon_binary(tmp.path());

    let socket = tmp.path().join("cuzk.sock");
    let config = tmp.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nlisten = \"unix://{}\"\nlog_level = \"info\"\n\n[srs]\nparam_dir = \"{}\"\nsubgroup_check = \"once\"\n",
            socket.display(),
            fixtures.join("params").display()
        ),
    )
    .unwrap();
    let daemon_log = tmp.path().join("daemon.log");
    let log_file = File::create(&daemon_log).unwrap();
    eprintln!("[wire-compat] starting {} --config {}", daemon_bin.display(), config.display());
    let mut daemon = Guard(Some(
        Command::new(&daemon_bin)
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", daemon_bin.display())),
    ));
    wait_for_socket(&mut daemon, &socket, &daemon_log);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/wire_compat.py");
    let (status, output) = run_logged(
        "wire_compat.py",
        Command::new(&python)
            .arg(&script)
            .arg("--addr")
            .arg(format!("unix://{}", socket.display()))
            .arg("--fixtures")
            .arg(&fixtures),
        &tmp.path().join("script.log"),
        SCRIPT_TIMEOUT,
    );
    eprintln!("{output}");
    assert!(
        status.success(),
        "wire_compat.py failed ({status}):\n{output}\n--- daemon log ---\n{}",
        std::fs::read_to_string(&daemon_log).unwrap_or_default()
    );
    assert!(output.contains("wire compatibility: OK"), "unexpected script output:\n{output}");

    let pid = daemon.child().id() as libc::pid_t;
    // SAFETY: plain kill(2) on our own child, which has not been reaped yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "sending SIGTERM to cuzk-daemon");
    let exit = daemon.wait("cuzk-daemon after SIGTERM", DAEMON_STOP_TIMEOUT);
    let log = std::fs::read_to_string(&daemon_log).unwrap_or_default();
    assert!(exit.success(), "cuzk-daemon exited with {exit} after SIGTERM:\n{log}");
    assert!(!socket.exists(), "cuzk-daemon left its socket {} behind", socket.display());
}
