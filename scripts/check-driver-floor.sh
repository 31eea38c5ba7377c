#!/usr/bin/env bash
# Shows, without a GPU, that a CUDA build of cuzk-daemon refuses a driver too old for its CUDA
# runtime at start, naming both versions and the minimum driver:
#   scripts/check-driver-floor.sh DAEMON
# The runtime reads the driver's CUDA version from libcuda.so.1 (cuDriverGetVersion), so a
# stand-in library that exports only that function, found first through LD_LIBRARY_PATH,
# plays a driver of the previous major version (e.g. CUDA 12.8, a 570 driver, for a CUDA 13
# build). The daemon runs with gpus.backend = "auto", where a host without any driver falls
# back to the CPU: a driver that is there but too old must still stop it. Needs a C compiler
# (cc). CI runs it on both of its CUDA builds; the decision itself is unit-tested in
# crates/cuzk-cuda/src/driver.rs.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DAEMON" >&2; exit 2; }
daemon=$(realpath "$1")
fail() { printf 'check-driver-floor: %b\n' "$*" >&2; exit 1; }
runtime=$("$daemon" --version | sed -n 's/.*cuda on (CUDA \([0-9]*\.[0-9]*\) runtime, driver >= \([0-9.]*\).*/\1 \2/p')
[ -n "$runtime" ] || fail "$daemon is not a CUDA build that names its runtime: $("$daemon" --version)"
major=${runtime%%.*}
min_driver=${runtime#* }
runtime=${runtime% *}
old=$((major - 1))

s=$(mktemp -d)
trap 'rm -rf "$s"' EXIT
printf 'int cuDriverGetVersion(int *v) { *v = %d; return 0; }\n' $((old * 1000 + 80)) >"$s/fake.c"
cc -shared -fPIC -o "$s/libcuda.so.1" "$s/fake.c"
mkdir "$s/params"
printf '[daemon]\nlisten = "unix://%s/cuzk.sock"\nhttp_listen = ""\n\n[srs]\nparam_dir = "%s/params"\n\n[gpus]\nbackend = "auto"\n' "$s" "$s" >"$s/cuzk.toml"

if LD_LIBRARY_PATH="$s" timeout 60 "$daemon" --config "$s/cuzk.toml" >"$s/log" 2>&1; then
    fail "the daemon started with a driver for CUDA $old.8 (a CUDA $runtime build):\n$(cat "$s/log")"
fi
want="the NVIDIA driver supports CUDA $old.8, but this build's CUDA $runtime runtime needs NVIDIA driver $min_driver or newer"
grep -qF "$want" "$s/log" || fail "no refusal naming both versions in the log:\n$(cat "$s/log")"
grep -F "$want" "$s/log" | sed 's/^.*ERROR/ERROR/'
echo "driver floor: a CUDA $runtime build refuses a CUDA $old.8 driver (needs $min_driver)"
