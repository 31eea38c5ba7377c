//! A backend that keeps its own copy of the parameters (as a GPU does on every device) may
//! release the host copy when they are loaded (`ProverBackend::adopt_srs`). The engine must
//! then count only what stays on the host, keep proving through that backend, hand the
//! backend's copy back on eviction, and adopt again after a reload. The "device" here is a
//! plain map on the host, so this runs in CI without a GPU; the CUDA backend's own release is
//! covered by the GPU runs (every proof verified by the daemon). Likewise a preload hands the
//! circuit's matrices to the backend (`ProverBackend::adopt_matrices`), so that a GPU can put
//! them on its devices before the first proof. And a backend may take a generated setup's
//! queries while they are made (`ProverBackend::begin_queries`), so that the host never holds
//! them at all.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use blstrs::{G1Affine, G2Affine};
use cuzk_backend::{CpuBackend, ProveTimings, ProverBackend, Witness, WorkLabel};
use cuzk_core::scheduler::{AwaitOutcome, Phase, Scheduler};
use cuzk_core::srs_cache::EvictOutcome;
use cuzk_core::Config;
use cuzk_filecoin::fixtures::requests::{request, verify_with_filecoin_proofs};
use cuzk_filecoin::ProofKind;
use cuzk_groth16::srs_sink::{G1Query, QueryTaker};
use cuzk_groth16::{CpuProver, Proof, ProveError, QueryLens, Randomness, Srs};
use parking_lot::Mutex;

type Points = (Vec<G1Affine>, Vec<G1Affine>, Vec<G1Affine>, Vec<G1Affine>, Vec<G2Affine>);

/// The CPU prover over points it took from each Srs at load time (or, with `take_while_made`,
/// from a generated setup while it was made).
#[derive(Default)]
struct StashingBackend {
    take_while_made: bool,
    /// The lengths of every key offered by `begin_queries`.
    offered: Mutex<Vec<QueryLens>>,
    stash: Mutex<HashMap<u64, Arc<Points>>>,
    adopted: Mutex<u32>,
    forgotten: Mutex<u32>,
    /// (inputs, aux) of every set of matrices handed over.
    matrices: Mutex<Vec<(usize, usize)>>,
    /// What was handed over, in order: "matrices" or "parameters".
    handed: Mutex<Vec<&'static str>>,
}

impl ProverBackend for StashingBackend {
    fn name(&self) -> String {
        "stash".into()
    }

    fn begin_queries(&self, _path: &std::path::Path, id: u64, lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        self.offered.lock().push(*lens);
        let taker = Taker { backend: self, id, points: Default::default() };
        self.take_while_made.then(|| Box::new(taker) as Box<dyn QueryTaker>)
    }

    fn adopt_srs(&self, srs: &mut Srs) {
        if srs.points_released() {
            return; // taken while it was made
        }
        let points = (srs.h.clone(), srs.l.clone(), srs.a.clone(), srs.b_g1.clone(), srs.b_g2.clone());
        self.stash.lock().insert(srs.id, Arc::new(points));
        *self.adopted.lock() += 1;
        self.handed.lock().push("parameters");
        srs.release_points();
    }

    fn adopt_matrices(&self, pc: &cuzk_pce::PreCompiled) {
        self.matrices.lock().push((pc.num_inputs, pc.num_aux));
        self.handed.lock().push("matrices");
    }

    fn forget_srs(&self, srs: &Srs) {
        if self.stash.lock().remove(&srs.id).is_some() {
            *self.forgotten.lock() += 1;
        }
    }

    fn prove(
        &self,
        srs: &Srs,
        witness: Witness,
        rs: Randomness,
        label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError> {
        assert!(srs.points_released(), "the engine proves with the released Srs");
        let w = witness.into_assignment().expect("an assignment (the CPU backend's form)");
        // The host prover refuses released parameters, with a clear error.
        let refused = CpuProver.prove(srs, w.clone(), rs).unwrap_err();
        assert!(refused.to_string().contains("released"), "{refused}");
        let points = self.stash.lock().get(&srs.id).cloned().expect("adopted before any job had it");
        let (h, l, a, b_g1, b_g2) = (*points).clone();
        let full = Srs {
            vk: srs.vk.clone(),
            h,
            l,
            a,
            b_g1,
            b_g2,
            path: srs.path.clone(),
            synthetic: srs.synthetic,
            insecure: srs.insecure,
            id: srs.id,
            released: None,
        };
        assert_eq!(full.query_lens(), srs.query_lens(), "the released Srs keeps its lengths");
        CpuBackend.prove(&full, Witness::Assignment(w), rs, label)
    }
}

/// One streamed load: the chunks, in order, into the backend's stash when finished.
struct Taker<'a> {
    backend: &'a StashingBackend,
    id: u64,
    points: Points,
}

impl QueryTaker for Taker<'_> {
    fn take_g1(&mut self, query: G1Query, offset: usize, points: &[G1Affine]) -> Result<(), String> {
        let v = match query {
            G1Query::H => &mut self.points.0,
            G1Query::L => &mut self.points.1,
            G1Query::A => &mut self.points.2,
            G1Query::BG1 => &mut self.points.3,
        };
        assert_eq!(v.len(), offset, "{query:?} in order");
        v.extend_from_slice(points);
        Ok(())
    }
    fn take_b_g2(&mut self, offset: usize, points: &[G2Affine]) -> Result<(), String> {
        assert_eq!(self.points.4.len(), offset, "B_G2 in order");
        self.points.4.extend_from_slice(points);
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), String> {
        self.backend.stash.lock().insert(self.id, Arc::new(self.points));
        *self.backend.adopted.lock() += 1;
        Ok(())
    }
}

