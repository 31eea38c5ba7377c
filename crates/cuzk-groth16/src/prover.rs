//! Groth16 proving from a [`ProvingAssignment`]: the shape checks every prover shares, the
//! quotient and the assembly of a proof from its multi-scalar multiplications, and the CPU
//! prover (rayon NTTs + blst Pippenger MSMs).
//!
//! With r, s random:
//!   A  = α + Σ wᵢ·Aᵢ + r·δ                       (G1; inputs all, aux by A-density)
//!   B  = β + Σ wᵢ·Bᵢ + s·δ                       (G2, and the same in G1 for C)
//!   C  = Σ hᵢ·Hᵢ + Σ aux·Lᵢ + s·A + r·B_G1 − r·s·δ
//! where h are the coefficients of (a(x)·b(x) − c(x)) / (xⁿ − 1).

use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::Curve;
use rand_core::RngCore;
use rayon::prelude::*;

use crate::assignment::ProvingAssignment;
use crate::msm::{dense_scalars, msm_g1, msm_g2};
use crate::ntt::Domain;
use crate::proof::Proof;
use crate::srs::Srs;

/// The per-proof randomness (r, s). Fresh and secret for every proof.
#[derive(Clone, Copy, Debug)]
pub struct Randomness {
    pub r: Fr,
    pub s: Fr,
}

impl Randomness {
    pub fn random(rng: &mut impl RngCore) -> Self {
        Randomness { r: Fr::random(&mut *rng), s: Fr::random(&mut *rng) }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("assignment does not fit these parameters: {0} (wrong parameter file for this circuit?)")]
    ShapeMismatch(String),
    #[error("the constraint system is too large for an FFT over this field ({0} constraints)")]
    TooLarge(usize),
    #[error("backend {backend} failed: {message}")]
    Backend { backend: String, message: String },
}

/// Where the time of one CPU proof went, phase by phase.
#[derive(Clone, Debug, Default)]
pub struct CpuTimings {
    /// The three NTT round trips that give h.
    pub ntt: Duration,
    pub msm_h: Duration,
    pub msm_l: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
    pub total: Duration,
}

/// The sizes of an assignment as the parameters must match them.
pub struct Shape {
    pub domain: Domain,
    pub num_inputs: usize,
    pub a_aux: usize,
    pub b_inputs: usize,
    pub b_aux: usize,
}

/// Check that `assignment` and `srs` belong together; every backend calls this first, so a
/// parameter file for the wrong circuit is an error, never a garbage proof.
pub fn check_shape(srs: &Srs, w: &ProvingAssignment) -> Result<Shape, ProveError> {
    let m = w.a.len();
    if w.b.len() != m || w.c.len() != m {
        return Err(ProveError::ShapeMismatch("a, b, c differ in length".into()));
    }
    check_sizes(
        srs,
        m,
        w.input_assignment.len(),
        w.aux_assignment.len(),
        w.a_aux_density.count_ones(),
        w.b_input_density.count_ones(),
        w.b_aux_density.count_ones(),
    )
}

/// The same check from sizes alone, for backends that compute a, b, c themselves (from a
/// witness and pre-compiled matrices): `m` constraints (input rows included), the witness
/// lengths and the three density counts.
pub fn check_sizes(
    srs: &Srs,
    m: usize,
    num_inputs: usize,
    num_aux: usize,
    a_aux: usize,
    b_inputs: usize,
    b_aux: usize,
) -> Result<Shape, ProveError> {
    let domain = Domain::for_size(m).ok_or(ProveError::TooLarge(m))?;
    let mismatch = |what: &str, want: usize, have: usize| {
        Err(ProveError::ShapeMismatch(format!("{what}: circuit needs {want}, parameters have {have}")))
    };
    let shape = Shape { num_inputs, a_aux, b_inputs, b_aux, domain };
    let q = srs.query_lens();
    if q.h != shape.domain.n - 1 {
        return mismatch("H points (domain size - 1)", shape.domain.n - 1, q.h);
    }
    if srs.vk.ic.len() != shape.num_inputs {
        return mismatch("public inputs (IC points)", shape.num_inputs, srs.vk.ic.len());
    }
    if q.l != num_aux {
        return mismatch("L points (aux variables)", num_aux, q.l);
    }
    if q.a != shape.num_inputs + shape.a_aux {
        return mismatch("A points", shape.num_inputs + shape.a_aux, q.a);
    }
    if q.b_g1 != shape.b_inputs + shape.b_aux {
        return mismatch("B points", shape.b_inputs + shape.b_aux, q.b_g1);
    }
    if q.b_g2 != q.b_g1 {
        return mismatch("B points in G2", q.b_g1, q.b_g2);
    }
    Ok(shape)
}

