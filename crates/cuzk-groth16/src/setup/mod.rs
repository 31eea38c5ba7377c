//! A fast, deterministic, **INSECURE** Groth16 setup: the parameters of any circuit from the
//! evaluations of its QAP polynomials at a secret point τ — which here is not secret at all.
//!
//! The trapdoor (τ, α, β, γ, δ) is drawn from a seed anyone can reproduce, so whoever knows
//! the seed can forge proofs. What the parameters are good for: proofs made with them are
//! real Groth16 proofs that filecoin-proofs' verifiers check against the generated verifying
//! key, at any circuit size — the only way to see a 32 GiB proof verify without the
//! ceremony's 47 GiB file. Every [`Srs`] built here has [`Srs::insecure`] set.
//!
//! The layout is bellperson's generator's, query for query:
//!
//! * `h[i]    = τ^i · t(τ)/δ · G1`, i < n − 1, with t(X) = X^n − 1 over the FFT domain of size n;
//! * `ic[i]   = (β·uᵢ(τ) + α·vᵢ(τ) + wᵢ(τ))/γ · G1` for every public input (ONE first);
//! * `l[i]    = (β·uᵢ(τ) + α·vᵢ(τ) + wᵢ(τ))/δ · G1` for every aux variable (none may be zero);
//! * `a`      = uᵢ(τ)·G1, `b_g1` = vᵢ(τ)·G1, `b_g2` = vᵢ(τ)·G2 over inputs then aux, with
//!   the points at infinity (variables absent from A, resp. B) left out;
//! * the verifying key α·G1, β·G1, β·G2, γ·G2, δ·G1, δ·G2 and `ic`.
//!
//! uᵢ(τ) = Σⱼ A[j][i]·Lⱼ(τ) with Lⱼ the Lagrange basis of the domain ([`lagrange_at`]); the
//! caller computes those sums from its matrices (`cuzk_pce::setup` does, from PCE's CSR form).

pub mod fixed_base;
mod queries;

use std::path::PathBuf;
use std::time::Instant;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use self::fixed_base::{FixedBase, G1, G2};
use self::queries::Destination;
use crate::ntt::Domain;
use crate::srs::{QueryLens, Srs, VerifyingKey};
use crate::srs_sink::QuerySink;

/// Window width of the fixed-base tables, G1 and G2: 22 additions per multiplication, tables
/// of 4.3 MB (G1) and 8.6 MB (G2). On the 2-core dev box, 2^16 G1 multiplications took
/// 15.1 / 12.5 / 10.3 / 9.9 µs per multiplication and thread at windows 8 / 10 / 12 / 14
/// (14 needs a 0.4 s table); G2 at 8 / 10 / 12: 32 / 30 / 23 µs.
pub const G1_WINDOW: usize = 12;
pub const G2_WINDOW: usize = 12;

/// The toxic waste. Known to anyone with the seed: that is what makes these parameters
/// insecure, and what makes them reproducible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trapdoor {
    pub tau: Fr,
    pub alpha: Fr,
    pub beta: Fr,
    pub gamma: Fr,
    pub delta: Fr,
}

impl Trapdoor {
    /// Non-zero values from a ChaCha20 stream of `seed` (its own stream, so no other use of
    /// the same seed in this project draws the same values).
    pub fn from_seed(seed: u64) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        rng.set_stream(0x6375_7a6b_7365_7475); // "cuzksetu"
        let mut draw = || loop {
            let x = Fr::random(&mut rng);
            if !bool::from(x.is_zero()) {
                return x;
            }
        };
        Trapdoor { tau: draw(), alpha: draw(), beta: draw(), gamma: draw(), delta: draw() }
    }
}

/// uᵢ(τ), vᵢ(τ), wᵢ(τ) for one index space (inputs or aux), i.e. the columns of A, B, C
/// weighted by the Lagrange basis at τ.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluations {
    pub u: Vec<Fr>,
    pub v: Vec<Fr>,
    pub w: Vec<Fr>,
}

impl Evaluations {
    pub fn zeros(n: usize) -> Self {
        Evaluations { u: vec![Fr::ZERO; n], v: vec![Fr::ZERO; n], w: vec![Fr::ZERO; n] }
    }
}

