# hist — the histogram family in one call on the GPU machine: builds, runs test_gpu_hist (cuda against
# emu and a plain search of numpy's edges), the numpy cross-check (tests/api/gen/make_hist_cases.py
# --live) against a daemon on cuda, bench_hist (warpd against CUB DeviceHistogram::HistogramEven:
# 256 and 65536 bins at 2^24 and 2^28 f32, kernel time and GB/s) and bench_hist_cupy.py (cp.histogram);
# logs in $OUT. About 2-3 minutes.
#   bench/gpu.sh hist   (FULL=1: test_gpu_hist whole, not --quick; ROUNDS=N random numpy rounds, 10)
make -j16 build/warpd build/tests/gpu/test_gpu_hist build/bench/stats/bench_hist >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "== test_gpu_hist ${FULL:+(full)}"
timeout 240 ./build/tests/gpu/test_gpu_hist ${FULL:+--full} $([ -z "${FULL:-}" ] && echo --quick) >"$OUT/test_gpu_hist.log" 2>&1; echo "(exit $?)"
tail -25 "$OUT/test_gpu_hist.log"
echo "== numpy against a cuda daemon"
. tests/daemon.sh
hist_tmp=$(mktemp -d)
if warpd_start ./build/warpd "$hist_tmp" --backend cuda; then
  timeout 150 python3 tests/api/gen/make_hist_cases.py --live "http://127.0.0.1:$port" --rounds "${ROUNDS:-10}" 2>&1 | tee "$OUT/hist_numpy.log" | tail -12
  kill "$pid"; wait "$pid" 2>/dev/null
else
  echo "!! the daemon did not start"; cat "$hist_tmp/err"
fi
rm -rf "$hist_tmp"
echo "== bench_hist (warpd against CUB HistogramEven)"
timeout 150 ./build/bench/stats/bench_hist 2>&1 | tee "$OUT/bench_hist.log"
echo "== bench_hist_cupy (cp.histogram)"
timeout 120 python3 bench/stats/bench_hist_cupy.py 2>&1 | tee "$OUT/bench_hist_cupy.log"
