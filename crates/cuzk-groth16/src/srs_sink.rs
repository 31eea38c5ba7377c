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
//! Loaders that offer their queries: the generated setup ([`crate::setup::assemble`]) and
//! `.params` files ([`crate::srs_stream`]). A file's points must also pass the subgroup check
//! (once per file version): a taker that can run it where the points now are, on a device,
//! says so ([`QueryTaker::checks_subgroup`]) and the loader asks it chunk by chunk; otherwise
//! the loader checks on the CPU before handing a chunk over.

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

    /// Whether [`Self::first_outside_subgroup_g1`] and [`Self::first_outside_subgroup_b_g2`]
    /// work: the taker checks subgroup membership of points it was given where it keeps them.
    fn checks_subgroup(&self) -> bool {
        false
    }

    /// The index of the first of points `[offset, offset + n)` of `query`, already taken, that
    /// is not in the prime-order subgroup (None: all are).
    fn first_outside_subgroup_g1(&mut self, query: G1Query, offset: usize, n: usize) -> Result<Option<usize>, String> {
        let _ = (query, offset, n);
        Err("this backend does not check subgroup membership".into())
    }

    /// The same for B in G2.
    fn first_outside_subgroup_b_g2(&mut self, offset: usize, n: usize) -> Result<Option<usize>, String> {
        let _ = (offset, n);
        Err("this backend does not check subgroup membership".into())
    }
}

/// Offered every load of parameters before any of their points exists.
pub trait QuerySink: Send + Sync {
    /// `Some`: the backend takes every query of the parameters loaded from `path` (this load's
    /// [`Srs::id`](crate::Srs::id) is `id`), and the host keeps none; `None`: the loader keeps
    /// them on the host as it always did.
    fn begin(&self, path: &Path, id: u64, lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>>;
}

/// A sink that keeps every query on the host, as it arrives: the reference that streamed
/// loads are compared against (tests, and `cuzk-bench` checks), and a way to read a file
/// through the streaming reader without a device.
#[derive(Default)]
pub struct Collect {
    /// What the last finished load handed over, in query order.
    pub taken: std::sync::Mutex<Option<Collected>>,
}

/// The five queries as a [`Collect`] received them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collected {
    pub h: Vec<G1Affine>,
    pub l: Vec<G1Affine>,
    pub a: Vec<G1Affine>,
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
}

struct CollectTaker<'a> {
    sink: &'a Collect,
    taken: Collected,
}

impl QuerySink for Collect {
    fn begin(&self, _path: &Path, _id: u64, _lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        Some(Box::new(CollectTaker { sink: self, taken: Collected::default() }))
    }
}

impl QueryTaker for CollectTaker<'_> {
    fn take_g1(&mut self, query: G1Query, offset: usize, points: &[G1Affine]) -> Result<(), String> {
        let v = match query {
            G1Query::H => &mut self.taken.h,
            G1Query::L => &mut self.taken.l,
            G1Query::A => &mut self.taken.a,
            G1Query::BG1 => &mut self.taken.b_g1,
        };
        if v.len() != offset {
            return Err(format!("{query:?}: chunk at {offset}, expected at {}", v.len()));
        }
        v.extend_from_slice(points);
        Ok(())
    }

    fn take_b_g2(&mut self, offset: usize, points: &[G2Affine]) -> Result<(), String> {
        if self.taken.b_g2.len() != offset {
            return Err(format!("B_G2: chunk at {offset}, expected at {}", self.taken.b_g2.len()));
        }
        self.taken.b_g2.extend_from_slice(points);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<(), String> {
        *self.sink.taken.lock().unwrap_or_else(|e| e.into_inner()) = Some(self.taken);
        Ok(())
    }
}
