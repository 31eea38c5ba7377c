#!/usr/bin/env bash
# Build the CUDA-enabled binaries and the GPU test binary, stripped, into one folder that can
# be copied to a GPU machine with no Rust (scripts/gpu-test.sh runs them there).
#
#   scripts/build-gpu-binaries.sh [--cuda 13|12] [OUT_DIR]     (default: devcarry)
#
# --cuda (or CUZK_CUDA_MAJOR) picks the CUDA toolkit, as scripts/install-cuda-toolchain.sh
# does: 13 (default; binaries need NVIDIA driver 580+) or 12 (CUDA 12.4; driver 525.60.13+).
# `cuzk-daemon --version` in OUT_DIR says which. CUZK_CUDA_ARCHS limits the SASS targets
# (default: 80,86,89,90,120 with CUDA 13, 80,86,89,90 with CUDA 12.4, which has no Blackwell
# target); e.g. CUZK_CUDA_ARCHS=90 for an H100/H200-only build that compiles faster and is
# smaller.
set -euo pipefail
cd "$(dirname "$0")/.."
major="${CUZK_CUDA_MAJOR:-13}"
if [[ ${1:-} == --cuda ]]; then major="${2:?--cuda needs 12 or 13}"; shift 2; fi
out="${1:-devcarry}"
eval "$(scripts/install-cuda-toolchain.sh --cuda "$major" --env)"
mkdir -p "$out"
cargo build --release -p cuzk-bench -p cuzk-daemon --features cuzk-bench/cuda,cuzk-daemon/cuda
test_bin=$(cargo test --release -p cuzk-cuda --features cuda --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "gpu" and m.get("executable"):
        print(m["executable"])')
[[ -n "$test_bin" ]] || { echo "GPU test binary not found" >&2; exit 1; }
target="${CARGO_TARGET_DIR:-target}"
strip -o "$out/cuzk-bench" "$target/release/cuzk-bench"
strip -o "$out/cuzk-daemon" "$target/release/cuzk-daemon"
strip -o "$out/gpu-tests" "$test_bin"
# The binaries must be of the toolkit asked for (a stale build of the other would pass as it).
"$out/cuzk-daemon" --version | tee /dev/stderr | grep -q "cuda on (CUDA $major\." ||
    { echo "$out/cuzk-daemon is not a CUDA $major build" >&2; exit 1; }
ls -la "$out"
