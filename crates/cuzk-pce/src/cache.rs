//! On-disk cache of a [`PreCompiled`]: extracting a 32 GiB PoRep R1CS takes minutes, loading
//! it should take seconds.
//!
//! File layout (all integers little-endian; the big arrays are stored in native layout so
//! the loader can use them in place from a memory map, hence little-endian hosts only):
//!
//! ```text
//! 0    magic "CUZKPCE\0"
//! 8    format version u32            checked first, so an old file says "version", not "corrupt"
//! 12   identity length u32
//! 16   header checksum u64           xxh3-64 of header bytes [0..16) ++ [24..payload offset)
//! 24   payload offset u64            page-aligned, so every section can be mapped in place
//! 32   payload length u64
//! 40   payload checksum [u8; 16]     see `payload_checksum`
//! 56   num_inputs, num_aux, num_constraints u64
//! 80   per matrix A, B, C: rows, nnz, row-pointer width (4|8), coefficient count  (u64 each)
//! 176  density lengths: A aux, B inputs, B aux (u64 each)
//! 200  identity bytes, zero padding up to the payload offset
//! payload: per matrix: row pointers, columns (u32), coefficient indices (u32),
//!          coefficients (32-byte canonical little-endian); then the three density
//!          bitmaps (u64 words); each section starts 64-byte aligned, padding is zero.
//! ```
//!
//! The identity string names the circuit (e.g. registered proof + version); a file written
//! for another circuit is refused rather than producing garbage proofs, and so is a file that
//! anyone but the daemon's user or root could have written (the rule subgroup-check records
//! follow, `cuzk_groth16::check_record::private_file`): its matrices decide what is proved.
//! Writes are atomic (temporary file in the same directory, fsync, rename), so a crash
//! leaves the old file or none, never a torn one; a reader that mapped the old file keeps
//! its (unlinked) inode. A killed save leaves its temporary file behind (gigabytes at
//! 32 GiB): [`sweep_temp_files`] removes those when the cache is opened.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use blstrs::Scalar as Fr;
use cuzk_groth16::density::Density;
use memmap2::Mmap;
use rayon::prelude::*;
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use crate::matrix::{Csr, RowPtr, RowPtrView, Storage};
use crate::PreCompiled;

mod temp;
pub use temp::{sweep_temp_files, TEMP_MIN_AGE, TEMP_PREFIX};

const MAGIC: [u8; 8] = *b"CUZKPCE\0";
/// Bump on any change of the layout or of what is recorded (2: coefficient tables always
/// start with 1, -1).
pub const FORMAT_VERSION: u32 = 2;
const FIXED_HEADER: usize = 200;
const PAGE: usize = 4096;
const SECTION_ALIGN: usize = 64;
/// The payload checksum hashes chunks of this size in parallel, then hashes the chunk
/// hashes: a single-threaded pass over ~6 GB would dominate the load time.
const CHECKSUM_CHUNK: usize = 64 << 20;

/// Why a cache file was not used. Every variant but `Io` with `NotFound` means the file
/// exists but is unusable: log it and re-extract (and overwrite).
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("PCE cache {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("PCE cache {path}: truncated: {len} bytes, need {needed}")]
    Truncated { path: PathBuf, len: u64, needed: u64 },
    #[error("PCE cache {path}: {extra} trailing bytes")]
    TrailingBytes { path: PathBuf, extra: u64 },
    #[error("PCE cache {path}: not a PCE cache file (bad magic)")]
    BadMagic { path: PathBuf },
    #[error("PCE cache {path}: format version {found}, this build reads version {expected}")]
    Version { path: PathBuf, found: u32, expected: u32 },
    #[error("PCE cache {path}: header checksum mismatch (corrupt header)")]
    HeaderChecksum { path: PathBuf },
    #[error("PCE cache {path}: written for circuit {found:?}, expected {expected:?}")]
    Identity { path: PathBuf, found: String, expected: String },
    #[error("PCE cache {path}: payload checksum mismatch (corrupt data)")]
    PayloadChecksum { path: PathBuf },
    #[error(
        "PCE cache {path}: owner uid {uid}, mode {mode:o}: not used, since only a file of the daemon's user or \
         root that neither group nor others may write is trusted"
    )]
    Untrusted { path: PathBuf, uid: u32, mode: u32 },
    #[error("PCE cache {path}: malformed: {what}")]
    Malformed { path: PathBuf, what: String },
    #[error("PCE cache: {0}")]
    Unsupported(&'static str),
}

