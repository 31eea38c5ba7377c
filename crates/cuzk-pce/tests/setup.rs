//! The generated (INSECURE) setup against bellperson's: for the same circuit, the same query
//! lengths (so the same densities and dropped points at infinity) and the same refusals; and
//! proofs made with it verify with our verifier and with bellperson's, reading the written
//! `.params` / `.vk` bytes, while a changed input or a tampered proof does not.

mod common;

use blstrs::{Bls12, Scalar as Fr};
use common::*;
use cuzk_groth16::setup::CpuFixedBase;
use cuzk_groth16::srs::{write_params, write_vk};
use cuzk_groth16::{CpuProver, PreparedVerifyingKey, Randomness, Srs, SubgroupCheck};
use cuzk_pce::setup::{generate_srs, generate_srs_with, generate_vk};
use cuzk_pce::{evaluate, extract, witness};
use ff::Field;
use rand::SeedableRng;

fn lengths(s: &Srs) -> [usize; 6] {
    [s.h.len(), s.l.len(), s.a.len(), s.b_g1.len(), s.b_g2.len(), s.vk.ic.len()]
}

fn bellperson_lengths<C: bellpepper_core::Circuit<Fr>>(
    blank: C,
) -> Result<[usize; 6], bellpepper_core::SynthesisError> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let p = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(blank, &mut rng)?;
    Ok([p.h.len(), p.l.len(), p.a.len(), p.b_g1.len(), p.b_g2.len(), p.vk.ic.len()])
}

#[test]
fn query_lengths_equal_bellpersons_generator() {
    let srs = generate_srs(&extract(Cubic { x: None }).unwrap(), 1, "cubic").unwrap();
    assert_eq!(lengths(&srs), bellperson_lengths(Cubic { x: None }).unwrap());
    let mut compared = 0;
    // One table of fixed-base multiples for all the random circuits: `generate_srs` (the same
    // setup with a table of its own) builds one per call, ~0.4 s on CI's 2 cores, which was
    // nearly all of this test's time.
    let mul = CpuFixedBase::new();
    for seed in 0..60u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        // bellperson's generator cannot `extend` a constraint system: no pieces here.
        let ops = random_ops(&mut rng, 0, true).into_iter().filter(|op| !matches!(op, Op::Piece { .. })).collect();
        let blank = Random { ops, blank: true };
        let ours = generate_srs_with(&extract(blank.clone()).unwrap(), seed, "random", &mul);
        match (ours, bellperson_lengths(blank)) {
            (Ok(ours), Ok(theirs)) => {
                assert_eq!(lengths(&ours), theirs, "seed {seed}");
                compared += 1;
            }
            // An aux variable in no constraint: bellperson refuses too.
            (Err(cuzk_groth16::setup::SetupError::UnconstrainedVariable(_)), Err(_)) => {}
            (ours, theirs) => panic!("seed {seed}: ours {:?}, bellperson {:?}", ours.map(|s| lengths(&s)), theirs),
        }
    }
    assert!(compared >= 20, "only {compared} random circuits were comparable");
}

#[test]
fn unconstrained_variables_are_refused_like_bellperson_does() {
    // EdgeLcs has an aux variable that only ever has zero coefficients.
    assert!(bellperson_lengths(EdgeLcs { x: None }).is_err());
    let err = generate_srs(&extract(EdgeLcs { x: None }).unwrap(), 1, "edge").err().expect("refused");
    assert!(matches!(err, cuzk_groth16::setup::SetupError::UnconstrainedVariable(_)), "{err}");
}

#[test]
fn proofs_verify_with_ours_and_bellpersons_verifier() {
    let pc = extract(Cubic { x: None }).unwrap();
    let generated = generate_srs(&pc, 7, "cubic").unwrap();
    assert!(generated.insecure);
    // Through the file format: write, read back with every check on.
    let dir = tempfile::tempdir().unwrap();
    let (params_path, vk_path) = (dir.path().join("c.params"), dir.path().join("c.vk"));
    write_params(&generated, &mut std::fs::File::create(&params_path).unwrap()).unwrap();
    write_vk(&generated.vk, &mut std::fs::File::create(&vk_path).unwrap()).unwrap();
    let srs = Srs::load(&params_path, SubgroupCheck::Always).unwrap();
    assert_eq!(lengths(&srs), lengths(&generated));
    assert_eq!(srs.vk, generate_vk(&pc, 7).unwrap());
    // The loader gives each decoded section's file pages back to the kernel: the points are
    // still the written ones, and a second load of the same file reads them in again.
    for s in [&srs, &Srs::load(&params_path, SubgroupCheck::Skip).unwrap()] {
        assert!(s.h == generated.h && s.l == generated.l && s.a == generated.a, "G1 queries read back");
        assert!(s.b_g1 == generated.b_g1 && s.b_g2 == generated.b_g2, "B queries read back");
    }

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let x = Fr::from(3u64);
    let out = x * x * x + x + Fr::from(5u64);
    let (inputs, aux) = witness(Cubic { x: Some(x) }).unwrap();
    let w = evaluate(&pc, inputs, aux).unwrap();
    let (proof, _) = CpuProver.prove(&srs, w, Randomness::random(&mut rng)).unwrap();
    let pvk = PreparedVerifyingKey::new(&srs.vk);
    assert!(pvk.verify(&proof, &[out]).unwrap());
    assert!(!pvk.verify(&proof, &[out + Fr::ONE]).unwrap(), "a changed input must fail");
    let mut tampered = proof;
    tampered.c = proof.a;
    assert!(!pvk.verify(&tampered, &[out]).unwrap(), "a tampered proof must fail");

    // bellperson reads our files and checks our proof.
    let bp_vk = bellperson::groth16::VerifyingKey::<Bls12>::read(std::fs::File::open(&vk_path).unwrap()).unwrap();
    let bp_params =
        bellperson::groth16::Parameters::<Bls12>::read(std::fs::File::open(&params_path).unwrap(), true).unwrap();
    assert!(bp_params.vk == bp_vk);
    let bp_proof = bellperson::groth16::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
    let pvk_bp = bellperson::groth16::prepare_verifying_key(&bp_vk);
    assert!(bellperson::groth16::verify_proof(&pvk_bp, &bp_proof, &[out]).unwrap());
    assert!(!bellperson::groth16::verify_proof(&pvk_bp, &bp_proof, &[out.double()]).unwrap());
}
