//! Whether the installed NVIDIA driver can run this build's CUDA runtime, and what to tell the
//! operator either way.
//!
//! The runtime (cudart) is linked statically, so its version is fixed at build time — CUDA 13
//! or CUDA 12, whichever toolkit compiled the glue (`build.rs` exports it). A driver older than
//! the runtime needs makes every CUDA call fail with "CUDA driver version is insufficient for
//! CUDA runtime version", which names neither version and reads like a broken GPU; the start
//! is refused instead, naming both and the minimum driver ([`check`]).
//!
//! The rule is NVIDIA's minor-version compatibility (CUDA 11 onwards): a runtime of major
//! version M runs on any driver of the same major release family or newer, i.e. any driver
//! whose supported CUDA version (`cudaDriverGetVersion`, 12080 for CUDA 12.8) has a major
//! version ≥ M. The driver versions that start each family are in [`min_driver`]. Within a
//! family a driver older than the runtime's minor runs the SASS but cannot JIT the newer PTX,
//! which only GPUs without SASS in this build need: a warning, not a refusal.
//!
//! Pure logic, no CUDA: compiled and tested on every build (CI has no GPU).

/// The CUDA toolkit release the glue was compiled with and whose runtime is linked, e.g.
/// "12.4"; empty without the `cuda` feature.
pub const RUNTIME: &str = env!("CUZK_CUDA_RUNTIME");

/// A CUDA version as the runtime API encodes it (1000 × major + 10 × minor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
}

impl CudaVersion {
    /// From `cudaRuntimeGetVersion`/`cudaDriverGetVersion`'s encoding: 12080 is 12.8.
    pub fn from_api(v: i32) -> CudaVersion {
        let v = v.max(0) as u32;
        CudaVersion { major: v / 1000, minor: (v % 1000) / 10 }
    }

    /// From "12.4" (what `build.rs` exports).
    pub fn parse(s: &str) -> Option<CudaVersion> {
        let (major, minor) = s.trim().split_once('.')?;
        Some(CudaVersion { major: major.parse().ok()?, minor: minor.parse().ok()? })
    }
}

impl std::fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The oldest Linux driver that runs a CUDA runtime of this major version (NVIDIA's CUDA
/// Toolkit release notes, "minimum required driver version for CUDA minor version
/// compatibility"): the first production driver of that major release family.
pub fn min_driver(runtime_major: u32) -> Option<&'static str> {
    match runtime_major {
        11 => Some("450.80.02"),
        12 => Some("525.60.13"),
        13 => Some("580.65.06"),
        _ => None,
    }
}

/// This build's runtime and its minimum driver, for `--version` and the start log:
/// "CUDA 12.4 runtime, driver >= 525.60.13"; empty without the `cuda` feature.
pub fn build_summary() -> String {
    match CudaVersion::parse(RUNTIME) {
        None => String::new(),
        Some(v) => match min_driver(v.major) {
            Some(d) => format!("CUDA {v} runtime, driver >= {d}"),
            None => format!("CUDA {v} runtime"),
        },
    }
}

/// Whether a driver that supports CUDA `driver` (the `cudaDriverGetVersion` value; 0 when no
/// driver is installed) can run the CUDA `runtime` this build links (`cudaRuntimeGetVersion`).
/// `Err` refuses, naming both versions and the minimum driver; `Ok(Some(_))` runs with a
/// warning (an older minor of the same major: no JIT of this build's newer PTX).
pub fn check(driver: i32, runtime: i32) -> Result<Option<String>, String> {
    let rt = CudaVersion::from_api(runtime);
    let need = match min_driver(rt.major) {
        Some(d) => format!("NVIDIA driver {d} or newer"),
        None => format!("an NVIDIA driver for CUDA {}.x", rt.major),
    };
    if driver <= 0 {
        return Err(format!(
            "no NVIDIA driver is installed (libcuda.so.1 not found); this build's CUDA {rt} runtime needs {need}"
        ));
    }
    let drv = CudaVersion::from_api(driver);
    if drv.major < rt.major {
        // The build that would run: CUDA 12 binaries need only a CUDA 12 driver.
        let other = if drv.major == 12 { "; or install the CUDA 12 build of cuzk (docs/operating.md)" } else { "" };
        return Err(format!(
            "the NVIDIA driver supports CUDA {drv}, but this build's CUDA {rt} runtime needs {need} \
             (a driver for CUDA {}.x): upgrade the driver{other}",
            rt.major
        ));
    }
    if drv.major == rt.major && drv.minor < rt.minor {
        return Ok(Some(format!(
            "the NVIDIA driver supports CUDA {drv}, older than this build's CUDA {rt} runtime: it runs under CUDA's \
             minor-version compatibility, but cannot JIT this build's PTX, so only GPUs with SASS in this build work"
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_decode_as_the_runtime_api_encodes_them() {
        assert_eq!(CudaVersion::from_api(12080), CudaVersion { major: 12, minor: 8 });
        assert_eq!(CudaVersion::from_api(13000).to_string(), "13.0");
        assert_eq!(CudaVersion::parse("12.4"), Some(CudaVersion { major: 12, minor: 4 }));
        assert_eq!(CudaVersion::parse(""), None);
        assert_eq!(CudaVersion::parse("12"), None);
    }

    #[test]
    fn a_driver_of_an_older_major_is_refused_naming_both_versions_and_the_minimum() {
        // A 570 driver (CUDA 12.8) and a CUDA 13.0 build.
        let e = check(12080, 13000).unwrap_err();
        assert!(e.contains("supports CUDA 12.8") && e.contains("CUDA 13.0 runtime"), "{e}");
        assert!(e.contains("580.65.06") && e.contains("CUDA 12 build"), "{e}");
        // A 470 driver (CUDA 11.4) and a CUDA 12.4 build: no other build to point to.
        let e = check(11040, 12040).unwrap_err();
        assert!(e.contains("supports CUDA 11.4") && e.contains("CUDA 12.4 runtime") && e.contains("525.60.13"), "{e}");
        assert!(!e.contains("CUDA 12 build"), "{e}");
    }

    #[test]
    fn no_driver_is_refused_naming_the_runtime() {
        let e = check(0, 12040).unwrap_err();
        assert!(e.contains("no NVIDIA driver") && e.contains("CUDA 12.4 runtime") && e.contains("525.60.13"), "{e}");
    }

    #[test]
    fn same_or_newer_drivers_run_and_an_older_minor_warns() {
        // The 525 driver (CUDA 12.0) runs a CUDA 12.4 build, warning about PTX.
        let w = check(12000, 12040).unwrap().expect("a warning");
        assert!(w.contains("CUDA 12.0") && w.contains("CUDA 12.4") && w.contains("PTX"), "{w}");
        // Equal, newer minor, newer major (backward compatibility): no word.
        assert_eq!(check(12040, 12040), Ok(None));
        assert_eq!(check(12080, 12040), Ok(None));
        assert_eq!(check(13000, 12040), Ok(None));
        assert_eq!(check(13020, 13000), Ok(None));
    }

    #[test]
    fn the_minimum_drivers_are_those_of_each_family() {
        assert_eq!(min_driver(12), Some("525.60.13"));
        assert_eq!(min_driver(13), Some("580.65.06"));
        assert_eq!(min_driver(10), None);
    }

    #[test]
    fn the_build_summary_names_the_runtime_and_its_minimum_driver() {
        let s = build_summary();
        if RUNTIME.is_empty() {
            assert_eq!(s, "");
        } else {
            assert!(s.starts_with(&format!("CUDA {RUNTIME} runtime, driver >= ")), "{s}");
        }
    }
}
