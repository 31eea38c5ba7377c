#!/usr/bin/env bash
# Install the package as far as a machine without systemd allows, without touching the host:
#   sudo scripts/try-package.sh BIN_DIR [FIXTURES_DIR]
# Builds the .deb from BIN_DIR (scripts/package.sh), then in a private mount namespace
# (unshare -m) over copies of /etc, /usr/lib, /var/lib and an empty /run: runs its postinst
# (user and group cuzk, /var/lib/cuzk, the conffile's mode), adds a user "curio" to group
# cuzk, makes /run/cuzk as the unit's RuntimeDirectory= would, starts the extracted
# cuzk-daemon as cuzk with the configuration the package installed (parameters: the 2 KiB
# fixture set, root-owned, so read-only to cuzk; preload winning-2k), proves a WinningPoSt
# as curio, checks that a user outside the group cannot reach the socket, stops the daemon
# and runs the postinst again (upgrade) and postrm purge. Needs root, unshare, setpriv and
# useradd. What it cannot show: dpkg itself, systemd (Type=notify, StateDirectory=,
# TimeoutStopSec), a GPU.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BIN_DIR [FIXTURES_DIR]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (mount namespace, setpriv)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
bin_dir=$(cd "$1" && pwd)
fixtures=${2:-${CUZK_FIXTURES:-/var/tmp/cuzk-fixtures-2k}}
[ -d "$fixtures/params" ] || { echo "no fixture set at $fixtures (cargo run -p cuzk-bench -- fixtures)" >&2; exit 1; }
s=$(mktemp -d)
chmod 0755 "$s"   # the daemon runs as cuzk and must reach the extracted binaries
trap 'rm -rf "$s"' EXIT
mkdir -p "$s/etc" "$s/usrlib" "$s/varlib" "$s/run" "$s/pkg"
cp -a /etc/. "$s/etc/"
cp -a /usr/lib/. "$s/usrlib/"
"$root/scripts/package.sh" "$bin_dir" "$s/pkg" >/dev/null
deb=$(ls "$s"/pkg/*.deb)
dpkg-deb -x "$deb" "$s/root"
dpkg-deb --ctrl-tarfile "$deb" | tar -x -C "$s/pkg" ./postinst ./postrm
# What dpkg would unpack before running postinst.
install -d "$s/etc/cuzk" "$s/usrlib/sysusers.d" "$s/usrlib/tmpfiles.d"
cp "$s/root/etc/cuzk/cuzk.toml" "$s/etc/cuzk/"
cp "$s/root/usr/lib/sysusers.d/cuzk.conf" "$s/usrlib/sysusers.d/"
cp "$s/root/usr/lib/tmpfiles.d/cuzk.conf" "$s/usrlib/tmpfiles.d/"

cat >"$s/inside.sh" <<EOF
set -eu
fail() { echo "try-package: \$*" >&2; exit 1; }
mount --bind $s/etc /etc; mount --bind $s/usrlib /usr/lib; mount --bind $s/varlib /var/lib; mount --bind $s/run /run
sh -e $s/pkg/postinst configure
getent passwd cuzk >/dev/null || fail "postinst made no user cuzk"
[ "\$(stat -c '%U:%G %a' /var/lib/cuzk)" = "cuzk:cuzk 750" ] || fail "/var/lib/cuzk: \$(stat -c '%U:%G %a' /var/lib/cuzk)"
[ "\$(stat -c '%U:%G %a' /etc/cuzk/cuzk.toml)" = "root:cuzk 640" ] || fail "/etc/cuzk/cuzk.toml: \$(stat -c '%U:%G %a' /etc/cuzk/cuzk.toml)"
useradd -M -s /usr/sbin/nologin -G cuzk curio
install -d -o cuzk -g cuzk -m 0750 /run/cuzk
sed -i 's#^preload = \[\]#preload = ["winning-2k"]#; s#^param_dir = .*#param_dir = "$fixtures/params"#' /etc/cuzk/cuzk.toml
B=$s/root/usr/bin
setpriv --reuid=cuzk --regid=cuzk --init-groups \$B/cuzk-daemon --config /etc/cuzk/cuzk.toml >$s/daemon.log 2>&1 &
pid=\$!
for i in \$(seq 120); do [ -S /run/cuzk/cuzk.sock ] && break; sleep 0.5; done
[ -S /run/cuzk/cuzk.sock ] || { cat $s/daemon.log; fail "no socket"; }
[ "\$(stat -c '%G %a' /run/cuzk/cuzk.sock)" = "cuzk 660" ] || fail "socket: \$(stat -c '%G %a' /run/cuzk/cuzk.sock)"
as_curio() { setpriv --reuid=curio --regid=curio --init-groups "\$@"; }
as_curio \$B/cuzk-bench single --kind winning --fixtures $fixtures | tee $s/single.txt | grep -E "status|proof bytes"
grep -q COMPLETED $s/single.txt || fail "the proof as curio did not complete"
if setpriv --reuid=nobody --regid=nogroup --clear-groups \$B/cuzk-bench status >/dev/null 2>&1; then
    fail "a user outside group cuzk reached the socket"
fi
echo "outside group cuzk: refused (as it should be)"
kill -TERM \$pid; wait \$pid || fail "the daemon did not exit 0 on SIGTERM"
grep -q "state directory state_dir=/var/lib/cuzk" $s/daemon.log || fail "state directory not /var/lib/cuzk"
[ -f /var/lib/cuzk/pce/winning-2k.pce ] || fail "no PCE cache in /var/lib/cuzk"
sh -e $s/pkg/postinst configure 0.0.1 >/dev/null
[ "\$(stat -c '%U:%G %a' /etc/cuzk/cuzk.toml)" = "root:cuzk 640" ] || fail "upgrade changed the conffile's mode"
sh -e $s/pkg/postrm purge
[ ! -e /var/lib/cuzk ] || fail "purge left /var/lib/cuzk"
echo "postinst (install, upgrade), the daemon as cuzk, the socket for group cuzk only, postrm purge: all as expected"
EOF
unshare -m sh "$s/inside.sh"
