# bykey — reduce_by_key in one call: bench_bykey against CUB's
# DeviceReduce::ReduceByKey (f32 sum over i32 keys in runs of 1000, n = 2^24, 2^26, 2^28: warpd's kernel
# time and GB/s, CUB's, and warpd's speed as a multiple of CUB's), then test_gpu_bykey (cuda against emu,
# bit for bit, and integer sums against a plain reference). About 2 minutes; logs in $OUT.
#   bench/gpu.sh bykey   (BENCH_ARGS for bench_bykey, e.g. "--run 100 --log2 28"; TESTS=0 skips the test)
t0=$(date +%s)
gpu_commit_line
make -j16 "$BUILD/warpd" "$BUILD/tests/gpu/test_gpu_bykey" "$BUILD/bench/reduce/bench_bykey" >"$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
echo "== bench_bykey"
# shellcheck disable=SC2086 # BENCH_ARGS: words
timeout 120 "$BUILD/bench/reduce/bench_bykey" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_bykey.log"
[ "${TESTS:-1}" = 0 ] || capped test_gpu_bykey 150 "$BUILD/tests/gpu/test_gpu_bykey"
