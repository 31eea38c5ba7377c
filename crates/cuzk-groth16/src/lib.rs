//! Groth16 over BLS12-381 for cuzk, one file per protocol phase:
//!
//! * [`assignment`] — synthesis target: a, b, c, witness, densities for one partition;
//! * [`srs`] — reading and validating parameter files;
//! * [`srs_sink`] — handing a key's queries to a backend while they are produced;
//! * [`srs_stream`] — a `.params` file streamed into such a backend, chunk by chunk;
//! * [`srs_synthetic`] — random parameters of a given shape, for benchmarks (never verify);
//! * [`setup`] — a fast, deterministic, INSECURE Groth16 setup (parameters that verify);
//! * [`ntt`], [`msm`] — the CPU primitives;
//! * [`prover`] — shape checks, the quotient, proof assembly, and the CPU prover;
//! * [`proof`], [`verify`] — the proof encoding and the verifier.
//!
//! Nothing here knows about Filecoin; a hand-made circuit proves just as well.

pub mod assignment;
pub mod check_record;
pub mod density;
pub mod msm;
pub mod ntt;
pub mod proof;
pub mod prover;
pub mod setup;
pub mod srs;
pub mod srs_sink;
pub mod srs_stream;
pub mod srs_synthetic;
pub mod verify;

pub use assignment::ProvingAssignment;
pub use blstrs::Scalar as Fr;
pub use proof::{Proof, PROOF_BYTES};
pub use prover::{CpuProver, CpuTimings, ProveError, Randomness};
pub use srs::{QueryLens, Srs, SrsError, SubgroupCheck, VerifyingKey};
pub use srs_synthetic::SrsShape;
pub use verify::PreparedVerifyingKey;
