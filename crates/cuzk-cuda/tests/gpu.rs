//! GPU tests: every device primitive against the CPU backend on random data with edge cases,
//! and whole proofs on a hand-made circuit checked by our verifier and by bellperson's.
//! Needs a CUDA device: built only with the `cuda` feature, run by scripts/gpu-test.sh on a
//! GPU machine (CI compiles them; a machine without a GPU fails them, it does not skip).
#![cfg(feature = "cuda")]

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use cuzk_backend::{ProverBackend, Witness};
use cuzk_cuda::buffer::DeviceBuffer;
use cuzk_cuda::msm::{MsmG1, MsmG2, MsmPath, Scalars, MIN_GPU_MSM};
use cuzk_cuda::ntt::{self, Direction, Kind, Order};
use cuzk_cuda::pce::{query_indices, DevicePce};
use cuzk_cuda::{B2Placement, CudaOptions, CudaProver, Residency};
use cuzk_groth16::msm::{dense_scalars, msm_g1, msm_g2};
use cuzk_groth16::ntt::Domain;
use cuzk_groth16::prover::quotient_coefficients;
use cuzk_groth16::{PreparedVerifyingKey, Proof, ProvingAssignment, Randomness, Srs, SubgroupCheck};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[path = "gpu/failures.rs"]
mod failures;
#[path = "gpu/matvec.rs"]
mod matvec;
#[path = "gpu/msm.rs"]
mod msm;
#[path = "gpu/pool.rs"]
mod pool;
#[path = "gpu/proofs.rs"]
mod proofs;
#[path = "gpu/setup.rs"]
mod setup;
#[path = "gpu/staged.rs"]
mod staged;

const DEV: usize = 0;

fn rng(seed: u64) -> ChaCha8Rng {
    // Every test starts here: route the prover's debug log to the test output (RUST_LOG).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    ChaCha8Rng::seed_from_u64(seed)
}

fn random_scalars(r: &mut ChaCha8Rng, n: usize) -> Vec<Fr> {
    (0..n).map(|_| Fr::random(&mut *r)).collect()
}

#[test]
fn devices_are_listed_and_bad_indices_are_errors() {
    let all = cuzk_cuda::device::devices().unwrap();
    assert!(!all.is_empty(), "no CUDA device");
    for d in &all {
        assert!(d.total_memory > 0 && d.sm_count > 0, "{d:?}");
    }
    let e = cuzk_cuda::device::select(&[999]).unwrap_err();
    assert!(e.message.contains("999"), "{e}");
    assert!(DeviceBuffer::<Fr>::alloc(all.len() + 5, 16).is_err(), "out-of-range device index must be an error");
}

/// The runtime linked is the one `--version` names, and this machine's driver runs it (the
/// refusal itself is unit-tested with injected versions in src/driver.rs).
#[test]
fn the_driver_runs_the_runtime_this_build_links() {
    let v = cuzk_cuda::device::driver().expect("driver check");
    assert_eq!(
        v.runtime.to_string(),
        cuzk_cuda::driver::RUNTIME,
        "linked runtime vs the toolkit that compiled the glue"
    );
    assert!(v.driver.major >= v.runtime.major, "{v:?}");
    eprintln!("CUDA runtime {}, driver supports CUDA {}", v.runtime, v.driver);
}

#[test]
fn device_out_of_memory_is_an_error_and_the_device_keeps_working() {
    let e = DeviceBuffer::<Fr>::alloc(DEV, 1 << 40).err().expect("32 TiB allocation must fail");
    assert!(e.is_out_of_memory(), "{e}");
    let (b, _) = DeviceBuffer::upload(DEV, &[Fr::ONE, Fr::ZERO]).unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![Fr::ONE, Fr::ZERO]);
}

/// Uploads of 64 MiB or more go through page-locked slots filled by several threads
/// (cuda/transfer.cu): every byte lands where it belongs, below and above that size, with an
/// uneven last slot, and at an offset into a buffer.
#[test]
fn large_uploads_are_staged_and_land_whole() {
    let mut r = rng(16);
    let mib = (1usize << 20) / 32;
    for n in [64 * mib - 1, 64 * mib, 200 * mib + 7] {
        let v = random_scalars(&mut r, n);
        let (b, _) = DeviceBuffer::upload(DEV, &v).unwrap();
        assert!(b.to_vec().unwrap() == v, "upload of {n} scalars");
        // Into the middle of a larger buffer: nothing before or after it is touched.
        let big = DeviceBuffer::<Fr>::alloc(DEV, n + 10).unwrap();
        let edges = [Fr::from(7u64); 5];
        big.write(0, &edges).unwrap();
        big.write(n + 5, &edges).unwrap();
        big.write(5, &v).unwrap();
        let back = big.to_vec().unwrap();
        assert!(back[..5] == edges && back[n + 5..] == edges && back[5..n + 5] == v[..], "upload of {n} at an offset");
    }
}

