//! Shared by the end-to-end tests: the 2 KiB fixture set (made once per machine, under a
//! file lock so parallel test binaries do not generate it twice) and one engine over it.

use std::fs::File;
use std::path::PathBuf;
use std::sync::OnceLock;

use cuzk_core::{Config, Engine};
use cuzk_filecoin::fixtures::{make_fixture_set, Manifest, DEFAULT_FIXTURE_DIR};

pub struct Fixture {
    pub dir: PathBuf,
    pub manifest: Manifest,
    #[allow(dead_code)] // not every test binary proves in-process
    pub engine: Engine,
}

pub fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let dir = PathBuf::from(std::env::var("CUZK_FIXTURES").unwrap_or_else(|_| DEFAULT_FIXTURE_DIR.into()));
        std::fs::create_dir_all(&dir).unwrap();
        let lock = File::create(dir.with_extension("lock")).unwrap();
        lock.lock().unwrap();
        let manifest = make_fixture_set(&dir, &|m| eprintln!("[fixtures] {m}")).expect("making the fixture set");
        drop(lock);
        let mut config = Config::default();
        config.srs.param_dir = dir.join("params");
        let engine = Engine::new(config).unwrap();
        Fixture { dir, manifest, engine }
    })
}
