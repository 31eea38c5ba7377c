#!/usr/bin/env bash
# The operator's host (issue #35): parameters from a `.params` file on disk, the shipped
# cuzk.example.toml with only the keys an operator must set, one GPU. Two phases, each well
# inside the device tool's ten minutes:
#
#   scripts/bench-operator.sh BIN_DIR prepare   consistent 32 GiB PoRep inputs, and cuzk's
#       generated INSECURE setup of porep-32g written as a 47 GB .params file (the ceremony
#       file's format) with its .vk; the subgroup-check record gen-setup leaves is deleted, so
#       the next start checks every point, as a first start on a ceremony file does.
#   scripts/bench-operator.sh BIN_DIR run       first start to READY (page cache dropped, no
#       record: every point subgroup-checked), peak RSS; a restart to READY (page cache
#       dropped, record present), peak RSS; then N PoRep proofs at concurrency J (defaults 3,
#       3), every one verified by the daemon and the first also by filecoin-proofs.
#
# OP_POST=1 also loads WindowPoSt and WinningPoSt 32 GiB (generated in the daemon; the H200
# host's disk holds one 47 GB file, not a second) after PoRep. WORK (default ./work) must be
# on disk; results go to $OUT when set (the device tool), else WORK/out.
set -u
bin=$(realpath "$1"); phase=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(realpath -m "${WORK:-work}")
out="${OUT:-$work/out}"
mkdir -p "$work/params" "$work/state" "$out"
inputs="$work/inputs-porep-32g"

case "$phase" in
prepare)
    df -h "$work" | tail -1
    t=$SECONDS
    [[ -f $inputs/input-set.json ]] || "$bin/cuzk-bench" gen-consistent --circuit porep-32g --seed 1 --out "$inputs" || exit 1
    echo "consistent inputs: $((SECONDS - t)) s"
    t=$SECONDS
    # The matrices go where the daemon's state directory keeps them (<state_dir>/pce).
    "$bin/cuzk-bench" gen-setup --circuit porep-32g --seed 1 --out "$work/params" --pce-dir "$work/state/pce" || exit 1
    echo "gen-setup (PCE matrices, setup, 47 GB file): $((SECONDS - t)) s"
    rm -f "$work/params/"*.cuzk-checked "$work/state/"*.cuzk-checked
    ls -la "$work/params" "$work/state/pce"
    df -h "$work" | tail -1
    ;;
run)
    n=${N:-3}; j=${J:-3}
    sock="$work/cuzk.sock"; port=$((20000 + RANDOM % 20000))
    circuits='"porep-32g"'
    generated='generated = []'
    [[ -n ${OP_POST:-} ]] && { circuits+=', "wpost-32g", "winning-32g"'; generated='generated = ["wpost-32g", "winning-32g"]'; }
    # The shipped example with only the operator's keys changed: paths, the device, preloads
    # (and, for the PoSt circuits the bench must generate, srs.generated and its seed).
    sed -e "s|^listen = .*|listen = \"unix://$sock\"|" \
        -e "s|^http_listen = .*|http_listen = \"127.0.0.1:$port\"|" \
        -e "s|^state_dir = .*|state_dir = \"$work/state\"|" \
        -e "s|^param_dir = .*|param_dir = \"$work/params\"|" \
        -e "s|^preload = .*|preload = [$circuits]|" \
        -e "s|^generated = .*|$generated|" \
        -e "s|^generated_seed = .*|generated_seed = 1|" \
        -e "s|^devices = .*|devices = [0]|" \
        "$here/../cuzk.example.toml" > "$work/cuzk.toml"
    diff "$here/../cuzk.example.toml" "$work/cuzk.toml" > "$out/config.diff"
    cat "$out/config.diff"
    daemon=
    stop_daemon() {
        [[ -n $daemon ]] || return 0
        kill "$daemon" 2>/dev/null
        for _ in $(seq 150); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$daemon" 2>/dev/null
        wait "$daemon" 2>/dev/null
        daemon=
    }
    trap stop_daemon EXIT
    # One start: page cache dropped, the daemon started, seconds to its READY line, VmHWM.
    start() { # NAME
        sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || echo "(could not drop the page cache)"
        rm -f "$sock"
        local t0; t0=$(date +%s.%N)
        "$bin/cuzk-daemon" --config "$work/cuzk.toml" > "$out/daemon-$1.log" 2>&1 &
        daemon=$!
        ( while kill -0 "$daemon" 2>/dev/null; do echo "$(date +%s.%N) $(awk '/^VmRSS/ {print $2}' "/proc/$daemon/status")"; sleep 0.5; done ) > "$out/rss-$1.txt" 2>/dev/null &
        for _ in $(seq 1200); do
            grep -q 'serving;' "$out/daemon-$1.log" 2>/dev/null && break
            kill -0 "$daemon" 2>/dev/null || { echo "daemon exited"; tail -30 "$out/daemon-$1.log"; exit 1; }
            sleep 0.25
        done
        local t1; t1=$(date +%s.%N)
        echo "$1: start to READY $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, peak RSS $(awk '/^VmHWM/ {printf "%.1f GiB", $2 / 1048576}' "/proc/$daemon/status"), RSS now $(awk '/^VmRSS/ {printf "%.1f GiB", $2 / 1048576}' "/proc/$daemon/status")"
        sed 's/\x1b\[[0-9;]*m//g' "$out/daemon-$1.log" | grep -E 'streamed|subgroup|resident|preloaded|ready|FAILED|ERROR' | cut -c1-300 | head -20
        nvidia-smi --query-gpu=memory.used --format=csv,noheader 2>/dev/null
    }
    start first
    stop_daemon
    start restart
    # Proofs: the first also checked by filecoin-proofs against the .vk beside the .params.
    t0=$(date +%s.%N)
    seq "$n" | xargs -P "$j" -I{} bash -c '
        v=(); [[ {} == 1 ]] && v=(--verify-dir "'"$work"'")
        "'"$bin"'/cuzk-bench" --addr "unix://'"$sock"'" single --consistent "'"$inputs"'" "${v[@]}" --request-id "op-{}" > "'"$out"'/proof-{}.log" 2>&1
        echo "proof {} done $(date +%s.%N) $(grep -c COMPLETED "'"$out"'/proof-{}.log") $(grep -c "filecoin-proofs verify.* valid" "'"$out"'/proof-{}.log")"'
    t1=$(date +%s.%N)
    echo "proofs: $n at J=$j in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; completed: $(grep -l COMPLETED "$out"/proof-*.log | wc -l) of $n"
    tail -5 "$out/proof-1.log"
    echo "daemon peak RSS (restart and proofs): $(awk '/^VmHWM/ {printf "%.1f GiB", $2 / 1048576}' "/proc/$daemon/status")"
    curl -s "127.0.0.1:$port/timeline.csv" > "$out/timeline.csv" 2>/dev/null
    ;;
*) echo "phase: prepare or run" >&2; exit 2 ;;
esac
