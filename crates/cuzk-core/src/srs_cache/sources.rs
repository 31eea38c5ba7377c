//! Where a circuit's parameters come from: random points for the circuits `srs.synthetic`
//! lists, the generated setup for those `srs.generated` lists, and the parameter files for
//! every other. Each source is a module of its own and knows nothing of the cache that keeps
//! what it loads.

use std::path::PathBuf;

use cuzk_backend::ProverBackend;
use cuzk_filecoin::CircuitId;
use cuzk_groth16::srs_sink::QuerySink;
use cuzk_groth16::{Srs, SubgroupCheck};

use super::files::FileSource;
use super::generated::GeneratedSource;
use super::synthetic::SyntheticSource;
use crate::config::Config;
use crate::error::EngineError;

pub(super) struct Sources {
    files: FileSource,
    /// Set when `srs.synthetic` lists circuits.
    synthetic: Option<SyntheticSource>,
    /// Set when `srs.generated` lists circuits.
    generated: Option<GeneratedSource>,
}

/// The one source that serves a circuit.
enum Source<'a> {
    Synthetic(&'a SyntheticSource),
    Generated(&'a GeneratedSource),
    Files(&'a FileSource),
}

impl Sources {
    /// Files alone, from `dir`.
    pub(super) fn files(dir: PathBuf, check: SubgroupCheck) -> Self {
        Sources { files: FileSource { dir, check, records: None }, synthetic: None, generated: None }
    }

    /// The sources `config` describes; `backend` may do the generated setup's multiplications.
    pub(super) fn from_config(config: &Config, backend: &dyn ProverBackend) -> Self {
        let mut sources = Self::files(config.srs.param_dir.clone(), config.srs.subgroup_check.into());
        sources.files.records = config.subgroup_record_dir();
        sources.synthetic = SyntheticSource::from_config(config);
        sources.generated = GeneratedSource::from_config(config, backend);
        sources
    }

    fn of(&self, circuit: CircuitId) -> Source<'_> {
        if let Some(s) = self.synthetic.as_ref().filter(|s| s.serves(circuit)) {
            return Source::Synthetic(s);
        }
        if let Some(g) = self.generated.as_ref().filter(|g| g.serves(circuit)) {
            return Source::Generated(g);
        }
        Source::Files(&self.files)
    }

    pub(super) fn is_synthetic(&self, circuit: CircuitId) -> bool {
        matches!(self.of(circuit), Source::Synthetic(_))
    }

    /// Bytes a load of `circuit` takes at its peak: the parameters, plus a generated setup's
    /// QAP evaluations while it runs.
    pub(super) fn load_bytes(&self, circuit: CircuitId) -> Result<u64, EngineError> {
        match self.of(circuit) {
            Source::Synthetic(s) => s.load_bytes(circuit),
            Source::Generated(g) => g.load_bytes(circuit),
            Source::Files(f) => Ok(f.load_bytes(circuit)),
        }
    }

    /// What is known of the load's bytes without loading anything: the file's size; 0 for
    /// generated or synthetic parameters (their size needs the matrices).
    pub(super) fn expected_bytes(&self, circuit: CircuitId) -> u64 {
        match self.of(circuit) {
            Source::Files(f) => f.load_bytes(circuit),
            Source::Synthetic(_) | Source::Generated(_) => 0,
        }
    }

    /// Load `circuit`'s parameters, a file's or a generated setup's queries going to `sink`
    /// while they are read or made when it takes them.
    pub(super) fn load(&self, circuit: CircuitId, sink: Option<&dyn QuerySink>) -> Result<Srs, EngineError> {
        match self.of(circuit) {
            Source::Synthetic(s) => s.load(circuit),
            Source::Generated(g) => g.load(circuit, sink),
            Source::Files(f) => f.load(circuit, sink),
        }
    }
}
