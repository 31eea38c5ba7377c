//! Compressed sparse row (CSR) storage of one R1CS matrix (A, B or C) and its parallel
//! product with a witness.
//!
//! Per non-zero we keep a `u32` column and a `u32` index into the matrix's table of distinct
//! coefficient values: 8 bytes instead of the 36+ of a `(usize, Fr)` pair. A 32 GiB PoRep
//! partition has ~722 M non-zeros, so this is the difference between ~6 GB and ~26 GB
//! resident. Filecoin circuits use few distinct coefficients (1, -1, powers of two from bit
//! packing, a handful of constants), so the table stays tiny. Index [`ONE_COEFF`] is always
//! 1 and [`MINUS_ONE_COEFF`] always -1, and both are evaluated without a multiplication: most
//! non-zeros are 1, and -1 (booleanity `b * (1 - b) = 0`, subtractions) is next.
//!
//! Columns: both index spaces share one `u32`. Bit 31 ([`INPUT_TAG`]) set means "input
//! index", clear means "aux index". Circuits number inputs and aux separately and may
//! allocate inputs after aux, so one merged index space would need a renumbering pass at
//! the end, and the prover keeps the two witness vectors separate anyway.
//!
//! Row pointers are `u32` while a matrix has fewer than 2^32 non-zeros (every Filecoin
//! circuit, by a wide margin) and switch to `u64` beyond, so the common case pays 4 bytes a
//! row instead of 8 (~0.5 GB saved per matrix on 32 GiB PoRep).
//!
//! Storage is either owned (freshly extracted) or borrowed from a memory-mapped cache file
//! (see `cache`), so loading a multi-GB cache does not copy it.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// Bit 31 of a column: set for an input index, clear for an aux index.
pub const INPUT_TAG: u32 = 1 << 31;
/// Largest index either space can hold (31 bits).
pub const MAX_INDEX: usize = (INPUT_TAG - 1) as usize;
/// Coefficient-table index of the value 1 (always present, always at 0).
pub const ONE_COEFF: u32 = 0;
/// Coefficient-table index of the value -1 (always present, always at 1).
pub const MINUS_ONE_COEFF: u32 = 1;
/// Rows per rayon task in [`Csr::mul_vec`]: rows are short (a few non-zeros), so tasks must
/// batch many of them to amortise scheduling.
const ROWS_PER_TASK: usize = 4096;

/// A decoded column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    Input(usize),
    Aux(usize),
}

impl Column {
    /// Panics if the index does not fit in 31 bits (callers check limits at allocation).
    pub fn encode(self) -> u32 {
        match self {
            Column::Input(i) => {
                assert!(i <= MAX_INDEX, "input index {i} exceeds the PCE column limit");
                INPUT_TAG | i as u32
            }
            Column::Aux(i) => {
                assert!(i <= MAX_INDEX, "aux index {i} exceeds the PCE column limit");
                i as u32
            }
        }
    }

    pub fn decode(raw: u32) -> Self {
        if raw & INPUT_TAG != 0 {
            Column::Input((raw & !INPUT_TAG) as usize)
        } else {
            Column::Aux(raw as usize)
        }
    }
}

/// A slice that is either owned or lives inside a memory-mapped file.
#[derive(Clone)]
pub(crate) enum Storage<T> {
    Owned(Vec<T>),
    /// `offset` is in bytes from the start of the map and is aligned for `T` (the cache
    /// layout aligns every section to 64 bytes of a page-aligned map).
    Mapped {
        map: Arc<memmap2::Mmap>,
        offset: usize,
        len: usize,
    },
}

