//! `cuzk-daemon`: the proving daemon. Reads the configuration, starts the scheduler, preloads
//! the configured parameters in the background, serves the `cuzk.v1.ProvingEngine` gRPC API
//! (and optionally HTTP `/metrics` + `/status`), prunes finished jobs, and on SIGTERM/SIGINT
//! stops accepting RPCs, lets running jobs finish within the grace period and exits 0.

mod auth;
mod http;
mod listen;
mod receive_gate;
mod service;
mod systemd;
mod unix_authority;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use cuzk_core::scheduler::Scheduler;
use cuzk_core::Config;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tracing_subscriber::EnvFilter;

/// How often finished jobs past the retention window are forgotten.
const PRUNE_INTERVAL: Duration = Duration::from_secs(30);
/// How long to wait for the servers to close their connections once the scheduler stopped.
const SERVER_DRAIN: Duration = Duration::from_secs(10);

#[derive(Parser, Debug)]
#[command(name = "cuzk-daemon", version = version(), about = "cuzk proving daemon (cuzk.v1 gRPC API)")]
struct Args {
    /// Configuration file (TOML). A missing file means the defaults.
    /// [default: /etc/cuzk/cuzk.toml, or /etc/cuzk.toml when only that exists]
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// gRPC address, overriding daemon.listen: unix:///path/to.sock or host:port.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// HTTP /metrics and /status address, overriding daemon.http_listen ("" disables).
    #[arg(long, value_name = "ADDR")]
    http_listen: Option<String>,
    /// Log filter, overriding daemon.log_level (e.g. info, debug, cuzk_core=debug,info).
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
}

