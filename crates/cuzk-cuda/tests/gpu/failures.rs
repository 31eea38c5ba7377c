//! What a failing partition leaves behind on the GPU path.

use super::*;

/// Issue #36, item 10: with B in G2 on the CPU, a panic in the device region waits for the
/// CPU B_G2 thread before it unwinds past the prover, so nothing reads the parameters once the
/// caller lets them go (an eviction). The thread used to run on, detached.
#[test]
fn a_panic_in_the_device_region_leaves_no_cpu_b_g2_thread_reading_the_parameters() {
    let mut r = rng(50);
    // One B point per round (400,002 in all): the CPU's G2 MSM over them takes a good
    // fraction of a second, far longer than the unwinding.
    let rounds = 400_000;
    let pc = std::sync::Arc::new(cuzk_pce::extract(CubeChain { x0: None, rounds }).unwrap());
    let srs =
        cuzk_pce::setup::generate_srs_into(&pc, 7, "cube", &cuzk_cuda::setup::CudaFixedBase::new(DEV), None).unwrap();
    assert!(srs.b_g2.len() > rounds, "{}", srs.b_g2.len());
    let prover = CudaProver::new(CudaOptions { b_g2: B2Placement::Cpu, ..Default::default() }).unwrap();
    let circuit = CubeChain { x0: Some(Fr::from(2u64)), rounds };
    let witness = || {
        let (ins, aux) = cuzk_pce::witness(circuit.clone()).unwrap();
        cuzk_pce::witness_assignment(&pc, ins, aux).unwrap()
    };
    cuzk_cuda::faults::panic_in_next_device_region();
    let w = witness();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        prover.prove(
            &srs,
            Witness::Expanded { witness: w, matrices: pc.clone() },
            Randomness::random(&mut r),
            &Default::default(),
        )
    }));
    assert!(outcome.is_err(), "the injected panic reached the caller");
    assert_eq!(cuzk_cuda::cpu_task::running(), 0, "a CPU B_G2 thread still runs after the partition unwound");
    // The parameters can go now (what an eviction does), and the prover still proves.
    prover.forget_srs(&srs);
    drop(srs);
    let srs =
        cuzk_pce::setup::generate_srs_into(&pc, 8, "cube", &cuzk_cuda::setup::CudaFixedBase::new(DEV), None).unwrap();
    let (proof, _) = prover
        .prove(
            &srs,
            Witness::Expanded { witness: witness(), matrices: pc.clone() },
            Randomness::random(&mut r),
            &Default::default(),
        )
        .unwrap();
    assert!(PreparedVerifyingKey::new(&srs.vk).verify(&proof, &[chain(Fr::from(2u64), rounds)]).unwrap());
    assert!(prover.devices().iter().all(|d| d.current.is_none()), "no stale job on the device");
}
