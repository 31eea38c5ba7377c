//! The INSECURE generated Groth16 setup of a pre-compiled circuit (see
//! [`cuzk_groth16::setup`]): its matrices are the exact R1CS bellperson proves, input rows
//! included, so the parameters built from them fit the prover and filecoin-proofs' verifiers.
//!
//! What this module adds is the transposed product: uᵢ(τ) = Σⱼ A[j][i]·Lⱼ(τ) for every column
//! i (and likewise v from B, w from C). CSR stores rows; summing into columns from many
//! threads at once would race, so each thread owns a contiguous range of aux columns and
//! scans the whole matrix, keeping only its own columns. A scan is a sequential read of the
//! column array — cheap next to the field arithmetic, and no transposed copy (gigabytes at
//! 32 GiB) is ever built. Input columns (a few hundred) are summed apart, per row chunk.

use std::path::PathBuf;
use std::time::Instant;

use blstrs::Scalar as Fr;
use cuzk_groth16::setup::{self, Evaluations, SetupError, Trapdoor};
use cuzk_groth16::srs_sink::QuerySink;
use cuzk_groth16::{Srs, VerifyingKey};
use ff::Field;
use rayon::prelude::*;

use crate::matrix::{Csr, RowPtrView, INPUT_TAG, MINUS_ONE_COEFF, ONE_COEFF};
use crate::PreCompiled;

/// `generated://<label>?seed=<seed>`: how generated parameters are named in logs and status.
pub fn generated_path(label: &str, seed: u64) -> PathBuf {
    format!("generated://{label}?seed={seed} (INSECURE)").into()
}

/// The full parameters of `pc` from the trapdoor of `seed`, multiplied on the CPU.
/// Deterministic: the same matrices and seed give the same points. `label` names them (see
/// [`generated_path`]).
pub fn generate_srs(pc: &PreCompiled, seed: u64, label: &str) -> Result<Srs, SetupError> {
    generate_srs_with(pc, seed, label, &setup::CpuFixedBase::new())
}

/// [`generate_srs`] with the fixed-base multiplications done by `mul` (e.g. a GPU); the
/// points are the same whoever computes them.
pub fn generate_srs_with(
    pc: &PreCompiled,
    seed: u64,
    label: &str,
    mul: &dyn setup::FixedBaseMul,
) -> Result<Srs, SetupError> {
    generate_srs_into(pc, seed, label, mul, None)
}

/// [`generate_srs_with`], offering the queries to `sink` (see `cuzk_groth16::srs_sink`): a
/// backend that accepts receives every point as it is computed, and the result keeps none.
/// The matrices' mapped pages are given back once the evaluations are done (the setup reads
/// the matrices no more), so at the peak the host holds the aux evaluations and two chunks
/// (one made ahead while the other is taken).
pub fn generate_srs_into(
    pc: &PreCompiled,
    seed: u64,
    label: &str,
    mul: &dyn setup::FixedBaseMul,
    sink: Option<&dyn QuerySink>,
) -> Result<Srs, SetupError> {
    let t = Trapdoor::from_seed(seed);
    let domain = setup::domain_for(pc.num_constraints)?;
    let start = Instant::now();
    let lagrange = setup::lagrange_at(&domain, t.tau, pc.num_constraints)?;
    let (inputs, aux) = evaluations(pc, &lagrange);
    drop(lagrange);
    tracing::info!(circuit = label, secs = start.elapsed().as_secs_f64(), "setup: QAP evaluations at τ");
    pc.drop_mapped_pages();
    setup::assemble(pc.num_constraints, inputs, aux, &t, generated_path(label, seed), mul, sink)
}

/// Only the verifying key of [`generate_srs`]'s parameters (the same key), without any aux
/// variable's evaluation or point: the Lagrange basis, one parallel pass over the matrices
/// summing the input columns, and a few hundred multiplications. (The input ONE occurs in a
/// large share of all rows — every booleanity constraint — so the basis is needed nearly
/// everywhere and is computed whole, in parallel.)
pub fn generate_vk(pc: &PreCompiled, seed: u64) -> Result<VerifyingKey, SetupError> {
    let t = Trapdoor::from_seed(seed);
    let domain = setup::domain_for(pc.num_constraints)?;
    let lagrange = setup::lagrange_at(&domain, t.tau, pc.num_constraints)?;
    let mut inputs = Evaluations::zeros(pc.num_inputs);
    for (m, out) in [(&pc.a, &mut inputs.u), (&pc.b, &mut inputs.v), (&pc.c, &mut inputs.w)] {
        *out = input_columns(m, &lagrange, pc.num_inputs);
    }
    Ok(setup::verifying_key(&inputs, &t))
}

