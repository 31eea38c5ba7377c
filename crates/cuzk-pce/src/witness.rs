//! `WitnessCs`: a constraint system that only computes the witness. `alloc`/`alloc_input`
//! call the value closure and store the value; `enforce` does nothing — it does not even
//! build the linear combinations, which is most of what plain synthesis spends beyond the
//! witness itself. The structure comes from the pre-compiled matrices instead.
//!
//! Like `RecordingCs` it mirrors `ProvingAssignment` in everything a circuit can observe
//! (`is_extensible`, `extend`, numbering), so the witness vectors come out in the same order
//! as the recorded columns. It deliberately stays *not* a witness generator
//! (`is_witness_generator` = false, the default): gadgets such as neptune's Poseidon take a
//! different allocation path for witness generators, and the witness must be laid out
//! exactly as the recorded structure (made by a non-generator) expects.
//!
//! The aux values go into an [`AuxValues`] store: a plain `Vec<Fr>`, or a [`CompactFrVec`]
//! (2 bits for each 0 or 1): at 32 GiB ~90 MB instead of 4.2 GB per partition.

use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use crate::compact::CompactFrVec;

/// Where [`WitnessCs`] puts aux values.
pub trait AuxValues: Default + Clone + Send {
    fn with_capacity(n: usize) -> Self;
    fn push(&mut self, v: Fr);
    /// Push 0 or 1 (what most aux values are); witness code that knows it has a bit says so.
    fn push_bit(&mut self, bit: bool) {
        self.push(if bit { Fr::ONE } else { Fr::ZERO })
    }
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn append(&mut self, other: &Self);
    /// Room for `copies` more runs of what this holds now (witness code that synthesizes many
    /// items of one layout reserves for the rest after the first), so nothing is regrown:
    /// each regrowth copies everything held so far and faults in fresh pages.
    fn reserve_repeats(&mut self, copies: usize);
    /// Append every part in order (copied in parallel into room reserved once, or moved
    /// where the form allows).
    fn append_parts(&mut self, parts: Vec<Self>);
}

impl AuxValues for Vec<Fr> {
    fn with_capacity(n: usize) -> Self {
        Vec::with_capacity(n)
    }
    fn push(&mut self, v: Fr) {
        Vec::push(self, v)
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn append(&mut self, other: &Self) {
        self.extend_from_slice(other)
    }
    fn reserve_repeats(&mut self, copies: usize) {
        self.reserve_exact(self.len() * copies)
    }
    fn append_parts(&mut self, parts: Vec<Self>) {
        crate::compact::extend_in_parallel(self, &parts.iter().map(|p| &p[..]).collect::<Vec<_>>())
    }
}

impl AuxValues for CompactFrVec {
    fn with_capacity(n: usize) -> Self {
        CompactFrVec::with_capacity(n)
    }
    fn push(&mut self, v: Fr) {
        CompactFrVec::push(self, v)
    }
    fn push_bit(&mut self, bit: bool) {
        CompactFrVec::push_bit(self, bit)
    }
    fn len(&self) -> usize {
        CompactFrVec::len(self)
    }
    fn append(&mut self, other: &Self) {
        CompactFrVec::append(self, other)
    }
    fn reserve_repeats(&mut self, copies: usize) {
        CompactFrVec::reserve_exact(self, self.len() * copies, self.num_others() * copies)
    }
    fn append_parts(&mut self, parts: Vec<Self>) {
        CompactFrVec::append_parts(self, parts)
    }
}

#[derive(Clone, Debug, Default)]
pub struct WitnessCs<S: AuxValues = Vec<Fr>> {
    pub inputs: Vec<Fr>,
    pub aux: S,
}

impl<S: AuxValues> WitnessCs<S> {
    /// A witness with the constant-one input allocated as input 0.
    pub fn new_with_one() -> Self {
        Self::with_capacity(1, 0)
    }

    /// Like [`WitnessCs::new_with_one`], with room for the final sizes (known from the
    /// pre-compiled matrices), so the vectors are not regrown and copied on the way.
    pub fn with_capacity(inputs: usize, aux: usize) -> Self {
        let mut cs = WitnessCs { inputs: Vec::with_capacity(inputs.max(1)), aux: S::with_capacity(aux) };
        cs.inputs.push(Fr::ONE);
        cs
    }

    /// Room for `copies` more runs of what this holds beyond its ONE (see
    /// [`AuxValues::reserve_repeats`]).
    pub fn reserve_repeats(&mut self, copies: usize) {
        self.inputs.reserve_exact(self.inputs.len().saturating_sub(1) * copies);
        self.aux.reserve_repeats(copies);
    }

    /// `extend` by every part in order (each part's input 0 is its temporary ONE), the aux
    /// values taken over by [`AuxValues::append_parts`].
    pub fn extend_from_parts(&mut self, parts: Vec<Self>) {
        for p in &parts {
            self.inputs.extend_from_slice(p.inputs.get(1..).unwrap_or(&[]));
        }
        self.aux.append_parts(parts.into_iter().map(|p| p.aux).collect());
    }
}

impl<S: AuxValues> ConstraintSystem<Fr> for WitnessCs<S> {
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
        AuxValues::push(&mut self.aux, f()?);
        Ok(Variable::new_unchecked(Index::Aux(AuxValues::len(&self.aux) - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
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

    fn is_extensible() -> bool {
        true
    }

    /// As `ProvingAssignment::extend`: `other`'s input 0 is its temporary ONE (our input 0).
    fn extend(&mut self, other: &Self) {
        self.inputs.extend_from_slice(other.inputs.get(1..).unwrap_or(&[]));
        AuxValues::append(&mut self.aux, &other.aux);
    }
}
