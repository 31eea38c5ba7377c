#!/usr/bin/env bash
# Why does filecoin-proofs + SupraSeal (cuzk-peer-c2) never return a proof on our H100s
# (BENCHMARKS.md 2026-12-06)? One small case, WinningPoSt 2 KiB on cuzk's generated INSECURE
# setup, three ways, each stopped after DEADLINE seconds (default 25):
#   traced   every kernel launch and synchronization named (kerneltrace, CUPTI injection);
#   eager    CUDA_MODULE_LOADING=EAGER: every kernel loaded at start. Lazy loading (the default
#            since CUDA 12.2) may need a context synchronization to load a kernel, which can
#            deadlock a program whose running kernels wait on one another;
#   blocking CUDA_LAUNCH_BLOCKING=1: no two kernels at once.
# On an H100 (BENCHMARKS.md 2026-12-07) all three hung: the trace's last CUDA call returned and
# none followed, so the host waits on something of its own. At the deadline each run now
# records its threads (PROBE.threads: name, state, CPU ticks over one second, wait channel,
# system call; with gdb on the machine, every thread's backtrace too) before it is killed.
#
#   scripts/peer-hang.sh BIN_DIR     BIN_DIR: cuzk-bench, cuzk-peer-c2 (scripts/build-peer.sh),
#                                    libkerneltrace.so + libcupti.so.12 (scripts/build-kerneltrace.sh)
set -u
bin=$(realpath "$1"); work=${WORK:-/tmp/peer-hang}; out=${OUT:-$work/out}; deadline=${DEADLINE:-25}
mkdir -p "$work" "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$bin/cuzk-bench" gen-consistent --circuit winning-2k --seed 1 --out "$work/in" | tail -1
"$bin/cuzk-bench" gen-setup --circuit winning-2k --seed 1 --out "$work/params" --pce-dir "$work/pce" | tail -1
# The fields of /proc/PID/task/TID/stat after the name (which may hold spaces): state first,
# then utime and stime at 12 and 13.
stat_after_name() { sed 's/^.*) //' "$1/stat" 2>/dev/null; }
threads() { # pid: one line a thread; a thread that spins shows CPU ticks, one that waits none
    local pid=$1 t
    declare -A ticks
    for t in /proc/"$pid"/task/*; do ticks[$t]=$(stat_after_name "$t" | awk '{print $12 + $13}'); done
    sleep 1
    for t in /proc/"$pid"/task/*; do
        printf '%s %-18s state %s cpu_ticks_1s %s wchan %s syscall %s\n' "${t##*/}" "$(cat "$t/comm" 2>/dev/null)" \
            "$(stat_after_name "$t" | awk '{print $1}')" \
            "$(( $(stat_after_name "$t" | awk '{print $12 + $13}') - ${ticks[$t]:-0} ))" \
            "$(cat "$t/wchan" 2>/dev/null)" "$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
    done
    if command -v gdb > /dev/null; then
        timeout 60 gdb -p "$pid" -batch -ex "thread apply all bt 12" 2>&1 | grep -E "^Thread|^#"
    fi
}
peer() { # name, then environment assignments
    local name=$1; shift
    local s=$SECONDS rc
    env CUDA_VISIBLE_DEVICES=0 RUST_LOG=info "$@" "$bin/cuzk-peer-c2" --kind winning \
        --inputs "$work/in" --param-dir "$work/params" --runs 2 > "$out/$name.json" 2> "$out/$name.err" &
    local pid=$!
    while kill -0 "$pid" 2> /dev/null && (( SECONDS - s < deadline )); do sleep 1; done
    if kill -0 "$pid" 2> /dev/null; then
        threads "$pid" > "$out/$name.threads" 2>&1
        kill -9 "$pid"; wait "$pid" 2> /dev/null; rc=124
    else
        wait "$pid"; rc=$?
    fi
    echo "== $name: rc $rc after $((SECONDS - s)) s (124: stopped at the deadline)"
    grep -E "prover time|verif|error|panick" "$out/$name.err" | cut -c1-200 | head -4
    if [[ -f $out/$name.threads ]]; then
        echo "-- $name: $(grep -c ' state ' "$out/$name.threads") threads at the deadline; those on a CPU in the last second, then wait channels:"
        grep ' state ' "$out/$name.threads" | awk '$6 > 0' | head -20
        grep ' state ' "$out/$name.threads" | awk '{print $8}' | sort | uniq -c | sort -rn | head -8
    fi
}
peer traced CUDA_INJECTION64_PATH="$bin/libkerneltrace.so" LD_LIBRARY_PATH="$bin"
echo "-- traced: $(grep -c '^\[kt\] .* launch ' "$out/traced.err") launches; the last 25 trace lines:"
grep '^\[kt\]' "$out/traced.err" | tail -25 | cut -c1-260
echo "-- syncs entered and not returned, by thread:"
grep '^\[kt\]' "$out/traced.err" | awk '$4=="sync>" {open[$3]=$0} $4=="sync<" {delete open[$3]} END {for (t in open) print open[t]}'
peer eager CUDA_MODULE_LOADING=EAGER
peer blocking CUDA_LAUNCH_BLOCKING=1
