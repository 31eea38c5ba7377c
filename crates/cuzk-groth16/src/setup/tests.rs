//! The chunked production of the generated setup's queries: chunk boundaries, a backend that
//! takes the queries while they are made (crate::srs_sink), and the chunks made one ahead of
//! the backend's taking them.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use blstrs::{G1Affine, G2Affine, Scalar as Fr};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{assemble_chunked, CpuFixedBase, Evaluations, FixedBaseMul, SetupError, Trapdoor};
use crate::srs::{QueryLens, Srs};
use crate::srs_sink::{G1Query, QuerySink, QueryTaker};

/// Random evaluations with variables missing from A (u = 0) and from B (v = 0); also the
/// streamed loader's tests' parameters.
pub(crate) fn evaluations(n: usize, seed: u64) -> Evaluations {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    let mut e = Evaluations { u: Vec::new(), v: Vec::new(), w: Vec::new() };
    for i in 0..n {
        e.u.push(if i % 3 == 1 { Fr::ZERO } else { Fr::random(&mut r) });
        e.v.push(if i % 4 == 2 { Fr::ZERO } else { Fr::random(&mut r) });
        e.w.push(Fr::random(&mut r));
    }
    e
}

/// One table of fixed-base multiples for every test of the setup and of the streamed loader:
/// building one takes ~0.4 s of CI's 2 cores, and these tests make over twenty parameter sets.
pub(crate) fn fixed_base() -> &'static CpuFixedBase {
    static TABLE: OnceLock<CpuFixedBase> = OnceLock::new();
    TABLE.get_or_init(CpuFixedBase::new)
}

fn build(sink: Option<&dyn QuerySink>, chunk: usize) -> Result<Srs, SetupError> {
    build_with(sink, chunk, fixed_base())
}

fn build_with(sink: Option<&dyn QuerySink>, chunk: usize, mul: &dyn FixedBaseMul) -> Result<Srs, SetupError> {
    let t = Trapdoor::from_seed(5);
    assemble_chunked(40, evaluations(3, 1), evaluations(50, 2), &t, PathBuf::from("generated://test"), mul, sink, chunk)
}

/// The CPU engine, counting its calls (one a chunk, G1 or G2), failing or panicking at the n-th.
#[derive(Default)]
struct Counting {
    calls: Mutex<usize>,
    called: Condvar,
    fail_at: Option<usize>,
    panic_at: Option<usize>,
}

impl Counting {
    fn enter(&self) -> Result<(), SetupError> {
        let n = {
            let mut calls = self.calls.lock().unwrap();
            *calls += 1;
            self.called.notify_all();
            *calls
        };
        if self.panic_at == Some(n) {
            panic!("the engine panicked at call {n}");
        }
        if self.fail_at == Some(n) {
            return Err(SetupError::Engine { engine: self.name(), message: "device lost".into() });
        }
        Ok(())
    }

    fn calls(&self) -> usize {
        *self.calls.lock().unwrap()
    }

    /// Whether the engine was called `n` times within `timeout`.
    fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        let calls = self.calls.lock().unwrap();
        let (calls, _) = self.called.wait_timeout_while(calls, timeout, |c| *c < n).unwrap();
        *calls >= n
    }
}

impl FixedBaseMul for Counting {
    fn g1(&self, scalars: &[Fr]) -> Result<Vec<G1Affine>, SetupError> {
        self.enter()?;
        fixed_base().g1(scalars)
    }
    fn g2(&self, scalars: &[Fr]) -> Result<Vec<G2Affine>, SetupError> {
        self.enter()?;
        fixed_base().g2(scalars)
    }
    fn name(&self) -> String {
        "counting cpu".into()
    }
}

#[derive(Default, Debug, PartialEq)]
struct Taken {
    h: Vec<G1Affine>,
    l: Vec<G1Affine>,
    a: Vec<G1Affine>,
    b_g1: Vec<G1Affine>,
    b_g2: Vec<G2Affine>,
}

