//! Temporary files of interrupted saves: [`save`](super::save) writes `<dir>/.pce-partial-*`
//! and renames it into place; a process killed before the rename leaves it behind, up to
//! 10 GB at 32 GiB, and nothing else would ever remove it. [`sweep_temp_files`] does, when a
//! cache is opened, leaving alone whatever another process may still be writing.

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Names of [`save`](super::save)'s temporary files start with this; [`sweep_temp_files`] removes no
/// other name (but the one earlier versions used, see there).
pub const TEMP_PREFIX: &str = ".pce-partial-";
/// A temporary file younger than this is left alone even when nobody holds its lock: a save
/// locks its file a moment after creating it.
pub const TEMP_MIN_AGE: Duration = Duration::from_secs(120);
/// How old a temporary file whose writer cannot be told by its lock must be before it is
/// removed: one named as before saves locked theirs (an older daemon may be writing it), or
/// one on a file system without locks. A save's longest pause without a write (checksum,
/// fsync of ~10 GB) is minutes, not an hour.
const UNLOCKED_MIN_AGE: Duration = Duration::from_secs(3600);

/// Remove the temporary files that saves killed half-way left in `dir`; returns what was
/// removed. A daemon sharing the cache directory may be saving right now, so a file is
/// removed only if its name is a temporary file's ([`TEMP_PREFIX`], or tempfile's default
/// `.tmpXXXXXX` that saves used before), it is a regular file, and its writer is gone: no
/// one holds its lock (a live save does; the kernel drops a killed one's) and it is older
/// than [`TEMP_MIN_AGE`]. Where the lock says nothing (an old name, a file system without
/// locks) only age decides, and it must be older than an hour. Failures are logged and
/// skipped: a leftover costs disk space, not correctness.
pub fn sweep_temp_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(legacy) = name.to_str().and_then(temp_name) else { continue };
        let path = entry.path();
        match sweep_one(&path, legacy) {
            Ok(false) => {}
            Ok(true) => {
                tracing::info!(path = %path.display(), "removed a PCE cache temporary file left by an interrupted save");
                removed.push(path);
            }
            // Another process's sweep got there first.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "could not sweep a PCE cache temporary file"),
        }
    }
    removed
}

/// Whether `name` is a save's temporary file: Some(true) for the name saves used before
/// they had [`TEMP_PREFIX`] (tempfile's default, `.tmp` and six letters or digits).
fn temp_name(name: &str) -> Option<bool> {
    if name.strip_prefix(TEMP_PREFIX).is_some_and(|rest| !rest.is_empty()) {
        return Some(false);
    }
    let rest = name.strip_prefix(".tmp")?;
    (rest.len() == 6 && rest.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(true)
}

/// Remove `path` if its writer is gone (see [`sweep_temp_files`]); whether it was removed.
fn sweep_one(path: &Path, legacy: bool) -> io::Result<bool> {
    // Not through a link, and not blocking on a FIFO: only a regular file of this directory.
    let file = File::options().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Ok(false);
    }
    let age = meta.modified()?.elapsed().unwrap_or(Duration::ZERO);
    if age < TEMP_MIN_AGE {
        return Ok(false);
    }
    // SAFETY: flock on a descriptor this function owns; the lock goes with it.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            return Ok(false); // a save in progress
        }
        if age < UNLOCKED_MIN_AGE {
            return Ok(false); // no locks here: age alone decides
        }
    } else if legacy && age < UNLOCKED_MIN_AGE {
        return Ok(false); // its writer never locked it
    }
    // Removed while we hold its lock, so no save can be resuming it.
    std::fs::remove_file(path)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;

    /// Issue #36 item 11a: a save killed half-way leaves its temporary file (gigabytes at
    /// 32 GiB); the next sweep removes it, and only it: not a cache file, not another file,
    /// not a temporary file another process is still writing.
    #[test]
    fn stale_temp_files_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        // Older than every threshold.
        let old = SystemTime::now() - 2 * UNLOCKED_MIN_AGE;
        let aged = |name: &str| {
            let p = dir.path().join(name);
            File::create(&p).unwrap().set_modified(old).unwrap();
            p
        };
        let real = aged("porep-32g.pce");
        let stale = aged(".pce-partial-AbC123");
        // What `save` left before it named its temporary files (tempfile's default names).
        let legacy = aged(".tmpAbC123");
        // Named as before, 10 minutes old: an older daemon, which does not lock, may still be
        // writing it.
        let legacy_recent = aged(".tmpXyZ789");
        File::options()
            .write(true)
            .open(&legacy_recent)
            .unwrap()
            .set_modified(SystemTime::now() - 5 * TEMP_MIN_AGE)
            .unwrap();
        let unrelated = [aged("notes.tmp"), aged(".tmp-not-ours"), aged("small.pce.bak")];
        // Another process's save in progress: old (its last write long ago) but locked.
        let busy = aged(".pce-partial-Busy12");
        let holder = File::open(&busy).unwrap();
        // SAFETY: flock on a descriptor we own.
        assert_eq!(unsafe { libc::flock(holder.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
        // A save that has just begun, not yet locked.
        let fresh = dir.path().join(".pce-partial-Fresh1");
        File::create(&fresh).unwrap();

        let mut removed = sweep_temp_files(dir.path());
        removed.sort();
        let mut want = vec![stale.clone(), legacy.clone()];
        want.sort();
        assert_eq!(removed, want);
        assert!(!stale.exists() && !legacy.exists());
        for kept in unrelated.iter().chain([&busy, &fresh, &real, &legacy_recent]) {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        drop(holder);
        // Once its writer is gone (killed: the lock goes with it), it is stale too.
        assert_eq!(sweep_temp_files(dir.path()), [busy]);
    }
}
