# zerocopy — zero-copy small jobs (--zero-copy, on by default) on the GPU machine, in one run:
# builds; the GPU tests the change touches (test_gpu_batch: every batched family bit for bit against
# a copying reference, zero-copy runs counted; tests/api/devices.sh --cuda; test_gpu_reduce --quick);
# then one connection's p50 for GET /v1/health, a cached 3-element POST /v1/reduce and a 32-lane POST
# /v1/warp with zero-copy on and off (bench/gpu.sh prof without the profile, ROUNDS times each, in
# turn), and bench/gpu.sh engine for both at CONNS (default "1 256"). Logs under $OUT.
#   bench/gpu.sh zerocopy      (SKIP_TESTS=1, SKIP_BENCH=1 leave parts out; ONLY_BATCH=1: of the tests
#                              test_gpu_batch alone; ROUNDS=2; SECONDS_PER=4; DURATION=5)
echo "commit ${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}  $(date -u +%F)"
make -j16 build/warpd >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  make -j16 build/warpd build/tests/gpu/test_gpu_batch build/tests/gpu/test_gpu_reduce build/asan/warpd \
    build/asan/tests/api/api_devices >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  echo "== test_gpu_batch"
  BUILD=build timeout 300 build/tests/gpu/test_gpu_batch >"$OUT/test_gpu_batch.log" 2>&1
  grep -E "replays|zero-copy|batches:|FAIL|passed" "$OUT/test_gpu_batch.log" | head -20
  [ "${ONLY_BATCH:-0}" = 1 ] || {
  echo "== tests/api/devices.sh --cuda"
  BUILD=build timeout 240 tests/api/devices.sh --cuda >"$OUT/devices.log" 2>&1
  grep -E "passed|FAIL|!!|SKIPPED" "$OUT/devices.log" | head -20
  echo "== test_gpu_reduce --quick"
  timeout 240 build/tests/gpu/test_gpu_reduce --quick 2>&1 | tail -2
  }
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  for round in $(seq "${ROUNDS:-2}"); do
    for zc in on off; do
      echo "== zero-copy $zc (round $round)"
      NO_PERF=1 FLAGS="--zero-copy $zc" SECONDS_PER=${SECONDS_PER:-4} bench/gpu.sh prof 2>&1 |
        grep -E "^round|^reduce|^warp|server p50" | grep -v prof -A1 | grep -v "^--"
    done
  done
  ENGINES="new copy=--zero-copy,off" CONNS=${CONNS:-1 256} DURATION=${DURATION:-5} SKIP_TESTS=1 \
    bench/gpu.sh engine 2>&1 | grep -v "^commit"
fi
