//! The error every CUDA entry point returns: the code (minus the `cudaError_t`, or one of the
//! glue's own codes) and the message the glue put together, e.g. which call failed and why.

/// cudaErrorMemoryAllocation, as sppark reports it (negated).
const DEVICE_OOM: i32 = -2;
const HOST_OOM: i32 = -100001;
const NO_DEVICE: i32 = -100004;
/// The installed driver is too old for this build's CUDA runtime (Rust side only).
const DRIVER_TOO_OLD: i32 = -100005;

#[derive(Clone, Debug, thiserror::Error)]
#[error("CUDA error {code}: {message}")]
pub struct CudaError {
    pub code: i32,
    pub message: String,
}

impl CudaError {
    pub fn new(message: impl Into<String>) -> Self {
        CudaError { code: -100002, message: message.into() }
    }

    pub fn no_device(message: impl Into<String>) -> Self {
        CudaError { code: NO_DEVICE, message: message.into() }
    }

    pub fn driver_too_old(message: impl Into<String>) -> Self {
        CudaError { code: DRIVER_TOO_OLD, message: message.into() }
    }

    /// A driver is installed but cannot run this build: the wrong build for the host, which
    /// `gpus.backend = "auto"` must not paper over with the CPU.
    pub fn is_driver_too_old(&self) -> bool {
        self.code == DRIVER_TOO_OLD
    }

    /// The device (or the host side of the glue) ran out of memory.
    pub fn is_out_of_memory(&self) -> bool {
        self.code == DEVICE_OOM || self.code == HOST_OOM
    }
}

impl From<sppark::Error> for CudaError {
    fn from(e: sppark::Error) -> Self {
        CudaError { code: e.code, message: String::from(&e) }
    }
}

/// Turn the glue's return value into a Result.
pub(crate) fn check(e: sppark::Error) -> Result<(), CudaError> {
    if e.code == 0 {
        Ok(())
    } else {
        Err(e.into())
    }
}