impl<T: bytemuck::Pod> Storage<T> {
    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            Storage::Owned(v) => v,
            Storage::Mapped { map, offset, len } => {
                bytemuck::cast_slice(&map[*offset..*offset + *len * std::mem::size_of::<T>()])
            }
        }
    }

    /// Give a mapped section's pages back to the kernel: they leave this process's resident
    /// set and are read from the file again (page cache first) on the next access. Owned
    /// storage is left alone.
    fn drop_mapped_pages(&self) {
        if let Storage::Mapped { map, .. } = self {
            // SAFETY: the map is read-only and shared with its file (Mmap::map), so DONTNEED
            // only unmaps pages; the next read faults the same bytes back in from the file.
            if let Err(e) = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) } {
                tracing::debug!(error = %e, "madvise(DONTNEED) on a PCE cache map failed; its pages stay resident");
            }
        }
    }

    /// Heap bytes held (a mapped section is counted too: its pages are resident once touched).
    fn bytes(&self) -> usize {
        match self {
            Storage::Owned(v) => v.capacity() * std::mem::size_of::<T>(),
            Storage::Mapped { len, .. } => len * std::mem::size_of::<T>(),
        }
    }
}

/// Row pointers, narrow while they fit.
#[derive(Clone)]
pub(crate) enum RowPtr {
    Narrow(Storage<u32>),
    Wide(Storage<u64>),
}

/// A borrowed view of the row pointers, for serialisation and for backends that ship the
/// matrix elsewhere (e.g. to a GPU).
#[derive(Clone, Copy, Debug)]
pub enum RowPtrView<'a> {
    U32(&'a [u32]),
    U64(&'a [u64]),
}

impl RowPtrView<'_> {
    pub fn len(&self) -> usize {
        match self {
            RowPtrView::U32(p) => p.len(),
            RowPtrView::U64(p) => p.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> u64 {
        match self {
            RowPtrView::U32(p) => p[i] as u64,
            RowPtrView::U64(p) => p[i],
        }
    }
}

/// One R1CS matrix in CSR form.
#[derive(Clone)]
pub struct Csr {
    pub(crate) row_ptr: RowPtr,
    pub(crate) cols: Storage<u32>,
    pub(crate) coeff_idx: Storage<u32>,
    /// Distinct coefficient values; `coeffs[0] == 1`, `coeffs[1] == -1`; no zero entries.
    pub(crate) coeffs: Vec<Fr>,
}

impl Csr {
    /// See [`crate::PreCompiled::drop_mapped_pages`].
    pub fn drop_mapped_pages(&self) {
        match &self.row_ptr {
            RowPtr::Narrow(p) => p.drop_mapped_pages(),
            RowPtr::Wide(p) => p.drop_mapped_pages(),
        }
        self.cols.drop_mapped_pages();
        self.coeff_idx.drop_mapped_pages();
    }

    pub fn row_ptr(&self) -> RowPtrView<'_> {
        match &self.row_ptr {
            RowPtr::Narrow(p) => RowPtrView::U32(p.as_slice()),
            RowPtr::Wide(p) => RowPtrView::U64(p.as_slice()),
        }
    }

    /// Tagged columns (see the module docs), one per non-zero.
    pub fn columns(&self) -> &[u32] {
        self.cols.as_slice()
    }

    /// Index into [`Csr::coefficients`], one per non-zero.
    pub fn coefficient_indices(&self) -> &[u32] {
        self.coeff_idx.as_slice()
    }

    /// The table of distinct coefficients; entry 0 is 1, entry 1 is -1 (always, used or not).
    pub fn coefficients(&self) -> &[Fr] {
        &self.coeffs
    }

    pub fn rows(&self) -> usize {
        self.row_ptr().len() - 1
    }

    pub fn nnz(&self) -> usize {
        self.cols.as_slice().len()
    }

    /// The terms of row `r`, in recording order.
    pub fn row(&self, r: usize) -> impl Iterator<Item = (Column, Fr)> + '_ {
        let p = self.row_ptr();
        let (s, e) = (p.get(r) as usize, p.get(r + 1) as usize);
        let (cols, idx) = (&self.columns()[s..e], &self.coefficient_indices()[s..e]);
        cols.iter().zip(idx).map(|(&c, &k)| (Column::decode(c), self.coeffs[k as usize]))
    }

    /// Bytes this matrix keeps resident (heap or mapped).
    pub fn bytes_resident(&self) -> usize {
        let rp = match &self.row_ptr {
            RowPtr::Narrow(p) => p.bytes(),
            RowPtr::Wide(p) => p.bytes(),
        };
        rp + self.cols.bytes() + self.coeff_idx.bytes() + self.coeffs.capacity() * 32
    }

    /// True if the big arrays live in a memory-mapped cache file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.cols, Storage::Mapped { .. })
    }

    /// `M·w` for w = (inputs, aux), one entry per row, computed in parallel over row chunks.
    /// Panics if a column is out of range for the given vectors (callers check the lengths;
    /// loaded caches are validated).
    pub fn mul_vec(&self, inputs: &[Fr], aux: &[Fr]) -> Vec<Fr> {
        let (cols, idx) = (self.columns(), self.coefficient_indices());
        match self.row_ptr() {
            RowPtrView::U32(p) => spmv(p, cols, idx, &self.coeffs, inputs, aux),
            RowPtrView::U64(p) => spmv(p, cols, idx, &self.coeffs, inputs, aux),
        }
    }

    /// Structural check of a matrix read from outside (a cache file): row pointers start at
    /// 0, never decrease and end at nnz; columns and coefficient indices are in range; the
    /// table starts with 1 and holds no zero. Anything that would make `mul_vec` panic or
    /// compute something other than what was recorded is refused here.
    pub(crate) fn validate(&self, num_inputs: usize, num_aux: usize) -> Result<(), String> {
        let p = self.row_ptr();
        if p.is_empty() || p.get(0) != 0 || p.get(p.len() - 1) != self.nnz() as u64 {
            return Err("row pointers do not span the non-zeros".into());
        }
        let monotone = match p {
            RowPtrView::U32(p) => p.par_windows(2).all(|w| w[0] <= w[1]),
            RowPtrView::U64(p) => p.par_windows(2).all(|w| w[0] <= w[1]),
        };
        if !monotone {
            return Err("row pointers decrease".into());
        }
        if self.coefficient_indices().len() != self.nnz() {
            return Err("column and coefficient arrays differ in length".into());
        }
        let in_range = |&c: &u32| match Column::decode(c) {
            Column::Input(i) => i < num_inputs,
            Column::Aux(i) => i < num_aux,
        };
        if !self.columns().par_iter().all(in_range) {
            return Err("a column is out of range".into());
        }
        let n = self.coeffs.len() as u64;
        if !self.coefficient_indices().par_iter().all(|&k| (k as u64) < n) {
            return Err("a coefficient index is out of range".into());
        }
        if self.coeffs.get(..2) != Some(&[Fr::ONE, -Fr::ONE][..]) {
            return Err("coefficient table does not start with 1, -1".into());
        }
        if self.coeffs.iter().any(|c| bool::from(c.is_zero())) {
            return Err("coefficient table holds a zero".into());
        }
        Ok(())
    }
}

