#!/usr/bin/env bash
# One call on the GPU machine for the reductions: unpack the carried .debs, build, run
# test_gpu_reduce (cuda against emu) and bench_reduce (+ CuPy), logs in $OUT.
#   bench/gpu_reduce_run.sh [test-args...]
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/gpu_env.sh
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
