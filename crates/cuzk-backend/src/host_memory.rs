//! The engine's host-memory budget as a backend sees it: for bytes beyond a partition's share
//! (a GPU backend's retry on the CPU builds a, b, c on the host), taken now or not at all.

use std::sync::Arc;

/// The engine implements it with its budget; [`HostBytes`] holds what a backend took.
pub trait HostMemory: Send + Sync {
    /// Take `bytes` if they fit now; false if they do not. Never waits: a prover that waited
    /// for memory could be waiting on itself.
    fn try_take(&self, bytes: u64) -> bool;
    /// Give back `bytes` taken earlier.
    fn give_back(&self, bytes: u64);
}

/// Bytes taken from a [`HostMemory`], given back when dropped.
pub struct HostBytes {
    memory: Arc<dyn HostMemory>,
    bytes: u64,
}

impl HostBytes {
    /// `bytes` of `memory`, if they fit now.
    pub fn take(memory: &Arc<dyn HostMemory>, bytes: u64) -> Option<HostBytes> {
        memory.try_take(bytes).then(|| HostBytes { memory: memory.clone(), bytes })
    }
}

impl Drop for HostBytes {
    fn drop(&mut self) {
        self.memory.give_back(self.bytes);
    }
}
