//! What the daemon's parameter cache works with beside its parameters: the memory budget
//! every load reserves from, and the prover backend, which sees every load and eviction:
//! * offered the queries of a generated setup while they are made, and of a `.params` file
//!   while it is read ([`ProverBackend::begin_queries`]; the budget is the loads' query
//!   sink): a backend that accepts takes every point then, and the host never holds the key;
//! * then every load before any job ([`ProverBackend::adopt_srs`]): the backend may take the
//!   points onto its devices and release the host copy (then only the verifying key stays
//!   counted); the host bytes it keeps for them besides (staged queries,
//!   [`ProverBackend::host_bytes`]) stay reserved with the load;
//! * parameters evicted, before they are freed ([`ProverBackend::forget_srs`]: its device
//!   copies).

use std::path::Path;
use std::sync::Arc;

use cuzk_backend::ProverBackend;
use cuzk_groth16::srs_sink::{QuerySink, QueryTaker};
use cuzk_groth16::{QueryLens, Srs};

use crate::memory::MemoryBudget;

pub(super) struct Budget {
    pub memory: Arc<MemoryBudget>,
    backend: Arc<dyn ProverBackend>,
}

impl Budget {
    pub(super) fn new(memory: Arc<MemoryBudget>, backend: Arc<dyn ProverBackend>) -> Self {
        Budget { memory, backend }
    }

    /// Hand a fresh load to the backend; returns the host bytes it keeps for them besides.
    pub(super) fn adopt(&self, srs: &mut Srs) -> u64 {
        self.backend.adopt_srs(srs);
        self.backend.host_bytes(srs)
    }

    /// The backend lets go of parameters about to be freed.
    pub(super) fn forget(&self, srs: &Srs) {
        self.backend.forget_srs(srs);
    }
}

/// A budgeted load's queries go to the backend as they are read or made.
impl QuerySink for Budget {
    fn begin(&self, path: &Path, id: u64, lens: &QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        self.backend.begin_queries(path, id, lens)
    }
}
