//! Parameter (SRS) files: which file belongs to which circuit, and generation of **insecure,
//! test-only** parameters for small sectors.
//!
//! File names are filecoin-proofs' own (`v28-<circuit identifier hash>.params` / `.vk`), derived
//! through storage-proofs' `CacheableParameters::cache_identifier`, so a parameter directory laid
//! out for filecoin-proofs works for cuzk unchanged.
//!
//! Generated parameters come from a seeded RNG anyone can reproduce: they prove and verify
//! like real ones but offer no security. They are only ever written by the fixture generator,
//! which marks the directory as test-only.

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use bellperson::groth16;
use blstrs::Bls12;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, window_post_public_params, winning_post_public_params};
use filecoin_proofs::with_shape;
use rand::RngCore;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{CacheableParameters, VERSION};
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound};
use storage_proofs_post::fallback::{FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::EmptySectorUpdateCompound;

use crate::circuits::PartitionCircuit;
use crate::registry::{CircuitId, Registered};

/// Where a circuit's parameter files live inside a parameter directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamFiles {
    /// storage-proofs' identifier of the circuit (the hash part of the file name).
    pub identifier: String,
    pub params: PathBuf,
    pub vk: PathBuf,
}

impl ParamFiles {
    pub fn in_dir(dir: &Path, identifier: String) -> Self {
        let params = dir.join(format!("v{VERSION}-{identifier}.params"));
        let vk = dir.join(format!("v{VERSION}-{identifier}.vk"));
        ParamFiles { identifier, params, vk }
    }
}

/// The parameter files of `circuit` inside `dir`.
pub fn param_files(dir: &Path, circuit: CircuitId) -> Result<ParamFiles> {
    Ok(ParamFiles::in_dir(dir, identifier(circuit.representative())?))
}

fn identifier(reg: Registered) -> Result<String> {
    let size = reg.sector_size().bytes();
    match reg {
        Registered::Seal(p) => {
            let cfg = p.as_v1_config();
            with_shape!(size, porep_identifier, &cfg)
        }
        Registered::Winning(p) => with_shape!(size, winning_identifier, &p.as_v1_config()),
        Registered::Window(p) => with_shape!(size, window_identifier, &p.as_v1_config()),
        Registered::Update(_) => with_shape!(size, snap_identifier, size),
    }
}

fn porep_identifier<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoRepConfig) -> Result<String> {
    let pp = public_params::<Tree>(cfg)?;
    Ok(<StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<StackedCircuit<Tree, DefaultPieceHasher>, _>>::cache_identifier(&pp))
}

fn winning_identifier<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoStConfig) -> Result<String> {
    let pp = winning_post_public_params::<Tree>(cfg)?;
    Ok(<FallbackPoStCompound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(&pp))
}

fn window_identifier<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoStConfig) -> Result<String> {
    let pp = window_post_public_params::<Tree>(cfg)?;
    Ok(<FallbackPoStCompound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(&pp))
}

fn snap_identifier<Tree: 'static + MerkleTreeTrait>(sector_bytes: u64) -> Result<String> {
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_bytes);
    Ok(<EmptySectorUpdateCompound<SnapTree<Tree>> as CacheableParameters<_, _>>::cache_identifier(&pp))
}

/// SnapDeals circuits are only defined over Poseidon trees; every shape `with_shape!` picks is
/// one, but the generic bound must say so. This maps a shape onto the same shape with the
/// update's hasher spelled out.
type SnapTree<Tree> = storage_proofs_core::merkle::LCTree<
    storage_proofs_update::constants::TreeRHasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// Generate insecure test parameters for `circuit` into `dir` unless both files already exist.