/// One WindowPoSt through the engine, completed (so verified by the engine); its proof. The
/// kind is nothing to what is tested here, and WindowPoSt's is the cheapest proof (and
/// setup): a WinningPoSt's took ~3 times as long on CI's 2 cores.
fn window_proof(s: &Scheduler, f: &common::Fixture) -> Vec<u8> {
    let job = s.submit("", None, request(&f.dir, &f.manifest, ProofKind::WindowPostPartition).unwrap()).unwrap().job_id;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let r = match rt.block_on(s.await_job(&job, Some(Duration::from_secs(600)))).unwrap() {
        AwaitOutcome::Done(r) => r,
        AwaitOutcome::TimedOut => panic!("WindowPoSt did not finish"),
    };
    assert_eq!(r.phase, Phase::Completed, "{:?}", r.error);
    r.proof
}

fn prove_window(s: &Scheduler, f: &common::Fixture) {
    let proof = window_proof(s, f);
    assert!(verify_with_filecoin_proofs(&f.dir, &f.manifest, ProofKind::WindowPostPartition, &proof).unwrap());
}

#[test]
fn released_host_parameters_are_not_counted_and_the_backend_keeps_proving() {
    let f = common::fixture();
    let mut config = Config::default();
    config.srs.param_dir = f.dir.join("params");
    let backend = Arc::new(StashingBackend::default());
    let s = Scheduler::start(config, Some(backend.clone() as Arc<dyn ProverBackend>)).unwrap();
    prove_window(&s, f);
    assert_eq!(*backend.adopted.lock(), 1);
    let circuit = cuzk_filecoin::CircuitId::parse("wpost-2k").unwrap();
    let resident = s.srs().resident();
    let entry = resident.iter().find(|r| r.circuit == circuit).expect("wpost-2k resident");
    // Only the verifying key's IC points stay on the host (23 of them here, 2.2 kB), not the
    // megabytes of query points.
    assert!(entry.bytes < 1 << 16, "host bytes counted after release: {}", entry.bytes);
    // Eviction hands the backend's copy back; the next job reloads and adopts again.
    assert!(matches!(s.evict(&circuit.to_string()), Ok(EvictOutcome::Freed { .. })));
    assert_eq!(*backend.forgotten.lock(), 1);
    prove_window(&s, f);
    assert_eq!(*backend.adopted.lock(), 2);
}

#[test]
fn a_preload_hands_the_circuits_matrices_to_the_backend() {
    let f = common::fixture();
    let work = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.srs.param_dir = f.dir.join("params");
    config.pce.cache_dir = work.path().join("pce");
    let backend = Arc::new(StashingBackend::default());
    let s = Scheduler::start(config, Some(backend.clone() as Arc<dyn ProverBackend>)).unwrap();
    s.preload("wpost-2k").unwrap();
    let circuit = cuzk_filecoin::CircuitId::parse("wpost-2k").unwrap();
    // The same matrices, read back from the cache file the preload wrote.
    let (pc, _) =
        cuzk_core::pce_cache::PceCache::new(work.path().join("pce"), f.dir.join("params")).get(circuit).unwrap();
    assert_eq!(*backend.matrices.lock(), vec![(pc.num_inputs, pc.num_aux)], "one hand-over, of wpost-2k's matrices");
    // The matrices before the parameters: a GPU judges the parameters' room with its matrices
    // already there (otherwise two big circuits can fill a device and leave no room to prove).
    assert_eq!(*backend.handed.lock(), ["matrices", "parameters"]);
    prove_window(&s, f);
}

#[test]
fn a_backend_takes_a_generated_setup_while_it_is_made_and_the_host_keeps_none() {
    let f = common::fixture();
    let work = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.srs.param_dir = f.dir.join("params");
    config.pce.cache_dir = work.path().join("pce");
    config.srs.generated = vec!["wpost-2k".into()];
    config.srs.generated_seed = 3;
    let backend = Arc::new(StashingBackend { take_while_made: true, ..Default::default() });
    let s = Scheduler::start(config, Some(backend.clone() as Arc<dyn ProverBackend>)).unwrap();
    // The proof is verified by the engine against the generated (INSECURE) key; filecoin-proofs'
    // check would need the fixture's own parameters.
    window_proof(&s, f);
    let offered = backend.offered.lock().clone();
    assert_eq!(offered.len(), 1, "one load, offered once");
    assert_eq!(*backend.adopted.lock(), 1);
    let stash = backend.stash.lock();
    let (h, l, a, b_g1, b_g2) = &**stash.values().next().expect("taken");
    assert_eq!(
        QueryLens { h: h.len(), l: l.len(), a: a.len(), b_g1: b_g1.len(), b_g2: b_g2.len() },
        offered[0],
        "every point of the offered lengths"
    );
    let circuit = cuzk_filecoin::CircuitId::parse("wpost-2k").unwrap();
    let entry = s.srs().resident().into_iter().find(|r| r.circuit == circuit).expect("wpost-2k resident");
    assert!(entry.bytes < 1 << 16, "host bytes counted for a key the backend took while it was made: {}", entry.bytes);
}
