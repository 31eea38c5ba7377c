#!/usr/bin/env bash
# Build the peer cuzk is benchmarked against (issues #6, #38): `cuzk-peer-c2`, filecoin-proofs'
# own PoRep C2 and PoSt provers with bellperson's SupraSeal CUDA prover (supraseal-c2), for a
# GPU machine with no Rust.
#
#   scripts/build-peer.sh [OUT_DIR]       (default: devcarry; needs the nvcc of install-cuda-toolchain.sh)
#
# PEER_CUDA_ARCH picks the GPU generation (default 90: H100/H200). Why each step:
# - storage-proofs-core's `cuda-supraseal` feature (the one filecoin-proofs' `cuda-supraseal`
#   turns on) also turns on bellperson's and neptune's `cuda` features, whose crates link the
#   CUDA *driver* library (libcuda.so.1) at build time. A machine without a GPU driver has no
#   libcuda, so we link against a stub that exports the same function names; at run time the
#   real driver library is loaded.
# - ec-gpu-gen compiles bellperson's/neptune's kernels with nvcc; its default targets include
#   architectures nvcc 13 no longer has, so EC_GPU_CUDA_NVCC_ARGS names ours.
# - supraseal-c2 compiles through sppark's nvcc command, which emits sm_80 code and no sm_90;
#   without sm_90 SASS the H200 would JIT-compile PTX on first use. CXXFLAGS would also reach
#   g++ (which rejects -gencode), so NVCC points at a wrapper that adds our architecture.
# The binary needs only the driver's libcuda.so.1 at run time (cudart is linked statically).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-devcarry}"
arch="${PEER_CUDA_ARCH:-90}"
# Always CUDA 13, the toolkit the peer has been measured with (CUZK_CUDA_MAJOR, which picks
# cuzk's own build, does not change the baseline).
eval "$(scripts/install-cuda-toolchain.sh --cuda 13 --env)"

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
cargo build --release -p cuzk-peer --features supraseal --target-dir target/peer
mkdir -p "$out"
strip -o "$out/cuzk-peer-c2" target/peer/release/cuzk-peer-c2
ldd "$out/cuzk-peer-c2" || true
ls -la "$out"