/// Coefficients h_0..h_{n-2} of (a·b − c)/Z for evaluations a, b, c on the domain.
/// Consumes the three vectors (they are the largest buffers of a proof).
pub fn quotient_coefficients(domain: &Domain, mut a: Vec<Fr>, mut b: Vec<Fr>, mut c: Vec<Fr>) -> Vec<Fr> {
    for v in [&mut a, &mut b, &mut c] {
        v.resize(domain.n, Fr::ZERO);
    }
    let to_coset = |v: &mut Vec<Fr>| {
        domain.intt(v);
        domain.coset_ntt(v);
    };
    rayon::join(|| to_coset(&mut a), || rayon::join(|| to_coset(&mut b), || to_coset(&mut c)));
    let z_inv = domain.vanishing_on_coset_inv();
    a.par_iter_mut().zip(b.par_iter()).zip(c.par_iter()).for_each(|((x, y), z)| {
        *x = (*x * y - z) * z_inv;
    });
    drop((b, c));
    domain.coset_intt(&mut a);
    // deg(a·b − c) ≤ 2n − 2, so h has degree ≤ n − 2: the top coefficient is zero.
    a.truncate(domain.n - 1);
    a
}

/// Assemble the proof from the MSM results.
pub fn assemble(srs: &Srs, rs: Randomness, sums: MsmResults) -> Proof {
    let vk = &srs.vk;
    let delta_g1 = G1Projective::from(vk.delta_g1);
    let a = G1Projective::from(vk.alpha_g1) + sums.a + delta_g1 * rs.r;
    let b_g2 = G2Projective::from(vk.beta_g2) + sums.b_g2 + G2Projective::from(vk.delta_g2) * rs.s;
    let b_g1 = G1Projective::from(vk.beta_g1) + sums.b_g1 + delta_g1 * rs.s;
    let c = sums.h + sums.l + a * rs.s + b_g1 * rs.r - delta_g1 * (rs.r * rs.s);
    Proof { a: a.to_affine(), b: b_g2.to_affine(), c: c.to_affine() }
}

/// The five multi-scalar multiplication results a proof is assembled from.
pub struct MsmResults {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// The CPU prover. Uses the rayon pool for NTTs and blst's pool for MSMs.
#[derive(Clone, Debug, Default)]
pub struct CpuProver;

impl CpuProver {
    /// Prove `w` with the points of `srs` held on the host.
    pub fn prove(&self, srs: &Srs, w: ProvingAssignment, rs: Randomness) -> Result<(Proof, CpuTimings), ProveError> {
        let start = Instant::now();
        if srs.points_released() {
            return Err(ProveError::Backend {
                backend: "cpu".into(),
                message: format!(
                    "the host copy of {} was released (the GPUs hold it); the CPU cannot prove with it",
                    srs.path.display()
                ),
            });
        }
        let shape = check_shape(srs, &w)?;
        let mut t = CpuTimings::default();
        let ProvingAssignment {
            a_aux_density,
            b_input_density,
            b_aux_density,
            a,
            b,
            c,
            input_assignment,
            aux_assignment,
        } = w;

        let timed = |f: &mut dyn FnMut() -> G1Projective, slot: &mut Duration| {
            let s = Instant::now();
            let r = f();
            *slot = s.elapsed();
            r
        };

        let s0 = Instant::now();
        let h_coeffs = quotient_coefficients(&shape.domain, a, b, c);
        t.ntt = s0.elapsed();
        let h = timed(&mut || msm_g1(&srs.h, &h_coeffs), &mut t.msm_h);
        drop(h_coeffs);
        let l = timed(&mut || msm_g1(&srs.l, &aux_assignment), &mut t.msm_l);

        let n_in = shape.num_inputs;
        let a_sum = timed(
            &mut || {
                msm_g1(&srs.a[..n_in], &input_assignment)
                    + msm_g1(&srs.a[n_in..], &dense_scalars(&aux_assignment, &a_aux_density))
            },
            &mut t.msm_a,
        );
        let b_in = dense_scalars(&input_assignment, &b_input_density);
        let b_aux = dense_scalars(&aux_assignment, &b_aux_density);
        let b_g1 = timed(
            &mut || msm_g1(&srs.b_g1[..shape.b_inputs], &b_in) + msm_g1(&srs.b_g1[shape.b_inputs..], &b_aux),
            &mut t.msm_b_g1,
        );
        let s5 = Instant::now();
        let b_g2 = msm_g2(&srs.b_g2[..shape.b_inputs], &b_in) + msm_g2(&srs.b_g2[shape.b_inputs..], &b_aux);
        t.msm_b_g2 = s5.elapsed();

        let proof = assemble(srs, rs, MsmResults { h, l, a: a_sum, b_g1, b_g2 });
        t.total = start.elapsed();
        Ok((proof, t))
    }
}
