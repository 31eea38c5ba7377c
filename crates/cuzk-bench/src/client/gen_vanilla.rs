//! `cuzk-bench gen-vanilla`: vanilla proofs from a real sealed sector's files, in the encodings
//! Curio sends (the raw bincode bytes filecoin-proofs-api returns, one file per sector or
//! partition), for feeding `single --vanilla`:
//!
//! - `winning` / `window`: `generate_fallback_sector_challenges` then
//!   `generate_single_vanilla_proof` per sector (a bincode `FallbackPoStSectorProof` each),
//!   written as `<kind>-vanilla-<i>.bin`. Randomness is masked as filecoin-ffi does
//!   (`[31] &= 0x3f`); the prover id is derived from the miner id as filecoin-ffi does.
//! - `snap`: `update::generate_partition_proofs` over the sector key and the updated replica
//!   (a bincode `PartitionProof` each), written as `snap-vanilla-<i>.bin`.
//!
//! No Groth16 parameters are needed. `--registered-proof` takes Filecoin's Go abi numbers.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use cuzk_filecoin::request::prover_id_from_miner;
use cuzk_filecoin::{ProofKind, Registered};
use filecoin_proofs_api::post::{generate_fallback_sector_challenges, generate_single_vanilla_proof};
use filecoin_proofs_api::update::generate_partition_proofs;
use filecoin_proofs_api::{PrivateReplicaInfo, RegisteredPoStProof, SectorId};

use super::parse_hex32;
use crate::report::{bytes, secs, table};

#[derive(clap::Subcommand)]
pub enum Command {
    /// WinningPoSt vanilla proofs (one file per sector).
    Winning(PostArgs),
    /// WindowPoSt vanilla proofs (one file per sector of the partition).
    Window(PostArgs),
    /// SnapDeals vanilla partition proofs (one file per partition).
    Snap(SnapArgs),
}

