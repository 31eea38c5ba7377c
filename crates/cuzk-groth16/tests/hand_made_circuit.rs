//! End to end on a small hand-made circuit: parameters made by bellperson's generator and
//! written in storage-proofs' file format, read back by our SRS reader, proved by our CPU
//! prover, and checked by our verifier *and* by bellperson's (an independent verifier).
//! Also: corrupt or truncated parameter files are refused with errors that name the problem.

use std::io::Write;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::{
    CpuProver, PreparedVerifyingKey, Proof, ProvingAssignment, Randomness, Srs, SrsError, SrsShape, SubgroupCheck,
};
use ff::Field;
use rand_chacha::rand_core::SeedableRng;

/// Proves knowledge of x with x^3 + x + 5 = out (out public), plus edge cases: an input used
/// in B, an aux variable never used in A or B, a duplicated term, a constant-only LC.
#[derive(Clone)]
struct Cubic {
    x: Option<Fr>,
    extra_constraints: usize,
}

impl Circuit<Fr> for Cubic {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x_val = self.x;
        let x = cs.alloc(|| "x", || x_val.ok_or(SynthesisError::AssignmentMissing))?;
        let x2_val = x_val.map(|x| x.square());
        let x2 = cs.alloc(|| "x2", || x2_val.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "x*x", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        let x3_val = x2_val.zip(x_val).map(|(a, b)| a * b);
        let x3 = cs.alloc(|| "x3", || x3_val.ok_or(SynthesisError::AssignmentMissing))?;
        // Duplicate term: x2 appears as x2/2 + x2/2 in A.
        let half = Fr::from(2u64).invert().unwrap();
        cs.enforce(|| "x2*x", |lc| lc + (half, x2) + (half, x2), |lc| lc + x, |lc| lc + x3);
        let out_val = x3_val.zip(x_val).map(|(a, b)| a + b + Fr::from(5u64));
        let out = cs.alloc_input(|| "out", || out_val.ok_or(SynthesisError::AssignmentMissing))?;
        // (x3 + x + 5) * 1 = out, with `out` (an input) in C and ONE in B.
        cs.enforce(|| "sum", |lc| lc + x3 + x + (Fr::from(5u64), CS::one()), |lc| lc + CS::one(), |lc| lc + out);
        // An input in B: out * 1 = out.
        cs.enforce(|| "input in B", |lc| lc + CS::one(), |lc| lc + out, |lc| lc + out);
        // An aux variable that occurs only in C.
        let unused = cs.alloc(|| "only in C", || Ok(Fr::ZERO))?;
        cs.enforce(|| "0*0=unused", |lc| lc, |lc| lc, |lc| lc + unused);
        // Padding constraints to cross a power of two.
        for i in 0..self.extra_constraints {
            cs.enforce(|| format!("pad {i}"), |lc| lc + x, |lc| lc + CS::one(), |lc| lc + x);
        }
        Ok(())
    }
}

fn write_params(params: &bellperson::groth16::Parameters<Bls12>) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    params.write(&mut f).unwrap();
    f.flush().unwrap();
    f
}

fn synthesize(c: Cubic) -> ProvingAssignment {
    let mut cs = ProvingAssignment::new_with_one();
    c.synthesize(&mut cs).unwrap();
    cs.finish();
    cs
}

#[test]
fn cpu_prover_proofs_verify_with_ours_and_bellpersons_verifier() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    for extra in [0usize, 3, 70] {
        let blank = Cubic { x: None, extra_constraints: extra };
        let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(blank, &mut rng).unwrap();
        let file = write_params(&params);
        let srs = Srs::load(file.path(), SubgroupCheck::Always).unwrap();
        assert_eq!(srs.vk.ic.len(), 2);

        let x = Fr::from(3u64);
        let out = x * x * x + x + Fr::from(5u64);
        let w = synthesize(Cubic { x: Some(x), extra_constraints: extra });
        let (proof, _) = CpuProver.prove(&srs, w, Randomness::random(&mut rng)).unwrap();

        let pvk = PreparedVerifyingKey::new(&srs.vk);
        assert!(pvk.verify(&proof, &[out]).unwrap(), "our verifier, extra={extra}");
        assert!(!pvk.verify(&proof, &[out + Fr::ONE]).unwrap(), "wrong input must fail");

        // Independent check: bellperson decodes our bytes and verifies.
        let bytes = proof.to_bytes();
        let bp = bellperson::groth16::Proof::<Bls12>::read(&bytes[..]).unwrap();
        let bpvk = bellperson::groth16::prepare_verifying_key(&params.vk);
        assert!(bellperson::groth16::verify_proof(&bpvk, &bp, &[out]).unwrap(), "bellperson verifier, extra={extra}");

        // A tampered proof fails.
        let mut tampered = proof;
        tampered.c = proof.a;
        assert!(!pvk.verify(&tampered, &[out]).unwrap());
        assert_eq!(Proof::from_bytes(&bytes).unwrap(), proof);
    }
}

