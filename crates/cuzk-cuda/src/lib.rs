//! cuzk's CUDA prover backend (cargo feature `cuda`; without it this crate is empty).
//!
//! Thin Rust over our own CUDA glue (`cuda/*.cu`), which is built on Supranational's sppark
//! templates: Pippenger MSM in G1 and G2, NTTs over Fr. Every FFI call returns an error value
//! (C++ exceptions are caught in the glue), so a CUDA failure — out-of-memory included — is
//! an `Err`, never a panic or an abort.
//!
//! * [`device`] — finding devices; binding is always by explicit index, never through
//!   `CUDA_VISIBLE_DEVICES` (which the CUDA runtime reads once, at start);
//! * [`buffer`] — device memory owned from Rust;
//! * [`ntt`] — NTTs and the Groth16 quotient on the device;
//! * [`msm`] — MSM contexts whose points stay resident on a device (or stream from pinned
//!   host memory when the device is too small);
//! * [`pce`] — PCE matrices resident on a device and a = A·w, b = B·w, c = C·w there;
//! * [`witness`] — a partition's witness onto a device, a compact one expanded there;
//! * `phases` — the device-exclusive phases of one partition (upload, mat-vec, NTT, MSMs);
//! * [`setup`] — the generated setup's fixed-base multiplications on a device;
//! * [`prover`] — [`CudaProver`], the `ProverBackend`: per-device locks, device choice,
//!   retry on another device or the CPU;
//! * `adopt` — parameters resident on every device ahead of any proof, a generated setup's
//!   taken chunk by chunk while it is made, so that the host copy can go;
//! * [`cpu_task`] — a CPU thread beside the device region (B in G2 on the CPU) that is joined
//!   however the partition ends (pure logic, built without CUDA too);
//! * [`faults`] — a one-shot panic in the next device region, for the GPU suite (inert unless
//!   a test arms it);
//! * [`health`] — the per-device circuit breaker (pure logic, built without CUDA too);
//! * [`driver`] — the CUDA runtime this build links, the oldest driver that runs it, and the
//!   refusal of an older one (pure logic, built without CUDA too);
//! * [`arch`] — the compiled SASS/PTX targets and which compute capabilities they run on
//!   (pure logic, built without CUDA too);
//! * [`options`] — where parameters and B in G2 go ([`Residency`], [`B2Placement`]), the
//!   configuration's types too (built without CUDA too);
//! * [`placement`] — which queries of an SRS stay resident on a device and which are staged
//!   from host memory per proof, when the device cannot hold them all and still prove (pure
//!   logic, built without CUDA too);
//! * [`subgroup`] — the subgroup test the device runs on parameter points, its constants
//!   and the same test on the CPU (pure logic, built without CUDA too);
//! * [`device_lock`] — the device-exclusive region's lock, where deadline work goes first
//!   and normal work yields to it at phase boundaries (pure logic, built without CUDA too).

pub mod arch;
pub mod cpu_task;
pub mod device_lock;
pub mod driver;
pub mod faults;
pub mod health;
pub mod options;
pub mod placement;
pub mod subgroup;

pub use options::{B2Placement, Residency};

#[cfg(feature = "cuda")]
mod imp {
    mod adopt;
    mod attempt;
    pub mod buffer;
    pub mod device;
    pub mod error;
    mod ffi;
    pub mod msm;
    pub mod ntt;
    mod on_device;
    pub mod pce;
    mod phases;
    pub mod prover;
    mod resident;
    mod retry;
    pub mod setup;
    pub mod witness;
}

#[cfg(feature = "cuda")]
pub use imp::*;
#[cfg(feature = "cuda")]
pub use imp::{
    error::CudaError,
    prover::{CudaOptions, CudaProver},
};
