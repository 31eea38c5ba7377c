//! Groth16 proving from a [`ProvingAssignment`]: the backend interface, the shape checks every
//! backend shares, and the CPU backend (rayon NTTs + blst Pippenger MSMs).
//!
//! With r, s random:
//!   A  = α + Σ wᵢ·Aᵢ + r·δ                       (G1; inputs all, aux by A-density)
//!   B  = β + Σ wᵢ·Bᵢ + s·δ                       (G2, and the same in G1 for C)
//!   C  = Σ hᵢ·Hᵢ + Σ aux·Lᵢ + s·A + r·B_G1 − r·s·δ
//! where h are the coefficients of (a(x)·b(x) − c(x)) / (xⁿ − 1).

use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::Curve;
use rand_core::RngCore;
use rayon::prelude::*;

use crate::assignment::ProvingAssignment;
use crate::msm::{dense_scalars, msm_g1, msm_g2};
use crate::ntt::Domain;
use crate::proof::Proof;
use crate::srs::Srs;

/// The per-proof randomness (r, s). Fresh and secret for every proof.
#[derive(Clone, Copy, Debug)]
pub struct Randomness {
    pub r: Fr,
    pub s: Fr,
}

impl Randomness {
    pub fn random(rng: &mut impl RngCore) -> Self {
        Randomness { r: Fr::random(&mut *rng), s: Fr::random(&mut *rng) }
    }
}

/// How soon a partition must be proved. A backend that shares a device lets more urgent work
/// go first, at the next phase boundary of a less urgent partition in hand: deadline work
/// passes PoRep, and a WinningPoSt passes a WindowPoSt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Urgency {
    /// PoRep, SnapDeals, and anything below HIGH priority.
    #[default]
    Normal,
    /// Deadline work at HIGH priority (WindowPoSt: a missed deadline faults the sectors).
    High,
    /// Deadline work at CRITICAL priority (WinningPoSt: a late one loses the block reward).
    Critical,
}

/// Whose partition a backend is proving, for status reports ("device 0 is on job X"), and how
/// urgently. It changes nothing in the proof.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkLabel {
    pub job_id: String,
    pub proof_kind: String,
    pub urgency: Urgency,
}

#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    #[error("assignment does not fit these parameters: {0} (wrong parameter file for this circuit?)")]
    ShapeMismatch(String),
    #[error("the constraint system is too large for an FFT over this field ({0} constraints)")]
    TooLarge(usize),
    #[error("backend {backend} failed: {message}")]
    Backend { backend: String, message: String },
}

/// Where the time of one partition proof went.
#[derive(Clone, Debug, Default)]
pub struct ProveTimings {
    /// The device that proved it (GPU backends); None on the CPU.
    pub device: Option<u32>,
    /// Waiting for the device to be free (another partition held it).
    pub device_wait: Duration,
    /// When this partition held the device, for timelines.
    pub device_span: Option<(Instant, Instant)>,
    /// Host → device copies of a, b, c or the witness (GPU backends).
    pub upload: Duration,
    /// Expanding a compact witness before proving (PCE path; set by the engine).
    pub witness_expand: Duration,
    /// a = A·w, b = B·w, c = C·w from pre-compiled matrices: on the device (GPU-resident
    /// path), or on the host just before proving (set by the engine).
    pub matvec: Duration,
    pub ntt: Duration,
    pub msm_h: Duration,
    pub msm_l: Duration,
    pub msm_a: Duration,
    pub msm_b_g1: Duration,
    pub msm_b_g2: Duration,
    pub total: Duration,
}

/// The engine's host-memory budget as a backend sees it, for bytes beyond a partition's share
/// (a GPU backend's retry on the CPU builds a, b, c on the host): now or not at all. The engine
/// implements it with its budget; [`HostBytes`] holds what a backend took.
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

/// A prover backend turns one synthesized partition into one proof.
pub trait ProverBackend: Send + Sync {
    fn name(&self) -> String;
    fn prove(&self, srs: &Srs, assignment: ProvingAssignment, rs: Randomness, label: &WorkLabel) -> Result<(Proof, ProveTimings), ProveError>;

    /// How many partitions the backend proves well at once (the scheduler runs this many
    /// prover workers). None: the operator's `pipeline.prover_workers` decides.
    fn parallelism(&self) -> Option<usize> {
        None
    }

