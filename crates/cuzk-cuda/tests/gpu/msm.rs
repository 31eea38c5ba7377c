//! MSMs on the device against the CPU's: G1 and G2, resident and streaming points, host and
//! device scalars, witness-shaped scalars split on the device, wide windows, pauses and chunks.

use super::*;

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

/// Plants what the affine bucket sums must handle apart from plain additions (n > 7000): a
/// block of 600 equal scalars, so that in every window one bucket holds those points, and
/// among them a point several times (doublings), its negation (a sum at infinity) and points
/// at infinity; and points at infinity scattered through the rest.
fn plant_bucket_exceptions<A>(r: &mut ChaCha8Rng, pts: &mut [A], sc: &mut [Fr])
where
    A: PrimeCurveAffine + std::ops::Neg<Output = A>,
{
    let v = Fr::random(&mut *r);
    let (p, q) = (pts[0], pts[1]);
    for i in 0..600 {
        pts[100 + i] = match i % 6 {
            0 | 2 | 3 => p,
            1 => -p,
            4 => q,
            _ => A::identity(),
        };
        sc[100 + i] = v;
    }
    for i in (7000..pts.len()).step_by(65_537) {
        pts[i] = A::identity();
    }
}

/// The affine bucket sums of the wide path (cuda/msm_affine.cuh; the prover's from 2^24
/// points) meet every exception to the addition formula: a bucket holding a point twice (a
/// doubling), a point and its negation (a sum at infinity, taken up again in a later round),
/// points at infinity, and buckets of 600 and 1500 points, which take ten and eleven rounds and
/// span many threads' slots; and a bucket of an eighth of the points, or of all of them.
#[test]
fn affine_bucket_sums_double_cancel_and_skip_infinity_like_the_cpu_msm() {
    let mut r = rng(13);
    let n = (1usize << 22) + 7;
    let mut pts = many_g1_points(&mut r, n);
    let mut sc = random_scalars(&mut r, n);
    plant_bucket_exceptions(&mut r, &mut pts, &mut sc);
    // A longer block of equal scalars: a bucket of 1500 points in every window.
    let w = Fr::random(&mut r);
    sc[5000..6500].fill(w);
    let want = msm_g1(&pts, &sc);
    let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
    let m = unsafe { MsmG1::new(DEV, &pts, true) }.unwrap();
    for path in [MsmPath::DenseAffine, MsmPath::Dense, MsmPath::DenseXyzz, MsmPath::Sppark] {
        let (got, _, _) = m.run_path_on_device(Scalars::Device { buffer: &buf, offset: 0, len: n }, path).unwrap();
        assert_eq!(got, want, "{path:?}");
    }

    // Lopsided windows: a block of n/8 equal scalars makes one bucket per window with an
    // eighth of the points, and n equal scalars one bucket with all of them (23 rounds, the
    // first of n/2 pairs in one bucket).
    let affine = |scalars: &[Fr]| {
        let (buf, _) = DeviceBuffer::upload(DEV, scalars).unwrap();
        m.run_path_on_device(Scalars::Device { buffer: &buf, offset: 0, len: n }, MsmPath::DenseAffine).unwrap().0
    };
    let u = Fr::random(&mut r);
    sc[n / 2..n / 2 + n / 8].fill(u);
    assert_eq!(affine(&sc), msm_g1(&pts, &sc), "affine rounds with a bucket of n/8 points");
    let want = pts.iter().fold(G1Projective::identity(), |acc, p| acc + p) * u;
    assert_eq!(affine(&vec![u; n]), want, "affine rounds over n equal scalars");
}

/// `Dense` equals the XYZZ path and sppark's Pippenger (both checked against the CPU above) at
/// 2^lg − 1, 2^lg and 2^lg + 3 points: either side of a switch to the affine rounds at 2^lg.
macro_rules! dense_equals_sppark_around {
    ($msm:ident, $proj:ty, $lg:expr, $seed:expr) => {{
        let mut r = rng($seed);
        let n = (1usize << $lg) + 3;
        let pts = many_points::<$proj>(&mut r, n);
        let sc = random_scalars(&mut r, n);
        let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
        let m = unsafe { $msm::new(DEV, &pts, true) }.unwrap();
        for len in [(1 << $lg) - 1, 1 << $lg, n] {
            let run = |path| m.run_path_on_device(Scalars::Device { buffer: &buf, offset: 0, len }, path).unwrap().0;
            let want = run(MsmPath::Sppark);
            assert_eq!(run(MsmPath::Dense), want, "{} Dense, {len} points", stringify!($msm));
            assert_eq!(run(MsmPath::DenseXyzz), want, "{} DenseXyzz, {len} points", stringify!($msm));
        }
    }};
}