impl CacheError {
    /// The file does not exist: the normal first run, not worth a warning.
    pub fn is_missing(&self) -> bool {
        matches!(self, CacheError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Counts that fix the payload layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counts {
    num_inputs: u64,
    num_aux: u64,
    num_constraints: u64,
    /// Per matrix: rows, nnz, row-pointer width, coefficient count.
    m: [[u64; 4]; 3],
    density_len: [u64; 3],
}

impl Counts {
    fn of(pc: &PreCompiled) -> Self {
        let mat = |x: &Csr| {
            let width = match x.row_ptr() {
                RowPtrView::U32(_) => 4,
                RowPtrView::U64(_) => 8,
            };
            [x.rows() as u64, x.nnz() as u64, width, x.coefficients().len() as u64]
        };
        Counts {
            num_inputs: pc.num_inputs as u64,
            num_aux: pc.num_aux as u64,
            num_constraints: pc.num_constraints as u64,
            m: [mat(&pc.a), mat(&pc.b), mat(&pc.c)],
            density_len: [pc.a_aux_density.len(), pc.b_input_density.len(), pc.b_aux_density.len()].map(|l| l as u64),
        }
    }

    fn to_bytes(self) -> Vec<u8> {
        let mut v = vec![self.num_inputs, self.num_aux, self.num_constraints];
        v.extend(self.m.iter().flatten());
        v.extend(self.density_len);
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn from_bytes(b: &[u8]) -> Self {
        let u = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        let m = |k: usize| [u(3 + 4 * k), u(4 + 4 * k), u(5 + 4 * k), u(6 + 4 * k)];
        Counts {
            num_inputs: u(0),
            num_aux: u(1),
            num_constraints: u(2),
            m: [m(0), m(1), m(2)],
            density_len: [u(15), u(16), u(17)],
        }
    }

    /// Byte length of each payload section in order (12 matrix sections, 3 densities), or
    /// None if the counts overflow (a crafted header).
    fn section_lengths(&self) -> Option<Vec<u64>> {
        let mut v = Vec::with_capacity(15);
        for &[rows, nnz, width, ncoeff] in &self.m {
            v.push(rows.checked_add(1)?.checked_mul(width)?);
            v.push(nnz.checked_mul(4)?);
            v.push(nnz.checked_mul(4)?);
            v.push(ncoeff.checked_mul(32)?);
        }
        for &len in &self.density_len {
            v.push(len.div_ceil(64) * 8);
        }
        Some(v)
    }
}

fn align_up(x: u64, a: u64) -> Option<u64> {
    Some(x.checked_add(a - 1)? / a * a)
}

/// Offsets (relative to the payload) of each section, and the payload length.
fn layout(lengths: &[u64]) -> Option<(Vec<u64>, u64)> {
    let mut offsets = Vec::with_capacity(lengths.len());
    let mut at = 0u64;
    for &len in lengths {
        offsets.push(at);
        at = align_up(at.checked_add(len)?, SECTION_ALIGN as u64)?;
    }
    Some((offsets, at))
}

/// xxh3-128 of the concatenated xxh3-128s of 64 MiB chunks, hashed in parallel.
fn payload_checksum(payload: &[u8]) -> [u8; 16] {
    let chunk_hashes: Vec<u8> =
        payload.par_chunks(CHECKSUM_CHUNK).map(|c| xxh3_128(c).to_le_bytes()).collect::<Vec<_>>().concat();
    xxh3_128(&chunk_hashes).to_le_bytes()
}

fn header_checksum(header: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    h.update(&header[0..16]);
    h.update(&header[24..]);
    h.digest()
}

/// The payload sections of `pc`, in layout order. Borrowed where the bytes already exist
/// (the big arrays): copying gigabytes just to write them would double peak memory.
fn sections(pc: &PreCompiled) -> Vec<Cow<'_, [u8]>> {
    let mut out: Vec<Cow<'_, [u8]>> = Vec::with_capacity(15);
    for m in [&pc.a, &pc.b, &pc.c] {
        out.push(Cow::Borrowed(match m.row_ptr() {
            RowPtrView::U32(p) => bytemuck::cast_slice(p),
            RowPtrView::U64(p) => bytemuck::cast_slice(p),
        }));
        out.push(Cow::Borrowed(bytemuck::cast_slice(m.columns())));
        out.push(Cow::Borrowed(bytemuck::cast_slice(m.coefficient_indices())));
        out.push(Cow::Owned(m.coefficients().iter().flat_map(|c| c.to_bytes_le()).collect()));
    }
    for d in [&pc.a_aux_density, &pc.b_input_density, &pc.b_aux_density] {
        out.push(Cow::Borrowed(bytemuck::cast_slice(d.words())));
    }
    out
}

/// Write `pc` to `path` atomically, tagged with `identity`.
pub fn save(pc: &PreCompiled, path: &Path, identity: &str) -> Result<(), CacheError> {
    if cfg!(target_endian = "big") {
        return Err(CacheError::Unsupported("PCE cache files are little-endian only"));
    }
    let io_err = |source| CacheError::Io { path: path.to_path_buf(), source };
    let counts = Counts::of(pc);
    let sections = sections(pc);
    let lengths: Vec<u64> = sections.iter().map(|s| s.len() as u64).collect();
    debug_assert_eq!(Some(&lengths), counts.section_lengths().as_ref());
    let (offsets, payload_len) = layout(&lengths).expect("in-memory sizes fit in u64");
    let id = identity.as_bytes();
    let payload_offset = align_up((FIXED_HEADER + id.len()) as u64, PAGE as u64).unwrap();

    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(TEMP_PREFIX).tempfile_in(dir).map_err(io_err)?;
    // Held until the file is renamed into place (or the process dies, and the kernel drops
    // it): it tells another process's sweep that this file is still being written. Best
    // effort: without it the sweep goes by age alone.
    // SAFETY: flock on a descriptor this function owns.
    let _ = unsafe { libc::flock(tmp.as_file().as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    {
        // Payload first (the header carries its checksum), then the header.
        let mut w = BufWriter::with_capacity(8 << 20, tmp.as_file_mut());
        w.seek(SeekFrom::Start(payload_offset)).map_err(io_err)?;
        let mut at = 0u64;
        for (s, &off) in sections.iter().zip(&offsets) {
            w.write_all(&vec![0u8; (off - at) as usize]).map_err(io_err)?;
            w.write_all(s).map_err(io_err)?;
            at = off + s.len() as u64;
        }
        w.write_all(&vec![0u8; (payload_len - at) as usize]).map_err(io_err)?;
        w.flush().map_err(io_err)?;
    }
    // Checksum what is in the file (read back through the page cache, where it still is),
    // with the same code the loader uses.
    let checksum = {
        // SAFETY: read-only map of our own private temporary file, dropped before we write
        // to the file again.
        let map = unsafe { Mmap::map(tmp.as_file()) }.map_err(io_err)?;
        payload_checksum(&map[payload_offset as usize..])
    };

    let mut header = vec![0u8; payload_offset as usize];
    header[0..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[12..16].copy_from_slice(&(id.len() as u32).to_le_bytes());
    header[24..32].copy_from_slice(&payload_offset.to_le_bytes());
    header[32..40].copy_from_slice(&payload_len.to_le_bytes());
    header[40..56].copy_from_slice(&checksum);
    header[56..FIXED_HEADER].copy_from_slice(&counts.to_bytes());
    header[FIXED_HEADER..FIXED_HEADER + id.len()].copy_from_slice(id);
    let hc = header_checksum(&header);
    header[16..24].copy_from_slice(&hc.to_le_bytes());

    let f = tmp.as_file_mut();
    f.seek(SeekFrom::Start(0)).map_err(io_err)?;
    f.write_all(&header).map_err(io_err)?;
    f.sync_all().map_err(io_err)?;
    tmp.persist(path).map_err(|e| io_err(e.error))?;
    // Make the rename itself durable; best effort (not every platform can open a directory).
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

/// Load a cache written by [`save`] for the circuit named `identity`. The big arrays are
/// used in place from the memory map (no copy); everything is checked first: header and
/// payload checksums, identity, layout, and the matrices' structure.
pub fn load(path: &Path, identity: &str) -> Result<PreCompiled, CacheError> {
    if cfg!(target_endian = "big") {
        return Err(CacheError::Unsupported("PCE cache files are little-endian only"));
    }
    let p = || path.to_path_buf();
    let file = File::open(path).map_err(|source| CacheError::Io { path: p(), source })?;
    // The open file's own metadata, so what is checked is what is mapped.
    let meta = file.metadata().map_err(|source| CacheError::Io { path: p(), source })?;
    if !cuzk_groth16::check_record::private_file(&meta) {
        return Err(CacheError::Untrusted { path: p(), uid: meta.uid(), mode: meta.mode() & 0o7777 });
    }
    let len = meta.len();
    if len < FIXED_HEADER as u64 {
        return Err(CacheError::Truncated { path: p(), len, needed: FIXED_HEADER as u64 });
    }
    // SAFETY: the map is read-only; cache files are only ever replaced by rename (see
    // `save`), which leaves this inode intact. Truncating the file in place while mapped
    // would fault, as with any mapped file.
    let map = unsafe { Mmap::map(&file) }.map_err(|source| CacheError::Io { path: p(), source })?;
    let b = &map[..];
    if b[0..8] != MAGIC {
        return Err(CacheError::BadMagic { path: p() });
    }
    let version = u32_at(b, 8);
    if version != FORMAT_VERSION {
        return Err(CacheError::Version { path: p(), found: version, expected: FORMAT_VERSION });
    }
    let id_len = u32_at(b, 12) as u64;
    let payload_offset = u64_at(b, 24);
    if payload_offset > len {
        return Err(CacheError::Truncated { path: p(), len, needed: payload_offset });
    }
    if payload_offset & (PAGE as u64 - 1) != 0 || payload_offset < FIXED_HEADER as u64 + id_len {
        return Err(CacheError::HeaderChecksum { path: p() }); // nonsense offsets: a corrupt header
    }
    let header = &b[..payload_offset as usize];
    if header_checksum(header) != u64_at(b, 16) {
        return Err(CacheError::HeaderChecksum { path: p() });
    }
    let found = &header[FIXED_HEADER..FIXED_HEADER + id_len as usize];
    if found != identity.as_bytes() {
        let found = String::from_utf8_lossy(found).into_owned();
        return Err(CacheError::Identity { path: p(), found, expected: identity.to_string() });
    }
    let payload_len = u64_at(b, 32);
    let end = payload_offset.saturating_add(payload_len);
    if end > len {
        return Err(CacheError::Truncated { path: p(), len, needed: end });
    }
    if end < len {
        return Err(CacheError::TrailingBytes { path: p(), extra: len - end });
    }
    let payload = &b[payload_offset as usize..end as usize];
    if payload_checksum(payload) != b[40..56] {
        return Err(CacheError::PayloadChecksum { path: p() });
    }
    let malformed = |what: String| CacheError::Malformed { path: p(), what };
    let counts = Counts::from_bytes(&header[56..FIXED_HEADER]);
    let lengths = counts.section_lengths().ok_or_else(|| malformed("counts overflow".into()))?;
    let (offsets, total) = layout(&lengths).ok_or_else(|| malformed("counts overflow".into()))?;
    if total != payload_len {
        return Err(malformed(format!("payload is {payload_len} bytes, counts say {total}")));
    }
    let usize_of = |x: u64| usize::try_from(x).map_err(|_| malformed(format!("count {x} too large")));
    let (num_inputs, num_aux, num_constraints) =
        (usize_of(counts.num_inputs)?, usize_of(counts.num_aux)?, usize_of(counts.num_constraints)?);

    let map = Arc::new(map);
    let section = |k: usize| (payload_offset + offsets[k]) as usize;
    let mut mats = Vec::with_capacity(3);
    for (k, &[rows, nnz, width, ncoeff]) in counts.m.iter().enumerate() {
        let (rows, nnz) = (usize_of(rows)?, usize_of(nnz)?);
        if rows != num_constraints {
            return Err(malformed(format!("matrix {k} has {rows} rows, expected {num_constraints}")));
        }
        let s = |j: usize| section(4 * k + j);
        let row_ptr = match width {
            4 => RowPtr::Narrow(Storage::Mapped { map: map.clone(), offset: s(0), len: rows + 1 }),
            8 => RowPtr::Wide(Storage::Mapped { map: map.clone(), offset: s(0), len: rows + 1 }),
            w => return Err(malformed(format!("row pointer width {w}"))),
        };
        let coeff_bytes = &map[s(3)..s(3) + usize_of(ncoeff)? * 32];
        let coeffs = coeff_bytes
            .chunks_exact(32)
            .map(|c| Option::from(Fr::from_bytes_le(c.try_into().unwrap())))
            .collect::<Option<Vec<Fr>>>()
            .ok_or_else(|| malformed(format!("matrix {k}: non-canonical coefficient")))?;
        let csr = Csr {
            row_ptr,
            cols: Storage::Mapped { map: map.clone(), offset: s(1), len: nnz },
            coeff_idx: Storage::Mapped { map: map.clone(), offset: s(2), len: nnz },
            coeffs,
        };
        csr.validate(num_inputs, num_aux).map_err(|e| malformed(format!("matrix {}: {e}", ["A", "B", "C"][k])))?;
        mats.push(csr);
    }
    let want_len = [num_aux, num_inputs, num_aux];
    let mut densities = Vec::with_capacity(3);
    for k in 0..3 {
        let len = usize_of(counts.density_len[k])?;
        if len != want_len[k] {
            return Err(malformed(format!("density {k} has {len} bits, expected {}", want_len[k])));
        }
        let at = section(12 + k);
        let words: &[u64] = bytemuck::cast_slice(&map[at..at + lengths[12 + k] as usize]);
        densities.push(density_from_words(words, len).map_err(malformed)?);
    }
    let [a, b, c]: [Csr; 3] = mats.try_into().unwrap();
    let [a_aux_density, b_input_density, b_aux_density]: [Density; 3] = densities.try_into().unwrap();
    Ok(PreCompiled { num_inputs, num_aux, num_constraints, a, b, c, a_aux_density, b_input_density, b_aux_density })
}

fn density_from_words(words: &[u64], len: usize) -> Result<Density, String> {
    let mut d = Density::with_len(len);
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let i = w * 64 + bits.trailing_zeros() as usize;
            if i >= len {
                return Err(format!("density bit {i} set beyond its length {len}"));
            }
            d.set(i);
            bits &= bits - 1;
        }
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Column;
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use ff::Field;

    /// x * (y + 2) = out, with out public.
    struct Small;

    impl Circuit<Fr> for Small {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Fr::from(3u64)))?;
            let y = cs.alloc(|| "y", || Ok(Fr::from(4u64)))?;
            let out = cs.alloc_input(|| "out", || Ok(Fr::from(18u64)))?;
            cs.enforce(|| "x*(y+2)", |lc| lc + x, |lc| lc + y + (Fr::from(2u64), CS::one()), |lc| lc + out);
            Ok(())
        }
    }

    fn widen(m: &mut Csr) {
        let p: Vec<u64> = match m.row_ptr() {
            RowPtrView::U32(p) => p.iter().map(|&x| x as u64).collect(),
            RowPtrView::U64(p) => p.to_vec(),
        };
        m.row_ptr = RowPtr::Wide(Storage::Owned(p));
    }

    #[test]
    fn wide_row_pointers_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wide");
        let mut pc = crate::extract(Small).unwrap();
        widen(&mut pc.b);
        save(&pc, &path, "small").unwrap();
        let loaded = load(&path, "small").unwrap();
        assert!(matches!(loaded.b.row_ptr(), RowPtrView::U64(_)));
        assert!(matches!(loaded.a.row_ptr(), RowPtrView::U32(_)));
        assert_eq!(loaded, pc);
        let (inputs, aux) = crate::witness(Small).unwrap();
        let got = crate::evaluate(&loaded, inputs.clone(), aux.clone()).unwrap();
        assert_eq!(got, crate::evaluate(&pc, inputs, aux).unwrap());
        assert_eq!(got.b[0], Fr::from(6u64));
    }

    /// Files whose checksums are right but whose structure is not (a bug in a writer, or a
    /// crafted file) are refused, not evaluated into a panic or a wrong assignment.
    #[test]
    fn mapped_pages_given_back_are_read_again_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small");
        let pc = crate::extract(Small).unwrap();
        save(&pc, &path, "small").unwrap();
        let loaded = load(&path, "small").unwrap();
        assert!(matches!(loaded.a.cols, Storage::Mapped { .. }), "a loaded cache file is mapped");
        loaded.drop_mapped_pages();
        assert_eq!(loaded, pc, "the matrices read back from the file after madvise(DONTNEED)");
        pc.drop_mapped_pages(); // in-memory matrices: nothing to give back, nothing changes
        assert_eq!(loaded, pc);
    }

    /// Issue #36 item 11c: a cache file is trusted as much as the code it steers (its
    /// matrices decide what is proved): one that others could have written is not used.
    #[test]
    fn files_others_could_write_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small.pce");
        save(&crate::extract(Small).unwrap(), &path, "small").unwrap();
        load(&path, "small").unwrap();
        for mode in [0o666, 0o646, 0o660, 0o620] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            match load(&path, "small") {
                Err(e @ CacheError::Untrusted { .. }) => {
                    assert!(e.to_string().contains(&*path.to_string_lossy()), "{e}")
                }
                other => panic!("a file of mode {mode:o}: {other:?}"),
            }
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        load(&path, "small").unwrap();
    }

    #[test]
    fn structurally_invalid_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad");
        type Breaker = fn(&mut PreCompiled);
        let cases: [(&str, Breaker); 4] = [
            ("column is out of range", |pc| pc.c.cols = Storage::Owned(vec![Column::Aux(7).encode()])),
            ("coefficient index", |pc| pc.b.coeff_idx = Storage::Owned(vec![0, 9])),
            ("holds a zero", |pc| pc.b.coeffs.push(Fr::ZERO)),
            ("do not span", |pc| pc.a.row_ptr = RowPtr::Narrow(Storage::Owned(vec![0, 1, 1, 2]))),
        ];
        for (want, break_it) in cases {
            let mut pc = crate::extract(Small).unwrap();
            break_it(&mut pc);
            save(&pc, &path, "small").unwrap();
            match load(&path, "small") {
                Err(CacheError::Malformed { what, .. }) => assert!(what.contains(want), "{want}: {what}"),
                other => panic!("{want}: {other:?}"),
            }
        }
    }
}
