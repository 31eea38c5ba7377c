//! The streamed `.params` load against the host load: the same key at any chunk size, the
//! same refusals (truncated, trailing bytes, bad points with their section and index), and
//! check records written only after a full pass.

use std::path::{Path, PathBuf};

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::load_chunked;
use crate::setup::tests::{evaluations, fixed_base};
use crate::setup::{assemble, Trapdoor};
use crate::srs::{write_params, Srs, SrsError, SubgroupCheck};
use crate::srs_sink::{Collect, QuerySink, QueryTaker};

/// Small generated parameters: h 127, l 90, a 63, b 70 points.
fn params() -> Srs {
    let t = Trapdoor::from_seed(9);
    assemble(
        100,
        evaluations(4, 1),
        evaluations(90, 2),
        &t,
        PathBuf::from("generated://stream-test"),
        fixed_base(),
        None,
    )
    .unwrap()
}

fn write(srs: &Srs, path: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write_params(srs, &mut f).unwrap();
}

/// A sink that declines every key.
struct Decline;

impl QuerySink for Decline {
    fn begin(&self, _: &Path, _: u64, _: &crate::QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        None
    }
}

#[test]
fn the_streamed_load_hands_over_the_host_loads_key_at_any_chunk_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    let srs = params();
    write(&srs, &path);
    let host = Srs::load(&path, SubgroupCheck::Always).unwrap();
    for chunk in [1, 5, 63, 64, 127, 1 << 20] {
        let sink = Collect::default();
        let s = load_chunked(&path, SubgroupCheck::Always, Some(dir.path()), &sink, chunk).unwrap().expect("taken");
        let got = sink.taken.lock().unwrap().take().expect("finished");
        assert!(
            got.h == host.h && got.l == host.l && got.a == host.a && got.b_g1 == host.b_g1 && got.b_g2 == host.b_g2,
            "chunk {chunk}"
        );
        assert_eq!(s.vk, host.vk);
        assert!(s.points_released() && s.h.is_empty() && s.b_g2.is_empty(), "the host keeps no point");
        assert_eq!(s.query_lens(), host.query_lens());
        assert_eq!(s.path, path);
        assert_ne!(s.id, host.id);
    }
    assert!(
        load_chunked(&path, SubgroupCheck::Always, None, &Decline, 7).unwrap().is_none(),
        "a declining backend leaves the load to the host"
    );
}

#[test]
fn truncated_and_overlong_files_are_refused_before_any_point_is_handed_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    write(&params(), &path);
    let bytes = std::fs::read(&path).unwrap();
    for cut in [10, 500, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let sink = Collect::default();
        let e = load_chunked(&path, SubgroupCheck::Skip, None, &sink, 8)
            .err()
            .unwrap_or_else(|| panic!("cut at {cut} accepted"));
        assert!(matches!(e, SrsError::Truncated { .. }), "cut at {cut}: {e}");
        assert!(sink.taken.lock().unwrap().is_none());
    }
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 3]);
    std::fs::write(&path, &longer).unwrap();
    let e = load_chunked(&path, SubgroupCheck::Skip, None, &Collect::default(), 8).err().unwrap();
    assert!(matches!(e, SrsError::TrailingBytes { extra: 3, .. }), "{e}");
}

/// A point of E(Fp) outside the prime-order subgroup (the cofactor is ~2^126, so a random
/// curve point is outside it).
fn g1_outside(r: &mut ChaCha8Rng) -> G1Affine {
    loop {
        let x = Fp::random(&mut *r);
        if let Some(y) = Option::<Fp>::from((x.square() * x + Fp::from(4u64)).sqrt()) {
            let p = G1Affine::from_raw_unchecked(x, y, false);
            if !bool::from(p.is_torsion_free()) {
                return p;
            }
        }
    }
}

fn g2_outside(r: &mut ChaCha8Rng) -> G2Affine {
    let b = Fp2::new(Fp::from(4u64), Fp::from(4u64));
    loop {
        let x = Fp2::random(&mut *r);
        if let Some(y) = Option::<Fp2>::from((x.square() * x + b).sqrt()) {
            let p = G2Affine::from_raw_unchecked(x, y, false);
            if !bool::from(p.is_torsion_free()) {
                return p;
            }
        }
    }
}

