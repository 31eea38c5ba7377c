#!/usr/bin/env bash
# Build scripts/kerneltrace.c (a CUPTI injection library that names every kernel a process
# launches and every synchronization it waits in) into OUT_DIR, with the CUPTI library it loads,
# for a GPU machine with no toolkit:
#
#   scripts/build-kerneltrace.sh [OUT_DIR]     (default: devcarry)
#
# On the GPU machine: CUDA_INJECTION64_PATH=OUT_DIR/libkerneltrace.so
# LD_LIBRARY_PATH=OUT_DIR PROGRAM 2> trace.err. CUPTI comes from NVIDIA's PyPI wheel
# nvidia-cuda-cupti-cu12 (12.8: a CUDA 12 CUPTI runs on drivers from 570 up, 580 included); the
# headers of the CUDA 13 toolchain that install-cuda-toolchain.sh sets up provide cuda.h.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-devcarry}"
cupti_version=12.8.90
cache="${XDG_CACHE_HOME:-$HOME/.cache}/cuzk/cupti-$cupti_version"
eval "$(scripts/install-cuda-toolchain.sh --cuda 13 --env)" >/dev/null
if [[ ! -f $cache/nvidia/cuda_cupti/lib/libcupti.so.12 ]]; then
    mkdir -p "$cache"
    pip download --quiet --no-deps "nvidia-cuda-cupti-cu12==$cupti_version" -d "$cache"
    (cd "$cache" && python3 -m zipfile -e nvidia_cuda_cupti_cu12-*.whl .)
fi
cupti="$cache/nvidia/cuda_cupti"
mkdir -p "$out"
cc -O2 -shared -fPIC -o "$out/libkerneltrace.so" scripts/kerneltrace.c \
    -I "$cupti/include" -I "$CUDA_PATH/include" -L "$cupti/lib" -l:libcupti.so.12 -Wl,-rpath,'$ORIGIN'
cp "$cupti/lib/libcupti.so.12" "$out/"
echo "built $out/libkerneltrace.so (CUPTI $cupti_version beside it)"
