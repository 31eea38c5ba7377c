//! Parameters made by bellperson's own generator (`groth16::generate_random_parameters` over
//! storage-proofs' blank circuit) and written by bellperson's own writers: the layout the
//! ceremony's files have, from code that is not cuzk's. Two uses:
//!
//! - tests compare cuzk's generated setup and its loaders against these;
//! - `cuzk-bench gen-setup --generator bellperson` writes them for a peer run, to tell whether
//!   a peer that fails on cuzk's generated file fails on any file.
//!
//! bellperson's generator runs on the CPU and takes seconds for the 2 KiB circuits, minutes for
//! 8 MiB ones and is out of reach at 32 GiB: use it for small circuits. The files are
//! **INSECURE** (the trapdoor comes from a seed anyone can reproduce) and carry the same
//! `.INSECURE` marker as cuzk's generated ones; no subgroup-check record is written (a record
//! names a file's size and mtime, so an older one does not vouch for these).

use anyhow::{Context, Result};
use bellperson::groth16;
use blstrs::Bls12;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, window_post_public_params, winning_post_public_params};
use filecoin_proofs::with_shape;
use rand::{RngCore, SeedableRng};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::StackedCompound;
use storage_proofs_post::fallback::{self, FallbackPoStCompound};
use storage_proofs_update::EmptySectorUpdateCompound;

use crate::params::{mark_insecure, write_atomically, ParamFiles, SnapTree};
use crate::registry::{CircuitId, Registered};

pub type Params = groth16::Parameters<Bls12>;

/// bellperson's parameters for `circuit`, the trapdoor drawn from `rng`.
pub fn generate(circuit: CircuitId, rng: &mut (impl RngCore + Send)) -> Result<Params> {
    let reg = circuit.representative();
    let size = reg.sector_size().bytes();
    match reg {
        Registered::Seal(p) => with_shape!(size, porep_generate, &p.as_v1_config(), &mut *rng),
        Registered::Winning(p) => with_shape!(size, winning_generate, &p.as_v1_config(), &mut *rng),
        Registered::Window(p) => with_shape!(size, window_generate, &p.as_v1_config(), &mut *rng),
        Registered::Update(_) => with_shape!(size, snap_generate, size, &mut *rng),
    }
}

/// Generate `circuit`'s parameters with a ChaCha20 stream of `seed` and write them as `files`
/// (`param_files` of the directory: `.vk`, then `.params`, each after its `.INSECURE` marker).
/// Returns the parameters written.
pub fn write(files: &ParamFiles, circuit: CircuitId, seed: u64) -> Result<Params> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let params = generate(circuit, &mut rng).with_context(|| format!("bellperson's setup of {circuit}"))?;
    let what = format!("{circuit}, seed {seed} (bellperson's generate_random_parameters, ChaCha20)");
    mark_insecure(&files.vk, &what)?;
    mark_insecure(&files.params, &what)?;
    write_atomically(&files.vk, |w| params.vk.write(w))?;
    write_atomically(&files.params, |w| params.write(w))?;
    Ok(params)
}

fn porep_generate<Tree: 'static + MerkleTreeTrait>(
    cfg: &filecoin_proofs::PoRepConfig,
    rng: &mut (impl RngCore + Send),
) -> Result<Params> {
    let pp = public_params::<Tree>(cfg)?;
    let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&pp);
    Ok(groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)?)
}

fn winning_generate<Tree: 'static + MerkleTreeTrait>(
    cfg: &filecoin_proofs::PoStConfig,
    rng: &mut (impl RngCore + Send),
) -> Result<Params> {
    post_generate::<Tree>(&winning_post_public_params::<Tree>(cfg)?, rng)
}

fn window_generate<Tree: 'static + MerkleTreeTrait>(
    cfg: &filecoin_proofs::PoStConfig,
    rng: &mut (impl RngCore + Send),
) -> Result<Params> {
    post_generate::<Tree>(&window_post_public_params::<Tree>(cfg)?, rng)
}

/// WinningPoSt and WindowPoSt are one circuit (FallbackPoSt) with different public parameters.
fn post_generate<Tree: 'static + MerkleTreeTrait>(
    pp: &fallback::PublicParams,
    rng: &mut (impl RngCore + Send),
) -> Result<Params> {
    let circuit = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(pp);
    Ok(groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)?)
}

fn snap_generate<Tree: 'static + MerkleTreeTrait>(
    sector_bytes: u64,
    rng: &mut (impl RngCore + Send),
) -> Result<Params> {
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_bytes);
    let circuit = <EmptySectorUpdateCompound<SnapTree<Tree>> as CompoundProof<_, _>>::blank_circuit(&pp);
    Ok(groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)?)
}
