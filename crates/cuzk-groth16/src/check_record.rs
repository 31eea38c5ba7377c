//! Records of passed subgroup checks, so `SubgroupCheck::Once` checks a parameter file once
//! per version instead of on every start (minutes for a 47 GiB file).
//!
//! A record names the file's canonical path and its `size mtime_ns` stamp. It lives in a
//! record directory the caller names (the daemon's state directory, so the parameter
//! directory may stay read-only), or, without one, beside the file as `<file>.cuzk-checked`
//! (the old layout, still read in both cases so an upgrade does not recheck). A load takes
//! the stamp from the file it opened, not from the path once the check is done
//! ([`FileVersion`]).
//!
//! A record is a promise that the points were checked, so it is only believed when nobody
//! but us (or root) could have planted it: the record and the directory holding it must be
//! owned by our effective user or root and writable by neither group nor others. Anyone who
//! could write there gets a full check instead of a skipped one.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Suffix of a record, beside the file or in the record directory.
const SUFFIX: &str = ".cuzk-checked";

/// The old layout: `<file>.cuzk-checked` next to the parameter file.
fn beside(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(SUFFIX);
    PathBuf::from(s)
}

/// `<dir>/<file name>.cuzk-checked`; the content names the full path, so two parameter
/// directories holding the same file name cannot vouch for each other.
fn in_dir(dir: &Path, path: &Path) -> Option<PathBuf> {
    let mut name = path.file_name()?.to_owned();
    name.push(SUFFIX);
    Some(dir.join(name))
}

/// `size mtime_ns` of the file at `path`: a new version of it (rewritten or replaced)
/// changes either.
fn stamp(path: &Path) -> Option<String> {
    stamp_of(&std::fs::metadata(path).ok()?)
}

fn stamp_of(meta: &std::fs::Metadata) -> Option<String> {
    let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some(format!("{} {}", meta.len(), mtime))
}

/// The version of a parameter file that a load opened: the record's stamp, taken from the
/// open file (fstat) rather than from its path. A check takes minutes; a file renamed over
/// the path in that time is another file, and stamping the path after the check recorded
/// that one, unchecked, as checked. Stamped from the file that was read, the record names
/// the old version, which the path no longer has, so the new file is checked at its load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileVersion {
    stamp: String,
}

impl FileVersion {
    /// The version `file` (opened from the path a load reads) has now; None if it cannot
    /// be told (then nothing is believed or recorded for it).
    pub fn of(file: &File) -> Option<FileVersion> {
        Some(FileVersion { stamp: stamp_of(&file.metadata().ok()?)? })
    }
}

fn owner_ok(uid: u32) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    uid == 0 || uid == unsafe { libc::geteuid() }
}

/// Whether a file with this metadata could only have been written by us or root: a regular
/// file owned by our effective user or root that neither group nor others may write. The
/// rule for records (with their directory, [`trusted`]), and for other files whose contents
/// the daemon acts on unchecked (PCE cache files).
pub fn private_file(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_file() && owner_ok(meta.uid()) && meta.mode() & 0o022 == 0
}

/// Whether `record` could only have been written by us or root (see the module docs).
/// Symlinks are not followed: a link could point at any file that happens to match.
fn trusted(record: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(record) else { return false };
    if !private_file(&meta) {
        return false;
    }
    let dir = match record.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::metadata(dir).is_ok_and(|d| owner_ok(d.uid()) && d.mode() & 0o022 == 0)
}

/// Whether a trusted record says the current version of `path` passed the check.
pub fn already_checked(path: &Path, records: Option<&Path>) -> bool {
    stamp(path).is_some_and(|now| stamp_checked(path, &now, records))
}

/// Whether a trusted record says `version` of `path` passed the check (a load asks about
/// the file it opened, [`FileVersion`]).
pub fn version_checked(path: &Path, version: &FileVersion, records: Option<&Path>) -> bool {
    stamp_checked(path, &version.stamp, records)
}

fn stamp_checked(path: &Path, now: &str, records: Option<&Path>) -> bool {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let in_records =
        records.and_then(|d| in_dir(d, path)).filter(|r| trusted(r)).and_then(|r| std::fs::read_to_string(r).ok());
    if let Some(text) = in_records {
        let mut lines = text.lines();
        if lines.next() == Some(&*canonical.to_string_lossy()) && lines.next().map(str::trim) == Some(now) {
            return true;
        }
    }
    // The old layout holds the stamp alone: it sits beside the very file it describes.
    let legacy = beside(path);
    trusted(&legacy) && std::fs::read_to_string(&legacy).is_ok_and(|t| t.trim() == now)
}

/// Record that the current version of `path` passed the check; for a file's writer, who
/// knows what it wrote ([`crate::srs::mark_checked`]). A load records the version it read
/// instead: [`remember_version`].
pub fn remember(path: &Path, records: Option<&Path>) {
    if let Some(now) = stamp(path) {
        remember_stamp(path, &now, records);
    }
}

/// Record that `version` of `path` (the file a load opened and checked) passed the check:
/// in `records` (created if missing, mode 0750) when given, else beside the file. Best
/// effort: a failure only means checking again next time, so it is logged, naming what to
/// configure.
pub fn remember_version(path: &Path, version: &FileVersion, records: Option<&Path>) {
    remember_stamp(path, &version.stamp, records);
}

