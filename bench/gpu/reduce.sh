# reduce — one call on the GPU machine for the reductions: build, run test_gpu_reduce (cuda against
# emu), bench_reduce against CUB, bench_cupy.py and bench/http/http_reduce.sh; logs in $OUT.
#   bench/gpu.sh reduce [test-args...]   (TEST_TIMEOUT=300; BENCH_TIMEOUT=200; BENCH_ARGS for bench_reduce)
make -j16 build/warpd build/tests/gpu/test_gpu_reduce build/bench/reduce/bench_reduce >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "== test_gpu_reduce $*"
timeout "${TEST_TIMEOUT:-300}" ./build/tests/gpu/test_gpu_reduce "$@" >"$OUT/test_gpu_reduce.log" 2>&1; echo "(exit $?)"
grep -vE '^  mismatch' "$OUT/test_gpu_reduce.log" | tail -25; grep -E '^  mismatch' "$OUT/test_gpu_reduce.log" | head -16
echo "== bench_reduce"
timeout "${BENCH_TIMEOUT:-200}" ./build/bench/reduce/bench_reduce ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_reduce.log"
echo "== bench_cupy"
timeout 120 python3 bench/reduce/bench_cupy.py 2>&1 | tee "$OUT/bench_cupy.log"
echo "== http_reduce"
timeout 150 bash bench/http/http_reduce.sh 2>&1 | tee "$OUT/http_reduce.log"
