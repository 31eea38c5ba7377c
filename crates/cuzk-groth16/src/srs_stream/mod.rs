//! A `.params` file streamed straight into a backend ([`crate::srs_sink`]): read in bounded
//! chunks, each decoded, checked and handed over before the next is read, so the host never
//! holds the key.
//!
//! Why: [`Srs::load`](crate::Srs::load) decodes the whole file into host memory before a
//! backend that keeps every point on its devices takes it; for a 47 GB porep-32g file that
//! put the daemon's peak RSS at 61 GiB, against 11 GiB once the host copy was released. Here
//! the peak is a few chunks in flight (~1 GiB).
//!
//! The layout is the one [`crate::srs`] reads (bellperson's: the verifying key, then five
//! sections, each a big-endian u32 count and uncompressed points). The section counts are
//! read first, with small positioned reads, so the whole file's shape is checked against its
//! size, and offered to the backend ([`QuerySink::begin`]) before any point is decoded: a
//! backend that declines leaves the caller to load on the host as before (`Ok(None)`).
//!
//! Three stages overlap: one thread reads chunks (plain `read`, no whole-file map; the pages
//! read are dropped from the page cache as they pass, since the file is read once per
//! process and 47 GB of cache would push out everything else on the host), one decodes them
//! (in parallel; on-curve checks always), and the caller's thread hands each to the taker.
//! The subgroup check, when this load must do it, runs on the taker's device where it can
//! ([`QueryTaker::checks_subgroup`]; a CUDA kernel there is ~100× faster than the CPU's),
//! else on the CPU while decoding. Either way a bad point is refused with its section and
//! index, and no check record is written.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;

use crate::srs::{self, QueryLens, Srs, SrsError, SubgroupCheck, VerifyingKey, G1_LEN, G2_LEN};
use crate::srs_sink::{G1Query, QuerySink, QueryTaker};

/// Points per chunk: 96 MiB of G1 (192 MiB of G2) read, decoded and handed over at a time.
/// Large enough that a device copy and check are far past their launch costs, small enough
/// that the chunks in flight (two raw, two decoded) stay near 1 GiB.
pub const CHUNK_POINTS: usize = 1 << 20;

/// Where each part of the file starts, from its section counts.
#[derive(Clone, Debug)]
struct Shape {
    vk: VerifyingKey,
    lens: QueryLens,
    /// File offset of the first point of h, l, a, b_g1, b_g2.
    starts: [u64; 5],
}

/// The five queries in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    G1(G1Query),
    BG2,
}

const SECTIONS: [(Section, &str); 5] = [
    (Section::G1(G1Query::H), "h"),
    (Section::G1(G1Query::L), "l"),
    (Section::G1(G1Query::A), "a"),
    (Section::G1(G1Query::BG1), "b_g1"),
    (Section::BG2, "b_g2"),
];

impl Shape {
    fn len_of(&self, k: usize) -> usize {
        let q = &self.lens;
        [q.h, q.l, q.a, q.b_g1, q.b_g2][k]
    }
}

/// Load `path` into `sink`'s backend, if it takes the key: `Ok(None)` when it declines (the
/// caller loads on the host), `Ok(Some(srs))` with the points released
/// ([`Srs::released`]) when every point went to the backend, validated as
/// [`Srs::load_with_records`] validates (structure, on-curve, not at infinity, the subgroup
/// per `check`, with `records` as the record directory).
pub fn load_into(
    path: &Path,
    check: SubgroupCheck,
    records: Option<&Path>,
    sink: &dyn QuerySink,
) -> Result<Option<Srs>, SrsError> {
    load_chunked(path, check, records, sink, CHUNK_POINTS)
}

