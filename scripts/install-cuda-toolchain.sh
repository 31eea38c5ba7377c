#!/usr/bin/env bash
# Installs the CUDA compiler cuzk's `cuda` feature needs into a private folder — no root, no
# system CUDA, works on a fresh machine and in CI (no GPU needed to compile).
#
#   scripts/install-cuda-toolchain.sh [--cuda 13|12] [--env] [DIR]
#
#   --cuda 13  (default; or CUZK_CUDA_MAJOR=13) nvcc 13.0 from PyPI wheels, into
#              $CUZK_CUDA_HOME or ~/.cache/cuzk/cuda-13.0. Binaries need NVIDIA driver 580+.
#   --cuda 12  (or CUZK_CUDA_MAJOR=12) nvcc 12.4.1 from Debian's non-free archive, into
#              $CUZK_CUDA_HOME or ~/.cache/cuzk/cuda-12.4. Binaries need driver 525.60.13+.
#   --env      print the environment to use it; in the same shell:
#              eval "$(scripts/install-cuda-toolchain.sh [--cuda 12] --env)"
#
# Why each step, CUDA 13:
# - nvcc 13.0 ships as wheels (nvcc + ptxas, nvvm/cicc, runtime headers and cudart_static,
#   the crt headers, cccl); they all unpack into one tree, nvidia/cu13.
# - cc-rs looks for the CUDA libraries in <nvcc>/../lib64; the wheels ship lib/, so a
#   lib64 → lib link is made.
# Why each step, CUDA 12:
# - The CUDA 12 wheels on PyPI (nvidia-cuda-nvcc-cu12, every 12.x up to 12.9.86) hold ptxas,
#   libnvvm and the crt headers but not nvcc, cicc, cudafe++, fatbinary or nvlink, and only the
#   12.9 runtime wheels hold cudart_static: no CUDA 12 compiler can be put together from PyPI.
#   Debian ships NVIDIA's CUDA 12.4.1 binaries unchanged (non-free: nvidia-cuda-toolkit for
#   the compiler, nvidia-cuda-dev for the headers and cudart_static), one coherent release.
#   CCCL (libcu++, which cooperative_groups.h includes from 12.4 on) is in Debian's main
#   archive, not non-free: it comes from PyPI instead, nvidia-cuda-cccl-cu12 12.4.127.post1
#   (CCCL 2.3.2, what Debian's nvidia-cuda-dev asks for; 12.4.127 is yanked and 12.4.99 lacks
#   most of cuda/std).
# - The packages come from the Debian mirror this machine's apt already uses (or
#   $CUZK_DEBIAN_MIRROR), suite trixie, with a private apt state under DIR: the system's apt
#   configuration and package database are not touched and no root is needed. apt checks
#   them against the archive's signed Release file (debian-archive-keyring).
# - Only the files nvcc needs are unpacked and laid out as NVIDIA's own installer does (bin/,
#   nvvm/bin/cicc, nvvm/libdevice, include/, lib64/) with an nvcc.profile of our own, since
#   Debian's points into /usr. nvidia-cuda-dev is ~0.9 GB (every CUDA library) for 16 MB of
#   headers and cudart_static; its download is deleted once unpacked (~1 min the first time).
# - nvcc 12.4 accepts host gcc up to 13 (Debian 12 has 12.2); its newest GPU target is
#   sm_90, so CUDA 12 builds have no SASS for Blackwell (crates/cuzk-cuda/build.rs).
# Either way `CUZK_CUDA_LIB` is passed by crates/cuzk-cuda/build.rs as `-L native=…` so that
# cudart_static links without a system CUDA.
set -euo pipefail

major="${CUZK_CUDA_MAJOR:-13}"
dir="${CUZK_CUDA_HOME:-}"
print_env=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --env) print_env=1 ;;
        --cuda) major="${2:?--cuda needs 12 or 13}"; shift ;;
        --cuda=*) major="${1#--cuda=}" ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
        -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
        *) dir="$1" ;;
    esac
    shift
done

install_13() {
    VERSION_NVCC=13.0.88
    dir="${dir:-$HOME/.cache/cuzk/cuda-13.0}"
    root="$dir/nvidia/cu13"
    if [[ ! -x "$root/bin/nvcc" ]] || ! "$root/bin/nvcc" --version 2>/dev/null | grep -q "V$VERSION_NVCC"; then
        mkdir -p "$dir"
        echo "installing nvcc $VERSION_NVCC from PyPI into $dir" >&2
        python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$dir" \
            "nvidia-cuda-nvcc==$VERSION_NVCC" "nvidia-nvvm==13.0.*" "nvidia-cuda-runtime==13.0.*" \
            "nvidia-cuda-crt==13.0.*" "nvidia-cuda-cccl==13.0.*" >&2
    fi
    [[ -e "$root/lib64" ]] || ln -s lib "$root/lib64"
    lib="$root/lib"
}

