//! `cuzk-bench synthetic-params`: write a circuit's synthetic parameters to disk as a
//! bellperson `.params` / `.vk` pair under filecoin-proofs' own file names, so that other
//! provers (filecoin-proofs' C2, with or without SupraSeal: `cuzk-peer-c2`) can be measured on
//! exactly the input cuzk's `srs.synthetic` builds in memory — same sizes, same points.
//!
//! The sizes come from the circuit's PCE matrices (loaded from `--pce-dir`, or extracted and
//! saved there). A `<file>.params.SYNTHETIC` marker is written next to the file; cuzk loads
//! marked files as synthetic, so their proofs are never reported as verified. Other provers
//! cannot know: their own self-check fails instead.
//!
//! Refuses to overwrite a `.params` / `.vk` that carries no marker of cuzk's own (it may be the
//! real parameters: `--out` can be any directory, the real parameter directory included).

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use cuzk_core::pce_cache::PceCache;
use cuzk_core::synthetic::SYNTHETIC_SEED;
use cuzk_filecoin::params::{param_files, refuse_unmarked};
use cuzk_filecoin::CircuitId;
use cuzk_groth16::srs::insecure_marker;
use cuzk_groth16::srs_synthetic::{synthetic_marker, write_synthetic};

use crate::report::{bytes, secs};

#[derive(clap::Args)]
pub struct Args {
    /// Circuit id, e.g. porep-32g.
    #[arg(long)]
    circuit: String,
    /// Parameter directory to write into (the file names are filecoin-proofs').
    #[arg(long)]
    out: PathBuf,
    /// PCE cache directory the sizes come from (default: <out>/pce).
    #[arg(long)]
    pce_dir: Option<PathBuf>,
}

pub fn run(args: &Args) -> Result<()> {
    let circuit = CircuitId::parse(&args.circuit)?;
    // Before the sizes, which can take minutes to extract: a refusal should come at once.
    let files = param_files(&args.out, circuit)?;
    refuse_unmarked(&files)?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let start = Instant::now();
    let pce_dir = args.pce_dir.clone().unwrap_or_else(|| args.out.join("pce"));
    let shape = PceCache::new(pce_dir, args.out.clone()).srs_shape(circuit)?;
    let shape_time = start.elapsed();
    eprintln!("{circuit}: {shape} (from its PCE matrices, {})", secs(shape_time));

    let marker = synthetic_marker(&files.params);
    std::fs::write(
        &marker,
        format!(
            "SYNTHETIC parameters for {circuit}: random points (seed {SYNTHETIC_SEED:#x}), written by cuzk-bench \
             synthetic-params for benchmarks. Not a trusted setup; no proof made with them verifies.\n"
        ),
    )
    .with_context(|| format!("writing {}", marker.display()))?;
    let create = |p: &PathBuf| {
        std::fs::File::create(p)
            .map(|f| BufWriter::with_capacity(8 << 20, f))
            .with_context(|| format!("creating {}", p.display()))
    };
    let (mut params, mut vk) = (create(&files.params)?, create(&files.vk)?);
    let write_start = Instant::now();
    let written = write_synthetic(&shape, SYNTHETIC_SEED, &mut params, &mut vk)
        .and_then(|n| params.flush().and(vk.flush()).map(|_| n))
        .with_context(|| format!("writing {}", files.params.display()))?;
    let write_time = write_start.elapsed();
    // Both files were replaced: a generated setup's INSECURE marker left behind would describe
    // random points as a working (if insecure) setup.
    for stale in [insecure_marker(&files.params), insecure_marker(&files.vk)] {
        if stale.exists() {
            std::fs::remove_file(&stale).with_context(|| format!("removing the stale marker {}", stale.display()))?;
        }
    }
    println!(
        "wrote {} ({}) in {} ({}/s), {} and {}",
        files.params.display(),
        bytes(written),
        secs(write_time),
        bytes((written as f64 / write_time.as_secs_f64().max(1e-9)) as u64),
        files.vk.display(),
        marker.display()
    );
    Ok(())
}
