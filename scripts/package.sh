#!/usr/bin/env bash
# Package built binaries for installation next to Curio:
#   scripts/package.sh BIN_DIR OUT_DIR
# BIN_DIR holds cuzk-daemon and cuzk-bench (e.g. target/release, built with the cuda
# feature). Writes to OUT_DIR:
#   cuzk_<version>_<arch>.deb      binaries, systemd unit, sysusers/tmpfiles, /etc/cuzk/cuzk.toml
#                                  (a conffile), docs, the Grafana dashboard; built with dpkg-deb
#                                  (standard tooling)
#   cuzk-<version>-<arch>.tar.gz   the same tree without /etc and the Debian scripts, for
#                                  other distributions (docs/operating.md: "Other distributions")
# The version is the workspace version plus the git commit of this checkout (+g<commit>,
# +dirty when the tree has changes); the binaries print their own with --version. A CUDA 12
# build (scripts/build-gpu-binaries.sh --cuda 12) adds .cuda12, read from cuzk-daemon
# --version, so its files and `dpkg -l` say which driver it needs; the CUDA 13 build, the
# default, has no suffix (as before). Both are package `cuzk`: installing one replaces the
# other and keeps /etc/cuzk/cuzk.toml.
# Needs dpkg-deb; dpkg-shlibdeps (dpkg-dev) when present computes the library dependencies,
# otherwise they are read from the binaries' NEEDED entries with dpkg -S.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
bin_dir=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
for b in cuzk-daemon cuzk-bench; do
    [ -x "$bin_dir/$b" ] || { echo "$bin_dir/$b: missing or not executable" >&2; exit 1; }
done
command -v dpkg-deb >/dev/null || { echo "dpkg-deb not found (apt-get install dpkg)" >&2; exit 1; }

base=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml")
[ -n "$base" ] || { echo "no version in [workspace.package] of Cargo.toml" >&2; exit 1; }
version=$base
if commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null); then
    version="$base+g$commit"
    # Generated or untracked files do not count: only changes to tracked files.
    git -C "$root" diff --quiet HEAD 2>/dev/null || version="$version.dirty"
fi
# Which CUDA the binaries link, from their own --version: "12.4 525.60.13" (the runtime and
# the oldest driver that runs it), "" for a CPU-only build. The package's version says what
# the binaries say. CUZK_CUDA_MAJOR (set by install-cuda-toolchain.sh --env), when set, must
# agree with a CUDA build: packaging the other toolkit's leftovers is refused.
runtime=$("$bin_dir/cuzk-daemon" --version | sed -n 's/.*cuda on (CUDA \([0-9][0-9]*\.[0-9][0-9]*\) runtime, driver >= \([0-9.]*\).*/\1 \2/p')
cuda_major=${runtime%%.*}
if [ -n "$cuda_major" ] && [ -n "${CUZK_CUDA_MAJOR:-}" ] && [ "$CUZK_CUDA_MAJOR" != "$cuda_major" ]; then
    echo "CUZK_CUDA_MAJOR=$CUZK_CUDA_MAJOR, but $bin_dir/cuzk-daemon is a CUDA ${runtime% *} build" >&2
    exit 1
fi
if [ -n "$cuda_major" ] && [ "$cuda_major" != 13 ]; then
    version="$version.cuda$cuda_major"
fi
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree=$work/cuzk
doc=$tree/usr/share/doc/cuzk
install -d "$tree/usr/bin" "$tree/usr/lib/systemd/system" "$tree/usr/lib/sysusers.d" "$tree/usr/lib/tmpfiles.d" "$doc" "$tree/usr/share/cuzk/grafana"
install -m 0755 "$bin_dir/cuzk-daemon" "$bin_dir/cuzk-bench" "$tree/usr/bin/"
# Debug info is most of a binary's size (CI's debug builds: ~150 MB each); symbols stay for
# backtraces. CUZK_NO_STRIP=1 keeps the binaries as they are.
if [ "${CUZK_NO_STRIP:-0}" != 1 ] && command -v strip >/dev/null; then
    strip --strip-debug "$tree/usr/bin/cuzk-daemon" "$tree/usr/bin/cuzk-bench"
fi
install -m 0644 "$root/deploy/cuzk.service" "$tree/usr/lib/systemd/system/cuzk.service"
install -m 0644 "$root/deploy/cuzk.sysusers" "$tree/usr/lib/sysusers.d/cuzk.conf"
install -m 0644 "$root/deploy/cuzk.tmpfiles" "$tree/usr/lib/tmpfiles.d/cuzk.conf"
install -m 0644 "$root/README.md" "$root/docs/operating.md" "$root/BENCHMARKS.md" "$root/cuzk.example.toml" "$doc/"
# The dashboard is not documentation: images that drop /usr/share/doc (dpkg path-exclude, as
# Ubuntu's minimal ones do) must still have it to import.
install -m 0644 "$root/deploy/grafana/cuzk.json" "$tree/usr/share/cuzk/grafana/cuzk.json"
cat >"$doc/copyright" <<EOF
cuzk $version
License: MIT OR Apache-2.0 (see the workspace Cargo.toml). The binaries statically include
Rust crates under their own licenses, and with the cuda feature sppark (Apache-2.0) and
NVIDIA's CUDA runtime (statically linked, under the CUDA Toolkit EULA).
EOF

# The tarball: the tree as it is now (no /etc, so unpacking over an install never replaces
# an operator's configuration).
tarball=$out/cuzk-$version-$arch.tar.gz
tar -C "$tree" --owner=0 --group=0 --numeric-owner -czf "$tarball" usr

