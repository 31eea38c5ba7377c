#!/usr/bin/env bash
# The peer side of the benchmarks (issues #6, #38): filecoin-proofs' own provers with
# bellperson's SupraSeal prover, or with bellperson's own CUDA prover (`cuzk-peer-c2`, built by
# scripts/build-peer.sh; PEER_PROVER=gpu for the latter; its JSON names which) — PoRep C2,
# WinningPoSt or one WindowPoSt partition, as Curio calls them without a daemon — on the same
# inputs and parameters as cuzk's run (scripts/bench-throughput.sh).
#
#   scripts/bench-peer.sh BIN_DIR WORK_DIR WORKLOAD RUNS
#   e.g. scripts/bench-peer.sh devcarry /tmp/peer 32GiB 2
#        PEER_INPUTS=/tmp/tp/inputs-wpost-32g-2349 scripts/bench-peer.sh devcarry /tmp/peer wpost-32g 2
#
# WORKLOAD: a PoRep size (2KiB, 512MiB, 32GiB, 64GiB) or a circuit id (porep-512m,
# winning-32g, wpost-32g; winning-2k and wpost-2k rehearse on a CPU). RUNS proofs are made
# one after another in ONE peer process (`--runs`): run 1 includes reading the parameters
# from disk; filecoin-proofs then keeps them in memory, so run 2 is the peer's time for one
# proof with parameters loaded — the figure set beside cuzk's preloaded daemon
# (scripts/vs_peer_ratio.py takes run 2 and reports run 1 beside it). Use RUNS=2 for a ratio.
#
# PEER_INPUTS=DIR (a `cuzk-bench gen-consistent` set of this circuit; for PoSt required, e.g.
# `--circuit wpost-32g --sectors 2349 --seed 1`, the set cuzk proves) proves consistent inputs
# with the parameter file of cuzk's generated INSECURE setup (seed 1, the daemon's), written by
# `gen-setup` into WORK_DIR/params-CIRCUIT unless a .params file is there. Every proof is
# then verified: PoRep by seal_commit_phase2's own check, PoSt by filecoin-proofs-api's
# verify_winning_post / verify_window_post (see crates/cuzk-peer). Without PEER_INPUTS (PoRep
# only) the C1 and parameters are synthetic (`gen-synthetic`, `synthetic-params`): the self-
# check fails by construction, and the time is "up to and including the failed self-check".
#
# Disk: the .params file is 47 GB at porep-32g and ~61 GB at wpost-32g, and the H200 host's
# disk (~64 GiB free) holds only the WindowPoSt one. So the phases on that host are, in this
# order: write the file (gen-setup) -> prove with the peer (this script) -> delete the file ->
# then cuzk (whose daemon generates the same setup in memory). scripts/bench-h200.sh's
# peer-params and vs-peer modes run them so; this script deletes nothing.
#
# Environment: PEER_DEADLINE=S bounds the peer process; TP_CPUS=LIST pins it (taskset), as for
# cuzk; PEER_GPU=N picks the GPU (CUDA_VISIBLE_DEVICES for this separate process, set before it
# starts — the only way to choose a GPU for supraseal-c2, which always uses device 0..n);
# PEER_PCE_DIR: where gen-setup finds or saves the circuit's PCE matrices.
set -u
bin=$(realpath "$1"); work=$2; workload=$3; runs=$4
res="$work/results"
mkdir -p "$res"
case "$workload" in
    2KiB|2k) circuit=porep-2k ;;
    512MiB|512m) circuit=porep-512m ;;
    32GiB|32g) circuit=porep-32g ;;
    64GiB|64g) circuit=porep-64g ;;
    porep-*|winning-*|wpost-*) circuit=$workload ;;
    *) echo "workload: 2KiB, 512MiB, 32GiB, 64GiB, or a circuit id (porep-512m, winning-32g, wpost-32g, …)" >&2; exit 2 ;;
esac
kind=${circuit%%-*}
params="$work/params-$circuit"
if [[ -n ${PEER_INPUTS:-} ]]; then
    [[ -f $PEER_INPUTS/input-set.json ]] || { echo "PEER_INPUTS=$PEER_INPUTS holds no input-set.json" >&2; exit 2; }
    set_circuit=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["circuit"])' "$PEER_INPUTS/input-set.json") || exit 1
    [[ $set_circuit == "$circuit" ]] || { echo "PEER_INPUTS holds a $set_circuit set, not $circuit" >&2; exit 2; }
    if [[ $kind == porep ]]; then
        pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["prover_id_hex"])' "$PEER_INPUTS/input-set.json") || exit 1
        input=(--c1 "$PEER_INPUTS/c1-envelope.json" --prover-id "$pid")
    else
        input=(--inputs "$PEER_INPUTS")
    fi
    mkdir -p "$params"
    t=$SECONDS
    if ! ls "$params/"*.params >/dev/null 2>&1; then
        "$bin/cuzk-bench" gen-setup --circuit "$circuit" --seed 1 --out "$params" --pce-dir "${PEER_PCE_DIR:-$params/pce}" | tail -2 || exit 1
    fi
    echo "parameters (cuzk's generated INSECURE setup, seed 1, as a .params file): $((SECONDS - t)) s"
