//! Density bitmaps: which variables appear (with a non-zero coefficient) in the A or B
//! polynomials. Parameter files omit the query points of variables that never appear, so a
//! prover must pick exactly the scalars whose bit is set, in order, to line up with the points.

/// A growable bitmap with a cached population count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    ones: usize,
}

impl Density {
    pub fn new() -> Self {
        Self::default()
    }

    /// A bitmap of `len` bits, all clear.
    pub fn with_len(len: usize) -> Self {
        Density { words: vec![0; len.div_ceil(64)], len, ones: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.ones
    }

    /// Append one clear bit (a newly allocated variable).
    pub fn push_clear(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    pub fn get(&self, i: usize) -> bool {
        debug_assert!(i < self.len);
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Set bit `i`; setting an already-set bit is a no-op.
    pub fn set(&mut self, i: usize) {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        if self.words[w] & b == 0 {
            self.words[w] |= b;
            self.ones += 1;
        }
    }

    /// Append `other`'s bits. With `merge_first`, `other`'s bit 0 is folded into our bit 0
    /// instead of being appended: both stand for the shared constant-one input.
    pub fn extend(&mut self, other: &Density, merge_first: bool) {
        let mut start = 0;
        if merge_first && other.len > 0 {
            if self.is_empty() {
                self.push_clear();
            }
            if other.get(0) {
                self.set(0);
            }
            start = 1;
        }
        for i in start..other.len {
            self.push_clear();
            if other.get(i) {
                let at = self.len - 1;
                self.set(at);
            }
        }
    }

    /// Indices of set bits, ascending.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut bits = word;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let t = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(w * 64 + t)
            })
        })
    }

    /// The raw words (bit i of the bitmap is bit i%64 of word i/64), for backends that
    /// ship the bitmap to a device.
    pub fn words(&self) -> &[u64] {
        &self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_count_and_iterate() {
        let mut d = Density::new();
        for _ in 0..130 {
            d.push_clear();
        }
        for i in [0, 5, 64, 129, 5] {
            d.set(i);
        }
        assert_eq!(d.count_ones(), 4);
        assert_eq!(d.ones().collect::<Vec<_>>(), vec![0, 5, 64, 129]);
        assert!(d.get(64) && !d.get(63));
    }

    #[test]
    fn extend_merges_the_shared_one_input() {
        let mut a = Density::with_len(2);
        a.set(1);
        let mut b = Density::with_len(3);
        b.set(0);
        b.set(2);
        let mut inputs = a.clone();
        inputs.extend(&b, true);
        assert_eq!(inputs.len(), 4);
        assert_eq!(inputs.ones().collect::<Vec<_>>(), vec![0, 1, 3]);
        let mut aux = a;
        aux.extend(&b, false);
        assert_eq!(aux.len(), 5);
        assert_eq!(aux.ones().collect::<Vec<_>>(), vec![1, 2, 4]);
    }
}
