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

/// The glue's signature, the same for G1 and G2 (`P` the blst affine type).
type GlueFn<P> = unsafe extern "C" fn(usize, *const P, usize, i32, *const u64, usize, *mut P) -> sppark::Error;

impl CudaFixedBase {
    /// `scalars[i]·G` through `glue`, a slice at a time. `A` is blstrs' affine type, a
    /// transparent wrapper of blst's `P`.
    fn run<A: Default + Clone + Send, P>(
        &self,
        table: &[A],
        window: usize,
        scalars: &[Fr],
        glue: GlueFn<P>,
    ) -> Result<Vec<A>, SetupError> {
        assert_eq!(std::mem::size_of::<A>(), std::mem::size_of::<P>(), "blstrs' affine points wrap blst's");
        // Filled on every core: `vec![A::default(); n]` wrote (and faulted in) the 1.5 GiB of
        // a 2^24-point G1 chunk (3 GiB in G2) on one thread before the device had begun, and
        // the device's copy back writes every point over it anyway.
        let mut out = Vec::with_capacity(scalars.len());
        out.par_extend(rayon::iter::repeat_n(A::default(), scalars.len()));
        for (s, o) in scalars.chunks(SLICE).zip(out.chunks_mut(SLICE)) {
            let words = canonical(s);
            // SAFETY: `A` is a transparent wrapper of `P` (sizes checked above); the buffers
            // hold `s.len()` scalars (4 words each) and points, and the table its own length.
            check(unsafe {
                glue(
                    self.index,
                    table.as_ptr() as *const P,
                    table.len(),
                    window as i32,
                    words.as_ptr(),
                    s.len(),
                    o.as_mut_ptr() as *mut P,
                )
            })
            .map_err(|e| self.error(e))?;
            set_zeros_to_identity(s, o);
        }
        Ok(out)
    }
}

impl FixedBaseMul for CudaFixedBase {
    fn g1(&self, scalars: &[Fr]) -> Result<Vec<G1Affine>, SetupError> {
        self.run::<_, blst_p1_affine>(&self.g1_table, G1_WINDOW, scalars, ffi::cuzk_fixed_base_g1)
    }

    fn g2(&self, scalars: &[Fr]) -> Result<Vec<G2Affine>, SetupError> {
        self.run::<_, blst_p2_affine>(&self.g2_table, G2_WINDOW, scalars, ffi::cuzk_fixed_base_g2)
    }

    fn name(&self) -> String {
        format!("cuda device {}", self.index)
    }
}
