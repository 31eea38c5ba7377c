//! Build information for `--version`: the git commit a binary was built from, exported to the
//! crate as `CUZK_GIT_COMMIT`. Also cuzk-bench's build script (its build.rs includes this file
//! as a module), so both binaries report their commit the same way.
//!
//! The value is `git rev-parse --short HEAD`, plus "-dirty" when `git status --porcelain` lists
//! any change, or "unknown" when git or the repository is absent (a source tarball, a vendored
//! copy). Nothing here can fail the build.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let Some(dir) = env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        println!("cargo:rustc-env=CUZK_GIT_COMMIT=unknown");
        return;
    };
    println!("cargo:rustc-env=CUZK_GIT_COMMIT={}", commit(&dir));
    for path in watched(&dir) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

/// `git -C dir args…`'s trimmed output, or None if git is missing or the command failed.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok().map(|s| s.trim().to_string())
}

fn commit(dir: &Path) -> String {
    let Some(hash) = git(dir, &["rev-parse", "--short", "HEAD"]).filter(|h| !h.is_empty()) else {
        return "unknown".into();
    };
    // Untracked files count too: a build can include a new source file nobody committed.
    let dirty = git(dir, &["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{hash}-dirty")
    } else {
        hash
    }
}

/// What to rerun on: HEAD (a checkout), the ref it points to and packed-refs (a commit), the
/// index (staging, and git's own refreshes after edits), and the workspace's sources, so that
/// an edit anywhere in the workspace turns "-dirty" on without waiting for the index. Git paths
/// come from `git rev-parse --git-path`, which is right for worktrees too. Only existing files
/// are named: Cargo reruns a build script every time for a path that does not exist.
fn watched(dir: &Path) -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_string(), "index".to_string(), "packed-refs".to_string()];
    if let Some(head_ref) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        names.push(head_ref);
    }
    let mut paths: Vec<PathBuf> =
        names.iter().filter_map(|name| git(dir, &["rev-parse", "--git-path", name])).map(|p| dir.join(p)).collect();
    if !paths.is_empty() {
        // The workspace's source trees: this crate's siblings under crates/, and proto/ (not
        // the workspace root itself: target/ lives there and changes on every build).
        paths.push(dir.join(".."));
        paths.push(dir.join("../../proto"));
    }
    paths.retain(|p| p.exists());
    paths
}