fn remember_stamp(path: &Path, now: &str, records: Option<&Path>) {
    let result = match records {
        Some(dir) => write_in_dir(dir, path, now),
        None => write_record(&beside(path), now.as_bytes()).map(|()| beside(path)),
    };
    match result {
        Ok(record) => tracing::debug!(path = %path.display(), record = %record.display(), "subgroup check recorded"),
        Err(e) => tracing::warn!(
            path = %path.display(), error = %e,
            "could not record the subgroup check; it will run again at the next load (give the daemon a \
             writable state directory: daemon.state_dir)"
        ),
    }
}

fn write_in_dir(dir: &Path, path: &Path, stamp: &str) -> std::io::Result<PathBuf> {
    std::fs::DirBuilder::new().recursive(true).mode(0o750).create(dir)?;
    let record = in_dir(dir, path).ok_or_else(|| std::io::Error::other("parameter path has no file name"))?;
    let canonical = std::fs::canonicalize(path)?;
    // Written aside and renamed, so a reader never sees half a record.
    let tmp = record.with_extension(format!("tmp{}", std::process::id()));
    write_record(&tmp, format!("{}\n{stamp}\n", canonical.display()).as_bytes())?;
    std::fs::rename(&tmp, &record)?;
    Ok(record)
}

/// Create (or replace) a record with mode 0644 at most: a umask of 002 would otherwise make
/// it group-writable, and [`trusted`] would then never believe it.
fn write_record(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o644).open(path)?;
    f.write_all(content)?;
    f.sync_all()?;
    // An existing file keeps its mode through open(); make sure no one else may write it.
    f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn file(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, b"points").unwrap();
        p
    }

    #[test]
    fn records_go_to_the_record_dir_and_name_the_version() {
        let params = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let records = state.path().join("checked");
        let p = file(params.path(), "v28-x.params");
        assert!(!already_checked(&p, Some(&records)));
        remember(&p, Some(&records));
        assert!(already_checked(&p, Some(&records)));
        assert!(!beside(&p).exists(), "nothing is written into the parameter directory");
        // Without the record directory the record is not found.
        assert!(!already_checked(&p, None));
        // A new version of the file (other size) is checked again.
        std::fs::write(&p, b"other points").unwrap();
        assert!(!already_checked(&p, Some(&records)));
        // A file of the same name in another directory is not vouched for.
        let other = tempfile::tempdir().unwrap();
        let q = file(other.path(), "v28-x.params");
        remember(&p, Some(&records));
        assert!(!already_checked(&q, Some(&records)));
    }

    /// Issue #36 item 11b: a check takes minutes; a file renamed over the checked one in
    /// that time is another file, and must not inherit the record.
    #[test]
    fn a_file_swapped_while_it_was_checked_is_not_recorded() {
        let params = tempfile::tempdir().unwrap();
        let records = params.path().join("records");
        let p = file(params.path(), "v28-s.params");
        let opened = File::open(&p).unwrap();
        let version = FileVersion::of(&opened).unwrap();
        // Renamed into place while the load was reading the old file.
        let other = file(params.path(), "incoming");
        std::fs::write(&other, b"other points, unchecked").unwrap();
        std::fs::rename(&other, &p).unwrap();
        remember_version(&p, &version, Some(&records));
        assert!(!already_checked(&p, Some(&records)), "the swapped-in file counts as checked");
        // Without a swap, the record is written as before.
        let q = file(params.path(), "v28-t.params");
        let opened = File::open(&q).unwrap();
        remember_version(&q, &FileVersion::of(&opened).unwrap(), Some(&records));
        assert!(already_checked(&q, Some(&records)));
    }

    #[test]
    fn records_are_believed_whatever_the_umask() {
        let params = tempfile::tempdir().unwrap();
        let p = file(params.path(), "v28-u.params");
        // A group-writable leftover from an older version is tightened when rewritten.
        std::fs::write(beside(&p), b"stale").unwrap();
        std::fs::set_permissions(beside(&p), std::fs::Permissions::from_mode(0o666)).unwrap();
        remember(&p, None);
        assert!(already_checked(&p, None));
        assert_eq!(std::fs::metadata(beside(&p)).unwrap().mode() & 0o777, 0o644);
    }

    #[test]
    fn the_old_sidecar_is_still_read() {
        let params = tempfile::tempdir().unwrap();
        let p = file(params.path(), "v28-y.params");
        remember(&p, None);
        assert!(beside(&p).exists());
        assert!(already_checked(&p, None));
        assert!(already_checked(&p, Some(&params.path().join("unused"))));
    }

    #[test]
    fn records_others_could_write_are_not_believed() {
        let params = tempfile::tempdir().unwrap();
        let p = file(params.path(), "v28-z.params");
        remember(&p, None);
        let sidecar = beside(&p);
        std::fs::set_permissions(&sidecar, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(!already_checked(&p, None), "a world-writable record");
        std::fs::set_permissions(&sidecar, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(already_checked(&p, None));
        std::fs::set_permissions(params.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!already_checked(&p, None), "a record in a world-writable directory");
        std::fs::set_permissions(params.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        // A symlink to a valid-looking record is not followed.
        std::fs::remove_file(&sidecar).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let real = elsewhere.path().join("r");
        std::fs::write(&real, stamp(&p).unwrap()).unwrap();
        std::os::unix::fs::symlink(&real, &sidecar).unwrap();
        assert!(!already_checked(&p, None), "a symlinked record");
    }
}
