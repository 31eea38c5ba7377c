//! `RecordingCs`: a constraint system that records a circuit's R1CS structure — which
//! variables, with which coefficients, appear in A, B and C of every constraint — and no
//! values. It never calls the value closures of `alloc`/`alloc_input`, so it runs on blank
//! circuits (whose closures return `AssignmentMissing`) and costs no witness computation.
//!
//! It must agree with `cuzk_groth16::ProvingAssignment` on everything a circuit can observe
//! (`is_extensible`, `extend`, variable numbering), otherwise a circuit could take a different
//! path here than when proving and the recorded matrices would not match the proving
//! assignment. Terms with a zero coefficient are dropped, exactly as `ProvingAssignment`
//! skips them (they neither contribute nor set a density bit). Duplicate terms need no
//! handling here: bellpepper's `LinearCombination` already merged them (summing their
//! coefficients) before `enforce` sees it, and what is left is recorded term for term in
//! the order `ProvingAssignment` evaluates it (inputs, then aux).

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use cuzk_groth16::density::Density;
use ff::Field;

use crate::matrix::{Column, CsrBuilder, INPUT_TAG, MAX_INDEX};
use crate::PreCompiled;

pub struct RecordingCs {
    num_inputs: usize,
    num_aux: usize,
    a: CsrBuilder,
    b: CsrBuilder,
    c: CsrBuilder,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    /// Set when a system with no inputs (so no ONE at input 0) was extended by one with
    /// inputs. `extend` maps the other's input 0 onto our input 0 and drops one input, which
    /// only makes sense if both are ONE; `ProvingAssignment` silently produces an assignment
    /// whose input density is longer than its inputs there. We refuse at the end instead.
    extended_without_one: bool,
}

impl RecordingCs {
    /// A recorder with the constant-one input allocated as input 0, like
    /// `ProvingAssignment::new_with_one`.
    pub fn new_with_one() -> Self {
        let mut cs = <Self as ConstraintSystem<Fr>>::new();
        cs.alloc_input(|| "one", || Ok(Fr::ONE)).expect("allocating ONE cannot fail");
        cs
    }

    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Constraints recorded so far (without Groth16's input rows).
    pub fn num_constraints(&self) -> usize {
        self.a.rows()
    }

    /// Close the system like `ProvingAssignment::finish`: one row per input with
    /// A = input_i (coefficient 1) and B = C = empty. Densities are untouched, as there.
    /// Fails if the circuit extended a system that had no ONE input (see
    /// `extended_without_one`).
    pub fn finish(mut self) -> Result<PreCompiled, SynthesisError> {
        if self.extended_without_one {
            return Err(SynthesisError::IncompatibleLengthVector(
                "PCE: a constraint system without its ONE input was extended by one with inputs".into(),
            ));
        }
        for i in 0..self.num_inputs {
            self.a.push(Column::Input(i).encode(), &Fr::ONE);
            self.a.end_row();
            self.b.end_row();
            self.c.end_row();
        }
        debug_assert_eq!(self.b_input_density.len(), self.num_inputs);
        debug_assert_eq!(self.a_aux_density.len(), self.num_aux);
        Ok(PreCompiled {
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            num_constraints: self.a.rows(),
            a: self.a.finish(),
            b: self.b.finish(),
            c: self.c.finish(),
            a_aux_density: self.a_aux_density,
            b_input_density: self.b_input_density,
            b_aux_density: self.b_aux_density,
        })
    }

    /// Record one linear combination as the next row of `m`.
    fn record(
        m: &mut CsrBuilder,
        lc: &LinearCombination<Fr>,
        mut input_density: Option<&mut Density>,
        mut aux_density: Option<&mut Density>,
        (num_inputs, num_aux): (usize, usize),
    ) {
        for (&i, coeff) in lc.iter_inputs() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            // ProvingAssignment would index past its input vector here and panic; say why.
            assert!(i < num_inputs, "constraint uses input {i}, only {num_inputs} allocated");
            m.push(INPUT_TAG | i as u32, coeff);
            if let Some(d) = input_density.as_deref_mut() {
                d.set(i);
            }
        }
        for (&i, coeff) in lc.iter_aux() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            assert!(i < num_aux, "constraint uses aux {i}, only {num_aux} allocated");
            m.push(i as u32, coeff);
            if let Some(d) = aux_density.as_deref_mut() {
                d.set(i);
            }
        }
        m.end_row();
    }
}

