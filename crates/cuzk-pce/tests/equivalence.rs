//! `evaluate(extract(blank), witness(real))` must equal plain `ProvingAssignment` synthesis
//! of `real` field by field (a, b, c, inputs, aux, three densities), for hand-made circuits
//! covering the edge cases and for random small R1CS circuits.

mod common;

use std::time::Instant;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use common::*;
use cuzk_pce::{evaluate, extract, first_unsatisfied, witness, witness_compact, witness_sized, Column, PceError};
use ff::Field;
use rand::SeedableRng;

#[test]
fn cubic() {
    for x in [0u64, 1, 3, 1 << 40] {
        let real = Cubic { x: Some(Fr::from(x)) };
        assert_same(&plain(real.clone()), &via_pce(Cubic { x: None }, real), &format!("cubic x={x}"));
    }
}

#[test]
fn inputs_only() {
    for constrain in [false, true] {
        let values = Some([Fr::from(3u64), Fr::from(4u64), Fr::from(12u64)]);
        let real = InputsOnly { values, constrain };
        let want = plain(real.clone());
        assert!(want.aux_assignment.is_empty());
        assert_same(
            &want,
            &via_pce(InputsOnly { values: None, constrain }, real),
            &format!("inputs only, constrain={constrain}"),
        );
        let pc = extract(InputsOnly { values: None, constrain }).unwrap();
        // 4 inputs (ONE, p, q, r): only the appended input rows without constraints.
        assert_eq!((pc.num_inputs, pc.num_aux, pc.num_constraints), (4, 0, if constrain { 6 } else { 4 }));
    }
}