/// Σⱼ M[j][Input(i)]·lagrange[j] for every input i, over row chunks in parallel.
fn input_columns(m: &Csr, lagrange: &[Fr], num_inputs: usize) -> Vec<Fr> {
    const ROWS: usize = 1 << 16;
    (0..m.rows().div_ceil(ROWS))
        .into_par_iter()
        .map(|c| {
            let mut sums = vec![Fr::ZERO; num_inputs];
            for_each_nonzero(m, c * ROWS..((c + 1) * ROWS).min(m.rows()), |row, col, coeff| {
                if col & INPUT_TAG != 0 {
                    sums[(col & !INPUT_TAG) as usize] += term(m, coeff, lagrange[row]);
                }
            });
            sums
        })
        .reduce(
            || vec![Fr::ZERO; num_inputs],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// Every column's evaluation at τ (given Lⱼ(τ) per row): (inputs, aux).
pub fn evaluations(pc: &PreCompiled, lagrange: &[Fr]) -> (Evaluations, Evaluations) {
    let mut aux = Evaluations::zeros(pc.num_aux);
    let mut inputs = Evaluations::default();
    for (m, ins, auxs) in
        [(&pc.a, &mut inputs.u, &mut aux.u), (&pc.b, &mut inputs.v, &mut aux.v), (&pc.c, &mut inputs.w, &mut aux.w)]
    {
        *ins = input_columns(m, lagrange, pc.num_inputs);
        aux_columns(m, lagrange, auxs);
        // Done with this matrix: a mapped one gives its pages back now, not after all three
        // (at 32 GiB they are 7 GiB together, beside 17 GB of evaluations and basis).
        m.drop_mapped_pages();
    }
    (inputs, aux)
}

/// aux[i] = Σⱼ M[j][Aux(i)]·lagrange[j], each range of aux columns summed by one thread that
/// scans the whole matrix (see the module docs).
fn aux_columns(m: &Csr, lagrange: &[Fr], aux: &mut [Fr]) {
    let ranges = rayon::current_num_threads().max(1) * 2;
    let per = aux.len().div_ceil(ranges).max(1);
    aux.par_chunks_mut(per).enumerate().for_each(|(r, out)| {
        let (lo, hi) = ((r * per) as u32, (r * per + out.len()) as u32);
        for_each_nonzero(m, 0..m.rows(), |row, col, coeff| {
            if col & INPUT_TAG == 0 && (lo..hi).contains(&col) {
                out[(col - lo) as usize] += term(m, coeff, lagrange[row]);
            }
        });
    });
}

/// coeff·l, with the two common coefficients done without a multiplication.
#[inline]
fn term(m: &Csr, coeff: u32, l: Fr) -> Fr {
    match coeff {
        ONE_COEFF => l,
        MINUS_ONE_COEFF => -l,
        k => m.coefficients()[k as usize] * l,
    }
}

/// Call `f(row, tagged column, coefficient index)` for every non-zero of `rows`, in order.
fn for_each_nonzero(m: &Csr, rows: std::ops::Range<usize>, mut f: impl FnMut(usize, u32, u32)) {
    let (cols, idx) = (m.columns(), m.coefficient_indices());
    let ptr = m.row_ptr();
    let at = |p: &RowPtrView, i: usize| p.get(i) as usize;
    for row in rows {
        for k in at(&ptr, row)..at(&ptr, row + 1) {
            f(row, cols[k], idx[k]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};

    /// x³ + x + 5 = y with y public: the classic, plus an unused-in-B variable.
    struct Cubic(Option<Fr>);

    impl Circuit<Fr> for Cubic {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x_val = self.0;
            let x = cs.alloc(|| "x", || x_val.ok_or(SynthesisError::AssignmentMissing))?;
            let x2_val = x_val.map(|x| x.square());
            let x2 = cs.alloc(|| "x2", || x2_val.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| "x2", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
            let x3_val = x2_val.zip(x_val).map(|(a, b)| a * b);
            let x3 = cs.alloc(|| "x3", || x3_val.ok_or(SynthesisError::AssignmentMissing))?;
            cs.enforce(|| "x3", |lc| lc + x2, |lc| lc + x, |lc| lc + x3);
            let y = cs.alloc_input(
                || "y",
                || x3_val.zip(x_val).map(|(a, b)| a + b + Fr::from(5)).ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(|| "y", |lc| lc + x3 + x + (Fr::from(5), CS::one()), |lc| lc + CS::one(), |lc| lc + y);
            Ok(())
        }
    }

    #[test]
    fn transposed_product_equals_dense_sums() {
        let pc = crate::extract(Cubic(None)).unwrap();
        let lagrange: Vec<Fr> = (0..pc.num_constraints).map(|j| Fr::from(j as u64 * 7 + 3)).collect();
        let (inputs, aux) = evaluations(&pc, &lagrange);
        for (m, ins, auxs) in [(&pc.a, &inputs.u, &aux.u), (&pc.b, &inputs.v, &aux.v), (&pc.c, &inputs.w, &aux.w)] {
            let (mut want_in, mut want_aux) = (vec![Fr::ZERO; pc.num_inputs], vec![Fr::ZERO; pc.num_aux]);
            for (j, l) in lagrange.iter().enumerate().take(m.rows()) {
                for (col, coeff) in m.row(j) {
                    match col {
                        crate::Column::Input(i) => want_in[i] += coeff * l,
                        crate::Column::Aux(i) => want_aux[i] += coeff * l,
                    }
                }
            }
            assert_eq!((&want_in, &want_aux), (ins, auxs));
        }
    }

    #[test]
    fn vk_alone_equals_the_full_setups_vk() {
        let pc = crate::extract(Cubic(None)).unwrap();
        let srs = generate_srs(&pc, 11, "cubic").unwrap();
        assert!(srs.insecure && !srs.synthetic);
        assert_eq!(generate_vk(&pc, 11).unwrap(), srs.vk);
        assert_ne!(generate_vk(&pc, 12).unwrap(), srs.vk);
        let shape = pc.srs_shape();
        let [h, l, a, b, ic] = shape.lengths().unwrap();
        assert_eq!(
            (srs.h.len(), srs.l.len(), srs.a.len(), srs.b_g1.len(), srs.b_g2.len(), srs.vk.ic.len()),
            (h, l, a, b, b, ic)
        );
    }
}
