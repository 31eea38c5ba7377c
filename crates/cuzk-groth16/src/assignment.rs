//! The proving assignment: a `bellpepper_core::ConstraintSystem` that records, for one circuit
//! partition, everything the Groth16 prover needs and nothing more — the evaluations of the
//! A, B and C linear combinations at every constraint (vectors a, b, c), the input and aux
//! variable values, and which variables occur in A and B (densities).
//!
//! Synthesis into this type is the CPU-heavy "synthesis" phase of a proof; the result is an
//! independent unit of work a prover backend (CPU or GPU) turns into one partition proof.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use crate::density::Density;

/// One synthesized partition, ready for a prover backend.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProvingAssignment {
    /// Aux variables with a non-zero coefficient somewhere in A. Inputs are all in A (see
    /// [`ProvingAssignment::finish`]), so there is no input density for A.
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
    /// A·w, B·w, C·w: one entry per constraint.
    pub a: Vec<Fr>,
    pub b: Vec<Fr>,
    pub c: Vec<Fr>,
    pub input_assignment: Vec<Fr>,
    pub aux_assignment: Vec<Fr>,
}

impl ProvingAssignment {
    /// A fresh assignment with the constant-one input allocated, as Groth16 requires.
    pub fn new_with_one() -> Self {
        let mut cs = <Self as ConstraintSystem<Fr>>::new();
        cs.alloc_input(|| "one", || Ok(Fr::ONE)).expect("allocating ONE cannot fail");
        cs
    }

    /// Close the constraint system after the circuit is synthesized: Groth16 adds one
    /// constraint `input_i * 0 = 0` per public input, which makes every input's A-polynomial
    /// linearly independent (so no proof can be forged by shifting inputs). This puts every
    /// input into A, which is why inputs have no A density.
    pub fn finish(&mut self) {
        for i in 0..self.input_assignment.len() {
            self.a.push(self.input_assignment[i]);
            self.b.push(Fr::ZERO);
            self.c.push(Fr::ZERO);
        }
    }

    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// Evaluate `lc` at the current assignment, marking the densities of the variables that
    /// appear with a non-zero coefficient.
    fn eval(
        lc: &LinearCombination<Fr>,
        mut input_density: Option<&mut Density>,
        mut aux_density: Option<&mut Density>,
        inputs: &[Fr],
        aux: &[Fr],
    ) -> Fr {
        let mut acc = Fr::ZERO;
        for (&i, coeff) in lc.iter_inputs() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            acc += mul_coeff(inputs[i], coeff);
            if let Some(d) = input_density.as_deref_mut() {
                d.set(i);
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            acc += mul_coeff(aux[i], coeff);
            if let Some(d) = aux_density.as_deref_mut() {
                d.set(i);
            }
        }
        acc
    }
}

#[inline]
fn mul_coeff(value: Fr, coeff: &Fr) -> Fr {
    // Most coefficients in Filecoin circuits are 1; skip the multiplication then.
    if *coeff == Fr::ONE {
        value
    } else {
        value * coeff
    }
}

impl ConstraintSystem<Fr> for ProvingAssignment {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux_assignment.push(f()?);
        self.a_aux_density.push_clear();
        self.b_aux_density.push_clear();
        Ok(Variable::new_unchecked(Index::Aux(self.aux_assignment.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.push_clear();
        Ok(Variable::new_unchecked(Index::Input(self.input_assignment.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let (la, lb, lc) = (a(LinearCombination::zero()), b(LinearCombination::zero()), c(LinearCombination::zero()));
        let (inputs, aux) = (&self.input_assignment[..], &self.aux_assignment[..]);
        let va = Self::eval(&la, None, Some(&mut self.a_aux_density), inputs, aux);
        let vb = Self::eval(&lb, Some(&mut self.b_input_density), Some(&mut self.b_aux_density), inputs, aux);
        let vc = Self::eval(&lc, None, None, inputs, aux);
        self.a.push(va);
        self.b.push(vb);
        self.c.push(vc);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    /// Extensible: circuits may synthesize independent pieces into fresh assignments in
    /// parallel (each starting with its own temporary ONE input) and append them here.
    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        self.a_aux_density.extend(&other.a_aux_density, false);
        self.b_input_density.extend(&other.b_input_density, true);
        self.b_aux_density.extend(&other.b_aux_density, false);
        self.a.extend_from_slice(&other.a);
        self.b.extend_from_slice(&other.b);
        self.c.extend_from_slice(&other.c);
        // other's input 0 is its temporary ONE, which is our input 0.
        self.input_assignment.extend_from_slice(other.input_assignment.get(1..).unwrap_or(&[]));
        self.aux_assignment.extend_from_slice(&other.aux_assignment);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_values_and_densities() {
        let mut cs = ProvingAssignment::new_with_one();
        let x = cs.alloc_input(|| "x", || Ok(Fr::from(3u64))).unwrap();
        let y = cs.alloc(|| "y", || Ok(Fr::from(4u64))).unwrap();
        let z = cs.alloc(|| "z", || Ok(Fr::from(12u64))).unwrap();
        let unused = cs.alloc(|| "u", || Ok(Fr::from(9u64))).unwrap();
        cs.enforce(|| "x*y=z", |lc| lc + x + (Fr::ZERO, unused), |lc| lc + y, |lc| lc + z);
        cs.finish();
        assert_eq!(cs.a, vec![Fr::from(3u64), Fr::ONE, Fr::from(3u64)]);
        assert_eq!(cs.b, vec![Fr::from(4u64), Fr::ZERO, Fr::ZERO]);
        assert_eq!(cs.c, vec![Fr::from(12u64), Fr::ZERO, Fr::ZERO]);
        // A zero coefficient does not make a variable dense.
        assert_eq!(cs.a_aux_density.ones().collect::<Vec<_>>(), vec![]);
        assert_eq!(cs.b_aux_density.ones().collect::<Vec<_>>(), vec![0]);
        assert_eq!(cs.b_input_density.count_ones(), 0);
        let _ = unused;
    }
}
