#!/usr/bin/env bash
# SoA round arrays: GPU tests, then base vs new at 2^27 G1 and 2^25 G2, then ncu of new rounds.
B=/tmp/devbins
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
cd $B
timeout 150 ./gpu-tests --test-threads 1 affine_bucket_sums on_either_side_of_the_affine_switch 2>&1 | tail -8 | tee $OUT/tests.txt
for g in "" "--g2"; do
  sz=134217728; [ -n "$g" ] && sz=33554432
  for b in base new; do
    bin=./cuzk-bench; [ $b = base ] && bin=/tmp/devbins/cuzk-bench-base
    echo "== $b $g"; CUZK_MSM_TRACE=1 timeout 120 $bin gpu-msm $g --device-scalars --sizes $sz --reps 2 2>&1
  done
done > $OUT/msm.txt 2>&1
grep -E "^== |wide MSM|window 0|│ G" $OUT/msm.txt | grep -v "w=.. windows=.*buckets 79[0-9]" 
NCU=$(which ncu); S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section InstructionStats"
timeout 150 $NCU --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum --kernel-name regex:rnd_pairs --launch-count 3 $S \
  ./cuzk-bench gpu-msm --device-scalars --sizes 67108864 --reps 1 > $OUT/ncu-soa.txt 2>&1
grep -E "Duration|DRAM Throughput|dram__bytes|Executed Ipc A|Compute \(SM\)" $OUT/ncu-soa.txt
timeout 120 $NCU --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum --kernel-name regex:rnd_pairs --launch-count 2 --section SpeedOfLight \
  /tmp/devbins/cuzk-bench-base gpu-msm --device-scalars --sizes 67108864 --reps 1 > $OUT/ncu-base.txt 2>&1
grep -E "Duration|DRAM Throughput|dram__bytes" $OUT/ncu-base.txt
