//! Groth16 parameters (the SRS) in storage-proofs' `.params` / `.vk` format, read from a
//! memory-mapped file, decoded in parallel and validated while decoding.
//!
//! Layout (all points uncompressed, counts u32 big-endian):
//! verifying key (alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, count + ic[]),
//! then count + h[], count + l[], count + a[], count + b_g1[], count + b_g2[].
//! Points at infinity are never stored (the generator drops the A/B query points of variables
//! that do not occur), so one at infinity means a corrupt file.
//!
//! Validation: every length and count is checked against the file size, and every point must
//! decode and lie on the curve — always. The subgroup check is far dearer (tens of µs a point,
//! minutes for a 47 GiB file), so it is done once per file version and remembered in a record
//! ([`crate::check_record`]: in a record directory such as the daemon's state directory, or
//! beside the file).

use std::fs::File;
use std::path::{Path, PathBuf};

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use memmap2::Mmap;
use rayon::prelude::*;

use crate::check_record::FileVersion;

pub(crate) const G1_LEN: usize = 96;
pub(crate) const G2_LEN: usize = 192;

#[derive(Debug, thiserror::Error)]
pub enum SrsError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: truncated in {section}: needs {needed} more bytes at offset {offset}, file has {len}")]
    Truncated { path: PathBuf, section: &'static str, offset: usize, needed: usize, len: usize },
    #[error("{path}: {section}[{index}] is not a valid point: {reason}")]
    BadPoint { path: PathBuf, section: &'static str, index: usize, reason: &'static str },
    #[error("{path}: {extra} unexpected bytes after the last section")]
    TrailingBytes { path: PathBuf, extra: usize },
    #[error("{path}: inconsistent parameters: {reason}")]
    Inconsistent { path: PathBuf, reason: String },
}

/// How much checking a load does beyond structure and on-curve checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubgroupCheck {
    /// Never check subgroup membership (trusted files, or tests that check it elsewhere).
    Skip,
    /// Check every point once per file version; remember success in a sidecar file.
    Once,
    /// Check every point on every load.
    Always,
}

/// The Groth16 verifying key.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyingKey {
    pub alpha_g1: G1Affine,
    pub beta_g1: G1Affine,
    pub beta_g2: G2Affine,
    pub gamma_g2: G2Affine,
    pub delta_g1: G1Affine,
    pub delta_g2: G2Affine,
    /// One point per public input (the first for the constant ONE).
    pub ic: Vec<G1Affine>,
}

/// The proving key: the verifying key plus the query vectors.
pub struct Srs {
    pub vk: VerifyingKey,
    /// tau^i * Z(tau) / delta for i < n-1, n the FFT domain size.
    pub h: Vec<G1Affine>,
    /// One per aux variable.
    pub l: Vec<G1Affine>,
    /// All inputs, then the aux variables that occur in A.
    pub a: Vec<G1Affine>,
    /// Inputs then aux variables that occur in B.
    pub b_g1: Vec<G1Affine>,
    pub b_g2: Vec<G2Affine>,
    /// Where it was read from (`synthetic://…` for synthetic parameters).
    pub path: PathBuf,
    /// Random points of the right sizes, not a trusted setup (see [`crate::srs_synthetic`]):
    /// proofs made with them can never verify.
    pub synthetic: bool,
    /// From a generated setup whose trapdoor is known ([`crate::setup`]): proofs verify, but
    /// anyone with the seed can forge them. Never the ceremony's parameters.
    pub insecure: bool,
    /// Unique to this load ([`Srs::next_id`]): backends key their copies by it, since the
    /// point vectors' addresses change when they are released.
    pub id: u64,
    /// The query lengths as they were, once the host copies of h, l, a, b_g1 and b_g2 have been
    /// released ([`Srs::release_points`]) by a backend that keeps them on every device, or
    /// were never made (a backend took them while they were generated, see
    /// [`crate::srs_sink`]); the five vectors are empty from then on.
    pub released: Option<QueryLens>,
}

/// The lengths of the five proving-key queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryLens {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

impl Srs {
    /// A fresh [`Srs::id`].
    pub fn next_id() -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The queries' lengths, whether or not the host copies are still here.
    pub fn query_lens(&self) -> QueryLens {
        self.released.unwrap_or(QueryLens {
            h: self.h.len(),
            l: self.l.len(),
            a: self.a.len(),
            b_g1: self.b_g1.len(),
            b_g2: self.b_g2.len(),
        })
    }

    /// Whether the host copies of the query points are gone (see [`Srs::release_points`]).
    pub fn points_released(&self) -> bool {
        self.released.is_some()
    }

