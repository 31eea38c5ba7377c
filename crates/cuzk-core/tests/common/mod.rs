//! Shared by the end-to-end tests: the 2 KiB fixture set (made once per machine, under a
//! file lock so parallel test binaries do not generate it twice) and one engine over it.

use std::path::PathBuf;
use std::sync::OnceLock;

use cuzk_core::{Config, Engine};
use cuzk_filecoin::fixtures::{shared_fixture_set, Manifest};

pub struct Fixture {
    pub dir: PathBuf,
    pub manifest: Manifest,
    #[allow(dead_code)] // not every test binary proves in-process
    pub engine: Engine,
}

pub fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (dir, manifest) = shared_fixture_set().expect("making the fixture set");
        let mut config = Config::default();
        config.srs.param_dir = dir.join("params");
        let engine = Engine::new(config).unwrap();
        Fixture { dir, manifest, engine }
    })
}

/// A scheduler over the fixture parameters with `budget_bytes` of memory (0 = the default).
#[allow(dead_code)] // not every test binary runs a scheduler
pub fn scheduler_with_budget(budget: u64) -> std::sync::Arc<cuzk_core::scheduler::Scheduler> {
    let mut config = Config::default();
    config.srs.param_dir = fixture().dir.join("params");
    config.memory.budget_bytes = budget;
    cuzk_core::scheduler::Scheduler::start(config, None).unwrap()
}