/// [`load_into`] with `chunk` points per chunk (tests cross chunk boundaries with small ones).
pub(crate) fn load_chunked(
    path: &Path,
    check: SubgroupCheck,
    records: Option<&Path>,
    sink: &dyn QuerySink,
    chunk: usize,
) -> Result<Option<Srs>, SrsError> {
    let io = |source| SrsError::Io { path: path.into(), source };
    let file = File::open(path).map_err(io)?;
    // The version opened is the one checked and recorded (check_record::FileVersion).
    let version = crate::check_record::FileVersion::of(&file);
    let shape = read_shape(path, &file)?;
    let id = Srs::next_id();
    let Some(mut taker) = sink.begin(path, id, &shape.lens) else { return Ok(None) };
    let subgroup = srs::must_check(path, check, records, version.as_ref());
    let on_device = subgroup && taker.checks_subgroup();
    advise(&file, 0, 0, libc::POSIX_FADV_SEQUENTIAL);
    stream(path, &file, &shape, chunk, subgroup && !on_device, on_device, &mut *taker)?;
    taker.finish().map_err(|reason| SrsError::Inconsistent {
        path: path.into(),
        reason: format!("handing the parameters to the devices: {reason}"),
    })?;
    if subgroup {
        if let Some(v) = &version {
            crate::check_record::remember_version(path, v, records);
        }
        tracing::info!(path = %path.display(), on = if on_device { "device" } else { "cpu" }, "subgroup check passed");
    } else if check == SubgroupCheck::Once {
        tracing::info!(path = %path.display(), "subgroup check skipped: this version of the file passed it before");
    }
    let (synthetic, insecure) = srs::markers(path);
    Ok(Some(Srs {
        vk: shape.vk,
        h: Vec::new(),
        l: Vec::new(),
        a: Vec::new(),
        b_g1: Vec::new(),
        b_g2: Vec::new(),
        path: path.into(),
        synthetic,
        insecure,
        id,
        released: Some(shape.lens),
    }))
}

/// The verifying key and every section's count and offset, checked against the file's size.
fn read_shape(path: &Path, file: &File) -> Result<Shape, SrsError> {
    let io = |source| SrsError::Io { path: path.into(), source };
    let size = file.metadata().map_err(io)?.len();
    // The verifying key with its IC count, then the IC points.
    let head = 2 * G1_LEN + 2 * G2_LEN + G1_LEN + G2_LEN + 4;
    let read_at = |section: &'static str, offset: u64, n: usize| -> Result<Vec<u8>, SrsError> {
        if offset.checked_add(n as u64).is_none_or(|end| end > size) {
            return Err(SrsError::Truncated {
                path: path.into(),
                section,
                offset: offset as usize,
                needed: n,
                len: size as usize,
            });
        }
        let mut buf = vec![0u8; n];
        file.read_exact_at(&mut buf, offset).map_err(io)?;
        Ok(buf)
    };
    let count_at = |section: &'static str, offset: u64| -> Result<usize, SrsError> {
        let b = read_at(section, offset, 4)?;
        Ok(u32::from_be_bytes(b[..4].try_into().unwrap()) as usize)
    };
    let head_bytes = read_at("vk", 0, head)?;
    let ic_len = u32::from_be_bytes(head_bytes[head - 4..].try_into().unwrap()) as usize;
    let ic_bytes = read_at("vk.ic", head as u64, ic_len.saturating_mul(G1_LEN))?;
    let mut vk_bytes = head_bytes;
    vk_bytes.extend_from_slice(&ic_bytes);
    let vk = srs::parse_vk(path, &vk_bytes)?;
    let mut offset = (head + ic_bytes.len()) as u64;
    let mut counts = [0usize; 5];
    let mut starts = [0u64; 5];
    for (k, (section, name)) in SECTIONS.iter().enumerate() {
        counts[k] = count_at(name, offset)?;
        starts[k] = offset + 4;
        let point = if *section == Section::BG2 { G2_LEN } else { G1_LEN } as u64;
        let bytes = (counts[k] as u64).saturating_mul(point);
        offset = starts[k].saturating_add(bytes);
        if offset > size {
            return Err(SrsError::Truncated {
                path: path.into(),
                section: name,
                offset: starts[k] as usize,
                needed: bytes as usize,
                len: size as usize,
            });
        }
    }
    if offset != size {
        return Err(SrsError::TrailingBytes { path: path.into(), extra: (size - offset) as usize });
    }
    let lens = QueryLens { h: counts[0], l: counts[1], a: counts[2], b_g1: counts[3], b_g2: counts[4] };
    srs::check_consistent(path, &lens, vk.ic.len())?;
    Ok(Shape { vk, lens, starts })
}

