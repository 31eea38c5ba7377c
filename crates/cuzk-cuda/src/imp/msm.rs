//! MSM contexts: one per (device, SRS query). Resident contexts copy their points to the
//! device once; streaming ones keep a host pointer and let sppark copy per call.
//!
//! Small MSMs run on the CPU (blst): below [`MIN_GPU_MSM`] points the fixed cost of a device
//! MSM (several launches, ~5 ms measured on an H200) is more than blst needs. It is also a
//! guard: the first builds (device code with -G, see build.rs) hung on MSMs of 1–15 points,
//! and tiny device MSMs have not been re-tested since. A context keeps its host points unless
//! told to forget them (resident contexts whose host copy is released, which the prover only
//! does when every query has at least MIN_GPU_MSM points).
//!
//! Witness MSMs (L, A, B: mostly 0/1 scalars) can be *split* on the device: zeros dropped, ones
//! summed without Pippenger, only the rest through it (`cuda/msm_split.cuh`). That needs
//! resident points and device scalars; otherwise, or when too many scalars are dense, the
//! whole vector goes through Pippenger as before.
//!
//! Dense MSMs from device scalars over ≥ 2^22 resident points (H, and witnesses too dense to
//! split, such as a WindowPoSt's L, A and B in G1 and G2) take wider windows than sppark picks
//! (`cuda/msm_wide.cuh`): in G1 12 windows of 22 bits instead of 15 of 18 at 2^27, in G2 13 of
//! 20. Without room for its temporaries that path declines and sppark's Pippenger runs.
//!
//! A long MSM can pause for the caller's phase boundary ([`MsmG1::run_pausing`]): the wide
//! path between its sort and bucket groups, sppark's Pippenger between chunks of points
//! (`cuda/msm_chunked.cuh`: streaming points, host scalars), so that deadline work need not
//! wait for the whole of a 2^27-point H or a WindowPoSt's B_G2.
//!
//! A *staged* context keeps its points in host memory of its own (page-locked when the driver
//! grants it) and copies them to the device for each run that can use the fast paths, into a
//! buffer freed after the run: for a query that runs rarely (a WindowPoSt's B in G2) on a
//! device that cannot hold every circuit's points at once. See `cuda/msm.cu`.
//!
//! Safety contract: the host points must outlive the context and must not move. The prover
//! guarantees it by keeping the contexts of one SRS inside an entry that is dropped (by
//! `forget_srs`) before the SRS itself.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};

use cuzk_groth16::msm::{msm_g1, msm_g2};

use super::buffer::DeviceBuffer;
use super::error::{check, CudaError};
use super::ffi;
use crate::subgroup::SubgroupConstants;

/// The glue's side of a pause: `arg` is the caller's `&mut dyn FnMut()`. A panic in it must
/// not unwind into C++; it is logged and the MSM goes on (the pause only lends the device).
unsafe extern "C" fn call_pause(arg: *mut std::ffi::c_void) {
    // SAFETY: `device_msm` passes a pointer to a live `&mut dyn FnMut()` for the call's length.
    let pause = unsafe { &mut *(arg as *mut &mut dyn FnMut()) };
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(pause)).is_err() {
        tracing::error!("a pause inside an MSM panicked; the MSM goes on");
    }
}

/// Scalars of one MSM: on the host, or a prefix/window of a device buffer.
pub enum Scalars<'a> {
    Host(&'a [Fr]),
    Device { buffer: &'a DeviceBuffer<Fr>, offset: usize, len: usize },
}

/// MSMs with fewer points run on the CPU.
pub const MIN_GPU_MSM: usize = 1 << 12;

/// How the device runs an MSM (`msm_how_t` in cuda/msm.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MsmPath {
    /// sppark's Pippenger as it is (benchmarks and tests compare against it).
    Sppark = 0,
    /// Witness scalars: split by value when it can be.
    Witness = 1,
    /// Dense scalars: wide windows when it can be (device scalars, resident points); from
    /// 2^24 points in G1 and 2^25 in G2, the buckets summed in affine coordinates by rounds
    /// of pairwise additions (cuda/msm_affine.cuh), where that measured faster.
    Dense = 2,
    /// [`MsmPath::Dense`] with sppark's XYZZ bucket sums at every size (benchmarks, tests).
    DenseXyzz = 3,
    /// [`MsmPath::Dense`] with the affine rounds at every size, in G1 and G2 (benchmarks,
    /// tests).
    DenseAffine = 4,
}

