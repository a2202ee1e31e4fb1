# families — the five data families (stats, map, anywidth, bykey, hist) on the GPU in one call of
# about 6 minutes (for a small device budget): one build; the five exactness tests (cuda against emu,
# quick forms) under time caps; then each bench at 2^24..2^28 (f32) beside CUB and CuPy. The per-family
# tasks (stats, map, anywidth, bykey, hist) run the same programs at full size. Logs in $OUT.
#   bench/gpu.sh families      (SKIP=bench: the tests only)
t0=$(date +%s)
gpu_commit_line
step() { # name cap command...: one line with the exit status, seconds and the "N passed, N failed" line
  local name=$1 cap=$2 s=$(date +%s); shift 2
  timeout -k 5 "$cap" "$@" >"$OUT/$name.log" 2>&1; local rc=$?
  printf '%-18s rc=%-3d %4d s  %s\n' "$name" $rc $(( $(date +%s) - s )) \
    "$(grep -aE '[0-9]+ passed, [0-9]+ failed' "$OUT/$name.log" | tail -n 1)"
  grep -aE 'FAIL|mismatch|SKIPPED|error' "$OUT/$name.log" | head -4
}
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
t=(test_gpu_stats test_gpu_map test_gpu_anywidth test_gpu_bykey test_gpu_hist)
b=(stats/bench_stats reduce/bench_map reduce/bench_map_cub reduce/bench_anywidth reduce/bench_bykey
   stats/bench_hist)
make -j16 "$BUILD/warpd" "${t[@]/#/$BUILD/tests/gpu/}" "${b[@]/#/$BUILD/bench/}" >"$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
step test_gpu_stats 50 "$BUILD/tests/gpu/test_gpu_stats"
step test_gpu_map 60 "$BUILD/tests/gpu/test_gpu_map"
step test_gpu_anywidth 50 "$BUILD/tests/gpu/test_gpu_anywidth" --quick
step test_gpu_bykey 40 "$BUILD/tests/gpu/test_gpu_bykey"
step test_gpu_hist 50 "$BUILD/tests/gpu/test_gpu_hist" --quick
if ! skip bench; then
  step bench_stats 45 "$BUILD/bench/stats/bench_stats" --max-log2 28 --trials 5; cat "$OUT/bench_stats.log"
  step bench_map 30 "$BUILD/bench/reduce/bench_map" --max-log2 28; cat "$OUT/bench_map.log"
  step bench_map_cub 25 "$BUILD/bench/reduce/bench_map_cub" --max-log2 28; tail -n 8 "$OUT/bench_map_cub.log"
  step bench_anywidth 30 "$BUILD/bench/reduce/bench_anywidth" --max-log2 28 --rounds 5; cat "$OUT/bench_anywidth.log"
  step bench_bykey 30 "$BUILD/bench/reduce/bench_bykey" --log2 24,28 --blocks ""; cat "$OUT/bench_bykey.log"
  step bench_hist 30 "$BUILD/bench/stats/bench_hist" --log2 24 --log2 28 --bins 256 --bins 65536; cat "$OUT/bench_hist.log"
  step cupy_stats 45 python3 bench/stats/bench_stats_cupy.py --max-log2 28; cat "$OUT/cupy_stats.log"
  step cupy_hist 30 python3 bench/stats/bench_hist_cupy.py; cat "$OUT/cupy_hist.log"
fi
echo "total $(( $(date +%s) - t0 )) s"
