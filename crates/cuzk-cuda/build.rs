//! Compiles cuzk's CUDA glue (cuda/*.cu) with nvcc when the `cuda` feature is on; does
//! nothing otherwise, so CPU-only builds need no CUDA toolchain.
//!
//! nvcc: $NVCC, else `nvcc` on PATH (scripts/install-cuda-toolchain.sh installs one from PyPI
//! and prints the environment). SASS targets: $CUZK_CUDA_ARCHS (comma-separated compute
//! capabilities), default 80,86,89,90,120 — A100, RTX 30xx/A-series, RTX 40xx/L40, H100/H200,
//! RTX 50xx/Blackwell workstation — plus PTX for the newest, so later GPUs can JIT it.
//! cudart is linked statically; $CUZK_CUDA_LIB (or <nvcc>/../lib) is added to the search path.
//!
//! The compiled targets are exported to the crate as `CUZK_CUDA_SASS` (the list, as given) and
//! `CUZK_CUDA_PTX` (the newest), and the CUDA release of the toolkit — whose runtime is the one
//! linked — as `CUZK_CUDA_RUNTIME` ("12.4"), all empty without the feature: `src/arch.rs`
//! refuses devices none of the targets runs on, `src/driver.rs` drivers too old for the
//! runtime, and the binaries' `--version` prints them.

use std::env;
use std::path::PathBuf;