# The Debian package adds the configuration as a conffile and the maintainer scripts.
install -d "$tree/etc/cuzk" "$tree/DEBIAN"
install -m 0644 "$root/cuzk.example.toml" "$tree/etc/cuzk/cuzk.toml"
echo /etc/cuzk/cuzk.toml >"$tree/DEBIAN/conffiles"

if command -v dpkg-shlibdeps >/dev/null; then
    # dpkg-shlibdeps wants a debian/control beside it; this minimal one is enough.
    mkdir -p "$work/src/debian"
    printf 'Source: cuzk\n\nPackage: cuzk\nArchitecture: any\n' >"$work/src/debian/control"
    depends=$(cd "$work/src" && dpkg-shlibdeps -O -e"$tree/usr/bin/cuzk-daemon" -e"$tree/usr/bin/cuzk-bench" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
else
    depends=$(for b in "$tree"/usr/bin/*; do objdump -p "$b" | awk '/NEEDED/ { print $2 }'; done | sort -u |
        while read -r lib; do dpkg -S "*/$lib" 2>/dev/null | head -1 | cut -d: -f1; done | sort -u | paste -sd, | sed 's/,/, /g')
fi
[ -n "$depends" ] || { echo "could not work out the library dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$tree" | cut -f1)
if [ -n "$runtime" ]; then
    build_note="This build: CUDA ${runtime% *} runtime, needs NVIDIA driver ${runtime#* } or newer."
else
    build_note="This build: CPU only (built without CUDA)."
fi
cat >"$tree/DEBIAN/control" <<EOF
Package: cuzk
Version: $version
Architecture: $arch
Maintainer: cuzk maintainers <cuzk@localhost>
Section: misc
Priority: optional
Installed-Size: $size
Depends: $depends
Recommends: systemd
Description: Groth16 proving daemon for Filecoin storage providers (Curio's cuzk API)
 cuzk-daemon serves cuzk.v1.ProvingEngine over gRPC on /run/cuzk/cuzk.sock: PoRep C2,
 WinningPoSt, WindowPoSt and SnapDeals SNARKs, each verified before it is returned, on
 NVIDIA GPUs when built with CUDA (check with cuzk-daemon --version) or the CPU.
 cuzk-bench is its command-line client and benchmark tool.
 .
 $build_note
 .
 The service is installed but neither enabled nor started: edit /etc/cuzk/cuzk.toml, then
 see /usr/share/doc/cuzk/operating.md.
EOF

cat >"$tree/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# The user and group (sysusers.d), /var/lib/cuzk (tmpfiles.d), systemd's view of the unit.
# The service is not enabled or started: it needs parameters and a configuration first.
set -e
if [ "$1" = configure ]; then
    if command -v systemd-sysusers >/dev/null 2>&1; then
        systemd-sysusers /usr/lib/sysusers.d/cuzk.conf
    else
        getent group cuzk >/dev/null || addgroup --system cuzk
        getent passwd cuzk >/dev/null || adduser --system --ingroup cuzk --home /var/lib/cuzk \
            --no-create-home --shell /usr/sbin/nologin cuzk
    fi
    if [ -z "$2" ]; then
        # First install: the file may come to hold bearer tokens (daemon.auth_token), so only
        # root and the daemon's group read it. Upgrades leave the operator's choice alone.
        chgrp cuzk /etc/cuzk/cuzk.toml && chmod 0640 /etc/cuzk/cuzk.toml
    fi
    if command -v systemd-tmpfiles >/dev/null 2>&1; then
        systemd-tmpfiles --create /usr/lib/tmpfiles.d/cuzk.conf
    else
        install -d -m 0750 -o cuzk -g cuzk /var/lib/cuzk
    fi
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload || true
        if [ -n "$2" ] && systemctl is-active --quiet cuzk.service; then
            # Not restarted behind the operator's back: a restart cancels queued proofs.
            echo "cuzk: the running daemon is still the old version; restart it when convenient:"
            echo "      systemctl restart cuzk   (running proofs get daemon.shutdown_grace_secs)"
        elif [ -z "$2" ]; then
            echo "cuzk: installed, not started. Edit /etc/cuzk/cuzk.toml, then: systemctl enable --now cuzk"
            echo "      (guide: /usr/share/doc/cuzk/operating.md)"
        fi
    fi
fi
exit 0
EOF
cat >"$tree/DEBIAN/prerm" <<'EOF'
#!/bin/sh
# Removal stops the service (running proofs get daemon.shutdown_grace_secs); an upgrade does
# not (postinst says to restart).
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
    systemctl disable --now cuzk.service >/dev/null 2>&1 || true
fi
exit 0
EOF
cat >"$tree/DEBIAN/postrm" <<'EOF'
#!/bin/sh
# Purge removes the state directory (subgroup-check records and the PCE cache: both are
# rebuilt on the next start). The user stays, as Debian keeps system users.
set -e
if [ "$1" = purge ]; then
    rm -rf /var/lib/cuzk
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
EOF
chmod 0755 "$tree/DEBIAN/postinst" "$tree/DEBIAN/prerm" "$tree/DEBIAN/postrm"

deb=$out/cuzk_${version}_$arch.deb
# --root-owner-group: every file root:root without fakeroot.
dpkg-deb --root-owner-group -Zxz --build "$tree" "$deb" >/dev/null
echo "$deb"
echo "$tarball"
