#!/usr/bin/env bash
# Build the CUDA-enabled binaries and the GPU test binaries, stripped, into one folder that can
# be copied to a GPU machine with no Rust (scripts/gpu-test.sh runs them there).
#
#   scripts/build-gpu-binaries.sh [OUT_DIR]        (default: devcarry)
#
# CUZK_CUDA_ARCHS limits the SASS targets (default: 80,86,89,90,120); e.g. CUZK_CUDA_ARCHS=90
# for an H100/H200-only build that compiles faster and is smaller.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-devcarry}"
eval "$(scripts/install-cuda-toolchain.sh --env)"
mkdir -p "$out"
cargo build --release -p cuzk-bench -p cuzk-daemon --features cuzk-bench/cuda,cuzk-daemon/cuda
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
target="${CARGO_TARGET_DIR:-target}"
strip -o "$out/cuzk-bench" "$target/release/cuzk-bench"
strip -o "$out/cuzk-daemon" "$target/release/cuzk-daemon"
strip -o "$out/gpu-tests" "$test_bin"
strip -o "$out/dashboard-tests" "$dashboard_bin"
ls -la "$out"
