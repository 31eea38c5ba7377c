#!/usr/bin/env bash
# Installs the CUDA compiler cuzk's `cuda` feature needs, from PyPI, into a private folder —
# no root, no system CUDA, works on a fresh machine and in CI (no GPU needed to compile).
#
#   scripts/install-cuda-toolchain.sh [DIR]      (default: $CUZK_CUDA_HOME or ~/.cache/cuzk/cuda-13.0)
#
# Then, in the same shell:   eval "$(scripts/install-cuda-toolchain.sh --env)"
#
# Why each step:
# - nvcc 13.0 ships as wheels (nvcc + ptxas, nvvm/cicc, runtime headers and cudart_static,
#   the crt headers, cccl); they all unpack into one tree, nvidia/cu13.
# - cc-rs looks for the CUDA libraries in <nvcc>/../lib64; the wheels ship lib/, so a
#   lib64 → lib link is made.
# - `CUZK_CUDA_LIB` is passed by crates/cuzk-cuda/build.rs as `-L native=…` so that
#   cudart_static links without a system CUDA.
set -euo pipefail

VERSION_NVCC=13.0.88
dir="${CUZK_CUDA_HOME:-$HOME/.cache/cuzk/cuda-13.0}"
print_env=0
for arg in "$@"; do
    case "$arg" in
        --env) print_env=1 ;;
        -h|--help) sed -n 2,16p "$0"; exit 0 ;;
        *) dir="$arg" ;;
    esac
done
root="$dir/nvidia/cu13"

if [[ ! -x "$root/bin/nvcc" ]] || ! "$root/bin/nvcc" --version 2>/dev/null | grep -q "V$VERSION_NVCC"; then
    mkdir -p "$dir"
    echo "installing nvcc $VERSION_NVCC from PyPI into $dir" >&2
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --upgrade --target "$dir" \
        "nvidia-cuda-nvcc==$VERSION_NVCC" "nvidia-nvvm==13.0.*" "nvidia-cuda-runtime==13.0.*" \
        "nvidia-cuda-crt==13.0.*" "nvidia-cuda-cccl==13.0.*" >&2
fi
[[ -e "$root/lib64" ]] || ln -s lib "$root/lib64"
[[ -f "$root/lib/libcudart_static.a" ]] || { echo "cudart_static missing under $root/lib" >&2; exit 1; }
"$root/bin/nvcc" --version >&2

if [[ $print_env == 1 ]]; then
    echo "export PATH=\"$root/bin:\$PATH\""
    echo "export NVCC=\"$root/bin/nvcc\""
    echo "export CUDA_PATH=\"$root\""
    echo "export CUZK_CUDA_LIB=\"$root/lib\""
fi
