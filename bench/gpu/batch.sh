# batch — one call on the GPU machine for dynamic batching: build; test_gpu_batch (batched vs alone over every
# warp family and the reduce/scan families, on cuda); regression checks of the templates the batching
# touched (test_gpu_warp for two families: wp_thread indexes a grid now; test_gpu_reduce --quick for
# the families whose bodies moved into functions); then bench_batch (req/s at 1..256 connections with
# and without batching). Logs in $OUT.   bench/gpu.sh batch [test|bench|all]   (BENCH_BATCH_SECONDS=2)
what=${1:-all}
make -j16 build/warpd build/tests/gpu/test_gpu_batch build/tests/gpu/test_gpu_warp build/tests/gpu/test_gpu_reduce \
  build/bench/http/bench_batch >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
git log --oneline -1 2>/dev/null || true
if [ "$what" != bench ]; then
  BUILD=build timeout 300 build/tests/gpu/test_gpu_batch >"$OUT/test_gpu_batch.log" 2>&1
  grep -E 'FAIL|passed, .* failed|batches:' "$OUT/test_gpu_batch.log" | head -30
  for f in shfl_xor match_all; do
    timeout 60 build/tests/gpu/test_gpu_warp --family $f 2>&1 | tail -2
  done
  for f in device_reduce argmin segmented_reduce device_scan block_scan stencil; do
    timeout 60 build/tests/gpu/test_gpu_reduce --quick --family $f 2>&1 | tail -1
  done
fi
if [ "$what" != test ]; then
  BENCH_BATCH_SECONDS=${BENCH_BATCH_SECONDS:-2} timeout 200 build/bench/http/bench_batch 2>&1 | grep -v '^warpd' | tee "$OUT/bench_batch.log"
fi
