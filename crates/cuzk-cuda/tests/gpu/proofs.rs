//! Whole proofs on a hand-made circuit on every CUDA path, checked by our verifier and by
//! bellperson's; parameters of the wrong shape are an error, not a wrong proof.

use super::*;

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
