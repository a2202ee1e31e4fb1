#!/usr/bin/env bash
# One call on the GPU machine for the reductions: unpack the carried .debs, build, run
# test_gpu_reduce (cuda against emu) and bench_reduce (+ CuPy), logs in $OUT.
#   bench/gpu_reduce_run.sh [test-args...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/warpd-gpu-out}; mkdir -p "$OUT"
if [ -d .debs ]; then
  mkdir -p /tmp/deps && for f in .debs/*.deb; do dpkg -x "$f" /tmp/deps; done
  export CPATH=/tmp/deps/usr/include LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
make -j16 build/warpd build/tests/gpu/test_gpu_reduce build/bench/bench_reduce >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "== test_gpu_reduce $*"
timeout "${TEST_TIMEOUT:-300}" ./build/tests/gpu/test_gpu_reduce "$@" >"$OUT/test_gpu_reduce.log" 2>&1; echo "(exit $?)"
grep -vE '^  mismatch' "$OUT/test_gpu_reduce.log" | tail -25; grep -E '^  mismatch' "$OUT/test_gpu_reduce.log" | head -16
echo "== bench_reduce"
timeout "${BENCH_TIMEOUT:-200}" ./build/bench/bench_reduce ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_reduce.log"
echo "== bench_cupy"
timeout 120 python3 bench/bench_cupy.py 2>&1 | tee "$OUT/bench_cupy.log"
echo "== http_reduce"
timeout 150 bash bench/http_reduce.sh 2>&1 | tee "$OUT/http_reduce.log"
