#!/usr/bin/env bash
# The 32 GiB PoRep C2 measurements of issue #6/#7, as run on the lent H200 machines (one
# command each, ≤ 10 minutes, nothing kept between calls). A 16-core, 1-GPU, 128 GB host is
# what the targets are stated for, so on a bigger host cuzk is pinned to 16 cores (TP_CPUS),
# one GPU, and a memory budget that fits 128 GB; the peer gets the same 16 cores and GPU.
#
#   scripts/bench-h200.sh BIN_DIR porep32  cuzk, verified: 32 GiB PoRep N=4 at J=2
#   scripts/bench-h200.sh BIN_DIR porep64  cuzk, verified: 64 GiB PoRep N=1
#   scripts/bench-h200.sh BIN_DIR post32   cuzk, verified: WinningPoSt 32 GiB (N=2), then a full
#                                          WindowPoSt 32 GiB partition (2349 sectors, N=1)
#   scripts/bench-h200.sh BIN_DIR wpost32  cuzk, verified: the WindowPoSt 32 GiB partition alone (N=1)
#   scripts/bench-h200.sh BIN_DIR snap32   cuzk, verified: SnapDeals 32 GiB (16 partitions, N=1)
#   scripts/bench-h200.sh BIN_DIR deadline32  WinningPoSt 32 GiB idle, then every 4 s beside a 32 GiB
#                                          PoRep stream (N=4, J=2): end-to-end latency, PoRep s/proof
#   scripts/bench-h200.sh BIN_DIR wdeadline32  WindowPoSt 32 GiB partitions (2349 sectors) idle, then
#                                          beside a 32 GiB PoRep stream (N=6, J=3)
#   scripts/bench-h200.sh BIN_DIR critical32  WinningPoSt 32 GiB idle, then beside a stream of
#                                          WindowPoSt 32 GiB partitions (2349 sectors; N=6, J=2)
#   scripts/bench-h200.sh BIN_DIR all32    WinningPoSt 32 GiB beside a streaming 32 GiB PoRep,
#                                          with WindowPoSt 32 GiB resident (preloaded first)
#   scripts/bench-h200.sh BIN_DIR ours     cuzk: one proof alone (N=1), then device mat-vec on
#                                          (N=5, J=3), then off (N=2, J=2)
#   scripts/bench-h200.sh BIN_DIR peer     filecoin-proofs + SupraSeal (1 run), then cuzk N=1, J=1
#                                          (synthetic inputs and parameters: nothing verifies)
#   scripts/bench-h200.sh BIN_DIR scale32  GPUS=2: the PoRep stream on 1 device (N1=8), then on
#                                          all GPUS (N=16, J=4), and the scaling ratio (issue #16)
#   scripts/bench-h200.sh BIN_DIR peer-params   consistent inputs of CIRCUIT and the generated setup
#                                          as a .params file, for vs-peer (run it just before)
#   scripts/bench-h200.sh BIN_DIR vs-peer  filecoin-proofs + SupraSeal, two verified proofs in one
#                                          process (the second counts; the first, load included,
#                                          beside it), the .params file deleted, then cuzk on the
#                                          same inputs and parameters, and the ratio
#
# CIRCUIT picks the peer workload (issue #38): porep-32g (default), porep-512m, winning-32g, or
# wpost-32g (one 2349-sector partition; TP_SECTORS changes the count). cuzk's side then runs
# N=3 at J=2 for PoRep, N=2 at J=1 for WinningPoSt and N=1 for WindowPoSt unless N and J say.
# The .params file is 47 GB for porep-32g and ~61 GB for wpost-32g: the H200 host's disk
# (~64 GiB free) holds the latter only alone, hence write (peer-params) -> peer -> delete ->
# cuzk, in that order. The circuit's PCE matrices (7 GiB for porep-32g) are saved beside it in
# WORK/tp/params/pce for cuzk's run; if the disk is short of room for both, PEER_PCE_DIR on a
# tmpfs (e.g. /dev/shm/pce) keeps them off it, and cuzk's daemon extracts its own copy later.
#
# Every cuzk run proves consistent inputs with parameters from cuzk's generated, INSECURE setup
# (built in the daemon at preload), so every proof is verified by the daemon and the first of
# each run by filecoin-proofs (see bench-throughput.sh); TP_INPUTS=synthetic restores the old
# random, unverifiable inputs. Each daemon start generates the setup again (minutes at 32 GiB).
#
# WORK (default ./work) must be on disk, not tmpfs: the peer's parameter file is 47–61 GB.
# SIZE and BACKEND (defaults 32GiB, cuda) exist to rehearse the script small, on a CPU.
set -u
bin=$(realpath "$1"); mode=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(realpath -m "${WORK:-work}")
out="${OUT:-$work/out}"
mkdir -p "$work" "$out"
export TP_CPUS="${TP_CPUS:-0-15}"
# GPU_KEYS adds keys to [gpus] for an A/B run (e.g. GPU_KEYS='retain_temporaries = false').
gpu_keys="devices = [0]${GPU_KEYS:+$'\n'$GPU_KEYS}"
# One budget for everything the daemon keeps: parameters (44 GiB host copy; 60 GB while a
# generated setup runs), PCE matrices (7 GiB) and working sets: 100 GiB of a 128 GB host.
cat > "$work/extra.toml" <<TOML
[pipeline]
synthesis_workers = 14
[memory]
budget_bytes = $((100 << 30))
TOML
echo "host: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; pinned to cores $TP_CPUS"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>/dev/null
df -h "$work" | tail -1

