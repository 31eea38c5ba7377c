//! Radix-2 number-theoretic transforms over the BLS12-381 scalar field, parallel with rayon.
//! Used by the CPU prover to compute the quotient polynomial H; the GPU backend has its own.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// A multiplicative subgroup of size 2^log_n and the constants transforms over it need.
#[derive(Clone, Debug)]
pub struct Domain {
    pub log_n: u32,
    pub n: usize,
    pub omega: Fr,
    pub omega_inv: Fr,
    pub n_inv: Fr,
}

impl Domain {
    /// The smallest domain holding `m` evaluations, or None if the field has no root of unity
    /// of that order (m > 2^32).
    pub fn for_size(m: usize) -> Option<Domain> {
        let log_n = m.max(1).next_power_of_two().trailing_zeros();
        if log_n > Fr::S {
            return None;
        }
        let mut omega = Fr::ROOT_OF_UNITY;
        for _ in log_n..Fr::S {
            omega = omega.square();
        }
        let n = 1usize << log_n;
        Some(Domain {
            log_n,
            n,
            omega,
            omega_inv: omega.invert().unwrap(),
            n_inv: Fr::from(n as u64).invert().unwrap(),
        })
    }

    /// Evaluations at the domain points → coefficients.
    pub fn intt(&self, v: &mut [Fr]) {
        ntt(v, self.omega_inv, self.log_n);
        let n_inv = self.n_inv;
        v.par_iter_mut().for_each(|x| *x *= n_inv);
    }

    /// Coefficients → evaluations at g·ω^i (the coset by the multiplicative generator g).
    pub fn coset_ntt(&self, v: &mut [Fr]) {
        scale_by_powers(v, Fr::MULTIPLICATIVE_GENERATOR);
        ntt(v, self.omega, self.log_n);
    }

    /// Evaluations at g·ω^i → coefficients.
    pub fn coset_intt(&self, v: &mut [Fr]) {
        self.intt(v);
        scale_by_powers(v, Fr::MULTIPLICATIVE_GENERATOR.invert().unwrap());
    }

    /// Z(x) = x^n − 1 is constant on the coset: g^n − 1. Returns its inverse.
    pub fn vanishing_on_coset_inv(&self) -> Fr {
        (Fr::MULTIPLICATIVE_GENERATOR.pow_vartime([self.n as u64]) - Fr::ONE).invert().unwrap()
    }
}

/// v[i] *= g^i.
fn scale_by_powers(v: &mut [Fr], g: Fr) {
    let chunk = (v.len() / rayon::current_num_threads()).max(1024);
    v.par_chunks_mut(chunk).enumerate().for_each(|(c, part)| {
        let mut p = g.pow_vartime([(c * chunk) as u64]);
        for x in part {
            *x *= p;
            p *= g;
        }
    });
}

/// In-place iterative Cooley–Tukey transform (bit-reversed input order, natural output).
fn ntt(v: &mut [Fr], omega: Fr, log_n: u32) {
    let n = v.len();
    assert_eq!(n, 1 << log_n, "transform length must be the domain size");
    if n == 1 {
        return;
    }
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - log_n);
        if i < j {
            v.swap(i, j);
        }
    }
    // twiddles[k] = omega^k for k < n/2.
    let twiddles = powers(omega, n / 2);
    let mut half = 1;
    while half < n {
        let stride = n / (2 * half);
        let block = 2 * half;
        let butterflies = |chunk: &mut [Fr]| {
            let (lo, hi) = chunk.split_at_mut(half);
            for j in 0..half {
                let t = hi[j] * twiddles[j * stride];
                hi[j] = lo[j] - t;
                lo[j] += t;
            }
        };
        if n / block >= 4 * rayon::current_num_threads() || half < 4096 {
            v.par_chunks_mut(block).for_each(butterflies);
        } else {
            // Few large blocks: parallelise inside each block instead.
            for chunk in v.chunks_mut(block) {
                let (lo, hi) = chunk.split_at_mut(half);
                lo.par_chunks_mut(1024).zip(hi.par_chunks_mut(1024)).enumerate().for_each(|(c, (l, h))| {
                    for k in 0..l.len() {
                        let j = c * 1024 + k;
                        let t = h[k] * twiddles[j * stride];
                        h[k] = l[k] - t;
                        l[k] += t;
                    }
                });
            }
        }
        half *= 2;
    }
}

/// [1, w, w^2, …, w^(len-1)], computed in parallel chunks.
fn powers(w: Fr, len: usize) -> Vec<Fr> {
    let mut out = vec![Fr::ZERO; len];
    let chunk = (len / rayon::current_num_threads()).max(1024);
    out.par_chunks_mut(chunk).enumerate().for_each(|(c, part)| {
        let mut p = w.pow_vartime([(c * chunk) as u64]);
        for x in part {
            *x = p;
            p *= w;
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    fn eval(coeffs: &[Fr], x: Fr) -> Fr {
        coeffs.iter().rev().fold(Fr::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn ntt_matches_naive_evaluation_and_inverts() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for log_n in [0u32, 1, 3, 6, 13] {
            let d = Domain::for_size(1 << log_n).unwrap();
            let coeffs: Vec<Fr> = (0..d.n).map(|_| Fr::random(&mut rng)).collect();
            let mut v = coeffs.clone();
            d.coset_ntt(&mut v);
            let g = Fr::MULTIPLICATIVE_GENERATOR;
            for i in [0, d.n / 2, d.n - 1] {
                assert_eq!(v[i], eval(&coeffs, g * d.omega.pow_vartime([i as u64])));
            }
            d.coset_intt(&mut v);
            assert_eq!(v, coeffs);
            let mut w = coeffs.clone();
            ntt(&mut w, d.omega, d.log_n);
            d.intt(&mut w);
            assert_eq!(w, coeffs);
        }
    }

    #[test]
    fn domain_sizes() {
        assert_eq!(Domain::for_size(5).unwrap().n, 8);
        assert_eq!(Domain::for_size(8).unwrap().n, 8);
        assert_eq!(Domain::for_size(0).unwrap().n, 1);
        assert!(Domain::for_size((1usize << 32) + 1).is_none());
    }
}
