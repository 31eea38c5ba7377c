#!/usr/bin/env bash
# 87dd341 (no stack frame) against 8b9421c... base here = 7f95944; new = 87dd341. G1 2^27, tests, ncu bytes.
B=/tmp/devbins
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for b in base new; do
  bin=$B/cuzk-bench; [ $b = base ] && bin=$B/cuzk-bench-base
  echo "== $b"; CUZK_MSM_TRACE=1 timeout 120 $bin gpu-msm --device-scalars --sizes 134217728 --reps 2 2>&1
done > $OUT/msm.txt 2>&1
grep -E "^== |wide MSM.*buckets [0-7]|window 0|│ G" $OUT/msm.txt
(cd $B && timeout 100 ./gpu-tests --test-threads 1 affine_bucket_sums 2>&1 | tail -5) | tee $OUT/tests.txt
timeout 120 ncu --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum --kernel-name regex:rnd_pairs --launch-count 2 --section SpeedOfLight --section WarpStateStats \
  $B/cuzk-bench gpu-msm --device-scalars --sizes 67108864 --reps 1 > $OUT/ncu.txt 2>&1
grep -E "Duration|DRAM Throughput|dram__bytes|inst_executed|Compute \(SM\)" $OUT/ncu.txt
