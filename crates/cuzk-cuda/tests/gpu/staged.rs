//! Staged queries (`cuda/msm.cu`, `cuzk_cuda::placement`): points kept in host memory of the
//! context's own and copied up chunk by chunk for each run give the MSMs of resident points,
//! on every path and chunking; the subgroup check finds what it finds on resident points; and
//! a proving key whose queries are staged proves as its host copy does.

use cuzk_cuda::placement::{Query, Staged};

use super::*;

/// A staged G1 context over `pts`, filled in three uneven pieces as a loader would.
fn staged_g1(pts: &[G1Affine]) -> MsmG1 {
    let mut m = MsmG1::new_staged(DEV, pts.len()).unwrap();
    assert!(m.staged() && !m.resident() && m.resident_bytes() == 0 && m.host_bytes() == 96 * pts.len() as u64);
    let (a, b) = (pts.len() / 3, pts.len() / 3 + 12_345);
    m.fill(0, &pts[..a]).unwrap();
    m.fill(a, &pts[a..b]).unwrap();
    m.fill(b, &pts[b..]).unwrap();
    m
}

#[test]
fn staged_msms_equal_the_cpu_msm_chunk_by_chunk() {
    let mut r = rng(40);
    // 2^23 + 5 points: in two chunks of 2^22 + 64 (each wide enough for the wide windows), and
    // in nine chunks of 2^20 (below it: sppark's Pippenger on each chunk).
    let n = (1usize << 23) + 5;
    let pts = many_g1_points(&mut r, n);
    let mut m = staged_g1(&pts);
    let dense = edge_scalars(&mut r, n);
    let witness = witness_scalars(&mut r, n, 60, 30);
    let (d_dense, _) = DeviceBuffer::upload(DEV, &dense).unwrap();
    let (d_witness, _) = DeviceBuffer::upload(DEV, &witness).unwrap();
    for chunk in [(1usize << 22) + 64, 1 << 20] {
        m.set_stage_chunk(chunk);
        for (offset, len) in [(0, n), (5, n - 5), (0, chunk - 1)] {
            let want = msm_g1(&pts[..len], &dense[offset..offset + len]);
            let (got, _, _) =
                m.run_path_on_device(Scalars::Device { buffer: &d_dense, offset, len }, MsmPath::Dense).unwrap();
            assert_eq!(got, want, "staged dense MSM chunk={chunk} offset={offset} len={len}");
            let want = msm_g1(&pts[..len], &witness[offset..offset + len]);
            let (got, _, pippenger) =
                m.run_witness_on_device(Scalars::Device { buffer: &d_witness, offset, len }).unwrap();
            assert_eq!(got, want, "staged witness MSM chunk={chunk} offset={offset} len={len}");
            assert!(pippenger < len, "the witness is split chunk by chunk: {pippenger} of {len} through a Pippenger");
        }
        // Paused between chunks (and inside the wide path), still the same sum.
        let mut pauses = 0;
        let (got, _, _) = m
            .run_pausing(Scalars::Device { buffer: &d_dense, offset: 0, len: n }, MsmPath::Dense, &mut || pauses += 1)
            .unwrap();
        assert_eq!(got, msm_g1(&pts, &dense), "paused staged MSM chunk={chunk}");
        assert!(pauses >= n.div_ceil(chunk) - 1, "a pause between chunks: {pauses} for chunk={chunk}");
    }
    // Host scalars and sppark's own path read the staged host memory as streaming points.
    let want = msm_g1(&pts[..100_000], &dense[..100_000]);
    assert_eq!(m.run(Scalars::Host(&dense[..100_000])).unwrap().0, want, "host scalars");
    let (got, _, _) =
        m.run_path_on_device(Scalars::Device { buffer: &d_dense, offset: 0, len: 100_000 }, MsmPath::Sppark).unwrap();
    assert_eq!(got, want, "sppark's path over staged points");

    // G2: 100,003 points in four chunks, dense and as a witness.
    let n2 = 100_003;
    let pts2 = g2_points(&mut r, n2);
    let mut m2 = MsmG2::new_staged(DEV, n2).unwrap();
    m2.fill(0, &pts2[..50_000]).unwrap();
    m2.fill(50_000, &pts2[50_000..]).unwrap();
    m2.set_stage_chunk(30_000);
    for scalars in [edge_scalars(&mut r, n2), witness_scalars(&mut r, n2, 50, 40)] {
        let (d, _) = DeviceBuffer::upload(DEV, &scalars).unwrap();
        let want = msm_g2(&pts2, &scalars);
        assert_eq!(
            m2.run_path_on_device(Scalars::Device { buffer: &d, offset: 0, len: n2 }, MsmPath::Dense).unwrap().0,
            want,
            "staged G2 dense"
        );
        assert_eq!(
            m2.run_witness_on_device(Scalars::Device { buffer: &d, offset: 0, len: n2 }).unwrap().0,
            want,
            "staged G2 witness"
        );
    }
}

