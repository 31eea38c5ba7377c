#!/usr/bin/env bash
# Build the CUDA-enabled binaries and the GPU test binaries, stripped, into one folder that can
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
target="${CARGO_TARGET_DIR:-target}"
# The daemon in a cargo call of its own, and stripped at once: built beside cuzk-bench, cargo would
# unify their features and link cuzk-filecoin's fixtures into the daemon (the bench turns them on),
# and the test builds below rebuild it with its dev-dependencies' features.
cargo build --release -p cuzk-daemon --features cuzk-daemon/cuda
strip -o "$out/cuzk-daemon" "$target/release/cuzk-daemon"
cargo build --release -p cuzk-bench --features cuzk-bench/cuda
# The path of a test binary cargo built: PACKAGE's integration test TARGET, with the cuda feature.
test_binary() {
    cargo test --release -p "$1" --features cuda --test "$2" --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == sys.argv[1] and m.get("executable"):
        print(m["executable"])' "$2"
}
test_bin=$(test_binary cuzk-cuda gpu)
[[ -n "$test_bin" ]] || { echo "GPU test binary not found" >&2; exit 1; }
# The Grafana dashboard's metrics on a CUDA daemon (crates/cuzk-daemon/tests/grafana_dashboard.rs);
# it runs the carried cuzk-daemon (CUZK_DAEMON_BIN), not cargo's.
dashboard_bin=$(test_binary cuzk-daemon grafana_dashboard)
[[ -n "$dashboard_bin" ]] || { echo "dashboard test binary not found" >&2; exit 1; }
strip -o "$out/cuzk-bench" "$target/release/cuzk-bench"
strip -o "$out/gpu-tests" "$test_bin"
strip -o "$out/dashboard-tests" "$dashboard_bin"
# The binaries must be of the toolkit asked for (a stale build of the other would pass as it).
"$out/cuzk-daemon" --version | tee /dev/stderr | grep -q "cuda on (CUDA $major\\." ||
    { echo "$out/cuzk-daemon is not a CUDA $major build" >&2; exit 1; }
ls -la "$out"