install_12() {
    # The upstream versions of Debian's packages (nvcc/cicc 12.4.131, runtime 12.4.127: both
    # CUDA 12.4 Update 1); the Debian revision is whatever trixie has.
    VERSION_NVCC=12.4.131
    local dev_version=12.4.127
    dir="${dir:-$HOME/.cache/cuzk/cuda-12.4}"
    root="$dir/cuda"
    lib="$root/lib64"
    if [[ -x "$root/bin/nvcc" && -f "$lib/libcudart_static.a" && -f "$root/include/nv/target" ]] &&
        "$root/bin/nvcc" --version 2>/dev/null | grep -q "V$VERSION_NVCC"; then
        return
    fi
    for tool in apt-get dpkg-deb; do
        command -v $tool >/dev/null || { echo "CUDA 12: $tool not found (the toolkit comes from Debian's packages)" >&2; exit 1; }
    done
    local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [[ -f $keyring ]] || { echo "CUDA 12: $keyring missing (apt-get install debian-archive-keyring)" >&2; exit 1; }
    local mirror="${CUZK_DEBIAN_MIRROR:-}"
    if [[ -z $mirror ]]; then
        # The mirror of the suite this machine runs (not its -security or -updates suites).
        local codename
        codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
        mirror=$(apt-get indextargets --no-release-info --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
            awk -v c="$codename" '$2 == c { print $1; exit }')
        [[ -n $mirror ]] || { echo "CUDA 12: no Debian mirror in this machine's apt sources; set CUZK_DEBIAN_MIRROR to one" >&2; exit 1; }
    fi
    echo "installing nvcc $VERSION_NVCC from Debian (trixie, non-free) into $dir" >&2
    local apt="$dir/apt"
    rm -rf "$apt" "$dir/unpack" "$root.new"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$dir/unpack"
    echo "deb [signed-by=$keyring] ${mirror%/} trixie non-free" >"$apt/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1
        -o APT::Sandbox::User="$(id -un)" -o Acquire::Languages=none -qq)
    apt-get "${opts[@]}" update >&2
    (cd "$apt/debs" && apt-get "${opts[@]}" download nvidia-cuda-toolkit nvidia-cuda-dev >&2)
    local toolkit dev
    toolkit=$(ls "$apt"/debs/nvidia-cuda-toolkit_*.deb)
    dev=$(ls "$apt"/debs/nvidia-cuda-dev_*.deb)
    [[ $(dpkg-deb -f "$toolkit" Version) == "$VERSION_NVCC~"* ]] || { echo "CUDA 12: trixie has nvidia-cuda-toolkit $(dpkg-deb -f "$toolkit" Version), not $VERSION_NVCC" >&2; exit 1; }
    [[ $(dpkg-deb -f "$dev" Version) == "$dev_version~"* ]] || { echo "CUDA 12: trixie has nvidia-cuda-dev $(dpkg-deb -f "$dev" Version), not $dev_version" >&2; exit 1; }
    local u="$dir/unpack"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$u/wheels" \
        "nvidia-cuda-cccl-cu12==12.4.127.post1" >&2
    dpkg-deb --fsys-tarfile "$toolkit" | tar -x -C "$u" ./usr/lib/nvidia-cuda-toolkit/bin/nvcc \
        ./usr/lib/nvidia-cuda-toolkit/bin/cicc ./usr/lib/nvidia-cuda-toolkit/bin/crt \
        ./usr/lib/nvidia-cuda-toolkit/libdevice ./usr/bin/ptxas ./usr/bin/fatbinary ./usr/bin/nvlink \
        ./usr/bin/cudafe++ ./usr/bin/bin2c ./usr/bin/nvprune ./usr/bin/cuobjdump
    dpkg-deb --fsys-tarfile "$dev" | tar -x -C "$u" ./usr/include \
        ./usr/lib/x86_64-linux-gnu/libcudart_static.a ./usr/lib/x86_64-linux-gnu/libcudadevrt.a
    local new="$root.new"
    mkdir -p "$new/bin" "$new/nvvm/bin" "$new/lib64"
    mv "$u"/usr/lib/nvidia-cuda-toolkit/bin/{nvcc,crt} "$u"/usr/bin/* "$new/bin/"
    mv "$u/usr/lib/nvidia-cuda-toolkit/bin/cicc" "$new/nvvm/bin/"
    mv "$u/usr/lib/nvidia-cuda-toolkit/libdevice" "$new/nvvm/"
    mv "$u/usr/include" "$new/include"
    mv "$u"/wheels/nvidia/cuda_cccl/include/{cuda,cub,nv,thrust} "$new/include/"
    mv "$u"/usr/lib/x86_64-linux-gnu/*.a "$new/lib64/"
    # nvcc reads this beside itself ($(_HERE_) is bin/): where cicc, libdevice, the headers
    # and the libraries are (the layout of NVIDIA's installer, relative, so the tree can move).
    cat >"$new/bin/nvcc.profile" <<'EOF'
TOP                = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
PATH              += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES          += "-I$(TOP)/include" $(_SPACE_)
LIBRARIES          =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS      +=
PTXAS_FLAGS       +=
EOF
    rm -rf "$root"
    mv "$new" "$root"
    # The downloads are ~1 GB and never needed again.
    rm -rf "$apt" "$u"
}

case "$major" in
    13) install_13 ;;
    12) install_12 ;;
    *) echo "--cuda $major: only 12 and 13 are supported" >&2; exit 2 ;;
esac
[[ -f "$lib/libcudart_static.a" ]] || { echo "cudart_static missing under $lib" >&2; exit 1; }
"$root/bin/nvcc" --version >&2

if [[ $print_env == 1 ]]; then
    echo "export PATH=\"$root/bin:\$PATH\""
    echo "export NVCC=\"$root/bin/nvcc\""
    echo "export CUDA_PATH=\"$root\""
    echo "export CUZK_CUDA_LIB=\"$lib\""
    # Read by scripts that build with it (build-gpu-binaries.sh), so that one variable chooses.
    echo "export CUZK_CUDA_MAJOR=$major"
fi
