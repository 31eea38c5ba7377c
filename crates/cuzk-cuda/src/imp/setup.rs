//! The generated (INSECURE) setup's fixed-base multiplications on a device: the same window
//! tables as the CPU's (`cuzk_groth16::setup::fixed_base`), built on the host and uploaded,
//! and one scalar per GPU thread (`cuda/setup.cu`). A 32 GiB PoRep circuit needs ≈ 430 M G1
//! and 33 M G2 multiplications: minutes on 16 CPU cores.
//!
//! Scalars go down canonical (not Montgomery), in slices so that the host never holds more
//! than one slice of converted scalars; results come back as blst affine points.

use blst::{blst_p1_affine, blst_p2_affine};
use blstrs::{G1Affine, G2Affine, Scalar as Fr};
use cuzk_groth16::setup::fixed_base::{FixedBase, G1, G2};
use cuzk_groth16::setup::{FixedBaseMul, SetupError, G1_WINDOW, G2_WINDOW};
use ff::Field;
use rayon::prelude::*;

use super::error::check;
use super::ffi;

/// Scalars converted and sent per FFI call.
const SLICE: usize = 1 << 25;

/// Fixed-base multiplication on device `index` (a sppark device index, see `device`).
pub struct CudaFixedBase {
    index: usize,
    g1_table: Vec<G1Affine>,
    g2_table: Vec<G2Affine>,
}

impl CudaFixedBase {
    pub fn new(index: usize) -> Self {
        CudaFixedBase {
            index,
            g1_table: FixedBase::<G1>::new(G1_WINDOW).table(),
            g2_table: FixedBase::<G2>::new(G2_WINDOW).table(),
        }
    }

    fn error(&self, e: impl std::fmt::Display) -> SetupError {
        SetupError::Engine { engine: self.name(), message: e.to_string() }
    }
}

/// Canonical little-endian 64-bit words, four per scalar. A zero scalar goes down as one:
/// the device's Fp2 inversion (sppark's) has no zero guard, so the point at infinity is never
/// computed there; [`set_zeros_to_identity`] puts it back.
fn canonical(scalars: &[Fr]) -> Vec<u64> {
    let mut words = vec![0u64; 4 * scalars.len()];
    words.par_chunks_mut(4).zip(scalars.par_iter()).for_each(|(w, s)| {
        let s = if bool::from(s.is_zero()) { Fr::ONE } else { *s };
        let b = s.to_bytes_le();
        for (k, word) in w.iter_mut().enumerate() {
            *word = u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().expect("8 bytes"));
        }
    });
    words
}

fn set_zeros_to_identity<P: Default + Send>(scalars: &[Fr], out: &mut [P]) {
    out.par_iter_mut().zip(scalars.par_iter()).for_each(|(o, s)| {
        if bool::from(s.is_zero()) {
            *o = P::default(); // blstrs' default affine point is the point at infinity
        }
    });
}

impl FixedBaseMul for CudaFixedBase {
    fn g1(&self, scalars: &[Fr]) -> Result<Vec<G1Affine>, SetupError> {
        let mut out = vec![G1Affine::default(); scalars.len()];
        for (s, o) in scalars.chunks(SLICE).zip(out.chunks_mut(SLICE)) {
            let words = canonical(s);
            // SAFETY: G1Affine is a transparent wrapper of blst_p1_affine; the buffers hold
            // `s.len()` scalars (4 words each) and points, and the table its own length.
            check(unsafe {
                ffi::cuzk_fixed_base_g1(
                    self.index,
                    self.g1_table.as_ptr() as *const blst_p1_affine,
                    self.g1_table.len(),
                    G1_WINDOW as i32,
                    words.as_ptr(),
                    s.len(),
                    o.as_mut_ptr() as *mut blst_p1_affine,
                )
            })
            .map_err(|e| self.error(e))?;
            set_zeros_to_identity(s, o);
        }
        Ok(out)
    }

    fn g2(&self, scalars: &[Fr]) -> Result<Vec<G2Affine>, SetupError> {
        let mut out = vec![G2Affine::default(); scalars.len()];
        for (s, o) in scalars.chunks(SLICE).zip(out.chunks_mut(SLICE)) {
            let words = canonical(s);
            // SAFETY: as in g1, with G2Affine over blst_p2_affine.
            check(unsafe {
                ffi::cuzk_fixed_base_g2(
                    self.index,
                    self.g2_table.as_ptr() as *const blst_p2_affine,
                    self.g2_table.len(),
                    G2_WINDOW as i32,
                    words.as_ptr(),
                    s.len(),
                    o.as_mut_ptr() as *mut blst_p2_affine,
                )
            })
            .map_err(|e| self.error(e))?;
            set_zeros_to_identity(s, o);
        }
        Ok(out)
    }

    fn name(&self) -> String {
        format!("cuda device {}", self.index)
    }
}
