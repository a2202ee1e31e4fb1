#!/usr/bin/env bash
# One call on the GPU machine for device_reduce alone: unpack the carried .debs, build, run
# test_gpu_reduce --family device_reduce (cuda against emu, bit for bit), then time the reduce rows of
# bench_reduce (against CUB) for the working tree and for each REDUCE_SWEEP setting; logs in $OUT.
#   REDUCE_SWEEP="base=.tune/base stream=0 tree grid=1056 min_vecs=2 tree" bench/gpu_reduce_tune.sh
# tree: the working tree again (to see the run-to-run noise); stream=BYTES: WP_REDUCE_STREAM_BYTES in
# templates/reduce.cu (NVRTC recompiles; 0 streams every input); base=DIR: DIR/reduce.cu and
# DIR/wp_block.cuh in place of the templates (e.g. the last commit's); grid=N / min_vecs=N:
# WP_REDUCE_GRID_MAX / WP_REDUCE_MIN_VECS in kernels/wp_abi.h (rebuilt: the launch plan changes).
# Files are restored after each setting; settings stop once SWEEP_DEADLINE seconds have passed. Every
# bench table goes to $OUT/sweep.log; CUPY=1 also runs bench/bench_cupy.py last.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/gpu_env.sh
make -j16 build/tests/gpu/test_gpu_reduce build/bench/bench_reduce >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "== test_gpu_reduce --family device_reduce (built in ${SECONDS}s)"
timeout "${TEST_TIMEOUT:-150}" ./build/tests/gpu/test_gpu_reduce --family device_reduce >"$OUT/test_reduce.log" 2>&1
echo "(exit $?)"; grep -vE '^  mismatch' "$OUT/test_reduce.log" | tail -4; grep -E '^  mismatch' "$OUT/test_reduce.log" | head -8
bench() { # $1: label
  echo "== bench $1 (at ${SECONDS}s)" | tee -a "$OUT/sweep.log"
  timeout "${BENCH_TIMEOUT:-60}" ./build/bench/bench_reduce --only reduce --no-sweep ${BENCH_ARGS:-} >"$OUT/.bench.log" 2>&1
  echo "(exit $?)" >>"$OUT/.bench.log"; cat "$OUT/.bench.log" >>"$OUT/sweep.log"
  # one line per label: op/type/n:pipelined ratio (warpd/CUB GB/s), then the launch floor
  awk '/^reduce/ {printf "%s.%s.%s:%s ", $2, $3, substr($4, 3), $10} END {print ""}' "$OUT/.bench.log"; grep -E 'launch floor|DIFFERS' "$OUT/.bench.log"
}
bench tree
for s in ${REDUCE_SWEEP:-}; do
  if [ "$SECONDS" -gt "${SWEEP_DEADLINE:-250}" ]; then echo "== $s: skipped (${SECONDS}s)"; continue; fi
  key=${s%%=*} val=${s#*=}
  mkdir -p "$OUT/.keep" && cp templates/reduce.cu templates/wp_block.cuh kernels/wp_abi.h "$OUT/.keep/"
  case $key in
  tree) ;;
  stream) sed -i "s|^#define WP_REDUCE_STREAM_BYTES .*|#define WP_REDUCE_STREAM_BYTES ${val}ull|" templates/reduce.cu ;;
  base) cp "$val/reduce.cu" "$val/wp_block.cuh" templates/ ;;
  grid | min_vecs)
    macro=$([ "$key" = grid ] && echo WP_REDUCE_GRID_MAX || echo WP_REDUCE_MIN_VECS)
    sed -i "s|^#define $macro .*|#define $macro $val|" kernels/wp_abi.h
    make -j16 build/bench/bench_reduce >>"$OUT/build.log" 2>&1 || { echo "build failed"; continue; } ;;
  *) echo "unknown sweep setting $s"; continue ;;
  esac
  bench "$s"
  cp "$OUT/.keep/reduce.cu" "$OUT/.keep/wp_block.cuh" templates/ && cp "$OUT/.keep/wp_abi.h" kernels/
  if [ "$key" = grid ] || [ "$key" = min_vecs ]; then make -j16 build/bench/bench_reduce >>"$OUT/build.log" 2>&1; fi
done
rm -rf "$OUT/.keep" "$OUT/.bench.log"
if [ -n "${CUPY:-}" ] && [ "$SECONDS" -lt "${SWEEP_DEADLINE:-250}" ]; then
  echo "== bench_cupy (at ${SECONDS}s)"
  timeout "${CUPY_TIMEOUT:-90}" python3 bench/bench_cupy.py >"$OUT/bench_cupy.log" 2>&1; echo "(exit $?)"; tail -14 "$OUT/bench_cupy.log"
fi
echo "== done at ${SECONDS}s"
