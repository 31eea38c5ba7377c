//! The CUDA backend's two placement choices, defined once: [`CudaOptions`](crate::CudaOptions)
//! carries them to the prover, and cuzk-core's configuration (`gpus.srs_residency`,
//! `gpus.b_g2`) reads them from TOML as these very types, which is why they are built without
//! CUDA too and spell themselves in lowercase.

use serde::{Deserialize, Serialize};

/// Whether each circuit's parameters live on every device or come from host memory per proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Residency {
    /// Resident when the device has room for the points beside a proof's working buffers;
    /// otherwise the queries that do not fit are staged from page-locked host memory per
    /// proof ([`crate::placement`]).
    Auto,
    Always,
    Never,
}

/// Where B in G2 (the one G2 MSM) is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum B2Placement {
    Gpu,
    /// On the CPU, concurrently with the device work of the same partition.
    Cpu,
}
