#!/usr/bin/env bash
# MSM at 2^27 G1: 7f95944 (base) against this build (new); then a verified PoRep 32 GiB stream.
B=/tmp/devbins
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $OUT/gpu.txt
for b in base new; do
  bin=$B/cuzk-bench; [ $b = base ] && bin=$B/cuzk-bench-base
  echo "== $b"; CUZK_MSM_TRACE=1 timeout 120 $bin gpu-msm --device-scalars --sizes 134217728 --reps 2 2>&1
done > $OUT/msm.txt 2>&1
grep -E "^== |wide MSM.*buckets [0-7]|│ G" $OUT/msm.txt
(cd $B && timeout 100 ./gpu-tests --test-threads 1 affine_bucket_sums 2>&1 | tail -5) | tee $OUT/tests.txt
N=${N:-6} J=3 WORK=/tmp/w timeout 400 bash scripts/bench-h200.sh $B porep32 > $OUT/porep.log 2>&1
echo porep rc=$?
grep -E "s/proof|COMPLETED|filecoin|per partition|device|error|Error" $OUT/porep.log | tail -30
