//! NTTs and the Groth16 quotient on a device (sppark's NTT kernels, our pointwise step).
//! Conventions match the CPU's `cuzk_groth16::ntt::Domain`: ω the 2^k-th root of unity of
//! blstrs, coset by the multiplicative generator 7, inverse transforms scaled by 1/n.

use blstrs::Scalar as Fr;
use cuzk_groth16::ntt::Domain;

use super::buffer::DeviceBuffer;
use super::error::{check, CudaError};
use super::ffi;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Order {
    /// Natural in, natural out.
    NN = 0,
    NR = 1,
    RN = 2,
    RR = 3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Direction {
    Forward = 0,
    Inverse = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Kind {
    Standard = 0,
    Coset = 1,
}

/// In-place NTT of `v` (length a power of two, at most 2^28) on device `index`.
pub fn ntt(index: usize, v: &mut [Fr], order: Order, direction: Direction, kind: Kind) -> Result<(), CudaError> {
    assert!(v.len().is_power_of_two(), "NTT length must be a power of two");
    let lg = v.len().trailing_zeros();
    check(unsafe { ffi::cuzk_ntt(index, v.as_mut_ptr(), lg, order as i32, direction as i32, kind as i32) })
}

/// Timings of the quotient, from CUDA events.
#[derive(Clone, Copy, Debug, Default)]
pub struct QuotientTimings {
    pub upload_ms: f32,
    pub ntt_ms: f32,
}

/// h's coefficients on the device (first n elements of the returned buffer; h[n-1] = 0)
/// for evaluations a, b, c (each ≤ n long, zero-padded) on `domain`.
pub fn quotient(
    index: usize,
    domain: &Domain,
    a: &[Fr],
    b: &[Fr],
    c: &[Fr],
) -> Result<(DeviceBuffer<Fr>, QuotientTimings), CudaError> {
    let m = a.len();
    assert!(b.len() == m && c.len() == m && m <= domain.n, "quotient: a, b, c lengths");
    let z_inv = domain.vanishing_on_coset_inv();
    let mut d_h: *mut Fr = std::ptr::null_mut();
    let mut ms = [0f32; 2];
    check(unsafe {
        ffi::cuzk_quotient(
            index,
            a.as_ptr(),
            b.as_ptr(),
            c.as_ptr(),
            m,
            domain.log_n,
            &z_inv,
            &mut d_h,
            std::ptr::null_mut(),
            ms.as_mut_ptr(),
        )
    })?;
    // SAFETY: on success the glue hands over a buffer of 3n elements from the device's pool,
    // as cuzk_device_alloc's.
    let buf = unsafe { DeviceBuffer::from_raw(index, d_h, 3 * domain.n) };
    Ok((buf, QuotientTimings { upload_ms: ms[0], ntt_ms: ms[1] }))
}

/// The quotient's n − 1 coefficients copied back to the host (tests compare them with the CPU).
pub fn quotient_to_host(index: usize, domain: &Domain, a: &[Fr], b: &[Fr], c: &[Fr]) -> Result<Vec<Fr>, CudaError> {
    let (buf, _) = quotient(index, domain, a, b, c)?;
    let mut h = vec![Fr::from(0u64); domain.n - 1];
    buf.read(0, &mut h)?;
    Ok(h)
}

/// The quotient over a, b, c already on the device, as the PCE mat-vec leaves them: on return
/// `abc.a`'s first n elements are h, and `abc.bc` may be freed. Returns the NTT time in ms.
pub fn quotient_on_device(domain: &Domain, abc: &Abc) -> Result<f32, CudaError> {
    assert!(abc.a.len() >= domain.n && abc.bc.len() >= 2 * domain.n, "quotient: device buffers too small");
    let z_inv = domain.vanishing_on_coset_inv();
    let mut ms = 0f32;
    check(unsafe {
        ffi::cuzk_quotient_device(
            abc.a.device_index(),
            abc.a.as_mut_ptr(),
            abc.bc.as_mut_ptr(),
            domain.log_n,
            &z_inv,
            &mut ms,
        )
    })?;
    Ok(ms)
}

/// a, b and c of one partition on a device, each n long: a alone, b and c together, so that
/// b and c can be freed once the quotient has replaced a by h (8 GiB at 32 GiB, which the H
/// MSM's wide windows then have).
pub struct Abc {
    pub a: DeviceBuffer<Fr>,
    pub bc: DeviceBuffer<Fr>,
}

impl Abc {
    pub fn alloc(index: usize, n: usize) -> Result<Self, CudaError> {
        Ok(Abc { a: DeviceBuffer::alloc(index, n)?, bc: DeviceBuffer::alloc(index, 2 * n)? })
    }

    /// [a | b | c] on the host (tests and benchmarks).
    pub fn to_vec(&self) -> Result<Vec<Fr>, CudaError> {
        let mut v = self.a.to_vec()?;
        v.extend(self.bc.to_vec()?);
        Ok(v)
    }
}
