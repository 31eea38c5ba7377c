//! `cuzk-bench gen-consistent`: write self-consistent inputs of the real shape for a circuit of
//! any size and proof type (sparse sectors, or periodic ones for SnapDeals, whose vanilla
//! proofs storage-proofs accepts; see
//! `cuzk_filecoin::fixtures::consistent`) into a directory with an `input-set.json` manifest.
//! `cuzk-bench single --consistent DIR` proves them through a daemon, and with
//! `--verify-dir` checks the proof with filecoin-proofs against the generated key.

use std::path::PathBuf;

use anyhow::Result;
use cuzk_filecoin::fixtures::consistent::inputs::InputSet;
use cuzk_filecoin::CircuitId;

use crate::report::secs;

#[derive(clap::Args)]
pub struct Args {
    /// Circuit id: porep-…, winning-…, wpost-… or snap-… (e.g. porep-32g, wpost-32g, snap-32g).
    #[arg(long)]
    circuit: String,
    /// PoSt: sectors in the partition (WindowPoSt 32 GiB holds up to 2349; WinningPoSt 1).
    #[arg(long, default_value_t = 1)]
    sectors: usize,
    /// Seed of every value: the same seed writes the same bytes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Directory to write the inputs and input-set.json into.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: &Args) -> Result<()> {
    let circuit = CircuitId::parse(&args.circuit)?;
    let (set, took) = InputSet::generate(circuit, args.sectors, args.seed, &args.out)?;
    println!(
        "consistent {} inputs (seed {}, {} sector{}) written to {} in {}",
        set.circuit,
        args.seed,
        set.sectors.len().max(1),
        if set.sectors.len() > 1 { "s" } else { "" },
        args.out.display(),
        secs(took)
    );
    Ok(())
}
