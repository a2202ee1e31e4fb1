# final — the lead's check of a whole tree on the GPU machine, in device calls that each fit the
# device's 10 minutes:  bench/gpu.sh final test|reduce|perf
#   test: builds, then every GPU test program but test_gpu_reduce one after another (longest first), each
#         with its time and closing line; stops starting new ones past LIMIT seconds (default 540) and
#         says which it left; one still running at CAP seconds (default 590, inside the device's 600)
#         has its backtraces taken and is killed (bench/gpu/lib.sh's capped).
#   reduce: test_gpu_reduce alone (every reduction/scan kernel, about 6 minutes on the H100 machine).
#   perf: bench/gpu.sh engine (wrk table new/never/win100/inline/today; DURATION=4), bench_reduce
#         (device_reduce/scan against CUB), and the cold prewarm of prewarm/default.json (bench/prewarm.sh).
what=${1:-test}
LIMIT=${LIMIT:-540}
CAP=${CAP:-590}
t0=$(date +%s)
gpu_commit_line
if [ "$what" = reduce ]; then
  make -j16 "$BUILD/tests/gpu/test_gpu_reduce" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  "$BUILD/tests/gpu/test_gpu_reduce" 2>&1 | tee "$OUT/test_gpu_reduce.log" | grep -v mismatch | tail -20
elif [ "$what" = test ]; then
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
else
  DURATION=${DURATION:-4} SKIP_TESTS=1 bench/gpu.sh engine 2>&1 | tee "$OUT/engine.log" | grep -v '^make'
  make -j16 "$BUILD/bench/bench_reduce" >>"$OUT/build.log" 2>&1 && timeout 150 "$BUILD/bench/bench_reduce" 2>&1 | tee "$OUT/bench_reduce.log" | tail -25
  if [ -x bench/prewarm.sh ]; then timeout 90 bench/prewarm.sh 2>&1 | tail -8; fi
fi
echo "total $(( $(date +%s) - t0 )) s"
