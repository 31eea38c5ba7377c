//! Hand-made circuits covering the edge cases PCE must reproduce exactly, a generator of
//! random small R1CS circuits, and the field-by-field comparison with plain synthesis.
#![allow(dead_code)]

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use cuzk_groth16::ProvingAssignment;
use ff::Field;
use rand::Rng;
use rayon::prelude::*;

/// Plain synthesis, as the pipeline does it today.
pub fn plain<C: Circuit<Fr>>(c: C) -> ProvingAssignment {
    let mut cs = ProvingAssignment::new_with_one();
    c.synthesize(&mut cs).unwrap();
    cs.finish();
    cs
}

/// Structure from `blank`, witness from `real` (compact, then expanded, as the engine does),
/// then evaluate.
pub fn via_pce<C: Circuit<Fr>>(blank: C, real: C) -> ProvingAssignment {
    let pc = cuzk_pce::extract(blank).unwrap();
    let (inputs, aux) = cuzk_pce::witness_compact(real, pc.num_inputs, pc.num_aux).unwrap();
    cuzk_pce::evaluate(&pc, inputs, aux.to_vec()).unwrap()
}

pub fn assert_same(want: &ProvingAssignment, got: &ProvingAssignment, what: &str) {
    assert_eq!(want.a.len(), got.a.len(), "{what}: number of constraints");
    assert_eq!(want.input_assignment, got.input_assignment, "{what}: inputs");
    assert_eq!(want.aux_assignment, got.aux_assignment, "{what}: aux");
    for (name, w, g) in [("a", &want.a, &got.a), ("b", &want.b, &got.b), ("c", &want.c, &got.c)] {
        if let Some(row) = (0..w.len()).find(|&i| w[i] != g[i]) {
            panic!("{what}: {name}[{row}] differs: want {:?}, got {:?}", w[row], g[row]);
        }
    }
    assert_eq!(want.a_aux_density, got.a_aux_density, "{what}: A aux density");
    assert_eq!(want.b_input_density, got.b_input_density, "{what}: B input density");
    assert_eq!(want.b_aux_density, got.b_aux_density, "{what}: B aux density");
    assert!(want == got, "{what}: assignments differ"); // belt and braces: every field
}

fn val(v: Option<Fr>) -> impl FnOnce() -> Result<Fr, SynthesisError> {
    move || v.ok_or(SynthesisError::AssignmentMissing)
}

/// x^3 + x + 5 = out, with an input in B, an aux only in C, a duplicated term, constants.
#[derive(Clone)]
pub struct Cubic {
    pub x: Option<Fr>,
}

impl Circuit<Fr> for Cubic {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let xv = self.x;
        let x = cs.alloc(|| "x", val(xv))?;
        let x2v = xv.map(|x| x.square());
        let x2 = cs.alloc(|| "x2", val(x2v))?;
        cs.enforce(|| "x*x", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        let x3v = x2v.zip(xv).map(|(a, b)| a * b);
        let x3 = cs.alloc(|| "x3", val(x3v))?;
        let half = Fr::from(2u64).invert().unwrap();
        cs.enforce(|| "x2*x", |lc| lc + (half, x2) + (half, x2), |lc| lc + x, |lc| lc + x3);
        let outv = x3v.zip(xv).map(|(a, b)| a + b + Fr::from(5u64));
        let out = cs.alloc_input(|| "out", val(outv))?;
        cs.enforce(|| "sum", |lc| lc + x3 + x + (Fr::from(5u64), CS::one()), |lc| lc + CS::one(), |lc| lc + out);
        cs.enforce(|| "input in B", |lc| lc + CS::one(), |lc| lc + out, |lc| lc + out);
        let only_c = cs.alloc(|| "only in C", || Ok(Fr::ZERO))?;
        cs.enforce(|| "0*0=only_c", |lc| lc, |lc| lc, |lc| lc + only_c);
        Ok(())
    }
}

/// Only public inputs (no aux at all); optionally no constraints either.
#[derive(Clone)]
pub struct InputsOnly {
    pub values: Option<[Fr; 3]>,
    pub constrain: bool,
}

