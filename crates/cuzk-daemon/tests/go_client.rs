//! The daemon called the way Curio calls it, from Curio's own gRPC stack (issue #39): a Go
//! program (`tests/go_client/main.go`, grpc-go and protobuf-go, stubs generated from
//! `proto/cuzk/v1/proving.proto` by protoc at test time) calls only `Prove`, with Curio's
//! message limits, deadline, request ids and priorities, for all four proof types on the
//! 2 KiB fixture set, both WindowPoSt partitions of the deadline under one id. It does so
//! against two daemons at once: one on a unix socket without a token (grpc-go 1.33's
//! clientconn.go sends `:authority: localhost` for a `unix:` target; read there, not
//! asserted here), all four types; one on 127.0.0.1 with `daemon.auth_token` and the token
//! on every call, the WinningPoSt and the WindowPoSt deadline only (`-deadline-only`): the
//! transport and the token are what that daemon is for, and the PoRep and SnapDeals calls
//! take them just as these do, at ~50 s more of CI's time. Every proof it gets back is
//! verified here with filecoin-proofs, its request ids must be Curio's, and each daemon must
//! have proved each input exactly once (the retry of partition 0 is answered with the job it
//! already has).
//!
//! Needs Go, grpc-go, protobuf-go (with the v1.5 `github.com/golang/protobuf` shim that
//! grpc-go's codec imports), protoc and its two Go plugins: Debian's packages
//! (`GO_PACKAGES`), which `.ci/run` installs. The client is built in GOPATH mode against
//! `/usr/share/gocode`, where Debian puts the Go sources, so nothing is fetched. Debian 12's
//! grpc-go is 1.33, older than Curio's; the version that ran is printed. Anything missing
//! fails the test: it never skips.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cuzk_filecoin::fixtures::requests::verify_with_filecoin_proofs;
use cuzk_filecoin::fixtures::{shared_fixture_set, Manifest};
use cuzk_filecoin::ProofKind;
use cuzk_proto::v1::{GetStatusRequest, GetStatusResponse};

/// What `.ci/run` installs (Debian 12); the message of a failed tool check names them.
const GO_PACKAGES: &str = "golang-go golang-google-grpc-dev golang-google-protobuf-dev \
                           golang-github-golang-protobuf-1-5-dev protoc-gen-go protoc-gen-go-grpc protobuf-compiler";
/// Where Debian's golang-*-dev packages put their sources: a GOPATH entry.
const DEBIAN_GOCODE: &str = "/usr/share/gocode";
/// The Go import path the stubs are generated under (the .proto names no go_package).
const STUB_PACKAGE: &str = "cuzktest/cuzkpb";
const CLIENT_PACKAGE: &str = "cuzktest/goclient";
/// A cold build of grpc-go took 14 s on 2 busy cores; this only bounds a hang.
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);
/// Far above the ~1 min the two clients take together on 2 cores; only bounds a hang (the
/// client's own deadline per call is Curio's 30 min).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(1200);
/// Every 2 KiB circuit, loaded while the Go client builds rather than by the first proofs.
const PRELOAD: &str = r#"preload = ["porep-2k", "snap-2k", "wpost-2k", "winning-2k"]"#;
/// The circuits of a `-deadline-only` run, likewise.
const PRELOAD_DEADLINE: &str = r#"preload = ["wpost-2k", "winning-2k"]"#;

/// The proofs the Go program writes (`<name>.proof`) and what each proves.
/// `wdpost-p0-retry` is partition 0 resent under its id: the same job, so the same proof.
const PROOFS: [(&str, ProofKind); 6] = [
    ("porep", ProofKind::PoRepSealCommit),
    ("snap", ProofKind::SnapDealsUpdate),
    ("winpost", ProofKind::WinningPost),
    ("wdpost-p0", ProofKind::WindowPostPartition),
    ("wdpost-p1", ProofKind::WindowPostPartition),
    ("wdpost-p0-retry", ProofKind::WindowPostPartition),
];
/// The calls of a `-deadline-only` run: the WinningPoSt and the WindowPoSt deadline.
const DEADLINE_ONLY: [&str; 4] = ["winpost", "wdpost-p0", "wdpost-p1", "wdpost-p0-retry"];