impl PartialEq for Csr {
    /// Same rows with the same terms in the same order, regardless of storage (owned or
    /// mapped) and row-pointer width.
    fn eq(&self, other: &Self) -> bool {
        let (p, q) = (self.row_ptr(), other.row_ptr());
        p.len() == q.len()
            && (0..p.len()).all(|i| p.get(i) == q.get(i))
            && self.columns() == other.columns()
            && self.coefficient_indices() == other.coefficient_indices()
            && self.coeffs == other.coeffs
    }
}

impl std::fmt::Debug for Csr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Csr")
            .field("rows", &self.rows())
            .field("nnz", &self.nnz())
            .field("distinct_coefficients", &self.coeffs.len())
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

/// Row pointer types the kernel accepts.
trait RowIndex: Copy + Sync {
    fn at(self) -> usize;
}
impl RowIndex for u32 {
    #[inline]
    fn at(self) -> usize {
        self as usize
    }
}
impl RowIndex for u64 {
    #[inline]
    fn at(self) -> usize {
        self as usize
    }
}

fn spmv<P: RowIndex>(row_ptr: &[P], cols: &[u32], idx: &[u32], table: &[Fr], inputs: &[Fr], aux: &[Fr]) -> Vec<Fr> {
    let rows = row_ptr.len() - 1;
    let mut out = Vec::with_capacity(rows);
    // collect_into_vec writes each entry once, in place: no zero-fill pass over a vector
    // that is gigabytes long for the big circuits.
    (0..rows)
        .into_par_iter()
        .with_min_len(ROWS_PER_TASK)
        .map(|r| {
            let (s, e) = (row_ptr[r].at(), row_ptr[r + 1].at());
            dot(&cols[s..e], &idx[s..e], table, inputs, aux)
        })
        .collect_into_vec(&mut out);
    out
}