impl Circuit<Fr> for InputsOnly {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let v = |i: usize| self.values.map(|v| v[i]);
        let p = cs.alloc_input(|| "p", val(v(0)))?;
        let q = cs.alloc_input(|| "q", val(v(1)))?;
        let r = cs.alloc_input(|| "r", val(v(2)))?;
        if self.constrain {
            cs.enforce(|| "p*q=r", |lc| lc + p, |lc| lc + q, |lc| lc + r);
            cs.enforce(|| "(p+2q)*1=r-p", |lc| lc + p + (Fr::from(2u64), q), |lc| lc + CS::one(), |lc| lc + r - p);
        }
        Ok(())
    }
}

/// Linear-combination edge cases: empty LCs, zero coefficients, duplicates (merged, and
/// cancelling to zero), constants, out-of-order duplicate insertion, negative and large
/// coefficients, a variable that only ever has zero coefficients.
#[derive(Clone)]
pub struct EdgeLcs {
    pub x: Option<Fr>,
}

impl Circuit<Fr> for EdgeLcs {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let xv = self.x;
        let yv = xv.map(|x| x + Fr::ONE);
        let x = cs.alloc(|| "x", val(xv))?;
        let y = cs.alloc(|| "y", val(yv))?;
        let p = cs.alloc_input(|| "p", val(xv.zip(yv).map(|(x, y)| x * y)))?;
        let ghost = cs.alloc(|| "only zero coefficients", val(xv.map(|x| x.double())))?;
        let big = Fr::from(0xdead_beef_u64) * Fr::from(u64::MAX).pow_vartime([3]);
        let two = Fr::from(2u64);
        let mut ns = cs.namespace(|| "edge");
        let cs = &mut ns;
        cs.enforce(|| "all empty", |lc| lc, |lc| lc, |lc| lc);
        cs.enforce(
            || "cancel",
            |lc| lc + x + x - x - x,
            |lc| lc + CS::one() - CS::one(),
            |lc| lc + (big, y) - (big, y),
        );
        cs.enforce(
            || "zero coeffs",
            |lc| lc + (Fr::ZERO, ghost),
            |lc| lc + (Fr::ZERO, ghost) + (Fr::ZERO, p),
            |lc| lc + (Fr::ZERO, CS::one()),
        );
        cs.enforce(
            || "dups",
            |lc| lc + x + (two, x) + y - y + y,
            |lc| lc + CS::one() + CS::one() + p,
            |lc| lc - (big, x) + (big, x) + (big, x),
        );
        // Out of order: y, x, then y and x again, so insert_or_update takes its search paths.
        cs.enforce(
            || "unordered dups",
            |lc| lc + y + x + y + (Fr::from(3u64), x),
            |lc| lc + p + CS::one() + p,
            |lc| lc + ghost - ghost,
        );
        cs.enforce(|| "x*y=p", |lc| lc + x, |lc| lc + y, |lc| lc + p);
        cs.enforce(
            || "constants",
            |lc| lc + (Fr::from(5u64), CS::one()),
            |lc| lc + (Fr::from(7u64), CS::one()),
            |lc| lc + (Fr::from(35u64), CS::one()),
        );
        cs.enforce(|| "negative", |lc| lc - x, |lc| lc - (big, CS::one()), |lc| lc - p);
        // An LC built from other LCs.
        let base = LinearCombination::<Fr>::zero() + x + (two, y);
        cs.enforce(
            || "lc of lcs",
            |lc| lc + &base + (two, &base) - &base,
            |lc| lc + &base - &base,
            |lc| lc - (two, &base),
        );
        Ok(())
    }
}

/// Synthesizes independent pieces into `CS::new()` sub-systems in parallel (most with their
/// own temporary ONE, one nested another level deep, some with none) and extends the root
/// with them, as Window PoSt does; then allocates more root variables after the pieces.
#[derive(Clone)]
pub struct Extensible {
    pub seed: Option<u64>,
    pub pieces: usize,
}

impl Extensible {
    fn v(&self, k: u64) -> Option<Fr> {
        self.seed.map(|s| Fr::from(s.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(k)))
    }
}

