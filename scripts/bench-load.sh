#!/usr/bin/env bash
# Load and fault figures on one machine, loopback only: a daemon on a unix socket in a fresh
# temp directory with the 2 KiB fixture set's parameters on the CPU backend, its RSS sampled
# every 0.5 s, `cuzk-bench load` against it (clients mixing good, bad and oversized requests;
# see crates/cuzk-bench/src/client/load.rs), then peak RSS, whether the daemon still answers
# GetStatus, and how it stops on SIGTERM.
#
#   scripts/bench-load.sh BIN_DIR [EXTRA cuzk-bench load ARGS...]
#   e.g. scripts/bench-load.sh target/release
#        CGROUP_MAX=6G scripts/bench-load.sh target/release
#
# BIN_DIR holds cuzk-daemon and cuzk-bench. Environment: LOAD_CLIENTS (200), LOAD_SECS (60),
# LOAD_DRAIN (60), LOAD_MAX_MESSAGE (daemon.max_message_bytes, default 1 MiB: every good 2 KiB
# request is under 140 kB; the oversized ones carry 64 KiB more than this), CUZK_FIXTURES
# (/var/tmp/cuzk-fixtures-2k), LOAD_PRELOAD (1: load the four circuits' parameters and PCE
# matrices before the clock starts, as an operator's srs.preload would; 0: on first use,
# under the load).
#
# CGROUP_MAX=SIZE (e.g. 6G) runs the daemon in a child cgroup v2, /sys/fs/cgroup/cuzk-load,
# with memory.max = SIZE: the daemon's budget default (memory.budget_bytes = 0: MemAvailable,
# or less under a cgroup limit, minus 5 %) should then follow the limit; the budget it chose,
# the cgroup's peak and memory.events' oom_kill are reported. Where the host cannot make such
# a cgroup (no cgroup v2, no memory controller for it) the script says why, with the exact
# error, and exits 3 without starting anything.
#
# The work directory (config, daemon log, RSS samples, the load's output) is kept; its path
# is printed first.
set -u
[[ $# -ge 1 ]] || { sed -n '2,26p' "$0"; exit 2; }
bin=$(realpath "$1"); shift
fx=${CUZK_FIXTURES:-/var/tmp/cuzk-fixtures-2k}
clients=${LOAD_CLIENTS:-200}; secs=${LOAD_SECS:-60}; drain=${LOAD_DRAIN:-60}
max_message=${LOAD_MAX_MESSAGE:-1048576}
[[ -f $fx/manifest.json ]] || { echo "no fixture set in $fx (make it with: $bin/cuzk-bench fixtures --fixtures $fx)" >&2; exit 2; }
work=$(mktemp -d /tmp/cuzk-load.XXXXXX)
echo "work directory: $work"
sock=$work/cuzk.sock
addr=unix://$sock
mib() { echo $(( $1 / 1048576 )); }

# --- the cgroup, when asked for: made and limited before the daemon exists ---------------
cg=
cg_setup() {
    local root=/sys/fs/cgroup errors=() err
    local fstype
    fstype=$(stat -f -c %T "$root")
    echo "cgroup: /sys/fs/cgroup is $fstype"
    if [[ $fstype != cgroup2fs ]]; then
        # A hybrid host: v1 controllers under /sys/fs/cgroup, v2 mounted at unified/. Tried
        # there so that the exact refusal is known, though the daemon itself only reads
        # /sys/fs/cgroup/<its path> for a limit.
        if [[ $(stat -f -c %T "$root/unified" 2>/dev/null) == cgroup2fs ]]; then
            root=$root/unified
            echo "cgroup: hybrid hierarchy; cgroup v2 at $root (the daemon reads limits only under /sys/fs/cgroup)"
        else
            echo "cgroup: no cgroup v2 hierarchy found (/sys/fs/cgroup is $fstype, no unified/)" >&2
            return 1
        fi
    fi
    echo "cgroup: $root/cgroup.controllers = [$(cat "$root/cgroup.controllers")], cgroup.subtree_control = [$(cat "$root/cgroup.subtree_control")]"
    # Children get the memory controller only when the parent hands it down.
    if ! grep -qw memory "$root/cgroup.subtree_control"; then
        err=$( { echo +memory > "$root/cgroup.subtree_control"; } 2>&1 ) || errors+=("echo +memory > $root/cgroup.subtree_control: $err")
    fi
    cg=$root/cuzk-load
    err=$(mkdir "$cg" 2>&1) || { errors+=("mkdir $cg: $err"); cg=; }
    if [[ -n $cg ]]; then
        err=$( { echo "$CGROUP_MAX" > "$cg/memory.max"; } 2>&1 ) || errors+=("echo $CGROUP_MAX > $cg/memory.max: $err")
        [[ -f $cg/memory.events ]] || errors+=("$cg has no memory.events (files: $(ls "$cg" | tr '\n' ' '))")
    fi
    if [[ ${#errors[@]} -gt 0 ]]; then
        for e in "${errors[@]}"; do echo "cgroup: v2: FAILED: $e" >&2; done
        [[ -n $cg ]] && rmdir "$cg"
        cg=
        cg_setup_v1
        return
    fi
    echo "cgroup: $cg with memory.max = $(cat "$cg/memory.max") ($CGROUP_MAX)"
}
# A hybrid host keeps the memory controller in v1 (/sys/fs/cgroup/memory), whose
# memory.limit_in_bytes the daemon reads too.
cg_setup_v1() {
    local root=/sys/fs/cgroup/memory err
    [[ -f $root/memory.limit_in_bytes ]] || { echo "cgroup: no v1 memory hierarchy at $root either" >&2; return 1; }
    cg=$root/cuzk-load
    err=$( { mkdir "$cg" && echo "$CGROUP_MAX" > "$cg/memory.limit_in_bytes"; } 2>&1 ) || {
        echo "cgroup: v1: FAILED: $err" >&2; rmdir "$cg" 2>/dev/null; cg=; return 1; }
    echo "cgroup: $cg with memory.max = $(cat "$cg/memory.limit_in_bytes") ($CGROUP_MAX, cgroup v1 memory.limit_in_bytes)"
}
if [[ -n ${CGROUP_MAX:-} ]]; then
    cg_setup 2>&1 | tee "$work/cgroup.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "CGROUP_MAX=$CGROUP_MAX: this host does not allow the cgroup run (above); nothing started"; exit 3; }
    cg=$(sed -n 's/^cgroup: \(.*\) with memory.max = .*/\1/p' "$work/cgroup.txt")
fi

# --- the daemon -----------------------------------------------------------------------------
cat > "$work/cuzk.toml" <<TOML
[daemon]
listen = "unix://$sock"
max_message_bytes = $max_message
# Jobs still held when the load ends are cancelled by it; nothing here needs a long grace.
shutdown_grace_secs = 5
[srs]
param_dir = "$fx/params"
[gpus]
backend = "cpu"
TOML
echo "MemAvailable before the daemon starts: $(awk '/^MemAvailable/ {print int($2 / 1024)}' /proc/meminfo) MiB"
if [[ -n $cg ]]; then
    # The shell joins the cgroup and then becomes the daemon (exec keeps its pid), so the
    # daemon is inside before it allocates anything and sees the limit when it sizes its budget.
    sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$bin/cuzk-daemon" --config "$work/cuzk.toml" > "$work/daemon.log" 2>&1 &
else
    "$bin/cuzk-daemon" --config "$work/cuzk.toml" > "$work/daemon.log" 2>&1 &
fi
daemon=$!
stopped=
stop_daemon() {
    if [[ -z $stopped ]] && kill -0 "$daemon" 2>/dev/null; then
        local t=$EPOCHREALTIME
        kill -TERM "$daemon"
        # Workers finish the partition in hand before the daemon exits, cancelled or not: on
        # 2 cores a 2 KiB PoRep partition is tens of seconds.
        for _ in $(seq 900); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$daemon" 2>/dev/null && echo "daemon: still running 180 s after SIGTERM, killed"
        wait "$daemon"; local rc=$?
        echo "daemon: exit code $rc, $(awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s after SIGTERM"
    fi
    stopped=1
    [[ -n ${sampler:-} ]] && kill "$sampler" 2>/dev/null
    # The cgroup can only be removed once empty.
    [[ -n $cg && -d $cg ]] && { rmdir "$cg" 2>/dev/null || echo "cgroup: $cg left behind (not empty?)"; }
}
trap stop_daemon EXIT
# RSS every 0.5 s ("epoch seconds, KiB") for the daemon's whole life.
( while kill -0 "$daemon" 2>/dev/null; do
      echo "$EPOCHREALTIME $(awk '/^VmRSS/ {print $2}' "/proc/$daemon/status" 2>/dev/null)"; sleep 0.5
  done ) > "$work/rss.txt" &
sampler=$!
for _ in $(seq 300); do [[ -S $sock ]] && break; kill -0 "$daemon" 2>/dev/null || break; sleep 0.2; done
[[ -S $sock ]] || { echo "daemon did not start"; tail -20 "$work/daemon.log"; exit 1; }
[[ -n $cg ]] && echo "cgroup: daemon pid $daemon in $(grep -E '^0::|:memory:' /proc/$daemon/cgroup | tr '\n' ' ')"
cz() { "$bin/cuzk-bench" --addr "$addr" "$@"; }
budget=$(cz status --json | sed -n 's/.*"pinned_memory_limit_bytes": \([0-9]*\).*/\1/p')
echo "daemon budget (GetStatus pinned_memory_limit_bytes): $budget bytes = $(mib "$budget") MiB"
grep -o 'memory_limit=[0-9]*' "$work/daemon.log" | head -1 | sed 's/^/daemon log: scheduler started, /'

t_preload=$EPOCHREALTIME
if [[ ${LOAD_PRELOAD:-1} == 1 ]]; then
    for c in winning-2k wpost-2k snap-2k porep-2k; do
        t=$SECONDS
        cz preload "$c" > /dev/null 2>> "$work/preload.txt" || { echo "preload of $c failed"; cat "$work/preload.txt"; exit 1; }
        echo "preload $c: $((SECONDS - t)) s"
    done
fi

# --- the load -------------------------------------------------------------------------------
t_load=$EPOCHREALTIME
cz load -c "$clients" --duration "$secs" --drain "$drain" --oversize-bytes $((max_message + 65536)) --fixtures "$fx" "$@" \
    2>&1 | tee "$work/load.txt"
load_rc=${PIPESTATUS[0]}
t_end=$EPOCHREALTIME

# --- after ----------------------------------------------------------------------------------
echo "== after the load =="
serving=no
if kill -0 "$daemon" 2>/dev/null && timeout 30 "$bin/cuzk-bench" --addr "$addr" status > "$work/status-after.txt" 2>&1; then
    serving=yes
fi
echo "daemon process alive: $(kill -0 "$daemon" 2>/dev/null && echo yes || echo NO); GetStatus answered: $serving"
# What the daemon still computes once every job has ended or been cancelled (partitions in
# hand run to their end): CPU seconds over 5 s.
ticks() { awk '{print $14 + $15}' "/proc/$daemon/stat" 2>/dev/null || echo 0; }
c0=$(ticks); sleep 5; c1=$(ticks)
echo "daemon CPU in the 5 s after the load: $(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", (b - a) / hz}') core-seconds"
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$daemon/status" 2>/dev/null)
peak() { awk -v a="$1" -v b="$2" '$1 >= a && $1 <= b && $2 > m {m = $2} END {print int(m / 1024)}' "$work/rss.txt"; }
echo "RSS samples: $(wc -l < "$work/rss.txt") (every 0.5 s)"
echo "peak RSS before the load (start, preloads): $(peak 0 "$t_load") MiB"
echo "peak RSS during the load and drain: $(peak "$t_load" "$t_end") MiB"
echo "RSS at the end of the load: $(awk -v b="$t_end" '$1 <= b {r = $2} END {print int(r / 1024)}' "$work/rss.txt") MiB; VmHWM (kernel's peak, whole life): $(( ${hwm:-0} / 1024 )) MiB"
if [[ -n $cg && -f $cg/memory.max ]]; then
    echo "cgroup: memory.max $(cat "$cg/memory.max"), memory.current $(mib "$(cat "$cg/memory.current")") MiB, memory.peak $( [[ -f $cg/memory.peak ]] && echo "$(mib "$(cat "$cg/memory.peak")") MiB" || echo n/a)"
    echo "cgroup: memory.events: $(tr '\n' ' ' < "$cg/memory.events")"
elif [[ -n $cg ]]; then
    echo "cgroup: v1 memory.limit_in_bytes $(mib "$(cat "$cg/memory.limit_in_bytes")") MiB, usage $(mib "$(cat "$cg/memory.usage_in_bytes")") MiB, max usage $(mib "$(cat "$cg/memory.max_usage_in_bytes")") MiB, failcnt $(cat "$cg/memory.failcnt")"
    echo "cgroup: memory.oom_control: $(tr '\n' ' ' < "$cg/memory.oom_control")"
fi
grep -c ' WARN ' "$work/daemon.log" | sed 's/^/daemon log: WARN lines: /'
grep -c ' ERROR ' "$work/daemon.log" | sed 's/^/daemon log: ERROR lines: /'
stop_daemon
echo "load exit code: $load_rc"
[[ $serving == yes ]] || exit 1
exit "$load_rc"
