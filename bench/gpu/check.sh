# check — one device call that fits the device's 10 minutes when time is short: builds, runs
# the quick GPU tests each under a time cap (a program past its cap gets its threads' backtraces from
# cuda-gdb into $OUT/NAME.bt, then is killed), then the engine's wrk table (new / never / today),
# bench_reduce against CUB and the cold prewarm. Every step prints one line; logs go to $OUT.
#   bench/gpu.sh check        (STEPS="tests wrk reduce prewarm" picks parts; "batch": test_gpu_batch
#                             alone; "full": test_gpu_warp and test_gpu_reduce whole, WARP_CAP=150,
#                             REDUCE_CAP=400; ENGINES, DURATION for the wrk step)
STEPS=${STEPS:-tests wrk reduce prewarm}
t0=$(date +%s)
gpu_commit_line
gpu_build "$BUILD/bench/bench_reduce" || exit 1

[[ " $STEPS " == *" tests "* || " $STEPS " == *" batch "* ]] && capped test_gpu_batch 100 "$BUILD/tests/gpu/test_gpu_batch"
if [[ " $STEPS " == *" tests "* ]]; then
  for p in test_gpu_streams test_gpu_recover test_gpu_buffers test_gpu_stream templates_direct; do
    capped $p 40 "$BUILD/tests/gpu/$p"
  done
  capped devices_cuda 60 env BUILD="$BUILD" tests/api/devices.sh --cuda
  capped test_gpu_reduce_quick 150 "$BUILD/tests/gpu/test_gpu_reduce" --quick
fi
if [[ " $STEPS " == *" full "* ]]; then # the full reduce/scan and warp programs (test-gpu's longest)
  capped test_gpu_warp ${WARP_CAP:-150} "$BUILD/tests/gpu/test_gpu_warp"
  capped test_gpu_reduce ${REDUCE_CAP:-400} "$BUILD/tests/gpu/test_gpu_reduce"
  grep -a progress "$OUT/test_gpu_reduce.log" | tail -n 3
fi
if [[ " $STEPS " == *" wrk "* ]]; then
  ENGINES=${ENGINES:-new never today} DURATION=${DURATION:-3} SKIP_TESTS=1 \
    timeout 200 bench/gpu.sh engine 2>&1 | tee "$OUT/engine.log" | grep -v '^make'
fi
if [[ " $STEPS " == *" reduce "* ]]; then
  timeout 150 "$BUILD/bench/bench_reduce" --no-sweep 2>&1 | tee "$OUT/bench_reduce.log" | tail -22
fi
if [[ " $STEPS " == *" prewarm "* ]]; then timeout 60 bench/prewarm.sh 2>&1 | head -9; fi
echo "total $(( $(date +%s) - t0 )) s"
