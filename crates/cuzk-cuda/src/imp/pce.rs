//! The pre-compiled constraint system resident on a device (issue #7).
//!
//! Uploaded once per device and circuit: the three CSR matrices (as cuzk-pce stores them,
//! 8 bytes a non-zero, plus 4 bytes for each row of more than four, which cuda/matvec.cu lists) and
//! two index lists that pick the A and B query scalars out of the witness [inputs | aux] (all
//! inputs then the A-dense aux; the B-dense inputs then the B-dense aux). Per partition only
//! the witness goes up; a, b, c, h and the dense scalars are made on the device and never
//! visit the host.

use std::ffi::c_void;

use blstrs::Scalar as Fr;
use cuzk_groth16::ntt::Domain;
use cuzk_pce::matrix::RowPtrView;
use cuzk_pce::{Csr, PreCompiled};

use super::buffer::DeviceBuffer;
use super::error::{check, CudaError};
use super::ffi;
use super::ntt::Abc;

struct DeviceCsr(*mut ffi::CsrDev);

// SAFETY: only used through the glue under the prover's per-device lock.
unsafe impl Send for DeviceCsr {}
unsafe impl Sync for DeviceCsr {}

impl Drop for DeviceCsr {
    fn drop(&mut self) {
        unsafe { ffi::cuzk_csr_free(self.0) };
    }
}

fn upload_csr(index: usize, m: &Csr) -> Result<(DeviceCsr, u64), CudaError> {
    let (ptr, wide): (*const c_void, bool) = match m.row_ptr() {
        RowPtrView::U32(p) => (p.as_ptr().cast(), false),
        RowPtrView::U64(p) => (p.as_ptr().cast(), true),
    };
    let (cols, cidx, coeffs) = (m.columns(), m.coefficient_indices(), m.coefficients());
    let mut out = std::ptr::null_mut();
    check(unsafe {
        ffi::cuzk_csr_upload(
            index,
            m.rows(),
            ptr,
            wide,
            cols.as_ptr(),
            cidx.as_ptr(),
            cols.len(),
            coeffs.as_ptr(),
            coeffs.len(),
            &mut out,
        )
    })?;
    let m = DeviceCsr(out);
    let bytes = unsafe { ffi::cuzk_csr_bytes(m.0) } as u64;
    Ok((m, bytes))
}

/// Positions in the witness [inputs | aux] of the A and B query scalars, in query order.
pub fn query_indices(pc: &PreCompiled) -> (Vec<u32>, Vec<u32>) {
    let n_in = pc.num_inputs as u32;
    let a: Vec<u32> = (0..n_in).chain(pc.a_aux_density.ones().map(|i| n_in + i as u32)).collect();
    let b: Vec<u32> =
        pc.b_input_density.ones().map(|i| i as u32).chain(pc.b_aux_density.ones().map(|i| n_in + i as u32)).collect();
    (a, b)
}

pub struct DevicePce {
    index: usize,
    mats: [DeviceCsr; 3],
    pub num_inputs: usize,
    pub num_aux: usize,
    pub num_constraints: usize,
    a_query: DeviceBuffer<u32>,
    b_query: DeviceBuffer<u32>,
    bytes: u64,
}

impl DevicePce {
    pub fn upload(index: usize, pc: &PreCompiled) -> Result<Self, CudaError> {
        if pc.num_inputs + pc.num_aux > u32::MAX as usize {
            return Err(CudaError::new("witness too large for 32-bit device indices"));
        }
        let (a, ab) = upload_csr(index, &pc.a)?;
        let (b, bb) = upload_csr(index, &pc.b)?;
        let (c, cb) = upload_csr(index, &pc.c)?;
        let (ai, bi) = query_indices(pc);
        let (a_query, _) = DeviceBuffer::upload(index, &ai)?;
        let (b_query, _) = DeviceBuffer::upload(index, &bi)?;
        let bytes = ab + bb + cb + a_query.bytes() + b_query.bytes();
        Ok(DevicePce {
            index,
            mats: [a, b, c],
            num_inputs: pc.num_inputs,
            num_aux: pc.num_aux,
            num_constraints: pc.num_constraints,
            a_query,
            b_query,
            bytes,
        })
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Number of A and B query scalars.
    pub fn query_lens(&self) -> (usize, usize) {
        (self.a_query.len(), self.b_query.len())
    }

    /// a, b, c on the device (each n, zero-padded) from the witness [inputs | aux] there.
    /// Returns them and the kernel time in ms.
    pub fn eval(&self, domain: &Domain, witness: &DeviceBuffer<Fr>) -> Result<(Abc, f32), CudaError> {
        assert_eq!(witness.len(), self.num_inputs + self.num_aux, "witness length");
        assert!(self.num_constraints <= domain.n, "domain smaller than the constraint count");
        let abc = Abc::alloc(self.index, domain.n)?;
        let mats = [self.mats[0].0 as *const _, self.mats[1].0 as *const _, self.mats[2].0 as *const _];
        let mut ms = 0f32;
        check(unsafe {
            ffi::cuzk_pce_eval(
                self.index,
                mats.as_ptr(),
                witness.as_ptr(),
                self.num_inputs as u32,
                domain.log_n,
                abc.a.as_mut_ptr(),
                abc.bc.as_mut_ptr(),
                &mut ms,
            )
        })?;
        Ok((abc, ms))
    }

    /// The A query scalars (inputs, then A-dense aux) gathered from the device witness.
    pub fn gather_a(&self, witness: &DeviceBuffer<Fr>) -> Result<DeviceBuffer<Fr>, CudaError> {
        gather(witness, &self.a_query)
    }

    /// The B query scalars (B-dense inputs, then B-dense aux).
    pub fn gather_b(&self, witness: &DeviceBuffer<Fr>) -> Result<DeviceBuffer<Fr>, CudaError> {
        gather(witness, &self.b_query)
    }
}

fn gather(src: &DeviceBuffer<Fr>, idx: &DeviceBuffer<u32>) -> Result<DeviceBuffer<Fr>, CudaError> {
    let out = DeviceBuffer::<Fr>::alloc(src.device_index(), idx.len())?;
    check(unsafe { ffi::cuzk_gather(src.device_index(), out.as_mut_ptr(), src.as_ptr(), idx.as_ptr(), idx.len()) })?;
    Ok(out)
}
