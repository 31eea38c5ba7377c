//! The one typed configuration of cuzk. Parsed from TOML (unknown keys are errors), then
//! the few environment overrides are applied here and nowhere else:
//! `FIL_PROOFS_PARAMETER_CACHE` (parameter directory, the variable filecoin-proofs uses) and
//! `CUZK_DISABLE_PCE=1`.

use std::path::{Path, PathBuf};

use cuzk_groth16::SubgroupCheck;
use serde::{Deserialize, Serialize};

/// `gpus.srs_residency` and `gpus.b_g2` are the CUDA backend's own types, defined there once.
pub use cuzk_cuda::{B2Placement, Residency};

pub const DEFAULT_PARAM_DIR: &str = "/var/tmp/filecoin-proof-parameters";
/// The state directory used when `daemon.state_dir` is empty and it exists and is writable
/// (the package's unit creates it with `StateDirectory=cuzk`).
pub const DEFAULT_STATE_DIR: &str = "/var/lib/cuzk";

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub daemon: DaemonConfig,
    pub srs: SrsConfig,
    pub pipeline: PipelineConfig,
    pub memory: MemoryConfig,
    pub pce: PceConfig,
    pub gpus: GpuConfig,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonConfig {
    /// `unix:///path/to.sock` or `host:port`.
    pub listen: String,
    /// Address for HTTP `/metrics` and `/status`; empty disables it.
    pub http_listen: String,
    pub log_level: String,
    /// On SIGTERM, how long running jobs may take to finish before they are cancelled.
    pub shutdown_grace_secs: u64,
    /// How long finished jobs stay queryable (AwaitProof, duplicate request ids): from when
    /// they finished, or were last handed back for a resubmitted request id if later.
    pub job_retention_secs: u64,
    /// Largest gRPC message accepted or sent.
    pub max_message_bytes: usize,
    /// Submits decoded and split into partitions at once (each can briefly hold its message
    /// two or three times over: up to 256 MiB each); a submit that finds no slot within
    /// 10 s is RESOURCE_EXHAUSTED. Also how many SubmitProof/Prove messages are received, or
    /// received and waiting for a decoding slot, at once (a call waiting longer than 30 s to
    /// be let in is RESOURCE_EXHAUSTED with its message unread): at most twice this many
    /// large messages are in the daemon at once.
    pub max_concurrent_decodes: usize,
    /// Where the daemon keeps what it learns about the parameters (subgroup-check records,
    /// the PCE cache by default), so the parameter directory may be read-only. Empty: see
    /// [`Config::state_dir`].
    pub state_dir: PathBuf,
    /// Bearer token every gRPC call must carry (`authorization: Bearer <token>`); empty =
    /// none, which the daemon refuses on a TCP address (on loopback too, unless
    /// `allow_tokenless_loopback`).
    pub auth_token: String,
    /// Bearer token CancelProof, PreloadSRS and EvictSRS need; empty = they need what every
    /// other call needs.
    pub admin_token: String,
    /// Start on a loopback TCP address without `auth_token`. Off by default: on loopback
    /// every local user, and any container sharing the host's network, could submit, cancel
    /// and evict. A non-loopback address without a token is refused whatever this says.
    pub allow_tokenless_loopback: bool,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            listen: "unix:///run/cuzk/cuzk.sock".into(),
            http_listen: String::new(),
            log_level: "info".into(),
            // A 32 GiB PoRep takes 45 s on an H200 and minutes on smaller GPUs; 30 s cut
            // running proofs off at every restart (deploy/cuzk.service waits a little longer).
            shutdown_grace_secs: 300,
            job_retention_secs: 600,
            max_message_bytes: 256 << 20,
            max_concurrent_decodes: 4,
            state_dir: PathBuf::new(),
            auth_token: String::new(),
            admin_token: String::new(),
            allow_tokenless_loopback: false,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SrsConfig {
    /// Directory of `.params` / `.vk` files (filecoin-proofs' layout and names).
    pub param_dir: PathBuf,
    /// Subgroup checks of parameter points: "skip", "once" (remembered per file), "always".
    pub subgroup_check: SubgroupCheckSetting,
    /// Circuit ids to load at start (e.g. "porep-32g").
    pub preload: Vec<String>,
    /// BENCHMARKS ONLY. Circuit ids whose parameters are generated in memory — random points
    /// of exactly the circuit's sizes — instead of read from `param_dir`. Their proofs cannot
    /// verify; they are returned unverified and flagged (see `crate::synthetic`).
    pub synthetic: Vec<String>,
    /// TESTS AND BENCHMARKS ONLY. Circuit ids whose parameters come from cuzk's own INSECURE
    /// setup (`cuzk_pce::setup`), built in memory from the circuit's PCE matrices and
    /// `generated_seed` instead of read from `param_dir`. Proofs made with them are verified
    /// as usual and verify — against the generated key only, which anyone with the seed can
    /// forge against. Never set this on a prover whose proofs go on chain.
    pub generated: Vec<String>,
    /// Seed of the generated setup's trapdoor (`generated`); `cuzk-bench gen-setup --seed`
    /// with the same seed writes the same verifying key.
    pub generated_seed: u64,
}

impl Default for SrsConfig {
    fn default() -> Self {
        SrsConfig {
            param_dir: DEFAULT_PARAM_DIR.into(),
            subgroup_check: SubgroupCheckSetting::Once,
            preload: vec![],
            synthetic: vec![],
            generated: vec![],
            generated_seed: 0,
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SubgroupCheckSetting {
    Skip,
    Once,
    Always,
}

impl From<SubgroupCheckSetting> for SubgroupCheck {
    fn from(s: SubgroupCheckSetting) -> Self {
        match s {
            SubgroupCheckSetting::Skip => SubgroupCheck::Skip,
            SubgroupCheckSetting::Once => SubgroupCheck::Once,
            SubgroupCheckSetting::Always => SubgroupCheck::Always,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineConfig {
    /// Partitions synthesized at once (each holds its a/b/c and witness in memory); 0 = one
    /// per core less two, at least one ([`PipelineConfig::synthesis_worker_count`]). A
    /// partition's witness runs mostly on one core, so a 32 GiB PoRep with one worker waits
    /// for its ten partitions one after another (26–29 s on a 16-core H200 host, against
    /// ~21 s with 14).
    pub synthesis_workers: usize,
    /// Partitions proved at once per prover backend instance (CPU backend: one is best).
    pub prover_workers: usize,
    /// Jobs queued or running at once; a submit beyond it is RESOURCE_EXHAUSTED (bounds the
    /// decoded requests the daemon holds).
    pub max_queued_jobs: usize,
    /// Partitions of queued or running jobs at once; a submit that would pass it is
    /// RESOURCE_EXHAUSTED.
    pub max_queued_partitions: usize,
    /// The deadline lane: one more synthesis worker and one more prover worker per device
    /// that take all HIGH work (WindowPoSt), so it never waits for a worker busy with PoRep;
    /// and one more of each that take all CRITICAL work (WinningPoSt), so it never waits for
    /// one busy with a WindowPoSt partition. The general workers leave both to them. Each of them runs its
    /// parallel work on a private rayon pool, never queued behind the global pool's. Off: the
    /// general workers take everything.
    pub deadline_lane: bool,
    /// A job whose worker stays in one working stage (PCE load, synthesis, parameter load,
    /// prove, verify) this long without moving on is failed, so it cannot stay Running
    /// forever (scheduler watchdog); 0 = never.
    pub stall_timeout_secs: u64,
}

impl PipelineConfig {
    /// The synthesis workers to run: `synthesis_workers`, or for 0 the cores this process
    /// may use less two (one for the prover's host work, one for the daemon), at least one.
    /// Memory never limits this: each partition's working set is admitted by the budget.
    pub fn synthesis_worker_count(&self) -> usize {
        match self.synthesis_workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(2).max(1)),
            n => n,
        }
    }
}

impl Default for PipelineConfig {
    fn default() -> Self {
        // 256 jobs hold at most a few GB of decoded requests (a 32 GiB C1 is ~50 MB); 2560
        // partitions are 256 PoRep-32g jobs or a whole WindowPoSt deadline's worth and more.
        PipelineConfig {
            synthesis_workers: 0,
            prover_workers: 1,
            max_queued_jobs: 256,
            max_queued_partitions: 2560,
            deadline_lane: true,
            // 30 minutes: far beyond any one stage of a healthy 64 GiB proof (parameter load
            // with subgroup checks included), short enough that a hung job gets an answer.
            stall_timeout_secs: 1800,
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Bytes of host memory the daemon may reserve for everything it keeps: loaded
    /// parameters, PCE matrices and partition working sets. 0 = what is available at start
    /// (MemAvailable, or a cgroup limit's room if smaller) minus 5 % (at least 1 GiB).
    pub budget_bytes: u64,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PceConfig {
    /// Use pre-compiled constraint evaluation (matrices extracted on first use, cached on
    /// disk); false = plain synthesis.
    pub enabled: bool,
    /// Where extracted matrices are cached; empty = `<param_dir>/pce`.
    pub cache_dir: PathBuf,
}

impl Default for PceConfig {
    fn default() -> Self {
        PceConfig { enabled: true, cache_dir: PathBuf::new() }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GpuConfig {
    /// Prover backend: "cpu", "cuda", or "auto" (CUDA when built in and a device exists).
    pub backend: String,
    /// Device ordinals to use; empty = all visible devices.
    pub devices: Vec<u32>,
    pub workers_per_device: usize,
    /// Keep each circuit's parameters on every device ("auto": when the device has room).
    pub srs_residency: Residency,
    /// Where the G2 MSM (B in G2) runs.
    pub b_g2: B2Placement,
    /// With PCE, compute a = A·w, b = B·w, c = C·w on the device (matrices resident there),
    /// so a, b, c never occupy host memory.
    pub device_matvec: bool,
    /// Keep the host copy of parameters that every device holds resident. Off (the default),
    /// that copy is freed once the points are on the devices — 44 GiB for porep-32g — and a
    /// partition whose device attempt fails is retried on the device instead of the CPU.
    pub keep_host_params: bool,
    /// Keep the device memory that MSMs and a partition's own buffers free in the device's
    /// pool for the next partition instead of unmapping it (on by default). A 32 GiB PoRep
    /// partition holds an H100 1.62–1.63 s so, 1.75 s with it off (BENCHMARKS.md 2026-12-07,
    /// shared pool). The memory stays the daemon's (given back when an allocation outside the
    /// pool needs it), but `nvidia-smi` counts it as used and other processes cannot have it:
    /// turn it off where another program shares the GPU.
    pub retain_temporaries: bool,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            backend: "auto".into(),
            devices: vec![],
            workers_per_device: 2,
            srs_residency: Residency::Auto,
            b_g2: B2Placement::Gpu,
            device_matvec: true,
            keep_host_params: false,
            retain_temporaries: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("config: {0}")]
    Invalid(String),
}

impl Config {
    /// Parse TOML text.
    pub fn from_toml(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse { path: origin.into(), message: e.to_string() })
    }

    /// Load `path`; a missing file yields the defaults (the caller logs that).
    pub fn load(path: &Path) -> Result<(Config, bool), ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok((Self::from_toml(&text, path)?, true)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((Config::default(), false)),
            Err(source) => Err(ConfigError::Read { path: path.into(), source }),
        }
    }

    /// Apply the environment overrides (see module docs). `env` is injected for testing.
    pub fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) {
        // systemd's StateDirectory= exports the directory it made (a ':'-separated list when
        // the unit names several; ours names one).
        if self.daemon.state_dir.as_os_str().is_empty() {
            if let Some(dir) =
                env("STATE_DIRECTORY").and_then(|v| v.split(':').next().map(str::to_owned)).filter(|d| !d.is_empty())
            {
                self.daemon.state_dir = dir.into();
            }
        }
        if self.srs.param_dir == Path::new(DEFAULT_PARAM_DIR) {
            if let Some(dir) = env("FIL_PROOFS_PARAMETER_CACHE").filter(|d| !d.is_empty()) {
                self.srs.param_dir = dir.into();
            }
        }
        if env("CUZK_DISABLE_PCE").is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true")) {
            self.pce.enabled = false;
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.pipeline.prover_workers == 0 {
            return Err(ConfigError::Invalid("pipeline.prover_workers must be at least 1".into()));
        }
        if self.daemon.max_concurrent_decodes == 0 {
            return Err(ConfigError::Invalid("daemon.max_concurrent_decodes must be at least 1".into()));
        }
        if self.pipeline.max_queued_jobs == 0 || self.pipeline.max_queued_partitions == 0 {
            return Err(ConfigError::Invalid(
                "pipeline.max_queued_jobs and max_queued_partitions must be at least 1".into(),
            ));
        }
        if self.gpus.workers_per_device == 0 {
            return Err(ConfigError::Invalid("gpus.workers_per_device must be at least 1".into()));
        }
        if !["cpu", "cuda", "auto"].contains(&self.gpus.backend.as_str()) {
            return Err(ConfigError::Invalid(format!(
                "gpus.backend must be cpu, cuda or auto, not {:?}",
                self.gpus.backend
            )));
        }
        for id in &self.srs.preload {
            cuzk_filecoin::CircuitId::parse(id).map_err(|e| ConfigError::Invalid(format!("srs.preload: {e}")))?;
        }
        let synthetic = self.synthetic_circuits()?;
        for c in self.generated_circuits()? {
            if synthetic.contains(&c) {
                return Err(ConfigError::Invalid(format!("{c} is in both srs.synthetic and srs.generated; pick one")));
            }
        }
        Ok(())
    }

    /// The circuits `srs.generated` names.
    pub fn generated_circuits(&self) -> Result<Vec<cuzk_filecoin::CircuitId>, ConfigError> {
        self.srs
            .generated
            .iter()
            .map(|id| {
                cuzk_filecoin::CircuitId::parse(id).map_err(|e| ConfigError::Invalid(format!("srs.generated: {e}")))
            })
            .collect()
    }

    /// The circuits `srs.synthetic` names.
    pub fn synthetic_circuits(&self) -> Result<Vec<cuzk_filecoin::CircuitId>, ConfigError> {
        self.srs
            .synthetic
            .iter()
            .map(|id| {
                cuzk_filecoin::CircuitId::parse(id).map_err(|e| ConfigError::Invalid(format!("srs.synthetic: {e}")))
            })
            .collect()
    }

    /// The state directory: `daemon.state_dir` (or systemd's `STATE_DIRECTORY`, see
    /// `apply_env`); when neither is set, [`DEFAULT_STATE_DIR`] if it is a directory this
    /// process can write; otherwise none, and state goes where it went before there was a
    /// state directory (beside the parameters), which a read-only parameter directory
    /// turns into repeated work at every start (the daemon warns).
    pub fn state_dir(&self) -> Option<PathBuf> {
        if !self.daemon.state_dir.as_os_str().is_empty() {
            return Some(self.daemon.state_dir.clone());
        }
        let default = Path::new(DEFAULT_STATE_DIR);
        dir_writable(default).then(|| default.to_path_buf())
    }

    /// Where subgroup-check records are kept: `<state dir>/subgroup-checked`, or none
    /// (beside each parameter file).
    pub fn subgroup_record_dir(&self) -> Option<PathBuf> {
        self.state_dir().map(|d| d.join("subgroup-checked"))
    }

    /// `pce.cache_dir`, else `<state dir>/pce`, else `<param_dir>/pce`.
    pub fn pce_cache_dir(&self) -> PathBuf {
        if !self.pce.cache_dir.as_os_str().is_empty() {
            self.pce.cache_dir.clone()
        } else if let Some(state) = self.state_dir() {
            state.join("pce")
        } else {
            self.srs.param_dir.join("pce")
        }
    }
}

/// Whether `dir` is a directory this process can create files in. Tried, not computed from
/// mode bits: ACLs, read-only mounts and capabilities all decide it too.
pub fn dir_writable(dir: &Path) -> bool {
    if !dir.is_dir() {
        return false;
    }
    let probe = dir.join(format!(".cuzk-write-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => std::fs::remove_file(&probe).is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_errors() {
        let err = Config::from_toml("[srs]\nparam_dri = \"/x\"\n", Path::new("t.toml")).unwrap_err();
        assert!(err.to_string().contains("param_dri"), "{err}");
        let err = Config::from_toml("[nonsense]\n", Path::new("t.toml")).unwrap_err();
        assert!(err.to_string().contains("nonsense"), "{err}");
    }

    #[test]
    fn synthesis_workers_default_to_the_cores_less_two() {
        let c = Config::default();
        assert_eq!(c.pipeline.synthesis_workers, 0, "the shipped default is the automatic count");
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(c.pipeline.synthesis_worker_count(), cores.saturating_sub(2).max(1));
        c.validate().unwrap();
        let c = Config::from_toml("[pipeline]\nsynthesis_workers = 3\n", Path::new("t.toml")).unwrap();
        assert_eq!(c.pipeline.synthesis_worker_count(), 3);
        let c = Config::from_toml("[pipeline]\nprover_workers = 0\n", Path::new("t.toml")).unwrap();
        assert!(c.validate().is_err());
    }

    #[test]
    fn partial_files_keep_defaults_and_env_overrides_apply_once() {
        let mut c = Config::from_toml("[pipeline]\nsynthesis_workers = 3\n", Path::new("t.toml")).unwrap();
        assert_eq!(c.pipeline.synthesis_workers, 3);
        assert_eq!(c.srs.subgroup_check, SubgroupCheckSetting::Once);
        c.apply_env(|k| match k {
            "FIL_PROOFS_PARAMETER_CACHE" => Some("/p".into()),
            "CUZK_DISABLE_PCE" => Some("1".into()),
            _ => None,
        });
        assert_eq!(c.srs.param_dir, Path::new("/p"));
        assert!(!c.pce.enabled);
        if !dir_writable(Path::new(DEFAULT_STATE_DIR)) {
            assert_eq!(c.pce_cache_dir(), Path::new("/p/pce"));
        }
        c.validate().unwrap();
        // An explicitly configured directory wins over the environment.
        let mut d = Config::from_toml("[srs]\nparam_dir = \"/mine\"\n", Path::new("t.toml")).unwrap();
        d.apply_env(|_| Some("/p".into()));
        assert_eq!(d.srs.param_dir, Path::new("/mine"));
    }

    #[test]
    fn invalid_values_are_reported() {
        let c = Config::from_toml("[gpus]\nbackend = \"opencl\"\n", Path::new("t.toml")).unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("opencl"));
        let c = Config::from_toml("[srs]\npreload = [\"porep-3g\"]\n", Path::new("t.toml")).unwrap();
        assert!(c.validate().is_err());
        let c = Config::from_toml("[srs]\nsynthetic = [\"porep-32gb\"]\n", Path::new("t.toml")).unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("srs.synthetic"));
        let c = Config::from_toml("[srs]\nsynthetic = [\"porep-32g\", \"snap-64g\"]\n", Path::new("t.toml")).unwrap();
        assert_eq!(c.synthetic_circuits().unwrap().len(), 2);
        assert!(Config::from_toml("[srs]\nsubgroup_check = \"sometimes\"\n", Path::new("t.toml")).is_err());
    }

    #[test]
    fn state_dir_holds_records_and_the_pce_cache() {
        let mut c = Config::from_toml("[daemon]\nstate_dir = \"/st\"\n", Path::new("t.toml")).unwrap();
        c.apply_env(|k| (k == "STATE_DIRECTORY").then(|| "/from-systemd".into()));
        assert_eq!(c.state_dir().unwrap(), Path::new("/st"), "the file wins over the environment");
        assert_eq!(c.subgroup_record_dir().unwrap(), Path::new("/st/subgroup-checked"));
        assert_eq!(c.pce_cache_dir(), Path::new("/st/pce"));
        let mut d = Config::default();
        d.apply_env(|k| (k == "STATE_DIRECTORY").then(|| "/var/lib/cuzk:/var/lib/other".into()));
        assert_eq!(d.state_dir().unwrap(), Path::new("/var/lib/cuzk"));
        // An explicit PCE directory still wins.
        d.pce.cache_dir = "/pce".into();
        assert_eq!(d.pce_cache_dir(), Path::new("/pce"));
    }

    #[test]
    fn writable_dirs_are_told_apart() {
        let t = tempfile::tempdir().unwrap();
        assert!(dir_writable(t.path()));
        assert!(!dir_writable(&t.path().join("missing")));
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        // The temp dir belongs to our effective user: root writes into 0555 anyway, and the
        // probe says what this process can really do.
        let root = std::fs::metadata(t.path()).unwrap().uid() == 0;
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
        if !root {
            assert!(!dir_writable(t.path()));
        }
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(std::fs::read_dir(t.path()).unwrap().next().is_none(), "the probe leaves nothing behind");
    }
}
