//! Deployment behaviour on the 2 KiB fixtures: with a parameter directory cuzk must not
//! write to, everything it learns (subgroup-check records, the PCE cache) goes to its state
//! directory, nothing is written beside the parameters, and a second start neither rechecks
//! the parameters nor re-extracts the matrices; systemd's READY=1 comes only once the
//! configured preload is resident, STOPPING=1 on SIGTERM.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cuzk_filecoin::fixtures::requests::request;
use cuzk_filecoin::fixtures::shared_fixture_set;
use cuzk_filecoin::params::param_files;
use cuzk_filecoin::{CircuitId, ProofKind};
use cuzk_proto::client::ProvingEngineClient;
use cuzk_proto::v1::await_proof_response::Status;
use cuzk_proto::v1::{GetStatusRequest, ProveRequest};

/// Every name under `dir`, sorted: what the daemon must leave unchanged.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// Wait for a notification containing `what`; returns everything received up to it.
fn expect_notification(sock: &UnixDatagram, what: &str) -> String {
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = sock.recv(&mut buf).unwrap_or_else(|e| panic!("no {what} notification (got {seen:?}): {e}"));
        let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
        seen.push_str(&msg);
        seen.push('|');
        if msg.lines().any(|l| l == what) {
            return seen;
        }
    }
}

struct Run {
    log: String,
}

/// One daemon start with `config`, notifications on `notify`: wait for READY=1, check the
/// preload is resident, prove one WindowPoSt, SIGTERM, wait for STOPPING=1 and exit 0.
async fn run_once(
    config: &Path,
    notify: &UnixDatagram,
    notify_path: &Path,
    socket: &Path,
    log: &Path,
    fixtures: &Path,
) -> Run {
    let m = shared_fixture_set().unwrap().1;
    let child = Command::new(env!("CARGO_BIN_EXE_cuzk-daemon"))
        .arg("--config")
        .arg(config)
        .env("NOTIFY_SOCKET", notify_path)
        .env_remove("STATE_DIRECTORY")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut daemon = common::Daemon::new(child);
    let seen = expect_notification(notify, "READY=1");
    assert!(seen.contains("STATUS=preloading wpost-2k"), "{seen}");
    let mut client = ProvingEngineClient::new(common::connect(socket).await);
    let st = client.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert!(
        st.loaded_srs.iter().any(|s| s.circuit_id == "wpost-2k"),
        "READY=1 before the preload was resident: {st:?}"
    );

    let req =
        common::submit_request(request(fixtures, &m, ProofKind::WindowPostPartition).unwrap(), "state-dir-wpost", 0);
    let res = client.prove(ProveRequest { submit: Some(req) }).await.unwrap().into_inner().result.unwrap();
    assert_eq!(res.status(), Status::Completed, "{}", res.error_message);

    // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(daemon.pid(), libc::SIGTERM) }, 0);
    expect_notification(notify, "STOPPING=1");
    let status = daemon.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "cuzk-daemon exited with {status}");
    Run { log: std::fs::read_to_string(log).unwrap() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn state_goes_to_the_state_dir_and_ready_waits_for_preloads() {
    let (fixtures, _) = shared_fixture_set().expect("fixture set");
    let tmp = tempfile::tempdir().unwrap();
    let params = tmp.path().join("params");
    std::fs::create_dir(&params).unwrap();
    // A fresh copy of one circuit's files: no record of an earlier check, no PCE cache.
    let files = param_files(&fixtures.join("params"), CircuitId::parse("wpost-2k").unwrap()).unwrap();
    let mut copied: Vec<PathBuf> = vec![files.params.clone(), files.vk.clone()];
    let marker = PathBuf::from(format!("{}.INSECURE", files.params.display()));
    if marker.exists() {
        copied.push(marker);
    }
    for f in &copied {
        std::fs::copy(f, params.join(f.file_name().unwrap())).unwrap();
    }
    let before = listing(&params);
    // Read-only to a non-root user; root writes anyway, which is why the listing is compared.
    std::fs::set_permissions(&params, std::fs::Permissions::from_mode(0o555)).unwrap();

    let state = tmp.path().join("state");
    let socket = tmp.path().join("run").join("cuzk.sock");
    let notify_path = tmp.path().join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
    let config = tmp.path().join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\nlisten = \"unix://{}\"\nshutdown_grace_secs = 5\nstate_dir = \"{}\"\nlog_level = \"info\"\n\n\
             [srs]\nparam_dir = \"{}\"\nsubgroup_check = \"once\"\npreload = [\"wpost-2k\"]\n",
            socket.display(),
            state.display(),
            params.display()
        ),
    )
    .unwrap();

    let first = run_once(&config, &notify, &notify_path, &socket, &tmp.path().join("log1"), &fixtures).await;
    assert!(!first.log.contains("subgroup check skipped"), "a fresh copy must be checked:\n{}", first.log);
    assert!(first.log.contains("PCE extracted"), "{}", first.log);
    let name = files.params.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        state.join("subgroup-checked").join(format!("{name}.cuzk-checked")).is_file(),
        "no record in the state directory"
    );
    assert!(state.join("pce").join("wpost-2k.pce").is_file(), "no PCE cache in the state directory");
    assert_eq!(listing(&params), before, "the daemon wrote into the parameter directory");

    let second = run_once(&config, &notify, &notify_path, &socket, &tmp.path().join("log2"), &fixtures).await;
    assert!(second.log.contains("subgroup check skipped"), "rechecked on the second start:\n{}", second.log);
    assert!(!second.log.contains("PCE extracted"), "re-extracted on the second start:\n{}", second.log);
    assert_eq!(listing(&params), before, "the daemon wrote into the parameter directory");
    std::fs::set_permissions(&params, std::fs::Permissions::from_mode(0o755)).unwrap();
}
