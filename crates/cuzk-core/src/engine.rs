//! The in-process engine: proves one request start to finish on the calling thread(s),
//! overlapping the synthesis of partition k+1 with the proving of partition k. This is what
//! `cuzk-bench demo` and the end-to-end tests drive; the daemon schedules the same stages
//! across jobs.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_backend::{ProveTimings, ProverBackend, Urgency, WorkLabel};
use cuzk_filecoin::{prepare, CircuitId, ProofRequest};

use crate::config::Config;
use crate::error::EngineError;
use crate::pce_cache::PceCache;
use crate::pipeline::{self, ProvedPartition};
use crate::srs_cache::SrsCache;
use crate::synthetic::Verification;

/// Timings of one proof, in the shape `AwaitProofResponse` reports them.
#[derive(Clone, Debug, Default)]
pub struct ProofTimings {
    pub srs_load: Duration,
    /// Sum over partitions.
    pub synthesis: Duration,
    /// Sum over partitions of the prover backend's time.
    pub prove: Duration,
    pub verify: Duration,
    pub total: Duration,
}

pub struct ProofOutput {
    pub circuit: CircuitId,
    /// Concatenated 192-byte partition proofs, in partition order. Check `verification`:
    /// with synthetic parameters these bytes are not a valid proof.
    pub proof: Vec<u8>,
    /// `Verified`, or `SkippedSynthetic` when the circuit's parameters are synthetic
    /// (`srs.synthetic`, benchmarks only).
    pub verification: Verification,
    pub partitions: usize,
    pub timings: ProofTimings,
    /// The prover backend's breakdown of each partition, in partition order.
    pub partition_timings: Vec<ProveTimings>,
}

pub struct Engine {
    pub config: Config,
    pub srs: Arc<SrsCache>,
    /// Present when `pce.enabled`.
    pub pce: Option<Arc<PceCache>>,
    backend: Arc<dyn ProverBackend>,
}

impl Engine {
    pub fn new(config: Config) -> Result<Engine, EngineError> {
        config.validate().map_err(|e| EngineError::Internal(e.to_string()))?;
        let backend = crate::backend::select(&config)?;
        // No budget: one proof at a time, and the parameters stay on the host as loaded.
        let srs = Arc::new(SrsCache::from_config(&config, &*backend));
        let pce = PceCache::from_config(&config).map(Arc::new);
        Ok(Engine { config, srs, pce, backend })
    }

    pub fn backend(&self) -> &dyn ProverBackend {
        &*self.backend
    }

    /// Prove `req` and verify the result. Blocking; uses the global rayon pool.
    pub fn prove(&self, req: &ProofRequest) -> Result<ProofOutput, EngineError> {
        let start = Instant::now();
        let prepared = prepare(req)?;
        let total = prepared.partitions.len();
        let pce = match &self.pce {
            Some(cache) => Some(cache.get(prepared.circuit_id)?.0),
            None => None,
        };
        let srs_start = Instant::now();
        let (srs, loaded_now) = self.srs.get(prepared.circuit_id)?;
        let srs_load = if loaded_now { srs_start.elapsed() } else { Duration::ZERO };

        // Synthesis runs one partition ahead of proving.
        let (tx, rx) = mpsc::sync_channel(1);
        let proved: Result<Vec<ProvedPartition>, EngineError> = std::thread::scope(|scope| {
            let partitions = prepared.partitions;
            scope.spawn(move || {
                for p in partitions {
                    let r = pipeline::synthesize(p, pce.as_ref());
                    let stop = r.is_err();
                    if tx.send(r).is_err() || stop {
                        break;
                    }
                }
            });
            let label = WorkLabel {
                job_id: "in-process".into(),
                proof_kind: req.kind.map(|k| k.name()).unwrap_or_default().into(),
                urgency: Urgency::Normal,
            };
            rx.iter().map(|s| pipeline::prove(&*self.backend, &srs, s?, &label)).collect()
        });
        let mut proved = proved?;
        proved.sort_by_key(|p| p.index);
        let partition_timings = proved.iter().map(|p| p.prove_timings.clone()).collect();
        let synthesis = proved.iter().map(|p| p.synthesis_time).sum();
        let prove = proved.iter().map(|p| p.prove_timings.total).sum();
        let verify_start = Instant::now();
        let assembled = pipeline::verify_and_assemble(&srs, proved, total)?;
        let verify = verify_start.elapsed();
        Ok(ProofOutput {
            circuit: prepared.circuit_id,
            proof: assembled.proof,
            verification: assembled.verification,
            partitions: total,
            partition_timings,
            timings: ProofTimings { srs_load, synthesis, prove, verify, total: start.elapsed() },
        })
    }
}
