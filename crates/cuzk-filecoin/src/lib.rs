//! Filecoin adapters for cuzk: turns what Curio sends (registered-proof numbers, C1 JSON,
//! bincode vanilla proofs) into per-partition circuits built by the storage-proofs crates, plus
//! the public inputs each partition proof must verify against.
//!
//! Nothing in here proves: proving lives in `cuzk-groth16`, orchestration in `cuzk-core`.

/// bellperson's own generator and writers (feature `fixtures`; always in this crate's tests).
#[cfg(any(test, feature = "fixtures"))]
pub mod bellperson_setup;
pub mod circuits;
pub mod decode_pool;
pub mod error;
/// Test inputs and reference provers (feature `fixtures`; always in this crate's own tests).
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod params;
pub mod registry;
pub mod request;

pub use circuits::{catch_panic, prepare, Partition, PartitionCircuit, PreparedProof};
pub use error::InputError;
pub use registry::{CircuitId, ProofKind, Registered, SectorSize};
pub use request::ProofRequest;
