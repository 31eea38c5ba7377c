//! Groth16 verification: e(A,B) = e(α,β)·e(Σ xᵢ·ICᵢ, γ)·e(C, δ), done as one multi-Miller
//! loop and one final exponentiation. Every proof cuzk returns passes through here first.

use blstrs::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar as Fr};
use group::Curve;
use pairing::{Engine, MillerLoopResult, MultiMillerLoop};

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
        let mut acc = G1Projective::from(self.ic[0]);
        for (x, p) in public_inputs.iter().zip(&self.ic[1..]) {
            acc += G1Projective::from(*p) * x;
        }
        let acc = acc.to_affine();
        let b = G2Prepared::from(proof.b);
        let ml = Bls12::multi_miller_loop(&[(&proof.a, &b), (&acc, &self.neg_gamma), (&proof.c, &self.neg_delta)]);
        Ok(ml.final_exponentiation() == self.alpha_beta)
    }
}