/// Sectors are given by repeating --sector-number, --sealed, --cache and --comm-r in the same
/// order (once for a single sector).
#[derive(clap::Args)]
pub struct PostArgs {
    /// Go abi RegisteredPoStProof number (Winning 0–4, Window 5–9 / 10–14).
    #[arg(long)]
    registered_proof: u64,
    /// The miner's actor id (the prover id is derived from it).
    #[arg(long)]
    miner_id: u64,
    /// PoSt challenge randomness, 32 bytes in hex.
    #[arg(long, value_name = "HEX")]
    randomness: String,
    #[arg(long, required = true)]
    sector_number: Vec<u64>,
    /// The sealed replica file.
    #[arg(long, value_name = "PATH", required = true)]
    sealed: Vec<PathBuf>,
    /// The sector's cache directory (p_aux, t_aux, tree-r-last files).
    #[arg(long, value_name = "DIR", required = true)]
    cache: Vec<PathBuf>,
    /// The sector's CommR (hex).
    #[arg(long, value_name = "HEX", required = true)]
    comm_r: Vec<String>,
    /// Directory the files are written to (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

#[derive(clap::Args)]
pub struct SnapArgs {
    /// Go abi RegisteredUpdateProof number (0–4).
    #[arg(long)]
    registered_proof: u64,
    /// The original sealed replica (the sector key).
    #[arg(long, value_name = "PATH")]
    sector_key: PathBuf,
    /// The sector key's cache directory.
    #[arg(long, value_name = "DIR")]
    sector_key_cache: PathBuf,
    /// The updated replica.
    #[arg(long, value_name = "PATH")]
    replica: PathBuf,
    /// The updated replica's cache directory.
    #[arg(long, value_name = "DIR")]
    replica_cache: PathBuf,
    #[arg(long, value_name = "HEX")]
    comm_r_old: String,
    #[arg(long, value_name = "HEX")]
    comm_r_new: String,
    #[arg(long, value_name = "HEX")]
    comm_d_new: String,
    /// Directory the files are written to (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

pub fn run(cmd: Command) -> Result<()> {
    match cmd {
        Command::Winning(a) => post(ProofKind::WinningPost, "winning", a),
        Command::Window(a) => post(ProofKind::WindowPostPartition, "window", a),
        Command::Snap(a) => snap(a),
    }
}

/// filecoin-ffi's PoSt randomness: 32 bytes, top two bits of the last byte cleared.
fn masked_randomness(hex: &str) -> Result<[u8; 32]> {
    let mut r = parse_hex32("--randomness", hex)?;
    r[31] &= 0x3f;
    Ok(r)
}

fn post_proof(kind: ProofKind, number: u64) -> Result<RegisteredPoStProof> {
    match Registered::resolve(kind, number, 0).with_context(|| format!("--registered-proof {number}"))? {
        Registered::Winning(p) | Registered::Window(p) => Ok(p),
        other => bail!("--registered-proof {number} is {other:?}, not a {kind} proof"),
    }
}

fn write(out: &Path, name: &str, data: &[u8]) -> Result<PathBuf> {
    let path = out.join(name);
    std::fs::write(&path, data).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

fn post(kind: ProofKind, name: &str, a: PostArgs) -> Result<()> {
    let n = a.sector_number.len();
    ensure!(
        a.sealed.len() == n && a.cache.len() == n && a.comm_r.len() == n,
        "give --sector-number, --sealed, --cache and --comm-r once per sector, in the same order \
         (got {n}, {}, {} and {})",
        a.sealed.len(),
        a.cache.len(),
        a.comm_r.len()
    );
    let proof = post_proof(kind, a.registered_proof)?;
    let randomness = masked_randomness(&a.randomness)?;
    let prover_id = prover_id_from_miner(a.miner_id);
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;

    let start = Instant::now();
    let sectors: Vec<SectorId> = a.sector_number.iter().map(|&s| SectorId::from(s)).collect();
    let challenges = generate_fallback_sector_challenges(proof, &randomness, &sectors, prover_id)
        .context("generate_fallback_sector_challenges")?;
    let mut t = table(&["file", "sector", "challenges", "size"]);
    for (i, &sector) in a.sector_number.iter().enumerate() {
        let comm_r = parse_hex32("--comm-r", &a.comm_r[i])?;
        for p in [&a.sealed[i], &a.cache[i]] {
            ensure!(p.exists(), "{} does not exist", p.display());
        }
        let replica = PrivateReplicaInfo::new(proof, comm_r, a.cache[i].clone(), a.sealed[i].clone());
        let id = SectorId::from(sector);
        let challenged = challenges.get(&id).with_context(|| format!("no challenges for sector {sector}"))?;
        let vanilla = generate_single_vanilla_proof(proof, id, &replica, challenged)
            .with_context(|| format!("generate_single_vanilla_proof for sector {sector}"))?;
        let path = write(&a.out, &format!("{name}-vanilla-{i}.bin"), &vanilla)?;
        t.add_row(vec![
            path.display().to_string(),
            sector.to_string(),
            challenged.len().to_string(),
            bytes(vanilla.len() as u64),
        ]);
    }
    println!("{t}");
    println!(
        "{proof:?}, miner {} (prover id {}), randomness {} (masked); took {}",
        a.miner_id,
        hex::encode(prover_id),
        hex::encode(randomness),
        secs(start.elapsed())
    );
    Ok(())
}

fn snap(a: SnapArgs) -> Result<()> {
    let proof = match Registered::resolve(ProofKind::SnapDealsUpdate, a.registered_proof, 0)
        .with_context(|| format!("--registered-proof {}", a.registered_proof))?
    {
        Registered::Update(p) => p,
        other => bail!("--registered-proof {} is {other:?}, not an update proof", a.registered_proof),
    };
    let comm_r_old = parse_hex32("--comm-r-old", &a.comm_r_old)?;
    let comm_r_new = parse_hex32("--comm-r-new", &a.comm_r_new)?;
    let comm_d_new = parse_hex32("--comm-d-new", &a.comm_d_new)?;
    for p in [&a.sector_key, &a.sector_key_cache, &a.replica, &a.replica_cache] {
        ensure!(p.exists(), "{} does not exist", p.display());
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;

    let start = Instant::now();
    let proofs = generate_partition_proofs(
        proof,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        &a.sector_key,
        &a.sector_key_cache,
        &a.replica,
        &a.replica_cache,
    )
    .context("generate_partition_proofs")?;
    ensure!(!proofs.is_empty(), "generate_partition_proofs returned no proofs");
    let mut t = table(&["file", "partition", "size"]);
    for (i, p) in proofs.iter().enumerate() {
        let path = write(&a.out, &format!("snap-vanilla-{i}.bin"), &p.0)?;
        t.add_row(vec![path.display().to_string(), i.to_string(), bytes(p.0.len() as u64)]);
    }
    println!("{t}");
    println!("{proof:?}: {} partition proof(s); took {}", proofs.len(), secs(start.elapsed()));
    Ok(())
}