#[test]
fn the_subgroup_check_of_staged_points_finds_what_it_finds_on_resident_ones() {
    use cuzk_cuda::subgroup::{g1_off_subgroup, g2_off_subgroup, SubgroupConstants};
    let mut r = rng(41);
    let c = SubgroupConstants::new().unwrap();
    let n = 50_000;
    let mut pts = many_g1_points(&mut r, n);
    let mut m = MsmG1::new_staged(DEV, n).unwrap();
    m.fill(0, &pts).unwrap();
    assert_eq!(m.first_outside_subgroup(0, n, &c).unwrap(), None);
    for i in [7usize, 30_000] {
        pts[i] = g1_off_subgroup(&mut r);
    }
    m.fill(0, &pts).unwrap();
    assert_eq!(m.first_outside_subgroup(0, n, &c).unwrap(), Some(7));
    assert_eq!(m.first_outside_subgroup(8, 20_000, &c).unwrap(), None);
    assert_eq!(m.first_outside_subgroup(8, n - 8, &c).unwrap(), Some(30_000));
    assert!(m.first_outside_subgroup(n - 1, 2, &c).is_err(), "beyond the points");

    let n2 = 5_000;
    let mut pts2 = g2_points(&mut r, n2);
    let mut m2 = MsmG2::new_staged(DEV, n2).unwrap();
    m2.fill(0, &pts2).unwrap();
    assert_eq!(m2.first_outside_subgroup(0, n2, &c).unwrap(), None);
    pts2[4_321] = g2_off_subgroup(&mut r);
    m2.fill(0, &pts2).unwrap();
    assert_eq!(m2.first_outside_subgroup(100, n2 - 100, &c).unwrap(), Some(4_321));
}

#[test]
fn a_key_with_staged_queries_proves_as_its_host_copy_does() {
    let mut r = rng(42);
    let rounds = 40_000;
    let pc = std::sync::Arc::new(cuzk_pce::extract(CubeChain { x0: None, rounds }).unwrap());
    let mul = cuzk_cuda::setup::CudaFixedBase::new(DEV);
    let host = cuzk_pce::setup::generate_srs_into(&pc, 7, "cube", &mul, None).unwrap();
    let x0 = Fr::from(9u64);
    let circuit = CubeChain { x0: Some(x0), rounds };
    let mut cs = ProvingAssignment::new_with_one();
    circuit.clone().synthesize(&mut cs).unwrap();
    cs.finish();
    let rs = Randomness::random(&mut r);
    let (want, _) = cuzk_groth16::CpuProver.prove(&host, cs, rs).unwrap();
    let lens = host.query_lens();
    for staged in [Staged::of(&[Query::BG2]), Staged::of(&[Query::H, Query::L]), Staged::of(&Query::ALL)] {
        let prover = CudaProver::new(CudaOptions { stage_queries: Some(staged), ..Default::default() }).unwrap();
        // Taken while made, and taken from a whole host copy (adopt_srs).
        let taken = cuzk_pce::setup::generate_srs_into(&pc, 7, "cube", &mul, Some(&TakenBy(&prover))).unwrap();
        let mut adopted = cuzk_pce::setup::generate_srs_into(&pc, 7, "cube", &mul, None).unwrap();
        prover.adopt_srs(&mut adopted);
        for (how, srs) in [("taken", &taken), ("adopted", &adopted)] {
            let what = format!("{} staged, {how}", staged.describe());
            assert!(srs.points_released(), "{what}: the host copy of the loader's is gone");
            assert_eq!(prover.host_bytes(srs), staged.host_bytes(&lens), "{what}: the staged bytes are counted");
            let (ins, aux) = cuzk_pce::witness_compact(circuit.clone(), pc.num_inputs, pc.num_aux).unwrap();
            let (w, _) =
                Witness::Compact { inputs: ins, aux, matrices: pc.clone() }.into_accepted(prover.accepts()).unwrap();
            let (got, t) = prover.prove(srs, w, rs, &Default::default()).unwrap();
            assert!(t.device.is_some(), "{what}: proved on the device");
            assert!(got.to_bytes() == want.to_bytes(), "{what}: the same proof as the host copy's");
            assert!(PreparedVerifyingKey::new(&srs.vk).verify(&got, &[chain(x0, rounds)]).unwrap(), "{what}: verifies");
            prover.forget_srs(srs);
            assert_eq!(prover.host_bytes(srs), 0, "{what}: forgotten");
        }
    }
}