/// Run `cmd` to completion within `limit`, output to `log`; returns the status and the log
/// text. The process is killed if it overruns, so a hang fails the test instead of CI.
fn run_logged(what: &str, cmd: &mut Command, log: &Path, limit: Duration) -> (ExitStatus, String) {
    let out = File::create(log).unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
    let err = out.try_clone().unwrap();
    eprintln!("[go-client] {what}: {cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}; install the Debian packages {GO_PACKAGES}"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("waiting for {what}: {e}")) {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not finish within {limit:?}; killed it:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (status, std::fs::read_to_string(log).unwrap_or_default())
}

/// `target/`, where the Go build cache is kept across runs (as the Python test keeps its venv).
fn target_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_cuzk-daemon"));
    bin.parent().and_then(Path::parent).expect("target/<profile>/cuzk-daemon").to_path_buf()
}

/// The first line a tool prints for `args`, or a panic naming the packages to install.
fn tool_version(tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool).args(args).output().unwrap_or_else(|e| {
        panic!("`{tool}` cannot run ({e}): install the Debian packages {GO_PACKAGES} (.ci/run does; this test never skips)")
    });
    assert!(out.status.success(), "`{tool} {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(if out.stdout.is_empty() { &out.stderr } else { &out.stdout }).into_owned();
    text.lines().next().unwrap_or("").trim().to_string()
}

/// Generate the stubs into a temporary GOPATH and build the client there; returns the binary.
fn build_go_client(scratch: &Path) -> PathBuf {
    let started = Instant::now();
    let versions = [
        tool_version("go", &["version"]),
        tool_version("protoc", &["--version"]),
        tool_version("protoc-gen-go", &["--version"]),
        tool_version("protoc-gen-go-grpc", &["--version"]),
    ];
    eprintln!("[go-client] {}", versions.join("; "));
    // The Debian packages the build compiles against. Informative only (grpc.Version, which
    // the client prints, is what counts): a missing dpkg-query does not fail the test.
    if let Ok(out) = Command::new("dpkg-query")
        .args(["-W", "-f", "${Package} ${Version}; "])
        .args(GO_PACKAGES.split_whitespace())
        .output()
    {
        eprintln!("[go-client] packages: {}", String::from_utf8_lossy(&out.stdout));
    }

    let gopath = scratch.join("gopath");
    let src = gopath.join("src");
    let client_dir = src.join(CLIENT_PACKAGE);
    std::fs::create_dir_all(&client_dir).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go_client/main.go");
    std::fs::copy(&source, client_dir.join("main.go")).unwrap_or_else(|e| panic!("copying {}: {e}", source.display()));

    let proto_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    // The .proto names no go_package (it is not Go's to own): the M option gives it one.
    let mapping = format!("Mcuzk/v1/proving.proto={STUB_PACKAGE}");
    let (status, log) = run_logged(
        "protoc",
        Command::new("protoc")
            .arg(format!("-I{}", proto_root.display()))
            .arg(format!("--go_out={}", src.display()))
            .arg(format!("--go_opt={mapping}"))
            .arg(format!("--go-grpc_out={}", src.display()))
            .arg(format!("--go-grpc_opt={mapping}"))
            .arg("cuzk/v1/proving.proto"),
        &scratch.join("protoc.log"),
        BUILD_TIMEOUT,
    );
    assert!(status.success(), "protoc failed ({status}):\n{log}");

    let binary = scratch.join("go-client");
    let gopath_list = std::env::join_paths([gopath.as_path(), Path::new(DEBIAN_GOCODE)]).unwrap();
    let (status, log) = run_logged(
        "go build",
        Command::new("go")
            .args(["build", "-o"])
            .arg(&binary)
            .arg(CLIENT_PACKAGE)
            .current_dir(scratch)
            // GOPATH mode: imports resolve in the temporary GOPATH and Debian's sources, and
            // nothing is downloaded. The user's go env file and GOFLAGS stay out of it.
            .env("GO111MODULE", "off")
            .env("GOPATH", gopath_list)
            .env("GOCACHE", target_dir().join("go-build-cache"))
            .env("GOENV", "off")
            .env("GOFLAGS", "")
            .env("GOPROXY", "off"),
        &scratch.join("go-build.log"),
        BUILD_TIMEOUT,
    );
    assert!(status.success(), "go build failed ({status}):\n{log}");
    eprintln!("[go-client] stubs generated and client built in {:.1} s", started.elapsed().as_secs_f64());
    binary
}

/// Go's `%v` of a byte slice: `[131 17 23]`.
fn go_bytes(b: &[u8]) -> String {
    format!("[{}]", b.iter().map(u8::to_string).collect::<Vec<_>>().join(" "))
}

