//! Groth16 verification: e(A,B) = e(α,β)·e(Σ xᵢ·ICᵢ, γ)·e(C, δ), done as one multi-Miller
//! loop and one final exponentiation. Every proof cuzk returns passes through here first.
//!
//! Σ xᵢ·ICᵢ is a multi-scalar multiplication, not a loop of scalar multiplications: a 32 GiB
//! WindowPoSt partition has 25,840 public inputs, and one `G1 * Fr` each took ~4.4 s of its
//! latency on the H200 host; blst's Pippenger does the sum in milliseconds.

use blstrs::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar as Fr};
use group::Curve;
use pairing::{Engine, MillerLoopResult, MultiMillerLoop};

use crate::msm::msm_g1;
use crate::proof::Proof;
use crate::srs::VerifyingKey;

/// A verifying key with the pairing-side work done once.
pub struct PreparedVerifyingKey {
    alpha_beta: Gt,
    neg_gamma: G2Prepared,
    neg_delta: G2Prepared,
    ic: Vec<G1Affine>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("verifying key expects {expected} public inputs, got {got}")]
    InputCount { expected: usize, got: usize },
}

impl PreparedVerifyingKey {
    pub fn new(vk: &VerifyingKey) -> Self {
        PreparedVerifyingKey {
            alpha_beta: Bls12::pairing(&vk.alpha_g1, &vk.beta_g2),
            neg_gamma: G2Prepared::from(-vk.gamma_g2),
            neg_delta: G2Prepared::from(-vk.delta_g2),
            ic: vk.ic.clone(),
        }
    }

    pub fn num_inputs(&self) -> usize {
        self.ic.len() - 1
    }

    /// Whether `proof` is valid for `public_inputs` (without the leading constant ONE).
    pub fn verify(&self, proof: &Proof, public_inputs: &[Fr]) -> Result<bool, VerifyError> {
        if public_inputs.len() + 1 != self.ic.len() {
            return Err(VerifyError::InputCount { expected: self.num_inputs(), got: public_inputs.len() });
        }
        let acc = input_commitment(&self.ic, public_inputs).to_affine();
        let b = G2Prepared::from(proof.b);
        let ml = Bls12::multi_miller_loop(&[(&proof.a, &b), (&acc, &self.neg_gamma), (&proof.c, &self.neg_delta)]);
        Ok(ml.final_exponentiation() == self.alpha_beta)
    }
}

/// IC₀ + Σ xᵢ·ICᵢ₊₁ (`ic` is one longer than `inputs`).
fn input_commitment(ic: &[G1Affine], inputs: &[Fr]) -> G1Projective {
    G1Projective::from(ic[0]) + msm_g1(&ic[1..], inputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::Group;
    use rand::SeedableRng;

    /// The MSM gives the sum the definition gives, one scalar multiplication per input,
    /// at the lengths blst treats differently (none, one, a few, many) and with the scalars
    /// that are edge cases (0, 1, −1).
    #[test]
    fn input_commitment_is_the_sum_of_scalar_multiples() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for n in [0usize, 1, 2, 7, 64, 300] {
            let ic: Vec<G1Affine> = (0..=n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
            let mut inputs: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
            if n >= 3 {
                inputs[0] = Fr::ZERO;
                inputs[1] = Fr::ONE;
                inputs[2] = -Fr::ONE;
            }
            let mut naive = G1Projective::from(ic[0]);
            for (x, p) in inputs.iter().zip(&ic[1..]) {
                naive += G1Projective::from(*p) * x;
            }
            assert_eq!(input_commitment(&ic, &inputs), naive, "{n} inputs");
        }
    }
}
