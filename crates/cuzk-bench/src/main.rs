//! cuzk-bench: make test fixtures, run the demo, benchmark against filecoin-proofs, and (with
//! a daemon) act as its client. One module per subcommand.

mod compare;
mod demo;
mod fixtures;
mod report;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cuzk-bench", version, about = "cuzk client, fixtures and benchmarks")]
struct Cli {
    /// Log filter (tracing's env-filter syntax), e.g. "info" or "cuzk_core=debug".
    #[arg(long, global = true, default_value = "warn")]
    log: String,
    #[command(subcommand)]
    command: Command,
}

/// Where the 2 KiB fixture set lives (shared by the demo, benchmarks and tests).
#[derive(clap::Args, Clone)]
pub struct FixtureDir {
    #[arg(long = "fixtures", env = "CUZK_FIXTURES", default_value = cuzk_filecoin::fixtures::DEFAULT_FIXTURE_DIR)]
    pub dir: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Make the 2 KiB fixture set (insecure test parameters, a sealed sector, C1 output,
    /// PoSt and SnapDeals vanilla proofs) if it is not there yet.
    Fixtures(FixtureDir),
    /// Prove all four proof types in-process on the CPU from the fixture set, verify each with
    /// filecoin-proofs, and print timings. Makes the fixtures first if needed.
    Demo(FixtureDir),
    /// Time cuzk's CPU prover against filecoin-proofs' own prover on the same 2 KiB inputs.
    Compare(compare::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&cli.log))
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Fixtures(f) => fixtures::run(&f.dir).map(|_| ()),
        Command::Demo(f) => demo::run(&f.dir),
        Command::Compare(args) => compare::run(&args),
    }
}
