//! Device choice and retry: a partition goes to the least loaded live device; a failed
//! attempt is retried once, on the next device, or — with one device — on the CPU, with room
//! for a, b, c taken from the engine's budget now or not at all.

use std::sync::atomic::Ordering;
use std::time::Instant;

use cuzk_backend::{HostBytes, ProveTimings, ProverBackend, Witness, WorkLabel};
use cuzk_groth16::prover::Shape;
use cuzk_groth16::{Proof, ProveError, Randomness, Srs};

use super::attempt::work_of;
use super::prover::CudaProver;

impl CudaProver {
    /// Healthy devices first, each group by fewest partitions on it (ties broken
    /// round-robin). A benched device is still tried when no other is left. The first is
    /// counted as taken at once, so concurrent callers spread out.
    pub(super) fn device_order(&self) -> Vec<usize> {
        let n = self.gpus.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let now = Instant::now();
        let mut order: Vec<usize> = (0..n).map(|i| (start + i) % n).collect();
        order.sort_by_key(|&i| (!self.gpus[i].health.available(now), self.gpus[i].active.load(Ordering::Relaxed)));
        self.gpus[order[0]].active.fetch_add(1, Ordering::Relaxed);
        order
    }

    /// Try each device in order of load (at most two attempts), then the CPU.
    pub(super) fn prove_with(
        &self,
        srs: &Srs,
        shape: &Shape,
        witness: Witness,
        rs: Randomness,
        label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError> {
        let order = self.device_order();
        // device_order counted its first choice as taken; each attempt below counts its own.
        self.gpus[order[0]].active.fetch_sub(1, Ordering::Relaxed);
        // Lost devices (a sticky error) are never tried again.
        let live: Vec<usize> = order.into_iter().filter(|&g| !self.gpus[g].health.is_lost()).collect();
        if live.is_empty() {
            return Err(ProveError::Backend {
                backend: self.name(),
                message: "every CUDA device is out of service after a sticky error".into(),
            });
        }
        // With the host copy of the parameters released the CPU cannot retry: a lone device
        // gets the second attempt itself (transient faults, out-of-memory).
        let cpu_can_retry = !srs.points_released();
        let attempts: Vec<usize> = if live.len() == 1 && !cpu_can_retry {
            vec![live[0], live[0]]
        } else {
            live.iter().take(2).copied().collect()
        };
        let mut last_err = None;
        for &g in &attempts {
            if self.gpus[g].health.is_lost() {
                continue; // lost during the first attempt
            }
            self.gpus[g].active.fetch_add(1, Ordering::Relaxed);
            match self.start_on(g, srs, shape, work_of(&witness), label) {
                Ok(phase) => return Ok(self.finish(srs, phase, rs)),
                Err(e) => {
                    // One retry: on the next device, or on the CPU when there is one device.
                    let retry = last_err.is_none();
                    tracing::error!(device = self.gpus[g].info.ordinal, error = %e, retry, "partition failed on device");
                    last_err = Some(e);
                }
            }
        }
        if live.len() >= 2 || !cpu_can_retry {
            return Err(last_err.unwrap_or_else(|| ProveError::Backend {
                backend: self.name(),
                message: "the device was lost".into(),
            }));
        }
        // One device only: the second attempt is the CPU, which builds a, b, c (and the full
        // witness) on the host: only with room for them in the engine's budget.
        let q = srs.query_lens();
        let need = 96 * shape.domain.n as u64 + 64 * q.l as u64;
        let _room = match self.host_memory.get() {
            None => None,
            Some(memory) => match HostBytes::take(memory, need) {
                Some(guard) => Some(guard),
                None => {
                    let device = last_err.map(|e| e.to_string()).unwrap_or_default();
                    return Err(ProveError::Backend {
                        backend: "cpu".into(),
                        message: format!(
                            "{device}; a retry on the CPU needs {} MiB that the memory budget does not have now",
                            need >> 20
                        ),
                    });
                }
            },
        };
        tracing::warn!(mib = need >> 20, "retrying the partition on the CPU backend");
        let w = witness
            .into_assignment()
            .map_err(|e| ProveError::Backend { backend: "cpu".into(), message: e.to_string() })?;
        self.cpu.prove(srs, w, rs).map(|(proof, t)| (proof, t.into()))
    }
}
