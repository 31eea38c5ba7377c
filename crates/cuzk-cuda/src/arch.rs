//! Which GPUs this build's device code runs on, from the targets `build.rs` compiled the glue
//! for (`CUZK_CUDA_ARCHS`, default 80,86,89,90,120: SASS for each, plus PTX for the newest).
//!
//! A device no compiled target fits is found and listed by the CUDA runtime like any other,
//! then fails its first kernel launch with "no kernel image is available", mid-proof. The
//! device selection refuses such a device up front instead ([`check_device`]), naming its
//! compute capability and the targets, so an operator sees why at start.
//!
//! Pure logic, no CUDA: compiled and tested on every build (CI has no GPU).

/// The SASS targets the glue was compiled for, as `CUZK_CUDA_ARCHS` spells them ("80,86,...");
/// empty without the `cuda` feature, where nothing is compiled.
pub const SASS_TARGETS: &str = env!("CUZK_CUDA_SASS");
/// The PTX target embedded for the driver to JIT onto later GPUs (the newest SASS target);
/// empty without the `cuda` feature.
pub const PTX_TARGET: &str = env!("CUZK_CUDA_PTX");

/// One `CUZK_CUDA_ARCHS` entry: "86" is compute capability 8.6, "120" is 12.0; a suffix "a"
/// (e.g. "90a") is architecture-specific code, "f" family-specific.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Target {
    major: u32,
    minor: u32,
    /// "a": runs on exactly this compute capability, no other.
    specific: bool,
    /// "f": runs within its major version only, PTX included.
    family: bool,
}

impl Target {
    fn parse(s: &str) -> Option<Target> {
        let s = s.trim();
        let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let (number, suffix) = s.split_at(digits);
        if number.len() < 2 || !matches!(suffix, "" | "a" | "f") {
            return None;
        }
        let n: u32 = number.parse().ok()?;
        Some(Target { major: n / 10, minor: n % 10, specific: suffix == "a", family: suffix == "f" })
    }

    /// SASS is binary-compatible only within a major version, onto equal or later minors.
    fn sass_runs_on(self, (major, minor): (u32, u32)) -> bool {
        if self.specific {
            return (major, minor) == (self.major, self.minor);
        }
        major == self.major && minor >= self.minor
    }

    /// PTX is JIT-compiled by the driver onto any equal or later compute capability (of the
    /// same major version for family-specific PTX).
    fn ptx_runs_on(self, cc: (u32, u32)) -> bool {
        if self.specific || self.family {
            return self.sass_runs_on(cc);
        }
        cc >= (self.major, self.minor)
    }
}