/// One chunk of one section: `n` points from index `first`.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    section: usize,
    first: usize,
    n: usize,
}

enum Decoded {
    G1(Chunk, Vec<G1Affine>),
    G2(Chunk, Vec<G2Affine>),
}

/// Read, decode and hand over every chunk in file order (see the module doc).
fn stream(
    path: &Path,
    file: &File,
    shape: &Shape,
    size: usize,
    cpu_subgroup: bool,
    on_device: bool,
    taker: &mut dyn QueryTaker,
) -> Result<(), SrsError> {
    let size = size.max(1);
    let chunks: Vec<Chunk> = (0..5)
        .flat_map(|section| {
            let len = shape.len_of(section);
            (0..len).step_by(size).map(move |first| Chunk { section, first, n: size.min(len - first) })
        })
        .collect();
    // Buffers go round: reader → decoder → caller → back, so none is allocated per chunk.
    let (raw_tx, raw_rx) = sync_channel::<Result<(Chunk, Vec<u8>), SrsError>>(1);
    let (raw_back_tx, raw_back_rx) = sync_channel::<Vec<u8>>(3);
    let (dec_tx, dec_rx) = sync_channel::<Result<Decoded, SrsError>>(1);
    let (g1_back_tx, g1_back_rx) = sync_channel::<Vec<G1Affine>>(3);
    let (g2_back_tx, g2_back_rx) = sync_channel::<Vec<G2Affine>>(3);
    std::thread::scope(|scope| {
        let chunks = &chunks;
        scope.spawn(move || read_chunks(path, file, shape, chunks, raw_tx, raw_back_rx));
        scope.spawn(move || decode_chunks(path, cpu_subgroup, raw_rx, raw_back_tx, dec_tx, g1_back_rx, g2_back_rx));
        // Any early return drops `dec_rx`, and the two threads stop at their next send.
        hand_over(path, on_device, dec_rx, g1_back_tx, g2_back_tx, taker)
    })
}

fn read_chunks(
    path: &Path,
    file: &File,
    shape: &Shape,
    chunks: &[Chunk],
    out: SyncSender<Result<(Chunk, Vec<u8>), SrsError>>,
    back: Receiver<Vec<u8>>,
) {
    let mut spare = 0usize;
    for &chunk in chunks {
        let point = if SECTIONS[chunk.section].0 == Section::BG2 { G2_LEN } else { G1_LEN };
        let offset = shape.starts[chunk.section] + (chunk.first * point) as u64;
        // Two buffers are made; after that each comes back from the decoder.
        let mut buf = if spare < 2 {
            spare += 1;
            Vec::new()
        } else {
            match back.recv() {
                Ok(b) => b,
                Err(_) => return,
            }
        };
        buf.resize(chunk.n * point, 0);
        if let Err(source) = file.read_exact_at(&mut buf, offset) {
            let _ = out.send(Err(SrsError::Io { path: path.into(), source }));
            return;
        }
        advise(file, offset, buf.len() as u64, libc::POSIX_FADV_DONTNEED);
        if out.send(Ok((chunk, buf))).is_err() {
            return;
        }
    }
}

fn decode_chunks(
    path: &Path,
    subgroup: bool,
    input: Receiver<Result<(Chunk, Vec<u8>), SrsError>>,
    raw_back: SyncSender<Vec<u8>>,
    out: SyncSender<Result<Decoded, SrsError>>,
    g1_back: Receiver<Vec<G1Affine>>,
    g2_back: Receiver<Vec<G2Affine>>,
) {
    // Two decoded buffers of each kind are made; after that each comes back from the caller.
    let (mut g1_made, mut g2_made) = (0, 0);
    let next = |made: &mut usize| {
        *made += 1;
        *made <= 2
    };
    for item in input {
        let decoded = item.and_then(|(chunk, bytes)| {
            let name = SECTIONS[chunk.section].1;
            let result = if SECTIONS[chunk.section].0 == Section::BG2 {
                let mut points = if next(&mut g2_made) { Vec::new() } else { g2_back.recv().unwrap_or_default() };
                decode_into(path, name, chunk.first, &bytes, G2_LEN, subgroup, &mut points)
                    .map(|()| Decoded::G2(chunk, points))
            } else {
                let mut points = if next(&mut g1_made) { Vec::new() } else { g1_back.recv().unwrap_or_default() };
                decode_into(path, name, chunk.first, &bytes, G1_LEN, subgroup, &mut points)
                    .map(|()| Decoded::G1(chunk, points))
            };
            let _ = raw_back.try_send(bytes);
            result
        });
        if out.send(decoded).is_err() {
            return;
        }
    }
}

