//! Parameters onto the device: the generated setup's fixed-base products, a setup taken
//! while made, the subgroup check against blst's verdicts, and a `.params` file streamed there.

use super::*;

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