    /// Per-device state for status reports; empty for the CPU backend.
    fn devices(&self) -> Vec<DeviceReport> {
        Vec::new()
    }

    /// These parameters are going away (evicted): drop any copy the backend keeps of them.
    fn forget_srs(&self, _srs: &Srs) {}

    /// The engine's budget, for host memory beyond a partition's share (a GPU backend's
    /// retry on the CPU). Called once, when the engine starts: the budget is sized from the
    /// backend (its parallelism, where a, b, c are made), so it cannot come with the backend.
    fn attach_host_memory(&self, _memory: Arc<dyn HostMemory>) {}

    /// False once the backend can never prove again in this process (every GPU lost to a
    /// sticky error, or hung): the daemon then exits non-zero so that its supervisor restarts it.
    fn usable(&self) -> bool {
        true
    }

    /// A partition of job `job_id` has made no progress in the prove stage for the engine's
    /// stall limit. A backend whose devices can hang takes the device holding it out of
    /// service, as after a sticky error (a hung device never gives its lock back, and every
    /// partition queued for it would wait too), and says true; false: nothing of it is known
    /// here (the CPU backend).
    fn stalled(&self, _job_id: &str) -> bool {
        false
    }

    /// Parameters just loaded, before any job has them. A backend that copies every point to
    /// every device it proves on may do so now and release the host copy
    /// ([`Srs::release_points`]); the host then keeps only the verifying key and the lengths.
    fn adopt_srs(&self, _srs: &mut Srs) {}

    /// Host bytes the backend keeps for these parameters beside the [`Srs`] itself: queries
    /// it stages from host memory of its own (the CUDA backend, on a device that cannot hold
    /// every point). The engine's budget counts them with the parameters.
    fn host_bytes(&self, _srs: &Srs) -> u64 {
        0
    }

    /// The backend's own engine for a generated setup's fixed-base multiplications
    /// (`srs.generated`), when it has one: a device does a 32 GiB circuit's in seconds, where
    /// the CPU takes minutes. None (the default): the CPU does them.
    fn fixed_base(&self) -> Option<Arc<dyn crate::setup::FixedBaseMul>> {
        None
    }

    /// Offered before a generated setup computes any point (see [`crate::srs_sink`]): a
    /// backend that will hold every point on every device it proves on may take them chunk by
    /// chunk as they are made, so that the host never holds the whole key. `None` (the
    /// default): the points are made on the host, and [`Self::adopt_srs`] sees them after.
    fn begin_queries(&self, _path: &std::path::Path, _id: u64, _lens: &crate::srs::QueryLens) -> Option<Box<dyn crate::srs_sink::QueryTaker + '_>> {
        None
    }

    /// A circuit's pre-compiled matrices (`cuzk_pce::PreCompiled`, as `Any`), loaded by a
    /// preload before any proof of the circuit. A backend that evaluates matrices on its
    /// devices may copy them there now, so that the circuit's first proof does not: at 32 GiB
    /// that copy takes 2–3 s inside the device region, on a deadline proof's path.
    fn adopt_matrices(&self, _matrices: &(dyn std::any::Any + Send + Sync)) {}

    /// Whether [`ProverBackend::prove_witness`] is available: the backend evaluates
    /// a = A·w, b = B·w, c = C·w itself from pre-compiled matrices (the GPU-resident path).
    fn evaluates_matrices(&self) -> bool {
        false
    }

    /// Prove from the witness alone. `witness` carries the inputs, aux and the three
    /// densities, with a, b, c empty; `matrices` is the circuit's `cuzk_pce::PreCompiled`
    /// (passed as `Any` because this crate sits below cuzk-pce). Only called when
    /// [`ProverBackend::evaluates_matrices`] is true.
    fn prove_witness(
        &self,
        _srs: &Srs,
        _matrices: &(dyn std::any::Any + Send + Sync),
        _witness: ProvingAssignment,
        _rs: Randomness,
        _label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError> {
        Err(ProveError::Backend { backend: self.name(), message: "this backend does not evaluate pre-compiled matrices".into() })
    }

    /// Whether [`ProverBackend::prove_compact`] is available: the backend also expands a
    /// compact witness itself (on its device), so the 32-byte-a-value aux vector never exists
    /// on the host — 4.2 GB per 32 GiB PoRep partition, against ~90 MB compact.
    fn expands_compact_witness(&self) -> bool {
        false
    }

    /// [`ProverBackend::prove_witness`] with the aux values still compact. Only called when
    /// [`ProverBackend::expands_compact_witness`] is true.
    fn prove_compact(
        &self,
        _srs: &Srs,
        _matrices: &(dyn std::any::Any + Send + Sync),
        _inputs: Vec<Fr>,
        _aux: crate::CompactFrVec,
        _rs: Randomness,
        _label: &WorkLabel,
    ) -> Result<(Proof, ProveTimings), ProveError> {
        Err(ProveError::Backend { backend: self.name(), message: "this backend does not expand compact witnesses".into() })
    }
}

