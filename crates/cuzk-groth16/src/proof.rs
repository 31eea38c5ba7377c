//! A Groth16 proof and its 192-byte wire form (compressed A ∈ G1, B ∈ G2, C ∈ G1), the exact
//! encoding filecoin-proofs writes for each partition.

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

pub const PROOF_BYTES: usize = 192;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProofDecodeError {
    #[error("a proof is {PROOF_BYTES} bytes, got {0}")]
    Length(usize),
    #[error("proof element {0} is not a valid compressed point in the prime-order subgroup")]
    BadPoint(&'static str),
}

impl Proof {
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let mut out = [0u8; PROOF_BYTES];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Decode and check a proof: points must be on the curve, in the subgroup, and not the
    /// identity (an identity point is never produced by an honest prover).
    pub fn from_bytes(bytes: &[u8]) -> Result<Proof, ProofDecodeError> {
        if bytes.len() != PROOF_BYTES {
            return Err(ProofDecodeError::Length(bytes.len()));
        }
        let a: G1Affine = Option::from(G1Affine::from_compressed(bytes[..48].try_into().unwrap()))
            .ok_or(ProofDecodeError::BadPoint("A"))?;
        let b: G2Affine = Option::from(G2Affine::from_compressed(bytes[48..144].try_into().unwrap()))
            .ok_or(ProofDecodeError::BadPoint("B"))?;
        let c: G1Affine = Option::from(G1Affine::from_compressed(bytes[144..].try_into().unwrap()))
            .ok_or(ProofDecodeError::BadPoint("C"))?;
        if bool::from(a.is_identity() | b.is_identity() | c.is_identity()) {
            return Err(ProofDecodeError::BadPoint("identity"));
        }
        Ok(Proof { a, b, c })
    }
}

/// Split concatenated partition proofs.
pub fn split_proofs(bytes: &[u8]) -> Result<Vec<Proof>, ProofDecodeError> {
    if bytes.is_empty() || !bytes.len().is_multiple_of(PROOF_BYTES) {
        return Err(ProofDecodeError::Length(bytes.len()));
    }
    bytes.chunks(PROOF_BYTES).map(Proof::from_bytes).collect()
}
