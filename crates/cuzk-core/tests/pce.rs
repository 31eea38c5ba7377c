//! The pre-compiled constraint evaluator on the real 2 KiB circuits: for each proof type the
//! PCE path (witness + A·w, B·w, C·w) yields exactly the plain synthesis result — a, b, c,
//! inputs, aux and all densities — and the on-disk cache rejects corrupt or mismatched files
//! and rebuilds them.

mod common;

use cuzk_core::pce_cache::{PceCache, PceSource};
use cuzk_filecoin::fixtures::requests::request;
use cuzk_filecoin::{prepare, CircuitId, ProofKind};

#[test]
fn pce_matches_plain_synthesis_for_every_circuit_type() {
    let f = common::fixture();
    let dir = tempfile::tempdir().unwrap();
    let cache = PceCache::new(dir.path().into(), f.dir.join("params"));
    for kind in
        [ProofKind::WinningPost, ProofKind::WindowPostPartition, ProofKind::SnapDealsUpdate, ProofKind::PoRepSealCommit]
    {
        let req = request(&f.dir, &f.manifest, kind).unwrap();
        let (plain_job, pce_job) = (prepare(&req).unwrap(), prepare(&req).unwrap());
        let (pc, source) = cache.get(plain_job.circuit_id).unwrap();
        assert_eq!(source, PceSource::Extracted);
        for (p, q) in plain_job.partitions.into_iter().zip(pce_job.partitions) {
            let plain = p.circuit.synthesize().unwrap();
            let (inputs, aux) = q.circuit.witness().unwrap();
            let via_pce = cuzk_pce::evaluate(&pc, inputs, aux).unwrap();
            assert_eq!(plain.a.len(), via_pce.a.len(), "{kind}: constraint count");
            assert_eq!(plain.a_aux_density, via_pce.a_aux_density, "{kind}: A aux density");
            assert_eq!(plain.b_input_density, via_pce.b_input_density, "{kind}: B input density");
            assert_eq!(plain.b_aux_density, via_pce.b_aux_density, "{kind}: B aux density");
            assert!(plain == via_pce, "{kind}: PCE assignment differs from plain synthesis");
            assert_eq!(cuzk_pce::first_unsatisfied(&via_pce), None, "{kind}: witness satisfies the circuit");
        }
        // A second cache over the same directory loads the saved file instead of extracting.
        let again = PceCache::new(dir.path().into(), f.dir.join("params"));
        let (loaded, source) = again.get(pc_circuit(kind)).unwrap();
        assert_eq!(source, PceSource::DiskCache);
        assert!(*loaded == *pc, "{kind}: cached matrices differ from extracted ones");
    }
}

fn pc_circuit(kind: ProofKind) -> CircuitId {
    CircuitId { kind, size: cuzk_filecoin::SectorSize::S2KiB }
}

#[test]
fn corrupt_or_mismatched_cache_files_are_rebuilt() {
    let f = common::fixture();
    let dir = tempfile::tempdir().unwrap();
    let fresh = || PceCache::new(dir.path().into(), f.dir.join("params"));
    let wpost = pc_circuit(ProofKind::WindowPostPartition);
    let winning = pc_circuit(ProofKind::WinningPost);
    let (original, _) = fresh().get(wpost).unwrap();
    fresh().get(winning).unwrap();
    let path = fresh().path(wpost);

    // Flip a byte in the payload: detected, re-extracted, rewritten.
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 100] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let (rebuilt, source) = fresh().get(wpost).unwrap();
    assert_eq!(source, PceSource::Extracted);
    assert!(*rebuilt == *original);
    assert_eq!(fresh().get(wpost).unwrap().1, PceSource::DiskCache, "the rebuilt file is valid");

    // Truncated.
    std::fs::write(&path, &std::fs::read(&path).unwrap()[..n / 2]).unwrap();
    assert_eq!(fresh().get(wpost).unwrap().1, PceSource::Extracted);

    // Another circuit's (valid) file under this circuit's name.
    std::fs::copy(fresh().path(winning), &path).unwrap();
    let (rebuilt, source) = fresh().get(wpost).unwrap();
    assert_eq!(source, PceSource::Extracted, "a file for another circuit must be refused");
    assert!(*rebuilt == *original);
}