/// Indices are stored in 31 bits; refuse (rather than wrap) past that.
fn check_limit(next: usize, what: &str) -> Result<(), SynthesisError> {
    if next > MAX_INDEX {
        return Err(SynthesisError::IncompatibleLengthVector(format!("PCE: more than 2^31 {what} variables")));
    }
    Ok(())
}

impl ConstraintSystem<Fr> for RecordingCs {
    type Root = Self;

    fn new() -> Self {
        RecordingCs {
            num_inputs: 0,
            num_aux: 0,
            a: CsrBuilder::new(),
            b: CsrBuilder::new(),
            c: CsrBuilder::new(),
            a_aux_density: Density::new(),
            b_input_density: Density::new(),
            b_aux_density: Density::new(),
            extended_without_one: false,
        }
    }

    /// Structure only: the value closure is deliberately not called.
    fn alloc<F, A, AR>(&mut self, _: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        check_limit(self.num_aux, "aux")?;
        self.num_aux += 1;
        self.a_aux_density.push_clear();
        self.b_aux_density.push_clear();
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    /// Structure only: the value closure is deliberately not called.
    fn alloc_input<F, A, AR>(&mut self, _: A, _f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        check_limit(self.num_inputs, "input")?;
        self.num_inputs += 1;
        self.b_input_density.push_clear();
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
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
        let n = (self.num_inputs, self.num_aux);
        Self::record(&mut self.a, &la, None, Some(&mut self.a_aux_density), n);
        Self::record(&mut self.b, &lb, Some(&mut self.b_input_density), Some(&mut self.b_aux_density), n);
        Self::record(&mut self.c, &lc, None, None, n);
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

    /// As `ProvingAssignment`: circuits (e.g. Window PoSt) that check this synthesize pieces
    /// into `CS::new()` systems and `extend` with them; answering differently would record
    /// a different (sequential) path than the prover takes.
    fn is_extensible() -> bool {
        true
    }

    /// Append `other` as `ProvingAssignment::extend` does: `other`'s input 0 is its
    /// temporary ONE and becomes our input 0; its other inputs and all its aux are appended
    /// after ours, so its columns are renumbered accordingly.
    fn extend(&mut self, other: &Self) {
        self.extended_without_one |= other.extended_without_one || (self.num_inputs == 0 && other.num_inputs > 0);
        self.a_aux_density.extend(&other.a_aux_density, false);
        self.b_input_density.extend(&other.b_input_density, true);
        self.b_aux_density.extend(&other.b_aux_density, false);
        let (in_base, aux_base) = (self.num_inputs, self.num_aux);
        let num_inputs = in_base + other.num_inputs.saturating_sub(1);
        let num_aux = aux_base + other.num_aux;
        assert!(num_inputs <= MAX_INDEX + 1 && num_aux <= MAX_INDEX + 1, "PCE: more than 2^31 variables after extend");
        let remap = move |c: u32| {
            if c & INPUT_TAG != 0 {
                match (c & !INPUT_TAG) as usize {
                    0 => c,
                    i => INPUT_TAG | (in_base + i - 1) as u32,
                }
            } else {
                (aux_base + c as usize) as u32
            }
        };
        self.a.append(&other.a, remap);
        self.b.append(&other.b, remap);
        self.c.append(&other.c, remap);
        self.num_inputs = num_inputs;
        self.num_aux = num_aux;
    }
}
