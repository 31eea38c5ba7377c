//! `cuzk-bench fixtures`: make (or find) the 2 KiB fixture set, printing each step.

use std::path::Path;
use std::time::Instant;

use cuzk_filecoin::fixtures::{make_fixture_subset, Manifest};

pub fn run(dir: &Path) -> anyhow::Result<Manifest> {
    run_subset(dir, &["wpost-2k", "winning-2k", "snap-2k", "porep-2k"])
}

/// The fixture set with test parameters for `circuits` only (inputs for every type).
pub fn run_subset(dir: &Path, circuits: &[&str]) -> anyhow::Result<Manifest> {
    let start = Instant::now();
    let progress = |msg: &str| eprintln!("[fixtures {:>6.1}s] {msg}", start.elapsed().as_secs_f64());
    let manifest = make_fixture_subset(dir, circuits, &progress)?;
    eprintln!(
        "[fixtures {:>6.1}s] ready in {} (parameters are INSECURE, for tests only)",
        start.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(manifest)
}
