//! A witness changes form only as `Witness::into_accepted` says: to the first form a backend
//! takes, each form equal to what plain synthesis gives, and a backend refuses, with a clear
//! error, a form it does not take. Proofs use a generated INSECURE setup.

use std::sync::Arc;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use cuzk_backend::{CpuBackend, Forms, ProverBackend, Witness, WitnessForm};
use cuzk_groth16::{PreparedVerifyingKey, ProveError, ProvingAssignment, Randomness};
use ff::Field;

/// x_{i+1} = x_i³ + 5 for `rounds` rounds, the last value public, beside alternating 0/1
/// bits: the compact form holds both tags and stored values.
#[derive(Clone)]
struct Chain {
    x0: Option<Fr>,
    rounds: usize,
}

impl Circuit<Fr> for Chain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = self.x0;
        let mut var = cs.alloc(|| "x0", || x.ok_or(SynthesisError::AssignmentMissing))?;
        for i in 0..self.rounds {
            let bit = Fr::from((i % 2) as u64);
            let b = cs.alloc(|| format!("bit {i}"), || Ok(bit))?;
            cs.enforce(|| format!("bit {i} is boolean"), |lc| lc + b, |lc| lc + CS::one() - b, |lc| lc);
            let sq = x.map(|v| v.square());
            let sq_var = cs.alloc(|| format!("sq {i}"), || sq.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| format!("sq {i}"), |lc| lc + var, |lc| lc + var, |lc| lc + sq_var);
            let next = x.map(|v| v.square() * v + Fr::from(5u64));
            let last = i + 1 == self.rounds;
            let next_var = if last {
                cs.alloc_input(|| "out", || next.ok_or(SynthesisError::AssignmentMissing))?
            } else {
                cs.alloc(|| format!("x {}", i + 1), || next.ok_or(SynthesisError::AssignmentMissing))?
            };
            cs.enforce(
                || format!("cube {i}"),
                |lc| lc + sq_var,
                |lc| lc + var,
                |lc| lc + next_var - (Fr::from(5u64), CS::one()),
            );
            x = next;
            var = next_var;
        }
        Ok(())
    }
}

const ROUNDS: usize = 20;

fn plain(x0: Fr) -> ProvingAssignment {
    let mut cs = ProvingAssignment::new_with_one();
    Chain { x0: Some(x0), rounds: ROUNDS }.synthesize(&mut cs).unwrap();
    cs.finish();
    cs
}

fn compact(x0: Fr, matrices: &Arc<cuzk_pce::PreCompiled>) -> Witness {
    let (inputs, aux) =
        cuzk_pce::witness_compact(Chain { x0: Some(x0), rounds: ROUNDS }, matrices.num_inputs, matrices.num_aux)
            .unwrap();
    Witness::Compact { inputs, aux, matrices: matrices.clone() }
}

fn matrices() -> Arc<cuzk_pce::PreCompiled> {
    Arc::new(cuzk_pce::extract(Chain { x0: None, rounds: ROUNDS }).unwrap())
}

#[test]
fn each_backend_gets_the_first_form_up_the_list_that_it_takes() {
    let everything = Forms { expanded: true, compact: true };
    let expanded_only = Forms { expanded: true, compact: false };
    for (forms, from_compact) in [
        (Forms::ASSIGNMENT, WitnessForm::Assignment),
        (expanded_only, WitnessForm::Expanded),
        (everything, WitnessForm::Compact),
    ] {
        assert_eq!(forms.reached_from(WitnessForm::Compact), from_compact, "{forms:?}");
        assert_eq!(forms.reached_from(WitnessForm::Assignment), WitnessForm::Assignment, "{forms:?}");
        assert!(forms.takes(WitnessForm::Assignment), "every backend takes an assignment");
    }
    assert_eq!(expanded_only.reached_from(WitnessForm::Expanded), WitnessForm::Expanded);
    assert_eq!(Forms::ASSIGNMENT.reached_from(WitnessForm::Expanded), WitnessForm::Assignment);
}

