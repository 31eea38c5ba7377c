//! The C ABI of `cuda/*.cu`. Every call returns `sppark::Error` (the glue's RustError); the
//! opaque context types are only ever handled through pointers.

use std::ffi::c_void;

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::Scalar as Fr;
use sppark::Error;

#[repr(C)]
pub struct DeviceProps {
    pub cuda_id: i32,
    pub major: i32,
    pub minor: i32,
    pub sm_count: i32,
    pub total_mem: usize,
    pub free_mem: usize,
    pub name: [u8; 256],
    pub pci_bus_id: [u8; 32],
}

/// `cuzk_pause_fn` (cuda/common.cuh): called inside a long device step with none of its
/// kernels running; must not unwind.
pub type PauseFn = unsafe extern "C" fn(arg: *mut c_void);

#[repr(C)]
pub struct MsmG1Ctx {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct MsmG2Ctx {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct CsrDev {
    _opaque: [u8; 0],
}

extern "C" {
    pub fn cuzk_cuda_versions(runtime: *mut i32, driver: *mut i32) -> Error;
    pub fn cuzk_device_count(n: *mut usize) -> Error;
    pub fn cuzk_device_props(index: usize, out: *mut DeviceProps) -> Error;
    pub fn cuzk_device_mem(index: usize, free: *mut usize, total: *mut usize) -> Error;
    pub fn cuzk_set_margin(slack: usize, divisor: usize);
    pub fn cuzk_retain_temporaries(index: usize, retain: bool) -> Error;
    pub fn cuzk_retained_bytes(index: usize, bytes: *mut usize) -> Error;
    pub fn cuzk_host_register(ptr: *mut c_void, bytes: usize) -> Error;
    pub fn cuzk_host_unregister(ptr: *mut c_void) -> Error;
    pub fn cuzk_device_free(index: usize, d_ptr: *mut c_void);
    pub fn cuzk_device_alloc(index: usize, bytes: usize, d_out: *mut *mut c_void) -> Error;
    pub fn cuzk_copy_to_device(
        index: usize,
        d_dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        ms: *mut f32,
    ) -> Error;
    pub fn cuzk_copy_to_host(index: usize, dst: *mut c_void, d_src: *const c_void, bytes: usize) -> Error;

    pub fn cuzk_ntt(index: usize, inout: *mut Fr, lg_n: u32, order: i32, direction: i32, ty: i32) -> Error;
    pub fn cuzk_quotient(
        index: usize,
        a: *const Fr,
        b: *const Fr,
        c: *const Fr,
        m: usize,
        lg_n: u32,
        z_inv: *const Fr,
        d_h: *mut *mut Fr,
        h_host: *mut Fr,
        ms: *mut f32,
    ) -> Error;
    pub fn cuzk_quotient_device(
        index: usize,
        d_a: *mut Fr,
        d_bc: *mut Fr,
        lg_n: u32,
        z_inv: *const Fr,
        ms: *mut f32,
    ) -> Error;

    pub fn cuzk_msm_g1_create(
        index: usize,
        points: *const blst_p1_affine,
        n: usize,
        resident: bool,
        out: *mut *mut MsmG1Ctx,
    ) -> Error;
    pub fn cuzk_msm_g1_run(
        ctx: *mut MsmG1Ctx,
        scalars: *const Fr,
        n: usize,
        on_device: bool,
        how: u32,
        pause: Option<PauseFn>,
        pause_arg: *mut c_void,
        out: *mut blst_p1,
        ms: *mut f32,
        dense: *mut usize,
    ) -> Error;
    pub fn cuzk_msm_g1_create_staged(index: usize, n: usize, out: *mut *mut MsmG1Ctx, pinned: *mut bool) -> Error;
    pub fn cuzk_msm_g1_fill(ctx: *mut MsmG1Ctx, offset: usize, points: *const blst_p1_affine, n: usize) -> Error;
    pub fn cuzk_msm_g1_set_chunk(ctx: *mut MsmG1Ctx, points: usize);
    pub fn cuzk_msm_g1_set_stage_chunk(ctx: *mut MsmG1Ctx, points: usize);
    pub fn cuzk_msm_g1_set_wide_group(ctx: *mut MsmG1Ctx, windows: u32);
    pub fn cuzk_msm_g1_destroy(ctx: *mut MsmG1Ctx);
    pub fn cuzk_msm_g2_create(
        index: usize,
        points: *const blst_p2_affine,
        n: usize,
        resident: bool,
        out: *mut *mut MsmG2Ctx,
    ) -> Error;
    pub fn cuzk_msm_g2_run(
        ctx: *mut MsmG2Ctx,
        scalars: *const Fr,
        n: usize,
        on_device: bool,
        how: u32,
        pause: Option<PauseFn>,
        pause_arg: *mut c_void,
        out: *mut blst_p2,
        ms: *mut f32,
        dense: *mut usize,
    ) -> Error;
    pub fn cuzk_msm_g2_create_staged(index: usize, n: usize, out: *mut *mut MsmG2Ctx, pinned: *mut bool) -> Error;
    pub fn cuzk_msm_g2_fill(ctx: *mut MsmG2Ctx, offset: usize, points: *const blst_p2_affine, n: usize) -> Error;
    pub fn cuzk_msm_g2_set_chunk(ctx: *mut MsmG2Ctx, points: usize);
    pub fn cuzk_msm_g2_set_stage_chunk(ctx: *mut MsmG2Ctx, points: usize);
    pub fn cuzk_msm_g2_set_wide_group(ctx: *mut MsmG2Ctx, windows: u32);
    pub fn cuzk_msm_g2_destroy(ctx: *mut MsmG2Ctx);
    pub fn cuzk_msm_g1_first_outside_subgroup(
        ctx: *const MsmG1Ctx,
        offset: usize,
        n: usize,
        beta: *const u64,
        k_lo: u64,
        k_hi: u64,
        bits: u32,
        first_bad: *mut usize,
    ) -> Error;
    pub fn cuzk_msm_g2_first_outside_subgroup(
        ctx: *const MsmG2Ctx,
        offset: usize,
        n: usize,
        c1: *const u64,
        c2: *const u64,
        k: u64,
        bits: u32,
        first_bad: *mut usize,
    ) -> Error;

    pub fn cuzk_csr_upload(
        index: usize,
        rows: usize,
        row_ptr: *const c_void,
        wide: bool,
        cols: *const u32,
        cidx: *const u32,
        nnz: usize,
        coeffs: *const Fr,
        ncoeffs: usize,
        out: *mut *mut CsrDev,
    ) -> Error;
    pub fn cuzk_csr_free(m: *mut CsrDev);
    /// Device bytes the matrix holds, with its lists of long rows.
    pub fn cuzk_csr_bytes(m: *const CsrDev) -> usize;
    pub fn cuzk_pce_eval(
        index: usize,
        mats: *const *const CsrDev,
        d_w: *const Fr,
        n_inputs: u32,
        lg_n: u32,
        d_a: *mut Fr,
        d_bc: *mut Fr,
        ms: *mut f32,
    ) -> Error;
    pub fn cuzk_expand_compact(
        index: usize,
        d_out: *mut Fr,
        d_tags: *const u64,
        d_offs: *const u32,
        d_others: *const Fr,
        n_others: usize,
        len: usize,
        one: *const Fr,
        ms: *mut f32,
    ) -> Error;
    pub fn cuzk_gather(index: usize, d_dst: *mut Fr, d_src: *const Fr, d_idx: *const u32, n: usize) -> Error;

    pub fn cuzk_fixed_base_g1(
        index: usize,
        table: *const blst_p1_affine,
        table_len: usize,
        window: i32,
        scalars: *const u64,
        n: usize,
        out: *mut blst_p1_affine,
    ) -> Error;
    pub fn cuzk_fixed_base_g2(
        index: usize,
        table: *const blst_p2_affine,
        table_len: usize,
        window: i32,
        scalars: *const u64,
        n: usize,
        out: *mut blst_p2_affine,
    ) -> Error;
}