/// Who computes the fixed-base multiplications s·G: the CPU's window tables ([`CpuFixedBase`]),
/// or a device (cuzk-cuda's implementation, with the same tables).
pub trait FixedBaseMul: Send + Sync {
    fn g1(&self, scalars: &[Fr]) -> Result<Vec<G1Affine>, SetupError>;
    fn g2(&self, scalars: &[Fr]) -> Result<Vec<G2Affine>, SetupError>;
    /// For logs: "cpu", "cuda device 0", …
    fn name(&self) -> String;
}

/// Fixed-base multiplication on all CPU cores.
pub struct CpuFixedBase {
    g1: FixedBase<G1>,
    g2: FixedBase<G2>,
}

impl CpuFixedBase {
    pub fn new() -> Self {
        CpuFixedBase { g1: FixedBase::new(G1_WINDOW), g2: FixedBase::new(G2_WINDOW) }
    }
}

impl Default for CpuFixedBase {
    fn default() -> Self {
        Self::new()
    }
}

impl FixedBaseMul for CpuFixedBase {
    fn g1(&self, scalars: &[Fr]) -> Result<Vec<G1Affine>, SetupError> {
        Ok(self.g1.mul_many(scalars))
    }
    fn g2(&self, scalars: &[Fr]) -> Result<Vec<G2Affine>, SetupError> {
        Ok(self.g2.mul_many(scalars))
    }
    fn name(&self) -> String {
        "cpu".into()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SetupError {
    #[error("{0} constraints exceed the largest FFT domain of the field")]
    DomainTooLarge(usize),
    #[error("τ lies in the evaluation domain; choose another seed")]
    TauInDomain,
    #[error("aux variable {0} occurs in no constraint (its L point would be at infinity)")]
    UnconstrainedVariable(usize),
    #[error("input and aux evaluations have different lengths within one set")]
    Lengths,
    #[error("fixed-base multiplication on {engine} failed: {message}")]
    Engine { engine: String, message: String },
    #[error("the prover backend could not take the parameters while they were made: {0}")]
    Backend(String),
}

/// The FFT domain a circuit of `num_constraints` rows (input rows included) is proved over.
pub fn domain_for(num_constraints: usize) -> Result<Domain, SetupError> {
    Domain::for_size(num_constraints).ok_or(SetupError::DomainTooLarge(num_constraints))
}

/// Lⱼ(τ) for j < `rows`: the Lagrange basis of `domain` at τ, Lⱼ(τ) = (τⁿ − 1)/n · ωʲ/(τ − ωʲ)
/// (what bellperson gets from an inverse FFT of the powers of τ, in O(rows) here).
pub fn lagrange_at(domain: &Domain, tau: Fr, rows: usize) -> Result<Vec<Fr>, SetupError> {
    let t_tau = tau.pow_vartime([domain.n as u64]) - Fr::ONE;
    if bool::from(t_tau.is_zero()) {
        return Err(SetupError::TauInDomain);
    }
    let scale = t_tau * domain.n_inv;
    const CHUNK: usize = 1 << 14;
    let mut out = vec![Fr::ZERO; rows];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let mut w = domain.omega.pow_vartime([(c * CHUNK) as u64]);
        let mut powers = Vec::with_capacity(chunk.len());
        for x in chunk.iter_mut() {
            powers.push(w);
            *x = tau - w; // non-zero: τ is not a domain point
            w *= domain.omega;
        }
        fixed_base::batch_invert(chunk, &mut Vec::with_capacity(powers.len()));
        for (x, w) in chunk.iter_mut().zip(powers) {
            *x *= w * scale;
        }
    });
    Ok(out)
}

/// (β·u + α·v + w)·scale, the numerators of IC and L.
fn combined(e: &Evaluations, t: &Trapdoor, scale: Fr) -> Vec<Fr> {
    let mut out = Vec::new();
    (&e.u, &e.v, &e.w)
        .into_par_iter()
        .map(|(u, v, w)| (t.beta * u + t.alpha * v + w) * scale)
        .collect_into_vec(&mut out);
    out
}

/// The verifying key alone, from the inputs' evaluations (cheap: no aux variable is needed).
pub fn verifying_key(inputs: &Evaluations, t: &Trapdoor) -> VerifyingKey {
    let gamma_inv = t.gamma.invert().expect("γ is non-zero");
    let ic_scalars = combined(inputs, t, gamma_inv);
    let g1 = |s: Fr| (G1Projective::generator() * s).to_affine();
    let g2 = |s: Fr| (G2Projective::generator() * s).to_affine();
    let mut ic = vec![G1Affine::identity(); ic_scalars.len()];
    G1Projective::batch_normalize(
        &ic_scalars.iter().map(|s| G1Projective::generator() * s).collect::<Vec<_>>(),
        &mut ic,
    );
    VerifyingKey {
        alpha_g1: g1(t.alpha),
        beta_g1: g1(t.beta),
        beta_g2: g2(t.beta),
        gamma_g2: g2(t.gamma),
        delta_g1: g1(t.delta),
        delta_g2: g2(t.delta),
        ic,
    }
}

