//! The device-exclusive phases of one partition, in the order they run: inputs up, a/b/c (by
//! NTT from host a, b, c, or by device mat-vec from the witness), the quotient, then the H, L,
//! A, B_G1 and B_G2 MSMs. The caller ([`super::prover`]) holds the device lock around them and
//! owns device choice, retry and health; `boundary` is called between phases, when none of
//! this partition's kernels is running, so that deadline work can take the device there: after
//! the mat-vec, after the NTT, after each MSM, and inside the long MSMs (between the wide path's
//! steps, or between chunks of sppark's; see msm.rs), so that no stretch without one is much
//! over ~0.3 s at 32 GiB.

use std::time::Duration;

use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use cuzk_backend::ProveTimings;
use cuzk_groth16::prover::{MsmResults, Shape};
use cuzk_groth16::ProvingAssignment;
use group::Group;

use super::error::CudaError;
use super::msm::{MsmG1, MsmG2, MsmPath, Scalars};
use super::ntt;
use super::pce::DevicePce;
use super::resident::SrsOnDevice;
use super::witness::{self, WitnessRef};

/// Host vectors of a partition proved on the host path.
pub(crate) struct HostInputs<'a> {
    pub w: &'a ProvingAssignment,
    /// All inputs, then the A-dense aux values.
    pub a_scalars: Vec<Fr>,
    /// The B-dense inputs, then the B-dense aux values.
    pub b_scalars: std::sync::Arc<Vec<Fr>>,
}

/// Device bytes the host path needs beside the parameters: a, b, c and two scalar vectors.
pub(crate) fn host_working_bytes(shape: &Shape, num_aux: usize) -> u64 {
    3 * shape.domain.n as u64 * 32 + 2 * num_aux as u64 * 32
}

/// Device bytes the witness path needs beside the parameters and matrices.
pub(crate) fn witness_working_bytes(shape: &Shape, w: &WitnessRef<'_>) -> u64 {
    3 * shape.domain.n as u64 * 32 + 2 * (w.num_inputs() + w.num_aux()) as u64 * 32
}

/// a, b, c from the host, then quotient and MSMs.
pub(crate) fn host_abc(
    index: usize,
    dev: &SrsOnDevice,
    shape: &Shape,
    inputs: &HostInputs<'_>,
    t: &mut ProveTimings,
    boundary: &mut dyn FnMut(),
) -> Result<MsmResults, CudaError> {
    let w = inputs.w;
    let n = shape.domain.n;
    tracing::debug!(device = index, n, "quotient (host a, b, c)");
    let (d_h, qt) = ntt::quotient(index, &shape.domain, &w.a, &w.b, &w.c)?;
    tracing::debug!(upload_ms = qt.upload_ms, ntt_ms = qt.ntt_ms, "quotient done; MSMs");
    t.upload += ms(qt.upload_ms);
    t.ntt = ms(qt.ntt_ms);
    boundary();
    let h = run_g1(&dev.h, Scalars::Device { buffer: &d_h, offset: 0, len: n - 1 }, &mut t.msm_h, boundary)?;
    drop(d_h);
    boundary();
    let l = run_g1(&dev.l, Scalars::Host(&w.aux_assignment), &mut t.msm_l, boundary)?;
    boundary();
    let a = run_g1(&dev.a, Scalars::Host(&inputs.a_scalars), &mut t.msm_a, boundary)?;
    boundary();
    let b_g1 = run_g1(&dev.b_g1, Scalars::Host(&inputs.b_scalars), &mut t.msm_b_g1, boundary)?;
    boundary();
    let b_g2 = run_g2(&dev.b_g2, Scalars::Host(&inputs.b_scalars), &mut t.msm_b_g2, boundary)?;
    Ok(MsmResults { h, l, a, b_g1, b_g2 })
}