/// The prover's dense G1 MSMs switch from sppark's XYZZ bucket sums to the affine rounds at
/// 2^24 points (cuda/msm_wide.cuh, WIDE_AFFINE_MIN_LG_POINTS).
#[test]
fn dense_msms_equal_sppark_on_either_side_of_the_affine_switch() {
    dense_equals_sppark_around!(MsmG1, G1Projective, 24, 14);
}

/// The same in G2, whose switch is at 2^25 points (WIDE_AFFINE_MIN_LG_POINTS_G2).
#[test]
fn dense_g2_msms_equal_sppark_on_either_side_of_the_affine_switch() {
    dense_equals_sppark_around!(MsmG2, G2Projective, 25, 15);
}

/// The wide path's G1 window widens from 20 to 22 bits at 2^26 points (wide_shape: 13 windows
/// below, 12 windows with a 13-bit top window folded from groups of 512 buckets from there), the
/// shape MSM H of a 32 GiB PoRep takes; the 2^24 test above crosses the 17- to 20-bit step.
#[test]
fn dense_msms_equal_sppark_on_either_side_of_the_22_bit_window() {
    dense_equals_sppark_around!(MsmG1, G1Projective, 26, 18);
}

#[test]
fn a_paused_wide_msm_lends_the_device_and_still_equals_the_cpu_msm() {
    let mut r = rng(13);
    // 2^24 + 5 points: 13 windows of 20 bits, window groups starting at windows 0, 4 and 8
    // (none at the top window), a pause between two groups; the prefix of 2^24 − 1 takes 15
    // windows of 17 bits (groups at 0, 4, 8, 12). Below 2^22 the wide path declines and
    // nothing pauses.
    let n = (1usize << 24) + 5;
    let pts = many_g1_points(&mut r, n);
    let sc = edge_scalars(&mut r, n);
    let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
    let m = unsafe { MsmG1::new(DEV, &pts, true) }.unwrap();
    // What the lender runs in each pause: another wide MSM on the same device and streams.
    let lent_len = (1usize << 22) + 3;
    let lent_want = msm_g1(&pts[..lent_len], &sc[n - lent_len..]);
    for (len, pauses_expected) in [(n, 2), (n - 6, 3), ((1 << 22) - 1, 0)] {
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
    // a window group and is summed by batch addition.
    let big = vec![Fr::from(2u64).pow_vartime([80]); n];
    let (b, _) = DeviceBuffer::upload(DEV, &big).unwrap();
    let (got, _, _) =
        m.run_pausing(Scalars::Device { buffer: &b, offset: 0, len: n }, MsmPath::Dense, &mut || {}).unwrap();
    assert_eq!(got, same_scalar_msm::<G1Projective>(&pts, big[0]), "paused dense MSM of 2^80 everywhere");
}

/// The wide path in G2 (a WindowPoSt's B_G2): two threads a bucket in our kernels, 20-bit
/// windows, two windows a group when paused.
#[test]
fn dense_g2_msms_take_wide_windows_pause_and_equal_the_cpu_msm() {
    let mut r = rng(15);
    let started = std::time::Instant::now();
    // 2^24 + 5 points: 13 windows of 20 bits, the top one (15 bits) folded from groups of 32
    // buckets. Paused, window groups start at windows 0, 2, 4, 6, 8 and 10, with a pause
    // between two groups: 5. Below 2^22 the wide path declines (sppark's
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
    for (offset, len, pauses_expected) in [(0, n, 5), (5, n - 5, 5), (0, (1 << 22) - 1, 0)] {
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
    // a window group when paused and is summed by batch addition. (Not unpaused: there one
    // accumulate thread pair would sum all 2^24 points alone, as sppark's would; on the H200
    // that had not finished after 95 s.)
    let big = vec![Fr::from(2u64).pow_vartime([40]); n];
    let (b, _) = DeviceBuffer::upload(DEV, &big).unwrap();
    let (got, _, _) =
        m.run_pausing(Scalars::Device { buffer: &b, offset: 0, len: n }, MsmPath::Dense, &mut || {}).unwrap();
    assert_eq!(got, same_scalar_msm::<G2Projective>(&pts, big[0]), "paused dense G2 MSM of 2^40 everywhere");
}

/// The affine rounds in G2 (cuda/msm_affine.cuh over sppark's two-lane fp2_t; the prover's
/// from 2^25 points, forced here by MsmPath::DenseAffine): the exceptions of the G1 test above
/// (a doubling, a cancellation, points at infinity, a bucket of 600 points in every window)
/// and the paused form, against the CPU MSM.
#[test]
fn affine_bucket_sums_in_g2_equal_the_cpu_msm() {
    let mut r = rng(16);
    let n = (1usize << 22) + 5;
    let mut pts = many_points::<G2Projective>(&mut r, n);
    let mut sc = random_scalars(&mut r, n);
    plant_bucket_exceptions(&mut r, &mut pts, &mut sc);
    let want = msm_g2(&pts, &sc);
    let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
    let m = unsafe { MsmG2::new(DEV, &pts, true) }.unwrap();
    let all = || Scalars::Device { buffer: &buf, offset: 0, len: n };
    let (got, _, _) = m.run_path_on_device(all(), MsmPath::DenseAffine).unwrap();
    assert_eq!(got, want, "G2 affine rounds");
    let (got, _, _) = m.run_path_on_device(all(), MsmPath::Dense).unwrap();
    assert_eq!(got, want, "G2 XYZZ buckets");
    let mut pauses = 0;
    let (got, _, _) = m.run_pausing(all(), MsmPath::DenseAffine, &mut || pauses += 1).unwrap();
    assert_eq!(got, want, "G2 affine rounds, paused");
    assert!(pauses > 0, "a paused wide G2 MSM pauses");
    // Window groups of one window (the last group two: none starts at the top window) and of
    // five (three groups of the 15 windows of 17 bits).
    let mut m = m;
    for group in [1, 5] {
        m.set_wide_group(group);
        for path in [MsmPath::DenseAffine, MsmPath::DenseXyzz] {
            let (got, _, _) = m.run_path_on_device(all(), path).unwrap();
            assert_eq!(got, want, "G2 {path:?} in groups of {group} windows");
        }
    }
}

/// The wide path's window groups (cuda/msm_wide.cuh: a group's digits, sort, buckets and
/// reduction before the next group's) at every group size a 15-window MSM can take, with
/// both bucket kernels, edge scalars and an offset, against the CPU MSM. 2^22 + 5 points take
/// 15 windows of 17 bits; groups of 7 leave a last group of 8 (none starts at the top window),
/// groups of 14 one of 15; 0 leaves the size to the device's room.
#[test]
fn wide_msms_in_window_groups_of_every_size_equal_the_cpu_msm() {
    let mut r = rng(17);
    let n = (1usize << 22) + 5;
    let pts = many_g1_points(&mut r, n + 3);
    let mut sc = edge_scalars(&mut r, n + 3);
    let half = Fr::from(2u64).invert().unwrap();
    for (i, v) in [-half, half, -half - Fr::ONE, -Fr::ONE, -Fr::from(2u64)].into_iter().enumerate() {
        sc[10 * i + 3] = v;
    }
    let (buf, _) = DeviceBuffer::upload(DEV, &sc).unwrap();
    let mut m = unsafe { MsmG1::new(DEV, &pts, true) }.unwrap();
    for (offset, len) in [(0, n + 3), (3, n)] {
        let want = msm_g1(&pts[..len], &sc[offset..offset + len]);
        for group in [1, 2, 3, 4, 5, 7, 13, 14, 15, 0] {
            m.set_wide_group(group);
            for path in [MsmPath::DenseXyzz, MsmPath::DenseAffine] {
                let (got, _, _) = m.run_path_on_device(Scalars::Device { buffer: &buf, offset, len }, path).unwrap();
                assert_eq!(got, want, "{path:?} in groups of {group} windows, offset={offset} len={len}");
            }
        }
        // Paused, groups of 3 (below the pause's 4): a pause between two of the five groups.
        m.set_wide_group(3);
        let mut pauses = 0;
        let (got, _, _) =
            m.run_pausing(Scalars::Device { buffer: &buf, offset, len }, MsmPath::Dense, &mut || pauses += 1).unwrap();
        assert_eq!((got, pauses), (want, 4), "paused in groups of 3, offset={offset} len={len}");
    }
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
