#!/usr/bin/env bash
# GPU tests of the wide MSM paths on the experiment build.
set -u
mkdir -p /tmp/b && [ -d /tmp/b/exp ] || tar xzf devbins.tgz -C /tmp/b
cat /tmp/b/exp/BUILT_FROM
t0=$(date +%s)
timeout ${T:-400} /tmp/b/exp/gpu-tests --test-threads 1 ${TESTS:-dense_msms_with_wide_windows_equal_the_cpu_msm affine_bucket_sums a_paused_wide_msm dense_msms_equal_sppark_on_either_side dense_g2} 2>&1 | tail -25
echo "rc=${PIPESTATUS[0]} $(( $(date +%s) - t0 )) s"
