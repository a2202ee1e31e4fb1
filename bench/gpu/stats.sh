# stats — the statistics and norms on the GPU machine, one call (about 3 minutes): build, then
# test_gpu_stats (every statistic's accumulator on cuda against emu, bit for bit), bench_stats (mean, var,
# std, norm2, count_nonzero, norm1, norminf against device_reduce's own sum, f32 at 2^24, 2^26, 2^28,
# 2^30: GB/s and the ratio, goal >= 0.9) and bench_stats_cupy.py (CuPy's x.var(), norm, count_nonzero
# beside); logs in $OUT.
#   bench/gpu.sh stats   (TEST_TIMEOUT=150; MAX_LOG2=30; TRIALS=7)
make -j16 build/warpd build/tests/gpu/test_gpu_stats build/bench/stats/bench_stats >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "== test_gpu_stats"
timeout "${TEST_TIMEOUT:-150}" ./build/tests/gpu/test_gpu_stats >"$OUT/test_gpu_stats.log" 2>&1; echo "(exit $?)"
tail -20 "$OUT/test_gpu_stats.log"
echo "== bench_stats (warpd)"
timeout 120 ./build/bench/stats/bench_stats --max-log2 "${MAX_LOG2:-30}" --trials "${TRIALS:-7}" 2>&1 | tee "$OUT/bench_stats.log"
echo "== bench_stats_cupy.py (CuPy)"
timeout 90 python3 bench/stats/bench_stats_cupy.py --max-log2 "${MAX_LOG2:-30}" 2>&1 | tee "$OUT/bench_stats_cupy.log"
