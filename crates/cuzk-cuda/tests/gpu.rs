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

#[test]
fn msm_g1_matches_cpu_resident_streaming_and_device_scalars() {
    let mut r = rng(3);
    // Below MIN_GPU_MSM `run` takes the CPU; the rest is the device path.
    for n in [1usize, 2, 31, 1000, MIN_GPU_MSM, MIN_GPU_MSM + 1, 100_000, (1 << 18) + 3] {
        eprintln!("G1 n={n}");
        let pts = g1_points(&mut r, n);
        let sc = edge_scalars(&mut r, n);
        let want = msm_g1(&pts, &sc);
        for resident in [true, false] {
            let m = unsafe { MsmG1::new(DEV, &pts, resident) }.unwrap();
            assert_eq!(m.run(Scalars::Host(&sc)).unwrap().0, want, "G1 n={n} resident={resident}");
            let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
            let got = m.run(Scalars::Device { buffer: &buf, offset: 0, len: n }).unwrap().0;
            assert_eq!(got, want, "G1 device scalars n={n} resident={resident}");
            // A prefix: fewer scalars than points.
            let k = n / 2;
            assert_eq!(m.run(Scalars::Host(&sc[..k])).unwrap().0, msm_g1(&pts[..k], &sc[..k]), "G1 prefix n={n}");
        }
        let zeros = vec![Fr::ZERO; n];
        let m = unsafe { MsmG1::new(DEV, &pts, true) }.unwrap();
        assert_eq!(m.run(Scalars::Host(&zeros)).unwrap().0, G1Projective::identity(), "all-zero scalars n={n}");
    }
}