fn piece<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    k: usize,
    with_one: bool,
    v: &dyn Fn(u64) -> Option<Fr>,
) -> Result<(), SynthesisError> {
    let k64 = k as u64 * 100;
    let a = cs.alloc(|| "a", val(v(k64 + 1)))?;
    let b = cs.alloc(|| "b", val(v(k64 + 2)))?;
    let c = cs.alloc(|| "c", val(v(k64 + 1).zip(v(k64 + 2)).map(|(a, b)| a * b)))?;
    cs.enforce(|| "a*b=c", |lc| lc + a, |lc| lc + b, |lc| lc + c);
    if !with_one {
        cs.enforce(|| "aux only", |lc| lc + a + b, |lc| lc + c + c, |lc| lc);
        return Ok(());
    }
    let i = cs.alloc_input(|| "piece input", val(v(k64 + 3)))?;
    if k == 0 {
        // A nested piece: its ONE maps to ours, which maps to the root's.
        let mut sub = CS::new();
        sub.alloc_input(|| "temp ONE", || Ok(Fr::ONE))?;
        let d = sub.alloc(|| "d", val(v(k64 + 4)))?;
        let j = sub.alloc_input(|| "nested input", val(v(k64 + 5)))?;
        sub.enforce(|| "nested", |lc| lc + d + CS::one(), |lc| lc + j + CS::one(), |lc| lc + d);
        cs.extend(&sub);
    }
    let mut ns = cs.namespace(|| format!("piece {k}"));
    let cs = &mut ns;
    cs.enforce(
        || "one in B",
        |lc| lc + a + CS::one(),
        |lc| lc + CS::one(),
        |lc| lc + i + (Fr::from(k as u64 + 2), CS::one()),
    );
    cs.enforce(|| "input in B", |lc| lc + (Fr::from(3u64), c), |lc| lc + i - a, |lc| lc + i);
    Ok(())
}

impl Circuit<Fr> for Extensible {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        assert!(CS::is_extensible(), "every constraint system under test is extensible");
        let x = cs.alloc_input(|| "x", val(self.v(1)))?;
        let y = cs.alloc(|| "y", val(self.v(2)))?;
        cs.enforce(|| "x*y", |lc| lc + x, |lc| lc + y + CS::one(), |lc| lc + y);
        let this = &self;
        let subs = (0..self.pieces)
            .into_par_iter()
            .map(|k| {
                let mut sub = CS::new();
                let with_one = k % 3 != 2;
                if with_one {
                    sub.alloc_input(|| "temp ONE", || Ok(Fr::ONE))?;
                }
                piece(&mut sub, k, with_one, &|i| this.v(i))?;
                Ok(sub)
            })
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        for sub in &subs {
            cs.extend(sub);
        }
        let z = cs.alloc(|| "z after pieces", val(self.v(3)))?;
        let w = cs.alloc_input(|| "w after pieces", val(self.v(4)))?;
        cs.enforce(|| "z*w", |lc| lc + z + x, |lc| lc + w, |lc| lc + y - z);
        Ok(())
    }
}

/// A bigger circuit shaped like Filecoin's: bit decompositions (booleanity constraints,
/// packing with power-of-two coefficients) and multiplication chains.
#[derive(Clone)]
pub struct Bits {
    pub values: Option<Vec<u64>>,
    pub n: usize,
}

impl Circuit<Fr> for Bits {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut acc_v = Some(Fr::ONE);
        let mut acc: Option<Variable> = None;
        for k in 0..self.n {
            let mut cs = cs.namespace(|| format!("value {k}"));
            let xv = self.values.as_ref().map(|v| v[k]);
            let x = cs.alloc(|| "x", val(xv.map(Fr::from)))?;
            let mut packed = LinearCombination::zero();
            let mut coeff = Fr::ONE;
            for i in 0..64 {
                let bit = xv.map(|x| x >> i & 1 == 1);
                let b = cs.alloc(|| format!("bit {i}"), val(bit.map(|b| if b { Fr::ONE } else { Fr::ZERO })))?;
                cs.enforce(|| format!("boolean {i}"), |lc| lc + b, |lc| lc + CS::one() - b, |lc| lc);
                packed = packed + (coeff, b);
                coeff = coeff.double();
            }
            cs.enforce(|| "pack", |_| packed, |lc| lc + CS::one(), |lc| lc + x);
            let next_v = acc_v.zip(xv).map(|(a, x)| a * (Fr::from(x) + Fr::ONE));
            let next = cs.alloc(|| "acc", val(next_v))?;
            match acc {
                None => cs.enforce(|| "acc", |lc| lc + CS::one(), |lc| lc + x + CS::one(), |lc| lc + next),
                Some(a) => cs.enforce(|| "acc", |lc| lc + a, |lc| lc + x + CS::one(), |lc| lc + next),
            }
            acc = Some(next);
            acc_v = next_v;
        }
        let out = cs.alloc_input(|| "out", val(acc_v))?;
        if let Some(a) = acc {
            cs.enforce(|| "out", |lc| lc + a, |lc| lc + CS::one(), |lc| lc + out);
        }
        Ok(())
    }
}

