//! Parameter (SRS) files: which file belongs to which circuit, and writing **insecure,
//! generated** parameters (the test fixtures' and `cuzk-bench gen-setup`'s).
//!
//! File names are filecoin-proofs' own (`v28-<circuit identifier hash>.params` / `.vk`), derived
//! through storage-proofs' `CacheableParameters::cache_identifier`, so a parameter directory laid
//! out for filecoin-proofs works for cuzk unchanged.
//!
//! Generated parameters come from cuzk's own setup (`cuzk_pce::setup`) over the circuit's
//! recorded R1CS (or, for small circuits, from bellperson's own generator: `bellperson_setup`),
//! with a trapdoor from a seed anyone can reproduce: they prove and verify like
//! real ones but offer no security. Every such file gets a `<file>.params.INSECURE` marker
//! beside it (cuzk loads marked files as insecure and says so), and the fixture directory is
//! marked as test-only too.

use std::fs;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
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
    Ok(<StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<
        StackedCircuit<Tree, DefaultPieceHasher>,
        _,
    >>::cache_identifier(&pp))
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
pub(crate) type SnapTree<Tree> = storage_proofs_core::merkle::LCTree<
    storage_proofs_update::constants::TreeRHasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// Generate insecure test parameters for `circuit` into `dir` unless both files already exist
/// (the setup's seed is drawn from `rng`). Files are written to a temporary name and renamed
/// into place, so a reader never sees a half-written file even if generation is interrupted.
/// Returns true if it generated.
pub fn generate_test_params(dir: &Path, circuit: CircuitId, rng: &mut (impl RngCore + Send)) -> Result<bool> {
    let files = param_files(dir, circuit)?;
    if files.params.exists() && files.vk.exists() {
        return Ok(false);
    }
    let pc = blank_circuit(circuit)?.extract().with_context(|| format!("recording the R1CS of {circuit}"))?;
    let seed = rng.next_u64();
    let srs = cuzk_pce::setup::generate_srs(&pc, seed, &circuit.to_string())
        .with_context(|| format!("setup of {circuit}"))?;
    write_generated(&files, &srs, &format!("{circuit}, seed {seed}"))?;
    Ok(true)
}

/// Write generated (insecure) parameters as `files`: the `.vk`, the `.params`, the
/// `.params.INSECURE` marker, and the subgroup-check sidecar (every point is a multiple of the
/// generator, so the first load need not spend minutes checking what was just written).
pub fn write_generated(files: &ParamFiles, srs: &cuzk_groth16::Srs, what: &str) -> Result<()> {
    mark_insecure(&files.params, &format!("{what} (cuzk's own setup)"))?;
    write_atomically(&files.vk, |w| cuzk_groth16::srs::write_vk(&srs.vk, w))?;
    write_atomically(&files.params, |w| cuzk_groth16::srs::write_params(srs, w))?;
    cuzk_groth16::srs::mark_checked(&files.params);
    Ok(())
}

/// Write only the verifying key of generated parameters (what filecoin-proofs' verifiers read),
/// with the same marker beside it.
pub fn write_generated_vk(files: &ParamFiles, vk: &cuzk_groth16::VerifyingKey, what: &str) -> Result<()> {
    mark_insecure(&files.vk, &format!("{what} (cuzk's own setup)"))?;
    write_atomically(&files.vk, |w| cuzk_groth16::srs::write_vk(vk, w))
}

/// The `<file>.INSECURE` marker beside `file` (its directory made if needed), written before
/// the file itself so that no reader ever sees the file unmarked.
pub(crate) fn mark_insecure(file: &Path, what: &str) -> Result<()> {
    if let Some(dir) = file.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let marker = cuzk_groth16::srs::insecure_marker(file);
    fs::write(&marker, format!("{INSECURE_MARKER_TEXT}Circuit: {what}.\n"))
        .with_context(|| format!("writing {}", marker.display()))
}

/// What every marker of generated parameters says.
pub const INSECURE_MARKER_TEXT: &str = "INSECURE generated Groth16 parameters: made from a \
publicly known seed, NOT the Filecoin trusted-setup ceremony. Anyone can forge proofs that verify \
against them. For tests and benchmarks only.\n";

pub(crate) fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = path.with_extension(format!("{}.partial", path.extension().and_then(|e| e.to_str()).unwrap_or("tmp")));
    let file = fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let mut w = BufWriter::with_capacity(8 << 20, file);
    write(&mut w).with_context(|| format!("writing {}", tmp.display()))?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    fs::rename(&tmp, path).with_context(|| format!("renaming {} into place", tmp.display()))?;
    Ok(())
}

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

fn porep_blank<Tree: 'static + MerkleTreeTrait>(
    cfg: &filecoin_proofs::PoRepConfig,
) -> Result<Box<dyn PartitionCircuit>> {
    let pp = public_params::<Tree>(cfg)?;
    Ok(Box::new(<StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&pp)))
}

