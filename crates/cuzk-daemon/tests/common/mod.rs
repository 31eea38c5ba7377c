//! Test harness shared by the daemon's integration tests: start the real `cuzk-daemon`
//! binary with a config written to a temp dir, connect the generated gRPC client over its
//! unix socket (or over loopback TCP with a bearer token), plain HTTP GETs, and SIGTERM with
//! an exit-status check.

#![allow(dead_code)] // each test binary uses a different subset

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cuzk_filecoin::ProofRequest;
use cuzk_proto::client::ProvingEngineClient;
use cuzk_proto::v1::{GetStatusRequest, SubmitProofRequest};
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

/// Kills the daemon if the test fails before it is stopped properly.
pub struct Daemon(Option<Child>);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Daemon {
    /// Own a daemon a test started itself (its own environment or output).
    pub fn new(child: Child) -> Daemon {
        Daemon(Some(child))
    }

    pub fn pid(&self) -> i32 {
        self.0.as_ref().expect("daemon running").id() as i32
    }

    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.0.as_mut().expect("daemon running").try_wait().expect("polling the daemon")
    }

    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.exited() {
                self.0 = None;
                return status;
            }
            assert!(start.elapsed() < limit, "daemon did not exit within {limit:?} of SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A loopback port free now, for a daemon to bind next, taken below the kernel's ephemeral
/// range. A port from bind(0) lies in that range, and between this probe and the daemon's bind
/// any outgoing connection on the host may take it as its source port: CI saw a daemon's HTTP
/// bind fail so ("Address already in use", go_client). Below the range only another listener
/// can collide, and the probe skips those.
pub fn free_tcp_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    // Ports from 10000 up to the range (or a span of 1000 where the range starts lower).
    let (from, span) = if low > 11000 { (10000, low - 10000) } else { (low.saturating_sub(1000).max(1024), 1000) };
    for _ in 0..1000 {
        // A random draw, so that concurrent tests rarely probe the same port.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let port = from + (h.finish() % u64::from(span)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {from}..{}", from + span);
}

pub async fn connect(socket: &Path) -> Channel {
    try_connect(socket).await.expect("connecting over the unix socket")
}

async fn try_connect(socket: &Path) -> Result<Channel, tonic::transport::Error> {
    let path = socket.to_path_buf();
    // The URI is required by the API but unused: every connection goes to the socket.
    Endpoint::try_from("http://[::]:50051")
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
        }))
        .await
}

/// Wait until the daemon answers on its socket (or fail with its exit status).
pub async fn wait_ready(daemon: &mut Daemon, socket: &Path) -> ProvingEngineClient<Channel> {
    match try_wait_ready(daemon, socket).await {
        Ok(client) => client,
        Err(status) => panic!("cuzk-daemon exited during start-up: {status}"),
    }
}

/// [`wait_ready`], but a daemon that exits during start-up is an `Err` with its status.
async fn try_wait_ready(daemon: &mut Daemon, socket: &Path) -> Result<ProvingEngineClient<Channel>, ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(status) = daemon.exited() {
            return Err(status);
        }
        // A socket file can be a dead daemon's (left by SIGKILL) until the new one replaces it.
        if let Ok(channel) = try_connect(socket).await {
            let mut client = ProvingEngineClient::new(channel);
            if client.get_status(GetStatusRequest {}).await.is_ok() {
                return Ok(client);
            }
        }
        assert!(start.elapsed() < Duration::from_secs(60), "daemon did not come up on {}", socket.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn http_get(port: u16, path: &str) -> String {
    try_http_get(port, path).expect("GET on the HTTP port")
}

fn try_http_get(port: u16, path: &str) -> std::io::Result<String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// The daemon binds its HTTP port just after the gRPC socket, so a test that reads
/// `/metrics` right after `start` could otherwise find nothing listening yet. A daemon that
/// exits meanwhile (its HTTP bind failed) is an `Err` with its status.
async fn wait_http(daemon: &mut Daemon, port: u16) -> Result<(), ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(status) = daemon.exited() {
            return Err(status);
        }
        let answered = tokio::task::spawn_blocking(move || {
            try_http_get(port, "/status").is_ok_and(|r| r.starts_with("HTTP/1.1 "))
        })
        .await
        .unwrap();
        if answered {
            return Ok(());
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the HTTP endpoint did not answer on port {port}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `cuzk-daemon` to start: cargo's, or `CUZK_DAEMON_BIN` where the test binary was
/// carried to a machine without the build tree (the GPU suite: scripts/gpu-test.sh runs
/// prebuilt test binaries beside a prebuilt daemon, and cargo's path is not there).
pub fn daemon_binary() -> PathBuf {
    std::env::var_os("CUZK_DAEMON_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_cuzk-daemon")), PathBuf::from)
}

