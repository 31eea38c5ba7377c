#!/usr/bin/env bash
# Device-side driver for one operator's-host run (issue #35): GPU tests, prepare, the three
# starts, prove. Started with setsid so it outlives the call; later calls poll.
set -u
cd "$(dirname "$0")/.."
W=/tmp/w; mkdir -p $W/out
export WORK=$W OUT=$W/out
{
echo "== $(date +%T) gpu tests"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for t in failures::a_panic_in_the_device_region_leaves_no_cpu_b_g2_thread_reading_the_parameters the_device_subgroup_check_finds_what_blst_finds; do
  s=$SECONDS; timeout 180 devcarry/gpu-tests --test-threads 1 --exact "$t" > $W/out/gputest-${t##*::}.log 2>&1; rc=$?
  echo "test $t rc=$rc $((SECONDS-s)) s"; grep -E "^test |test result" $W/out/gputest-${t##*::}.log
done
echo "== $(date +%T) prepare"
s=$SECONDS; bash scripts/bench-operator.sh devcarry prepare > $W/out/prepare.log 2>&1; echo "prepare rc=$? $((SECONDS-s)) s"
echo "== $(date +%T) start"
s=$SECONDS; OP_STARTS="first restart all" bash scripts/bench-operator.sh devcarry start > $W/out/start.log 2>&1; echo "start rc=$? $((SECONDS-s)) s"
grep -E "READY|exited" $W/out/start.log
echo "== $(date +%T) prove"
s=$SECONDS; N=${N:-14} J=3 WN=2 WDELAY=150 WGAP=15 NN=6 NDELAY=150 bash scripts/bench-operator.sh devcarry prove > $W/out/prove.log 2>&1; echo "prove rc=$? $((SECONDS-s)) s"
tail -12 $W/out/prove.log
echo "== $(date +%T) done"
} > $W/master.log 2>&1
touch $W/DONE
