#!/usr/bin/env bash
# Build the peer cuzk is benchmarked against (issues #6, #38): `cuzk-peer-c2`, filecoin-proofs'
# own PoRep C2 and PoSt provers with bellperson's SupraSeal CUDA prover (supraseal-c2), for a
# GPU machine with no Rust.
#
#   scripts/build-peer.sh [OUT_DIR]       (default: devcarry; needs the nvcc of install-cuda-toolchain.sh)
#
# PEER_CUDA_ARCH picks the GPU generation (default 90: H100/H200), PEER_CUDA_MAJOR the toolkit
# (13, the default, or 12), PEER_PROVER the prover: supraseal (the default: bellperson with
# SupraSeal, as Curio runs it) or gpu (bellperson's own CUDA prover, as Lotus runs without
# FFI_USE_CUDA_SUPRASEAL). Why each step:
# - storage-proofs-core's `cuda-supraseal` feature (the one filecoin-proofs' `cuda-supraseal`
#   turns on) also turns on bellperson's and neptune's `cuda` features, whose crates link the
#   CUDA *driver* library (libcuda.so.1) at build time. A machine without a GPU driver has no
#   libcuda, so we link against a stub that exports the same function names; at run time the
#   real driver library is loaded.
# - ec-gpu-gen compiles bellperson's/neptune's kernels with nvcc; its default targets include
#   architectures nvcc 13 no longer has, so EC_GPU_CUDA_NVCC_ARGS names ours.
# - supraseal-c2's build script asks nvcc for sm_80 code and no sm_90 (0.1.2's goes through
#   sppark's nvcc command, likewise); without sm_90 SASS the H200 would JIT-compile PTX on
#   first use. CXXFLAGS would also reach g++ (which rejects -gencode), so NVCC points at a
#   wrapper that adds our architecture.
# - supraseal-c2 0.1.1 on sppark 0.1.11, the pair Lotus ships (filecoin-ffi pins them after
#   lotus#13634: sppark 0.1.12 and later leak GPU memory under SupraSeal). The two supraseal-c2
#   versions carry the same CUDA sources; the workspace alone would resolve supraseal-c2 0.1.2
#   to its own sppark 0.1.16, which cuzk-cuda needs. One workspace holds one sppark 0.1.x, so
#   the peer builds from a copy of the sources (target/peer-src) whose manifest asks for 0.1.11.
#   (Neither pair, nor the pinned one built with nvcc 12.4, has returned a proof on our
#   H100s yet: BENCHMARKS.md, 2026-12-06.)
# The binary needs only the driver's libcuda.so.1 at run time (cudart is linked statically).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-devcarry}"
arch="${PEER_CUDA_ARCH:-90}"
# CUZK_CUDA_MAJOR, which picks cuzk's own build, does not change the peer's toolkit.
major="${PEER_CUDA_MAJOR:-13}"
prover="${PEER_PROVER:-supraseal}"
[[ $prover == supraseal || $prover == gpu ]] || { echo "PEER_PROVER: supraseal or gpu" >&2; exit 2; }
eval "$(scripts/install-cuda-toolchain.sh --cuda "$major" --env)"

# cuda-driver-sys searches <each CUDA_LIBRARY_PATH entry>/lib64/stubs, as in a CUDA install.
stub_dir="$CUDA_PATH/lib64/stubs"
if [[ ! -f $stub_dir/libcuda.so ]]; then
    mkdir -p "$stub_dir"
    bindings=$(cargo metadata --format-version 1 --all-features 2>/dev/null \
        | python3 -c 'import json,sys
m = json.load(sys.stdin)
print(next(p["manifest_path"] for p in m["packages"] if p["name"] == "cuda-driver-sys"))')
    bindings="$(dirname "$bindings")/src/cuda.rs"
    grep -o "pub fn cu[A-Za-z0-9_]*" "$bindings" | awk '{print "void " $3 "(void) {}"}' | sort -u > "$stub_dir/stub.c"
    cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$stub_dir/libcuda.so" "$stub_dir/stub.c"
fi

export CUDA_LIBRARY_PATH="$CUDA_PATH"
export EC_GPU_CUDA_NVCC_ARGS="--fatbin --gpu-architecture=sm_$arch --generate-code=arch=compute_$arch,code=sm_$arch"
printf '#!/bin/sh\nexec "%s" "$@" -gencode arch=compute_%s,code=sm_%s\n' "$NVCC" "$arch" "$arch" > "$stub_dir/nvcc-sm$arch"
chmod +x "$stub_dir/nvcc-sm$arch"
export NVCC="$stub_dir/nvcc-sm$arch"
root=$PWD
src=target/peer-src
# One target directory per toolkit and prover: objects nvcc made for one build must not link
# into another.
target=target/peer; [[ $major == 13 ]] || target=target/peer-cuda$major
[[ $prover == supraseal ]] || target=$target-$prover
rm -rf "$src" && mkdir -p "$src"
tar -cf - --exclude=./target --exclude=./.git --exclude='./dev*' . | tar -xf - -C "$src"
(
    cd "$src"
    sed -i 's/^sppark = { version = "[^"]*"/sppark = { version = "=0.1.11"/' Cargo.toml
    grep -q '^sppark = { version = "=0.1.11"' Cargo.toml || { echo "build-peer: no workspace sppark line to pin" >&2; exit 1; }
    cargo update -q -p supraseal-c2 --precise 0.1.1
    cargo update -q -p sppark --precise 0.1.11
    cargo build --release -p cuzk-peer --features "$prover" --target-dir "$root/$target"
)
mkdir -p "$out"
strip -o "$out/cuzk-peer-c2" "$target/release/cuzk-peer-c2"
ldd "$out/cuzk-peer-c2" || true
ls -la "$out"
