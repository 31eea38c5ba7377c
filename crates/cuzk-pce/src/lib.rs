//! The Pre-Compiled Constraint Evaluator (PCE).
//!
//! Every proof of one circuit type has the same R1CS; only the witness changes. Plain
//! synthesis into a `ProvingAssignment` rebuilds every linear combination of every
//! constraint for every proof. PCE records the R1CS once ([`extract`], into CSR matrices
//! that can be cached on disk, see [`cache`]), and per proof only computes the witness
//! ([`witness()`]) and the sparse products a = A·w, b = B·w, c = C·w ([`evaluate`]).
//!
//! The result is bit-identical to `ProvingAssignment` synthesis followed by `finish` —
//! a, b, c, both witness vectors and the three densities — so a prover backend cannot tell
//! the difference:
//!
//! * [`recording`] — `RecordingCs`, structure only (never calls value closures);
//! * [`witness`](mod@witness) — `WitnessCs`, values only (never builds linear combinations);
//! * [`matrix`] — CSR storage with a coefficient table, and the parallel mat-vec;
//! * [`cache`] — the versioned, checksummed, memory-mapped cache file;
//! * [`setup`] — an INSECURE generated Groth16 setup of the recorded circuit;
//! * [`compact`] — the witness stored 2 bits a value for 0 and 1, as partitions wait for a prover.

pub mod cache;
pub mod compact;
pub mod matrix;
pub mod recording;
pub mod setup;
pub mod witness;

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar as Fr;
use cuzk_groth16::density::Density;
use cuzk_groth16::{ProvingAssignment, SrsShape};

pub use cache::CacheError;
pub use compact::CompactFrVec;
pub use matrix::{Column, Csr};
pub use recording::RecordingCs;
pub use witness::{AuxValues, WitnessCs};

/// One circuit type's R1CS, recorded once, including Groth16's appended input rows.
#[derive(Clone, Debug, PartialEq)]
pub struct PreCompiled {
    /// Public inputs including the constant ONE (input 0).
    pub num_inputs: usize,
    pub num_aux: usize,
    /// Rows of A, B and C: the circuit's constraints plus one per input.
    pub num_constraints: usize,
    pub a: Csr,
    pub b: Csr,
    pub c: Csr,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

/// Sizes of a [`PreCompiled`], for logs and benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PceStats {
    pub num_inputs: usize,
    pub num_aux: usize,
    pub num_constraints: usize,
    /// Non-zeros of A, B, C.
    pub nnz: [usize; 3],
    /// Coefficient-table sizes of A, B, C (each table always holds 1 and -1).
    pub distinct_coefficients: [usize; 3],
    /// Bytes held by the matrices and densities (heap or mapped).
    pub bytes_resident: usize,
    pub a_aux_dense: usize,
    pub b_input_dense: usize,
    pub b_aux_dense: usize,
}

impl std::fmt::Display for PceStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [na, nb, nc] = self.nnz;
        let [ca, cb, cc] = self.distinct_coefficients;
        write!(
            f,
            "{} constraints, {} inputs, {} aux; nnz A/B/C = {na}/{nb}/{nc} ({} total); \
             distinct coefficients A/B/C = {ca}/{cb}/{cc}; {:.1} MiB resident; \
             dense: A aux {}, B inputs {}, B aux {}",
            self.num_constraints,
            self.num_inputs,
            self.num_aux,
            na + nb + nc,
            self.bytes_resident as f64 / (1 << 20) as f64,
            self.a_aux_dense,
            self.b_input_dense,
            self.b_aux_dense,
        )
    }
}

impl PreCompiled {
    /// Let the kernel take back the pages of matrices mapped from a cache file (7 GiB for
    /// porep-32g) once a device holds its own copy: they leave this process's resident set
    /// and are read from the file again if the host ever needs them (a CPU retry). Matrices
    /// built in memory are not affected.
    pub fn drop_mapped_pages(&self) {
        self.a.drop_mapped_pages();
        self.b.drop_mapped_pages();
        self.c.drop_mapped_pages();
    }

    /// Whether a witness of these lengths belongs to this circuit (or the circuit's shape
    /// depends on its values, which a Groth16 circuit must not).
    pub fn check_witness_len(&self, num_inputs: usize, num_aux: usize) -> Result<(), PceError> {
        if num_inputs != self.num_inputs || num_aux != self.num_aux {
            return Err(PceError::WitnessLength {
                got_inputs: num_inputs,
                got_aux: num_aux,
                want_inputs: self.num_inputs,
                want_aux: self.num_aux,
            });
        }
        Ok(())
    }

    /// The sizes this circuit's Groth16 parameters must have (counts and densities are
    /// exactly what synthesis produces, so no proof needs to be synthesized to know them).
    pub fn srs_shape(&self) -> SrsShape {
        SrsShape {
            num_constraints: self.num_constraints,
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            a_aux: self.a_aux_density.count_ones(),
            b_inputs: self.b_input_density.count_ones(),
            b_aux: self.b_aux_density.count_ones(),
        }
    }

