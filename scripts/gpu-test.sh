#!/usr/bin/env bash
# The whole GPU suite, on a machine with a CUDA GPU, from prebuilt binaries (build them with
# scripts/build-gpu-binaries.sh; the lent GPU machines have no Rust). Prints a pass/fail line
# per step and a summary; exits non-zero if anything failed.
#
#   scripts/gpu-test.sh [BIN_DIR] [WORK_DIR]      (defaults: devcarry, /tmp/cuzk-gpu-test)
#
# Steps:
#   1. the GPU unit tests (NTT, quotient, MSM G1/G2, device mat-vec, whole proofs on a
#      hand-made circuit, errors) against the CPU backend;
#   2. the 2 KiB fixture set (insecure test parameters generated here, deterministic seed);
#   3. `cuzk-bench gpu`: device mat-vec vs plain synthesis on the four real circuits, then all
#      four proof types on the GPU on each path, verified with filecoin-proofs;
#   4. the Grafana dashboard's metrics: every metric deploy/grafana/cuzk.json queries, the
#      per-device series included, on a CUDA daemon's /metrics after one proof of each kind
#      (and on a CPU daemon's, less those);
#   5. with 2+ GPUs: the daemon on every GPU (2 workers each) and 24 concurrent proofs, all
#      verified; both devices must have proved partitions.
set -u
bin=$(realpath "${1:-devcarry}")
work="${2:-/tmp/cuzk-gpu-test}"
mkdir -p "$work"
log_dir="${OUT:-$work}"
results=()
status=0

step() {
    local name="$1"; shift
    echo "=== $name"
    local t0=$SECONDS
    if "$@"; then
        results+=("PASS  $name ($((SECONDS - t0)) s)")
    else
        results+=("FAIL  $name ($((SECONDS - t0)) s)")
        status=1
    fi
}

nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader || true
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
# Which build is under test: its CUDA runtime (12 or 13) and GPU targets.
"$bin/cuzk-daemon" --version || true

step "GPU unit tests" "$bin/gpu-tests" --test-threads 1
step "2 KiB fixture set" "$bin/cuzk-bench" fixtures --fixtures "$work/fixtures"
step "GPU end to end (cuzk-bench gpu)" "$bin/cuzk-bench" gpu --fixtures "$work/fixtures" --runs "${GPU_RUNS:-2}"
step "Grafana dashboard's metrics on a CUDA daemon" env CUZK_DAEMON_BIN="$bin/cuzk-daemon" CUZK_FIXTURES="$work/fixtures" \
    "$bin/dashboard-tests" --test-threads 1

if [[ $ngpu -ge 2 ]]; then
    multi_gpu() {
        local sock="$work/cuzk.sock" cfg="$work/cuzk.toml"
        cat > "$cfg" <<TOML
[daemon]
listen = "unix://$sock"
[srs]
param_dir = "$work/fixtures/params"
[pipeline]
synthesis_workers = 8
[gpus]
backend = "cuda"
workers_per_device = 2
TOML
        "$bin/cuzk-daemon" --config "$cfg" > "$log_dir/daemon.log" 2>&1 &
        local pid=$!
        for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.2; done
        local ok=0
        "$bin/cuzk-bench" --addr "unix://$sock" batch --fixtures "$work/fixtures" --mix -c 24 -j 24 || ok=1
        "$bin/cuzk-bench" --addr "unix://$sock" status || ok=1
        "$bin/cuzk-bench" --addr "unix://$sock" metrics | grep "^cuzk_gpu_" | tee "$work/gpu-metrics.txt"
        for d in $(seq 0 $((ngpu - 1))); do
            local n
            n=$(grep "^cuzk_gpu_partitions_proved{device=\"$d\"}" "$work/gpu-metrics.txt" | awk '{print $2}')
            echo "device $d proved ${n:-0} partitions"
            [[ ${n:-0} -gt 0 ]] || ok=1
        done
        kill -TERM $pid; wait $pid || ok=1
        return $ok
    }
    step "multi-GPU daemon, 24 concurrent proofs" multi_gpu
else
    results+=("SKIP  multi-GPU daemon (this machine has $ngpu GPU)")
fi

echo "=== summary"
printf '%s\n' "${results[@]}"
exit $status