/// Decode `bytes` into `points`; a bad point is reported by its index in the section (the
/// first bad one of the chunk, so the verdict does not depend on thread timing).
fn decode_into<P>(
    path: &Path,
    section: &'static str,
    first: usize,
    bytes: &[u8],
    len: usize,
    subgroup: bool,
    points: &mut Vec<P>,
) -> Result<(), SrsError>
where
    P: UncompressedEncoding + PrimeCurveAffine + Send + Sync,
    P::Uncompressed: Default + AsMut<[u8]>,
{
    let n = bytes.len() / len;
    points.clear();
    points.resize(n, P::identity());
    let first_bad = AtomicUsize::new(usize::MAX);
    // A bad point is rare: the lock is taken only for one.
    let reason = std::sync::Mutex::new(None::<(usize, &'static str)>);
    points.par_iter_mut().zip(bytes.par_chunks_exact(len)).enumerate().for_each(|(i, (out, b))| {
        match srs::decode::<P>(b, subgroup) {
            Ok(p) => *out = p,
            Err(why) => {
                first_bad.fetch_min(i, Ordering::Relaxed);
                let mut r = reason.lock().unwrap_or_else(|e| e.into_inner());
                if r.is_none_or(|(j, _)| i < j) {
                    *r = Some((i, why));
                }
            }
        }
    });
    match first_bad.into_inner() {
        usize::MAX => Ok(()),
        i => {
            let why =
                reason.into_inner().unwrap_or_else(|e| e.into_inner()).map_or("not a valid point", |(_, why)| why);
            Err(SrsError::BadPoint { path: path.into(), section, index: first + i, reason: why })
        }
    }
}

fn hand_over(
    path: &Path,
    on_device: bool,
    input: Receiver<Result<Decoded, SrsError>>,
    g1_back: SyncSender<Vec<G1Affine>>,
    g2_back: SyncSender<Vec<G2Affine>>,
    taker: &mut dyn QueryTaker,
) -> Result<(), SrsError> {
    let refused = |reason: String| SrsError::Inconsistent {
        path: path.into(),
        reason: format!("handing the parameters to the devices: {reason}"),
    };
    for item in input {
        let (chunk, first_outside) = match item? {
            Decoded::G1(chunk, points) => {
                let Section::G1(query) = SECTIONS[chunk.section].0 else { unreachable!("G1 chunk of a G2 section") };
                taker.take_g1(query, chunk.first, &points).map_err(refused)?;
                let _ = g1_back.try_send(points);
                let bad = if on_device {
                    taker.first_outside_subgroup_g1(query, chunk.first, chunk.n).map_err(refused)?
                } else {
                    None
                };
                (chunk, bad)
            }
            Decoded::G2(chunk, points) => {
                taker.take_b_g2(chunk.first, &points).map_err(refused)?;
                let _ = g2_back.try_send(points);
                let bad = if on_device {
                    taker.first_outside_subgroup_b_g2(chunk.first, chunk.n).map_err(refused)?
                } else {
                    None
                };
                (chunk, bad)
            }
        };
        if let Some(i) = first_outside {
            return Err(SrsError::BadPoint {
                path: path.into(),
                section: SECTIONS[chunk.section].1,
                index: i,
                reason: "not in the prime-order subgroup (checked on the device)",
            });
        }
    }
    Ok(())
}

/// posix_fadvise, best effort: advice only changes caching, never what is read.
fn advise(file: &File, offset: u64, len: u64, advice: libc::c_int) {
    // SAFETY: a valid open descriptor; posix_fadvise reads no memory of ours.
    let _ = unsafe { libc::posix_fadvise(file.as_raw_fd(), offset as libc::off_t, len as libc::off_t, advice) };
}

#[cfg(test)]
mod tests;
