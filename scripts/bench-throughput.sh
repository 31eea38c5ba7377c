#!/usr/bin/env bash
# Throughput benchmark against a running cuzk-daemon, on inputs of the real shape: one command
# generates the inputs, starts the daemon, runs N proofs at concurrency J, and prints s/proof,
# first-proof latency, how many proofs verified, peak host RSS, peak device memory and GPU
# busy time; the per-partition timeline (synthesis, prover, device spans) is saved as CSV.
#
#   scripts/bench-throughput.sh BIN_DIR WORK_DIR SIZE|CIRCUIT N J [cpu|cuda] [EXTRA_TOML_FILE]
#   e.g. scripts/bench-throughput.sh devcarry /tmp/tp 32GiB 4 2 cuda        (PoRep 32 GiB)
#        TP_SECTORS=2349 scripts/bench-throughput.sh devcarry /tmp/tp wpost-32g 1 1 cuda
#
# By default the proofs VERIFY: the inputs are self-consistent sparse sectors
# (`cuzk-bench gen-consistent`, seed 1) and the daemon builds its parameters with cuzk's own
# INSECURE generated setup ([srs] generated, seed 1) from the circuit's PCE matrices, so every
# proof is checked by the daemon (COMPLETED) and the first one also by filecoin-proofs' own
# verifier against the generated verifying key (`cuzk-bench gen-setup --vk-only`).
# TP_INPUTS=synthetic switches to the old timing-only run (PoRep only): random C1 values and
# random parameters ([srs] synthetic), proofs reported UNVERIFIED.
#
# The script writes [daemon], [srs] and [gpus] itself; EXTRA_TOML_FILE may add other sections
# ([pipeline], [memory], …), and TP_GPUS may add keys to [gpus] (e.g. 'devices = [0]'). The PCE
# matrices are extracted on first use (a 32 GiB PoRep takes ~90 s and ~15 GB) and cached in
# WORK_DIR; the setup is generated in the daemon's memory at preload (its time is printed).
# Results go to WORK_DIR/results (and to $OUT when set, for the device tool).
#
# Environment: TP_DEADLINE=S stops waiting for proofs after S seconds (the figures are then
# over the proofs that finished; the device tool's commands have a hard time limit);
# TP_LOG_LEVEL=FILTER sets the daemon's log_level (e.g. "info,cuzk_cuda=debug" for the device
# lock's answers and each MSM's path).
# TP_CPUS=LIST pins the daemon to those cores (taskset), e.g. 0-15 to measure a 16-core host
# on a bigger one; TP_SECTORS=K sectors per PoSt partition (default 1).
#
# Deadline proofs beside the stream: TP_BESIDE=CIRCUIT (e.g. winning-32g, or wpost-32g with
# TP_BESIDE_SECTORS=2349; consistent inputs and generated parameters too, preloaded after the
# stream's circuit, or before it with TP_BESIDE_FIRST=1) sends TP_BESIDE_N proofs of it (default 10), one every TP_BESIDE_GAP s
# (default 5), the first TP_BESIDE_DELAY s (default 60) after the stream starts, each at its
# kind's default priority. Each one's end-to-end latency (the client's round trip: request
# out to verified proof back) is in results/beside.txt, summarised as p50/p99/max; the
# stream's per-partition figures leave those partitions out.
#
# TP_PRELOAD_FIRST="CIRCUIT ..." preloads those circuits (generated parameters) before anything
# else and proves none of them: an operator's srs.preload listing them first, so that they hold
# the device and the stream's parameters may have to stream (e.g. wpost-32g beside a PoRep).
set -u
bin=$(realpath "$1"); work=$2; size=$3; n=$4; j=$5; backend=${6:-cuda}; extra=${7:-}
mkdir -p "$work/params" "$work/results"
res="$work/results"
rm -f "$res"/done-* "$res"/proof-*.log
case "$size" in
    2KiB|2k) circuit=porep-2k; rp=5 ;;
    8MiB|8m) circuit=porep-8m; rp=6 ;;
    512MiB|512m) circuit=porep-512m; rp=7 ;;
    32GiB|32g) circuit=porep-32g; rp=8 ;;
    64GiB|64g) circuit=porep-64g; rp=9 ;;
    porep-*|winning-*|wpost-*|snap-*) circuit=$size ;;
    *) echo "size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB, or a circuit id (porep-32g, winning-32g, wpost-32g, snap-32g)" >&2; exit 2 ;;
