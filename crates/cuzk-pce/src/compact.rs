//! `CompactFrVec`: a vector of field elements stored as 2 bits per value for 0 and 1, and the
//! full 32 bytes only for other values.
//!
//! Why: a witness is mostly bits. Of the 130,169,893 aux values of one 32 GiB PoRep partition,
//! 51.4 % are 0 and 47.3 % are 1 (`cuzk-bench pce-bench --witness-c1`), so the 4.2 GB vector
//! holds ~88 MB of information. Partitions wait between synthesis and the prover in this
//! form; the prover expands one just before it needs the values, so the memory a waiting
//! partition holds no longer limits how many can be synthesized ahead.
//!
//! Layout: `tags` packs 32 values per `u64`, value i in bits 2(i mod 32)..+2 of word i / 32:
//! 0b00 = zero, 0b01 = one, 0b10 = the next stored value (in order).
//!
//! The stored values are one sequence kept in segments: `sealed`, then `others`, which
//! pushes grow. Parts synthesized in parallel are appended by moving their vectors in as
//! segments: copying a 32 GiB WindowPoSt's ~4 GB of stored values into one vector took
//! ~2.5 s of its ~10 s witness on the 2-core dev box, and held both copies at once.

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

const PER_WORD: usize = 32;
const TAG_ZERO: u64 = 0b00;
const TAG_ONE: u64 = 0b01;
const TAG_OTHER: u64 = 0b10;
/// The high bit of every 2-bit tag: set exactly for TAG_OTHER.
const OTHER_MASK: u64 = 0xAAAA_AAAA_AAAA_AAAA;

#[derive(Clone, Debug, Default)]
pub struct CompactFrVec {
    tags: Vec<u64>,
    /// Stored values before `others`, segment by segment; none is empty.
    sealed: Vec<Vec<Fr>>,
    /// The last stored values, the ones pushes append to.
    others: Vec<Fr>,
    len: usize,
}

/// Equal values, however the stored ones are segmented.
impl PartialEq for CompactFrVec {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && self.tags == other.tags
            && self.num_others() == other.num_others()
            && self.stored().eq(other.stored())
    }
}

impl Eq for CompactFrVec {}

impl CompactFrVec {
    /// Room for `len` values without reallocating the tags (values other than 0/1 still grow
    /// their own vector: how many there are is not known in advance).
    pub fn with_capacity(len: usize) -> Self {
        CompactFrVec {
            tags: Vec::with_capacity(len.div_ceil(PER_WORD)),
            sealed: Vec::new(),
            others: Vec::new(),
            len: 0,
        }
    }

    pub fn from_slice(values: &[Fr]) -> Self {
        let mut v = Self::with_capacity(values.len());
        v.extend_from_slice(values);
        v
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Values stored in full (neither 0 nor 1).
    pub fn num_others(&self) -> usize {
        self.sealed.iter().map(Vec::len).sum::<usize>() + self.others.len()
    }

    /// The packed 2-bit tags, 32 values a word (for backends that expand on a device).
    pub fn tags(&self) -> &[u64] {
        &self.tags
    }

    /// The values stored in full, in order, as the segments they are kept in (none empty):
    /// a backend copies them one after another.
    pub fn other_segments(&self) -> impl Iterator<Item = &[Fr]> + '_ {
        self.sealed.iter().map(|s| &s[..]).chain((!self.others.is_empty()).then_some(&self.others[..]))
    }