#[test]
fn edge_linear_combinations() {
    let real = EdgeLcs { x: Some(Fr::from(7u64)) };
    let want = plain(real.clone());
    assert_same(&want, &via_pce(EdgeLcs { x: None }, real), "edge LCs");

    let pc = extract(EdgeLcs { x: None }).unwrap();
    // Constraint 1 ("cancel") records nothing: every term summed to zero.
    assert_eq!((pc.a.row(1).count(), pc.b.row(1).count(), pc.c.row(1).count()), (0, 0, 0));
    // Constraint 2 ("zero coeffs") records nothing either; `ghost` (aux 2) is never dense.
    assert_eq!(pc.a.row(2).count() + pc.b.row(2).count() + pc.c.row(2).count(), 0);
    assert!(!pc.a_aux_density.get(2) && !pc.b_aux_density.get(2));
    // Constraint 3 ("dups"): A = 3x + y, merged; C = big*x once.
    let a3: Vec<_> = pc.a.row(3).collect();
    assert_eq!(a3, vec![(Column::Aux(0), Fr::from(3u64)), (Column::Aux(1), Fr::ONE)]);
    assert_eq!(pc.c.row(3).count(), 1);
    // ONE and p (input 1) in B make both input-dense.
    assert_eq!(pc.b_input_density.ones().collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(pc.b_input_density, want.b_input_density);
}

#[test]
fn extensible_pieces() {
    for pieces in [0usize, 1, 2, 3, 7] {
        let real = Extensible { seed: Some(11 + pieces as u64), pieces };
        let want = plain(real.clone());
        assert_same(&want, &via_pce(Extensible { seed: None, pieces }, real), &format!("{pieces} pieces"));
    }
}

#[test]
fn bits_circuit() {
    let n = 20;
    let real = Bits { values: Some(bits_values(n, 5)), n };
    assert_same(&plain(real.clone()), &via_pce(Bits { values: None, n }, real), "bits");
    let stats = extract(Bits { values: None, n }).unwrap().stats();
    // Tables always hold 1 and -1; A adds 2^1..2^63 from packing.
    assert_eq!(stats.distinct_coefficients, [65, 2, 2]);
}

/// Exact counts on the cubic circuit, worked out by hand.
#[test]
fn stats_of_cubic() {
    let s = extract(Cubic { x: None }).unwrap().stats();
    assert_eq!((s.num_inputs, s.num_aux, s.num_constraints), (2, 4, 5 + 2));
    // A: x | x2 (merged) | x3,x,ONE | ONE | - | input rows ONE, out.
    // B: x | x | ONE | out | - .   C: x2 | x3 | out | out | only_c.
    assert_eq!(s.nnz, [1 + 1 + 3 + 1 + 2, 4, 5]);
    // Tables always hold 1 and -1; A adds 5 (x2/2 + x2/2 merged into coefficient 1).
    assert_eq!(s.distinct_coefficients, [3, 2, 2]);
    assert_eq!((s.a_aux_dense, s.b_input_dense, s.b_aux_dense), (3, 2, 1));
    assert!(s.bytes_resident > 0);
    assert!(s.to_string().contains("7 constraints"), "{s}");
}

/// A circuit whose value closures panic: recording must never call them.
struct NoValues;

impl Circuit<Fr> for NoValues {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || panic!("recording called an alloc closure"))?;
        let y = cs.alloc_input(|| "y", || panic!("recording called an alloc_input closure"))?;
        cs.enforce(|| "x*x=y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn recording_never_calls_value_closures() {
    let pc = extract(NoValues).unwrap();
    assert_eq!((pc.num_inputs, pc.num_aux, pc.num_constraints), (2, 1, 3));
    // And a blank circuit's failing closures do not fail extraction, while witness does.
    assert!(extract(Cubic { x: None }).is_ok());
    assert!(matches!(witness(Cubic { x: None }), Err(SynthesisError::AssignmentMissing)));
}

#[test]
fn witness_of_the_wrong_shape_is_refused() {
    let pc = extract(Cubic { x: None }).unwrap();
    let (inputs, mut aux) = witness(Cubic { x: Some(Fr::ONE) }).unwrap();
    aux.pop();
    let err = evaluate(&pc, inputs, aux).unwrap_err();
    assert_eq!(err, PceError::WitnessLength { got_inputs: 2, got_aux: 3, want_inputs: 2, want_aux: 4 });
    assert!(err.to_string().contains("3 aux"), "{err}");
}

/// Counts what a random program exercises: (pieces, inputs inside pieces, zero
/// coefficients, cancelling term pairs).
fn coverage(ops: &[Op], in_piece: bool, acc: &mut [usize; 4]) {
    for op in ops {
        match op {
            Op::Input(_) if in_piece => acc[1] += 1,
            Op::Enforce(lcs) => {
                for lc in lcs {
                    acc[2] += lc.iter().filter(|t| t.1 == Fr::ZERO).count();
                    acc[3] +=
                        lc.windows(2).filter(|w| w[0].0 == w[1].0 && w[0].1 == w[1].1 && w[0].2 != w[1].2).count();
                }
            }
            Op::Piece { ops, .. } => {
                acc[0] += 1;
                coverage(ops, true, acc);
            }
            _ => {}
        }
    }
}

#[test]
fn random_circuits_match_plain_synthesis() {
    let mut covered = [0usize; 4];
    let mut constraints = 0;
    for seed in 0..500u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let ops = random_ops(&mut rng, 0, true);
        coverage(&ops, false, &mut covered);
        let real = Random { ops: ops.clone(), blank: false };
        let blank = Random { ops, blank: true };
        // Extraction sees the same structure with or without values.
        let pc = extract(blank.clone()).unwrap();
        assert_eq!(pc, extract(real.clone()).unwrap(), "seed {seed}");
        constraints += pc.num_constraints;
        assert_same(&plain(real.clone()), &via_pce(blank, real), &format!("seed {seed}"));
    }
    // The generator really produced the cases it is meant to.
    assert!(covered.iter().all(|&n| n >= 50), "coverage (pieces, piece inputs, zero coeffs, cancels): {covered:?}");
    assert!(constraints > 5000, "{constraints}");
}

/// Witness generation into vectors sized up front (sizes from the matrices) gives exactly the
/// grown vectors' values, and never reallocates; the compact witness (the engine's path,
/// including circuits that `extend`) expands to the same values.
#[test]
fn sized_and_compact_witnesses_equal_grown_witness() {
    for seed in 0..100u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let real = Random { ops: random_ops(&mut rng, 0, true), blank: false };
        let pc = extract(real.clone()).unwrap();
        let grown = witness(real.clone()).unwrap();
        let sized = witness_sized(real.clone(), pc.num_inputs, pc.num_aux).unwrap();
        assert_eq!(grown, sized, "seed {seed}");
        let (inputs, compact) = witness_compact(real, pc.num_inputs, pc.num_aux).unwrap();
        assert_eq!((&inputs, compact.to_vec()), (&grown.0, grown.1.clone()), "compact, seed {seed}");
        assert_eq!((sized.0.capacity(), sized.1.capacity()), (pc.num_inputs.max(1), pc.num_aux), "seed {seed}");
    }
}

