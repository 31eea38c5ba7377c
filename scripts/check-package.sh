#!/usr/bin/env bash
# Build the package from BIN_DIR's binaries and check it as an installer would see it:
#   scripts/check-package.sh [--expect-cuda[=MAJOR]] BIN_DIR [OUT_DIR]
# Runs scripts/package.sh, then checks the .deb's control fields, conffiles, maintainer
# scripts and every file that must be in it (dpkg-deb -I / -c), that the tarball holds the
# same tree without /etc, extracts the .deb to a scratch root (dpkg-deb -x) and runs the
# extracted cuzk-daemon --version and cuzk-bench --version (with --expect-cuda they must say
# "cuda on"; with --expect-cuda=12 or =13 also that CUDA runtime and the minimum driver, and
# the package version must say .cuda12 for a CUDA 12 build and nothing for the default 13),
# and checks the unit with systemd-analyze when it is available. Fails on the first thing
# missing. CI runs it on both of its CUDA builds.
set -euo pipefail
expect_cuda=0
cuda_major=
case "${1:-}" in
    --expect-cuda) expect_cuda=1; shift ;;
    --expect-cuda=*) expect_cuda=1; cuda_major=${1#--expect-cuda=}; shift ;;
esac
[ $# -ge 1 ] || { echo "usage: $0 [--expect-cuda[=MAJOR]] BIN_DIR [OUT_DIR]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$(mktemp -d)}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "check-package: $*" >&2; exit 1; }

"$root/scripts/package.sh" "$1" "$out" >"$scratch/made"
deb=$(grep '\.deb$' "$scratch/made")
tarball=$(grep '\.tar\.gz$' "$scratch/made")
[ -f "$deb" ] && [ -f "$tarball" ] || fail "package.sh made no .deb or .tar.gz"
echo "package: $(basename "$deb") ($(du -h "$deb" | cut -f1)), $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"

dpkg-deb -I "$deb" >"$scratch/info"
for field in Package:\ cuzk Version: Architecture: Depends:\ libc6 Description:; do
    grep -q "^ $field" "$scratch/info" || fail "control has no '$field'"
done
for script in conffiles postinst prerm postrm; do
    grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\*? *$script( |$)" "$scratch/info" || fail "no $script in the control archive"
done
[ "$(dpkg-deb -f "$deb" Package)" = cuzk ] || fail "package name"
if [ -n "$cuda_major" ]; then
    # The CUDA 12 build is told apart by its version (and so its file names); the default is not.
    case "$(dpkg-deb -f "$deb" Version)" in
        *.cuda$cuda_major) [ "$cuda_major" != 13 ] || fail "a CUDA 13 package's version has a .cuda13 suffix" ;;
        *.cuda*) fail "version $(dpkg-deb -f "$deb" Version) names another CUDA than $cuda_major" ;;
        *) [ "$cuda_major" = 13 ] || fail "version $(dpkg-deb -f "$deb" Version) does not say .cuda$cuda_major" ;;
    esac
    dpkg-deb -f "$deb" Description | grep -q "This build: CUDA $cuda_major\.[0-9]* runtime, needs NVIDIA driver [0-9.]* or newer" ||
        fail "the description does not name the CUDA $cuda_major runtime and its minimum driver"
fi
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/cuzk/cuzk.toml || fail "/etc/cuzk/cuzk.toml is not a conffile"

dpkg-deb -c "$deb" | awk '{ print $1, $2, $NF }' >"$scratch/contents"
want="-rwxr-xr-x root/root ./usr/bin/cuzk-daemon
-rwxr-xr-x root/root ./usr/bin/cuzk-bench
-rw-r--r-- root/root ./usr/lib/systemd/system/cuzk.service
-rw-r--r-- root/root ./usr/lib/sysusers.d/cuzk.conf
-rw-r--r-- root/root ./usr/lib/tmpfiles.d/cuzk.conf
-rw-r--r-- root/root ./etc/cuzk/cuzk.toml
-rw-r--r-- root/root ./usr/share/doc/cuzk/operating.md
-rw-r--r-- root/root ./usr/share/doc/cuzk/README.md
-rw-r--r-- root/root ./usr/share/doc/cuzk/cuzk.example.toml
-rw-r--r-- root/root ./usr/share/doc/cuzk/copyright
-rw-r--r-- root/root ./usr/share/cuzk/grafana/cuzk.json"
while read -r line; do
    grep -qxF -- "$line" "$scratch/contents" || fail "the .deb lacks: $line"
done <<<"$want"

tar -tzf "$tarball" | sort >"$scratch/tar"
grep -qx 'usr/bin/cuzk-daemon' "$scratch/tar" || fail "the tarball lacks usr/bin/cuzk-daemon"
grep -q '^etc/' "$scratch/tar" && fail "the tarball holds /etc (it would overwrite a configuration)"
dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's#^\./##; /^etc\//d; /^$/d' | grep -v '/$' | sort >"$scratch/debfiles"
grep -v '/$' "$scratch/tar" | diff -u "$scratch/debfiles" - >/dev/null || fail "the tarball and the .deb hold different files"

dpkg-deb -x "$deb" "$scratch/root"
for b in cuzk-daemon cuzk-bench; do
    v=$("$scratch/root/usr/bin/$b" --version) || fail "extracted $b --version failed"
    echo "extracted $v"
    [ $expect_cuda = 0 ] || grep -q "cuda on" <<<"$v" || fail "$b was not built with CUDA: $v"
    [ -z "$cuda_major" ] || grep -q "cuda on (CUDA $cuda_major\.[0-9]* runtime, driver >= [0-9]" <<<"$v" ||
        fail "$b does not name a CUDA $cuda_major runtime and its minimum driver: $v"
    # Built from a git checkout, a binary must say which commit (an operator's only way to tell).
    if git -C "$root" rev-parse HEAD >/dev/null 2>&1 && grep -q "commit unknown" <<<"$v"; then
        fail "$b does not name its commit: $v"
    fi
done
cmp -s "$scratch/root/etc/cuzk/cuzk.toml" "$root/cuzk.example.toml" || fail "/etc/cuzk/cuzk.toml is not cuzk.example.toml"
if command -v systemd-analyze >/dev/null; then
    # Verified against the extracted binary: the unit's ExecStart must exist and run.
    sed "s#/usr/bin/cuzk-daemon#$scratch/root/usr/bin/cuzk-daemon#" "$scratch/root/usr/lib/systemd/system/cuzk.service" >"$scratch/cuzk.service"
    systemd-analyze verify --man=no "$scratch/cuzk.service" || fail "systemd-analyze verify rejected the unit"
    echo "unit: systemd-analyze verify passed"
fi
echo "package checked: $deb"