fn winning_blank<Tree: 'static + MerkleTreeTrait>(
    cfg: &filecoin_proofs::PoStConfig,
) -> Result<Box<dyn PartitionCircuit>> {
    let pp = winning_post_public_params::<Tree>(cfg)?;
    Ok(Box::new(<FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp)))
}

fn window_blank<Tree: 'static + MerkleTreeTrait>(
    cfg: &filecoin_proofs::PoStConfig,
) -> Result<Box<dyn PartitionCircuit>> {
    let pp = window_post_public_params::<Tree>(cfg)?;
    Ok(Box::new(<FallbackPoStCompound<Tree> as CompoundProof<_, _>>::blank_circuit(&pp)))
}

fn snap_blank<Tree: 'static + MerkleTreeTrait>(sector_bytes: u64) -> Result<Box<dyn PartitionCircuit>> {
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_bytes);
    Ok(Box::new(<EmptySectorUpdateCompound<SnapTree<Tree>> as CompoundProof<_, _>>::blank_circuit(&pp)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The generated setup lays out every query as bellperson's generator does for the same
    /// Filecoin circuit (lengths, so densities and dropped points at infinity), for the 2 KiB
    /// circuit bellperson generates in seconds, WindowPoSt's. The others' lengths are checked
    /// against the prover's densities by the proofs that verify: PoRep and SnapDeals take
    /// minutes in bellperson's generator, and WinningPoSt (the same FallbackPoSt circuit over
    /// more sectors) took CI's 2 cores ~30 s.
    #[test]
    fn generated_query_lengths_equal_bellpersons_for_filecoin_circuits() {
        let id = "wpost-2k";
        let circuit = CircuitId::parse(id).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let theirs = crate::bellperson_setup::generate(circuit, &mut rng).unwrap();
        let pc = blank_circuit(circuit).unwrap().extract().unwrap();
        let ours = cuzk_pce::setup::generate_srs(&pc, 1, id).unwrap();
        let lens = [ours.h.len(), ours.l.len(), ours.a.len(), ours.b_g1.len(), ours.b_g2.len(), ours.vk.ic.len()];
        let want =
            [theirs.h.len(), theirs.l.len(), theirs.a.len(), theirs.b_g1.len(), theirs.b_g2.len(), theirs.vk.ic.len()];
        assert_eq!(lens, want, "{id}: h, l, a, b_g1, b_g2, ic");
    }

    /// A `.params` file written by bellperson's own generator and writer (what the ceremony
    /// files are) loads both ways — decoded on the host, and streamed through the chunked
    /// reader the devices are fed by — to bellperson's points, every one subgroup-checked, and
    /// as insecure: `bellperson_setup::write` marks it so.
    #[test]
    fn a_params_file_written_by_bellperson_loads_on_the_host_and_streamed() {
        use cuzk_groth16::srs_sink::Collect;
        use cuzk_groth16::{Srs, SubgroupCheck};
        // The smallest circuit: the layout and the loaders are the same for every circuit, and
        // WinningPoSt's (4 times the points) took CI's 2 cores ~30 s in bellperson's generator
        // and ~13 s in each subgroup-checked load.
        let circuit = CircuitId::parse("wpost-2k").unwrap();
        let dir = tempfile::tempdir().unwrap();
        // Written as `cuzk-bench gen-setup --generator bellperson` writes it.
        let files = param_files(dir.path(), circuit).unwrap();
        let theirs = crate::bellperson_setup::write(&files, circuit, 2).unwrap();
        let path = files.params.clone();
        assert!(
            cuzk_groth16::srs::insecure_marker(&path).exists()
                && cuzk_groth16::srs::insecure_marker(&files.vk).exists()
        );
        assert_eq!(cuzk_groth16::srs::load_verifying_key(&files.vk).unwrap().ic.len(), theirs.vk.ic.len());
        let host = Srs::load_with_records(&path, SubgroupCheck::Always, Some(dir.path())).unwrap();
        assert!(host.h[..] == theirs.h[..] && host.l[..] == theirs.l[..] && host.a[..] == theirs.a[..]);
        assert!(host.b_g1[..] == theirs.b_g1[..] && host.b_g2[..] == theirs.b_g2[..]);
        assert!(
            host.vk.alpha_g1 == theirs.vk.alpha_g1
                && host.vk.delta_g2 == theirs.vk.delta_g2
                && host.vk.ic == theirs.vk.ic
        );
        let sink = Collect::default();
        let streamed = cuzk_groth16::srs_stream::load_into(&path, SubgroupCheck::Always, Some(dir.path()), &sink)
            .unwrap()
            .expect("taken");
        let got = sink.taken.lock().unwrap().take().unwrap();
        assert!(
            got.h == host.h && got.l == host.l && got.a == host.a && got.b_g1 == host.b_g1 && got.b_g2 == host.b_g2
        );
        assert_eq!(streamed.vk, host.vk);
        assert!(streamed.points_released() && streamed.insecure, "its .INSECURE marker is honoured");
        // Without the marker (a ceremony file has none) the same file loads as what it is.
        fs::remove_file(cuzk_groth16::srs::insecure_marker(&path)).unwrap();
        let unmarked =
            cuzk_groth16::srs_stream::load_into(&path, SubgroupCheck::Skip, Some(dir.path()), &Collect::default())
                .unwrap()
                .expect("taken");
        assert!(!unmarked.insecure, "no marker: loaded as what it is");
    }

    /// At 8 MiB too, the streamed load hands over exactly the host load's key: a WindowPoSt
    /// key of cuzk's generated setup, written in the ceremony's layout (the 32 GiB files take
    /// the same path on the devices).
    #[test]
    fn an_8mib_key_streams_as_it_loads_on_the_host() {
        use cuzk_groth16::srs_sink::Collect;
        use cuzk_groth16::{Srs, SubgroupCheck};
        let circuit = CircuitId::parse("wpost-8m").unwrap();
        let pc = blank_circuit(circuit).unwrap().extract().unwrap();
        let generated = cuzk_pce::setup::generate_srs(&pc, 3, "wpost-8m").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wpost-8m.params");
        let mut f = std::io::BufWriter::new(fs::File::create(&path).unwrap());
        cuzk_groth16::srs::write_params(&generated, &mut f).unwrap();
        drop(f);
        // The subgroup check is the 2 KiB tests' (and the GPU suite's) concern; here it would
        // be most of the test's time in a debug build.
        let host = Srs::load_with_records(&path, SubgroupCheck::Skip, Some(dir.path())).unwrap();
        assert!(host.h == generated.h && host.b_g2 == generated.b_g2 && host.vk == generated.vk);
        let sink = Collect::default();
        let streamed = cuzk_groth16::srs_stream::load_into(&path, SubgroupCheck::Skip, Some(dir.path()), &sink)
            .unwrap()
            .expect("taken");
        let got = sink.taken.lock().unwrap().take().unwrap();
        assert!(
            got.h == host.h && got.l == host.l && got.a == host.a && got.b_g1 == host.b_g1 && got.b_g2 == host.b_g2
        );
        assert_eq!(streamed.vk, host.vk);
        assert_eq!(streamed.query_lens(), host.query_lens());
        assert!(host.query_lens().h >= (1 << 16) - 1, "an 8 MiB key, not a toy: {:?}", host.query_lens());
    }
}

/// Refuse to overwrite parameter files that may be real: an existing `.params` or `.vk` of
/// `files` must carry a marker of cuzk's own, a `.INSECURE` (generated setup) or a `.SYNTHETIC`
/// one (random points), beside itself or beside the `.params` (one marker covers the pair).
/// Files that do not exist are fine. The commands that write under filecoin-proofs' file names
/// (`cuzk-bench gen-setup`, `synthetic-params`) call this first, so that pointing `--out` at the
/// real parameter directory cannot truncate the ceremony's parameters.
pub fn refuse_unmarked(files: &ParamFiles) -> Result<()> {
    use cuzk_groth16::srs::insecure_marker;
    use cuzk_groth16::srs_synthetic::synthetic_marker;
    for f in [&files.params, &files.vk] {
        if !f.exists() {
            continue;
        }
        let marked = [f, &files.params].iter().any(|p| insecure_marker(p).exists() || synthetic_marker(p).exists());
        if !marked {
            anyhow::bail!(
                "{} exists and is marked neither INSECURE nor SYNTHETIC: it may be real parameters; refusing to overwrite it",
                f.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod refuse_unmarked_tests {
    use super::*;

    #[test]
    fn unmarked_files_are_refused_marked_and_absent_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let files = ParamFiles::in_dir(dir.path(), "test-circuit".into());
        // Nothing there yet.
        refuse_unmarked(&files).unwrap();

        // An unmarked .params (or .vk) is refused, naming it.
        fs::write(&files.params, b"real").unwrap();
        let e = refuse_unmarked(&files).unwrap_err().to_string();
        assert!(e.contains(&files.params.display().to_string()) && e.contains("refusing"), "{e}");
        fs::remove_file(&files.params).unwrap();
        fs::write(&files.vk, b"real").unwrap();
        let e = refuse_unmarked(&files).unwrap_err().to_string();
        assert!(e.contains(&files.vk.display().to_string()), "{e}");

        // A marker beside the file itself, or beside the .params for both, makes them cuzk's own.
        fs::write(cuzk_groth16::srs::insecure_marker(&files.vk), b"").unwrap();
        refuse_unmarked(&files).unwrap();
        fs::write(&files.params, b"synthetic").unwrap();
        assert!(refuse_unmarked(&files).is_err(), "the .vk's marker does not cover the .params");
        fs::remove_file(cuzk_groth16::srs::insecure_marker(&files.vk)).unwrap();
        fs::write(cuzk_groth16::srs_synthetic::synthetic_marker(&files.params), b"").unwrap();
        refuse_unmarked(&files).unwrap();
        fs::remove_file(cuzk_groth16::srs_synthetic::synthetic_marker(&files.params)).unwrap();
        fs::write(cuzk_groth16::srs::insecure_marker(&files.params), b"").unwrap();
        refuse_unmarked(&files).unwrap();
    }
}