#[test]
fn ntt_matches_cpu() {
    let mut r = rng(1);
    for lg in [1u32, 2, 5, 10, 11, 16, 18] {
        eprintln!("NTT 2^{lg}");
        let d = Domain::for_size(1 << lg).unwrap();
        let v = random_scalars(&mut r, d.n);
        type CpuNtt = fn(&Domain, &mut [Fr]);
        let cases: [(&str, Kind, Direction, CpuNtt); 3] = [
            ("intt", Kind::Standard, Direction::Inverse, |d, v| d.intt(v)),
            ("coset ntt", Kind::Coset, Direction::Forward, |d, v| d.coset_ntt(v)),
            ("coset intt", Kind::Coset, Direction::Inverse, |d, v| d.coset_intt(v)),
        ];
        for (what, kind, dir, cpu) in cases {
            let mut want = v.clone();
            cpu(&d, &mut want);
            let mut got = v.clone();
            ntt::ntt(DEV, &mut got, Order::NN, dir, kind).unwrap();
            assert!(got == want, "{what} 2^{lg}");
        }
    }
}

#[test]
fn quotient_matches_cpu_including_padding_and_zero_inputs() {
    let mut r = rng(2);
    for m in [1usize, 2, 3, 1000, 1024, 1025, 70_000, (1 << 20) - 5] {
        eprintln!("quotient m={m}");
        let d = Domain::for_size(m).unwrap();
        let (a, b, c) = (random_scalars(&mut r, m), random_scalars(&mut r, m), random_scalars(&mut r, m));
        let want = quotient_coefficients(&d, a.clone(), b.clone(), c.clone());
        let got = ntt::quotient_to_host(DEV, &d, &a, &b, &c).unwrap();
        assert!(got == want, "quotient m={m}");
    }
    let d = Domain::for_size(4096).unwrap();
    let z = vec![Fr::ZERO; 4096];
    assert!(ntt::quotient_to_host(DEV, &d, &z, &z, &z).unwrap().iter().all(|x| x.is_zero_vartime()));
}

fn edge_scalars(r: &mut ChaCha8Rng, n: usize) -> Vec<Fr> {
    let mut s = random_scalars(r, n);
    for (i, x) in s.iter_mut().enumerate() {
        match i % 7 {
            0 => *x = Fr::ZERO,
            1 => *x = Fr::ONE,
            2 => *x = -Fr::ONE,
            _ => {}
        }
    }
    s
}

/// `n` points: multiples of `bases` random points (few bases keep generation cheap, since
/// every point costs a scalar multiplication).
fn points<P>(r: &mut ChaCha8Rng, n: usize, bases: usize) -> Vec<P::AffineRepr>
where
    P: Group<Scalar = Fr> + Curve,
    P::AffineRepr: PrimeCurveAffine,
{
    let base: Vec<P> = (0..n.min(bases)).map(|_| P::random(&mut *r)).collect();
    let mut out = vec![P::AffineRepr::identity(); n];
    let proj: Vec<P> = (0..n).map(|i| base[i % base.len()] * Fr::from(i as u64 + 1)).collect();
    P::batch_normalize(&proj, &mut out);
    out
}

fn g1_points(r: &mut ChaCha8Rng, n: usize) -> Vec<G1Affine> {
    points::<G1Projective>(r, n, 512)
}

fn g2_points(r: &mut ChaCha8Rng, n: usize) -> Vec<G2Affine> {
    points::<G2Projective>(r, n, 64)
}

/// Witness-like scalars: `ones` and `zeros` in percent, the rest random, -1 or 2, scattered.
fn witness_scalars(r: &mut ChaCha8Rng, n: usize, ones: u32, zeros: u32) -> Vec<Fr> {
    (0..n)
        .map(|_| {
            let roll = r.next_u32() % 100;
            if roll < ones {
                Fr::ONE
            } else if roll < ones + zeros {
                Fr::ZERO
            } else {
                match r.next_u32() % 3 {
                    0 => -Fr::ONE,
                    1 => Fr::from(2u64),
                    _ => Fr::random(&mut *r),
                }
            }
        })
        .collect()
}

