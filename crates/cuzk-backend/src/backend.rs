//! [`ProverBackend`]: what the engine asks of a prover. One partition's witness in, one proof
//! out; the rest is what a backend that holds devices and parameters needs to be told (a key
//! loaded or going, matrices to copy ahead, a stalled partition) or asked (devices, health).

use std::path::Path;
use std::sync::Arc;

use cuzk_groth16::setup::FixedBaseMul;
use cuzk_groth16::srs::QueryLens;
use cuzk_groth16::srs_sink::QueryTaker;
use cuzk_groth16::{Proof, ProveError, Randomness, Srs};
use cuzk_pce::PreCompiled;

use crate::{DeviceReport, Forms, HostMemory, ProveTimings, Witness, WorkLabel};

/// A prover backend turns one synthesized partition into one proof.
pub trait ProverBackend: Send + Sync {
    fn name(&self) -> String;

    /// The witness forms it proves from: an assignment always; an expanded or compact one if
    /// it evaluates the matrices (and expands the witness) itself.
    fn accepts(&self) -> Forms {
        Forms::ASSIGNMENT
    }

    /// Prove one partition with randomness `rs`. `witness` is in a form [`Self::accepts`]
    /// names (the engine converts it first, [`Witness::into_accepted`]); any other is an
    /// error ([`Witness::not_taken_by`]).
    fn prove(
        &self,
        srs: &Srs,
        witness: Witness,
        rs: Randomness,
        label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError>;

    /// How many partitions the backend proves well at once (the scheduler runs this many
    /// prover workers). None: the operator's `pipeline.prover_workers` decides.
    fn parallelism(&self) -> Option<usize> {
        None
    }

    /// Per-device state for status reports; empty for the CPU backend.
    fn devices(&self) -> Vec<DeviceReport> {
        Vec::new()
    }

    /// These parameters are going away (evicted): drop any copy the backend keeps of them.
    fn forget_srs(&self, _srs: &Srs) {}

    /// The engine's budget, for host memory beyond a partition's share (a GPU backend's
    /// retry on the CPU). Called once, when the engine starts: the budget is sized from the
    /// backend (its parallelism, where a, b, c are made), so it cannot come with the backend.
    fn attach_host_memory(&self, _memory: Arc<dyn HostMemory>) {}

    /// False once the backend can never prove again in this process (every GPU lost to a
    /// sticky error, or hung): the daemon then exits non-zero so that its supervisor restarts it.
    fn usable(&self) -> bool {
        true
    }

    /// A partition of job `job_id` has made no progress in the prove stage for the engine's
    /// stall limit. A backend whose devices can hang takes the device holding it out of
    /// service, as after a sticky error (a hung device never gives its lock back, and every
    /// partition queued for it would wait too), and says true; false: nothing of it is known
    /// here (the CPU backend).
    fn stalled(&self, _job_id: &str) -> bool {
        false
    }

    /// Parameters just loaded, before any job has them. A backend that copies every point to
    /// every device it proves on may do so now and release the host copy
    /// ([`Srs::release_points`]); the host then keeps only the verifying key and the lengths.
    fn adopt_srs(&self, _srs: &mut Srs) {}

    /// Host bytes the backend keeps for these parameters beside the [`Srs`] itself: queries
    /// it stages from host memory of its own (the CUDA backend, on a device that cannot hold
    /// every point). The engine's budget counts them with the parameters.
    fn host_bytes(&self, _srs: &Srs) -> u64 {
        0
    }

    /// The backend's own engine for a generated setup's fixed-base multiplications
    /// (`srs.generated`), when it has one: a device does a 32 GiB circuit's in seconds, where
    /// the CPU takes minutes. None (the default): the CPU does them.
    fn fixed_base(&self) -> Option<Arc<dyn FixedBaseMul>> {
        None
    }

    /// Offered before a generated setup computes any point (see [`cuzk_groth16::srs_sink`]): a
    /// backend that will hold every point on every device it proves on may take them chunk by
    /// chunk as they are made, so that the host never holds the whole key. `None` (the
    /// default): the points are made on the host, and [`Self::adopt_srs`] sees them after.
    fn begin_queries(&self, _path: &Path, _id: u64, _lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        None
    }

    /// A circuit's pre-compiled matrices, loaded by a preload before any proof of the
    /// circuit. A backend that evaluates matrices on its devices may copy them there now, so
    /// that the circuit's first proof does not: at 32 GiB that copy takes 2–3 s inside the
    /// device region, on a deadline proof's path.
    fn adopt_matrices(&self, _matrices: &PreCompiled) {}
}