/// Whether a device of compute capability `cc` (major, minor) can run device code compiled
/// for the comma-separated SASS targets `sass` plus the PTX target `ptx` (the compiled
/// defaults are [`SASS_TARGETS`] and [`PTX_TARGET`]). The error names the device's compute
/// capability and the targets, and what to rebuild with.
pub fn check_device(cc: (i32, i32), sass: &str, ptx: &str) -> Result<(), String> {
    let cc = (cc.0.max(0) as u32, cc.1.max(0) as u32);
    let sass_targets: Vec<Target> = sass.split(',').filter_map(Target::parse).collect();
    let ptx_target = Target::parse(ptx);
    if sass_targets.iter().any(|t| t.sass_runs_on(cc)) || ptx_target.is_some_and(|t| t.ptx_runs_on(cc)) {
        return Ok(());
    }
    let oldest = sass_targets.iter().map(|t| (t.major, t.minor)).min();
    let why = match oldest {
        None => "this build has no CUDA device code (built without the `cuda` feature?)".to_string(),
        Some(oldest) if cc < oldest => format!("older than the oldest compiled target, {}.{}", oldest.0, oldest.1),
        // Between or past the targets, but no SASS of its major version and no PTX it can JIT
        // (e.g. a 10.0 B200 with the defaults: sm_90 does not run on it, compute_120 is newer).
        Some(_) => "no compiled target runs on it".to_string(),
    };
    let ptx = if ptx.trim().is_empty() { "none".to_string() } else { format!("compute_{}", ptx.trim()) };
    Err(format!(
        "compute capability {}.{} is not supported by this build: {why} (SASS targets [{}], PTX {ptx}); \
         rebuild with CUZK_CUDA_ARCHS including {}{}",
        cc.0,
        cc.1,
        sass.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| format!("sm_{t}"))
            .collect::<Vec<_>>()
            .join(", "),
        cc.0,
        cc.1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT_SASS: &str = "80,86,89,90,120";
    const DEFAULT_PTX: &str = "120";

    #[test]
    fn targets_parse_as_compute_capabilities() {
        let t = |major, minor, specific, family| Some(Target { major, minor, specific, family });
        assert_eq!(Target::parse("86"), t(8, 6, false, false));
        assert_eq!(Target::parse(" 120 "), t(12, 0, false, false));
        assert_eq!(Target::parse("90a"), t(9, 0, true, false));
        assert_eq!(Target::parse("100f"), t(10, 0, false, true));
        for bad in ["", "8", "sm_80", "90x", "a90"] {
            assert_eq!(Target::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn devices_below_the_oldest_target_are_refused_naming_it_and_the_targets() {
        let e = check_device((7, 5), DEFAULT_SASS, DEFAULT_PTX).unwrap_err();
        assert!(e.contains("compute capability 7.5"), "{e}");
        assert!(e.contains("older than the oldest compiled target, 8.0"), "{e}");
        assert!(e.contains("sm_80, sm_86, sm_89, sm_90, sm_120") && e.contains("compute_120"), "{e}");
        assert!(e.contains("CUZK_CUDA_ARCHS including 75"), "{e}");
        // Only the targets actually compiled count: an 8.6 card with a 9.0-only build.
        let e = check_device((8, 6), "90", "90").unwrap_err();
        assert!(e.contains("compute capability 8.6") && e.contains("[sm_90]"), "{e}");
    }

    #[test]
    fn devices_a_compiled_target_runs_on_are_accepted() {
        // Exact SASS matches: A100, RTX 30xx, L40, H100/H200, RTX 50xx.
        for cc in [(8, 0), (8, 6), (8, 9), (9, 0), (12, 0)] {
            assert_eq!(check_device(cc, DEFAULT_SASS, DEFAULT_PTX), Ok(()), "{cc:?}");
        }
        // A later minor of a compiled major runs its SASS (8.7 on sm_86, 12.1 on sm_120).
        assert_eq!(check_device((8, 7), DEFAULT_SASS, DEFAULT_PTX), Ok(()));
        assert_eq!(check_device((12, 1), DEFAULT_SASS, DEFAULT_PTX), Ok(()));
        // A GPU newer than every target JITs the PTX.
        assert_eq!(check_device((13, 0), DEFAULT_SASS, DEFAULT_PTX), Ok(()));
        assert_eq!(check_device((10, 0), "80,90", "90"), Ok(()));
    }

    #[test]
    fn a_device_between_targets_without_sass_of_its_major_is_refused() {
        // SASS does not cross major versions and PTX does not JIT backwards: a 10.0 B200 runs
        // nothing of the default build although it is newer than the oldest target.
        let e = check_device((10, 0), DEFAULT_SASS, DEFAULT_PTX).unwrap_err();
        assert!(e.contains("compute capability 10.0") && e.contains("no compiled target runs on it"), "{e}");
        // Architecture-specific code runs on exactly its own compute capability.
        assert!(check_device((9, 0), "90a", "90a").is_ok());
        assert!(check_device((10, 0), "90a", "90a").is_err());
        // Family-specific code stays within its major version, PTX included.
        assert!(check_device((10, 3), "100f", "100f").is_ok());
        assert!(check_device((12, 0), "100f", "100f").is_err());
    }

    #[test]
    fn a_build_without_device_code_refuses_every_device() {
        let e = check_device((9, 0), "", "").unwrap_err();
        assert!(e.contains("no CUDA device code") && e.contains("PTX none"), "{e}");
    }
}
