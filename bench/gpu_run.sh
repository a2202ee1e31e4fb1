#!/usr/bin/env bash
# One call on the GPU machine: unpack the carried .debs (no package registry there), build, run the
# GPU tests and the benchmarks, and print a short table last. Logs go to $OUT when it is set.
#   bench/gpu_run.sh [test|bench|all]
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
OUT=${OUT:-/tmp/warpd-gpu-out}; mkdir -p "$OUT"
if [ -d .debs ]; then
  mkdir -p /tmp/deps && for f in .debs/*.deb; do dpkg -x "$f" /tmp/deps; done
  export CPATH=/tmp/deps/usr/include LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
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
