#!/usr/bin/env bash
# 1) ncu of the affine rounds (rnd_pairs, window 0's first 3) and of XYZZ accumulate, 2^26 G1;
# 2) slots-per-thread cap sweep at 2^27 G1 (experiment bench, CUZK_RND_MAXS).
tar xzf devbins.tgz -C /tmp && B=/tmp/devbins
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm,driver_version --format=csv
NCU=$(which ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1); echo ncu=$NCU
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section SchedulerStats --section WarpStateStats --section LaunchStats --section InstructionStats"
timeout 200 $NCU --clock-control none --kernel-name regex:rnd_pairs --launch-count 3 $S \
  $B/cuzk-bench gpu-msm --device-scalars --sizes 67108864 --reps 1 > $OUT/ncu-rnd.txt 2>&1
echo rc=$?
timeout 200 $NCU --clock-control none --kernel-name regex:accumulate --launch-count 6 $S \
  $B/cuzk-bench gpu-msm --device-scalars --sizes 67108864 --reps 1 > $OUT/ncu-acc.txt 2>&1
echo rc=$?
for m in 64 32 16 128; do
  echo "== MAXS $m"; CUZK_RND_MAXS=$m CUZK_MSM_TRACE=1 timeout 100 $B/cuzk-bench-x gpu-msm --device-scalars --sizes 134217728 --reps 2 2>&1
done > $OUT/maxs.txt 2>&1
cat $OUT/maxs.txt | grep -E "MAXS|wide MSM|G1 " | head -40
