//! The seam between cuzk's engine and its provers. It sits one floor above the pre-compiled
//! matrices (cuzk-pce) so that it can name them, and below everything that proves:
//!
//! * [`backend`] — [`ProverBackend`], what the engine asks of a prover;
//! * [`witness`] — a partition's witness in the three forms a backend may take, and the one
//!   definition of how it changes form;
//! * [`label`] — whose partition a backend is proving, and how urgently;
//! * [`report`] — device reports, and where a proof's time went;
//! * [`host_memory`] — the engine's memory budget as a backend sees it;
//! * [`cpu`] — the CPU backend.
//!
//! Groth16 itself (the assignment, the parameters, the CPU prover's arithmetic) is
//! cuzk-groth16's; Filecoin is known to neither.

pub mod backend;
pub mod cpu;
pub mod host_memory;
pub mod label;
pub mod report;
pub mod witness;

pub use backend::ProverBackend;
pub use cpu::CpuBackend;
pub use cuzk_groth16::{ProveError, Randomness};
pub use host_memory::{HostBytes, HostMemory};
pub use label::{Urgency, WorkLabel};
pub use report::{DeviceReport, ProveTimings};
pub use witness::{FormChange, Forms, Witness, WitnessForm};