const DEFAULT_ARCHS: &str = "80,86,89,90,120";
/// The default for nvcc before 12.8, which does not know sm_120.
const DEFAULT_ARCHS_BEFORE_12_8: &str = "80,86,89,90";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-env-changed=CUZK_CUDA_ARCHS");
    println!("cargo:rerun-if-env-changed=CUZK_CUDA_LIB");
    println!("cargo:rerun-if-env-changed=NVCC");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        // Nothing is compiled, so no target is claimed.
        println!("cargo:rustc-env=CUZK_CUDA_SASS=");
        println!("cargo:rustc-env=CUZK_CUDA_PTX=");
        println!("cargo:rustc-env=CUZK_CUDA_RUNTIME=");
        return;
    }
    let nvcc = env::var("NVCC").map(PathBuf::from).unwrap_or_else(|_| PathBuf::from("nvcc"));
    let version = match std::process::Command::new(&nvcc).arg("--version").output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => panic!(
            "cuzk-cuda: the `cuda` feature needs nvcc ({} not runnable). Install it with \
             `scripts/install-cuda-toolchain.sh` and `eval \"$(scripts/install-cuda-toolchain.sh --env)\"`.",
            nvcc.display()
        ),
    };
    let (major, minor) = nvcc_release(&version)
        .unwrap_or_else(|| panic!("cuzk-cuda: no \"release X.Y\" in `{} --version`:\n{version}", nvcc.display()));
    println!("cargo:rustc-env=CUZK_CUDA_RUNTIME={major}.{minor}");
    let sppark_root = env::var("DEP_SPPARK_ROOT").expect("sppark's build script exports its root");
    let blst_src = env::var("DEP_BLST_C_SRC").expect("blst's build script exports its C sources");
    let default = if (major, minor) >= (12, 8) { DEFAULT_ARCHS } else { DEFAULT_ARCHS_BEFORE_12_8 };
    let archs = env::var("CUZK_CUDA_ARCHS").unwrap_or_else(|_| default.into());
    let archs: Vec<&str> = archs.split(',').map(str::trim).filter(|a| !a.is_empty()).collect();
    assert!(!archs.is_empty(), "CUZK_CUDA_ARCHS lists no architecture");

    // cc-rs takes nvcc from $NVCC (or PATH) when `cuda(true)` is set. Each .cu is its own
    // library: cc-rs switches to relocatable device code when one build has several CUDA
    // files, and sppark's kernels (register-capped entry points calling big device
    // functions) do not device-link that way. Separate builds also compile in parallel.
    let adx = blst_uses_adx();
    // By number: "90a" (architecture-specific) counts as 90, not as 0.
    let newest = archs
        .iter()
        .max_by_key(|a| a.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse::<u32>().unwrap_or(0))
        .unwrap()
        .to_string();
    println!("cargo:rustc-env=CUZK_CUDA_SASS={}", archs.join(","));
    println!("cargo:rustc-env=CUZK_CUDA_PTX={newest}");
    // Clippy checks Rust and links nothing, so the device code is not compiled for it: in CI's
    // CUDA clippy step nvcc took ~3 of 2-core minutes to build libraries no one reads (the
    // builds before it compile the same files, and fail on what nvcc rejects). Cargo gives
    // clippy's runs their own build-script outputs, so a later build still compiles them.
    println!("cargo:rerun-if-env-changed=RUSTC_WORKSPACE_WRAPPER");
    if env::var("RUSTC_WORKSPACE_WRAPPER").is_ok_and(|w| w.contains("clippy-driver")) {
        return;
    }
    std::thread::scope(|scope| {
        for file in ["device", "ntt", "msm", "matvec", "setup", "transfer"] {
            let (sppark_root, blst_src, archs, newest) = (&sppark_root, &blst_src, &archs, &newest);
            scope.spawn(move || {
                let mut build = cc::Build::new();
                build
                    .cuda(true)
                    // cc-rs adds nvcc's -G (unoptimised device code) whenever Cargo asks for
                    // debug info, and sppark's warp-synchronous MSM kernels hang when built
                    // that way (seen on an H200). Device code is always built optimised.
                    .debug(false)
                    .include(sppark_root)
                    .include(blst_src)
                    .flag("-std=c++17")
                    .flag("-DFEATURE_BLS12_381")
                    // sppark then puts the CUDA error text into the RustError it returns.
                    .flag("-DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE")
                    .flag("-Xcompiler")
                    .flag("-Wno-subobject-linkage")
                    .flag("-Xcompiler")
                    .flag("-Wno-unused-parameter");
                if adx {
                    build.flag("-D__ADX__");
                }
                for arch in archs {
                    build.flag(format!("-gencode=arch=compute_{arch},code=sm_{arch}"));
                }
                build.flag(format!("-gencode=arch=compute_{newest},code=compute_{newest}"));
                build.file(format!("cuda/{file}.cu")).compile(&format!("cuzk_cuda_{file}"));
            });
        }
    });

    let lib_dir = env::var("CUZK_CUDA_LIB").map(PathBuf::from).unwrap_or_else(|_| {
        let nvcc_path = which(&nvcc).unwrap_or(nvcc.clone());
        // NVIDIA's installer (and the CUDA 12 tree of install-cuda-toolchain.sh) has lib64/, the
        // CUDA 13 wheels lib/.
        let root = nvcc_path.parent().and_then(|bin| bin.parent()).map(PathBuf::from).unwrap_or_default();
        ["lib", "lib64"]
            .iter()
            .map(|l| root.join(l))
            .find(|l| l.join("libcudart_static.a").is_file())
            .unwrap_or(root.join("lib"))
    });
    if lib_dir.is_dir() {
        println!("cargo:rustc-link-search=native={}", lib_dir.display());
    }
    println!("cargo:rustc-link-lib=static=cudart_static");
}

/// The CUDA release in `nvcc --version`'s "Cuda compilation tools, release 12.4, V12.4.131".
fn nvcc_release(version: &str) -> Option<(u32, u32)> {
    let rest = &version[version.find("release ")? + "release ".len()..];
    let (major, rest) = rest.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The absolute path of a bare command name, from PATH.
fn which(cmd: &PathBuf) -> Option<PathBuf> {
    if cmd.components().count() > 1 {
        return Some(cmd.clone());
    }
    env::split_paths(&env::var_os("PATH")?).map(|dir| dir.join(cmd)).find(|p| p.is_file())
}

/// Whether the blst crate was built with ADX instructions, by the same rule its build script
/// uses. sppark's host-side field code calls blst's Montgomery routines, which exist only in
/// the ADX (`mulx_*`) or only in the generic flavour, so the glue must pick the same one.
fn blst_uses_adx() -> bool {
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("x86_64") {
        return false;
    }
    if env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default().contains("target-cpu=") {
        return env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default().split(',').any(|f| f == "adx");
    }
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("adx")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
