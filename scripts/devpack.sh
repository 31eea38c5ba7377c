#!/usr/bin/env bash
# Pack prebuilt binaries for the lent GPU machines, whose calls carry at most 64 MiB: each
# binary is xz-compressed (ours shrink ~4×; the SupraSeal peer, mostly GPU code, barely).
#
#   scripts/devpack.sh SRC_DIR DEST_DIR NAME...        (here)
#   scripts/devpack.sh --unpack DEST_DIR BIN_DIR       (there; needs only python3)
set -euo pipefail
if [[ $1 == --unpack ]]; then
    mkdir -p "$3"
    python3 - "$2" "$3" <<'PY'
import lzma, os, sys
src, dst = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(src)):
    out = os.path.join(dst, name[:-3] if name.endswith(".xz") else name)
    with open(os.path.join(src, name), "rb") as f:
        data = f.read()
    with open(out, "wb") as f:
        f.write(lzma.decompress(data) if name.endswith(".xz") else data)
    os.chmod(out, 0o755)
    print(f"{out}: {os.path.getsize(out) / 2**20:.1f} MiB")
PY
    exit 0
fi
src=$1; dest=$2; shift 2
mkdir -p "$dest"
for name in "$@"; do
    xz -T0 -6 -c "$src/$name" > "$dest/$name.xz"
done
ls -la "$dest"
