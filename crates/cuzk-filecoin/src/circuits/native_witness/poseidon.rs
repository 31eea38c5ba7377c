//! The witness of neptune's (legacy) Poseidon circuit, computed natively.
//!
//! storage-proofs hashes tree C and tree R paths and the column hashes with
//! `neptune::circuit::poseidon_hash`. Its gadget carries every state element as a linear
//! combination and rescales whole combinations at each MDS product; after the SHA-256 work
//! went native that was most of what was left of a PoRep partition's witness time. The
//! values it allocates are simple: per S-box, the input (when it was still a combination),
//! its square, fourth power and fifth power plus round key; and the result. This computes
//! them in the same order with the same constants (neptune 11, `circuit.rs`: first full round
//! with pre-added keys and a constant domain-tag S-box, full and partial rounds with
//! compressed round constants, the pre-sparse and sparse MDS matrices in the partial rounds).
//! Tests compare it with the gadget for every arity the circuits use.

use bellpepper_core::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use blstrs::Scalar as Fr;
use cuzk_pce::{AuxValues, WitnessCs};
use ff::Field;
use neptune::hash_type::HashType;
use neptune::poseidon::{Arity, PoseidonConstants};

/// A state element: its value, and whether the gadget holds it as a variable (otherwise as
/// a linear combination, which an S-box must allocate first).
#[derive(Clone, Copy)]
struct Elt {
    value: Fr,
    allocated: bool,
}

struct Hasher<'a, S: AuxValues, A: Arity<Fr>> {
    cs: &'a mut WitnessCs<S>,
    constants: &'a PoseidonConstants<Fr, A>,
    state: Vec<Elt>,
    /// The MDS product's input, reused every round (a 32 GiB WindowPoSt partition hashes
    /// ~235,000 times, 65 rounds each: fresh vectors per round were tens of millions of
    /// allocations).
    values: Vec<Fr>,
    key_offset: usize,
    round: usize,
}

impl<'a, S: AuxValues, A: Arity<Fr>> Hasher<'a, S, A> {
    fn alloc(&mut self, value: Fr) -> Fr {
        self.cs.aux.push(value);
        value
    }

    /// The S-box input as a variable: free if it is one already.
    fn input(&mut self, e: Elt) -> Fr {
        if !e.allocated {
            self.alloc(e.value);
        }
        e.value
    }

    /// The next `n` round constants.
    fn keys(&mut self, n: usize) -> &'a [Fr] {
        let constants: &'a PoseidonConstants<Fr, A> = self.constants;
        let keys = &constants.compressed_round_constants[self.key_offset..self.key_offset + n];
        self.key_offset += n;
        keys
    }

    /// `quintic_s_box`: l, l², l⁴, l⁵ + post.
    fn s_box(&mut self, e: Elt, post: Option<Fr>) -> Elt {
        let l = self.input(e);
        let l2 = self.alloc(l.square());
        let l4 = self.alloc(l2.square());
        let l5 = self.alloc(l4 * l + post.unwrap_or(Fr::ZERO));
        Elt { value: l5, allocated: true }
    }

    /// `quintic_s_box_pre_add`: l, (l + pre)², its square, ⁴·(l + pre) + post.
    fn s_box_pre_add(&mut self, e: Elt, pre: Fr, post: Fr) -> Elt {
        let l = self.input(e) + pre;
        let l2 = self.alloc(l.square());
        let l4 = self.alloc(l2.square());
        let l5 = self.alloc(l4 * l + post);
        Elt { value: l5, allocated: true }
    }

    fn full_round(&mut self, first: bool, last: bool) {
        let width = self.state.len();
        let pre = if first { self.keys(width) } else { &[] };
        let post = if first || !last { self.keys(width) } else { &[] };
        for i in 0..width {
            let e = self.state[i];
            self.state[i] = match (first, i) {
                // The domain tag is a constant: its S-box is a constant too.
                (true, 0) => {
                    let l = e.value + pre[0];
                    Elt { value: l.square().square() * l + post[0], allocated: false }
                }
                (true, _) => self.s_box_pre_add(e, pre[i], post[i]),
                (false, _) => self.s_box(e, post.get(i).copied()),
            };
        }
        self.product_mds();
    }

    fn partial_round(&mut self) {
        let key = self.keys(1)[0];
        self.state[0] = self.s_box(self.state[0], Some(key));
        self.product_mds();
    }

    /// The MDS product: pre-sparse matrix just before the partial rounds, sparse ones during
    /// them, the full matrix otherwise. Every element becomes a linear combination.
    fn product_mds(&mut self) {
        let c = self.constants;
        let sparse_offset = c.half_full_rounds - 1;
        self.values.clear();
        self.values.extend(self.state.iter().map(|e| e.value));
        let values = &self.values;
        let state = &mut self.state;
        let mut dense = |m: &Vec<Vec<Fr>>| {
            for (j, e) in state.iter_mut().enumerate() {
                *e = Elt { value: values.iter().zip(m).map(|(v, row)| *v * row[j]).sum(), allocated: false };
            }
        };
        if self.round == sparse_offset {
            dense(&c.pre_sparse_matrix);
        } else if self.round > sparse_offset && self.round < c.half_full_rounds + c.partial_rounds {
            let sparse = &c.sparse_matrixes[self.round - sparse_offset - 1];
            state[0] = Elt { value: values.iter().zip(&sparse.w_hat).map(|(v, w)| *v * w).sum(), allocated: false };
            for ((e, v), r) in state[1..].iter_mut().zip(&values[1..]).zip(&sparse.v_rest) {
                *e = Elt { value: *v + values[0] * r, allocated: false };
            }
        } else {
            dense(&c.mds_matrices.m);
        }
        self.round += 1;
    }
}