/// The parameter shape read off the matrices (what synthetic parameters are sized by) is the
/// one the prover's shape check derives from a synthesized assignment.
#[test]
fn srs_shape_of_the_matrices_is_the_assignments() {
    for seed in 0..100u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let ops = random_ops(&mut rng, 0, true);
        let pc = extract(Random { ops: ops.clone(), blank: true }).unwrap();
        let want = cuzk_groth16::SrsShape::of_assignment(&plain(Random { ops, blank: false }));
        assert_eq!(pc.srs_shape(), want, "seed {seed}");
    }
    let cubic = extract(Cubic { x: None }).unwrap().srs_shape();
    assert_eq!(cubic, cuzk_groth16::SrsShape::of_assignment(&plain(Cubic { x: Some(Fr::from(3u64)) })));
}

/// Prints timings (run with `--release --nocapture` for meaningful numbers) and checks the
/// biggest hand-made circuit end to end.
#[test]
fn timing_on_the_bits_circuit() {
    // PCE_TIMING_N scales it up for measurements (~67 constraints per value).
    let n = std::env::var("PCE_TIMING_N").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let values = bits_values(n, 9);
    let real = Bits { values: Some(values), n };

    let t = Instant::now();
    let want = plain(real.clone());
    let t_plain = t.elapsed();

    let t = Instant::now();
    let pc = extract(Bits { values: None, n }).unwrap();
    let t_extract = t.elapsed();

    let t = Instant::now();
    let (inputs, aux) = witness(real).unwrap();
    let t_witness = t.elapsed();

    let t = Instant::now();
    let got = evaluate(&pc, inputs, aux).unwrap();
    let t_eval = t.elapsed();

    assert_same(&want, &got, "bits timing");

    // The cache: save, load (mapped), evaluate from the mapped matrices.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bits.pce");
    let t = Instant::now();
    cuzk_pce::cache::save(&pc, &path, "bits").unwrap();
    let t_save = t.elapsed();
    let t = Instant::now();
    let loaded = cuzk_pce::cache::load(&path, "bits").unwrap();
    let t_load = t.elapsed();
    let (inputs, aux) = (got.input_assignment.clone(), got.aux_assignment.clone());
    let t = Instant::now();
    let from_cache = evaluate(&loaded, inputs, aux).unwrap();
    let t_eval_mapped = t.elapsed();
    assert_same(&want, &from_cache, "bits timing, from cache");

    eprintln!(
        "bits n={n}: {}\n  plain synthesis {t_plain:?}; extract (once) {t_extract:?}; \
         witness {t_witness:?} + evaluate {t_eval:?} = {:?} ({} rayon threads)\n  \
         cache: save {t_save:?}, load+verify {t_load:?} ({} bytes), evaluate from the map {t_eval_mapped:?}",
        pc.stats(),
        t_witness + t_eval,
        rayon::current_num_threads(),
        std::fs::metadata(&path).unwrap().len(),
    );
}

#[test]
fn satisfaction_check() {
    let pa = via_pce(Cubic { x: None }, Cubic { x: Some(Fr::from(3u64)) });
    assert_eq!(first_unsatisfied(&pa), None);
    let n = 50;
    let pa = via_pce(Bits { values: None, n }, Bits { values: Some(bits_values(n, 1)), n });
    assert_eq!(first_unsatisfied(&pa), None);
    // Corrupt one aux value (x2 = x^2 in constraint 0) and evaluate again.
    let pc = extract(Cubic { x: None }).unwrap();
    let (inputs, mut aux) = witness(Cubic { x: Some(Fr::from(3u64)) }).unwrap();
    aux[1] += Fr::ONE;
    assert_eq!(first_unsatisfied(&evaluate(&pc, inputs, aux).unwrap()), Some(0));
}

/// Extending a system that has no ONE with one that has inputs breaks `extend`'s contract
/// (`ProvingAssignment` silently builds an inconsistent assignment); extraction refuses it.
struct BadExtend;

impl Circuit<Fr> for BadExtend {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut no_one = CS::new();
        let mut with_one = CS::new();
        with_one.alloc_input(|| "temp ONE", || Ok(Fr::ONE))?;
        with_one.alloc_input(|| "x", || Ok(Fr::from(2u64)))?;
        no_one.extend(&with_one);
        cs.extend(&no_one);
        Ok(())
    }
}

#[test]
fn extending_a_system_without_one_is_refused() {
    let err = extract(BadExtend).unwrap_err();
    assert!(err.to_string().contains("without its ONE"), "{err}");
}