/// Files are written to a temporary name and renamed into place, so a reader never sees a
/// half-written file even if generation is interrupted. Returns true if it generated.
pub fn generate_test_params(dir: &Path, circuit: CircuitId, rng: &mut (impl RngCore + Send)) -> Result<bool> {
    let files = param_files(dir, circuit)?;
    if files.params.exists() && files.vk.exists() {
        return Ok(false);
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let reg = circuit.representative();
    let size = reg.sector_size().bytes();
    let params = match reg {
        Registered::Seal(p) => with_shape!(size, porep_generate, &p.as_v1_config(), &mut *rng),
        Registered::Winning(p) => with_shape!(size, winning_generate, &p.as_v1_config(), &mut *rng),
        Registered::Window(p) => with_shape!(size, window_generate, &p.as_v1_config(), &mut *rng),
        Registered::Update(_) => with_shape!(size, snap_generate, size, &mut *rng),
    }?;
    write_atomically(&files.vk, |w| params.vk.write(w))?;
    write_atomically(&files.params, |w| params.write(w))?;
    Ok(true)
}

fn write_atomically(path: &Path, write: impl FnOnce(&mut BufWriter<fs::File>) -> std::io::Result<()>) -> Result<()> {
    let tmp = path.with_extension(format!(
        "{}.partial",
        path.extension().and_then(|e| e.to_str()).unwrap_or("tmp")
    ));
    let file = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut w = BufWriter::with_capacity(8 << 20, file);
    write(&mut w).with_context(|| format!("writing {}", tmp.display()))?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    fs::rename(&tmp, path).with_context(|| format!("renaming {} into place", tmp.display()))?;
    Ok(())
}

type Params = groth16::Parameters<Bls12>;

/// The blank circuit of `circuit` (no witness values): what parameters are generated from,
/// and what PCE records the constraint structure of.
pub fn blank_circuit(circuit: CircuitId) -> Result<Box<dyn PartitionCircuit>> {
    let reg = circuit.representative();
    let size = reg.sector_size().bytes();
    match reg {
        Registered::Seal(p) => with_shape!(size, porep_blank, &p.as_v1_config()),
        Registered::Winning(p) => with_shape!(size, winning_blank, &p.as_v1_config()),
        Registered::Window(p) => with_shape!(size, window_blank, &p.as_v1_config()),
        Registered::Update(_) => with_shape!(size, snap_blank, size),
    }
}

fn porep_blank<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoRepConfig) -> Result<Box<dyn PartitionCircuit>> {
    let pp = public_params::<Tree>(cfg)?;
    Ok(Box::new(<StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&pp)))
}

fn winning_blank<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoStConfig) -> Result<Box<dyn PartitionCircuit>> {
    let pp = winning_post_public_params::<Tree>(cfg)?;
    Ok(Box::new(<FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp)))
}

fn window_blank<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoStConfig) -> Result<Box<dyn PartitionCircuit>> {
    let pp = window_post_public_params::<Tree>(cfg)?;
    Ok(Box::new(<FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp)))
}

fn snap_blank<Tree: 'static + MerkleTreeTrait>(sector_bytes: u64) -> Result<Box<dyn PartitionCircuit>> {
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_bytes);
    Ok(Box::new(<EmptySectorUpdateCompound<SnapTree<Tree>> as CompoundProof<_, _>>::blank_circuit(&pp)))
}

fn porep_generate<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoRepConfig, rng: &mut (impl RngCore + Send)) -> Result<Params> {
    let pp = public_params::<Tree>(cfg)?;
    let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&pp);
    Ok(groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)?)
}

fn winning_generate<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoStConfig, rng: &mut (impl RngCore + Send)) -> Result<Params> {
    let pp = winning_post_public_params::<Tree>(cfg)?;
    let circuit = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp);
    Ok(groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)?)
}

fn window_generate<Tree: 'static + MerkleTreeTrait>(cfg: &filecoin_proofs::PoStConfig, rng: &mut (impl RngCore + Send)) -> Result<Params> {
    let pp = window_post_public_params::<Tree>(cfg)?;
    let circuit = <FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp);
    Ok(groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)?)
}

fn snap_generate<Tree: 'static + MerkleTreeTrait>(sector_bytes: u64, rng: &mut (impl RngCore + Send)) -> Result<Params> {
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_bytes);
    let circuit = <EmptySectorUpdateCompound<SnapTree<Tree>> as CompoundProof<_, _>>::blank_circuit(&pp);
    Ok(groth16::generate_random_parameters::<Bls12, _, _>(circuit, rng)?)
}
