//! `cuzk-bench fixtures`: make (or find) the 2 KiB fixture set, printing each step.

use std::path::Path;
use std::time::Instant;

use cuzk_filecoin::fixtures::{make_fixture_set, Manifest};

pub fn run(dir: &Path) -> anyhow::Result<Manifest> {
    let start = Instant::now();
    let progress = |msg: &str| eprintln!("[fixtures {:>6.1}s] {msg}", start.elapsed().as_secs_f64());
    let manifest = make_fixture_set(dir, &progress)?;
    eprintln!(
        "[fixtures {:>6.1}s] ready in {} (parameters are INSECURE, for tests only)",
        start.elapsed().as_secs_f64(),
        dir.display()
    );
    Ok(manifest)
}
