//! Handing a proving key's queries to a backend chunk by chunk, while a loader produces them,
//! so that the host never holds the whole key.
//!
//! Why: a 32 GiB PoRep key is 44 GiB of points. A backend that keeps every point on its
//! devices used to receive them ([`crate::ProverBackend::adopt_srs`]) only once the whole key
//! was in host memory, and that moment set the daemon's peak RSS (56 GiB for porep-32g's
//! generated setup, against 3 GiB while proving). With a sink, the loader first offers the
//! key's shape ([`QuerySink::begin`]); a backend that accepts receives every query, in order
//! and in chunks, and the loader keeps no point: the [`Srs`](crate::Srs) it returns has its
//! points released ([`Srs::released`](crate::Srs::released)) from the start.
//!
//! All or nothing: the backend decides up front, from the lengths, so a key is never half on
//! the host. A `take` or `finish` that fails ends the load with an error (the chunks already
//! handed over are gone from the host, so nothing can fall back); a taker dropped unfinished
//! discards what it was given.
//!
//! Loaders that offer their queries: the generated setup ([`crate::setup::assemble`]).

use std::path::Path;

use blstrs::{G1Affine, G2Affine};

use crate::srs::QueryLens;

/// The G1 queries of a proving key (B in G2 has its own call).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum G1Query {
    H,
    L,
    A,
    BG1,
}

/// A backend's side of one streamed load.
pub trait QueryTaker {
    /// `points` of `query` from index `offset`. The chunks of one query arrive in order and
    /// cover it exactly once (queries may interleave: B's G1 and G2 chunks alternate).
    fn take_g1(&mut self, query: G1Query, offset: usize, points: &[G1Affine]) -> Result<(), String>;
    /// The same for B in G2.
    fn take_b_g2(&mut self, offset: usize, points: &[G2Affine]) -> Result<(), String>;
    /// Every query was handed over whole: the backend holds the key from now on.
    fn finish(self: Box<Self>) -> Result<(), String>;
}

/// Offered every load of parameters before any of their points exists.
pub trait QuerySink: Send + Sync {
    /// `Some`: the backend takes every query of the parameters loaded from `path` (this load's
    /// [`Srs::id`](crate::Srs::id) is `id`), and the host keeps none; `None`: the loader keeps
    /// them on the host as it always did.
    fn begin(&self, path: &Path, id: u64, lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>>;
}