/// Build the full parameters. `inputs`/`aux` are the evaluations of every input (ONE first)
/// and every aux variable; `num_constraints` counts A's rows, input rows included; `path`
/// names the result in logs and status. Progress goes to `tracing`.
///
/// The queries are offered to `sink` first (see [`crate::srs_sink`]): when it accepts, every
/// chunk of points goes to the backend as soon as it is computed and the returned parameters
/// hold only the verifying key and the lengths. The points are the same either way.
pub fn assemble(
    num_constraints: usize,
    inputs: Evaluations,
    aux: Evaluations,
    t: &Trapdoor,
    path: PathBuf,
    mul: &dyn FixedBaseMul,
    sink: Option<&dyn QuerySink>,
) -> Result<Srs, SetupError> {
    assemble_chunked(num_constraints, inputs, aux, t, path, mul, sink, queries::CHUNK)
}

#[allow(clippy::too_many_arguments)]
fn assemble_chunked(
    num_constraints: usize,
    inputs: Evaluations,
    aux: Evaluations,
    t: &Trapdoor,
    path: PathBuf,
    mul: &dyn FixedBaseMul,
    sink: Option<&dyn QuerySink>,
    chunk: usize,
) -> Result<Srs, SetupError> {
    for e in [&inputs, &aux] {
        if e.u.len() != e.v.len() || e.u.len() != e.w.len() {
            return Err(SetupError::Lengths);
        }
    }
    let domain = domain_for(num_constraints)?;
    let delta_inv = t.delta.invert().expect("δ is non-zero");
    let start = Instant::now();
    let vk = verifying_key(&inputs, t);
    let b_len = queries::count_nonzero(&inputs.v, &aux.v);
    let lens = QueryLens {
        h: domain.n - 1,
        l: aux.u.len(),
        a: queries::count_nonzero(&inputs.u, &aux.u),
        b_g1: b_len,
        b_g2: b_len,
    };
    let mut srs = Srs {
        vk,
        h: Vec::new(),
        l: Vec::new(),
        a: Vec::new(),
        b_g1: Vec::new(),
        b_g2: Vec::new(),
        path,
        synthetic: false,
        insecure: true,
        id: Srs::next_id(),
        released: None,
    };
    let taker = sink.and_then(|s| s.begin(&srs.path, srs.id, &lens));
    let streamed = taker.is_some();
    let mut dest = match taker {
        Some(taker) => Destination::Taker(taker),
        None => Destination::host(&mut srs, &lens),
    };

    // h: τ^i · t(τ)/δ.
    let t_tau = t.tau.pow_vartime([domain.n as u64]) - Fr::ONE;
    queries::h_query(chunk, t.tau, t_tau * delta_inv, lens.h, mul, &mut dest)?;
    tracing::info!(points = lens.h, secs = start.elapsed().as_secs_f64(), engine = %mul.name(), streamed, "setup: H query");

    // A and B over inputs then aux, points at infinity left out.
    queries::a_and_b_queries(chunk, &inputs, &aux, mul, &mut dest)?;
    tracing::info!(a = lens.a, b = lens.b_g1, secs = start.elapsed().as_secs_f64(), "setup: A and B queries");

    queries::l_query(chunk, aux, t, delta_inv, mul, &mut dest)?;
    tracing::info!(points = lens.l, secs = start.elapsed().as_secs_f64(), "setup: L query, done");
    if dest.finish()? {
        srs.released = Some(lens);
    }
    debug_assert!(srs.b_g2.iter().all(|p: &G2Affine| !bool::from(p.is_identity())));
    Ok(srs)
}

/// first · base^i for i < n, in parallel chunks.
pub(crate) fn powers(base: Fr, first: Fr, n: usize) -> Vec<Fr> {
    const CHUNK: usize = 1 << 14;
    let mut out = vec![Fr::ZERO; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, chunk)| {
        let mut x = first * base.pow_vartime([(c * CHUNK) as u64]);
        for o in chunk {
            *o = x;
            x *= base;
        }
    });
    out
}

#[cfg(test)]
pub(crate) mod tests;