/// Write `dir/cuzk.toml` — `[daemon]` with `daemon_section` and a 5 s shutdown grace, `[srs]`
/// with `param_dir`, then `extra_toml` (so leading keys land in `[srs]`) — and start the
/// daemon on it.
fn spawn_with_config(dir: &Path, daemon_section: &str, param_dir: &Path, extra_toml: &str) -> Daemon {
    let config = dir.join("cuzk.toml");
    std::fs::write(
        &config,
        format!(
            "[daemon]\n{daemon_section}\nshutdown_grace_secs = 5\n\n[srs]\nparam_dir = \"{}\"\n\n{extra_toml}\n",
            param_dir.display()
        ),
    )
    .unwrap();
    let child = Command::new(daemon_binary())
        .arg("--config")
        .arg(&config)
        .arg("--log-level")
        .arg("info")
        .stdin(Stdio::null())
        .spawn()
        .expect("starting cuzk-daemon");
    Daemon(Some(child))
}

/// A daemon running on a temp unix socket (and an HTTP port), with `extra_toml` appended
/// to its config (which already has `[daemon]` listen/http_listen/shutdown_grace_secs and
/// `[srs] param_dir`).
pub struct Running {
    pub dir: tempfile::TempDir,
    pub daemon: Daemon,
    pub socket: PathBuf,
    pub http_port: u16,
    pub client: ProvingEngineClient<Channel>,
}

pub async fn start(param_dir: &Path, daemon_extra: &str, extra_toml: &str) -> Running {
    let dir = tempfile::tempdir().unwrap();
    // The daemon creates the socket's directory itself.
    let socket: PathBuf = dir.path().join("run").join("cuzk.sock");
    let (dir_path, socket_path) = (dir.path(), socket.as_path());
    let ((daemon, client), http_port) = on_a_free_port("cuzk-daemon", move |http_port| async move {
        let daemon_section = format!(
            "listen = \"unix://{}\"\nhttp_listen = \"127.0.0.1:{http_port}\"\n{daemon_extra}",
            socket_path.display()
        );
        let mut daemon = spawn_with_config(dir_path, &daemon_section, param_dir, extra_toml);
        let client = try_wait_ready(&mut daemon, socket_path).await?;
        wait_http(&mut daemon, http_port).await?;
        Ok((daemon, client))
    })
    .await;
    Running { dir, daemon, socket, http_port, client }
}

/// `start` on a loopback port probed free (`free_tcp_port`), until it does not exit during
/// start-up, at most three times. A port probed free can be taken before the daemon binds it
/// (CI saw "Address already in use" once, go_client); a daemon that cannot start for any other
/// reason fails all three the same way. Returns what `start` returned and the port.
async fn on_a_free_port<T, F, Fut>(what: &str, mut start: F) -> (T, u16)
where
    F: FnMut(u16) -> Fut,
    Fut: std::future::Future<Output = Result<T, ExitStatus>>,
{
    for attempt in 1..=3 {
        let port = free_tcp_port();
        match start(port).await {
            Ok(started) => return (started, port),
            Err(status) if attempt < 3 => {
                eprintln!("{what} exited during start-up ({status}) on port {port}: again on another port")
            }
            Err(status) => panic!("{what} exited during start-up, three times: {status}"),
        }
    }
    unreachable!("the last attempt returns or panics")
}