impl Scalars<'_> {
    pub fn len(&self) -> usize {
        self.raw().1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn to_host(&self) -> Result<std::borrow::Cow<'_, [Fr]>, CudaError> {
        Ok(match self {
            Scalars::Host(s) => std::borrow::Cow::Borrowed(*s),
            Scalars::Device { buffer, offset, len } => {
                let mut v = vec![Fr::from(0u64); *len];
                buffer.read(*offset, &mut v)?;
                std::borrow::Cow::Owned(v)
            }
        })
    }

    fn raw(&self) -> (*const Fr, usize, bool) {
        match self {
            Scalars::Host(s) => (s.as_ptr(), s.len(), false),
            Scalars::Device { buffer, offset, len } => {
                assert!(offset + len <= buffer.len(), "MSM scalars beyond the device buffer");
                // SAFETY: in bounds (asserted); the pointer is only used on the device.
                (unsafe { buffer.as_ptr().add(*offset) }, *len, true)
            }
        }
    }
}

/// Tells the glue the placement's margin ([`crate::placement::margin`]), which its wide and
/// split MSM paths keep free; once, before the first MSM context exists.
pub(crate) fn agree_margin() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: plain values; called before any MSM context can run.
        unsafe { ffi::cuzk_set_margin(crate::placement::SLACK as usize, crate::placement::MARGIN_DIVISOR as usize) }
    });
}

