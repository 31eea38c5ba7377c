//! Choosing the prover backend from `gpus.backend`. This build has the CPU backend only; the
//! CUDA backend is a separate cargo feature (not built yet), so asking for it is an error at
//! start rather than a silent fall-back.

use std::sync::Arc;

use cuzk_groth16::{CpuProver, ProverBackend};

use crate::config::Config;
use crate::error::EngineError;

pub fn select(config: &Config) -> Result<Arc<dyn ProverBackend>, EngineError> {
    match config.gpus.backend.as_str() {
        "cpu" | "auto" => Ok(Arc::new(CpuProver)),
        "cuda" => Err(EngineError::Internal(
            "gpus.backend = \"cuda\", but this build of cuzk has no CUDA backend; use \"cpu\" or \"auto\"".into(),
        )),
        other => Err(EngineError::Internal(format!("unknown gpus.backend {other:?}"))),
    }
}
