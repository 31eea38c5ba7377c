//! Parameters from files: `<param_dir>/v28-<identifier>.params`, and the `.vk` beside it,
//! which must hold the same verifying key. Streamed while read into a sink that takes them
//! (`cuzk_groth16::srs_stream`: the backend's devices, where the subgroup check runs too, and
//! the host never holds the key), else decoded on the host.

use std::path::PathBuf;
use std::time::Instant;

use cuzk_filecoin::params::param_files;
use cuzk_filecoin::CircuitId;
use cuzk_groth16::srs::load_verifying_key;
use cuzk_groth16::srs_sink::QuerySink;
use cuzk_groth16::{Srs, SubgroupCheck};

use crate::error::EngineError;

pub(super) struct FileSource {
    pub dir: PathBuf,
    pub check: SubgroupCheck,
    /// Where subgroup-check records go (the state directory); none = beside the files.
    pub records: Option<PathBuf>,
}

impl FileSource {
    /// The `.params` file's size, which a load reserves; 0 without one (the load itself
    /// reports it missing).
    pub(super) fn load_bytes(&self, circuit: CircuitId) -> u64 {
        param_files(&self.dir, circuit).ok().and_then(|f| std::fs::metadata(&f.params).ok()).map_or(0, |m| m.len())
    }

    pub(super) fn load(&self, circuit: CircuitId, sink: Option<&dyn QuerySink>) -> Result<Srs, EngineError> {
        let start = Instant::now();
        let files = param_files(&self.dir, circuit)
            .map_err(|e| EngineError::SrsMissing { circuit: circuit.to_string(), message: format!("{e:#}") })?;
        if !files.params.exists() {
            return Err(EngineError::SrsMissing {
                circuit: circuit.to_string(),
                message: format!("{} does not exist", files.params.display()),
            });
        }
        tracing::info!(%circuit, path = %files.params.display(), "loading parameters");
        let streamed = match sink {
            Some(sink) => {
                cuzk_groth16::srs_stream::load_into(&files.params, self.check, self.records.as_deref(), sink)?
            }
            None => None,
        };
        let srs = match streamed {
            Some(srs) => {
                tracing::info!(%circuit, secs = start.elapsed().as_secs_f64(), "parameters streamed from the file onto the devices");
                srs
            }
            None => Srs::load_with_records(&files.params, self.check, self.records.as_deref())?,
        };
        if files.vk.exists() {
            let vk = load_verifying_key(&files.vk)?;
            if vk != srs.vk {
                return Err(EngineError::SrsMissing {
                    circuit: circuit.to_string(),
                    message: format!(
                        "{} and {} hold different verifying keys; they are not from the same setup",
                        files.params.display(),
                        files.vk.display()
                    ),
                });
            }
        }
        Ok(srs)
    }
}
