# tune — one call on the GPU machine for device_reduce (or, with ONLY=scan, device_scan) alone:
# build, run test_gpu_reduce --family device_$ONLY (cuda against emu, bit for bit), then time the
# $ONLY rows of bench_reduce (against CUB) for the working tree and for each REDUCE_SWEEP setting;
# logs in $OUT.
#   REDUCE_SWEEP="base=.tune/base stream=0 tree grid=1056 min_vecs=2 tree" bench/gpu.sh tune
#   ONLY=scan REDUCE_SWEEP="define=WP_LOOKBACK_LANE_TILES=1 abi=WP_SCAN_THREAD_BYTES=64" bench/gpu.sh tune
# tree: the working tree again (to see the run-to-run noise); stream=BYTES: WP_REDUCE_STREAM_BYTES in
# templates/reduce.cu (NVRTC recompiles; 0 streams every input); base=DIR: DIR/reduce.cu and
# DIR/wp_block.cuh in place of the templates (e.g. the last commit's); grid=N / min_vecs=N:
# WP_REDUCE_GRID_MAX / WP_REDUCE_MIN_VECS in kernels/wp_abi.h (rebuilt: the launch plan changes);
# env=VAR=VALUE: the working tree with VAR=VALUE in bench_reduce's environment (e.g. env=WARPD_PDL=0);
# define=NAME=VALUE: `#define NAME VALUE` in templates/reduce.cu and templates/scan.cu (where it
# stands); abi=NAME=VALUE: the same in kernels/wp_abi.h (rebuilt). Join settings with + to apply them
# together (define=WP_REDUCE_TILED=1+grid=4096).
# Files are restored after each setting; settings stop once SWEEP_DEADLINE seconds have passed. Every
# bench table goes to $OUT/sweep.log; CUPY=1 also runs bench/reduce/bench_cupy.py last. (TEST_FAMILIES,
# TEST_TIMEOUT=150, BENCH_TIMEOUT=60, BENCH_ARGS, SWEEP_DEADLINE=250, CUPY_TIMEOUT=90)
ONLY=${ONLY:-reduce} # reduce | scan
make -j16 build/tests/gpu/test_gpu_reduce build/bench/reduce/bench_reduce >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
for fam in ${TEST_FAMILIES:-device_$ONLY}; do # e.g. TEST_FAMILIES="device_reduce device_scan"
  echo "== test_gpu_reduce --family $fam (at ${SECONDS}s)"
  timeout "${TEST_TIMEOUT:-150}" ./build/tests/gpu/test_gpu_reduce --family "$fam" >"$OUT/test_$fam.log" 2>&1
  echo "(exit $?)"; grep -vE '^  mismatch' "$OUT/test_$fam.log" | tail -3; grep -E '^  mismatch' "$OUT/test_$fam.log" | head -8
done
bench() { # $1: label
  echo "== bench $1 (at ${SECONDS}s)" | tee -a "$OUT/sweep.log"
  env ${BENCH_ENV:-} timeout "${BENCH_TIMEOUT:-60}" ./build/bench/reduce/bench_reduce --only "$ONLY" --no-sweep ${BENCH_ARGS:-} >"$OUT/.bench.log" 2>&1
  echo "(exit $?)" >>"$OUT/.bench.log"; cat "$OUT/.bench.log" >>"$OUT/sweep.log"
  # one line per label: op/type/n:pipelined ratio (warpd/CUB GB/s)/graph time ratio (scan rows: type/n:
  # pipelined ratio; their op is two words and they have no graph), then the launch floor
  awk '/^reduce/ {printf "%s.%s.%s:%s/%s ", $2, $3, substr($4, 3), $10, $18}
       /^scan/ {printf "%s.%s:%s ", $4, substr($5, 3), $11} END {print ""}' "$OUT/.bench.log"
  grep -E 'launch floor|DIFFERS|dependent launch' "$OUT/.bench.log"
}
bench tree
for s in ${REDUCE_SWEEP:-}; do
  if [ "$SECONDS" -gt "${SWEEP_DEADLINE:-250}" ]; then echo "== $s: skipped (${SECONDS}s)"; continue; fi
  mkdir -p "$OUT/.keep" && cp templates/reduce.cu templates/scan.cu templates/wp_block.cuh kernels/wp_abi.h "$OUT/.keep/"
  BENCH_ENV= rebuild= ok=1
  for part in ${s//+/ }; do # settings joined with + apply together
    key=${part%%=*} val=${part#*=}
    case $key in
    tree) ;;
    env) BENCH_ENV="$BENCH_ENV $val" ;;
    stream) sed -i "s|^#define WP_REDUCE_STREAM_BYTES .*|#define WP_REDUCE_STREAM_BYTES ${val}ull|" templates/reduce.cu ;;
    define) sed -i "s|^#define ${val%%=*} .*|#define ${val%%=*} ${val#*=}|" templates/reduce.cu templates/scan.cu ;;
    base) cp "$val/reduce.cu" "$val/wp_block.cuh" templates/ ;;
    grid | min_vecs | abi)
      macro=$([ "$key" = grid ] && echo WP_REDUCE_GRID_MAX || echo WP_REDUCE_MIN_VECS)
      [ "$key" = abi ] && macro=${val%%=*} val=${val#*=}
      sed -i "s|^#define $macro .*|#define $macro $val|" kernels/wp_abi.h
      rebuild=1 ;;
    *) echo "unknown sweep setting $part"; ok= ;;
    esac
  done
  if [ -n "$rebuild" ] && ! make -j16 build/bench/reduce/bench_reduce >>"$OUT/build.log" 2>&1; then echo "build failed"; ok=; fi
  [ -n "$ok" ] && bench "$s"
  cp "$OUT/.keep/reduce.cu" "$OUT/.keep/scan.cu" "$OUT/.keep/wp_block.cuh" templates/ && cp "$OUT/.keep/wp_abi.h" kernels/
  if [ -n "$rebuild" ]; then make -j16 build/bench/reduce/bench_reduce >>"$OUT/build.log" 2>&1; fi
done
rm -rf "$OUT/.keep" "$OUT/.bench.log"
if [ -n "${CUPY:-}" ] && [ "$SECONDS" -lt "${SWEEP_DEADLINE:-250}" ]; then
  echo "== bench_cupy (at ${SECONDS}s)"
  timeout "${CUPY_TIMEOUT:-90}" python3 bench/reduce/bench_cupy.py >"$OUT/bench_cupy.log" 2>&1; echo "(exit $?)"; tail -14 "$OUT/bench_cupy.log"
fi
echo "== done at ${SECONDS}s"