#[test]
fn msm_g2_matches_cpu() {
    let mut r = rng(4);
    for n in [1usize, 7, 1000, MIN_GPU_MSM + 3, 70_000] {
        eprintln!("G2 n={n}");
        let pts = g2_points(&mut r, n);
        let sc = edge_scalars(&mut r, n);
        let want = msm_g2(&pts, &sc);
        for resident in [true, false] {
            let m = unsafe { MsmG2::new(DEV, &pts, resident) }.unwrap();
            assert_eq!(m.run(Scalars::Host(&sc)).unwrap().0, want, "G2 n={n} resident={resident}");
        }
    }
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

#[test]
fn witness_msms_split_on_the_device_equal_the_cpu_msm() {
    let mut r = rng(11);
    // (ones %, zeros %): mostly 0/1 (split), only ones, only zeros, exactly at and beyond the
    // dense limit (a quarter: split, then declined), all dense (declined).
    let mixes = [(60u32, 35u32), (100, 0), (0, 100), (50, 25), (40, 30), (0, 0)];
    for n in [MIN_GPU_MSM, 100_003, (1 << 18) + 5] {
        let pts = g1_points(&mut r, n);
        for &(ones, zeros) in &mixes {
            let sc = witness_scalars(&mut r, n, ones, zeros);
            let want = msm_g1(&pts, &sc);
            let m = unsafe { MsmG1::new(DEV, &pts, true) }.unwrap();
            let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
            for len in [n, n - 1] {
                let (got, _, dense) =
                    m.run_witness_on_device(Scalars::Device { buffer: &buf, offset: 0, len }).unwrap();
                let want = if len == n { want } else { msm_g1(&pts[..len], &sc[..len]) };
                assert_eq!(got, want, "G1 witness MSM n={n} len={len} ones={ones}% zeros={zeros}%");
                let really_dense = sc[..len].iter().filter(|s| !bool::from(s.is_zero()) && **s != Fr::ONE).count();
                if really_dense * 4 <= len {
                    assert_eq!(dense, really_dense, "split: only the dense scalars go through Pippenger");
                } else {
                    assert_eq!(dense, len, "too dense: the whole vector goes through Pippenger");
                }
            }
            // A window of the buffer, as the prover passes L's scalars (after the inputs).
            let (got, _, _) = m.run_witness_on_device(Scalars::Device { buffer: &buf, offset: 3, len: n - 3 }).unwrap();
            assert_eq!(got, msm_g1(&pts[..n - 3], &sc[3..]), "G1 witness MSM at an offset n={n}");
            // Streaming contexts have no device points to gather: never split, still right.
            let s = unsafe { MsmG1::new(DEV, &pts, false) }.unwrap();
            let (got, _, dense) = s.run_witness_on_device(Scalars::Device { buffer: &buf, offset: 0, len: n }).unwrap();
            assert_eq!((got, dense), (want, n), "streaming witness MSM n={n}");
        }
    }
    let n = 70_001;
    let pts = g2_points(&mut r, n);
    for &(ones, zeros) in &mixes {
        let sc = witness_scalars(&mut r, n, ones, zeros);
        let m = unsafe { MsmG2::new(DEV, &pts, true) }.unwrap();
        let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
        let (got, _, _) = m.run_witness_on_device(Scalars::Device { buffer: &buf, offset: 0, len: n }).unwrap();
        assert_eq!(got, msm_g2(&pts, &sc), "G2 witness MSM ones={ones}% zeros={zeros}%");
    }
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

fn many_g1_points(r: &mut ChaCha8Rng, n: usize) -> Vec<G1Affine> {
    many_points::<G1Projective>(r, n)
}

#[test]
fn dense_msms_with_wide_windows_equal_the_cpu_msm() {
    let mut r = rng(12);
    // 2^24 + 5 points: 20-bit windows, whose top window (15 bits) sppark's sort spreads over
    // 32 buckets a digit, folded before the reduction; the prefix below 2^24 takes 17-bit
    // windows (no spread). Sizes below 2^22 are declined (sppark's Pippenger).
    let n = (1usize << 24) + 5;
    let pts = many_g1_points(&mut r, n);
    let mut sc = edge_scalars(&mut r, n);
    // Scalars about r/2, where the signed digits flip sign, and the largest ones.
    let half = Fr::from(2u64).invert().unwrap();
    for (i, v) in [-half, half, -half - Fr::ONE, -Fr::ONE, -Fr::from(2u64)].into_iter().enumerate() {
        sc[10 * i + 3] = v;
    }
    let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
    let m = unsafe { MsmG1::new(DEV, &pts, true) }.unwrap();
    for (offset, len) in [(0, n), (0, n - 6), (5, n - 5), (0, (1 << 22) - 1)] {
        let want = msm_g1(&pts[..len], &sc[offset..offset + len]);
        let dense = Scalars::Device { buffer: &buf, offset, len };
        let (got, _, _) = m.run_path_on_device(dense, MsmPath::Dense).unwrap();
        assert_eq!(got, want, "dense MSM offset={offset} len={len}");
        let (plain, _, _) =
            m.run_path_on_device(Scalars::Device { buffer: &buf, offset, len }, MsmPath::Sppark).unwrap();
        assert_eq!(plain, want, "sppark MSM offset={offset} len={len}");
        // As a witness it is far too dense to split: the whole vector goes through a Pippenger
        // (the wide one in G1).
        let (as_witness, _, dense) = m.run_witness_on_device(Scalars::Device { buffer: &buf, offset, len }).unwrap();
        assert_eq!((as_witness, dense), (want, len), "dense witness MSM offset={offset} len={len}");
    }
    // All zeros, all ones: empty buckets everywhere but one.
    for v in [Fr::ZERO, Fr::ONE] {
        let same = vec![v; n];
        let (b, _) = DeviceBuffer::upload(DEV, &same).unwrap();
        let (got, _, _) =
            m.run_path_on_device(Scalars::Device { buffer: &b, offset: 0, len: n }, MsmPath::Dense).unwrap();
        assert_eq!(got, msm_g1(&pts, &same), "dense MSM of {n} equal scalars");
    }
}

#[test]
fn a_paused_wide_msm_lends_the_device_and_still_equals_the_cpu_msm() {
    let mut r = rng(13);
    // 2^24 + 5 points: 13 windows of 20 bits, bucket launches starting at windows 0, 4 and 8
    // (none at the top window); the prefix of 2^24 − 1 takes 15 windows of 17 bits (starts
    // 0, 4, 8, 12). Below 2^22 the wide path declines and nothing pauses.
    let n = (1usize << 24) + 5;
    let pts = many_g1_points(&mut r, n);
    let sc = edge_scalars(&mut r, n);
    let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
    let m = unsafe { MsmG1::new(DEV, &pts, true) }.unwrap();
    // What the lender runs in each pause: another wide MSM on the same device and streams.
    let lent_len = (1usize << 22) + 3;
    let lent_want = msm_g1(&pts[..lent_len], &sc[n - lent_len..]);
    for (len, pauses_expected) in [(n, 3), (n - 6, 4), ((1 << 22) - 1, 0)] {
        let want = msm_g1(&pts[..len], &sc[..len]);
        let mut pauses = 0;
        let mut pause = || {
            pauses += 1;
            let (lent, _, _) = m
                .run_path_on_device(
                    Scalars::Device { buffer: &buf, offset: n - lent_len, len: lent_len },
                    MsmPath::Dense,
                )
                .unwrap();
            assert_eq!(lent, lent_want, "the MSM run in a pause");
        };
        let (got, _, _) =
            m.run_pausing(Scalars::Device { buffer: &buf, offset: 0, len }, MsmPath::Dense, &mut pause).unwrap();
        assert_eq!(got, want, "paused dense MSM len={len}");
        assert_eq!(pauses, pauses_expected, "pauses in a dense MSM of {len}");
    }
    // Every scalar 2^80 (= 2^(20·4)): all of them in the first bucket of window 4, which starts
    // a bucket launch and is summed by batch addition.
    let big = vec![Fr::from(2u64).pow_vartime([80]); n];
    let (b, _) = DeviceBuffer::upload(DEV, &big).unwrap();
    let (got, _, _) =
        m.run_pausing(Scalars::Device { buffer: &b, offset: 0, len: n }, MsmPath::Dense, &mut || {}).unwrap();
    assert_eq!(got, msm_g1(&pts, &big), "paused dense MSM of 2^80 everywhere");
}

/// The wide path in G2 (a WindowPoSt's B_G2): two threads a bucket in our kernels, 20-bit
/// windows, two windows a bucket launch when paused.
#[test]
fn dense_g2_msms_take_wide_windows_pause_and_equal_the_cpu_msm() {
    let mut r = rng(15);
    let started = std::time::Instant::now();
    // 2^24 + 5 points: 13 windows of 20 bits, the top one (15 bits) folded from groups of 32
    // buckets. Paused, bucket launches start at windows 0, 2, 4, 6, 8 and 10, with a pause
    // after the sort and between launches: 6. Below 2^22 the wide path declines (sppark's
    // Pippenger, chunked when paused; the default G2 chunk is larger, so nothing pauses).
    let n = (1usize << 24) + 5;
    let pts = many_points::<G2Projective>(&mut r, n);
    // Random scalars with the edge values at a few places: a seventh of them equal, as in
    // edge_scalars, would put 2.4 M points into one bucket of every window, which one thread
    // pair sums alone: slow in G2 (a first version of this test did not finish in 4 minutes).
    let mut sc = random_scalars(&mut r, n);
    let half = Fr::from(2u64).invert().unwrap();
    for (i, v) in [Fr::ZERO, Fr::ONE, -Fr::ONE, -half, half, -half - Fr::ONE, -Fr::from(2u64)].into_iter().enumerate() {
        for k in 0..100 {
            sc[(i * 100 + k) * 997 + 3] = v;
        }
    }
    let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
    let m = unsafe { MsmG2::new(DEV, &pts, true) }.unwrap();
    let lent_len = (1usize << 22) + 3;
    let lent_want = msm_g2(&pts[..lent_len], &sc[n - lent_len..]);
    eprintln!("G2 points and scalars ready: {:.1} s", started.elapsed().as_secs_f64());
    for (offset, len, pauses_expected) in [(0, n, 6), (5, n - 5, 6), (0, (1 << 22) - 1, 0)] {
        let want = msm_g2(&pts[..len], &sc[offset..offset + len]);
        let dense = || Scalars::Device { buffer: &buf, offset, len };
        let (got, _, _) = m.run_path_on_device(dense(), MsmPath::Dense).unwrap();
        assert_eq!(got, want, "dense G2 MSM offset={offset} len={len}");
        // Far too dense to split: the whole vector through the wide path, paused, with
        // another wide G2 MSM on the same device and streams in every pause.
        let mut pauses = 0;
        let mut pause = || {
            pauses += 1;
            let lent = Scalars::Device { buffer: &buf, offset: n - lent_len, len: lent_len };
            let (lent, _, _) = m.run_path_on_device(lent, MsmPath::Dense).unwrap();
            assert_eq!(lent, lent_want, "the G2 MSM run in a pause");
        };
        let (got, _, dense_count) = m.run_pausing(dense(), MsmPath::Witness, &mut pause).unwrap();
        assert_eq!((got, dense_count), (want, len), "paused dense G2 witness MSM offset={offset} len={len}");
        assert_eq!(pauses, pauses_expected, "pauses in a dense G2 MSM of {len}");
        eprintln!("G2 offset={offset} len={len}: {:.1} s", started.elapsed().as_secs_f64());
    }
    // Every scalar 2^40 (= 2^(20·2)): all points in the first bucket of window 2, which starts
    // a bucket launch when paused and is summed by batch addition. (Not unpaused: there one
    // accumulate thread pair would sum all 2^24 points alone, as sppark's would; on the H200
    // that had not finished after 95 s.)
    let big = vec![Fr::from(2u64).pow_vartime([40]); n];
    let (b, _) = DeviceBuffer::upload(DEV, &big).unwrap();
    let (got, _, _) =
        m.run_pausing(Scalars::Device { buffer: &b, offset: 0, len: n }, MsmPath::Dense, &mut || {}).unwrap();
    assert_eq!(got, msm_g2(&pts, &big), "paused dense G2 MSM of 2^40 everywhere");
}

/// sppark's Pippenger cut into chunks with a pause between them (cuda/msm_chunked.cuh): B in
/// G2, and G1 over streaming points. Chunks are set small here so that small MSMs pause.
/// Resident and streaming contexts (the latter with its chunks copied ahead), host and device
/// scalars, uneven lengths; another MSM runs on the same device in every pause.
#[test]
fn a_chunked_msm_pauses_between_chunks_and_still_equals_the_cpu_msm() {
    let mut r = rng(14);
    let n = 70_000 + 5;
    let pts2 = g2_points(&mut r, n);
    let pts1 = g1_points(&mut r, n);
    let sc = edge_scalars(&mut r, n);
    let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
    let chunk = 16_384;
    for resident in [true, false] {
        let mut m2 = unsafe { MsmG2::new(DEV, &pts2, resident) }.unwrap();
        let mut m1 = unsafe { MsmG1::new(DEV, &pts1, resident) }.unwrap();
        m2.set_pause_chunk(chunk);
        m1.set_pause_chunk(chunk);
        let lent_want = msm_g2(&pts2[..MIN_GPU_MSM + 1], &sc[..MIN_GPU_MSM + 1]);
        // (length, pauses): 5 chunks of ~14,000; 4 of 16,384; exactly one chunk, no pause.
        for (len, pauses_expected) in [(n, 4), (4 * chunk, 3), (chunk, 0)] {
            let want2 = msm_g2(&pts2[..len], &sc[..len]);
            let want1 = msm_g1(&pts1[..len], &sc[..len]);
            for on_device in [false, true] {
                let scalars = || {
                    if on_device {
                        Scalars::Device { buffer: &buf, offset: 0, len }
                    } else {
                        Scalars::Host(&sc[..len])
                    }
                };
                let what = format!("len={len} resident={resident} device scalars={on_device}");
                let mut pauses = 0;
                let mut pause = || {
                    pauses += 1;
                    let (lent, _) = m2.run_on_device(Scalars::Host(&sc[..MIN_GPU_MSM + 1])).unwrap();
                    assert_eq!(lent, lent_want, "the MSM run in a pause");
                };
                // The G2 context lends itself: its engine's buckets are reused by the MSM in
                // the pause, so this also checks that nothing of the chunked MSM is in flight.
                let (got, _, _) = m2.run_pausing(scalars(), MsmPath::Dense, &mut pause).unwrap();
                assert_eq!(got, want2, "chunked G2 {what}");
                assert_eq!(pauses, pauses_expected, "pauses in G2 {what}");
                let (got, _, _) = m2.run_pausing(scalars(), MsmPath::Witness, &mut || {}).unwrap();
                assert_eq!(got, want2, "chunked G2 witness path {what}");
                // G1: the wide path declines below 2^22 points, so this is the chunked one too.
                let mut pauses = 0;
                let (got, _, _) = m1.run_pausing(scalars(), MsmPath::Dense, &mut || pauses += 1).unwrap();
                assert_eq!(got, want1, "chunked G1 {what}");
                assert_eq!(pauses, pauses_expected, "pauses in G1 {what}");
            }
        }
    }
}

/// A random R1CS: random linear combinations over ONE, inputs and aux with coefficients
/// 1, -1, small and random, empty rows, a long row and duplicate terms. Values are random
/// (unsatisfied): only the linear algebra is under test here.
struct RandomR1cs {
    seed: u64,
    inputs: usize,
    aux: usize,
    constraints: usize,
}

impl Circuit<Fr> for RandomR1cs {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut r = rng(self.seed);
        let mut vars = vec![CS::one()];
        for i in 0..self.inputs {
            let v = Fr::random(&mut r);
            vars.push(cs.alloc_input(|| format!("in{i}"), || Ok(v))?);
        }
        for i in 0..self.aux {
            let v = Fr::random(&mut r);
            vars.push(cs.alloc(|| format!("aux{i}"), || Ok(v))?);
        }
        let coeff = |r: &mut ChaCha8Rng| match r.next_u32() % 4 {
            0 => Fr::ONE,
            1 => -Fr::ONE,
            2 => Fr::from(r.next_u32() as u64 % 5 + 2),
            _ => Fr::random(&mut *r),
        };
        let lc = |r: &mut ChaCha8Rng, row: usize| -> LinearCombination<Fr> {
            let terms = if row == 7 {
                3000
            } else if row.is_multiple_of(11) {
                0
            } else {
                1 + r.next_u32() as usize % 4
            };
            let mut l = LinearCombination::zero();
            for _ in 0..terms {
                let v: Variable = vars[r.next_u32() as usize % vars.len()];
                l = l + (coeff(r), v);
            }
            l
        };
        for i in 0..self.constraints {
            let (a, b, c) = (lc(&mut r, i), lc(&mut r, i + 1), lc(&mut r, i + 2));
            cs.enforce(|| format!("c{i}"), |_| a, |_| b, |_| c);
        }
        Ok(())
    }
}

#[test]
fn device_matvec_equals_cpu_matvec_bit_for_bit() {
    for (seed, inputs, aux, constraints) in
        [(1u64, 0usize, 5usize, 20usize), (2, 3, 1000, 3000), (3, 40, 20_000, 70_000)]
    {
        let circuit = || RandomR1cs { seed, inputs, aux, constraints };
        let pc = cuzk_pce::extract(circuit()).unwrap();
        let (ins, auxv) = cuzk_pce::witness(circuit()).unwrap();
        let want = cuzk_pce::evaluate(&pc, ins.clone(), auxv.clone()).unwrap();
        let d = Domain::for_size(pc.num_constraints).unwrap();
        let dpce = DevicePce::upload(DEV, &pc).unwrap();
        let w: Vec<Fr> = ins.iter().chain(auxv.iter()).copied().collect();
        let (wbuf, _) = DeviceBuffer::upload(DEV, &w).unwrap();
        let (abc, _) = dpce.eval(&d, &wbuf).unwrap();
        let got = abc.to_vec().unwrap();
        let m = pc.num_constraints;
        for (k, (name, v)) in [("a", &want.a), ("b", &want.b), ("c", &want.c)].into_iter().enumerate() {
            assert!(got[k * d.n..k * d.n + m] == v[..], "{name} differs (seed {seed})");
            assert!(got[k * d.n + m..(k + 1) * d.n].iter().all(|x| x.is_zero_vartime()), "{name} padding");
        }
        // The dense query scalars gathered on the device.
        let mut a_want = ins.clone();
        a_want.extend(dense_scalars(&auxv, &pc.a_aux_density));
        let mut b_want = dense_scalars(&ins, &pc.b_input_density);
        b_want.extend(dense_scalars(&auxv, &pc.b_aux_density));
        assert!(dpce.gather_a(&wbuf).unwrap().to_vec().unwrap() == a_want, "A query scalars");
        assert!(dpce.gather_b(&wbuf).unwrap().to_vec().unwrap() == b_want, "B query scalars");
        let (ai, bi) = query_indices(&pc);
        assert_eq!((ai.len(), bi.len()), dpce.query_lens());
    }
}

#[test]
fn compact_witness_expands_on_the_device_to_the_host_vector() {
    use cuzk_cuda::witness::{upload, WitnessRef};
    use cuzk_pce::CompactFrVec;
    let mut r = rng(11);
    // Lengths around the 32-value words; values mostly 0/1 as in real witnesses, some -1, 2
    // and random ones (stored in full), and runs of each so whole words are of one kind.
    for n in [0usize, 1, 31, 32, 33, 1000, 100_003] {
        let inputs = random_scalars(&mut r, 3);
        let aux: Vec<Fr> = (0..n)
            .map(|i| match (r.next_u32() % 10, (i / 64) % 4) {
                (_, 0) => Fr::ZERO,
                (_, 1) => Fr::ONE,
                (0..=3, _) => Fr::ZERO,
                (4..=7, _) => Fr::ONE,
                (8, _) => -Fr::ONE,
                _ => Fr::random(&mut r),
            })
            .collect();
        let compact = CompactFrVec::from_slice(&aux);
        let (buf, t) = upload(DEV, WitnessRef::Compact { inputs: &inputs, aux: &compact }).unwrap();
        let got = buf.to_vec().unwrap();
        assert!(got[..3] == inputs[..], "inputs (n={n})");
        assert!(got[3..] == aux[..], "aux expanded on the device (n={n})");
        assert!(t.expand_ms >= 0.0);
        let (full, _) = upload(DEV, WitnessRef::Full { inputs: &inputs, aux: &aux }).unwrap();
        assert!(full.to_vec().unwrap() == got, "both forms give the same device witness (n={n})");
    }
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

fn params_for(rounds: usize, r: &mut ChaCha8Rng) -> (bellperson::groth16::Parameters<Bls12>, tempfile::NamedTempFile) {
    use std::io::Write;
    let params =
        bellperson::groth16::generate_random_parameters::<Bls12, _, _>(CubeChain { x0: None, rounds }, r).unwrap();
    let mut f = tempfile::NamedTempFile::new().unwrap();
    params.write(&mut f).unwrap();
    f.flush().unwrap();
    (params, f)
}

fn check_proof(proof: &Proof, srs: &Srs, params: &bellperson::groth16::Parameters<Bls12>, out: Fr, what: &str) {
    let pvk = PreparedVerifyingKey::new(&srs.vk);
    assert!(pvk.verify(proof, &[out]).unwrap(), "our verifier: {what}");
    assert!(!pvk.verify(proof, &[out + Fr::ONE]).unwrap(), "wrong input must fail: {what}");
    let bp = bellperson::groth16::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
    let bpvk = bellperson::groth16::prepare_verifying_key(&params.vk);
    assert!(bellperson::groth16::verify_proof(&bpvk, &bp, &[out]).unwrap(), "bellperson verifier: {what}");
}

#[test]
fn cuda_proofs_verify_on_every_path() {
    let mut r = rng(5);
    // The largest makes H, L and A big enough for the device MSMs (the others use the CPU
    // for the small ones).
    for rounds in [3usize, 1500, 40_000] {
        eprintln!("rounds={rounds}: generating parameters");
        let (params, file) = params_for(rounds, &mut r);
        let srs = Srs::load(file.path(), SubgroupCheck::Always).unwrap();
        let x0 = Fr::from(3u64);
        let out = chain(x0, rounds);
        let circuit = CubeChain { x0: Some(x0), rounds };
        let pc = std::sync::Arc::new(cuzk_pce::extract(CubeChain { x0: None, rounds }).unwrap());
        for residency in [Residency::Always, Residency::Never] {
            for b_g2 in [B2Placement::Gpu, B2Placement::Cpu] {
                let prover = CudaProver::new(CudaOptions { residency, b_g2, ..Default::default() }).unwrap();
                let what = format!("rounds={rounds} {residency:?} b_g2={b_g2:?}");
                eprintln!("{what}: host path");
                // Host path: a, b, c from plain synthesis.
                let mut cs = ProvingAssignment::new_with_one();
                circuit.clone().synthesize(&mut cs).unwrap();
                cs.finish();
                let (proof, t) = prover
                    .prove(&srs, Witness::Assignment(cs), Randomness::random(&mut r), &Default::default())
                    .unwrap();
                let ordinals: Vec<_> = prover.device_infos().iter().map(|d| d.ordinal).collect();
                assert!(
                    t.device.is_some_and(|d| ordinals.contains(&d)),
                    "{what}: proved on {:?}, devices {ordinals:?}",
                    t.device
                );
                check_proof(&proof, &srs, &params, out, &format!("host path {what}"));
                eprintln!("{what}: device mat-vec path");
                // GPU-resident path: witness only, a, b, c by the device mat-vec.
                let (ins, aux) = cuzk_pce::witness(circuit.clone()).unwrap();
                let w = cuzk_pce::witness_assignment(&pc, ins, aux).unwrap();
                let (proof, t) = prover
                    .prove(
                        &srs,
                        Witness::Expanded { witness: w, matrices: pc.clone() },
                        Randomness::random(&mut r),
                        &Default::default(),
                    )
                    .unwrap();
                assert!(t.matvec > std::time::Duration::ZERO || rounds < 10, "mat-vec time recorded");
                check_proof(&proof, &srs, &params, out, &format!("device mat-vec path {what}"));
                // The same from the compact witness (expanded on the device when B_G2 is
                // there too, on the host otherwise).
                let (ins, aux) = cuzk_pce::witness_compact(circuit.clone(), pc.num_inputs, pc.num_aux).unwrap();
                assert_eq!(prover.accepts().compact, b_g2 == B2Placement::Gpu, "{what}");
                let (w, _) = Witness::Compact { inputs: ins, aux, matrices: pc.clone() }
                    .into_accepted(prover.accepts())
                    .unwrap();
                let (proof, _) = prover.prove(&srs, w, Randomness::random(&mut r), &Default::default()).unwrap();
                check_proof(&proof, &srs, &params, out, &format!("compact witness path {what}"));
                // All three proofs counted (on whichever devices the prover chose), no failures.
                let reports = prover.devices();
                assert_eq!(reports.iter().map(|d| d.partitions_proved).sum::<u64>(), 3, "{what}");
                assert_eq!(reports.iter().map(|d| d.failures).sum::<u64>(), 0, "{what}");
                assert!(reports.iter().all(|d| d.current.is_none()), "an idle device names no job: {what}");
                prover.forget_srs(&srs);
            }
        }
    }
}

#[test]
fn wrong_parameters_are_a_shape_error_on_the_gpu_too() {
    let mut r = rng(6);
    let (_, file) = params_for(10, &mut r);
    let srs = Srs::load(file.path(), SubgroupCheck::Skip).unwrap();
    let mut cs = ProvingAssignment::new_with_one();
    CubeChain { x0: Some(Fr::ONE), rounds: 40 }.synthesize(&mut cs).unwrap();
    cs.finish();
    let prover = CudaProver::new(CudaOptions::default()).unwrap();
    let e = prover.prove(&srs, Witness::Assignment(cs), Randomness::random(&mut r), &Default::default()).unwrap_err();
    assert!(matches!(e, cuzk_groth16::ProveError::ShapeMismatch(_)), "{e}");
}

#[test]
fn setup_fixed_base_matches_cpu_in_g1_and_g2() {
    use cuzk_groth16::setup::{CpuFixedBase, FixedBaseMul};
    let mut r = rng(21);
    // Random scalars, the edge scalars, and more than one device chunk's worth in G1.
    let mut s = edge_scalars(&mut r, 3000);
    s.extend([Fr::ZERO, Fr::ONE, -Fr::ONE]);
    s.extend((0..255).map(|i| Fr::from(2).pow_vartime([i])));
    let cpu = CpuFixedBase::new();
    let gpu = cuzk_cuda::setup::CudaFixedBase::new(DEV);
    assert!(gpu.g1(&s).unwrap() == cpu.g1(&s).unwrap(), "G1");
    assert!(gpu.g2(&s).unwrap() == cpu.g2(&s).unwrap(), "G2");
    let big = random_scalars(&mut r, (1 << 22) + 123);
    let (g, c) = (gpu.g1(&big).unwrap(), cpu.g1(&big[..5000]).unwrap());
    assert_eq!(g.len(), big.len());
    assert!(g[..5000] == c[..], "G1, first chunk");
    let tail = cpu.g1(&big[big.len() - 200..]).unwrap();
    assert!(g[big.len() - 200..] == tail[..], "G1, past the first device chunk");
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

#[test]
fn a_generated_setup_taken_onto_the_device_while_made_proves_as_the_host_copy_does() {
    use cuzk_groth16::srs_sink::G1Query;
    let mut r = rng(22);
    let rounds = 40_000;
    let pc = std::sync::Arc::new(cuzk_pce::extract(CubeChain { x0: None, rounds }).unwrap());
    let mul = cuzk_cuda::setup::CudaFixedBase::new(DEV);
    let prover = CudaProver::new(CudaOptions::default()).unwrap();
    let taken = cuzk_pce::setup::generate_srs_into(&pc, 7, "cube", &mul, Some(&TakenBy(&prover))).unwrap();
    assert!(taken.points_released(), "the device takes a generated setup that fits");
    assert!(
        [&taken.h, &taken.l, &taken.a, &taken.b_g1].iter().all(|q| q.is_empty()) && taken.b_g2.is_empty(),
        "no query point stays on the host"
    );
    let host = cuzk_pce::setup::generate_srs_into(&pc, 7, "cube", &mul, None).unwrap();
    assert!(!host.points_released());
    assert!(taken.vk == host.vk);
    assert_eq!(taken.query_lens(), host.query_lens());

    // The device's points are the host's: the same randomness gives the same proof bytes.
    let x0 = Fr::from(5u64);
    let circuit = CubeChain { x0: Some(x0), rounds };
    let out = chain(x0, rounds);
    let rs = Randomness::random(&mut r);
    let (ins, aux) = cuzk_pce::witness(circuit.clone()).unwrap();
    let w = cuzk_pce::witness_assignment(&pc, ins, aux).unwrap();
    let (on_device, t) =
        prover.prove(&taken, Witness::Expanded { witness: w, matrices: pc.clone() }, rs, &Default::default()).unwrap();
    assert!(t.device.is_some(), "proved on the device");
    assert!(PreparedVerifyingKey::new(&taken.vk).verify(&on_device, &[out]).unwrap(), "verifies");
    let mut cs = ProvingAssignment::new_with_one();
    circuit.synthesize(&mut cs).unwrap();
    cs.finish();
    let (on_host, _) = cuzk_groth16::CpuProver.prove(&host, cs, rs).unwrap();
    assert!(on_device.to_bytes() == on_host.to_bytes(), "device copy and host copy give the same proof");

    // Chunks out of order, and a finish with points missing, are errors.
    let lens = host.query_lens();
    let path = std::path::Path::new("/test/taken-by-hand");
    let mut taker = prover.begin_queries(path, Srs::next_id(), &lens).expect("room on the device");
    taker.take_g1(G1Query::H, 0, &host.h[..100]).unwrap();
    let e = taker.take_g1(G1Query::H, 200, &host.h[200..300]).unwrap_err();
    assert!(e.contains("expected at 100"), "{e}");
    let e = taker
        .take_b_g2(0, &host.b_g2[..lens.b_g2.min(10)])
        .and_then(|()| taker.take_b_g2(0, &host.b_g2[..1]))
        .unwrap_err();
    assert!(e.contains("B_G2"), "{e}");
    let e = taker.finish().unwrap_err();
    assert!(e.contains("incomplete"), "{e}");

    // Declined: the operator keeps the host copy, or streams; or a query is too small for
    // the device (those MSMs run on the CPU from host points).
    for options in [
        CudaOptions { keep_host_params: true, ..Default::default() },
        CudaOptions { residency: Residency::Never, ..Default::default() },
    ] {
        let p = CudaProver::new(options.clone()).unwrap();
        assert!(p.begin_queries(path, Srs::next_id(), &lens).is_none(), "{options:?}");
    }
    let small = cuzk_groth16::QueryLens { b_g1: 100, b_g2: 100, ..lens };
    assert!(prover.begin_queries(path, Srs::next_id(), &small).is_none(), "small queries stay on the host");
}

/// The device's subgroup test (cuda/subgroup.cuh) gives blst's verdicts: points in the
/// subgroups pass, points of the curve outside them are found, the first of several is the one
/// reported, in G1 and G2, over ranges that start and end anywhere.
#[test]
fn the_device_subgroup_check_finds_what_blst_finds() {
    use cuzk_cuda::subgroup::{g1_off_subgroup, g2_off_subgroup, SubgroupConstants};
    let mut r = rng(30);
    let c = SubgroupConstants::new().unwrap();
    let n = (1 << 16) + 77;
    // Points of the subgroup, cheaply: a random start and then steps of a random point.
    let walk_g1 = |r: &mut ChaCha8Rng| {
        let (mut p, step) = (G1Projective::random(&mut *r), G1Projective::random(&mut *r));
        let mut v = vec![G1Projective::identity(); n];
        for x in v.iter_mut() {
            p += step;
            *x = p;
        }
        let mut out = vec![G1Affine::identity(); n];
        G1Projective::batch_normalize(&v, &mut out);
        out
    };
    let mut g1 = walk_g1(&mut r);
    let mut m = MsmG1::new_unfilled(DEV, n).unwrap();
    m.fill(0, &g1).unwrap();
    assert_eq!(m.first_outside_subgroup(0, n, &c).unwrap(), None, "G1 subgroup points pass");
    let planted = [0usize, 4095, 4096, 50_000, n - 1];
    for &i in &planted {
        g1[i] = g1_off_subgroup(&mut r);
        assert!(!bool::from(g1[i].is_torsion_free()));
    }
    m.fill(0, &g1).unwrap();
    assert_eq!(m.first_outside_subgroup(0, n, &c).unwrap(), Some(0));
    assert_eq!(m.first_outside_subgroup(1, n - 1, &c).unwrap(), Some(4095));
    assert_eq!(m.first_outside_subgroup(4097, 40_000, &c).unwrap(), None, "a clean range between planted points");
    assert_eq!(m.first_outside_subgroup(4097, n - 4097, &c).unwrap(), Some(50_000));
    assert_eq!(m.first_outside_subgroup(n - 1, 1, &c).unwrap(), Some(n - 1));
    assert_eq!(m.first_outside_subgroup(n, 0, &c).unwrap(), None);
    assert!(m.first_outside_subgroup(n - 5, 6, &c).is_err(), "beyond the points");

    let n2 = 8192 + 3;
    let (mut p, step) = (G2Projective::random(&mut r), G2Projective::random(&mut r));
    let mut v = vec![G2Projective::identity(); n2];
    for x in v.iter_mut() {
        p += step;
        *x = p;
    }
    let mut g2 = vec![G2Affine::identity(); n2];
    G2Projective::batch_normalize(&v, &mut g2);
    let mut m2 = MsmG2::new_unfilled(DEV, n2).unwrap();
    m2.fill(0, &g2).unwrap();
    assert_eq!(m2.first_outside_subgroup(0, n2, &c).unwrap(), None, "G2 subgroup points pass");
    for &i in &[1usize, 63, 64, 5000, n2 - 1] {
        g2[i] = g2_off_subgroup(&mut r);
    }
    m2.fill(0, &g2).unwrap();
    assert_eq!(m2.first_outside_subgroup(0, n2, &c).unwrap(), Some(1));
    // [2, 63) is clean; one point more reaches the planted 63.
    assert_eq!(m2.first_outside_subgroup(2, 61, &c).unwrap(), None);
    assert_eq!(m2.first_outside_subgroup(2, 62, &c).unwrap(), Some(63));
    assert_eq!(m2.first_outside_subgroup(2, 100, &c).unwrap(), Some(63));
    assert_eq!(m2.first_outside_subgroup(65, n2 - 65, &c).unwrap(), Some(5000));
    assert_eq!(m2.first_outside_subgroup(5001, n2 - 5001, &c).unwrap(), Some(n2 - 1));
}

/// A `.params` file streamed onto the device (cuzk_groth16::srs_stream) with the subgroup
/// checked there: the same proof bytes as the host load; a point outside the subgroup in any
/// query, at a random index, is refused with its section and index, and no record is written.
#[test]
fn a_params_file_streams_onto_the_device_with_the_subgroup_checked_there() {
    use cuzk_groth16::srs_stream::load_into;
    let mut r = rng(31);
    let rounds = 40_000;
    let pc = std::sync::Arc::new(cuzk_pce::extract(CubeChain { x0: None, rounds }).unwrap());
    let host =
        cuzk_pce::setup::generate_srs_into(&pc, 7, "cube", &cuzk_cuda::setup::CudaFixedBase::new(DEV), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let path = dir.path().join("cube.params");
    let write = |srs: &Srs| {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        cuzk_groth16::srs::write_params(srs, &mut f).unwrap();
    };
    write(&host);
    let prover = CudaProver::new(CudaOptions::default()).unwrap();
    let streamed = load_into(&path, SubgroupCheck::Once, Some(&records), &TakenBy(&prover))
        .unwrap()
        .expect("the device takes the file");
    assert!(streamed.points_released() && streamed.h.is_empty() && streamed.b_g2.is_empty());
    assert!(streamed.vk == host.vk);
    assert_eq!(streamed.query_lens(), host.query_lens());
    assert!(cuzk_groth16::check_record::already_checked(&path, Some(&records)), "checked on the device, and recorded");

    let x0 = Fr::from(5u64);
    let circuit = CubeChain { x0: Some(x0), rounds };
    let rs = Randomness::random(&mut r);
    let (ins, aux) = cuzk_pce::witness(circuit.clone()).unwrap();
    let w = cuzk_pce::witness_assignment(&pc, ins, aux).unwrap();
    let (on_device, t) = prover
        .prove(&streamed, Witness::Expanded { witness: w, matrices: pc.clone() }, rs, &Default::default())
        .unwrap();
    assert!(t.device.is_some());
    assert!(PreparedVerifyingKey::new(&streamed.vk).verify(&on_device, &[chain(x0, rounds)]).unwrap(), "verifies");
    let mut cs = ProvingAssignment::new_with_one();
    circuit.synthesize(&mut cs).unwrap();
    cs.finish();
    let (on_host, _) = cuzk_groth16::CpuProver.prove(&host, cs, rs).unwrap();
    assert!(on_device.to_bytes() == on_host.to_bytes(), "the streamed key proves as the host copy does");
    prover.forget_srs(&streamed);

    for section in ["h", "l", "a", "b_g1", "b_g2"] {
        let mut bad =
            cuzk_pce::setup::generate_srs_into(&pc, 7, "cube", &cuzk_cuda::setup::CudaFixedBase::new(DEV), None)
                .unwrap();
        let index = match section {
            "h" => (r.next_u64() % bad.h.len() as u64) as usize,
            "l" => (r.next_u64() % bad.l.len() as u64) as usize,
            "a" => (r.next_u64() % bad.a.len() as u64) as usize,
            _ => (r.next_u64() % bad.b_g1.len() as u64) as usize,
        };
        match section {
            "h" => bad.h[index] = cuzk_cuda::subgroup::g1_off_subgroup(&mut r),
            "l" => bad.l[index] = cuzk_cuda::subgroup::g1_off_subgroup(&mut r),
            "a" => bad.a[index] = cuzk_cuda::subgroup::g1_off_subgroup(&mut r),
            "b_g1" => bad.b_g1[index] = cuzk_cuda::subgroup::g1_off_subgroup(&mut r),
            _ => bad.b_g2[index] = cuzk_cuda::subgroup::g2_off_subgroup(&mut r),
        }
        write(&bad);
        let e = load_into(&path, SubgroupCheck::Once, Some(&records), &TakenBy(&prover))
            .err()
            .unwrap_or_else(|| panic!("{section}[{index}] accepted"));
        match &e {
            cuzk_groth16::SrsError::BadPoint { section: s, index: i, reason, .. } => {
                assert_eq!((*s, *i), (section, index), "{e}");
                assert!(reason.contains("device"), "checked on the device: {e}");
            }
            other => panic!("{section}[{index}]: {other}"),
        }
        assert!(
            !cuzk_groth16::check_record::already_checked(&path, Some(&records)),
            "{section}: no record after a failed check"
        );
    }
}