    pub fn stats(&self) -> PceStats {
        let m = [&self.a, &self.b, &self.c];
        let densities = [&self.a_aux_density, &self.b_input_density, &self.b_aux_density];
        PceStats {
            num_inputs: self.num_inputs,
            num_aux: self.num_aux,
            num_constraints: self.num_constraints,
            nnz: m.map(Csr::nnz),
            distinct_coefficients: m.map(|x| x.coefficients().len()),
            bytes_resident: m.iter().map(|x| x.bytes_resident()).sum::<usize>()
                + densities.iter().map(|d| d.words().len() * 8).sum::<usize>(),
            a_aux_dense: self.a_aux_density.count_ones(),
            b_input_dense: self.b_input_density.count_ones(),
            b_aux_dense: self.b_aux_density.count_ones(),
        }
    }
}

/// Errors of [`evaluate`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PceError {
    /// The witness does not belong to this circuit (or the circuit's shape depends on its
    /// values, which a Groth16 circuit must not).
    #[error("witness has {got_inputs} inputs and {got_aux} aux variables, the pre-compiled circuit {want_inputs} and {want_aux}")]
    WitnessLength { got_inputs: usize, got_aux: usize, want_inputs: usize, want_aux: usize },
}

/// Record `circuit`'s R1CS. Value closures are never called, so a blank circuit (all
/// assignments `None`) works, as does a real one (its values are ignored).
///
/// Circuits that `extend` must follow the contract `ProvingAssignment` assumes: every
/// sub-system that allocates inputs allocates its temporary ONE first (input 0 of a
/// sub-system is mapped onto the root's ONE). A sub-system with inputs extended into one
/// without is refused with an error.
pub fn extract<C: Circuit<Fr>>(circuit: C) -> Result<PreCompiled, SynthesisError> {
    let mut cs = RecordingCs::new_with_one();
    circuit.synthesize(&mut cs)?;
    cs.finish()
}

/// Compute `circuit`'s witness: (inputs including ONE at 0, aux).
pub fn witness<C: Circuit<Fr>>(circuit: C) -> Result<(Vec<Fr>, Vec<Fr>), SynthesisError> {
    witness_sized(circuit, 1, 0)
}

/// [`witness`] into vectors allocated up front for `num_inputs` inputs and `num_aux` aux
/// variables (a pre-compiled circuit's sizes); the result is the same, only cheaper to make.
pub fn witness_sized<C: Circuit<Fr>>(
    circuit: C,
    num_inputs: usize,
    num_aux: usize,
) -> Result<(Vec<Fr>, Vec<Fr>), SynthesisError> {
    let mut cs = WitnessCs::<Vec<Fr>>::with_capacity(num_inputs, num_aux);
    circuit.synthesize(&mut cs)?;
    Ok((cs.inputs, cs.aux))
}

/// [`witness_sized`] with the aux values left compact (see [`CompactFrVec`]): what a
/// partition holds while it waits for a prover. `aux.to_vec()` gives the plain vector.
pub fn witness_compact<C: Circuit<Fr>>(
    circuit: C,
    num_inputs: usize,
    num_aux: usize,
) -> Result<(Vec<Fr>, CompactFrVec), SynthesisError> {
    let mut cs = WitnessCs::<CompactFrVec>::with_capacity(num_inputs, num_aux);
    circuit.synthesize(&mut cs)?;
    Ok((cs.inputs, cs.aux))
}

/// The proving assignment of a witness without a, b, c: the witness checked against the
/// pre-compiled sizes and the densities copied from them. What a backend that evaluates the
/// matrices itself (on its device) takes; [`evaluate`] fills in a, b, c on the CPU.
pub fn witness_assignment(pc: &PreCompiled, inputs: Vec<Fr>, aux: Vec<Fr>) -> Result<ProvingAssignment, PceError> {
    pc.check_witness_len(inputs.len(), aux.len())?;
    Ok(ProvingAssignment {
        a_aux_density: pc.a_aux_density.clone(),
        b_input_density: pc.b_input_density.clone(),
        b_aux_density: pc.b_aux_density.clone(),
        a: Vec::new(),
        b: Vec::new(),
        c: Vec::new(),
        input_assignment: inputs,
        aux_assignment: aux,
    })
}

/// Build the proving assignment from a witness: a, b, c by parallel sparse mat-vec, the
/// densities copied from the pre-compiled structure. Equal, field by field, to
/// synthesizing the same circuit into `ProvingAssignment::new_with_one()` and calling
/// `finish()`.
pub fn evaluate(pc: &PreCompiled, inputs: Vec<Fr>, aux: Vec<Fr>) -> Result<ProvingAssignment, PceError> {
    let mut w = witness_assignment(pc, inputs, aux)?;
    let (inputs, aux) = (&w.input_assignment, &w.aux_assignment);
    // The three products are independent; join lets rayon overlap their tails.
    let (a, (b, c)) = rayon::join(
        || pc.a.mul_vec(inputs, aux),
        || rayon::join(|| pc.b.mul_vec(inputs, aux), || pc.c.mul_vec(inputs, aux)),
    );
    (w.a, w.b, w.c) = (a, b, c);
    Ok(w)
}

/// The first constraint the assignment violates (a·b ≠ c), if any. Evaluation does not
/// check satisfaction (neither does plain synthesis); this lets a caller reject a bad
/// witness before spending a proof on it. Works on any `ProvingAssignment`.
pub fn first_unsatisfied(pa: &ProvingAssignment) -> Option<usize> {
    use rayon::prelude::*;
    (0..pa.a.len()).into_par_iter().with_min_len(4096).find_first(|&i| pa.a[i] * pa.b[i] != pa.c[i])
}