/// The request id Curio uses for each call, from the fixture's own data (not the client's).
fn expected_request_id(m: &Manifest, name: &str) -> String {
    let (miner, sector) = (m.miner_id, m.sector_number);
    match name {
        "porep" => format!("porep-{miner}-{sector}"),
        "snap" => format!("snap-{miner}-{sector}"),
        "winpost" => {
            let r = m.winning_randomness().unwrap();
            format!("winpost-{miner}-{}", r[..8].iter().map(|b| format!("{b:02x}")).collect::<String>())
        }
        // Every partition of the deadline, and the retry, under one id.
        _ => format!("wdpost-{miner}-0-{}", go_bytes(&m.window_randomness().unwrap()[..8])),
    }
}

/// One Go client's run: its output, and the (name, request id, job id) of every call.
struct ClientRun {
    label: &'static str,
    deadline_only: bool,
    output: String,
    calls: Vec<(String, String, String)>,
    proofs: PathBuf,
}

impl ClientRun {
    /// The calls this run made: all of [`PROOFS`], or the deadline's.
    fn expected(&self) -> impl Iterator<Item = (&'static str, ProofKind)> + '_ {
        PROOFS.into_iter().filter(|(name, _)| !self.deadline_only || DEADLINE_ONLY.contains(name))
    }

    /// Jobs the daemon proves for this run: one per call, except the retry of partition 0,
    /// which must not be proved again.
    fn jobs_proved(&self) -> u64 {
        self.expected().count() as u64 - 1
    }
}

/// Run the Go client against `addr` (with `token`, if any; only the deadline's calls if
/// `deadline_only`); panics if it does not say OK.
fn run_go_client(
    client: &Path,
    addr: &str,
    token: Option<&str>,
    deadline_only: bool,
    fixtures: &Path,
    scratch: &Path,
    label: &'static str,
) -> ClientRun {
    let proofs = scratch.join(format!("proofs-{label}"));
    std::fs::create_dir_all(&proofs).unwrap();
    let mut cmd = Command::new(client);
    cmd.arg("-addr").arg(addr).arg("-fixtures").arg(fixtures).arg("-out").arg(&proofs);
    if deadline_only {
        cmd.arg("-deadline-only");
    }
    cmd.env_remove("CUZK_TOKEN");
    if let Some(token) = token {
        cmd.env("CUZK_TOKEN", token);
    }
    let started = Instant::now();
    let (status, output) = run_logged(
        &format!("Go client over {label}"),
        &mut cmd,
        &scratch.join(format!("client-{label}.log")),
        CLIENT_TIMEOUT,
    );
    eprintln!("[go-client] {label}, {:.1} s:\n{output}", started.elapsed().as_secs_f64());
    assert!(status.success(), "the Go client failed over {label} ({status}):\n{output}");
    assert!(output.contains("go client: OK"), "the Go client over {label} exited 0 without saying OK:\n{output}");
    let listing = std::fs::read_to_string(proofs.join("calls.json")).expect("the Go client's calls.json");
    let parsed: serde_json::Value = serde_json::from_str(&listing).expect("calls.json is JSON");
    let field = |c: &serde_json::Value, k: &str| {
        c[k].as_str().unwrap_or_else(|| panic!("calls.json: no {k} in {c}")).to_string()
    };
    let calls = parsed
        .as_array()
        .expect("calls.json is a list")
        .iter()
        .map(|c| (field(c, "name"), field(c, "request_id"), field(c, "job_id")))
        .collect();
    ClientRun { label, deadline_only, output, calls, proofs }
}

/// Curio's request ids on every call, the deadline's partitions on their own jobs and the
/// retry on partition 0's, and every proof accepted by filecoin-proofs.
fn check_run(run: &ClientRun, dir: &Path, m: &Manifest) {
    let label = run.label;
    let job = |name: &str| {
        let matching: Vec<_> = run.calls.iter().filter(|c| c.0 == name).collect();
        assert_eq!(matching.len(), 1, "{label}: calls named {name} in calls.json: {:?}", run.calls);
        let (_, id, job) = matching[0];
        assert_eq!(id, &expected_request_id(m, name), "{label}: {name} was sent under another id than Curio's");
        job.clone()
    };
    for (name, kind) in run.expected() {
        job(name);
        let path = run.proofs.join(format!("{name}.proof"));
        let proof =
            std::fs::read(&path).unwrap_or_else(|e| panic!("{label}: the Go client wrote no {}: {e}", path.display()));
        let valid =
            verify_with_filecoin_proofs(dir, m, kind, &proof).unwrap_or_else(|e| panic!("{label}: {name}: {e:#}"));
        assert!(valid, "{label}: the {name} proof the Go client got is rejected by filecoin-proofs");
    }
    assert_eq!(run.calls.len(), run.expected().count(), "{label}: calls {:?}", run.calls);
    assert_ne!(job("wdpost-p0"), job("wdpost-p1"), "{label}: partition 1 got partition 0's job under the shared id");
    assert_eq!(job("wdpost-p0"), job("wdpost-p0-retry"), "{label}: the unchanged retry of partition 0 got a new job");
}

/// The daemon proved each input of `run` once and failed nothing.
fn assert_proved_once(st: &GetStatusResponse, run: &ClientRun) {
    assert_eq!(
        (st.total_proofs_completed, st.total_proofs_failed),
        (run.jobs_proved(), 0),
        "{}: (completed, failed) after the Go client; the WindowPoSt retry must get the job already proved",
        run.label
    );
}

/// The grpc-go version the client printed (`go client: grpc-go 1.33.3, …`).
fn grpc_go_version(output: &str) -> &str {
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix("go client: grpc-go "))
        .expect("the client prints its grpc-go version");
    line.split(',').next().unwrap()
}