else
    [[ $kind == porep ]] || { echo "$circuit: PoSt needs PEER_INPUTS=DIR (a gen-consistent set)" >&2; exit 2; }
    params="$params-synthetic"
    mkdir -p "$params"
    c1="$work/c1-$circuit.json"
    [[ -f $c1 ]] || "$bin/cuzk-bench" gen-synthetic --sector-size "${circuit#porep-}" --seed 1 -o "$c1" > /dev/null || exit 1
    input=(--c1 "$c1")
    t=$SECONDS
    "$bin/cuzk-bench" synthetic-params --circuit "$circuit" --out "$params" --pce-dir "${PEER_PCE_DIR:-$params/pce}" || exit 1
    echo "setup (PCE shape + synthetic parameter file): $((SECONDS - t)) s"
fi
ls -la "$params" | grep -E '\.params$' || true
df -h "$work" | tail -1

smi=
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader,nounits -lms 500 > "$res/peer-nvidia-smi.csv" &
    smi=$!
fi
trap '[[ -n $smi ]] && kill $smi 2>/dev/null' EXIT
pin=()
[[ -n ${TP_CPUS:-} ]] && pin=(taskset -c "$TP_CPUS")
echo "=== peer: $circuit, $runs proof(s) in one process (run 1 includes the parameter load)"
s=$(date +%s.%N)
# The peer's RSS and the host's MemAvailable (KiB, 0.5 s samples): a kill by the kernel's
# OOM killer shows as RSS near the host's memory and MemAvailable near zero before it.
( while sleep 0.5; do p=$(pgrep -n -f "$bin/cuzk-peer-c2") || continue
    echo "$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null) $(awk '/^MemAvailable/ {print $2}' /proc/meminfo)"; done ) > "$res/peer-rss.txt" 2>/dev/null &
rss_pid=$!
CUDA_VISIBLE_DEVICES="${PEER_GPU:-0}" RUST_LOG=info \
    timeout "${PEER_DEADLINE:-86400}" "${pin[@]}" "$bin/cuzk-peer-c2" --kind "$kind" "${input[@]}" --param-dir "$params" --runs "$runs" \
    > "$res/peer-runs.json" 2> "$res/peer-stderr.log"
rc=$?
e=$(date +%s.%N)
kill "$rss_pid" 2>/dev/null
echo "exit $rc after $(python3 -c "print(f'{$e - $s:.1f}')") s (the whole process: $runs run(s))"
awk 'NF == 2 { if ($1 > rss) rss = $1; if (min == "" || $2 < min) min = $2 }
     END { if (rss) printf "peer RSS peak %.1f GiB; host MemAvailable low point %.1f GiB\n", rss / 2^20, min / 2^20 }' "$res/peer-rss.txt"
if [[ $rc == 137 ]]; then
    dmesg 2>/dev/null | grep -i -E "out of memory|oom-kill|killed process" | tail -3 || true
fi
# One JSON line per finished run (a run killed mid-way leaves none), then a summary of each.
cat "$res/peer-runs.json"
python3 - "$res/peer-runs.json" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    load = "parameter load included" if r.get("includes_param_load") else "parameters loaded"
    split = f" (prove {r['prove_s']:.2f} s, verify {r['verify_s']:.3f} s)" if r.get("prove_s") is not None else ""
    rss = f"; peak RSS {r['peak_rss_bytes'] / 2**30:.1f} GiB" if r.get("peak_rss_bytes") else ""
    print(f"peer run {r['run']}: {r['wall_s']:.2f} s{split}, {load}{rss}: {r['result']}" + (f" — {r['error'][:300]}" if r.get("error") else ""))
PY
grep -E "synthesis time|prover time|SupraSeal|read parameters|working device|error|panicked" "$res/peer-stderr.log" | cut -c1-300 | head -16
if [[ -n $smi ]]; then
    kill $smi 2>/dev/null; smi=
    python3 - "$res/peer-nvidia-smi.csv" <<'PY'
import sys
rows = [l.split(",") for l in open(sys.argv[1]) if l.strip()]
for g in sorted({r[0] for r in rows}):
    mine = [r for r in rows if r[0] == g]
    busy = sum(1 for r in mine if int(r[2]) > 0)
    print(f"device {g}: peak memory used {max(int(r[1]) for r in mine) / 1024:.1f} GiB; "
          f"utilisation > 0 in {100 * busy / len(mine):.0f} % of {len(mine)} samples (0.5 s) over the peer's runs")
PY
fi
# Not peer.log: bench-h200.sh tees this script's own output there.
cp "$res"/peer-{runs.json,stderr.log,rss.txt,nvidia-smi.csv} "${OUT:-/nonexistent}/" 2>/dev/null || true
