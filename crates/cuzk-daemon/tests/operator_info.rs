//! What the real `cuzk-daemon` binary tells an operator about itself: `--version` (crate
//! version, git commit, CUDA on or off and with it the CUDA runtime and minimum driver), and, started with `gpus.backend = "auto"`, which
//! backend it chose — in `/status`, and with a warning in its log when that is the CPU.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_tcp_port, http_get};

#[test]
fn version_names_the_crate_version_the_commit_and_cuda() {
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon")).arg("--version").output().expect("running cuzk-daemon");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("cuzk-daemon {} (commit ", env!("CARGO_PKG_VERSION"))), "{text}");
    // A short hash (with "-dirty" from a modified tree), or "unknown" outside git.
    let commit = text.split("(commit ").nth(1).and_then(|t| t.split(',').next()).unwrap_or("");
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    assert!(
        hash == "unknown" || (hash.len() >= 4 && hash.chars().all(|c| c.is_ascii_hexdigit())),
        "commit {commit:?} in {text}"
    );
    if cfg!(feature = "cuda") {
        // The runtime and the oldest driver that runs it, then the GPU targets.
        assert!(text.contains("cuda on (CUDA ") && text.contains(" runtime, driver >= "), "{text}");
        assert!(text.contains("; SASS ") && text.contains("; PTX "), "{text}");
    } else {
        assert!(text.contains("cuda off"), "{text}");
    }
}

/// Kills the daemon if the test fails before it is stopped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn auto_backend_is_named_in_status_and_a_cpu_fallback_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cuzk.sock");
    let http_port = free_tcp_port();
    let config = dir.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nlisten = \"unix://{}\"\nhttp_listen = \"127.0.0.1:{http_port}\"\nshutdown_grace_secs = 5\n\n\
             [srs]\nparam_dir = \"{}\"\n\n[gpus]\nbackend = \"auto\"\n",
            socket.display(),
            dir.path().join("params").display()
        ),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("params")).unwrap();
    let log = dir.path().join("daemon.log");
    let mut daemon = Daemon(
        Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
            .arg("--config")
            .arg(&config)
            .arg("--log-level")
            .arg("info")
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("starting cuzk-daemon"),
    );

    // The HTTP listener comes up after the scheduler, so the backend is chosen by then.
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", http_port)).is_err() {
        if let Some(status) = daemon.0.try_wait().unwrap() {
            panic!(
                "cuzk-daemon exited during start-up: {status}\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no HTTP listener on port {http_port}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let response = http_get(http_port, "/status");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let status: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let backend = status["backend"].as_str().unwrap_or_else(|| panic!("no backend in {status}")).to_string();

    // SIGTERM: the log is complete once it has exited.
    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(daemon.0.id() as i32, libc::SIGTERM) }, 0);
    let exit_by = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(status) = daemon.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < exit_by, "cuzk-daemon did not exit within 30 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "cuzk-daemon exited with {exit}");
    let log = std::fs::read_to_string(&log).unwrap();

    // A build with CUDA on a machine with a usable GPU picks it ("cuda[0]", …); anything else
    // falls back to the CPU, and must say so at WARN, not in passing.
    if cfg!(feature = "cuda") && backend.starts_with("cuda") {
        return;
    }
    assert_eq!(backend, "cpu", "{status}");
    let warning = log.lines().find(|l| l.contains("WARN") && l.contains("using the CPU backend"));
    assert!(warning.is_some(), "no WARN about the CPU fallback in the log:\n{log}");
    assert!(log.contains("backend=cpu"), "the start-up log does not name the backend:\n{log}");
}