    /// Free the host copies of the five query vectors (44 GiB for porep-32g), keeping the
    /// verifying key and the lengths. Only for a backend that holds every point on every
    /// device it proves on: nothing on the host can prove with these parameters afterwards
    /// (the CPU prover refuses them).
    pub fn release_points(&mut self) {
        let lens = self.query_lens();
        self.h = Vec::new();
        self.l = Vec::new();
        self.a = Vec::new();
        self.b_g1 = Vec::new();
        self.b_g2 = Vec::new();
        self.released = Some(lens);
    }

    /// Bytes of memory the decoded points occupy.
    pub fn resident_bytes(&self) -> u64 {
        let g1 = std::mem::size_of::<G1Affine>() as u64;
        let g2 = std::mem::size_of::<G2Affine>() as u64;
        g1 * (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len() + self.vk.ic.len()) as u64
            + g2 * self.b_g2.len() as u64
    }

    /// Read and validate a `.params` file; `Once` records go beside the file.
    pub fn load(path: &Path, check: SubgroupCheck) -> Result<Srs, SrsError> {
        Self::load_with_records(path, check, None)
    }

    /// Read and validate a `.params` file, keeping `Once` records in `records` (when given)
    /// so that the parameter directory itself may be read-only.
    pub fn load_with_records(path: &Path, check: SubgroupCheck, records: Option<&Path>) -> Result<Srs, SrsError> {
        let (mmap, subgroup, version) = open(path, check, records)?;
        let mut r = Reader { path, map: &mmap, offset: 0, subgroup, mapped: Some(&mmap) };
        let vk = r.vk()?;
        let h = r.g1_section("h")?;
        let l = r.g1_section("l")?;
        let a = r.g1_section("a")?;
        let b_g1 = r.g1_section("b_g1")?;
        let b_g2 = r.g2_section("b_g2")?;
        r.finish()?;
        let lens = QueryLens { h: h.len(), l: l.len(), a: a.len(), b_g1: b_g1.len(), b_g2: b_g2.len() };
        check_consistent(path, &lens, vk.ic.len())?;
        if subgroup {
            // Checked now (Once or Always): remember it, so Once skips this version later;
            // the version read, whatever the path names by now.
            if let Some(v) = &version {
                crate::check_record::remember_version(path, v, records);
            }
        } else if check == SubgroupCheck::Once {
            tracing::info!(path = %path.display(), "subgroup check skipped: this version of the file passed it before");
        }
        let (synthetic, insecure) = markers(path);
        Ok(Srs { vk, h, l, a, b_g1, b_g2, path: path.into(), synthetic, insecure, id: Srs::next_id(), released: None })
    }
}

/// Refuse query lengths no generator writes: fewer A points than public inputs, B in G1 and
/// G2 of different lengths, or an H that is not a power of two minus one.
pub(crate) fn check_consistent(path: &Path, q: &QueryLens, inputs: usize) -> Result<(), SrsError> {
    let inconsistent = |reason: String| Err(SrsError::Inconsistent { path: path.into(), reason });
    if q.a < inputs {
        return inconsistent(format!("{} A points but {} public inputs", q.a, inputs));
    }
    if q.b_g1 != q.b_g2 {
        return inconsistent(format!("{} B points in G1 but {} in G2", q.b_g1, q.b_g2));
    }
    if !(q.h + 1).is_power_of_two() {
        return inconsistent(format!("{} H points is not a power of two minus one", q.h));
    }
    Ok(())
}

/// Whether the file carries a `.SYNTHETIC` marker and an `.INSECURE` one. Parameters written
/// by `write_synthetic` (benchmarks) or by the generated setup load, but as what they are, so
/// the engine never reports their proofs as verified or their keys as the ceremony's.
pub(crate) fn markers(path: &Path) -> (bool, bool) {
    (crate::srs_synthetic::synthetic_marker(path).exists(), insecure_marker(path).exists())
}

/// Parse a verifying key that fills `bytes` exactly (the head of a `.params` file).
pub(crate) fn parse_vk(path: &Path, bytes: &[u8]) -> Result<VerifyingKey, SrsError> {
    let mut r = Reader { path, map: bytes, offset: 0, subgroup: true, mapped: None };
    let vk = r.vk()?;
    r.finish()?;
    Ok(vk)
}

/// Name of the marker written next to parameters of a generated, insecure setup
/// (`<file>.params.INSECURE`): [`Srs::load`] marks parameters that have one as insecure.
pub fn insecure_marker(params: &Path) -> PathBuf {
    let mut name = params.as_os_str().to_owned();
    name.push(".INSECURE");
    name.into()
}

