//! What can go wrong with a proof job, typed so the daemon can map each case to a status
//! (bad input vs. resource limits vs. internal failures) and operators can read the cause.

use cuzk_filecoin::InputError;
use cuzk_groth16::{ProveError, SrsError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("bad request: {0}")]
    Input(#[from] InputError),
    #[error("parameters: {0}")]
    Srs(#[from] SrsError),
    #[error("parameters for {circuit}: {message}")]
    SrsMissing { circuit: String, message: String },
    #[error("partition {partition}: synthesis failed: {message}")]
    Synthesis { partition: usize, message: String },
    #[error(
        "partition {partition}: the circuit's public inputs differ from those derived from the request \
         (the vanilla proofs do not match the commitments / randomness / prover id sent with them)"
    )]
    PublicInputMismatch { partition: usize },
    #[error("partition {partition}: {source}")]
    Prove { partition: usize, source: ProveError },
    #[error("proof failed verification: {}", describe_validity(.valid, *.total))]
    InvalidProof { valid: Vec<usize>, total: usize },
    #[error("cancelled")]
    Cancelled,
    #[error("resources exhausted: {0}")]
    ResourceExhausted(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// "3 of 10 partitions valid: 0, 4, 7" — the per-partition picture that tells a GPU race
/// (random partitions fail) from bad input (all fail).
pub fn describe_validity(valid: &[usize], total: usize) -> String {
    let list = valid.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    if valid.is_empty() {
        format!("0 of {total} partitions valid")
    } else {
        format!("{} of {total} partitions valid: {list}", valid.len())
    }
}

impl EngineError {
    /// True when the client sent something wrong (retrying the same request cannot help).
    pub fn is_client_error(&self) -> bool {
        matches!(self, EngineError::Input(_) | EngineError::PublicInputMismatch { .. } | EngineError::Synthesis { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_message_lists_valid_partitions() {
        let e = EngineError::InvalidProof { valid: vec![0, 4, 7], total: 10 };
        assert_eq!(e.to_string(), "proof failed verification: 3 of 10 partitions valid: 0, 4, 7");
        assert_eq!(describe_validity(&[], 1), "0 of 1 partitions valid");
    }
}