/// `neptune::circuit::poseidon_hash(preimage, constants)` in a witness-only system.
pub(crate) fn poseidon_hash<S: AuxValues, A: Arity<Fr>>(
    cs: &mut WitnessCs<S>,
    preimage: &[AllocatedNum<Fr>],
    constants: &PoseidonConstants<Fr, A>,
) -> Result<AllocatedNum<Fr>, SynthesisError> {
    let arity = A::to_usize();
    if preimage.len() != arity || constants.width() != arity + 1 {
        return Err(SynthesisError::Unsatisfiable);
    }
    if let HashType::ConstantLength(length) = constants.hash_type {
        if length != arity {
            return Err(SynthesisError::Unsatisfiable);
        }
    }
    let mut state = vec![Elt { value: constants.domain_tag, allocated: false }];
    for p in preimage {
        state.push(Elt { value: p.get_value().ok_or(SynthesisError::AssignmentMissing)?, allocated: true });
    }
    let mut h = Hasher { cs, constants, values: Vec::with_capacity(state.len()), state, key_offset: 0, round: 0 };
    let half = constants.full_rounds / 2;
    h.full_round(true, false);
    for _ in 1..half {
        h.full_round(false, false);
    }
    for _ in 0..constants.partial_rounds {
        h.partial_round();
    }
    for _ in 0..half - 1 {
        h.full_round(false, false);
    }
    h.full_round(false, true);
    let result = h.state[1].value;
    AllocatedNum::alloc(&mut *h.cs, || Ok(result))
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_hashers::{PoseidonArity, POSEIDON_CONSTANTS_11};
    use rand::SeedableRng;
    use typenum::{U11, U2, U4, U8};

    fn check<A: Arity<Fr>>(constants: &PoseidonConstants<Fr, A>, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let values: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut rng)).collect();
        let run = |native: bool| {
            let mut cs = WitnessCs::<Vec<Fr>>::new_with_one();
            let preimage: Vec<_> = values.iter().map(|v| AllocatedNum::alloc(&mut cs, || Ok(*v)).unwrap()).collect();
            let out = if native {
                poseidon_hash(&mut cs, &preimage, constants).unwrap()
            } else {
                neptune::circuit::poseidon_hash(&mut cs, preimage, constants).unwrap()
            };
            (cs.aux, out.get_value().unwrap())
        };
        let (want, want_out) = run(false);
        let (got, got_out) = run(true);
        assert_eq!(got_out, want_out, "arity {}: hash", A::to_usize());
        assert_eq!(got.len(), want.len(), "arity {}: aux count", A::to_usize());
        assert!(got == want, "arity {}: aux values", A::to_usize());
        // And the hash is Poseidon's (neptune's own out-of-circuit hasher).
        let mut p = neptune::Poseidon::new_with_preimage(&values, constants);
        assert_eq!(got_out, p.hash(), "arity {}: not the Poseidon hash", A::to_usize());
    }

    #[test]
    fn matches_the_gadget_for_every_arity_in_use() {
        // Tree arities (base 8, sub 8/2, top 2; 4 in 16 MiB-class trees), and columns of 11.
        check::<U2>(<U2 as PoseidonArity>::PARAMETERS(), 1);
        check::<U4>(<U4 as PoseidonArity>::PARAMETERS(), 2);
        check::<U8>(<U8 as PoseidonArity>::PARAMETERS(), 3);
        check::<U11>(&POSEIDON_CONSTANTS_11, 4);
    }

    #[test]
    fn refuses_a_preimage_of_the_wrong_length() {
        let mut cs = WitnessCs::<Vec<Fr>>::new_with_one();
        let one = AllocatedNum::alloc(&mut cs, || Ok(Fr::ONE)).unwrap();
        assert!(poseidon_hash(&mut cs, &[one], <U2 as PoseidonArity>::PARAMETERS()).is_err());
    }
}
