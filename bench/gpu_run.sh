#!/usr/bin/env bash
# One call on the GPU machine: unpack the carried .debs (no package registry there), build, run the
# GPU tests and the benchmarks, and print a short table last. Logs go to $OUT when it is set.
#   bench/gpu_run.sh [test|bench|all]
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
. bench/gpu_env.sh
make -j16 build/warpd >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
summary=()
if [ "$what" != bench ]; then
  make -j16 test-gpu 2>&1 | tee "$OUT/test-gpu.log" | grep -E 'passed, .* failed|SKIPPED|FAIL|mismatch' | tail -40
  summary+=("test-gpu: $(grep -E '^gpu: ' "$OUT/test-gpu.log" | tail -n 1)")
fi
if [ "$what" != test ]; then
  make -j16 bench 2>&1 | tee "$OUT/bench.log" | grep -vE '^(cc|nvcc|ar) ' | tail -60
fi
echo; echo "== summary"; printf '%s\n' "${summary[@]}"