/// Write `srs` as a bellperson `.params` file (the layout [`Srs::load`] reads: the verifying
/// key, then h, l, a, b_g1, b_g2, each a big-endian u32 count and uncompressed points).
pub fn write_params(srs: &Srs, w: &mut impl std::io::Write) -> std::io::Result<()> {
    if srs.points_released() {
        return Err(std::io::Error::other("the parameters' host copy was released; nothing to write"));
    }
    write_vk(&srs.vk, w)?;
    for (section, points) in [("h", &srs.h), ("l", &srs.l), ("a", &srs.a), ("b_g1", &srs.b_g1)] {
        write_points(w, section, points, |p| p.to_uncompressed().to_vec())?;
    }
    write_points(w, "b_g2", &srs.b_g2, |p| p.to_uncompressed().to_vec())
}

/// Write a verifying key as a bellperson `.vk` file.
pub fn write_vk(vk: &VerifyingKey, w: &mut impl std::io::Write) -> std::io::Result<()> {
    for g1 in [&vk.alpha_g1, &vk.beta_g1] {
        w.write_all(&g1.to_uncompressed())?;
    }
    for g2 in [&vk.beta_g2, &vk.gamma_g2] {
        w.write_all(&g2.to_uncompressed())?;
    }
    w.write_all(&vk.delta_g1.to_uncompressed())?;
    w.write_all(&vk.delta_g2.to_uncompressed())?;
    write_points(w, "vk.ic", &vk.ic, |p| p.to_uncompressed().to_vec())
}

fn write_points<P: Sync>(
    w: &mut impl std::io::Write,
    section: &str,
    points: &[P],
    encode: impl Fn(&P) -> Vec<u8> + Sync,
) -> std::io::Result<()> {
    let count = u32::try_from(points.len()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{section}: {} points overflow a u32 count", points.len()),
        )
    })?;
    w.write_all(&count.to_be_bytes())?;
    // Encode in parallel, write in order, a chunk at a time (memory stays at one chunk).
    for chunk in points.chunks(1 << 16) {
        let bytes: Vec<Vec<u8>> = chunk.par_iter().map(&encode).collect();
        for b in bytes {
            w.write_all(&b)?;
        }
    }
    Ok(())
}

/// Record that `path` passed the subgroup check (its writer knows: every point it wrote is
/// a multiple of the generator), so the first load does not spend minutes re-checking it.
pub fn mark_checked(path: &Path) {
    crate::check_record::remember(path, None);
}

/// Read and validate a `.vk` file.
pub fn load_verifying_key(path: &Path) -> Result<VerifyingKey, SrsError> {
    let (mmap, _, _) = open(path, SubgroupCheck::Always, None)?;
    let mut r = Reader { path, map: &mmap, offset: 0, subgroup: true, mapped: Some(&mmap) };
    let vk = r.vk()?;
    r.finish()?;
    Ok(vk)
}

/// The file mapped, whether this load must check subgroups, and the version it mapped (for
/// the record, see [`crate::check_record::FileVersion`]).
fn open(
    path: &Path,
    check: SubgroupCheck,
    records: Option<&Path>,
) -> Result<(Mmap, bool, Option<FileVersion>), SrsError> {
    let io = |source| SrsError::Io { path: path.into(), source };
    let file = File::open(path).map_err(io)?;
    // SAFETY: the map is read-only and parameter files are never modified in place (they
    // are written elsewhere and renamed into the directory).
    let mmap = unsafe { Mmap::map(&file) }.map_err(io)?;
    let version = FileVersion::of(&file);
    Ok((mmap, must_check(path, check, records, version.as_ref()), version))
}

/// Whether a load of `version` of `path` must check subgroups.
pub(crate) fn must_check(
    path: &Path,
    check: SubgroupCheck,
    records: Option<&Path>,
    version: Option<&FileVersion>,
) -> bool {
    match check {
        SubgroupCheck::Skip => false,
        SubgroupCheck::Always => true,
        SubgroupCheck::Once => !version.is_some_and(|v| crate::check_record::version_checked(path, v, records)),
    }
}

struct Reader<'a> {
    path: &'a Path,
    /// The whole file (or, for [`parse_vk`], the bytes given).
    map: &'a [u8],
    offset: usize,
    subgroup: bool,
    /// The file's map, whose decoded sections give their pages back ([`Reader::release`]).
    mapped: Option<&'a Mmap>,
}

