//! The generated setup's five queries, produced in chunks (of [`CHUNK`] points in production,
//! smaller in tests, so that chunk boundaries are exercised) and each chunk
//! handed to its destination at once: the vectors of the [`Srs`] being built, or a backend's
//! [`QueryTaker`] (see [`crate::srs_sink`]). A chunk's scalars and points are the only
//! per-query memory (L's scalars are made in place of the w evaluations), so with a taker the
//! host holds the aux evaluations plus two chunks, never a whole query.
//!
//! The chunks are made one ahead ([`one_ahead`]): a helper thread makes the next chunk's
//! scalars and points while this thread hands the last one to its destination. With a device
//! on both sides, its multiplications and copy back then overlap the upload of the chunk
//! before into its query, where each waited for the other.

use std::sync::mpsc;

use blstrs::{G1Affine, G2Affine, Scalar as Fr};
use ff::Field;
use rayon::prelude::*;

use super::{Evaluations, FixedBaseMul, SetupError, Trapdoor};
use crate::srs::{QueryLens, Srs};
use crate::srs_sink::{G1Query, QueryTaker};

/// Points per chunk: 1.5 GiB of G1 (3 GiB of G2) points beside 0.5 GiB of scalars.
pub(crate) const CHUNK: usize = 1 << 24;

/// Where the chunks go: the vectors of the [`Srs`] being built (reserved at their final
/// lengths, so no regrowing copies), or a backend's taker.
pub(crate) enum Destination<'a> {
    Host(&'a mut Srs),
    Taker(Box<dyn QueryTaker + 'a>),
}

impl<'a> Destination<'a> {
    pub fn host(srs: &'a mut Srs, lens: &QueryLens) -> Self {
        srs.h.reserve_exact(lens.h);
        srs.l.reserve_exact(lens.l);
        srs.a.reserve_exact(lens.a);
        srs.b_g1.reserve_exact(lens.b_g1);
        srs.b_g2.reserve_exact(lens.b_g2);
        Destination::Host(srs)
    }

    fn g1(&mut self, query: G1Query, offset: usize, points: Vec<G1Affine>) -> Result<(), SetupError> {
        match self {
            Destination::Host(srs) => {
                let v = match query {
                    G1Query::H => &mut srs.h,
                    G1Query::L => &mut srs.l,
                    G1Query::A => &mut srs.a,
                    G1Query::BG1 => &mut srs.b_g1,
                };
                debug_assert_eq!(v.len(), offset, "chunks arrive in order");
                v.extend_from_slice(&points);
                Ok(())
            }
            Destination::Taker(t) => t.take_g1(query, offset, &points).map_err(SetupError::Backend),
        }
    }

    /// Every chunk was given: a taker finishes. Whether the backend took the queries.
    pub fn finish(self) -> Result<bool, SetupError> {
        match self {
            Destination::Host(_) => Ok(false),
            Destination::Taker(taker) => taker.finish().map(|()| true).map_err(SetupError::Backend),
        }
    }

    fn b_g2(&mut self, offset: usize, points: Vec<G2Affine>) -> Result<(), SetupError> {
        match self {
            Destination::Host(srs) => {
                debug_assert_eq!(srs.b_g2.len(), offset, "chunks arrive in order");
                srs.b_g2.extend_from_slice(&points);
                Ok(())
            }
            Destination::Taker(t) => t.take_b_g2(offset, &points).map_err(SetupError::Backend),
        }
    }

    fn take(&mut self, chunk: Chunk) -> Result<(), SetupError> {
        match chunk {
            Chunk::G1(query, offset, points) => self.g1(query, offset, points),
            Chunk::BG2(offset, points) => self.b_g2(offset, points),
        }
    }
}

/// One chunk of a query's points, from its offset in the query.
enum Chunk {
    G1(G1Query, usize, Vec<G1Affine>),
    BG2(usize, Vec<G2Affine>),
}

/// What a producer hands on: a chunk, or why none could be made. `false`: stop, nothing more
/// is taken (an error on either side).
type HandOn<'s> = &'s mut dyn FnMut(Result<Chunk, SetupError>) -> bool;

/// Runs `produce` on a helper thread, one chunk ahead of this thread, which hands each chunk
/// to `dest` in the order made: the helper makes chunk k + 1 while `dest` takes chunk k, and
/// waits for `dest` to be ready for it (a rendezvous channel), so at most two chunks are held.
/// The first error on either side ends both and is returned; a panic in `produce` is resumed
/// here. The helper's parallel work goes to the global rayon pool (it is not one of a pool's
/// threads): setups are generated for tests and benchmarks only.
fn one_ahead(
    dest: &mut Destination<'_>,
    engine: &dyn FixedBaseMul,
    produce: impl FnOnce(HandOn<'_>) + Send,
) -> Result<(), SetupError> {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<Result<Chunk, SetupError>>(0);
        let helper = std::thread::Builder::new()
            .name("cuzk-setup-ahead".into())
            .spawn_scoped(scope, move || {
                let mut send = |made: Result<Chunk, SetupError>| {
                    let failed = made.is_err();
                    tx.send(made).is_ok() && !failed
                };
                produce(&mut send);
            })
            .map_err(|e| SetupError::Engine {
                engine: engine.name(),
                message: format!("could not start the setup's helper thread: {e}"),
            })?;
        let mut taken = Ok(());
        for made in &rx {
            if let Err(e) = made.and_then(|chunk| dest.take(chunk)) {
                taken = Err(e);
                break;
            }
        }
        // A helper waiting to hand on its next chunk gets an error and stops.
        drop(rx);
        if let Err(panic) = helper.join() {
            std::panic::resume_unwind(panic);
        }
        taken
    })
}