/// The GPU-resident PCE path: only the witness goes up (compact when it came compact); a, b, c
/// and the dense scalars are made on the device.
pub(crate) fn witness(
    index: usize,
    dev: &SrsOnDevice,
    dpce: &DevicePce,
    shape: &Shape,
    w: WitnessRef<'_>,
    t: &mut ProveTimings,
    boundary: &mut dyn FnMut(),
) -> Result<MsmResults, CudaError> {
    let n = shape.domain.n;
    let n_in = w.num_inputs();
    let n_aux = w.num_aux();
    tracing::debug!(
        device = index,
        n,
        n_in,
        n_aux,
        compact = matches!(w, WitnessRef::Compact { .. }),
        "witness upload and device mat-vec"
    );
    let (witness, up) = witness::upload(index, w)?;
    t.upload += ms(up.copy_ms);
    t.witness_expand += ms(up.expand_ms);
    let (abc, mv_ms) = dpce.eval(&shape.domain, &witness)?;
    t.matvec = ms(mv_ms);
    tracing::debug!(matvec_ms = mv_ms, "mat-vec done; quotient");
    boundary();
    t.ntt = ms(ntt::quotient_on_device(&shape.domain, &abc)?);
    tracing::debug!("quotient done; MSMs");
    // h is in a's place; b and c are done with, and their 2n elements go to the H MSM's
    // temporaries (and to deadline work that takes the device at the boundary).
    let ntt::Abc { a: h_buf, bc } = abc;
    drop(bc);
    boundary();
    let h = run_g1(&dev.h, Scalars::Device { buffer: &h_buf, offset: 0, len: n - 1 }, &mut t.msm_h, boundary)?;
    drop(h_buf);
    boundary();
    // L, A and B take witness values: mostly 0/1, so their MSMs are split (see msm.rs).
    let l = witness_g1(
        &dev.l,
        Scalars::Device { buffer: &witness, offset: n_in, len: n_aux },
        "L",
        &mut t.msm_l,
        boundary,
    )?;
    boundary();
    let a_s = dpce.gather_a(&witness)?;
    let a =
        witness_g1(&dev.a, Scalars::Device { buffer: &a_s, offset: 0, len: a_s.len() }, "A", &mut t.msm_a, boundary)?;
    drop(a_s);
    boundary();
    let b_s = dpce.gather_b(&witness)?;
    let b_g1 = witness_g1(
        &dev.b_g1,
        Scalars::Device { buffer: &b_s, offset: 0, len: b_s.len() },
        "B_G1",
        &mut t.msm_b_g1,
        boundary,
    )?;
    boundary();
    let b_g2 =
        witness_g2(&dev.b_g2, Scalars::Device { buffer: &b_s, offset: 0, len: b_s.len() }, &mut t.msm_b_g2, boundary)?;
    Ok(MsmResults { h, l, a, b_g1, b_g2 })
}

pub(crate) fn ms(v: f32) -> Duration {
    Duration::from_secs_f64(v.max(0.0) as f64 / 1e3)
}

/// One query's MSM (the identity when the query is empty, or when B in G2 runs on the CPU),
/// its time into `slot`; `run` returns the point, the ms and how many scalars were dense.
fn run_query<M, P: Group>(
    m: &Option<M>,
    query: &str,
    slot: &mut Duration,
    run: impl FnOnce(&M) -> Result<(P, f32, usize), CudaError>,
) -> Result<P, CudaError> {
    match m {
        Some(m) => {
            let (r, t, dense) = run(m)?;
            tracing::debug!(query, dense, ms = t, "MSM");
            *slot = ms(t);
            Ok(r)
        }
        None => Ok(P::identity()),
    }
}

/// Dense G1 scalars (H; the host path's L, A, B). A long one pauses at `boundary` inside the
/// MSM: the wide path between its steps, sppark's Pippenger (host scalars, streaming points)
/// between chunks of points.
fn run_g1(
    m: &Option<MsmG1>,
    s: Scalars<'_>,
    slot: &mut Duration,
    boundary: &mut dyn FnMut(),
) -> Result<G1Projective, CudaError> {
    run_query(m, "G1", slot, |m| m.run_pausing(s, MsmPath::Dense, boundary))
}

/// B in G2 from host scalars: sppark's Pippenger, pausing between chunks of points.
fn run_g2(
    m: &Option<MsmG2>,
    s: Scalars<'_>,
    slot: &mut Duration,
    boundary: &mut dyn FnMut(),
) -> Result<G2Projective, CudaError> {
    run_query(m, "G2", slot, |m| m.run_pausing(s, MsmPath::Dense, boundary))
}

/// Witness scalars (L, A, B): split on the device (see msm.rs).
/// A witness too dense to split (WindowPoSt's) takes the wide path, and pauses there.
fn witness_g1(
    m: &Option<MsmG1>,
    s: Scalars<'_>,
    query: &str,
    slot: &mut Duration,
    boundary: &mut dyn FnMut(),
) -> Result<G1Projective, CudaError> {
    run_query(m, query, slot, |m| m.run_pausing(s, MsmPath::Witness, boundary))
}

/// B in G2 from witness scalars: split when it can be; a dense one (WindowPoSt's) takes the
/// wide path like the G1 witnesses, and pauses there.
fn witness_g2(
    m: &Option<MsmG2>,
    s: Scalars<'_>,
    slot: &mut Duration,
    boundary: &mut dyn FnMut(),
) -> Result<G2Projective, CudaError> {
    run_query(m, "B_G2", slot, |m| m.run_pausing(s, MsmPath::Witness, boundary))
}
