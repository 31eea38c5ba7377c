//! The witness [inputs | aux] of one partition, put on a device for the GPU-resident PCE path.
//!
//! Two forms arrive: a full assignment (aux as 32-byte values), or the compact form the
//! partition waited in (`CompactFrVec`: 2 bits per 0/1 value, the rest stored in full). The
//! compact one is sent as it is — ~90 MB for a 32 GiB PoRep partition instead of 4.2 GB — and
//! expanded by a kernel where the mat-vec reads it, so the 4.2 GB vector is never built on the
//! host, and the copy inside the device-exclusive region takes milliseconds, not 0.7 s.

use blstrs::Scalar as Fr;
use cuzk_pce::CompactFrVec;
use ff::Field;

use super::buffer::DeviceBuffer;
use super::error::{check, CudaError};
use super::ffi;

/// A partition's witness as the prover received it.
#[derive(Clone, Copy)]
pub enum WitnessRef<'a> {
    Full { inputs: &'a [Fr], aux: &'a [Fr] },
    Compact { inputs: &'a [Fr], aux: &'a CompactFrVec },
}

impl WitnessRef<'_> {
    pub fn num_inputs(&self) -> usize {
        match self {
            WitnessRef::Full { inputs, .. } | WitnessRef::Compact { inputs, .. } => inputs.len(),
        }
    }

    pub fn num_aux(&self) -> usize {
        match self {
            WitnessRef::Full { aux, .. } => aux.len(),
            WitnessRef::Compact { aux, .. } => aux.len(),
        }
    }
}

/// What putting the witness up cost, in ms: host → device copies, and the expansion kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct UploadTimes {
    pub copy_ms: f32,
    pub expand_ms: f32,
}

/// [inputs | aux] on device `index`.
pub fn upload(index: usize, w: WitnessRef<'_>) -> Result<(DeviceBuffer<Fr>, UploadTimes), CudaError> {
    let (n_in, n_aux) = (w.num_inputs(), w.num_aux());
    let out = DeviceBuffer::<Fr>::alloc(index, n_in + n_aux)?;
    let mut t = UploadTimes::default();
    match w {
        WitnessRef::Full { inputs, aux } => {
            t.copy_ms = out.write(0, inputs)? + out.write(n_in, aux)?;
        }
        WitnessRef::Compact { inputs, aux } => {
            t.copy_ms = out.write(0, inputs)?;
            t.expand_ms = expand_into(&out, n_in, aux, &mut t.copy_ms)?;
        }
    }
    Ok((out, t))
}

/// Expand `aux` into `out[offset..offset + aux.len()]`; adds its copies to `copy_ms` and
/// returns the kernel's ms.
fn expand_into(out: &DeviceBuffer<Fr>, offset: usize, aux: &CompactFrVec, copy_ms: &mut f32) -> Result<f32, CudaError> {
    assert!(offset + aux.len() <= out.len(), "compact expansion beyond the device buffer");
    if aux.is_empty() {
        return Ok(0.0);
    }
    let offsets = aux.word_offsets().map_err(CudaError::new)?;
    let index = out.device_index();
    let (tags, tags_ms) = DeviceBuffer::upload(index, aux.tags())?;
    let (offs, offs_ms) = DeviceBuffer::upload(index, &offsets)?;
    // A buffer of at least one value, so its pointer is valid even when nothing is stored.
    let others = DeviceBuffer::<Fr>::alloc(index, aux.num_others().max(1))?;
    // The stored values are kept in segments (one per synthesis chunk); they are one
    // sequence on the device.
    let mut others_ms = 0.0;
    let mut at = 0;
    for segment in aux.other_segments() {
        others_ms += others.write(at, segment)?;
        at += segment.len();
    }
    *copy_ms += tags_ms + offs_ms + others_ms;
    let one = Fr::ONE;
    let mut ms = 0f32;
    // SAFETY: every pointer is a live device buffer of the length passed (checked above and by
    // the buffers' own bounds); `one` outlives the call.
    check(unsafe {
        ffi::cuzk_expand_compact(
            index,
            out.as_mut_ptr().add(offset),
            tags.as_ptr(),
            offs.as_ptr(),
            others.as_ptr(),
            aux.num_others(),
            aux.len(),
            &one,
            &mut ms,
        )
    })?;
    Ok(ms)
}