/// `--version`'s text: the crate version, the git commit it was built from (build.rs; "unknown"
/// outside git) and whether the CUDA backend is built in, with the GPU targets it was compiled
/// for — what an operator needs to tell which binary is running.
fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        format!(
            "{} (commit {}, {})",
            env!("CARGO_PKG_VERSION"),
            env!("CUZK_GIT_COMMIT"),
            cuzk_core::backend::build_summary()
        )
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    let (config_path, old_default) = config_path(args.config.as_deref(), |p| p.exists());
    let (config, found) = match load_config(&args, &config_path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cuzk-daemon: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = init_logging(&config.daemon.log_level) {
        eprintln!("cuzk-daemon: {e:#}");
        return ExitCode::FAILURE;
    }
    tracing::info!("cuzk-daemon {}", version());
    if found {
        tracing::info!(path = %config_path.display(), "configuration loaded");
        if old_default {
            tracing::warn!(
                path = %config_path.display(),
                "read the old default configuration path; move it to {DEFAULT_CONFIG} (where the package installs it) or pass --config"
            );
        }
    } else {
        tracing::warn!(path = %config_path.display(), "configuration file not found; using the defaults");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("cuzk-rt").build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "starting the async runtime");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(config));
    // A parameter preload still running must not hold the exit up.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match outcome {
        Ok(()) => {
            tracing::info!("cuzk-daemon stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The file (or defaults), then command-line overrides, then the environment; validated.
/// Where the package installs the configuration.
const DEFAULT_CONFIG: &str = "/etc/cuzk/cuzk.toml";
/// The default before there was a package; still read when it is the only one present.
const OLD_DEFAULT_CONFIG: &str = "/etc/cuzk.toml";

/// `--config`, else [`DEFAULT_CONFIG`], else [`OLD_DEFAULT_CONFIG`] if only that exists (so
/// an upgrade does not silently drop to the defaults). Returns whether the old one was taken.
fn config_path(explicit: Option<&std::path::Path>, exists: impl Fn(&std::path::Path) -> bool) -> (PathBuf, bool) {
    if let Some(p) = explicit {
        return (p.to_path_buf(), false);
    }
    let (new, old) = (std::path::Path::new(DEFAULT_CONFIG), std::path::Path::new(OLD_DEFAULT_CONFIG));
    if !exists(new) && exists(old) {
        return (old.to_path_buf(), true);
    }
    (new.to_path_buf(), false)
}

fn load_config(args: &Args, path: &std::path::Path) -> Result<(Config, bool)> {
    let (mut config, found) = Config::load(path)?;
    if let Some(listen) = &args.listen {
        config.daemon.listen = listen.clone();
    }
    if let Some(http) = &args.http_listen {
        config.daemon.http_listen = http.clone();
    }
    if let Some(level) = &args.log_level {
        config.daemon.log_level = level.clone();
    }
    config.apply_env(|k| std::env::var(k).ok());
    config.validate()?;
    auth::check_exposure(&config.daemon)?;
    Ok((config, found))
}

fn init_logging(level: &str) -> Result<()> {
    let filter = EnvFilter::try_new(level).with_context(|| format!("invalid log level {level:?}"))?;
    // Colours only on a terminal: under systemd the log goes to the journal as plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).init();
    Ok(())
}

async fn run(config: Config) -> Result<()> {
    // Handlers first, so a signal that arrives during start-up is not lost.
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;

    let daemon = config.daemon.clone();
    let preload = config.srs.preload.clone();
    tracing::info!(
        param_dir = %config.srs.param_dir.display(),
        synthesis_workers = config.pipeline.synthesis_worker_count(),
        prover_workers = config.pipeline.prover_workers,
        "starting scheduler"
    );
    prepare_state_dir(&config);
    let scheduler = Scheduler::start(config, None).context("starting the scheduler")?;
    let st = scheduler.status();
    tracing::info!(backend = %st.backend, memory_limit = st.memory_limit, "scheduler started");

    let preloads = spawn_preload(&scheduler, preload);
    let pruner = spawn_pruner(scheduler.clone());

    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    };

    let (grpc, socket) = listen::bind(&daemon.listen).await?;
    tracing::info!(address = grpc.description(), max_message_bytes = daemon.max_message_bytes, "gRPC listening");
    let service = service::Service::new(scheduler.clone());
    let tokens = auth::Tokens::from_config(&daemon);
    if let Some(warning) = auth::tokenless_warning(&daemon) {
        tracing::warn!("{warning}");
    }
    if !tokens.is_empty() {
        tracing::info!("gRPC calls need a bearer token (daemon.auth_token / daemon.admin_token)");
    }
    let mut grpc_task =
        tokio::spawn(grpc.serve(service, daemon.max_message_bytes, daemon.max_concurrent_decodes, tokens, stopped()));

    let mut http_task = None;
    if !daemon.http_listen.is_empty() {
        let (listener, address) = http::bind(&daemon.http_listen).await?;
        tracing::info!(%address, "HTTP /metrics and /status listening");
        if !auth::is_loopback(&address) {
            // Read-only, but it tells anyone who can reach it what this host proves and holds.
            tracing::warn!(%address, "the HTTP endpoint has no authentication and is reachable from other hosts");
        }
        http_task = Some(tokio::spawn(http::serve(listener, scheduler.clone(), stopped())));
    }
    // Ready for systemd once both listeners are bound and the preloads have been tried.
    tokio::spawn(async move {
        let (total, failed) = match preloads {
            Some(task) => task.await.unwrap_or((0, 0)),
            None => (0, 0),
        };
        systemd::ready(total, failed);
    });

    // Run until a signal, until the gRPC server fails on its own, or until no device is left.
    let mut failure = None;
    let backend_lost = {
        let s = scheduler.clone();
        until_false(move || s.backend_usable(), BACKEND_CHECK)
    };
    tokio::select! {
        _ = sigterm.recv() => tracing::info!("SIGTERM received: shutting down"),
        _ = sigint.recv() => tracing::info!("SIGINT received: shutting down"),
        _ = backend_lost => {
            let e = anyhow::anyhow!("every GPU is out of service after a sticky CUDA error; exiting non-zero so that systemd restarts the daemon");
            tracing::error!("{e:#}");
            failure = Some(e);
        }
        r = &mut grpc_task => {
            let e = match r {
                Ok(Ok(())) => anyhow::anyhow!("gRPC server stopped unexpectedly"),
                Ok(Err(e)) => e,
                Err(e) => anyhow::anyhow!("gRPC server task: {e}"),
            };
            tracing::error!("{e:#}; shutting down");
            failure = Some(e);
        }
    }

    tracing::info!("no longer accepting new connections");
    systemd::stopping(daemon.shutdown_grace_secs);
    let _ = stop_tx.send(true);
    pruner.abort();

    let grace = Duration::from_secs(daemon.shutdown_grace_secs);
    tracing::info!(
        grace_secs = grace.as_secs(),
        "stopping scheduler: running jobs get the grace period, queued jobs are cancelled"
    );
    let s = scheduler.clone();
    tokio::task::spawn_blocking(move || s.shutdown(grace)).await.context("scheduler shutdown task")?;
    tracing::info!("scheduler stopped");

    if failure.is_none() {
        match tokio::time::timeout(SERVER_DRAIN, &mut grpc_task).await {
            Ok(Ok(Ok(()))) => tracing::info!("gRPC server stopped"),
            Ok(Ok(Err(e))) => tracing::warn!("{e:#}"),
            Ok(Err(e)) => tracing::warn!(error = %e, "gRPC server task"),
            Err(_) => {
                tracing::warn!(secs = SERVER_DRAIN.as_secs(), "gRPC connections still open; closing them");
                grpc_task.abort();
            }
        }
    }
    if let Some(mut task) = http_task {
        match tokio::time::timeout(SERVER_DRAIN, &mut task).await {
            Ok(Ok(Ok(()))) => tracing::info!("HTTP server stopped"),
            Ok(Ok(Err(e))) => tracing::warn!("{e:#}"),
            Ok(Err(e)) => tracing::warn!(error = %e, "HTTP server task"),
            Err(_) => task.abort(),
        }
    }
    // Dropping the guard removes the socket file (and logs it).
    drop(socket);
    failure.map_or(Ok(()), Err)
}

/// How often the daemon checks that its backend can still prove.
const BACKEND_CHECK: Duration = Duration::from_secs(2);

/// Resolves once `check` returns false, asking every `every`.
async fn until_false(check: impl Fn() -> bool, every: Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        if !check() {
            return;
        }
    }
}

