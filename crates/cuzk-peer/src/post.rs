//! WinningPoSt and WindowPoSt for the peer: a `cuzk-bench gen-consistent` input set (circuit
//! `winning-…` or `wpost-…`), proven with filecoin-proofs-api's vanilla-proof entry points —
//! the ones Curio calls with the vanilla proofs its storage nodes return — and the proof then
//! checked with filecoin-proofs-api's own verifiers against the set's public data.
//!
//! filecoin-proofs' PoSt provers do not verify the Groth16 proof they return (only the vanilla
//! proofs they start from), unlike `seal_commit_phase2`; hence the explicit check here, so that
//! "ok" means the same for every kind.
//!
//! cuzk-peer must build alone (its `supraseal` feature changes bellperson's parameter type), so
//! it cannot use cuzk-filecoin's `InputSet`; the few manifest fields proving needs are read here.
//! The tests prove sets written by cuzk-filecoin's generator, which keeps the two in step.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, ensure, Context, Result};
use filecoin_proofs_api::post::{
    generate_single_window_post_with_vanilla, generate_winning_post_with_vanilla, verify_window_post,
    verify_winning_post,
};
use filecoin_proofs_api::{PoStType, PublicReplicaInfo, RegisteredPoStProof, SectorId};

use crate::{hex32, Proved};

/// The file `gen-consistent` writes beside the vanilla proofs.
const MANIFEST: &str = "input-set.json";

/// The part of `input-set.json` a PoSt needs (the file carries more; serde ignores the rest).
#[derive(serde::Deserialize)]
struct Manifest {
    circuit: String,
    /// Go abi number, as Curio's request carries it.
    registered_proof: u64,
    prover_id_hex: String,
    randomness_hex: Option<String>,
    #[serde(default)]
    partition_index: u32,
    /// One bincode `FallbackPoStSectorProof` per sector, in the order of `sectors`.
    vanilla_files: Vec<String>,
    /// (sector number, comm_r hex) of every sector: the verifier's public replica infos.
    sectors: Vec<(u64, String)>,
}

/// Go's `abi.RegisteredPoStProof` numbering is the order of filecoin-proofs-api's enum: Winning
/// 0–4, Window V1 5–9, and Go's Window V1_1 10–14, which is the api's V1_2.
const BY_GO_ABI_NUMBER: [RegisteredPoStProof; 15] = {
    use RegisteredPoStProof::*;
    [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ]
};

/// One PoSt's inputs, read from an input-set directory.
struct Inputs {
    registered: RegisteredPoStProof,
    randomness: [u8; 32],
    prover_id: [u8; 32],
    partition_index: u32,
    vanilla_proofs: Vec<Vec<u8>>,
    replicas: BTreeMap<SectorId, PublicReplicaInfo>,
}

/// Read the set in `dir`, prove it as a `typ` PoSt and verify the proof. An input set of the
/// other PoSt type, or a proof that does not verify, is an error.
pub fn prove(dir: &Path, typ: PoStType) -> Result<Proved> {
    let inputs = load(dir, &typ)?;
    let start = Instant::now();
    let proof = match typ {
        PoStType::Winning => {
            let mut proofs = generate_winning_post_with_vanilla(
                inputs.registered,
                &inputs.randomness,
                inputs.prover_id,
                &inputs.vanilla_proofs,
            )
            .context("generate_winning_post_with_vanilla")?;
            ensure!(proofs.len() == 1, "generate_winning_post_with_vanilla returned {} proofs, not 1", proofs.len());
            proofs.remove(0).1
        }
        PoStType::Window => {
            generate_single_window_post_with_vanilla(
                inputs.registered,
                &inputs.randomness,
                inputs.prover_id,
                &inputs.vanilla_proofs,
                inputs.partition_index as usize,
            )
            .context("generate_single_window_post_with_vanilla")?
            .0
        }
    };
    let prove_s = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let (verified, verifier) = match typ {
        PoStType::Winning => {
            (verify_winning_post(&inputs.randomness, &proof, &inputs.replicas, inputs.prover_id), "verify_winning_post")
        }
        PoStType::Window => (
            verify_window_post(
                &inputs.randomness,
                &[(inputs.registered, proof.as_slice())],
                &inputs.replicas,
                inputs.prover_id,
            ),
            "verify_window_post",
        ),
    };
    let verify_s = start.elapsed().as_secs_f64();
    if !verified.context(verifier)? {
        bail!(
            "the {} proof did NOT verify: {verifier} rejected it against the input set's randomness, prover id \
             and {} sectors' comm_r (proving took {prove_s:.3} s)",
            typ_name(&typ),
            inputs.replicas.len()
        );
    }
    Ok(Proved { bytes: proof.len(), checked_by: verifier, prove_s: Some(prove_s), verify_s: Some(verify_s) })
}

fn load(dir: &Path, typ: &PoStType) -> Result<Inputs> {
    let path = dir.join(MANIFEST);
    let raw = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let m: Manifest = serde_json::from_slice(&raw).with_context(|| format!("parsing {}", path.display()))?;
    let registered = *BY_GO_ABI_NUMBER
        .get(m.registered_proof as usize)
        .with_context(|| format!("{}: registered_proof {} is no PoSt proof", m.circuit, m.registered_proof))?;
    ensure!(
        registered.typ() == *typ,
        "{} holds a {} input set ({registered:?}), not the {} asked for",
        path.display(),
        typ_name(&registered.typ()),
        typ_name(typ)
    );
    ensure!(
        m.vanilla_files.len() == m.sectors.len(),
        "{}: {} vanilla proof files for {} sectors",
        path.display(),
        m.vanilla_files.len(),
        m.sectors.len()
    );
    let vanilla_proofs = m
        .vanilla_files
        .iter()
        .map(|f| std::fs::read(dir.join(f)).with_context(|| format!("reading {}", dir.join(f).display())))
        .collect::<Result<Vec<_>>>()?;
    let replicas = m
        .sectors
        .iter()
        .map(|(id, comm_r)| {
            let comm_r = hex32(&format!("comm_r of sector {id}"), comm_r)?;
            Ok((SectorId::from(*id), PublicReplicaInfo::new(registered, comm_r)))
        })
        .collect::<Result<BTreeMap<_, _>>>()?;
    ensure!(replicas.len() == m.sectors.len(), "{}: a sector number is listed twice", path.display());
    let randomness =
        m.randomness_hex.as_deref().with_context(|| format!("{} has no randomness_hex", path.display()))?;
    Ok(Inputs {
        registered,
        randomness: hex32("randomness_hex", randomness)?,
        prover_id: hex32("prover_id_hex", &m.prover_id_hex)?,
        partition_index: m.partition_index,
        vanilla_proofs,
        replicas,
    })
}

fn typ_name(typ: &PoStType) -> &'static str {
    match typ {
        PoStType::Winning => "WinningPoSt",
        PoStType::Window => "WindowPoSt",
    }
}
