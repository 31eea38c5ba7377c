//! The witness of bellperson's SHA-256 gadget, computed natively.
//!
//! About 80 % of a PoRep partition's constraints are SHA-256 (the labels it re-derives), and
//! running the gadget only to learn its witness spends most of its time building linear
//! combinations that a witness-only constraint system throws away. This module computes the
//! same aux values, in the same order, with plain bit operations.
//!
//! "The same" is the whole contract: the gadget decides per bit whether to allocate a
//! variable (constants fold away, `Not` views are free) and what value the variable holds
//! (for a negated operand it is not the bit's value). [`Bit`] keeps exactly the information
//! those decisions need, and every operation below follows the gadget's case analysis
//! (bellpepper-core 0.2 `Boolean`, bellperson 0.27 `UInt32` and `sha256`). Tests compare the
//! result with the gadget on random inputs, all mixes of constant, plain and negated bits,
//! and the real circuits compare whole partitions (see `native_witness`).

/// Receives the aux values the gadget would allocate, in order (each one is 0 or 1).
pub(crate) trait BitSink {
    fn bit(&mut self, value: bool);
}

impl BitSink for Vec<bool> {
    fn bit(&mut self, value: bool) {
        self.push(value)
    }
}

/// One bit as the gadget holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bit {
    /// Not a variable.
    Const(bool),
    /// A variable holding this value, used as is (`Boolean::Is`).
    Is(bool),
    /// A variable holding this value, used negated (`Boolean::Not`): the bit is its negation.
    Not(bool),
}

impl Bit {
    pub fn value(self) -> bool {
        match self {
            Bit::Const(v) | Bit::Is(v) => v,
            Bit::Not(v) => !v,
        }
    }

    fn is_const(self) -> bool {
        matches!(self, Bit::Const(_))
    }