/// One row times the witness. Field arithmetic is exact, so the order of the terms does not
/// change the result: this equals `ProvingAssignment`'s evaluation bit for bit.
#[inline]
fn dot(cols: &[u32], idx: &[u32], table: &[Fr], inputs: &[Fr], aux: &[Fr]) -> Fr {
    let mut acc = Fr::ZERO;
    for (&c, &k) in cols.iter().zip(idx) {
        let v = if c & INPUT_TAG != 0 { inputs[(c & !INPUT_TAG) as usize] } else { aux[c as usize] };
        if k == ONE_COEFF {
            acc += v;
        } else if k == MINUS_ONE_COEFF {
            acc -= v;
        } else {
            acc += v * table[k as usize];
        }
    }
    acc
}

/// Key for interning coefficients: blst keeps field elements fully reduced in Montgomery
/// form, so equal elements have equal limbs and the limbs can be hashed without converting
/// out of Montgomery form.
#[derive(PartialEq, Eq)]
struct CoeffKey([u64; 4]);

impl Hash for CoeffKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let l = self.0;
        state.write_u64(l[0] ^ l[1].rotate_left(16) ^ l[2].rotate_left(32) ^ l[3].rotate_left(48));
    }
}

/// A multiplicative hasher for the single `u64` a [`CoeffKey`] writes (SipHash would
/// dominate recording time for the few non-1 coefficients of big circuits).
#[derive(Default)]
struct MulHasher(u64);

impl Hasher for MulHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

fn key(c: &Fr) -> CoeffKey {
    CoeffKey(blst::blst_fr::from(*c).l)
}

/// Row pointers while recording: start narrow, widen once if a matrix passes 2^32 - 1
/// non-zeros.
enum RowPtrVec {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl RowPtrVec {
    fn push(&mut self, v: u64) {
        match self {
            RowPtrVec::Narrow(p) => match u32::try_from(v) {
                Ok(v) => p.push(v),
                Err(_) => {
                    let mut wide: Vec<u64> = p.iter().map(|&x| x as u64).collect();
                    wide.push(v);
                    *self = RowPtrVec::Wide(wide);
                }
            },
            RowPtrVec::Wide(p) => p.push(v),
        }
    }

    fn get(&self, i: usize) -> u64 {
        match self {
            RowPtrVec::Narrow(p) => p[i] as u64,
            RowPtrVec::Wide(p) => p[i],
        }
    }

    fn len(&self) -> usize {
        match self {
            RowPtrVec::Narrow(p) => p.len(),
            RowPtrVec::Wide(p) => p.len(),
        }
    }
}

/// Builds a [`Csr`] row by row while a circuit is recorded.
pub(crate) struct CsrBuilder {
    row_ptr: RowPtrVec,
    cols: Vec<u32>,
    coeff_idx: Vec<u32>,
    coeffs: Vec<Fr>,
    lookup: HashMap<CoeffKey, u32, BuildHasherDefault<MulHasher>>,
}

impl CsrBuilder {
    pub(crate) fn new() -> Self {
        let mut lookup = HashMap::default();
        lookup.insert(key(&Fr::ONE), ONE_COEFF);
        lookup.insert(key(&-Fr::ONE), MINUS_ONE_COEFF);
        CsrBuilder {
            row_ptr: RowPtrVec::Narrow(vec![0]),
            cols: Vec::new(),
            coeff_idx: Vec::new(),
            coeffs: vec![Fr::ONE, -Fr::ONE],
            lookup,
        }
    }