esac
inputs=${TP_INPUTS:-consistent}
if [[ $inputs == synthetic ]]; then
    [[ $circuit == porep-* ]] || { echo "TP_INPUTS=synthetic is for PoRep only" >&2; exit 2; }
    c1="$work/c1-$circuit.json"
    [[ -f $c1 ]] || "$bin/cuzk-bench" gen-synthetic --sector-size "${circuit#porep-}" --seed 1 -o "$c1" || exit 1
    srs_keys="synthetic = [\"$circuit\"]"
else
    set_dir="$work/inputs-$circuit-${TP_SECTORS:-1}"
    t=$SECONDS
    [[ -f $set_dir/input-set.json ]] || "$bin/cuzk-bench" gen-consistent --circuit "$circuit" --sectors "${TP_SECTORS:-1}" --seed 1 --out "$set_dir" || exit 1
    echo "consistent inputs: $((SECONDS - t)) s"
    beside=${TP_BESIDE:-}
    if [[ -n $beside ]]; then
        beside_dir="$work/inputs-$beside-${TP_BESIDE_SECTORS:-1}"
        [[ -f $beside_dir/input-set.json ]] || "$bin/cuzk-bench" gen-consistent --circuit "$beside" --sectors "${TP_BESIDE_SECTORS:-1}" --seed 1 --out "$beside_dir" || exit 1
    fi
    first_keys=""
    for c in ${TP_PRELOAD_FIRST:-}; do first_keys+=", \"$c\""; done
    srs_keys="generated = [\"$circuit\"${beside:+, \"$beside\"}$first_keys]
generated_seed = 1"
fi