    /// The values stored in full, in order.
    fn stored(&self) -> impl Iterator<Item = &Fr> + '_ {
        self.other_segments().flatten()
    }

    /// The stored values from number `start` on.
    fn stored_from(&self, mut start: usize) -> impl Iterator<Item = &Fr> + '_ {
        let mut segments = self.other_segments();
        let mut first: &[Fr] = &[];
        for s in segments.by_ref() {
            if start < s.len() {
                first = &s[start..];
                break;
            }
            start -= s.len();
        }
        first.iter().chain(segments.flatten())
    }

    /// For each tag word, how many values stored in full come before it (an exclusive prefix
    /// sum), so that a device can expand every word independently. Checks that the tags and
    /// the stored values agree, so an expansion never reads past the stored values.
    pub fn word_offsets(&self) -> Result<Vec<u32>, String> {
        let stored = self.num_others();
        if stored > u32::MAX as usize {
            return Err(format!("{stored} stored values do not fit 32-bit offsets"));
        }
        let mut next = 0usize;
        let offsets = self
            .tags
            .iter()
            .map(|w| {
                let start = next;
                next += (w & OTHER_MASK).count_ones() as usize;
                start as u32
            })
            .collect();
        if next != stored {
            return Err(format!("compact vector: {next} tags say stored, {stored} values are"));
        }
        Ok(offsets)
    }

    /// Heap bytes in use (what a partition waiting in this form holds).
    pub fn heap_bytes(&self) -> u64 {
        (self.tags.len() * 8 + self.num_others() * 32) as u64
    }

    pub fn push(&mut self, v: Fr) {
        let tag = if v == Fr::ZERO {
            TAG_ZERO
        } else if v == Fr::ONE {
            TAG_ONE
        } else {
            self.others.push(v);
            TAG_OTHER
        };
        self.push_tag(tag);
    }

    /// Push 0 or 1.
    pub fn push_bit(&mut self, bit: bool) {
        self.push_tag(if bit { TAG_ONE } else { TAG_ZERO });
    }

    fn push_tag(&mut self, tag: u64) {
        let slot = self.len % PER_WORD;
        if slot == 0 {
            self.tags.push(0);
        }
        // A new word starts at 0, so or-ing the tag in is enough.
        *self.tags.last_mut().expect("a word for this slot") |= tag << (2 * slot);
        self.len += 1;
    }

    pub fn extend_from_slice(&mut self, values: &[Fr]) {
        for v in values {
            self.push(*v);
        }
    }

    /// Room for `values` more values, `stored` of them neither 0 nor 1, without regrowing
    /// (each regrowth copies what is held so far and faults in fresh pages). A large room
    /// is advised huge pages: a 32 GiB WindowPoSt's chunks reserve ~4 GB of stored values
    /// this way, and their synthesis took 7.7 s with 4 KiB faults against 6.9-7.1 s with
    /// 2 MiB ones on the 2-core dev box, their drop 100 ms against 11 ms.
    pub fn reserve_exact(&mut self, values: usize, stored: usize) {
        let words = (self.len + values).div_ceil(PER_WORD).saturating_sub(self.tags.len());
        self.tags.reserve_exact(words);
        self.others.reserve_exact(stored);
        advise_huge_pages(&self.others);
    }

    /// Append `other`'s values (for constraint systems that `extend`).
    pub fn append(&mut self, other: &CompactFrVec) {
        self.append_tags(other);
        for s in other.other_segments() {
            self.others.extend_from_slice(s);
        }
    }

    /// Append every part in order. Their tags are copied (2 bits a value); their stored
    /// values are moved in as segments, never copied (see the module doc).
    pub fn append_parts(&mut self, parts: Vec<CompactFrVec>) {
        self.reserve_exact(parts.iter().map(|p| p.len).sum(), 0);
        for p in &parts {
            self.append_tags(p);
        }
        self.seal();
        for p in parts {
            self.sealed.extend(p.sealed);
            if !p.others.is_empty() {
                self.sealed.push(p.others);
            }
        }
    }

    /// End the open segment: what is pushed next starts a new one.
    fn seal(&mut self) {
        if !self.others.is_empty() {
            self.sealed.push(std::mem::take(&mut self.others));
        }
    }

    /// `other`'s tags after ours, and its length; its stored values are the caller's to copy.
    fn append_tags(&mut self, other: &CompactFrVec) {
        let slot = self.len % PER_WORD;
        if slot == 0 {
            // Word-aligned: the tags concatenate as they are.
            self.tags.extend_from_slice(&other.tags);
        } else {
            // Each of `other`'s words straddles two of ours: its low tags fill our last word
            // from `slot` on, its high tags start the next one.
            let shift = 2 * slot as u32;
            self.tags.reserve(other.tags.len());
            for &w in &other.tags {
                *self.tags.last_mut().expect("a partly filled last word") |= w << shift;
                self.tags.push(w >> (64 - shift));
            }
            // `other`'s unused high tags are zero, so a last word pushed past the end is empty;
            // drop it (`push_tag` opens a word only when the previous one is full).
            self.tags.truncate((self.len + other.len).div_ceil(PER_WORD));
        }
        self.len += other.len;
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = Fr> + '_ {
        let mut others = self.stored();
        (0..self.len).map(move |i| match (self.tags[i / PER_WORD] >> (2 * (i % PER_WORD))) & 0b11 {
            TAG_ZERO => Fr::ZERO,
            TAG_ONE => Fr::ONE,
            _ => *others.next().expect("a stored value for every TAG_OTHER"),
        })
    }

    /// The plain vector, built in parallel: each chunk of words learns where its stored
    /// values start from a prefix sum of per-chunk counts.
    pub fn to_vec(&self) -> Vec<Fr> {
        const WORDS_PER_CHUNK: usize = 4096;
        let chunk_len = WORDS_PER_CHUNK * PER_WORD;
        let starts: Vec<usize> = self
            .tags
            .par_chunks(WORDS_PER_CHUNK)
            .map(|words| words.iter().map(|w| (w & OTHER_MASK).count_ones() as usize).sum::<usize>())
            .collect::<Vec<_>>()
            .into_iter()
            .scan(0, |next, n| {
                let start = *next;
                *next += n;
                Some(start)
            })
            .collect();
        // Not `vec![Fr::ZERO; n]`: that first-touches all of it (4 GB at 32 GiB, ~1 M page
        // faults) on one thread before the parallel fill. Every slot is written below.
        let mut out: Vec<Fr> = Vec::with_capacity(self.len);
        advise_huge_pages(&out);
        let slots = &mut out.spare_capacity_mut()[..self.len];
        slots.par_chunks_mut(chunk_len).zip(self.tags.par_chunks(WORDS_PER_CHUNK)).zip(starts).for_each(
            |((out, words), start)| {
                let mut others = self.stored_from(start);
                for (i, v) in out.iter_mut().enumerate() {
                    v.write(match (words[i / PER_WORD] >> (2 * (i % PER_WORD))) & 0b11 {
                        TAG_ZERO => Fr::ZERO,
                        TAG_ONE => Fr::ONE,
                        _ => *others.next().expect("a stored value for every TAG_OTHER"),
                    });
                }
            },
        );
        // SAFETY: the chunks cover slots[..len] (par_chunks_mut over exactly len slots) and the
        // loop writes every slot of its chunk.
        unsafe { out.set_len(self.len) };
        out
    }
}