#[test]
fn a_point_outside_the_subgroup_in_any_query_is_refused_by_section_and_index_and_nothing_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let path = dir.path().join("p.params");
    let mut r = ChaCha8Rng::seed_from_u64(3);
    for section in ["h", "l", "a", "b_g1", "b_g2"] {
        let mut srs = params();
        let index = match section {
            "h" => r.gen_range(0..srs.h.len()),
            "l" => r.gen_range(0..srs.l.len()),
            "a" => r.gen_range(0..srs.a.len()),
            _ => r.gen_range(0..srs.b_g1.len()),
        };
        match section {
            "h" => srs.h[index] = g1_outside(&mut r),
            "l" => srs.l[index] = g1_outside(&mut r),
            "a" => srs.a[index] = g1_outside(&mut r),
            "b_g1" => srs.b_g1[index] = g1_outside(&mut r),
            _ => srs.b_g2[index] = g2_outside(&mut r),
        }
        write(&srs, &path);
        for check in [SubgroupCheck::Once, SubgroupCheck::Always] {
            let e = load_chunked(&path, check, Some(&records), &Collect::default(), 16)
                .err()
                .unwrap_or_else(|| panic!("{section}[{index}] accepted"));
            match &e {
                SrsError::BadPoint { section: s, index: i, reason, .. } => {
                    assert_eq!((*s, *i), (section, index), "{e}");
                    assert!(reason.contains("subgroup"), "{e}");
                }
                other => panic!("{section}[{index}]: {other}"),
            }
            assert!(
                !crate::check_record::already_checked(&path, Some(&records)),
                "{section}: a failed check left a record"
            );
            // The host load refuses it the same way.
            let e = Srs::load_with_records(&path, check, Some(&records)).err().unwrap();
            assert!(
                matches!(e, SrsError::BadPoint { section: s, index: i, .. } if s == section && i == index),
                "host load: {e}"
            );
        }
        // Without the subgroup check the point is on the curve and the load goes through.
        load_chunked(&path, SubgroupCheck::Skip, Some(&records), &Collect::default(), 16).unwrap().unwrap();
    }
}

#[test]
fn a_passed_check_is_recorded_and_skipped_on_the_next_load() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let path = dir.path().join("p.params");
    write(&params(), &path);
    assert!(!crate::check_record::already_checked(&path, Some(&records)));
    load_chunked(&path, SubgroupCheck::Once, Some(&records), &Collect::default(), 16).unwrap().unwrap();
    assert!(
        crate::check_record::already_checked(&path, Some(&records)),
        "a streamed load that checked every point records it"
    );
    // A point off the curve is still refused on the next (unchecked) load: only the subgroup
    // check is remembered.
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 10;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let e = load_chunked(&path, SubgroupCheck::Skip, Some(&records), &Collect::default(), 16).err().unwrap();
    assert!(matches!(e, SrsError::BadPoint { section: "b_g2", .. }), "{e}");
}

/// A sink that, when the load offers it the key (after the file was opened, before it is
/// checked), has another file renamed over the path, as an update landing mid-load would;
/// then it takes the key as [`Collect`] does.
struct SwapOnBegin {
    incoming: PathBuf,
    inner: Collect,
}

impl QuerySink for SwapOnBegin {
    fn begin(&self, path: &Path, id: u64, lens: &crate::QueryLens) -> Option<Box<dyn QueryTaker + '_>> {
        std::fs::rename(&self.incoming, path).unwrap();
        self.inner.begin(path, id, lens)
    }
}

/// Issue #36 item 11b: the load checks the file it opened; one renamed over it meanwhile is
/// not recorded as checked, and its own load checks it (and finds its bad point).
#[test]
fn a_file_renamed_in_during_a_checked_load_is_not_recorded_as_checked() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records");
    let path = dir.path().join("p.params");
    write(&params(), &path);
    let mut bad = params();
    bad.l[3] = g1_outside(&mut ChaCha8Rng::seed_from_u64(5));
    let incoming = dir.path().join("incoming");
    write(&bad, &incoming);
    // The same size; an mtime of its own, as a copied file keeps its source's (the record's
    // identity is size and mtime, and two files written within a clock tick share one).
    let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&incoming).unwrap().set_modified(earlier).unwrap();
    let sink = SwapOnBegin { incoming, inner: Collect::default() };
    load_chunked(&path, SubgroupCheck::Once, Some(&records), &sink, 16).unwrap().expect("the opened file passes");
    assert!(!crate::check_record::already_checked(&path, Some(&records)), "the file renamed in is recorded as checked");
    let e = load_chunked(&path, SubgroupCheck::Once, Some(&records), &Collect::default(), 16)
        .err()
        .expect("the bad point is found");
    assert!(matches!(e, SrsError::BadPoint { section: "l", index: 3, .. }), "{e}");
}

#[test]
fn points_in_the_subgroup_pass_whatever_their_origin() {
    // Random subgroup points (not a generated setup's structure) written as a file.
    let mut r = ChaCha8Rng::seed_from_u64(4);
    let mut srs = params();
    for p in srs.l.iter_mut() {
        *p = G1Projective::random(&mut r).to_affine();
    }
    for p in srs.b_g2.iter_mut() {
        *p = G2Projective::random(&mut r).to_affine();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.params");
    write(&srs, &path);
    let sink = Collect::default();
    load_chunked(&path, SubgroupCheck::Always, None, &sink, 32).unwrap().unwrap();
    let got = sink.taken.lock().unwrap().take().unwrap();
    assert!(got.l == srs.l && got.b_g2 == srs.b_g2);
}
