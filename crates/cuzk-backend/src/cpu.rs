//! The CPU backend: cuzk-groth16's CPU prover behind the backend interface. It takes an
//! assignment only (a, b, c evaluated on the host).

use cuzk_groth16::{CpuProver, Proof, ProveError, Randomness, Srs};

use crate::{ProveTimings, ProverBackend, Witness, WorkLabel};

#[derive(Clone, Debug, Default)]
pub struct CpuBackend;

impl ProverBackend for CpuBackend {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn prove(
        &self,
        srs: &Srs,
        witness: Witness,
        rs: Randomness,
        _label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError> {
        match witness {
            Witness::Assignment(w) => CpuProver.prove(srs, w, rs).map(|(proof, t)| (proof, t.into())),
            other => Err(other.not_taken_by(self.name())),
        }
    }
}
