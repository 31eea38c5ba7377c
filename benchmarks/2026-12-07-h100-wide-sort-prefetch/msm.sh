#!/usr/bin/env bash
# MSM micro-benchmarks: base (a5cc15f) against the experiment (wide sort + rnd_pairs occupancy variants).
set -u
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
mkdir -p /tmp/b && tar xzf devbins.tgz -C /tmp/b && ls /tmp/b/*
cat /tmp/b/base/BUILT_FROM /tmp/b/exp/BUILT_FROM
export CUZK_MSM_TRACE=1
run() { # name bin args...
    local name=$1 bin=$2; shift 2
    local t0=$(date +%s)
    timeout 200 /tmp/b/$bin/cuzk-bench gpu-msm --device-scalars --reps 2 "$@" > $OUT/$name.log 2>&1
    echo "== $name rc=$? $(( $(date +%s) - t0 )) s"
    grep -E "^│ G" $OUT/$name.log | cut -c1-200
    grep "wide MSM" $OUT/$name.log | tail -3 | cut -c20-230
}
G1=134217728
run g1-base base --sizes $G1
CUZK_RND_MINB=4 run g1-exp4 exp --sizes $G1
CUZK_RND_PIPE=1 CUZK_RND_MINB=4 run g1-pipe4 exp --sizes $G1
G2=33554432
run g2-base base --g2 --sizes $G2
run g2-exp0 exp --g2 --sizes $G2
CUZK_RND_PIPE=1 run g2-pipe0 exp --g2 --sizes $G2
echo "== GPU tests (exp binary, its default kernels)"
T=170 bash devnext/tests.sh 2>&1 | tail -22
echo "== GPU tests of the affine rounds with CUZK_RND_PIPE=1 CUZK_RND_MINB=4"
CUZK_RND_PIPE=1 CUZK_RND_MINB=4 T=120 TESTS="affine_bucket_sums" bash devnext/tests.sh 2>&1 | tail -8