/// Append `parts` to `dst` in order, copied in parallel into room reserved once (huge pages
/// advised, so the fresh memory faults in 2 MiB at a time).
pub fn extend_in_parallel(dst: &mut Vec<Fr>, parts: &[&[Fr]]) {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    dst.reserve_exact(total);
    advise_huge_pages(dst);
    let old = dst.len();
    let mut spare = &mut dst.spare_capacity_mut()[..total];
    let mut slots = Vec::with_capacity(parts.len());
    for p in parts {
        let (head, rest) = spare.split_at_mut(p.len());
        slots.push(head);
        spare = rest;
    }
    slots.into_par_iter().zip(parts.par_iter()).for_each(|(slot, part)| {
        // Large parts in pieces, so that a few big parts still use every thread.
        slot.par_chunks_mut(1 << 16).zip(part.par_chunks(1 << 16)).for_each(|(out, values)| {
            for (o, v) in out.iter_mut().zip(values) {
                o.write(*v);
            }
        });
    });
    // SAFETY: the `total` slots after `old` were each written exactly once above.
    unsafe { dst.set_len(old + total) };
}

/// Ask for transparent huge pages on a large buffer about to be filled: 2 MiB faults instead
/// of 4 KiB ones. Advice only; where THP is off, or the call fails, nothing changes.
fn advise_huge_pages(v: &Vec<Fr>) {
    const HUGE: usize = 2 << 20;
    let (start, len) = (v.as_ptr() as usize, v.capacity() * std::mem::size_of::<Fr>());
    if len < 2 * HUGE {
        return;
    }
    // madvise needs a page-aligned start; whole huge pages inside the buffer are enough.
    let aligned = (start + HUGE - 1) & !(HUGE - 1);
    let end = (start + len) & !(HUGE - 1);
    if end > aligned {
        // SAFETY: the range lies inside the vector's own allocation; MADV_HUGEPAGE changes
        // no contents.
        unsafe { libc::madvise(aligned as *mut libc::c_void, end - aligned, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn mixed(n: usize, seed: u64) -> Vec<Fr> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| match rng.gen_range(0..10) {
                0..=3 => Fr::ZERO,
                4..=7 => Fr::ONE,
                // -1 and 2 sit next to the encoded values; make sure they are stored in full.
                8 if rng.gen_bool(0.5) => -Fr::ONE,
                8 => Fr::ONE.double(),
                _ => Fr::random(&mut rng),
            })
            .collect()
    }

    /// Expand as a device does: the segments copied one after another into one buffer, then
    /// every value from its own word alone.
    fn expanded_like_a_device(c: &CompactFrVec) -> Vec<Fr> {
        let offs = c.word_offsets().unwrap();
        assert_eq!(offs.len(), c.tags().len());
        let mut stored = Vec::new();
        for s in c.other_segments() {
            stored.extend_from_slice(s);
        }
        (0..c.len())
            .map(|i| {
                let w = c.tags()[i / PER_WORD];
                let slot = i % PER_WORD;
                let tag = (w >> (2 * slot)) & 0b11;
                if tag & 0b10 != 0 {
                    let below = w & OTHER_MASK & ((1u64 << (2 * slot)) - 1);
                    stored[offs[i / PER_WORD] as usize + below.count_ones() as usize]
                } else if tag == TAG_ONE {
                    Fr::ONE
                } else {
                    Fr::ZERO
                }
            })
            .collect()
    }

    #[test]
    fn word_offsets_index_the_stored_values_of_each_word() {
        let v = mixed(10_000, 7);
        let c = CompactFrVec::from_slice(&v);
        assert_eq!(expanded_like_a_device(&c), v);
        let mut bad = c.clone();
        bad.others.pop();
        assert!(bad.word_offsets().is_err(), "tags and stored values that disagree are refused");
    }

    #[test]
    fn round_trips_at_every_length_around_word_and_chunk_edges() {
        for n in [0, 1, 31, 32, 33, 64, 4096 * 32 - 1, 4096 * 32, 4096 * 32 + 1, 300_001] {
            let v = mixed(n, n as u64);
            let c = CompactFrVec::from_slice(&v);
            assert_eq!(c.len(), n);
            assert_eq!(c.to_vec(), v, "to_vec, n = {n}");
            assert!(c.iter().eq(v.iter().copied()), "iter, n = {n}");
        }
    }

    #[test]
    fn bits_cost_two_bits_and_others_their_full_size() {
        let mut c = CompactFrVec::with_capacity(64);
        for i in 0..64 {
            c.push(if i % 2 == 0 { Fr::ZERO } else { Fr::ONE });
        }
        assert_eq!((c.num_others(), c.heap_bytes()), (0, 16));
        c.push(Fr::from(7u64));
        assert_eq!((c.num_others(), c.heap_bytes()), (1, 24 + 32));
    }

    #[test]
    fn parts_append_in_parallel_as_they_would_one_by_one() {
        // Empty parts, parts within one word, and parts over the parallel copy's 2^16 pieces.
        let lens = [0, 3, 0, 40, 70_000, 1, 131_072, 0, 29];
        let parts: Vec<Vec<Fr>> = lens.iter().enumerate().map(|(i, &n)| mixed(n, 10 + i as u64)).collect();
        let head = mixed(5, 9);
        let whole: Vec<Fr> = head.iter().chain(parts.iter().flatten()).copied().collect();

        let mut plain = head.clone();
        extend_in_parallel(&mut plain, &parts.iter().map(|p| &p[..]).collect::<Vec<_>>());
        assert_eq!(plain, whole);

        // Parts that are themselves segmented, as a part of parts would be.
        let mut compact_parts: Vec<CompactFrVec> = parts.iter().map(|p| CompactFrVec::from_slice(p)).collect();
        let nested = std::mem::take(&mut compact_parts[4]);
        let values = nested.to_vec();
        let (a, b) = values.split_at(1000);
        let mut segmented = CompactFrVec::from_slice(a);
        segmented.append_parts(vec![CompactFrVec::from_slice(b)]);
        compact_parts[4] = segmented;

        let mut c = CompactFrVec::from_slice(&head);
        c.append_parts(compact_parts);
        assert!(c.other_segments().count() > 2, "the parts' stored values were moved in as segments");
        c.push(Fr::ONE);
        c.push(-Fr::ONE);
        let mut want = CompactFrVec::from_slice(&whole);
        want.push(Fr::ONE);
        want.push(-Fr::ONE);
        assert_eq!(c, want);
        let mut whole = whole;
        whole.extend([Fr::ONE, -Fr::ONE]);
        assert_eq!(c.to_vec(), whole, "to_vec across segments");
        assert!(c.iter().eq(whole.iter().copied()), "iter across segments");
        assert_eq!(expanded_like_a_device(&c), whole, "device expansion across segments");
        assert_eq!(c.heap_bytes(), want.heap_bytes());
    }

    #[test]
    fn append_matches_pushing_aligned_or_not() {
        // Every offset within a word on both sides, lengths that end a word exactly or just
        // past it, and values pushed after the append (a stray empty word would misplace them).
        let lens = [0, 1, 5, 7, 25, 26, 31, 32, 33, 40, 63, 64, 65, 100];
        for a in lens {
            for b in lens {
                let (x, y, z) = (mixed(a, 1), mixed(b, 2), mixed(3, 3));
                let mut c = CompactFrVec::from_slice(&x);
                c.reserve_exact(b + z.len(), b + z.len());
                c.append(&CompactFrVec::from_slice(&y));
                c.extend_from_slice(&z);
                let whole: Vec<Fr> = x.iter().chain(&y).chain(&z).copied().collect();
                assert_eq!(c, CompactFrVec::from_slice(&whole), "{a} + {b}");
                assert_eq!(c.to_vec(), whole);
            }
        }
    }
}