#[test]
fn wrong_parameters_are_a_shape_error_not_a_bad_proof() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
        Cubic { x: None, extra_constraints: 0 },
        &mut rng,
    )
    .unwrap();
    let file = write_params(&params);
    let srs = Srs::load(file.path(), SubgroupCheck::Skip).unwrap();
    let w = synthesize(Cubic { x: Some(Fr::ONE), extra_constraints: 40 });
    let err = CpuProver.prove(&srs, w, Randomness::random(&mut rng)).unwrap_err();
    assert!(err.to_string().contains("parameters have"), "{err}");
}

#[test]
fn corrupt_and_truncated_parameter_files_are_refused() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
        Cubic { x: None, extra_constraints: 5 },
        &mut rng,
    )
    .unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();

    let load = |b: &[u8]| {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b).unwrap();
        Srs::load(f.path(), SubgroupCheck::Skip).map(|_| ())
    };
    assert!(load(&bytes).is_ok());

    // Truncated in the middle of the last section.
    let err = load(&bytes[..bytes.len() - 10]).unwrap_err();
    assert!(matches!(err, SrsError::Truncated { section: "b_g2", .. }), "{err}");
    assert!(err.to_string().contains("truncated"));

    // Trailing garbage.
    let mut long = bytes.clone();
    long.extend_from_slice(&[0u8; 7]);
    assert!(matches!(load(&long).unwrap_err(), SrsError::TrailingBytes { extra: 7, .. }));

    // Flip a byte inside the first H point's y coordinate: no longer on the curve.
    let vk_len = 96 * 3 + 192 * 3 + 4 + 96 * params.vk.ic.len();
    let mut bad = bytes.clone();
    bad[vk_len + 4 + 95] ^= 1;
    let err = load(&bad).unwrap_err();
    assert!(matches!(err, SrsError::BadPoint { section: "h", index: 0, .. }), "{err}");

    // A count larger than the file.
    let mut huge = bytes.clone();
    huge[vk_len..vk_len + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(load(&huge).unwrap_err(), SrsError::Truncated { section: "h", .. }));
}

#[test]
fn synthetic_parameters_have_the_real_sizes_prove_and_never_verify() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for extra in [0usize, 3, 70] {
        let x = Fr::from(3u64);
        let out = x * x * x + x + Fr::from(5u64);
        let w = synthesize(Cubic { x: Some(x), extra_constraints: extra });
        let shape = SrsShape::of_assignment(&w);
        let srs = Srs::synthetic(&shape, 11, "cubic").unwrap();
        assert!(srs.synthetic);

        // Exactly the sizes of real parameters generated for this circuit.
        let blank = Cubic { x: None, extra_constraints: extra };
        let params = bellperson::groth16::generate_random_parameters::<Bls12, _, _>(blank, &mut rng).unwrap();
        let real = Srs::load(write_params(&params).path(), SubgroupCheck::Skip).unwrap();
        assert!(!real.synthetic);
        let lens = |s: &Srs| [s.h.len(), s.l.len(), s.a.len(), s.b_g1.len(), s.b_g2.len(), s.vk.ic.len()];
        assert_eq!(lens(&srs), lens(&real), "extra={extra}");

        // The prover accepts them (no shape error) and the proof does not verify.
        let (proof, _) = CpuProver.prove(&srs, w, Randomness::random(&mut rng)).unwrap();
        assert!(!PreparedVerifyingKey::new(&srs.vk).verify(&proof, &[out]).unwrap(), "extra={extra}");

        // Sized for another circuit: refused like a wrong parameter file.
        let other = Srs::synthetic(&SrsShape { num_aux: shape.num_aux + 1, ..shape }, 11, "other").unwrap();
        let w = synthesize(Cubic { x: Some(x), extra_constraints: extra });
        let err = CpuProver.prove(&other, w, Randomness::random(&mut rng)).unwrap_err();
        assert!(err.to_string().contains("L points"), "{err}");
    }
}