macro_rules! msm_context {
    ($name:ident, $ctx:ty, $affine:ty, $raw_affine:ty, $proj:ty, $raw_proj:ty, $create:ident, $create_staged:ident, $fill:ident, $run:ident, $chunk:ident, $stage_chunk:ident, $wide_group:ident, $destroy:ident, $cpu:ident) => {
        pub struct $name {
            ctx: *mut $ctx,
            host: *const $affine,
            len: usize,
            resident: bool,
            /// Staged: the points in host memory the context owns (see the module doc).
            staged: bool,
            /// Staged in page-locked host memory (else ordinary memory, copied more slowly).
            pinned: bool,
        }

        // SAFETY: the context is only used through the glue, one thread at a time per device
        // (the prover's device lock).
        unsafe impl Send for $name {}
        unsafe impl Sync for $name {}

        impl $name {
            /// A context over `points` on device `index`. `resident`: copy the points now.
            ///
            /// # Safety
            /// `points` must stay alive and in place until the context is dropped (small MSMs
            /// read them on the CPU; streaming contexts read them on every call).
            pub unsafe fn new(index: usize, points: &[$affine], resident: bool) -> Result<Self, CudaError> {
                agree_margin();
                let mut ctx = std::ptr::null_mut();
                check(ffi::$create(index, points.as_ptr().cast::<$raw_affine>(), points.len(), resident, &mut ctx))?;
                Ok($name { ctx, host: points.as_ptr(), len: points.len(), resident, staged: false, pinned: false })
            }

            /// A resident context of `len` points on device `index` whose device memory is
            /// allocated but not yet written: [`Self::fill`] writes it, every point before
            /// the first MSM (the caller keeps count). It never reads host points, so small
            /// MSMs run on the device too.
            pub fn new_unfilled(index: usize, len: usize) -> Result<Self, CudaError> {
                agree_margin();
                let mut ctx = std::ptr::null_mut();
                check(unsafe { ffi::$create(index, std::ptr::null(), len, true, &mut ctx) })?;
                Ok($name { ctx, host: std::ptr::null(), len, resident: true, staged: false, pinned: false })
            }

            /// A staged context of `len` points for device `index`: host memory of its own,
            /// allocated now and written by [`Self::fill`] (every point before the first MSM),
            /// copied to the device for each run. It never reads the caller's points.
            pub fn new_staged(index: usize, len: usize) -> Result<Self, CudaError> {
                agree_margin();
                let mut ctx = std::ptr::null_mut();
                let mut pinned = false;
                check(unsafe { ffi::$create_staged(index, len, &mut ctx, &mut pinned) })?;
                if !pinned {
                    tracing::warn!(
                        device = index,
                        points = len,
                        "could not page-lock host memory for staged parameters; each copy to the device will be slower"
                    );
                }
                Ok($name { ctx, host: std::ptr::null(), len, resident: false, staged: true, pinned })
            }

            /// Points `offset..offset + points.len()` of a resident context (copied to the
            /// device now) or a staged one (into its host memory).
            pub fn fill(&mut self, offset: usize, points: &[$affine]) -> Result<(), CudaError> {
                assert!(self.resident || self.staged, "only a resident or staged context holds points to fill");
                check(unsafe { ffi::$fill(self.ctx, offset, points.as_ptr().cast::<$raw_affine>(), points.len()) })
            }

            /// Σ scalars[i]·points[i] over the first `scalars.len()` points, on the device, or
            /// on the CPU below [`MIN_GPU_MSM`] points; also the wall ms.
            pub fn run(&self, scalars: Scalars<'_>) -> Result<($proj, f32), CudaError> {
                self.run_with(scalars, MsmPath::Dense, None).map(|(p, ms, _)| (p, ms))
            }

            /// The same for witness scalars (mostly 0/1): split on the device when it can be
            /// (see the module doc). Also how many scalars went through Pippenger.
            pub fn run_witness(&self, scalars: Scalars<'_>) -> Result<($proj, f32, usize), CudaError> {
                self.run_with(scalars, MsmPath::Witness, None)
            }

            /// [`Self::run`] (`how` Dense) or [`Self::run_witness`] (Witness) that calls `pause`
            /// between the steps of a long MSM, none of its kernels running, so the caller can
            /// lend the device there (the time in `pause` is not in the ms).
            pub fn run_pausing(
                &self,
                scalars: Scalars<'_>,
                how: MsmPath,
                pause: &mut dyn FnMut(),
            ) -> Result<($proj, f32, usize), CudaError> {
                self.run_with(scalars, how, Some(pause))
            }

            fn run_with(
                &self,
                scalars: Scalars<'_>,
                how: MsmPath,
                pause: Option<&mut dyn FnMut()>,
            ) -> Result<($proj, f32, usize), CudaError> {
                let n = scalars.raw().1;
                if n >= MIN_GPU_MSM || self.host.is_null() {
                    return self.device_msm(scalars, how, pause);
                }
                let started = std::time::Instant::now();
                let host = scalars.to_host()?;
                // SAFETY: `host` points to `len` ≥ n points that outlive self (see `new`).
                let points = unsafe { std::slice::from_raw_parts(self.host, n) };
                Ok(($cpu(points, &host), started.elapsed().as_secs_f32() * 1e3, n))
            }

            /// The same as [`Self::run`], always on the device (benchmarks and probes of the
            /// device path).
            pub fn run_on_device(&self, scalars: Scalars<'_>) -> Result<($proj, f32), CudaError> {
                self.device_msm(scalars, MsmPath::Dense, None).map(|(p, ms, _)| (p, ms))
            }

            /// [`Self::run_witness`], always on the device.
            pub fn run_witness_on_device(&self, scalars: Scalars<'_>) -> Result<($proj, f32, usize), CudaError> {
                self.device_msm(scalars, MsmPath::Witness, None)
            }

            /// On the device by the path given (benchmarks and tests compare the paths).
            pub fn run_path_on_device(
                &self,
                scalars: Scalars<'_>,
                how: MsmPath,
            ) -> Result<($proj, f32, usize), CudaError> {
                self.device_msm(scalars, how, None)
            }

            /// `pause`: see [`Self::run_pausing`].
            fn device_msm(
                &self,
                scalars: Scalars<'_>,
                how: MsmPath,
                mut pause: Option<&mut dyn FnMut()>,
            ) -> Result<($proj, f32, usize), CudaError> {
                let (ptr, n, on_device) = scalars.raw();
                assert!(n <= self.len, "MSM: {} scalars for {} points", n, self.len);
                let mut out = <$raw_proj>::default();
                let mut ms = 0f32;
                let mut dense = n;
                let (pause_fn, pause_arg): (Option<ffi::PauseFn>, *mut std::ffi::c_void) = match pause.as_mut() {
                    Some(p) => (Some(call_pause), p as *mut &mut dyn FnMut() as *mut std::ffi::c_void),
                    None => (None, std::ptr::null_mut()),
                };
                check(unsafe {
                    ffi::$run(
                        self.ctx, ptr, n, on_device, how as u32, pause_fn, pause_arg, &mut out, &mut ms, &mut dense,
                    )
                })?;
                // SAFETY: blstrs' projective type is repr(transparent) over blst's, and sppark's
                // Jacobian result has blst's layout (X, Y, Z in Montgomery form).
                Ok((unsafe { std::mem::transmute::<$raw_proj, $proj>(out) }, ms, dense))
            }

            /// How many points a long sppark MSM runs between two pauses (`cuda/msm_chunked.cuh`;
            /// the default is about sppark's own batch). Tests set it small to pause small MSMs.
            pub fn set_pause_chunk(&mut self, points: usize) {
                unsafe { ffi::$chunk(self.ctx, points) }
            }

            /// How many points a staged run copies up and sums at a time (default: 3.5 GiB of
            /// points, `cuda/msm.cu`). Tests set it small to run small MSMs in several chunks.
            pub fn set_stage_chunk(&mut self, points: usize) {
                assert!(self.staged, "only a staged context runs in chunks of copied points");
                unsafe { ffi::$stage_chunk(self.ctx, points) }
            }

            /// At most this many windows a group in the wide path (`cuda/msm_wide.cuh`: a
            /// group's digits, sort, buckets and reduction before the next group's); 0, the
            /// default, leaves it to the device's room. Tests set it to take every group size.
            pub fn set_wide_group(&mut self, windows: u32) {
                unsafe { ffi::$wide_group(self.ctx, windows) }
            }

            /// Never read the host points again (resident contexts only): small MSMs run on
            /// the device too, and the host copy may be freed.
            pub fn forget_host(&mut self) {
                assert!(self.resident, "a streaming context reads its host points on every call");
                self.host = std::ptr::null();
            }

            pub fn len(&self) -> usize {
                self.len
            }

            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            pub fn resident(&self) -> bool {
                self.resident
            }

            pub fn staged(&self) -> bool {
                self.staged
            }

            /// Whether a staged context's host memory is page-locked.
            pub fn pinned(&self) -> bool {
                self.pinned
            }

            /// Bytes of the points themselves.
            pub fn points_bytes(&self) -> u64 {
                (self.len * std::mem::size_of::<$affine>()) as u64
            }

            /// Device bytes the points occupy when resident.
            pub fn resident_bytes(&self) -> u64 {
                if self.resident {
                    self.points_bytes()
                } else {
                    0
                }
            }

            /// Host bytes a staged context owns (0 otherwise: other contexts' host points
            /// belong to the caller).
            pub fn host_bytes(&self) -> u64 {
                if self.staged {
                    self.points_bytes()
                } else {
                    0
                }
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                unsafe { ffi::$destroy(self.ctx) };
            }
        }
    };
}