ours() { # name N J deadline [extra gpu keys] [circuit or size]
    local name=$1 n=$2 j=$3 deadline=$4 keys=${5:-} what=${6:-${SIZE:-32GiB}}
    echo "=== cuzk: $name $what (N=$n, J=$j, deadline ${deadline} s)"
    TP_DEADLINE=$deadline TP_GPUS="$gpu_keys${keys:+$'\n'$keys}" \
        bash "$here/bench-throughput.sh" "$bin" "$work/tp" "$what" "$n" "$j" "${BACKEND:-cuda}" "$work/extra.toml" 2>&1 | tee "$out/ours-$name.log"
    # The device tool returns few files: one archive per run.
    tar czf "$out/$name.tgz" -C "$work/tp/results" timeline.csv status.json metrics.txt daemon.log nvidia-smi.csv rss-load.txt 2>/dev/null
    rm -f "$work/tp/results/"{done-*,proof-*,timeline.csv,status.json,metrics.txt} "$out/"{timeline.csv,status.json,metrics.txt}
}

# The peer workload of peer-params and vs-peer; the inputs are where bench-throughput.sh looks.
peer_circuit=${CIRCUIT:-porep-32g}
case "$peer_circuit" in wpost-*) peer_sectors=${TP_SECTORS:-2349} ;; *) peer_sectors=1 ;; esac
peer_inputs="$work/tp/inputs-$peer_circuit-$peer_sectors"

case "$mode" in
    porep32) ours porep32 "${N:-4}" "${J:-2}" "${D0:-240}" "" 32GiB ;;
    porep64) ours porep64 "${N:-1}" "${J:-1}" "${D0:-240}" "" 64GiB ;;
    post32)
        ours winning32 2 1 "${D0:-60}" "" winning-32g
        TP_SECTORS=2349 ours wpost32 1 1 "${D1:-120}" "" wpost-32g
        ;;
    wpost32) TP_SECTORS=${TP_SECTORS:-2349} ours wpost32 1 1 "${D1:-120}" "" wpost-32g ;;
    snap32) ours snap32 "${N:-1}" "${J:-1}" "${D0:-240}" "" snap-32g ;;
    deadline32)
        # WinningPoSt 32 GiB proofs (CRITICAL) beside a 32 GiB PoRep stream, and on the idle
        # daemon before it.
        export TP_BESIDE=${TP_BESIDE:-winning-32g} TP_BESIDE_N=${TP_BESIDE_N:-12} TP_BESIDE_GAP=${TP_BESIDE_GAP:-4} \
            TP_BESIDE_DELAY=${TP_BESIDE_DELAY:-50}
        ours deadline32 "${N:-4}" "${J:-2}" "${D0:-300}" "" 32GiB
        ;;
    wdeadline32)
        # Full WindowPoSt 32 GiB partitions (2349 sectors, HIGH) beside a 32 GiB PoRep stream,
        # and on the idle daemon before it. WindowPoSt is preloaded first and stays resident;
        # PoRep's parameters then do not fit beside it with room to prove, and stream.
        export TP_BESIDE=wpost-32g TP_BESIDE_FIRST=1 TP_BESIDE_SECTORS=2349 TP_BESIDE_N=${TP_BESIDE_N:-3} TP_BESIDE_GAP=${TP_BESIDE_GAP:-15} \
            TP_BESIDE_DELAY=${TP_BESIDE_DELAY:-35} TP_BESIDE_IDLE=${TP_BESIDE_IDLE:-2}
        ours wdeadline32 "${N:-6}" "${J:-3}" "${D0:-240}" "" 32GiB
        ;;
    critical32)
        # WinningPoSt 32 GiB proofs (CRITICAL) beside back-to-back WindowPoSt 32 GiB partitions
        # (HIGH), as during a busy proving deadline, and on the idle daemon before it.
        export TP_BESIDE=winning-32g TP_BESIDE_N=${TP_BESIDE_N:-10} TP_BESIDE_GAP=${TP_BESIDE_GAP:-4} \
            TP_BESIDE_DELAY=${TP_BESIDE_DELAY:-25} TP_BESIDE_IDLE=${TP_BESIDE_IDLE:-3}
        TP_SECTORS=2349 ours critical32 "${N:-6}" "${J:-2}" "${D0:-200}" "" wpost-32g
        ;;
    all32)
        # All three circuits in one daemon: WindowPoSt 32 GiB preloaded first (resident), then
        # PoRep (its points then stream from host memory), and WinningPoSt proofs beside the
        # PoRep stream.
        export TP_PRELOAD_FIRST=wpost-32g TP_BESIDE=winning-32g TP_BESIDE_N=${TP_BESIDE_N:-12} TP_BESIDE_GAP=${TP_BESIDE_GAP:-4} \
            TP_BESIDE_DELAY=${TP_BESIDE_DELAY:-30} TP_BESIDE_IDLE=${TP_BESIDE_IDLE:-2}
        ours all32 "${N:-4}" "${J:-3}" "${D0:-200}" "" 32GiB
        ;;
    ours)
        ours single 1 1 "${D0:-110}"
        ours device-matvec 5 3 "${D1:-200}"
        ours host-matvec 2 2 "${D2:-130}" 'device_matvec = false'
        ;;
    scale32)
        # Issue #16 on a host with GPUS devices (default 2): the verified 32 GiB PoRep stream on
        # device 0 alone (N1 proofs), then on all of them (N proofs), every core of the host
        # for both (TP_CPUS unset), and the scaling ratio of the steady states.
        n_gpus=${GPUS:-2}
        export TP_CPUS="${SCALE_CPUS:-}"
        gpu_keys='devices = [0]'
        ours scale-1gpu "${N1:-8}" "${J1:-2}" "${D1:-250}" "" "${SIZE:-32GiB}"
        gpu_keys="devices = [$(seq -s ', ' 0 $((n_gpus - 1)))]"
        ours "scale-${n_gpus}gpu" "${N:-16}" "${J:-4}" "${D0:-280}" "" "${SIZE:-32GiB}"
        python3 - "$out/ours-scale-1gpu.log" "$out/ours-scale-${n_gpus}gpu.log" "$n_gpus" <<'PY'
