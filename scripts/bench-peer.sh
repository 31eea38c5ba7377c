#!/usr/bin/env bash
# The peer side of the throughput benchmark (issue #6): filecoin-proofs' own PoRep C2 with
# bellperson's SupraSeal prover (`cuzk-peer-c2`, built by scripts/build-peer.sh), one process
# per proof and parameters read from disk each time — how Curio runs C2 without a daemon — on
# the same synthetic input as scripts/bench-throughput.sh (C1 from the same seed; parameters
# with the same sizes and points, written to disk by `cuzk-bench synthetic-params`).
#
#   scripts/bench-peer.sh BIN_DIR WORK_DIR SIZE RUNS
#   e.g. scripts/bench-peer.sh devcarry /tmp/peer 32GiB 2
#
# filecoin-proofs checks every proof before returning it; on synthetic data that check fails
# by construction, so each run ends in an error and its time is "up to and including the
# failed self-check" (the check itself takes milliseconds). bellperson logs the synthesis
# time and the GPU prover time of each run; both are printed.
#
# PEER_INPUTS=DIR (a `cuzk-bench gen-consistent` set of the same size) proves consistent
# inputs with the parameter file of cuzk's generated INSECURE setup (written by `gen-setup`
# into WORK_DIR/params unless one is there), so the proof can pass filecoin-proofs' own check.
#
# Environment: PEER_DEADLINE=S bounds each run; TP_CPUS=LIST pins it (taskset), as for cuzk;
# PEER_GPU=N picks the GPU (CUDA_VISIBLE_DEVICES for this separate process, set before it
# starts — the only way to choose a GPU for supraseal-c2, which always uses device 0..n).
set -u
bin=$(realpath "$1"); work=$2; size=$3; runs=$4
mkdir -p "$work/params" "$work/results"
res="$work/results"
case "$size" in
    2KiB|2k) circuit=porep-2k ;;
    512MiB|512m) circuit=porep-512m ;;
    32GiB|32g) circuit=porep-32g ;;
    64GiB|64g) circuit=porep-64g ;;
    *) echo "size: 2KiB, 512MiB, 32GiB or 64GiB" >&2; exit 2 ;;
esac
prover_id=()
if [[ -n ${PEER_INPUTS:-} ]]; then
    # Consistent inputs (a `gen-consistent` set) and the parameter file of cuzk's generated
    # INSECURE setup (`gen-setup`, same seed as the daemon's): seal_commit_phase2's own check
    # of the proof can pass, so the run ends in "ok" or in a real failure.
    c1="$PEER_INPUTS/c1-envelope.json"
    pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prover_id_hex"])' "$PEER_INPUTS/input-set.json") || exit 1
    prover_id=(--prover-id "$pid")
    t=$SECONDS
    if ! ls "$work/params/"*.params >/dev/null 2>&1; then
        "$bin/cuzk-bench" gen-setup --circuit "$circuit" --seed 1 --out "$work/params" --pce-dir "${PEER_PCE_DIR:-$work/params/pce}" | tail -2 || exit 1
    fi
    echo "parameters (cuzk's generated INSECURE setup, seed 1, as a .params file): $((SECONDS - t)) s"
else
    c1="$work/c1-$circuit.json"
    [[ -f $c1 ]] || "$bin/cuzk-bench" gen-synthetic --sector-size "$size" --seed 1 -o "$c1" > /dev/null || exit 1
    t=$SECONDS
    "$bin/cuzk-bench" synthetic-params --circuit "$circuit" --out "$work/params" --pce-dir "${PEER_PCE_DIR:-$work/params/pce}" || exit 1
    echo "setup (PCE shape + synthetic parameter file): $((SECONDS - t)) s"
fi
df -h "$work" | tail -1

smi=
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader,nounits -lms 500 > "$res/peer-nvidia-smi.csv" &
    smi=$!
fi
trap '[[ -n $smi ]] && kill $smi 2>/dev/null' EXIT
pin=()
[[ -n ${TP_CPUS:-} ]] && pin=(taskset -c "$TP_CPUS")
for i in $(seq "$runs"); do
    echo "=== peer run $i"
    s=$(date +%s.%N)
    # The peer's RSS and the host's MemAvailable (KiB, 0.5 s samples): a kill by the kernel's
    # OOM killer shows as RSS near the host's memory and MemAvailable near zero before it.
    ( while sleep 0.5; do p=$(pgrep -n -f "$bin/cuzk-peer-c2") || continue
        echo "$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null) $(awk '/^MemAvailable/ {print $2}' /proc/meminfo)"; done ) > "$res/peer-$i-rss.txt" 2>/dev/null &
    rss_pid=$!
    CUDA_VISIBLE_DEVICES="${PEER_GPU:-0}" RUST_LOG=info \
        timeout "${PEER_DEADLINE:-86400}" "${pin[@]}" "$bin/cuzk-peer-c2" --c1 "$c1" --param-dir "$work/params" "${prover_id[@]}" \
        > "$res/peer-$i.json" 2> "$res/peer-$i.log"
    rc=$?
    e=$(date +%s.%N)
    kill "$rss_pid" 2>/dev/null
    echo "exit $rc after $(python3 -c "print(f'{$e - $s:.1f}')") s"
    awk 'NF == 2 { if ($1 > rss) rss = $1; if (min == "" || $2 < min) min = $2 }
         END { if (rss) printf "peer RSS peak %.1f GiB; host MemAvailable low point %.1f GiB\n", rss / 2^20, min / 2^20 }' "$res/peer-$i-rss.txt"
    if [[ $rc == 137 ]]; then
        dmesg 2>/dev/null | grep -i -E "out of memory|oom-kill|killed process" | tail -3 || true
    fi
    cat "$res/peer-$i.json"
    grep -E "synthesis time|prover time|SupraSeal|read parameters|error|panicked" "$res/peer-$i.log" | cut -c1-300 | head -12
done
if [[ -n $smi ]]; then
    kill $smi 2>/dev/null; smi=
    python3 - "$res/peer-nvidia-smi.csv" <<'PY'
import sys
rows = [l.split(",") for l in open(sys.argv[1]) if l.strip()]
for g in sorted({r[0] for r in rows}):
    mine = [r for r in rows if r[0] == g]
    busy = sum(1 for r in mine if int(r[2]) > 0)
    print(f"device {g}: peak memory used {max(int(r[1]) for r in mine) / 1024:.1f} GiB; "
          f"utilisation > 0 in {100 * busy / len(mine):.0f} % of {len(mine)} samples (0.5 s) over the peer runs")
PY
fi
cp "$res"/peer-* "${OUT:-/nonexistent}/" 2>/dev/null || true
