#!/usr/bin/env bash
# Why does filecoin-proofs + SupraSeal (cuzk-peer-c2) never return a proof on our H100s
# (BENCHMARKS.md 2026-12-06)? One small case, WinningPoSt 2 KiB on cuzk's generated INSECURE
# setup, three ways, each stopped after DEADLINE seconds (default 25):
#   traced   every kernel launch and synchronization named (kerneltrace, CUPTI injection);
#   eager    CUDA_MODULE_LOADING=EAGER: every kernel loaded at start. Lazy loading (the default
#            since CUDA 12.2) may need a context synchronization to load a kernel, which can
#            deadlock a program whose running kernels wait on one another;
#   blocking CUDA_LAUNCH_BLOCKING=1: no two kernels at once.
#
#   scripts/peer-hang.sh BIN_DIR     BIN_DIR: cuzk-bench, cuzk-peer-c2 (scripts/build-peer.sh),
#                                    libkerneltrace.so + libcupti.so.12 (scripts/build-kerneltrace.sh)
set -u
bin=$(realpath "$1"); work=${WORK:-/tmp/peer-hang}; out=${OUT:-$work/out}; deadline=${DEADLINE:-25}
mkdir -p "$work" "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$bin/cuzk-bench" gen-consistent --circuit winning-2k --seed 1 --out "$work/in" | tail -1
"$bin/cuzk-bench" gen-setup --circuit winning-2k --seed 1 --out "$work/params" --pce-dir "$work/pce" | tail -1
peer() { # name, then environment assignments
    local name=$1; shift
    local s=$SECONDS
    env CUDA_VISIBLE_DEVICES=0 RUST_LOG=info "$@" timeout "$deadline" "$bin/cuzk-peer-c2" --kind winning \
        --inputs "$work/in" --param-dir "$work/params" --runs 2 > "$out/$name.json" 2> "$out/$name.err"
    echo "== $name: rc $? after $((SECONDS - s)) s (124: stopped at the deadline)"
    grep -E "prover time|verif|error|panick" "$out/$name.err" | cut -c1-200 | head -4
}
peer traced CUDA_INJECTION64_PATH="$bin/libkerneltrace.so" LD_LIBRARY_PATH="$bin"
echo "-- traced: $(grep -c '^\[kt\] .* launch ' "$out/traced.err") launches; the last 25 trace lines:"
grep '^\[kt\]' "$out/traced.err" | tail -25 | cut -c1-260
echo "-- syncs entered and not returned, by thread:"
grep '^\[kt\]' "$out/traced.err" | awk '$4=="sync>" {open[$3]=$0} $4=="sync<" {delete open[$3]} END {for (t in open) print open[t]}'
peer eager CUDA_MODULE_LOADING=EAGER
peer blocking CUDA_LAUNCH_BLOCKING=1