/// `n` distinct points, fast enough for millions: per chunk a random start and repeated
/// addition of one random step, chunks on all cores.
fn many_points<P>(r: &mut ChaCha8Rng, n: usize) -> Vec<P::AffineRepr>
where
    P: Group + Curve + Send + Sync,
    P::AffineRepr: PrimeCurveAffine + Send,
{
    const CHUNK: usize = 1 << 14;
    let step = P::random(&mut *r);
    let starts: Vec<P> = (0..n.div_ceil(CHUNK)).map(|_| P::random(&mut *r)).collect();
    let mut out = vec![P::AffineRepr::identity(); n];
    let threads = std::thread::available_parallelism().map_or(4, |t| t.get());
    let per_thread = starts.len().div_ceil(threads) * CHUNK;
    std::thread::scope(|scope| {
        for (t, part) in out.chunks_mut(per_thread).enumerate() {
            let starts = &starts[t * per_thread / CHUNK..];
            scope.spawn(move || {
                for (o, start) in part.chunks_mut(CHUNK).zip(starts) {
                    let mut acc = *start;
                    let proj: Vec<P> = (0..o.len())
                        .map(|_| {
                            acc += step;
                            acc
                        })
                        .collect();
                    P::batch_normalize(&proj, o);
                }
            });
        }
    });
    out
}

/// The MSM of `pts` with the same scalar `s` for every point, as `s · Σ pts`: the sum on all
/// cores, one scalar multiplication. The tests' "every scalar equal" cases check the device's
/// MSM against this instead of a CPU MSM of millions of points (a 2^24-point G2 MSM on the
/// CPU took tens of seconds of the device machine's time).
fn same_scalar_msm<P>(pts: &[P::AffineRepr], s: Fr) -> P
where
    P: Group<Scalar = Fr> + Curve + From<<P as Curve>::AffineRepr> + Send + Sync,
    P::AffineRepr: Copy + Sync,
{
    use rayon::prelude::*;
    let sum: P = pts.par_chunks(1 << 16).map(|c| c.iter().fold(P::identity(), |acc, p| acc + P::from(*p))).sum();
    sum * s
}

fn many_g1_points(r: &mut ChaCha8Rng, n: usize) -> Vec<G1Affine> {
    many_points::<G1Projective>(r, n)
}

/// x_{i+1} = x_i^3 + k_i for `rounds` rounds, x_0 secret, the last x public; plus an input
/// used in B and an aux variable that occurs only in C.
#[derive(Clone)]
struct CubeChain {
    x0: Option<Fr>,
    rounds: usize,
}

fn chain(x0: Fr, rounds: usize) -> Fr {
    (0..rounds).fold(x0, |x, i| x * x * x + Fr::from(i as u64))
}

impl Circuit<Fr> for CubeChain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut xv = self.x0;
        let mut x = cs.alloc(|| "x0", || xv.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.rounds {
            let sq_v = xv.map(|v| v.square());
            let sq = cs.alloc(|| format!("sq{i}"), || sq_v.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| format!("sq{i}"), |lc| lc + x, |lc| lc + x, |lc| lc + sq);
            let next_v = sq_v.zip(xv).map(|(s, v)| s * v + Fr::from(i as u64));
            let next = cs.alloc(|| format!("x{}", i + 1), || next_v.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(
                || format!("cube{i}"),
                |lc| lc + sq,
                |lc| lc + x,
                |lc| lc + next - (Fr::from(i as u64), CS::one()),
            );
            x = next;
            xv = next_v;
        }
        let out = cs.alloc_input(|| "out", || xv.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        cs.enforce(|| "input in B", |lc| lc + CS::one(), |lc| lc + out, |lc| lc + out);
        let only_c = cs.alloc(|| "only in C", || Ok(Fr::ZERO))?;
        cs.enforce(|| "0*0", |lc| lc, |lc| lc, |lc| lc + only_c);
        Ok(())
    }
}

/// The CUDA backend as a generated setup's query sink (the engine's scheduler wraps it the
/// same way).
struct TakenBy<'a>(&'a CudaProver);

impl cuzk_groth16::srs_sink::QuerySink for TakenBy<'_> {
    fn begin(
        &self,
        path: &std::path::Path,
        id: u64,
        lens: &cuzk_groth16::QueryLens,
    ) -> Option<Box<dyn cuzk_groth16::srs_sink::QueryTaker + '_>> {
        self.0.begin_queries(path, id, lens)
    }
}
