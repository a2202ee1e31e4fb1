# check — the tree checked on the GPU machine in device calls that each fit the device's 10 minutes.
#   bench/gpu.sh check [quick|tests|reduce|perf]
#   quick (the default, when time is short): builds, runs the quick GPU tests each under a time cap (a
#          program past its cap gets its threads' backtraces from cuda-gdb into $OUT/NAME.bt, then is
#          killed), then the engine's wrk table (new / never / today), bench_reduce against CUB and the
#          cold prewarm. STEPS="tests wrk reduce prewarm" picks parts; "batch": test_gpu_batch alone;
#          "full": test_gpu_warp and test_gpu_reduce whole (WARP_CAP=150, REDUCE_CAP=400); ENGINES and
#          DURATION for the wrk step.
#   tests: every GPU test program but test_gpu_reduce one after another (longest first), each with its
#          time and closing line, then devices.sh --cuda and ops_gpu_check; stops starting new ones past
#          LIMIT seconds (540) and says which it left; one still running at CAP seconds (590, inside the
#          device's 600) is killed with its backtraces (bench/lib/gpu_tasks.sh's capped).
#   reduce: test_gpu_reduce alone (every reduction/scan kernel, about 6 minutes on the H100 machine).
#   perf:  the engine's whole wrk table (DURATION=4), bench_reduce's full sweep against CUB, and the cold
#          prewarm of prewarm/default.json (bench/compile/prewarm.sh).
# Every step prints one line; logs go to $OUT.
what=${1:-quick}
t0=$(date +%s)
gpu_commit_line
case $what in
quick)
  STEPS=${STEPS:-tests wrk reduce prewarm}
  gpu_build "$BUILD/bench/reduce/bench_reduce" || exit 1
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
    timeout 150 "$BUILD/bench/reduce/bench_reduce" --no-sweep 2>&1 | tee "$OUT/bench_reduce.log" | tail -22
  fi
  if [[ " $STEPS " == *" prewarm "* ]]; then timeout 60 bench/compile/prewarm.sh 2>&1 | head -9; fi
  ;;
tests)
  LIMIT=${LIMIT:-540}
  CAP=${CAP:-590}
  gpu_build || exit 1
  progs=(test_gpu_warp test_gpu_batch test_gpu_streams test_gpu_recover test_gpu_buffers test_gpu_stream)
  for p in "$BUILD"/tests/gpu/*; do
    b=$(basename "$p"); [ -x "$p" ] && [ -f "$p" ] && [[ $b != *.o && $b != *.d ]] || continue
    [[ " ${progs[*]} " == *" $b "* || $b == test_gpu_reduce ]] || progs+=("$b")
  done
  left=()
  run_one() { # name command...
    local name=$1; shift
    local spent=$(( $(date +%s) - t0 ))
    if [ $spent -gt "$LIMIT" ]; then left+=("$name"); return; fi
    capped "$name" $(( CAP - spent )) "$@"
  }
  for p in "${progs[@]}"; do run_one "$p" "$BUILD/tests/gpu/$p"; done
  run_one devices_cuda env BUILD="$BUILD" tests/api/devices.sh --cuda
  run_one ops_gpu_check tests/unit/ops_gpu_check.sh
  [ ${#left[@]} -gt 0 ] && echo "NOT RUN (time): ${left[*]}"
  ;;
reduce)
  make -j16 "$BUILD/tests/gpu/test_gpu_reduce" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  "$BUILD/tests/gpu/test_gpu_reduce" 2>&1 | tee "$OUT/test_gpu_reduce.log" | grep -v mismatch | tail -20
  ;;
perf)
  DURATION=${DURATION:-4} SKIP_TESTS=1 bench/gpu.sh engine 2>&1 | tee "$OUT/engine.log" | grep -v '^make'
  make -j16 "$BUILD/bench/reduce/bench_reduce" >>"$OUT/build.log" 2>&1 &&
    timeout 150 "$BUILD/bench/reduce/bench_reduce" 2>&1 | tee "$OUT/bench_reduce.log" | tail -25
  timeout 90 bench/compile/prewarm.sh 2>&1 | tail -8
  ;;
*)
  echo "bench/gpu.sh check: quick, tests, reduce or perf, not '$what'" >&2
  exit 2
  ;;
esac
echo "total $(( $(date +%s) - t0 )) s"