/// One accelerator as a backend reports it.
#[derive(Clone, Debug, Default)]
pub struct DeviceReport {
    /// The CUDA ordinal (as the process sees devices).
    pub ordinal: u32,
    pub name: String,
    pub memory_total: u64,
    pub memory_free: u64,
    /// Bytes of parameters (and PCE matrices) kept on the device.
    pub resident_bytes: u64,
    pub partitions_proved: u64,
    pub failures: u64,
    /// Total time the device was held by a partition.
    pub busy: Duration,
    /// Partitions on the device or waiting for it right now.
    pub active: usize,
    /// The partition holding the device right now (None when idle).
    pub current: Option<WorkLabel>,
}

/// The sizes of an assignment as the parameters must match them.
pub struct Shape {
    pub domain: Domain,
    pub num_inputs: usize,
    pub a_aux: usize,
    pub b_inputs: usize,
    pub b_aux: usize,
}

/// Check that `assignment` and `srs` belong together; every backend calls this first, so a
/// parameter file for the wrong circuit is an error, never a garbage proof.
pub fn check_shape(srs: &Srs, w: &ProvingAssignment) -> Result<Shape, ProveError> {
    let m = w.a.len();
    if w.b.len() != m || w.c.len() != m {
        return Err(ProveError::ShapeMismatch("a, b, c differ in length".into()));
    }
    check_sizes(
        srs,
        m,
        w.input_assignment.len(),
        w.aux_assignment.len(),
        w.a_aux_density.count_ones(),
        w.b_input_density.count_ones(),
        w.b_aux_density.count_ones(),
    )
}

/// The same check from sizes alone, for backends that compute a, b, c themselves (from a
/// witness and pre-compiled matrices): `m` constraints (input rows included), the witness
/// lengths and the three density counts.
pub fn check_sizes(srs: &Srs, m: usize, num_inputs: usize, num_aux: usize, a_aux: usize, b_inputs: usize, b_aux: usize) -> Result<Shape, ProveError> {
    let domain = Domain::for_size(m).ok_or(ProveError::TooLarge(m))?;
    let mismatch = |what: &str, want: usize, have: usize| {
        Err(ProveError::ShapeMismatch(format!("{what}: circuit needs {want}, parameters have {have}")))
    };
    let shape = Shape { num_inputs, a_aux, b_inputs, b_aux, domain };
    let q = srs.query_lens();
    if q.h != shape.domain.n - 1 {
        return mismatch("H points (domain size - 1)", shape.domain.n - 1, q.h);
    }
    if srs.vk.ic.len() != shape.num_inputs {
        return mismatch("public inputs (IC points)", shape.num_inputs, srs.vk.ic.len());
    }
    if q.l != num_aux {
        return mismatch("L points (aux variables)", num_aux, q.l);
    }
    if q.a != shape.num_inputs + shape.a_aux {
        return mismatch("A points", shape.num_inputs + shape.a_aux, q.a);
    }
    if q.b_g1 != shape.b_inputs + shape.b_aux {
        return mismatch("B points", shape.b_inputs + shape.b_aux, q.b_g1);
    }
    if q.b_g2 != q.b_g1 {
        return mismatch("B points in G2", q.b_g1, q.b_g2);
    }
    Ok(shape)
}