    fn not(self) -> Bit {
        match self {
            Bit::Const(v) => Bit::Const(!v),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }
}

/// A fresh variable holding `value`, used as is.
fn alloc(sink: &mut impl BitSink, value: bool) -> Bit {
    sink.bit(value);
    Bit::Is(value)
}

/// `Boolean::xor`: at most one variable, none when either side is constant.
fn xor(sink: &mut impl BitSink, a: Bit, b: Bit) -> Bit {
    match (a, b) {
        (Bit::Const(false), x) | (x, Bit::Const(false)) => x,
        (Bit::Const(true), x) | (x, Bit::Const(true)) => x.not(),
        // The gadget XORs the two variables and negates the view when exactly one operand
        // was negated, so the variable holds the XOR of the two variables' values.
        (Bit::Is(u), Bit::Not(v)) | (Bit::Not(u), Bit::Is(v)) => {
            sink.bit(u ^ v);
            Bit::Not(u ^ v)
        }
        (Bit::Is(u), Bit::Is(v)) | (Bit::Not(u), Bit::Not(v)) => alloc(sink, u ^ v),
    }
}

/// `Boolean::and`: a variable holding the conjunction of the two bits (and, and-not and nor
/// of the underlying variables all come to that), unless a side is constant.
fn and(sink: &mut impl BitSink, a: Bit, b: Bit) -> Bit {
    match (a, b) {
        (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::Const(false),
        (Bit::Const(true), x) | (x, Bit::Const(true)) => x,
        _ => alloc(sink, a.value() & b.value()),
    }
}

/// `Boolean::sha256_ch`: (a and b) xor ((not a) and c).
fn ch<S: BitSink>(sink: &mut S, a: Bit, b: Bit, c: Bit) -> Bit {
    let value = (a.value() & b.value()) ^ (!a.value() & c.value());
    match (a, b, c) {
        (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(value),
        (Bit::Const(false), _, c) => c,
        (a, Bit::Const(false), c) => and(sink, a.not(), c),
        (a, b, Bit::Const(false)) => and(sink, a, b),
        (a, b, Bit::Const(true)) => and(sink, a, b.not()).not(),
        (a, Bit::Const(true), c) => and(sink, a.not(), c.not()).not(),
        // A constant true `a`, or no constants: one variable for the result.
        _ => alloc(sink, value),
    }
}

/// `Boolean::sha256_maj`: (a and b) xor (a and c) xor (b and c).
fn maj<S: BitSink>(sink: &mut S, a: Bit, b: Bit, c: Bit) -> Bit {
    let value = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
    match (a, b, c) {
        (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(value),
        (Bit::Const(false), b, c) => and(sink, b, c),
        (a, Bit::Const(false), c) => and(sink, a, c),
        (a, b, Bit::Const(false)) => and(sink, a, b),
        (a, b, Bit::Const(true)) => and(sink, a.not(), b.not()).not(),
        (a, Bit::Const(true), c) => and(sink, a.not(), c.not()).not(),
        (Bit::Const(true), b, c) => and(sink, b.not(), c.not()).not(),
        _ => {
            // The result first, then "b and c", which the gadget's constraint needs.
            let result = alloc(sink, value);
            and(sink, b, c);
            result
        }
    }
}

/// A `UInt32`: bits least significant first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Word([Bit; 32]);

impl Word {
    pub fn constant(v: u32) -> Word {
        Word(std::array::from_fn(|i| Bit::Const((v >> i) & 1 == 1)))
    }

    /// From 32 bits, most significant first (`UInt32::from_bits_be`).
    fn from_bits_be(bits: &[Bit]) -> Word {
        assert_eq!(bits.len(), 32);
        Word(std::array::from_fn(|i| bits[31 - i]))
    }

    fn bits_be(&self) -> impl Iterator<Item = Bit> + '_ {
        self.0.iter().rev().copied()
    }

    fn value(&self) -> u32 {
        self.0.iter().enumerate().fold(0, |v, (i, b)| v | (u32::from(b.value()) << i))
    }

    fn is_const(&self) -> bool {
        self.0.iter().all(|b| b.is_const())
    }

    fn rotr(&self, by: usize) -> Word {
        Word(std::array::from_fn(|i| self.0[(i + by) % 32]))
    }

    fn shr(&self, by: usize) -> Word {
        Word(std::array::from_fn(|i| if i + by < 32 { self.0[i + by] } else { Bit::Const(false) }))
    }

    fn xor(&self, sink: &mut impl BitSink, other: &Word) -> Word {
        let mut out = [Bit::Const(false); 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = xor(sink, self.0[i], other.0[i]);
        }
        Word(out)
    }

    fn triop<S: BitSink>(sink: &mut S, a: &Word, b: &Word, c: &Word, f: impl Fn(&mut S, Bit, Bit, Bit) -> Bit) -> Word {
        let mut out = [Bit::Const(false); 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = f(sink, a.0[i], b.0[i], c.0[i]);
        }
        Word(out)
    }

    /// `UInt32::addmany`: a constant when every operand bit is constant; otherwise one
    /// variable per bit of the largest possible sum (carries included), of which the low 32
    /// are the result.
    fn addmany(sink: &mut impl BitSink, operands: &[Word]) -> Word {
        assert!((2..=10).contains(&operands.len()));
        let sum: u64 = operands.iter().map(|w| u64::from(w.value())).sum();
        if operands.iter().all(Word::is_const) {
            return Word::constant(sum as u32);
        }
        let max = operands.len() as u64 * u64::from(u32::MAX);
        let bits = 64 - max.leading_zeros() as usize;
        let mut out = [Bit::Const(false); 32];
        // Every bit of the sum is allocated (the gadget does), the low 32 kept.
        for i in 0..bits {
            let b = alloc(sink, (sum >> i) & 1 == 1);
            if let Some(slot) = out.get_mut(i) {
                *slot = b;
            }
        }
        Word(out)
    }
}

#[allow(clippy::unreadable_literal)]
const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

#[allow(clippy::unreadable_literal)]
const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// A word of the state that the gadget may leave as a pending sum, added up (allocated)
/// only when first used, so that several additions share one set of result bits.
enum Pending {
    Sum(Vec<Word>),
    Word(Word),
}

impl Pending {
    fn resolve(self, sink: &mut impl BitSink, more: &[Word]) -> Word {
        match self {
            Pending::Word(w) => w,
            Pending::Sum(mut operands) => {
                operands.extend_from_slice(more);
                Word::addmany(sink, &operands)
            }
        }
    }
}

/// One compression (`sha256_compression_function`): 512 input bits, most significant first.
fn compress(sink: &mut impl BitSink, block: &[Bit], state: &[Word; 8]) -> [Word; 8] {
    assert_eq!(block.len(), 512);
    let mut w: Vec<Word> = block.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(sink, &w[i - 15].rotr(18)).xor(sink, &w[i - 15].shr(3));
        let s1 = w[i - 2].rotr(17).xor(sink, &w[i - 2].rotr(19)).xor(sink, &w[i - 2].shr(10));
        let next = Word::addmany(sink, &[w[i - 16], s0, w[i - 7], s1]);
        w.push(next);
    }

    let mut a = Pending::Word(state[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *state;
    let mut e = Pending::Word(state[4]);
    for i in 0..64 {
        let new_e = e.resolve(sink, &[]);
        let s1 = new_e.rotr(6).xor(sink, &new_e.rotr(11)).xor(sink, &new_e.rotr(25));
        let choose = Word::triop(sink, &new_e, &f, &g, ch);
        let temp1 = [h, s1, choose, Word::constant(ROUND_CONSTANTS[i]), w[i]];

        let new_a = a.resolve(sink, &[]);
        let s0 = new_a.rotr(2).xor(sink, &new_a.rotr(13)).xor(sink, &new_a.rotr(22));
        let majority = Word::triop(sink, &new_a, &b, &c, maj);

        h = g;
        g = f;
        f = new_e;
        e = Pending::Sum(temp1.iter().copied().chain([d]).collect());
        d = c;
        c = b;
        b = new_a;
        a = Pending::Sum(temp1.iter().copied().chain([s0, majority]).collect());
    }

    [
        a.resolve(sink, &[state[0]]),
        Word::addmany(sink, &[state[1], b]),
        Word::addmany(sink, &[state[2], c]),
        Word::addmany(sink, &[state[3], d]),
        e.resolve(sink, &[state[4]]),
        Word::addmany(sink, &[state[5], f]),
        Word::addmany(sink, &[state[6], g]),
        Word::addmany(sink, &[state[7], h]),
    ]
}

/// `bellperson::gadgets::sha256::sha256`: the digest's 256 bits, most significant first.
pub(crate) fn sha256(sink: &mut impl BitSink, input: &[Bit]) -> Vec<Bit> {
    assert!(input.len().is_multiple_of(8));
    let mut padded = input.to_vec();
    let len_bits = input.len() as u64;
    padded.push(Bit::Const(true));
    while !(padded.len() + 64).is_multiple_of(512) {
        padded.push(Bit::Const(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Const((len_bits >> i) & 1 == 1)));

    let mut state = IV.map(Word::constant);
    for block in padded.chunks(512) {
        state = compress(sink, block, &state);
    }
    state.iter().flat_map(Word::bits_be).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::boolean::{AllocatedBit, Boolean};
    use blstrs::Scalar as Fr;
    use cuzk_pce::WitnessCs;
    use ff::Field;
    use rand::{Rng, SeedableRng};

    /// The gadget's aux values, as bits, for the same input.
    fn gadget(input: &[Bit]) -> (Vec<bool>, Vec<bool>) {
        let mut cs = WitnessCs::<Vec<Fr>>::new_with_one();
        // Variables for the input bits come first; they are not part of the comparison.
        let booleans: Vec<Boolean> = input
            .iter()
            .map(|b| match *b {
                Bit::Const(v) => Boolean::Constant(v),
                Bit::Is(v) => Boolean::Is(AllocatedBit::alloc(&mut cs, Some(v)).unwrap()),
                Bit::Not(v) => Boolean::Not(AllocatedBit::alloc(&mut cs, Some(v)).unwrap()),
            })
            .collect();
        let skip = cs.aux.len();
        let digest = bellperson::gadgets::sha256::sha256(&mut cs, &booleans).unwrap();
        let aux = cs.aux[skip..]
            .iter()
            .map(|v| {
                assert!(*v == Fr::ZERO || *v == Fr::ONE, "the SHA-256 gadget allocates bits only");
                *v == Fr::ONE
            })
            .collect();
        (aux, digest.iter().map(|b| b.get_value().unwrap()).collect())
    }

    fn native(input: &[Bit]) -> (Vec<bool>, Vec<bool>) {
        let mut aux = Vec::new();
        let digest = sha256(&mut aux, input);
        (aux, digest.iter().map(|b| b.value()).collect())
    }

    fn random_bits(rng: &mut impl Rng, n: usize, kinds: &[u8]) -> Vec<Bit> {
        (0..n)
            .map(|_| {
                let v = rng.gen::<bool>();
                match kinds[rng.gen_range(0..kinds.len())] {
                    0 => Bit::Const(v),
                    1 => Bit::Is(v),
                    _ => Bit::Not(v),
                }
            })
            .collect()
    }

    #[test]
    fn matches_the_gadget_on_every_mix_of_bit_kinds() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        // Kinds: constants only, variables only, negated only, and mixes; lengths cover one
        // block, a block boundary and several blocks.
        let mixes: [&[u8]; 6] = [&[0], &[1], &[2], &[0, 1], &[1, 2], &[0, 1, 2]];
        for kinds in mixes {
            for len in [0, 8, 440, 448, 512, 1024, 1248] {
                let input = random_bits(&mut rng, len, kinds);
                let (want_aux, want_digest) = gadget(&input);
                let (got_aux, got_digest) = native(&input);
                assert_eq!(got_digest, want_digest, "digest, kinds {kinds:?}, {len} bits");
                assert_eq!(got_aux.len(), want_aux.len(), "aux count, kinds {kinds:?}, {len} bits");
                assert!(got_aux == want_aux, "aux values, kinds {kinds:?}, {len} bits");
            }
        }
    }

    #[test]
    fn digest_is_sha256() {
        use sha2::Digest;
        let msg = b"cuzk native sha256 witness";
        let input: Vec<Bit> =
            msg.iter().flat_map(|byte| (0..8).rev().map(move |i| Bit::Is((byte >> i) & 1 == 1))).collect();
        let (_, digest) = native(&input);
        let want = sha2::Sha256::digest(msg);
        let want_bits: Vec<bool> =
            want.iter().flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1 == 1)).collect();
        assert_eq!(digest, want_bits);
    }
}