// Multi-threaded, so that the blocking parts (the Go build and clients, filecoin-proofs'
// verification) can run in place while the runtime keeps going.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_grpc_client_proves_like_curio() {
    let started = Instant::now();
    let (dir, m) = shared_fixture_set().expect("fixture set");
    let tmp = tempfile::Builder::new().prefix("cuzk-go-client-").tempdir().unwrap();
    let scratch = tmp.path().to_path_buf();
    // The Go build runs while both daemons start and load their parameters.
    let build = std::thread::spawn(move || build_go_client(&scratch));

    // The unix socket without a token: Curio's documented set-up. `PRELOAD` follows
    // common::start's `[srs]` keys, so it lands in that table.
    let mut unix = common::start(&dir.join("params"), "", PRELOAD).await;
    // TCP on loopback with daemon.auth_token, dialled by Curio's bare `host:port` form; the
    // deadline's proofs only (see the top of this file).
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let token = format!("go-client-{}-{nanos}", std::process::id());
    let mut tcp = common::start_tcp(&dir.join("params"), &token, PRELOAD_DEADLINE).await;
    let client = build.join().unwrap_or_else(|e| std::panic::resume_unwind(e));

    // Both clients at once: the two daemons are independent, and on 2 cores one daemon
    // alone leaves a core idle for much of a 2 KiB proof.
    let unix_addr = format!("unix://{}", unix.socket.display());
    let tcp_addr = format!("127.0.0.1:{}", tcp.port);
    let scratch = tmp.path();
    let (unix_run, tcp_run) = tokio::task::block_in_place(|| {
        std::thread::scope(|s| {
            let u = s.spawn(|| run_go_client(&client, &unix_addr, None, false, &dir, scratch, "unix"));
            let t = s.spawn(|| run_go_client(&client, &tcp_addr, Some(&tcp.token), true, &dir, scratch, "tcp"));
            let (u, t) = (u.join(), t.join());
            (u.unwrap_or_else(|e| std::panic::resume_unwind(e)), t.unwrap_or_else(|e| std::panic::resume_unwind(e)))
        })
    });
    tokio::task::block_in_place(|| {
        check_run(&unix_run, &dir, &m);
        check_run(&tcp_run, &dir, &m);
    });

    let st = unix.client.get_status(GetStatusRequest {}).await.unwrap().into_inner();
    assert_proved_once(&st, &unix_run);
    let st = tcp.client.get_status(common::with_token(GetStatusRequest {}, &tcp.token)).await.unwrap().into_inner();
    assert_proved_once(&st, &tcp_run);
    unix.stop(Duration::from_secs(30));
    tcp.stop(Duration::from_secs(30));

    let version = grpc_go_version(&unix_run.output);
    assert_eq!(version, grpc_go_version(&tcp_run.output));
    eprintln!(
        "[go-client] grpc-go {version}: {} proofs verified over the unix socket without a token, {} over TCP with one, in {:.1} s",
        unix_run.expected().count(),
        tcp_run.expected().count(),
        started.elapsed().as_secs_f64()
    );
}