impl<'a> Reader<'a> {
    fn take(&mut self, section: &'static str, n: usize) -> Result<&'a [u8], SrsError> {
        let data: &'a [u8] = self.map;
        let end = self.offset.checked_add(n).filter(|&e| e <= data.len());
        let Some(end) = end else {
            return Err(SrsError::Truncated {
                path: self.path.into(),
                section,
                offset: self.offset,
                needed: n,
                len: data.len(),
            });
        };
        let s = &data[self.offset..end];
        self.offset = end;
        Ok(s)
    }

    fn count(&mut self, section: &'static str) -> Result<usize, SrsError> {
        let b = self.take(section, 4)?;
        Ok(u32::from_be_bytes(b.try_into().unwrap()) as usize)
    }

    fn vk(&mut self) -> Result<VerifyingKey, SrsError> {
        let alpha_g1 = self.g1_one("vk.alpha_g1")?;
        let beta_g1 = self.g1_one("vk.beta_g1")?;
        let beta_g2 = self.g2_one("vk.beta_g2")?;
        let gamma_g2 = self.g2_one("vk.gamma_g2")?;
        let delta_g1 = self.g1_one("vk.delta_g1")?;
        let delta_g2 = self.g2_one("vk.delta_g2")?;
        let ic = self.g1_section("vk.ic")?;
        Ok(VerifyingKey { alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, ic })
    }

    fn g1_one(&mut self, section: &'static str) -> Result<G1Affine, SrsError> {
        let bytes = self.take(section, G1_LEN)?;
        decode_g1(bytes, true).map_err(|reason| self.bad(section, 0, reason))
    }

    fn g2_one(&mut self, section: &'static str) -> Result<G2Affine, SrsError> {
        let bytes = self.take(section, G2_LEN)?;
        decode_g2(bytes, true).map_err(|reason| self.bad(section, 0, reason))
    }

    fn g1_section(&mut self, section: &'static str) -> Result<Vec<G1Affine>, SrsError> {
        let n = self.count(section)?;
        let start = self.offset;
        let bytes = self.take(section, n.saturating_mul(G1_LEN))?;
        let subgroup = self.subgroup;
        let points = bytes
            .par_chunks_exact(G1_LEN)
            .enumerate()
            .map(|(i, p)| decode_g1(p, subgroup).map_err(|reason| self.bad(section, i, reason)))
            .collect();
        self.release(start, bytes.len());
        points
    }

    fn g2_section(&mut self, section: &'static str) -> Result<Vec<G2Affine>, SrsError> {
        let n = self.count(section)?;
        let start = self.offset;
        let bytes = self.take(section, n.saturating_mul(G2_LEN))?;
        let subgroup = self.subgroup;
        let points = bytes
            .par_chunks_exact(G2_LEN)
            .enumerate()
            .map(|(i, p)| decode_g2(p, subgroup).map_err(|reason| self.bad(section, i, reason)))
            .collect();
        self.release(start, bytes.len());
        points
    }

    /// Give a decoded section's file pages back to the kernel. Mapped pages count in the
    /// process's RSS until the map goes, so without this a 47 GB porep-32g file would sit in
    /// memory beside its 44 GB of decoded points until the load ends; with it, one section
    /// at a time.
    fn release(&self, start: usize, len: usize) {
        let Some(map) = self.mapped.filter(|_| len > 0) else { return };
        // SAFETY: a read-only shared file mapping: DONTNEED only drops this process's page
        // table entries, and a later read faults the same bytes in from the file again.
        if let Err(e) = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, len) } {
            tracing::debug!(path = %self.path.display(), error = %e, "madvise(DONTNEED) on a parameter file failed; its pages stay mapped");
        }
    }

    fn bad(&self, section: &'static str, index: usize, reason: &'static str) -> SrsError {
        SrsError::BadPoint { path: self.path.into(), section, index, reason }
    }

    fn finish(&self) -> Result<(), SrsError> {
        match self.map.len() - self.offset {
            0 => Ok(()),
            extra => Err(SrsError::TrailingBytes { path: self.path.into(), extra }),
        }
    }
}

/// Decode one uncompressed point. blst's deserialisation rejects coordinates out of range
/// and points off the curve; the checked variant adds the subgroup check.
pub(crate) fn decode<P>(bytes: &[u8], subgroup: bool) -> Result<P, &'static str>
where
    P: UncompressedEncoding + PrimeCurveAffine,
    P::Uncompressed: Default + AsMut<[u8]>,
{
    let mut repr = P::Uncompressed::default();
    repr.as_mut().copy_from_slice(bytes);
    let decoded = if subgroup { P::from_uncompressed(&repr) } else { P::from_uncompressed_unchecked(&repr) };
    let p: P = Option::from(decoded).ok_or(if subgroup {
        "not a point on the curve in the prime-order subgroup"
    } else {
        "not a point on the curve"
    })?;
    if bool::from(p.is_identity()) {
        return Err("point at infinity");
    }
    Ok(p)
}

fn decode_g1(bytes: &[u8], subgroup: bool) -> Result<G1Affine, &'static str> {
    decode(bytes, subgroup)
}

fn decode_g2(bytes: &[u8], subgroup: bool) -> Result<G2Affine, &'static str> {
    decode(bytes, subgroup)
}