/// Non-zero entries of `inputs ++ aux`: how many there are (the A and B query lengths).
pub(crate) fn count_nonzero(inputs: &[Fr], aux: &[Fr]) -> usize {
    inputs.par_iter().chain(aux.par_iter()).filter(|s| !bool::from(s.is_zero())).count()
}

/// H: τ^i · first for i < n, chunk by chunk.
pub(crate) fn h_query(
    chunk: usize,
    tau: Fr,
    first: Fr,
    n: usize,
    mul: &dyn FixedBaseMul,
    dest: &mut Destination<'_>,
) -> Result<(), SetupError> {
    one_ahead(dest, mul, |send| {
        for offset in (0..n).step_by(chunk.max(1)) {
            let len = chunk.min(n - offset);
            let scalars = super::powers(tau, first * tau.pow_vartime([offset as u64]), len);
            if !send(mul.g1(&scalars).map(|points| Chunk::G1(G1Query::H, offset, points))) {
                return;
            }
        }
    })
}

/// The non-zero scalars of `inputs ++ aux`, in order, a chunk at a time.
fn nonzero_chunks<'s>(chunk: usize, inputs: &'s [Fr], aux: &'s [Fr]) -> impl Iterator<Item = Vec<Fr>> + 's {
    let mut all = inputs.iter().chain(aux).filter(|s| !bool::from(s.is_zero())).copied().peekable();
    std::iter::from_fn(move || {
        all.peek()?;
        Some(all.by_ref().take(chunk).collect())
    })
}

/// A (from the u evaluations) and B in G1 and G2 (from v), infinity points left out. B's
/// G1 and G2 chunks alternate.
pub(crate) fn a_and_b_queries(
    chunk: usize,
    inputs: &Evaluations,
    aux: &Evaluations,
    mul: &dyn FixedBaseMul,
    dest: &mut Destination<'_>,
) -> Result<(), SetupError> {
    one_ahead(dest, mul, |send| {
        let mut offset = 0;
        for scalars in nonzero_chunks(chunk, &inputs.u, &aux.u) {
            if !send(mul.g1(&scalars).map(|points| Chunk::G1(G1Query::A, offset, points))) {
                return;
            }
            offset += scalars.len();
        }
        let mut offset = 0;
        for scalars in nonzero_chunks(chunk, &inputs.v, &aux.v) {
            if !send(mul.g1(&scalars).map(|points| Chunk::G1(G1Query::BG1, offset, points)))
                || !send(mul.g2(&scalars).map(|points| Chunk::BG2(offset, points)))
            {
                return;
            }
            offset += scalars.len();
        }
    })
}

/// L: (β·u + α·v + w)/δ for every aux variable, none of which may be zero. The scalars are
/// made in place of w, and u and v are freed before any point is made.
pub(crate) fn l_query(
    chunk: usize,
    aux: Evaluations,
    t: &Trapdoor,
    delta_inv: Fr,
    mul: &dyn FixedBaseMul,
    dest: &mut Destination<'_>,
) -> Result<(), SetupError> {
    let Evaluations { u, v, w: mut scalars } = aux;
    scalars
        .par_iter_mut()
        .zip(u.par_iter().zip(v.par_iter()))
        .for_each(|(w, (u, v))| *w = (t.beta * u + t.alpha * v + *w) * delta_inv);
    drop((u, v));
    if let Some(i) = scalars.iter().position(|s| bool::from(s.is_zero())) {
        return Err(SetupError::UnconstrainedVariable(i));
    }
    let scalars = &scalars;
    one_ahead(dest, mul, |send| {
        for (c, part) in scalars.chunks(chunk).enumerate() {
            if !send(mul.g1(part).map(|points| Chunk::G1(G1Query::L, c * chunk, points))) {
                return;
            }
        }
    })
}