/// Accepts (or not), collects every chunk, checks they arrive in order, and keeps what a
/// finished load handed over; `fail_at` makes the n-th G1 chunk fail.
struct Collector {
    accept: bool,
    fail_at: Option<usize>,
    begun: Mutex<Option<(u64, QueryLens)>>,
    finished: Mutex<Option<Taken>>,
}

impl Collector {
    fn new(accept: bool, fail_at: Option<usize>) -> Self {
        Collector { accept, fail_at, begun: Mutex::new(None), finished: Mutex::new(None) }
    }
}

struct CollectTaker<'a> {
    sink: &'a Collector,
    taken: Taken,
    g1_chunks: usize,
}

impl QuerySink for Collector {
    fn begin(&self, _path: &Path, id: u64, lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        *self.begun.lock().unwrap() = Some((id, *lens));
        self.accept.then(|| {
            Box::new(CollectTaker { sink: self, taken: Taken::default(), g1_chunks: 0 }) as Box<dyn QueryTaker>
        })
    }
}

impl QueryTaker for CollectTaker<'_> {
    fn take_g1(&mut self, query: G1Query, offset: usize, points: &[G1Affine]) -> Result<(), String> {
        self.g1_chunks += 1;
        if self.sink.fail_at == Some(self.g1_chunks) {
            return Err("device full".into());
        }
        let v = match query {
            G1Query::H => &mut self.taken.h,
            G1Query::L => &mut self.taken.l,
            G1Query::A => &mut self.taken.a,
            G1Query::BG1 => &mut self.taken.b_g1,
        };
        assert_eq!(v.len(), offset, "{query:?}: chunks in order, each once");
        assert!(!points.is_empty());
        v.extend_from_slice(points);
        Ok(())
    }
    fn take_b_g2(&mut self, offset: usize, points: &[G2Affine]) -> Result<(), String> {
        assert_eq!(self.taken.b_g2.len(), offset, "B_G2: chunks in order, each once");
        self.taken.b_g2.extend_from_slice(points);
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), String> {
        *self.sink.finished.lock().unwrap() = Some(self.taken);
        Ok(())
    }
}

#[test]
fn chunks_of_any_size_give_the_same_parameters() {
    let whole = build(None, usize::MAX).unwrap();
    assert_eq!(whole.query_lens(), QueryLens { h: 63, l: 50, a: 35, b_g1: 40, b_g2: 40 });
    for chunk in [1, 7, 32, 63, 64] {
        let s = build(None, chunk).unwrap();
        assert_eq!(
            (&s.h, &s.l, &s.a, &s.b_g1, &s.b_g2, &s.vk),
            (&whole.h, &whole.l, &whole.a, &whole.b_g1, &whole.b_g2, &whole.vk),
            "chunk {chunk}"
        );
        assert!(!s.points_released());
    }
}

#[test]
fn a_backend_that_accepts_gets_every_point_and_the_host_keeps_none() {
    let whole = build(None, usize::MAX).unwrap();
    let sink = Collector::new(true, None);
    let s = build(Some(&sink), 7).unwrap();
    let (id, lens) = sink.begun.lock().unwrap().expect("offered");
    assert_eq!((id, lens), (s.id, whole.query_lens()), "offered with this load's id and the final lengths");
    assert!(
        s.points_released()
            && s.h.is_empty()
            && s.l.is_empty()
            && s.a.is_empty()
            && s.b_g1.is_empty()
            && s.b_g2.is_empty()
    );
    assert_eq!(s.query_lens(), whole.query_lens());
    assert_eq!(s.vk, whole.vk);
    assert!(s.insecure);
    let taken = sink.finished.lock().unwrap().take().expect("finished");
    assert_eq!(
        taken,
        Taken {
            h: whole.h.clone(),
            l: whole.l.clone(),
            a: whole.a.clone(),
            b_g1: whole.b_g1.clone(),
            b_g2: whole.b_g2.clone()
        }
    );
}