#[test]
fn every_form_holds_what_plain_synthesis_gives() {
    let pc = matrices();
    let x0 = Fr::from(3u64);
    let want = plain(x0);

    let (kept, change) = compact(x0, &pc).into_accepted(Forms { expanded: true, compact: true }).unwrap();
    assert_eq!(kept.form(), WitnessForm::Compact, "a backend that takes it compact gets it compact");
    assert!(change.witness_expand.is_zero() && change.matvec.is_zero());
    assert_eq!(kept.inputs(), &want.input_assignment[..]);

    let (expanded, _) = compact(x0, &pc).into_accepted(Forms { expanded: true, compact: false }).unwrap();
    let Witness::Expanded { witness, .. } = &expanded else { panic!("got a {} witness", expanded.form()) };
    assert_eq!((&witness.input_assignment, &witness.aux_assignment), (&want.input_assignment, &want.aux_assignment));
    assert!(
        witness.a.is_empty() && witness.b.is_empty() && witness.c.is_empty(),
        "a, b, c are the backend's to evaluate"
    );
    assert_eq!(witness.a_aux_density, want.a_aux_density);

    for from in [compact(x0, &pc), expanded] {
        let form = from.form();
        let (assignment, change) = from.into_accepted(Forms::ASSIGNMENT).unwrap();
        let Witness::Assignment(got) = assignment else { panic!("from {form}: not an assignment") };
        assert_eq!(got, want, "from {form}: a, b, c, the witness and the densities are plain synthesis's");
        assert!(form != WitnessForm::Compact || !change.witness_expand.is_zero(), "the expansion is timed");
    }
    assert_eq!(compact(x0, &pc).into_assignment().unwrap(), want);
}

#[test]
fn the_cpu_backend_proves_what_it_takes_and_refuses_the_rest_by_name() {
    let pc = matrices();
    let srs = cuzk_pce::setup::generate_srs(&pc, 11, "chain (INSECURE test setup)").unwrap();
    let pvk = PreparedVerifyingKey::new(&srs.vk);
    let x0 = Fr::from(7u64);
    let out = plain(x0).input_assignment[1];
    let mut rng = rand::thread_rng();

    let refused =
        CpuBackend.prove(&srs, compact(x0, &pc), Randomness::random(&mut rng), &Default::default()).unwrap_err();
    assert!(matches!(&refused, ProveError::Backend { backend, .. } if backend == "cpu"), "{refused}");
    assert!(refused.to_string().contains("compact"), "{refused}");

    let (w, _) = compact(x0, &pc).into_accepted(CpuBackend.accepts()).unwrap();
    let (proof, t) = CpuBackend.prove(&srs, w, Randomness::random(&mut rng), &Default::default()).unwrap();
    assert!(pvk.verify(&proof, &[out]).unwrap(), "verifies");
    assert!(t.device.is_none() && !t.total.is_zero());
    assert!(!pvk.verify(&proof, &[out + Fr::ONE]).unwrap(), "and not for another output");
}

#[test]
fn a_witness_that_does_not_fit_its_matrices_or_the_parameters_is_a_shape_error() {
    let pc = matrices();
    let srs = cuzk_pce::setup::generate_srs(&pc, 11, "chain (INSECURE test setup)").unwrap();
    let x0 = Fr::from(2u64);
    assert!(compact(x0, &pc).shape(&srs).is_ok());
    let Witness::Compact { inputs, aux, matrices } = compact(x0, &pc) else { panic!("not compact") };
    let mut short = inputs.clone();
    short.pop();
    let e = Witness::Compact { inputs: short, aux, matrices }.shape(&srs).err().expect("refused");
    assert!(matches!(e, ProveError::ShapeMismatch(_)), "{e}");
    // Another circuit's parameters.
    let other =
        cuzk_pce::setup::generate_srs(&cuzk_pce::extract(Chain { x0: None, rounds: ROUNDS + 1 }).unwrap(), 11, "other")
            .unwrap();
    let e = compact(x0, &pc).shape(&other).err().expect("refused");
    assert!(matches!(e, ProveError::ShapeMismatch(_)), "{e}");
}
