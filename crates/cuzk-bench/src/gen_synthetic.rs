//! `cuzk-bench gen-synthetic`: write a synthetic PoRep C1 output — the real structure of any
//! sector size, random values from `--seed` — for benchmarking C2 at sizes no test machine can
//! seal (see `cuzk_filecoin::fixtures::synthetic`). Prints the shape, and the `single` command
//! that proves it. Its proofs can never verify; a daemon with `srs.synthetic` for the circuit
//! reports them UNVERIFIED.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_filecoin::fixtures::synthetic::{go_abi_number, registered_porep, synthetic_c1};
use cuzk_filecoin::{ProofKind, Registered, SectorSize};

use crate::client::kv_table;
use crate::report::{bytes, secs};

#[derive(clap::Args)]
pub struct Args {
    /// 2KiB, 8MiB, 512MiB, 32GiB or 64GiB (also 2k … 64g, or bytes).
    #[arg(long, value_parser = parse_sector_size)]
    sector_size: SectorSize,
    /// Seed of the random values: the same seed writes the same bytes.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Go abi registered seal proof (default: the newest interactive PoRep of the size).
    #[arg(long)]
    registered_proof: Option<u64>,
    /// Sector number written into the envelope.
    #[arg(long, default_value_t = 1)]
    sector_number: u64,
    /// Write the bare SealCommitPhase1Output JSON instead of Curio's envelope.
    #[arg(long)]
    bare: bool,
    /// Output file (default: synthetic-c1-<size>-seed<N>.json in the current directory).
    #[arg(long, short)]
    out: Option<PathBuf>,
}

pub fn parse_sector_size(s: &str) -> Result<SectorSize> {
    let lower = s.to_ascii_lowercase();
    if let Ok(n) = lower.parse::<u64>() {
        return Ok(SectorSize::from_bytes(n)?);
    }
    SectorSize::ALL
        .into_iter()
        .find(|z| z.to_string().to_ascii_lowercase() == lower || z.short() == lower)
        .with_context(|| format!("unknown sector size {s:?} (expected 2KiB, 8MiB, 512MiB, 32GiB or 64GiB)"))
}

pub fn run(args: &Args) -> Result<()> {
    let registered = match args.registered_proof {
        None => registered_porep(args.sector_size),
        Some(n) => match Registered::resolve(ProofKind::PoRepSealCommit, n, args.sector_size.bytes())? {
            Registered::Seal(p) => p,
            other => bail!("registered proof {n} is {other:?}, not a seal proof"),
        },
    };
    let number = go_abi_number(registered).context("registered proof without a Go abi number")?;
    eprintln!("generating a synthetic {} C1 output ({registered:?}, seed {}) …", args.sector_size, args.seed);
    let c1 = synthetic_c1(registered, args.seed)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("synthetic-c1-{}-seed{}.json", args.sector_size.short(), args.seed)));
    let payload = if args.bare { c1.json.clone() } else { c1.envelope(args.sector_number) };
    let write_start = Instant::now();
    std::fs::write(&out, &payload).with_context(|| format!("writing {}", out.display()))?;
    let write_time = write_start.elapsed();

    let s = &c1.shape;
    let [base, sub, top] = s.tree_arities;
    let mut t = kv_table();
    let mut row = |k: &str, v: String| {
        t.add_row(vec![k.to_string(), v]);
    };
    row("registered proof", format!("{registered:?} (Go abi {number})"));
    row("sector", format!("{} ({} nodes)", args.sector_size, s.nodes));
    row("partitions", s.partitions.to_string());
    row("challenges", format!("{} per partition, {} in all", s.challenges_per_partition, s.total_challenges()));
    row("layers", s.layers.to_string());
    row(
        "parents",
        format!("{} DRG + {} expander ({} hashed per label)", s.drg_parents, s.exp_parents, s.hashed_parents),
    );
    row("tree D", format!("binary, depth {}", s.tree_d_depth));
    row(
        "tree C / R_last",
        format!(
            "arity {base} base{}{}, {} base levels, path {} levels",
            sub_desc("sub", sub),
            sub_desc("top", top),
            s.tree_base_depth,
            s.tree_path_len()
        ),
    );
    row("C1 JSON", bytes(c1.json.len() as u64));
    row(
        "written",
        format!(
            "{} ({}, {})",
            out.display(),
            bytes(payload.len() as u64),
            if args.bare { "bare JSON" } else { "envelope" }
        ),
    );
    row("generation / write", format!("{} / {}", secs(c1.generation_time), secs(write_time)));
    println!("{t}");
    println!(
        "prove it (daemon with srs.synthetic = [\"porep-{}\"]; the proof cannot verify):\n  \
         cuzk-bench single --kind porep --registered-proof {number} --sector-number {} --c1 {}",
        args.sector_size.short(),
        args.sector_number,
        out.display()
    );
    Ok(())
}

fn sub_desc(name: &str, arity: usize) -> String {
    if arity == 0 {
        String::new()
    } else {
        format!(", {name} {arity}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sector_sizes_parse_in_every_spelling() {
        assert_eq!(parse_sector_size("32GiB").unwrap(), SectorSize::S32GiB);
        assert_eq!(parse_sector_size("32g").unwrap(), SectorSize::S32GiB);
        assert_eq!(parse_sector_size("2kib").unwrap(), SectorSize::S2KiB);
        assert_eq!(parse_sector_size("8388608").unwrap(), SectorSize::S8MiB);
        assert!(parse_sector_size("4GiB").is_err());
        assert!(parse_sector_size("4096").is_err());
    }
}