    pub(crate) fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    fn intern(&mut self, c: &Fr) -> u32 {
        if *c == Fr::ONE {
            return ONE_COEFF;
        }
        let next = self.coeffs.len();
        let coeffs = &mut self.coeffs;
        *self.lookup.entry(key(c)).or_insert_with(|| {
            assert!(next < u32::MAX as usize, "more than 2^32 distinct coefficients");
            coeffs.push(*c);
            next as u32
        })
    }

    /// Add a term to the current row. Callers drop zero coefficients first.
    pub(crate) fn push(&mut self, col: u32, coeff: &Fr) {
        debug_assert!(!bool::from(coeff.is_zero()));
        let k = self.intern(coeff);
        self.cols.push(col);
        self.coeff_idx.push(k);
    }

    pub(crate) fn end_row(&mut self) {
        self.row_ptr.push(self.cols.len() as u64);
    }

    /// Append all of `other`'s rows, mapping its columns through `remap` and its
    /// coefficient indices into our table.
    pub(crate) fn append(&mut self, other: &CsrBuilder, remap: impl Fn(u32) -> u32) {
        let translate: Vec<u32> = other.coeffs.iter().map(|c| self.intern(c)).collect();
        let base = self.cols.len() as u64;
        for r in 1..other.row_ptr.len() {
            self.row_ptr.push(base + other.row_ptr.get(r));
        }
        self.cols.extend(other.cols.iter().map(|&c| remap(c)));
        self.coeff_idx.extend(other.coeff_idx.iter().map(|&k| translate[k as usize]));
    }

    /// Freeze. Shrinks the vectors: for big circuits the slack of doubling growth is
    /// gigabytes that would otherwise stay resident for the process lifetime.
    pub(crate) fn finish(self) -> Csr {
        let row_ptr = match self.row_ptr {
            RowPtrVec::Narrow(mut p) => {
                p.shrink_to_fit();
                RowPtr::Narrow(Storage::Owned(p))
            }
            RowPtrVec::Wide(mut p) => {
                p.shrink_to_fit();
                RowPtr::Wide(Storage::Owned(p))
            }
        };
        let (mut cols, mut coeff_idx) = (self.cols, self.coeff_idx);
        cols.shrink_to_fit();
        coeff_idx.shrink_to_fit();
        Csr { row_ptr, cols: Storage::Owned(cols), coeff_idx: Storage::Owned(coeff_idx), coeffs: self.coeffs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_round_trip() {
        for c in [Column::Input(0), Column::Input(MAX_INDEX), Column::Aux(0), Column::Aux(12345)] {
            assert_eq!(Column::decode(c.encode()), c);
        }
    }

    #[test]
    fn builder_interns_coefficients_and_multiplies() {
        let two = Fr::from(2u64);
        let mut b = CsrBuilder::new();
        b.push(Column::Input(0).encode(), &Fr::ONE);
        b.push(Column::Aux(1).encode(), &two);
        b.end_row();
        b.end_row(); // empty row
        b.push(Column::Aux(0).encode(), &two);
        b.push(Column::Aux(0).encode(), &-Fr::ONE);
        b.end_row();
        let m = b.finish();
        assert_eq!((m.rows(), m.nnz(), m.coefficients().len()), (3, 4, 3));
        assert_eq!(m.coefficients()[..2], [Fr::ONE, -Fr::ONE]);
        let (inputs, aux) = ([Fr::ONE], [Fr::from(5u64), Fr::from(7u64)]);
        let out = m.mul_vec(&inputs, &aux);
        assert_eq!(out, vec![Fr::from(15u64), Fr::ZERO, Fr::from(5u64)]);
        assert_eq!(m.row(2).collect::<Vec<_>>(), vec![(Column::Aux(0), two), (Column::Aux(0), -Fr::ONE)]);
        m.validate(1, 2).unwrap();
        assert!(m.validate(1, 1).is_err());
    }

    #[test]
    fn row_pointers_widen_past_u32() {
        let mut p = RowPtrVec::Narrow(vec![0, 5]);
        p.push(u32::MAX as u64 + 1);
        assert!(matches!(p, RowPtrVec::Wide(_)));
        assert_eq!((p.get(1), p.get(2)), (5, u32::MAX as u64 + 1));
    }
}