import re, sys
def steady(path):
    m = re.findall(r"steady state ([0-9.]+) s/proof", open(path).read())
    return float(m[-1]) if m else None
one, many, n = steady(sys.argv[1]), steady(sys.argv[2]), int(sys.argv[3])
if one and many:
    print(f"scaling: {one:.2f} s/proof on 1 device, {many:.2f} s/proof on {n}: {one / many:.2f}x (ideal {n}x)")
else:
    print(f"scaling: no steady state in one of the runs (1 device: {one}, {n} devices: {many})")
PY
        ;;
    peer-params)
        # For vs-peer, on the same machine right after (nothing survives a returned machine):
        # CIRCUIT's consistent inputs (the set cuzk's run uses), and the generated setup as a
        # .params file for the peer.
        "$bin/cuzk-bench" gen-consistent --circuit "$peer_circuit" --sectors "$peer_sectors" --seed 1 --out "$peer_inputs" | tail -1
        t=$SECONDS
        mkdir -p "$work/peer/params-$peer_circuit"
        "$bin/cuzk-bench" gen-setup --circuit "$peer_circuit" --seed 1 --out "$work/peer/params-$peer_circuit" --pce-dir "${PEER_PCE_DIR:-$work/tp/params/pce}" 2>&1 | tail -3
        echo "generated setup written for the peer: $((SECONDS - t)) s"; ls -la "$work/peer/params-$peer_circuit"; df -h "$work" | tail -1
        ;;
    vs-peer)
        # The peer and cuzk in one command on the same consistent inputs and the same
        # generated parameters (seed 1): filecoin-proofs + SupraSeal first, PEER_RUNS (2) proofs
        # in one process, then cuzk. Every proof is checked (the peer's by filecoin-proofs, see
        # bench-peer.sh; the daemon's, and filecoin-proofs' verifier on cuzk's first).
        PEER_INPUTS="$peer_inputs" PEER_DEADLINE="${PEER_DEADLINE:-360}" PEER_PCE_DIR="${PEER_PCE_DIR:-$work/tp/params/pce}" \
            bash "$here/bench-peer.sh" "$bin" "$work/peer" "$peer_circuit" "${PEER_RUNS:-2}" 2>&1 | tee "$out/peer.log"
        # The disk cannot hold the peer's file and what cuzk's run writes (wpost-32g: ~61 GB of
        # ~64 GiB free); cuzk's daemon generates the same setup in memory.
        rm -f "$work/peer/params-$peer_circuit/"*.params
        case "$peer_circuit" in winning-*) n=2 j=1 ;; wpost-*) n=1 j=1 ;; *) n=3 j=2 ;; esac
        TP_SECTORS=$peer_sectors ours "vs-peer-$peer_circuit" "${N:-$n}" "${J:-$j}" "${D0:-130}" "" "$peer_circuit"
        python3 "$here/vs_peer_ratio.py" "$out/peer.log" "$out/ours-vs-peer-$peer_circuit.log"
        ;;
    peer)
        PEER_DEADLINE="${PEER_DEADLINE:-330}" PEER_PCE_DIR="$work/tp/params/pce" \
            bash "$here/bench-peer.sh" "$bin" "$work/peer" "${SIZE:-32GiB}" 1 2>&1 | tee "$out/peer.log"
        rm -f "$work/peer/params-"*/*.params   # 47 GB; cuzk's run below needs the disk, not the file
        ours single 1 1 "${D3:-150}"
        ;;
    *) echo "mode: porep32, porep64, post32, snap32, deadline32, wdeadline32, critical32, all32, scale32, ours, peer, peer-params or vs-peer" >&2; exit 2 ;;
esac
