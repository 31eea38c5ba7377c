//! Typed errors for everything a client can get wrong in a request. Each variant's message
//! says what was wrong in words an operator can act on; none of them is ever a panic.

use crate::registry::ProofKind;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("unsupported sector size {0} bytes (known: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB)")]
    UnsupportedSectorSize(u64),
    #[error("unknown registered proof {number} for proof kind {kind}")]
    UnknownRegisteredProof { kind: ProofKind, number: u64 },
    #[error("registered proof {number} is {actual}, which is not a {kind} proof")]
    WrongKindForProof { kind: ProofKind, number: u64, actual: String },
    #[error("sector size {got} does not match registered proof {registered} ({expected} bytes)")]
    SectorSizeMismatch { registered: String, expected: u64, got: u64 },
    #[error("unknown circuit id {0:?} (expected e.g. porep-32g, winning-2k, wpost-64g, snap-32g)")]
    UnknownCircuitId(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("PoRep C1 output is not valid JSON: {0}")]
    BadC1Json(String),
    #[error("PoRep C1 envelope field Phase1Out is not valid base64: {0}")]
    BadC1Base64(String),
    #[error("C1 output is for {in_c1} but the request says {requested}; they must agree")]
    RegisteredProofMismatch { in_c1: String, requested: String },
    #[error("C1 envelope says sector size {envelope} but the request says {requested}")]
    EnvelopeSectorSizeMismatch { envelope: u64, requested: u64 },
    #[error("{what} #{index} is not a valid bincode {type_name}: {reason}")]
    BadBincode { what: &'static str, index: usize, type_name: &'static str, reason: String },
    #[error("expected {expected} {what}, got {got}")]
    WrongCount { what: &'static str, expected: String, got: usize },
    #[error("{name} must be 32 bytes, got {got}")]
    BadLength { name: &'static str, got: usize },
    #[error("{name} is not a valid field element: {reason}")]
    BadFieldElement { name: &'static str, reason: String },
    #[error("invalid {what}: {reason}")]
    Invalid { what: &'static str, reason: String },
}