#[test]
fn a_backend_that_declines_leaves_the_parameters_on_the_host() {
    let whole = build(None, usize::MAX).unwrap();
    let sink = Collector::new(false, None);
    let s = build(Some(&sink), 7).unwrap();
    assert!(sink.begun.lock().unwrap().is_some(), "offered");
    assert!(!s.points_released());
    assert_eq!((&s.h, &s.l, &s.b_g2), (&whole.h, &whole.l, &whole.b_g2));
    assert!(sink.finished.lock().unwrap().is_none());
}

#[test]
fn a_backend_that_fails_mid_way_fails_the_load_and_is_never_finished() {
    let sink = Collector::new(true, Some(5));
    let engine = Counting::default();
    let err = build_with(Some(&sink), 7, &engine).err().expect("the load fails");
    assert_eq!(err, SetupError::Backend("device full".into()));
    assert!(sink.finished.lock().unwrap().is_none(), "an unfinished taker is dropped, not finished");
    // The chunk it failed on, and at most the one made ahead of it: nothing more.
    assert!(engine.calls() <= 6, "{} chunks made for a load that failed at the 5th", engine.calls());
}

#[test]
fn an_engine_that_fails_mid_way_fails_the_load_and_the_taker_is_never_finished() {
    let sink = Collector::new(true, None);
    let engine = Counting { fail_at: Some(4), ..Default::default() };
    let err = build_with(Some(&sink), 7, &engine).err().expect("the load fails");
    assert_eq!(err, SetupError::Engine { engine: "counting cpu".into(), message: "device lost".into() });
    assert_eq!(engine.calls(), 4, "no chunk is made after the one that failed");
    assert!(sink.finished.lock().unwrap().is_none());
}

#[test]
fn an_engine_that_panics_mid_way_panics_the_load_instead_of_ending_it_short() {
    let sink = Collector::new(true, None);
    let engine = Counting { panic_at: Some(3), ..Default::default() };
    let load = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| build_with(Some(&sink), 7, &engine)));
    let panic = load.err().expect("the helper's panic reaches the caller");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("panicked at call 3"), "{message}");
    assert!(sink.finished.lock().unwrap().is_none());
}

/// The taker of the first chunk waits (up to 60 s) for the engine to be called again: with the
/// chunks made one ahead, the next chunk's multiplication starts while this one is taken.
/// Made one after the other, the engine would wait for this taker, and the wait time out.
struct Probe<'e> {
    engine: &'e Counting,
    next_made_meanwhile: Mutex<Option<bool>>,
}

struct ProbeTaker<'p, 'e> {
    probe: &'p Probe<'e>,
}

impl QuerySink for Probe<'_> {
    fn begin(&self, _path: &Path, _id: u64, _lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        Some(Box::new(ProbeTaker { probe: self }))
    }
}

impl QueryTaker for ProbeTaker<'_, '_> {
    fn take_g1(&mut self, _query: G1Query, _offset: usize, _points: &[G1Affine]) -> Result<(), String> {
        let mut seen = self.probe.next_made_meanwhile.lock().unwrap();
        if seen.is_none() {
            *seen = Some(self.probe.engine.wait_for(2, Duration::from_secs(60)));
        }
        Ok(())
    }
    fn take_b_g2(&mut self, _offset: usize, _points: &[G2Affine]) -> Result<(), String> {
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}

#[test]
fn the_next_chunk_is_made_while_the_backend_takes_this_one() {
    let engine = Counting::default();
    let probe = Probe { engine: &engine, next_made_meanwhile: Mutex::new(None) };
    build_with(Some(&probe), 7, &engine).unwrap();
    assert_eq!(*probe.next_made_meanwhile.lock().unwrap(), Some(true), "the second chunk waited for the first's taker");
}

#[test]
fn an_unconstrained_variable_is_named_across_chunks() {
    let t = Trapdoor::from_seed(5);
    let mut aux = evaluations(50, 2);
    aux.u[20] = Fr::ZERO;
    aux.v[20] = Fr::ZERO;
    aux.w[20] = Fr::ZERO;
    let err =
        assemble_chunked(40, evaluations(3, 1), aux, &t, PathBuf::from("generated://test"), fixed_base(), None, 7)
            .err()
            .expect("refused");
    assert_eq!(err, SetupError::UnconstrainedVariable(20));
}
