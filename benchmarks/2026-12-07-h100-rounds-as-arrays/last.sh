#!/usr/bin/env bash
# 0a3a9d7: the wide MSM's host-clock trace at 2^27, and XYZZ against the rounds at 2^24, 2^25 (G1).
B=/tmp/devbins
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
CUZK_MSM_TRACE=1 timeout 200 $B/cuzk-bench gpu-msm --device-scalars --sizes 16777216,33554432,134217728 --reps 2 > $OUT/msm.txt 2>&1
echo rc=$?
grep -E "wide MSM|│ G" $OUT/msm.txt | sed 's/(top window folded)//; s/windows a launch/w/'