/// Values for [`Bits`].
pub fn bits_values(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
    (0..n).map(|_| rng.gen()).collect()
}

/// A random R1CS program: replayed by [`Random`] against any constraint system.
#[derive(Clone, Debug)]
pub enum Op {
    Aux(Fr),
    Input(Fr),
    /// A, B, C as terms (variable pick, coefficient, subtract?).
    Enforce([Vec<(usize, Fr, bool)>; 3]),
    /// A sub-system extended into the current one.
    Piece {
        with_one: bool,
        ops: Vec<Op>,
    },
}

fn random_coeff<R: Rng>(rng: &mut R) -> Fr {
    match rng.gen_range(0..10) {
        0..=3 => Fr::ONE,
        4 => -Fr::ONE,
        5 => Fr::ZERO,
        6 => Fr::from(1u64 << rng.gen_range(0..63)),
        7 => Fr::from(rng.gen_range(2..6u64)),
        _ => Fr::random(&mut *rng),
    }
}

pub fn random_ops<R: Rng>(rng: &mut R, depth: usize, allow_inputs: bool) -> Vec<Op> {
    let n = rng.gen_range(0..30);
    let mut ops = Vec::with_capacity(n);
    for _ in 0..n {
        let op = match rng.gen_range(0..20) {
            0..=5 => Op::Aux(Fr::random(&mut *rng)),
            6..=7 if allow_inputs => Op::Input(Fr::random(&mut *rng)),
            8 if depth < 2 => {
                // `allow_inputs` is false inside a system without ONE: extending such a
                // system with inputs breaks extend's contract (tested separately).
                let with_one = allow_inputs && rng.gen_bool(0.8);
                // A piece without its temporary ONE must not allocate inputs: extend treats
                // a piece's input 0 as its ONE (see the crate docs).
                Op::Piece { with_one, ops: random_ops(rng, depth + 1, with_one) }
            }
            _ => {
                let mut lc = || {
                    let terms = rng.gen_range(0..5);
                    let mut v = Vec::new();
                    for _ in 0..terms {
                        let (var, coeff, sub) = (rng.gen_range(0..1000), random_coeff(rng), rng.gen_bool(0.2));
                        v.push((var, coeff, sub));
                        if rng.gen_bool(0.15) {
                            v.push((var, coeff, !sub)); // cancels the term just added
                        }
                    }
                    v
                };
                Op::Enforce([lc(), lc(), lc()])
            }
        };
        ops.push(op);
    }
    ops
}

/// Replays random ops; `blank` makes every value closure fail.
#[derive(Clone)]
pub struct Random {
    pub ops: Vec<Op>,
    pub blank: bool,
}

fn replay<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    ops: &[Op],
    mut vars: Vec<Variable>,
    blank: bool,
) -> Result<(), SynthesisError> {
    let value = |v: &Fr| if blank { None } else { Some(*v) };
    for op in ops {
        match op {
            Op::Aux(v) => vars.push(cs.alloc(|| "aux", val(value(v)))?),
            Op::Input(v) => vars.push(cs.alloc_input(|| "input", val(value(v)))?),
            Op::Enforce(lcs) => {
                let build = |terms: &[(usize, Fr, bool)]| {
                    let mut lc = LinearCombination::zero();
                    if vars.is_empty() {
                        return lc;
                    }
                    for &(pick, coeff, sub) in terms {
                        let var = vars[pick % vars.len()];
                        lc = if sub { lc - (coeff, var) } else { lc + (coeff, var) };
                    }
                    lc
                };
                let (a, b, c) = (build(&lcs[0]), build(&lcs[1]), build(&lcs[2]));
                cs.enforce(|| "random", |_| a, |_| b, |_| c);
            }
            Op::Piece { with_one, ops } => {
                let mut sub = CS::new();
                let mut sub_vars = Vec::new();
                if *with_one {
                    sub.alloc_input(|| "temp ONE", || Ok(Fr::ONE))?;
                    sub_vars.push(CS::one());
                }
                replay(&mut sub, ops, sub_vars, blank)?;
                cs.extend(&sub);
            }
        }
    }
    Ok(())
}

impl Circuit<Fr> for Random {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        replay(cs, &self.ops, vec![CS::one()], self.blank)
    }
}