/// Load `srs.preload` circuits one after another on a blocking thread; failures are logged
/// and the daemon keeps serving (the parameters are loaded on first use instead). The task
/// yields (preloads, failures) for the readiness notification.
fn spawn_preload(scheduler: &Arc<Scheduler>, circuits: Vec<String>) -> Option<tokio::task::JoinHandle<(usize, usize)>> {
    if circuits.is_empty() {
        return None;
    }
    let scheduler = scheduler.clone();
    Some(tokio::task::spawn_blocking(move || {
        let total = circuits.len();
        let mut failed = 0;
        for (i, circuit) in circuits.into_iter().enumerate() {
            tracing::info!(%circuit, "preloading parameters");
            systemd::status(&format!("preloading {circuit} ({} of {total})", i + 1));
            match scheduler.preload(&circuit) {
                Ok((true, _)) => tracing::info!(%circuit, "parameters already resident"),
                Ok((false, took)) => tracing::info!(%circuit, ms = took.as_millis() as u64, "parameters preloaded"),
                Err(e) => {
                    failed += 1;
                    tracing::error!(%circuit, error = %e, "preloading parameters failed");
                }
            }
        }
        (total, failed)
    }))
}

/// Create the state directory and say where state goes; warn when nothing can be
/// remembered between starts (no state directory and a parameter directory we cannot
/// write), because every start then repeats the subgroup checks and the PCE extraction.
fn prepare_state_dir(config: &Config) {
    let pce = config.pce_cache_dir();
    match config.state_dir() {
        Some(dir) => {
            use std::os::unix::fs::DirBuilderExt;
            if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o750).create(&dir) {
                tracing::warn!(state_dir = %dir.display(), error = %e, "cannot create the state directory");
            } else if !cuzk_core::config::dir_writable(&dir) {
                tracing::warn!(state_dir = %dir.display(), "the state directory is not writable: subgroup checks and PCE extraction will repeat at every start");
            }
            tracing::info!(state_dir = %dir.display(), pce_cache = %pce.display(), "state directory");
        }
        None => {
            tracing::info!(
                pce_cache = %pce.display(),
                "no state directory (daemon.state_dir empty, {} absent or not writable): records and the PCE cache go beside the parameters",
                cuzk_core::config::DEFAULT_STATE_DIR
            );
            if !cuzk_core::config::dir_writable(&config.srs.param_dir) {
                tracing::warn!(
                    param_dir = %config.srs.param_dir.display(),
                    "the parameter directory is not writable and there is no state directory: subgroup checks and \
                     PCE extraction will repeat at every start; set daemon.state_dir"
                );
            }
        }
    }
}

/// Every [`PRUNE_INTERVAL`], forget jobs that finished longer ago than the retention window.
fn spawn_pruner(scheduler: Arc<Scheduler>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PRUNE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let pruned = scheduler.prune();
            if pruned > 0 {
                tracing::debug!(pruned, "forgot finished jobs past the retention window");
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The example file documents every key with its default value: it must parse (unknown
    /// keys are errors) and equal the defaults exactly.
    #[test]
    fn example_config_lists_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cuzk.example.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let config = Config::from_toml(&text, &path).unwrap();
        assert_eq!(config, Config::default());
    }

    #[tokio::test]
    async fn the_backend_check_resolves_once_the_backend_is_unusable() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let calls = std::sync::Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        // Usable for three checks, then lost.
        let check = move || c.fetch_add(1, Ordering::SeqCst) < 3;
        tokio::time::timeout(Duration::from_secs(10), until_false(check, Duration::from_millis(5)))
            .await
            .expect("resolved");
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn the_config_path_prefers_the_flag_then_the_package_path() {
        let none = |_: &Path| false;
        assert_eq!(config_path(Some(Path::new("/x.toml")), none), (PathBuf::from("/x.toml"), false));
        assert_eq!(config_path(None, none), (PathBuf::from(DEFAULT_CONFIG), false));
        let only_old = |p: &Path| p == Path::new(OLD_DEFAULT_CONFIG);
        assert_eq!(config_path(None, only_old), (PathBuf::from(OLD_DEFAULT_CONFIG), true));
        let both = |_: &Path| true;
        assert_eq!(config_path(None, both), (PathBuf::from(DEFAULT_CONFIG), false));
    }

    #[test]
    fn command_line_overrides_the_file() {
        let args = Args::parse_from([
            "cuzk-daemon",
            "--config",
            "/nonexistent/cuzk.toml",
            "--listen",
            "unix:///run/other.sock",
            "--log-level",
            "debug",
        ]);
        let (path, _) = config_path(args.config.as_deref(), |_| false);
        let (config, found) = load_config(&args, &path).unwrap();
        assert!(!found);
        assert_eq!(config.daemon.listen, "unix:///run/other.sock");
        assert_eq!(config.daemon.log_level, "debug");
        assert_eq!(config.daemon.http_listen, "");
    }
}