sock="$work/cuzk.sock"; port=$((20000 + RANDOM % 20000))
cat > "$work/cuzk.toml" <<TOML
[daemon]
listen = "unix://$sock"
http_listen = "127.0.0.1:$port"
# Proofs still running when the benchmark ends are abandoned, not waited for.
shutdown_grace_secs = 1
${TP_LOG_LEVEL:+log_level = \"$TP_LOG_LEVEL\"}
[srs]
param_dir = "$work/params"
$srs_keys
[gpus]
backend = "$backend"
${TP_GPUS:-}
TOML
[[ -n $extra ]] && cat "$extra" >> "$work/cuzk.toml"

pin=()
[[ -n ${TP_CPUS:-} ]] && pin=(taskset -c "$TP_CPUS")
rm -f "$sock"   # a socket left by an earlier run must not pass for this daemon's
"${pin[@]}" "$bin/cuzk-daemon" --config "$work/cuzk.toml" > "$res/daemon.log" 2>&1 &
daemon=$!
# On exit: stop the daemon and wait until it is gone, so that the next run on this machine
# finds its memory (host and GPU) and its socket free.
stop_daemon() {
    kill "$daemon" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$daemon" 2>/dev/null
    wait "$daemon" 2>/dev/null
    [[ -n ${smi:-} ]] && kill "$smi" 2>/dev/null
}
trap stop_daemon EXIT
smi=
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader,nounits -lms 500 > "$res/nvidia-smi.csv" &
    smi=$!
fi
for _ in $(seq 300); do [[ -S $sock ]] && break; kill -0 "$daemon" 2>/dev/null || break; sleep 0.2; done
[[ -S $sock ]] || { echo "daemon did not start"; tail -20 "$res/daemon.log"; exit 1; }

# Parameters (and PCE matrices) before the clock starts: preload waits for them. The daemon's
# RSS while they load ("seconds since the preload began, KiB"), to see which step sets the peak.
t=$SECONDS
( while kill -0 "$daemon" 2>/dev/null; do echo "$((SECONDS - t)) $(awk '/^VmRSS/ {print $2}' "/proc/$daemon/status")"; sleep 0.5; done ) > "$res/rss-load.txt" 2>/dev/null &
load_rss_pid=$!
preload_beside() {
    local t=$SECONDS
    "$bin/cuzk-bench" --addr "unix://$sock" preload "$beside" || { tail -20 "$res/daemon.log"; exit 1; }
    echo "preload of $beside (deadline proofs beside the stream): $((SECONDS - t)) s"
}
for c in ${TP_PRELOAD_FIRST:-}; do
    t=$SECONDS
    "$bin/cuzk-bench" --addr "unix://$sock" preload "$c" || { tail -20 "$res/daemon.log"; exit 1; }
    echo "preload of $c (first; no proofs of it): $((SECONDS - t)) s"
done
# TP_BESIDE_FIRST=1: the deadline circuit first, as an operator's srs.preload lists it, so it
# is the one whose parameters stay resident when a device cannot hold both with room to prove.
[[ -n ${beside:-} && -n ${TP_BESIDE_FIRST:-} ]] && preload_beside
t=$SECONDS
"$bin/cuzk-bench" --addr "unix://$sock" preload "$circuit" || { tail -20 "$res/daemon.log"; exit 1; }
echo "preload (PCE matrices + $inputs parameters): $((SECONDS - t)) s"
[[ -n ${beside:-} && -z ${TP_BESIDE_FIRST:-} ]] && preload_beside
grep -ho 'setup: [A-Za-z ,]*[^ ]* secs=[0-9.]*\|circuit=[^ ]* secs=[0-9.]* setup: QAP[^ ]*' "$res/daemon.log" 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' | head -5
# The generated verifying key, for filecoin-proofs' own verifier (seconds: no setup needed).
if [[ $inputs != synthetic ]]; then
    "$bin/cuzk-bench" gen-setup --circuit "$circuit" --seed 1 --vk-only --out "$work/verify/params" --pce-dir "$work/params/pce" \
        | tail -1 || exit 1
    if [[ -n ${beside:-} ]]; then
        "$bin/cuzk-bench" gen-setup --circuit "$beside" --seed 1 --vk-only --out "$work/verify/params" --pce-dir "$work/params/pce" \
            | tail -1 || exit 1
    fi
fi

# CPU time of the daemon (all threads, user + system, in clock ticks) around the proofs.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$daemon/stat"; }
cpu0=$(cpu_ticks)
start=$(date +%s.%N)
# One proof: `prove-one.sh I` (proof 1 is also checked with filecoin-proofs' verifier when
# the inputs are consistent).
cat > "$work/prove-one.sh" <<SH
#!/usr/bin/env bash
i=\$1
v=()
[[ \$i == 1 && $inputs != synthetic ]] && v=(--verify-dir "$work/verify")
if [[ $inputs == synthetic ]]; then
    args=(--kind porep --registered-proof ${rp:-0} --sector-number "\$i" --c1 "${c1:-}")
else
    args=(--consistent "${set_dir:-}")
fi
"$bin/cuzk-bench" --addr "unix://$sock" single "\${args[@]}" "\${v[@]}" --request-id "tp-\$i" > "$res/proof-\$i.log" 2>&1
date +%s.%N > "$res/done-\$i"
SH
rm -f "$res/beside.txt" "$res/beside-idle.txt" "$res"/beside-*.log   # a run lists only its own deadline proofs
# One deadline proof; "name seconds verdict wall" appended to FILE. seconds is the client's own
# round trip, from just before the request goes out to the verified proof back; wall also
# counts reading the inputs from disk and, for the first, filecoin-proofs' check in the client.
beside_one() { # NAME FILE
    local v=() t0 t1 verdict rt wall
    [[ $1 == 1 ]] && v=(--verify-dir "$work/verify")
    t0=$(date +%s.%N)
    "$bin/cuzk-bench" --addr "unix://$sock" single --consistent "$beside_dir" --request-id "beside-$1" "${v[@]}" > "$res/beside-$1.log" 2>&1
    t1=$(date +%s.%N)
    verdict=$(grep -q COMPLETED "$res/beside-$1.log" && echo COMPLETED || echo FAILED)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    rt=$(grep -o 'client round-trip[^0-9]*[0-9.]* s' "$res/beside-$1.log" | grep -o '[0-9.]* s' | tr -d ' s')
    echo "$1 ${rt:-$wall} $verdict $wall" >> "$2"
}
beside_loop() { # one deadline proof every TP_BESIDE_GAP s
    sleep "${TP_BESIDE_DELAY:-60}"
    for i in $(seq "${TP_BESIDE_N:-10}"); do
        beside_one "$i" "$res/beside.txt"
        sleep "${TP_BESIDE_GAP:-5}"
    done
}
# The same proofs on an idle daemon first, for comparison.
if [[ -n ${beside:-} ]]; then
    for i in $(seq "${TP_BESIDE_IDLE:-3}"); do beside_one "idle-$i" "$res/beside-idle.txt"; done
fi
# The daemon's RSS while the proofs run (0.5 s samples): the load of the parameters, before
# the clock, has its own peak (VmHWM, printed as "daemon peak RSS").
kill "$load_rss_pid" 2>/dev/null
( while kill -0 "$daemon" 2>/dev/null; do awk '/^VmRSS/ {print $2}' "/proc/$daemon/status"; sleep 0.5; done ) > "$res/rss-kib.txt" 2>/dev/null &
rss_pid=$!
beside_pid=
[[ -n ${beside:-} ]] && { beside_loop & beside_pid=$!; }
timeout "${TP_DEADLINE:-86400}" sh -c "seq '$n' | xargs -P '$j' -I{} bash '$work/prove-one.sh' {}" \
    || echo "proof phase stopped after ${TP_DEADLINE:-?} s (TP_DEADLINE); figures below cover the proofs that finished"
end=$(date +%s.%N)
kill "$rss_pid" 2>/dev/null
[[ -n $beside_pid ]] && { kill "$beside_pid" 2>/dev/null; wait "$beside_pid" 2>/dev/null; }
cpu1=$(cpu_ticks)

curl_get() { exec 3<>"/dev/tcp/127.0.0.1/$port"; printf 'GET %s HTTP/1.0\r\n\r\n' "$1" >&3; sed '1,/^\r$/d' <&3; exec 3<&-; }
curl_get /timeline.csv > "$res/timeline.csv"
curl_get /status > "$res/status.json"
curl_get /metrics > "$res/metrics.txt"

python3 - "$res" "$n" "$start" "$end" "$cpu0" "$cpu1" "$(getconf CLK_TCK)" <<'PY'
import glob, json, sys
res, n, start, end = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
cpu = (int(sys.argv[6]) - int(sys.argv[5])) / int(sys.argv[7])
done = sorted(float(open(f).read()) for f in glob.glob(f"{res}/done-*"))
st = json.load(open(f"{res}/status.json"))
wall = end - start
finished = len(done)
print(f"proofs: {finished} of {n} finished, wall {wall:.1f} s" + (f", {wall / finished:.2f} s/proof overall" if finished else ""))
if done:
    print(f"first proof after {done[0] - start:.2f} s (single-proof latency when J > 1 includes sharing the machine)")
if len(done) >= 2:
    print(f"steady state {(done[-1] - done[0]) / (len(done) - 1):.2f} s/proof (between completions)")
mem = st["memory"]
print(f"daemon peak RSS {mem['process_peak_rss_bytes'] / 2**30:.1f} GiB (now {mem['process_rss_bytes'] / 2**30:.1f} GiB)")
try:
    load = [tuple(map(int, l.split())) for l in open(f"{res}/rss-load.txt") if len(l.split()) == 2 and l.split()[1].isdigit()]
    if load:
        t, kib = max(load, key=lambda s: s[1])
        print(f"daemon RSS during the load: peak {kib / 2**20:.1f} GiB at {t} s after the preload began ({len(load)} samples, 0.5 s)")
except FileNotFoundError:
    pass
try:
    rss = [int(l) for l in open(f"{res}/rss-kib.txt") if l.strip().isdigit()]
    if rss:
        print(f"daemon RSS while proving: peak {max(rss) / 2**20:.1f} GiB, mean {sum(rss) / len(rss) / 2**20:.1f} GiB ({len(rss)} samples, 0.5 s)")
except FileNotFoundError:
    pass
for d in st.get("devices", []):
    print(f"device {d['ordinal']} {d['name']}: {d['partitions_proved']} partitions, busy {d['busy_seconds']:.1f} s "
          f"({100 * d['busy_seconds'] / wall:.0f} % of the wall time), {d['resident_bytes'] / 2**30:.1f} GiB resident, {d['failures']} failures")
try:
    rows = [l.split(",") for l in open(f"{res}/nvidia-smi.csv") if l.strip()]
    for g in sorted({r[0] for r in rows}):
        used = max(int(r[1]) for r in rows if r[0] == g)
        print(f"device {g}: peak memory used {used / 1024:.1f} GiB (nvidia-smi, 0.5 s samples)")
except FileNotFoundError:
    pass
import csv, os
rows = list(csv.DictReader(open(f"{res}/timeline.csv")))
beside_kind = {"winning": "winning", "wpost": "wpost", "porep": "porep", "snap": "snap"}.get(os.environ.get("TP_BESIDE", "").split("-")[0])
if beside_kind:
    rows = [r for r in rows if r["kind"] != beside_kind]
if rows:
    f = lambda r, k: float(r[k])
    avg = lambda v: sum(v) / len(v) if v else 0
    synth = [f(r, "synthesis_end") - f(r, "synthesis_start") for r in rows]
    prove = [f(r, "prove_end") - f(r, "prove_start") for r in rows]
    dev = [f(r, "device_end") - f(r, "device_start") for r in rows if r["device_start"]]
    held = f", device held {avg(dev):.2f} s" if dev else ""
    print(f"per partition (mean of {len(rows)}): synthesis {avg(synth):.2f} s, prover {avg(prove):.2f} s{held}")
    phases = [k for k in ("expand_ms", "upload_ms", "matvec_ms", "ntt_ms", "msm_h_ms", "msm_l_ms", "msm_a_ms", "msm_b_g1_ms", "msm_b_g2_ms") if k in rows[0]]
    if phases:
        print("per partition phases (mean ms): " + ", ".join(f"{k[:-3]} {avg([f(r, k) for r in rows]):.0f}" for k in phases))
    print(f"daemon CPU time during the proofs: {cpu:.0f} core-s = {cpu / len(rows):.1f} core-s per partition "
          f"({cpu / wall:.1f} cores busy on average; all threads: synthesis, host-side proving, gRPC)")
PY
echo "proofs COMPLETED (verified by the daemon): $(grep -l 'COMPLETED' "$res"/proof-*.log 2>/dev/null | wc -l) of $n"
if [[ -n ${beside:-} ]]; then
    python3 - "$res" "$beside" <<'PY'
import sys
def summary(path, what):
    try:
        rows = [l.split() for l in open(path) if l.strip()]
    except FileNotFoundError:
        rows = []
    lat = sorted(float(r[1]) for r in rows if r[2] == "COMPLETED")
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    if lat:
        print(f"{sys.argv[2]} {what}: {len(lat)} of {len(rows)} COMPLETED; end-to-end p50 {pick(0.5):.2f} s, "
              f"p99 {pick(0.99):.2f} s, max {lat[-1]:.2f} s, min {lat[0]:.2f} s")
    else:
        print(f"{sys.argv[2]} {what}: none completed ({len(rows)} sent)")
summary(f"{sys.argv[1]}/beside-idle.txt", "on the idle daemon")
summary(f"{sys.argv[1]}/beside.txt", "beside the stream")
# Where each one's time went, as the daemon reports it.
import glob, re
for log in sorted(glob.glob(f"{sys.argv[1]}/beside-*.log")):
    text = open(log).read()
    row = lambda k: (re.search(rf"{re.escape(k)}\s*[│┆|]\s*([0-9.]+ m?s)", text) or [None, "?"])[1]
    print(f"  {log.split('/')[-1][:-4]}: queue wait {row('queue wait')}, synthesis {row('synthesis')}, prove {row('prove')}, "
          f"total (daemon) {row('total (daemon)')}, client round trip {row('client round-trip')}")
PY
    echo "filecoin-proofs verify of $beside (the first beside the stream): $(grep 'filecoin-proofs verify' "$res/beside-1.log" 2>/dev/null | grep -o 'valid\|INVALID' || echo 'not checked')"
fi
echo "filecoin-proofs verify of proof 1: $(grep 'filecoin-proofs verify' "$res/proof-1.log" 2>/dev/null | grep -o 'valid\|INVALID' || echo 'not checked')"
grep -h "UNVERIFIED\|error\|Error\|INVALID" "$res"/proof-*.log | sort | uniq -c | head -5
cp "$res"/{timeline.csv,status.json,metrics.txt} "${OUT:-/nonexistent}/" 2>/dev/null || true
