//! `cuzk-bench gen-setup`: cuzk's INSECURE generated Groth16 setup of one circuit, written as
//! a bellperson `.params` / `.vk` pair under filecoin-proofs' file names (or only the `.vk`,
//! which is what filecoin-proofs' verifiers read and takes seconds even for porep-32g), each
//! with a `.INSECURE` marker beside it. The same circuit and `--seed` give the same files, and
//! the same key a daemon builds in memory with `srs.generated` and `srs.generated_seed`.
//!
//! `--generator bellperson` writes bellperson's own generator's parameters instead (small
//! circuits only: CPU, minutes at 8 MiB), to tell a peer's failure on cuzk's file from one on
//! any file; they are INSECURE too, and marked so.
//!
//! The matrices come from the circuit's PCE cache file (`--pce-dir`), extracted and saved there
//! if missing. Refuses to overwrite a parameter file that carries no marker of cuzk's own
//! (INSECURE or SYNTHETIC): real parameters are never overwritten.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_core::pce_cache::PceCache;
use cuzk_filecoin::params::{param_files, refuse_unmarked, write_generated, write_generated_vk};
use cuzk_filecoin::CircuitId;
use cuzk_groth16::srs_synthetic::synthetic_marker;

use crate::report::{bytes, secs};

#[derive(clap::Args)]
pub struct Args {
    /// Circuit id, e.g. porep-32g.
    #[arg(long)]
    circuit: String,
    /// Seed of the trapdoor (the daemon's srs.generated_seed).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Parameter directory to write into (file names are filecoin-proofs').
    #[arg(long)]
    out: PathBuf,
    /// Only the verifying key.
    #[arg(long)]
    vk_only: bool,
    /// PCE cache directory (default: <out>/pce).
    #[arg(long)]
    pce_dir: Option<PathBuf>,
    /// Whose setup: cuzk's (the daemon's `srs.generated`), or bellperson's own generator
    /// (`generate_random_parameters`, a ChaCha20 stream of --seed; not the same key as cuzk's).
    #[arg(long, value_enum, default_value_t = Generator::Cuzk, conflicts_with = "vk_only")]
    generator: Generator,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Generator {
    Cuzk,
    Bellperson,
}

pub fn run(args: &Args) -> Result<()> {
    let circuit = CircuitId::parse(&args.circuit)?;
    let files = param_files(&args.out, circuit)?;
    refuse_unmarked(&files)?;
    let start = Instant::now();
    if args.generator == Generator::Bellperson {
        let p = cuzk_filecoin::bellperson_setup::write(&files, circuit, args.seed)?;
        println!(
            "INSECURE parameters of {circuit} by bellperson's generator (seed {}): {} G1 + {} G2 points, written to {} in {}",
            args.seed,
            p.h.len() + p.l.len() + p.a.len() + p.b_g1.len() + p.vk.ic.len(),
            p.b_g2.len(),
            files.params.display(),
            secs(start.elapsed())
        );
        return Ok(());
    }
    let pce_dir = args.pce_dir.clone().unwrap_or_else(|| args.out.join("pce"));
    let (pc, source) = PceCache::new(pce_dir, args.out.clone()).get(circuit)?;
    let matrices = start.elapsed();
    eprintln!("{circuit}: matrices {source:?} in {} ({})", secs(matrices), pc.stats());
    let what = format!("{circuit}, seed {}", args.seed);
    if args.vk_only {
        let vk = cuzk_pce::setup::generate_vk(&pc, args.seed).with_context(|| format!("verifying key of {circuit}"))?;
        write_generated_vk(&files, &vk, &what)?;
        println!(
            "INSECURE verifying key of {circuit} (seed {}) written to {} in {}",
            args.seed,
            files.vk.display(),
            secs(start.elapsed())
        );
        return Ok(());
    }
    let setup_start = Instant::now();
    // On a CUDA device when this build has one (70 s instead of most of an hour at 32 GiB).
    let engine = cuzk_core::backend::fixed_base_engine(&[]);
    let srs = cuzk_pce::setup::generate_srs_with(&pc, args.seed, &circuit.to_string(), &*engine)
        .with_context(|| format!("setup of {circuit}"))?;
    let setup = setup_start.elapsed();
    let write_start = Instant::now();
    write_generated(&files, &srs, &what)?;
    // Both files were replaced: a SYNTHETIC marker left from synthetic parameters would flag the
    // generated setup's proofs, which verify, as unverifiable. Removed only now, so a failed run
    // leaves the old files still marked.
    let stale = synthetic_marker(&files.params);
    if stale.exists() {
        std::fs::remove_file(&stale).with_context(|| format!("removing the stale marker {}", stale.display()))?;
    }
    println!(
        "INSECURE parameters of {circuit} (seed {}): setup {} ({} G1 + {} G2 points), written to {} ({}) in {}",
        args.seed,
        secs(setup),
        srs.h.len() + srs.l.len() + srs.a.len() + srs.b_g1.len() + srs.vk.ic.len(),
        srs.b_g2.len(),
        files.params.display(),
        bytes(srs.resident_bytes()),
        secs(write_start.elapsed()),
    );
    Ok(())
}