msm_context!(
    MsmG1,
    ffi::MsmG1Ctx,
    G1Affine,
    blst_p1_affine,
    G1Projective,
    blst_p1,
    cuzk_msm_g1_create,
    cuzk_msm_g1_create_staged,
    cuzk_msm_g1_fill,
    cuzk_msm_g1_run,
    cuzk_msm_g1_set_chunk,
    cuzk_msm_g1_set_stage_chunk,
    cuzk_msm_g1_set_wide_group,
    cuzk_msm_g1_destroy,
    msm_g1
);
msm_context!(
    MsmG2,
    ffi::MsmG2Ctx,
    G2Affine,
    blst_p2_affine,
    G2Projective,
    blst_p2,
    cuzk_msm_g2_create,
    cuzk_msm_g2_create_staged,
    cuzk_msm_g2_fill,
    cuzk_msm_g2_run,
    cuzk_msm_g2_set_chunk,
    cuzk_msm_g2_set_stage_chunk,
    cuzk_msm_g2_set_wide_group,
    cuzk_msm_g2_destroy,
    msm_g2
);

impl MsmG1 {
    /// The index (in the context) of the first of resident points `[offset, offset + n)`
    /// outside G1, checked on the device (`cuda/subgroup.cuh`); None when all are inside.
    pub fn first_outside_subgroup(
        &self,
        offset: usize,
        n: usize,
        c: &SubgroupConstants,
    ) -> Result<Option<usize>, CudaError> {
        assert!(self.resident || self.staged, "only resident or staged points are checked on the device");
        let mut bad = usize::MAX;
        let (lo, hi) = (c.g1_scalar as u64, (c.g1_scalar >> 64) as u64);
        check(unsafe {
            ffi::cuzk_msm_g1_first_outside_subgroup(self.ctx, offset, n, c.beta.as_ptr(), lo, hi, c.g1_bits, &mut bad)
        })?;
        Ok((bad != usize::MAX).then_some(offset + bad))
    }
}

impl MsmG2 {
    /// The same in G2.
    pub fn first_outside_subgroup(
        &self,
        offset: usize,
        n: usize,
        c: &SubgroupConstants,
    ) -> Result<Option<usize>, CudaError> {
        assert!(self.resident || self.staged, "only resident or staged points are checked on the device");
        let mut bad = usize::MAX;
        check(unsafe {
            ffi::cuzk_msm_g2_first_outside_subgroup(
                self.ctx,
                offset,
                n,
                c.psi_x.as_ptr(),
                c.psi_y.as_ptr(),
                c.g2_scalar,
                c.g2_bits,
                &mut bad,
            )
        })?;
        Ok((bad != usize::MAX).then_some(offset + bad))
    }
}