impl Running {
    /// SIGTERM, then require exit status 0 and the socket gone.
    pub fn stop(mut self, limit: Duration) {
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
        let rc = unsafe { libc::kill(self.daemon.pid(), libc::SIGTERM) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
        let status = self.daemon.wait_exit(limit);
        assert!(status.success(), "cuzk-daemon exited with {status}");
        assert!(!self.socket.exists(), "socket {} left behind", self.socket.display());
    }
}

/// `msg` with `authorization: Bearer <token>`, as `daemon.auth_token` requires.
pub fn with_token<T>(msg: T, token: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.metadata_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    r
}

/// Whether something listens on 127.0.0.1:`port` (Linux `/proc/net/tcp`, state 0A = LISTEN).
/// Looked up instead of connected to: a connect in a loop before the daemon binds can take
/// that very port as its own source and connect to itself (auth.rs saw it once in CI), and
/// the daemon then cannot bind.
fn listening(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let local = format!("0100007F:{port:04X}");
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1] == local && f[3] == "0A"
    })
}

/// A daemon on 127.0.0.1:`port` with `daemon.auth_token = token`; `client` has no token of
/// its own, so every call goes through [`with_token`].
pub struct RunningTcp {
    pub dir: tempfile::TempDir,
    pub daemon: Daemon,
    pub port: u16,
    pub token: String,
    pub client: ProvingEngineClient<Channel>,
}

/// Start a daemon on a free loopback port with `token` as its auth_token, `extra_toml`
/// appended to its config as in [`start`] (so leading keys land in `[srs]`), and wait until
/// it answers GetStatus with the token.
pub async fn start_tcp(param_dir: &Path, token: &str, extra_toml: &str) -> RunningTcp {
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path();
    let ((daemon, client), port) = on_a_free_port("cuzk-daemon on TCP", move |port| async move {
        let daemon_section = format!("listen = \"127.0.0.1:{port}\"\nauth_token = \"{token}\"");
        let mut daemon = spawn_with_config(dir_path, &daemon_section, param_dir, extra_toml);
        let start = Instant::now();
        loop {
            if let Some(status) = daemon.exited() {
                return Err(status);
            }
            if listening(port) {
                if let Ok(ch) = Endpoint::try_from(format!("http://127.0.0.1:{port}")).unwrap().connect().await {
                    let mut c = ProvingEngineClient::new(ch);
                    if c.get_status(with_token(GetStatusRequest {}, token)).await.is_ok() {
                        return Ok((daemon, c));
                    }
                }
            }
            assert!(start.elapsed() < Duration::from_secs(60), "cuzk-daemon did not answer on 127.0.0.1:{port}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    RunningTcp { dir, daemon, port, token: token.into(), client }
}

impl RunningTcp {
    /// SIGTERM, then require exit status 0.
    pub fn stop(mut self, limit: Duration) {
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
        let rc = unsafe { libc::kill(self.daemon.pid(), libc::SIGTERM) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
        let status = self.daemon.wait_exit(limit);
        assert!(status.success(), "cuzk-daemon on TCP exited with {status}");
    }
}

/// The wire form of an engine request, as Curio would send it.
pub fn submit_request(r: ProofRequest, request_id: &str, priority: i32) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: r.kind.map_or(0, |k| k as i32),
        sector_size: r.sector_size,
        registered_proof: r.registered_proof,
        priority,
        vanilla_proof: r.vanilla_proof,
        vanilla_proofs: r.vanilla_proofs,
        sector_number: r.sector_number,
        miner_id: r.miner_id,
        randomness: r.randomness,
        partition_index: r.partition_index,
        comm_r_old: r.comm_r_old,
        comm_r_new: r.comm_r_new,
        comm_d_new: r.comm_d_new,
    }
}
