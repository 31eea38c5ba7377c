//! cuzk-bench: make test fixtures, run the demo, benchmark against filecoin-proofs, and (with
//! a daemon) act as its client. One module per subcommand.

mod client;
mod compare;
mod demo;
mod fixtures;
mod gen_consistent;
mod gen_setup;
mod gen_synthetic;
#[cfg(feature = "cuda")]
mod gpu_bench;
#[cfg(feature = "cuda")]
mod gpu_msm;
mod load_params;
mod pce_bench;
mod report;
mod synthetic_params;

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cuzk-bench", version = version(), about = "cuzk client, fixtures and benchmarks")]
struct Cli {
    /// Log filter (tracing's env-filter syntax), e.g. "info" or "cuzk_core=debug".
    #[arg(long, global = true, default_value = "warn")]
    log: String,
    #[command(flatten)]
    daemon: client::connect::AddrArg,
    #[command(subcommand)]
    command: Command,
}

/// `--version`'s text: the crate version, the git commit it was built from (build.rs; "unknown"
/// outside git) and whether the CUDA backend is built in, with the GPU targets it was compiled
/// for — benchmark results are only comparable when these are known.
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

/// Where the 2 KiB fixture set lives (shared by the demo, benchmarks and tests).
#[derive(clap::Args, Clone)]
pub struct FixtureDir {
    /// The 2 KiB fixture set's directory.
    #[arg(long = "fixtures", env = "CUZK_FIXTURES", default_value = cuzk_filecoin::fixtures::DEFAULT_FIXTURE_DIR)]
    pub dir: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Pre-compiled constraint evaluation: extraction cost, matrix sizes, and per-partition
    /// synthesis time plain vs PCE on the 2 KiB fixture circuits.
    PceBench(pce_bench::Args),
    /// Make the 2 KiB fixture set (insecure test parameters, a sealed sector, C1 output,
    /// PoSt and SnapDeals vanilla proofs) if it is not there yet.
    Fixtures(FixtureDir),
    /// Prove all four proof types in-process on the CPU from the fixture set, verify each with
    /// filecoin-proofs, and print timings. Makes the fixtures first if needed.
    Demo(FixtureDir),
    /// GPU end-to-end check and per-partition GPU timings on the 2 KiB fixtures: device
    /// mat-vec vs plain synthesis, then every proof type on the CUDA backend, each verified
    /// with filecoin-proofs (built with `--features cuda`).
    #[cfg(feature = "cuda")]
    Gpu(gpu_bench::Args),
    /// Device MSM (G1 or G2) and quotient timings at chosen sizes, checked against the CPU
    /// (built with `--features cuda`).
    #[cfg(feature = "cuda")]
    GpuMsm(gpu_msm::Args),
    /// Time cuzk's CPU prover against filecoin-proofs' own prover on the same 2 KiB inputs.
    Compare(compare::Args),
    /// Read and validate one .params file as the daemon does; print the load time and the
    /// host memory it took (peak RSS).
    LoadParams(load_params::Args),
    /// Prove one proof through cuzk-daemon (fixture inputs, or --c1/--vanilla files).
    Single(client::single::Args),
    /// Prove many fixture proofs through cuzk-daemon, several at once; latency and throughput.
    Batch(client::batch::Args),
    /// Many clients (default 200) for a fixed time against cuzk-daemon, each mixing good
    /// fixture proofs (verified), bad requests and oversized messages; counts every answer.
    Load(client::load::Args),
    /// Show cuzk-daemon's queues, resident parameters, totals and memory use.
    Status(client::status::Args),
    /// Print cuzk-daemon's Prometheus metrics.
    Metrics,
    /// Load a circuit's parameters in cuzk-daemon now (e.g. porep-32g, wpost-2k).
    Preload { circuit_id: String },
    /// Drop a circuit's resident parameters from cuzk-daemon.
    Evict { circuit_id: String },
    /// Cancel a queued or running job.
    Cancel { job_id: String },
    /// Make vanilla proofs from a real sealed sector, in the encodings Curio sends.
    #[command(subcommand)]
    GenVanilla(client::gen_vanilla::Command),
    /// Write a synthetic PoRep C1 output of the real shape for any sector size (random values
    /// from --seed; its proofs cannot verify) and print its shape.
    GenSynthetic(gen_synthetic::Args),
    /// Write a circuit's synthetic parameters (random points, sized from its PCE matrices) as
    /// a bellperson .params/.vk pair under filecoin-proofs' file names, marked SYNTHETIC — the
    /// input for benchmarking other provers (cuzk-peer-c2) against cuzk's srs.synthetic.
    SyntheticParams(synthetic_params::Args),
    /// Write a circuit's INSECURE generated setup (cuzk's own, from a seed; proofs made with it
    /// verify against its key and can be forged by anyone with the seed) as a .params/.vk pair
    /// under filecoin-proofs' file names, or with --vk-only just the verifying key.
    GenSetup(gen_setup::Args),
    /// Write self-consistent inputs of the real shape (sparse sectors) for a PoRep, WinningPoSt
    /// or WindowPoSt circuit of any size; their proofs verify against a generated setup.
    GenConsistent(gen_consistent::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Colours only on a terminal, as the daemon: tracing-subscriber would otherwise write
    // ANSI escapes into log files and CI logs. (batch's indicatif bar draws nothing off one.)
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&cli.log))
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
    let addr = cli.daemon.addr;
    match cli.command {
        Command::Fixtures(f) => fixtures::run(&f.dir).map(|_| ()),
        Command::Demo(f) => demo::run(&f.dir),
        #[cfg(feature = "cuda")]
        Command::Gpu(a) => gpu_bench::run(&a),
        #[cfg(feature = "cuda")]
        Command::GpuMsm(a) => gpu_msm::run(&a),
        Command::Compare(args) => compare::run(&args),
        Command::LoadParams(args) => load_params::run(&args),
        Command::PceBench(args) => pce_bench::run(&args),
        Command::Single(args) => client::block_on(client::single::run(&addr, args)),
        Command::Batch(args) => client::block_on(client::batch::run(&addr, args)),
        Command::Load(args) => client::block_on(client::load::run(&addr, args)),
        Command::Status(args) => client::block_on(client::status::run(&addr, args)),
        Command::Metrics => client::block_on(client::status::metrics(&addr)),
        Command::Preload { circuit_id } => client::block_on(client::admin::preload(&addr, circuit_id)),
        Command::Evict { circuit_id } => client::block_on(client::admin::evict(&addr, circuit_id)),
        Command::Cancel { job_id } => client::block_on(client::admin::cancel(&addr, job_id)),
        Command::GenVanilla(cmd) => client::gen_vanilla::run(cmd),
        Command::GenSynthetic(args) => gen_synthetic::run(&args),
        Command::SyntheticParams(args) => synthetic_params::run(&args),
        Command::GenSetup(args) => gen_setup::run(&args),
        Command::GenConsistent(args) => gen_consistent::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// `--version` says which build produced a benchmark's numbers: version, commit, CUDA.
    #[test]
    fn version_names_the_crate_version_the_commit_and_cuda() {
        let text = Cli::command().render_version();
        assert!(text.starts_with(&format!("cuzk-bench {} (commit ", env!("CARGO_PKG_VERSION"))), "{text}");
        assert!(text.contains(if cfg!(feature = "cuda") { "cuda on (CUDA " } else { "cuda off" }), "{text}");
    }
}
