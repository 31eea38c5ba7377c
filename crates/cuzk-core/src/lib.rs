//! cuzk's engine core: the typed configuration, resident parameters, the per-partition
//! pipeline stages, the in-process engine that runs one proof through them, and the
//! daemon's scheduler that runs many at once. `memory` is the one host-memory budget that
//! the scheduler, the parameter cache and the PCE cache all reserve from; it sits beside
//! them, not inside the scheduler, so that the caches need nothing of the scheduler.
//! `synthetic` covers benchmark-only synthetic parameters and how their unverifiable proofs
//! are flagged.

pub mod backend;
pub mod config;
pub mod engine;
pub mod error;
/// Test-only fault injection (inert unless a test arms it; see the module).
pub mod faults;
pub mod memory;
pub mod metrics;
pub mod pce_cache;
pub mod pipeline;
pub mod scheduler;
pub mod srs_cache;
pub mod synthetic;

pub use config::Config;
pub use engine::{Engine, ProofOutput, ProofTimings};
pub use error::EngineError;
pub use synthetic::Verification;
