//! The on-disk cache: a round trip gives back an equal `PreCompiled` (used in place from the
//! memory map) that evaluates to the same assignment; every kind of bad file is refused with
//! the error that names its problem.

mod common;

use std::path::{Path, PathBuf};

use blstrs::Scalar as Fr;
use common::*;
use cuzk_pce::cache::{self, CacheError, FORMAT_VERSION};
use cuzk_pce::{evaluate, extract, witness, PreCompiled};

const ID: &str = "test-circuit/edge-lcs/v1";

fn fixture() -> (tempfile::TempDir, PathBuf, PreCompiled) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edge.pce");
    let pc = extract(EdgeLcs { x: None }).unwrap();
    cache::save(&pc, &path, ID).unwrap();
    (dir, path, pc)
}

fn rewrite(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    f(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn round_trip() {
    let (dir, path, pc) = fixture();
    let loaded = cache::load(&path, ID).unwrap();
    assert!(loaded.a.is_mapped() && loaded.b.is_mapped() && loaded.c.is_mapped());
    assert_eq!(loaded, pc);
    assert_eq!(loaded.stats().nnz, pc.stats().nnz);

    let real = EdgeLcs { x: Some(Fr::from(123u64)) };
    let (inputs, aux) = witness(real.clone()).unwrap();
    assert_same(&plain(real), &evaluate(&loaded, inputs, aux).unwrap(), "loaded cache");

    // Saving a loaded (mapped) one again, over the same path, gives an equal file; no
    // temporary files are left behind.
    cache::save(&loaded, &path, ID).unwrap();
    assert_eq!(cache::load(&path, ID).unwrap(), pc);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("edge.pce")]);
}

#[test]
fn round_trip_of_bigger_and_extensible_circuits() {
    let dir = tempfile::tempdir().unwrap();
    for (name, pc) in [
        ("bits", extract(Bits { values: None, n: 30 }).unwrap()),
        ("ext", extract(Extensible { seed: None, pieces: 5 }).unwrap()),
        ("inputs", extract(InputsOnly { values: None, constrain: false }).unwrap()),
    ] {
        let path = dir.path().join(name);
        cache::save(&pc, &path, name).unwrap();
        assert_eq!(cache::load(&path, name).unwrap(), pc, "{name}");
    }
}

#[test]
fn flipped_payload_byte_is_a_checksum_error() {
    let (_dir, path, _) = fixture();
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    // The payload starts at 4096; flip a byte in the middle of it.
    rewrite(&path, |b| b[4096 + (len - 4096) / 2] ^= 0x10);
    let err = cache::load(&path, ID).unwrap_err();
    assert!(matches!(err, CacheError::PayloadChecksum { .. }), "{err}");
    assert!(err.to_string().contains("checksum"), "{err}");
}

#[test]
fn flipped_header_byte_is_a_header_error() {
    let (_dir, path, _) = fixture();
    rewrite(&path, |b| b[60] ^= 1); // inside num_inputs
    assert!(matches!(cache::load(&path, ID).unwrap_err(), CacheError::HeaderChecksum { .. }));
}

#[test]
fn truncated_files_are_refused() {
    let (_dir, path, _) = fixture();
    let bytes = std::fs::read(&path).unwrap();
    for cut in [bytes.len() - 1, bytes.len() - 100, 4096, 1000, 100, 0] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let err = cache::load(&path, ID).unwrap_err();
        assert!(matches!(err, CacheError::Truncated { .. }), "cut at {cut}: {err}");
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let (_dir, path, _) = fixture();
    rewrite(&path, |b| b.extend_from_slice(&[0; 3]));
    assert!(matches!(cache::load(&path, ID).unwrap_err(), CacheError::TrailingBytes { extra: 3, .. }));
}

#[test]
fn wrong_identity_is_refused() {
    let (_dir, path, _) = fixture();
    let err = cache::load(&path, "another-circuit").unwrap_err();
    match &err {
        CacheError::Identity { found, expected, .. } => {
            assert_eq!((found.as_str(), expected.as_str()), (ID, "another-circuit"))
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("another-circuit"));
}

#[test]
fn wrong_version_is_refused() {
    let (_dir, path, _) = fixture();
    rewrite(&path, |b| b[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes()));
    match cache::load(&path, ID).unwrap_err() {
        CacheError::Version { found, expected, .. } => {
            assert_eq!((found, expected), (FORMAT_VERSION + 1, FORMAT_VERSION))
        }
        other => panic!("{other}"),
    }
}

#[test]
fn other_files_are_refused() {
    let (_dir, path, _) = fixture();
    rewrite(&path, |b| b[0] = b'X');
    assert!(matches!(cache::load(&path, ID).unwrap_err(), CacheError::BadMagic { .. }));
    let missing = cache::load(&path.with_extension("nope"), ID).unwrap_err();
    assert!(missing.is_missing(), "{missing}");
    assert!(!cache::load(&path, ID).unwrap_err().is_missing());
}