/// Coefficients h_0..h_{n-2} of (a·b − c)/Z for evaluations a, b, c on the domain.
/// Consumes the three vectors (they are the largest buffers of a proof).
pub fn quotient_coefficients(domain: &Domain, mut a: Vec<Fr>, mut b: Vec<Fr>, mut c: Vec<Fr>) -> Vec<Fr> {
    for v in [&mut a, &mut b, &mut c] {
        v.resize(domain.n, Fr::ZERO);
    }
    let to_coset = |v: &mut Vec<Fr>| {
        domain.intt(v);
        domain.coset_ntt(v);
    };
    rayon::join(|| to_coset(&mut a), || rayon::join(|| to_coset(&mut b), || to_coset(&mut c)));
    let z_inv = domain.vanishing_on_coset_inv();
    a.par_iter_mut().zip(b.par_iter()).zip(c.par_iter()).for_each(|((x, y), z)| {
        *x = (*x * y - z) * z_inv;
    });
    drop((b, c));
    domain.coset_intt(&mut a);
    // deg(a·b − c) ≤ 2n − 2, so h has degree ≤ n − 2: the top coefficient is zero.
    a.truncate(domain.n - 1);
    a
}

/// Assemble the proof from the MSM results.
pub fn assemble(srs: &Srs, rs: Randomness, sums: MsmResults) -> Proof {
    let vk = &srs.vk;
    let delta_g1 = G1Projective::from(vk.delta_g1);
    let a = G1Projective::from(vk.alpha_g1) + sums.a + delta_g1 * rs.r;
    let b_g2 = G2Projective::from(vk.beta_g2) + sums.b_g2 + G2Projective::from(vk.delta_g2) * rs.s;
    let b_g1 = G1Projective::from(vk.beta_g1) + sums.b_g1 + delta_g1 * rs.s;
    let c = sums.h + sums.l + a * rs.s + b_g1 * rs.r - delta_g1 * (rs.r * rs.s);
    Proof { a: a.to_affine(), b: b_g2.to_affine(), c: c.to_affine() }
}

/// The five multi-scalar multiplication results a proof is assembled from.
pub struct MsmResults {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// The CPU backend. Uses the rayon pool for NTTs and blst's pool for MSMs.
#[derive(Clone, Debug, Default)]
pub struct CpuProver;

impl ProverBackend for CpuProver {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn prove(&self, srs: &Srs, w: ProvingAssignment, rs: Randomness, _label: &WorkLabel) -> Result<(Proof, ProveTimings), ProveError> {
        let start = Instant::now();
        if srs.points_released() {
            return Err(ProveError::Backend {
                backend: self.name(),
                message: format!("the host copy of {} was released (the GPUs hold it); the CPU cannot prove with it", srs.path.display()),
            });
        }
        let shape = check_shape(srs, &w)?;
        let mut t = ProveTimings::default();
        let ProvingAssignment { a_aux_density, b_input_density, b_aux_density, a, b, c, input_assignment, aux_assignment } = w;

        let timed = |f: &mut dyn FnMut() -> G1Projective, slot: &mut Duration| {
            let s = Instant::now();
            let r = f();
            *slot = s.elapsed();
            r
        };

        let s0 = Instant::now();
        let h_coeffs = quotient_coefficients(&shape.domain, a, b, c);
        t.ntt = s0.elapsed();
        let h = timed(&mut || msm_g1(&srs.h, &h_coeffs), &mut t.msm_h);
        drop(h_coeffs);
        let l = timed(&mut || msm_g1(&srs.l, &aux_assignment), &mut t.msm_l);

        let n_in = shape.num_inputs;
        let a_sum = timed(
            &mut || {
                msm_g1(&srs.a[..n_in], &input_assignment)
                    + msm_g1(&srs.a[n_in..], &dense_scalars(&aux_assignment, &a_aux_density))
            },
            &mut t.msm_a,
        );
        let b_in = dense_scalars(&input_assignment, &b_input_density);
        let b_aux = dense_scalars(&aux_assignment, &b_aux_density);
        let b_g1 = timed(
            &mut || msm_g1(&srs.b_g1[..shape.b_inputs], &b_in) + msm_g1(&srs.b_g1[shape.b_inputs..], &b_aux),
            &mut t.msm_b_g1,
        );
        let s5 = Instant::now();
        let b_g2 = msm_g2(&srs.b_g2[..shape.b_inputs], &b_in) + msm_g2(&srs.b_g2[shape.b_inputs..], &b_aux);
        t.msm_b_g2 = s5.elapsed();

        let proof = assemble(srs, rs, MsmResults { h, l, a: a_sum, b_g1, b_g2 });
        t.total = start.elapsed();
        Ok((proof, t))
    }
}
