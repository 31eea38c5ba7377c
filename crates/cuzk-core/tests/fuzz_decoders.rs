//! Bounded random mutation of every input decoder, as a request or a file on disk would reach
//! it: the C1 JSON envelope (PoRep), bincode vanilla proofs (WinningPoSt, WindowPoSt,
//! SnapDeals), a `.params` file's header and sections, and a PCE cache file. Each mutant (bytes
//! flipped, a run overwritten with 0xff as a huge length would be, bytes cut or inserted, the
//! input truncated) must come back as `Ok` or an error — never a panic. Deterministic (fixed
//! seeds) so a failure reproduces; a few hundred mutants, seconds of work.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use cuzk_filecoin::fixtures::requests::request;
use cuzk_filecoin::params::param_files;
use cuzk_filecoin::{prepare, CircuitId, ProofKind, ProofRequest};
use cuzk_groth16::{Srs, SubgroupCheck};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One random mutation of `bytes`.
fn mutate(rng: &mut StdRng, bytes: &[u8]) -> Vec<u8> {
    let mut m = bytes.to_vec();
    if m.is_empty() {
        return vec![rng.gen()];
    }
    match rng.gen_range(0..5) {
        0 => {
            for _ in 0..rng.gen_range(1..8) {
                let i = rng.gen_range(0..m.len());
                m[i] ^= 1 << rng.gen_range(0..8);
            }
        }
        1 => {
            // A length prefix or count turned huge.
            let i = rng.gen_range(0..m.len());
            let end = (i + 8).min(m.len());
            m[i..end].fill(0xff);
        }
        2 => {
            let i = rng.gen_range(0..m.len());
            let n = rng.gen_range(1..64).min(m.len() - i);
            m.drain(i..i + n);
        }
        3 => {
            let i = rng.gen_range(0..=m.len());
            let extra: Vec<u8> = (0..rng.gen_range(1..64)).map(|_| rng.gen()).collect();
            m.splice(i..i, extra);
        }
        _ => m.truncate(rng.gen_range(0..m.len())),
    }
    m
}

/// Mutants of one payload of `req` (picked by `field`) through `prepare`: never a panic. A
/// mutant that `prepare` takes has each partition's witness computed, as the engine's
/// synthesis would: some checks of the vanilla proofs happen there (the WindowPoSt paths'
/// hashes), and a mutant it refuses counts as refused. (A panic there would be caught by the
/// engine's synthesis and fail the job; it is counted as refused too.)
fn fuzz_request(kind: ProofKind, seed: u64, rounds: usize, field: fn(&mut ProofRequest) -> &mut Vec<u8>) {
    let f = common::fixture();
    let base = request(&f.dir, &f.manifest, kind).unwrap();
    assert!(prepare(&base).is_ok(), "{kind:?}: the unmutated request is valid");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut refused = 0;
    for round in 0..rounds {
        let mut req = base.clone();
        let payload = field(&mut req);
        *payload = mutate(&mut rng, payload);
        match catch_unwind(AssertUnwindSafe(|| prepare(&req))) {
            Ok(Ok(prepared)) => {
                let witnessed = prepared
                    .partitions
                    .into_iter()
                    .all(|p| matches!(catch_unwind(AssertUnwindSafe(|| p.circuit.witness())), Ok(Ok(_))));
                if !witnessed {
                    refused += 1;
                }
            }
            Ok(Err(_)) => refused += 1,
            Err(_) => panic!("{kind:?}: mutant {round} (seed {seed}) made prepare panic"),
        }
    }
    // Most mutants must be refused; if none were, the payload was not what was mutated.
    assert!(refused > rounds / 2, "{kind:?}: only {refused} of {rounds} mutants refused");
}

#[test]
fn c1_envelopes_never_panic() {
    fuzz_request(ProofKind::PoRepSealCommit, 1, 60, |r| &mut r.vanilla_proof);
}

#[test]
fn post_and_snap_vanilla_proofs_never_panic() {
    fuzz_request(ProofKind::WinningPost, 2, 80, |r| &mut r.vanilla_proofs[0]);
    fuzz_request(ProofKind::WindowPostPartition, 3, 80, |r| &mut r.vanilla_proofs[0]);
    fuzz_request(ProofKind::SnapDealsUpdate, 4, 40, |r| &mut r.vanilla_proofs[0]);
}

/// `.params` files: mutants of the header region and of whole-file truncations.
#[test]
fn parameter_files_never_panic() {
    let f = common::fixture();
    let params = f.dir.join("params");
    let files = param_files(&params, CircuitId::parse("wpost-2k").unwrap()).unwrap();
    let original = std::fs::read(&files.params).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mutant.params");
    let mut rng = StdRng::seed_from_u64(5);
    for round in 0..30 {
        // Mutate within the first 64 KiB (the verifying key and the section lengths), keep the rest.
        let head = 64 << 10;
        let mut m = mutate(&mut rng, &original[..head]);
        if round % 3 != 2 {
            m.extend_from_slice(&original[head..]);
        }
        std::fs::write(&path, &m).unwrap();
        if catch_unwind(|| Srs::load(&path, SubgroupCheck::Skip)).is_err() {
            panic!("params mutant {round} made Srs::load panic");
        }
    }
}

/// PCE cache files: mutants anywhere in the file, with the right identity (so the parser goes
/// past the header).
#[test]
fn pce_cache_files_never_panic() {
    let f = common::fixture();
    let params = f.dir.join("params");
    let circuit = CircuitId::parse("wpost-2k").unwrap();
    let identity = format!("cuzk-pce/{circuit}/{}", param_files(&params, circuit).unwrap().identifier);
    let source = params.join("pce").join(format!("{circuit}.pce"));
    if !source.exists() {
        // The fixture set writes it on first use; make it the way the engine does.
        let pc = cuzk_filecoin::params::blank_circuit(circuit).unwrap().extract().unwrap();
        std::fs::create_dir_all(source.parent().unwrap()).unwrap();
        cuzk_pce::cache::save(&pc, &source, &identity).unwrap();
    }
    let original = std::fs::read(&source).unwrap();
    assert!(cuzk_pce::cache::load(&source, &identity).is_ok(), "the unmutated cache file loads");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mutant.pce");
    let mut rng = StdRng::seed_from_u64(6);
    for round in 0..60 {
        std::fs::write(&path, mutate(&mut rng, &original)).unwrap();
        // Whatever the umask: a group-writable cache file is refused before it is parsed.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        if catch_unwind(|| cuzk_pce::cache::load(&path, &identity)).is_err() {
            panic!("PCE mutant {round} made cache::load panic");
        }
    }
}
