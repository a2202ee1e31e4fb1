#!/usr/bin/env bash
# One call on the GPU machine for device_scan alone: unpack the carried .debs, build, time the scan
# rows of bench_reduce (against CUB), run test_gpu_reduce --family device_scan (cuda against emu,
# bit for bit, twice on cuda); logs in $OUT.
#   SCAN_SWEEP="lane_tiles=1 lane_tiles=4 sleep_ns=64 thread_bytes=128" bench/gpu_scan_run.sh
# SCAN_SWEEP also times the scan rows (2^24 .. 2^28, block sweep) with each setting changed alone:
# lane_tiles / sleep_ns (templates/scan.cu, recompiled by NVRTC), thread_bytes (kernels/wp_abi.h,
# rebuilt). The files are restored afterwards; sweeps stop once SWEEP_DEADLINE seconds have passed.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/gpu_env.sh
make -j16 build/tests/gpu/test_gpu_reduce build/bench/bench_reduce >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "== bench_reduce --only scan (built in ${SECONDS}s)"
timeout "${BENCH_TIMEOUT:-150}" ./build/bench/bench_reduce --only scan ${BENCH_ARGS:-} >"$OUT/bench_scan.log" 2>&1
echo "(exit $?)"; grep -vE '^scan incl sum .* 2\^(1[0-9]|2[02]) ' "$OUT/bench_scan.log"
echo "== test_gpu_reduce --family device_scan (at ${SECONDS}s)"
timeout "${TEST_TIMEOUT:-240}" ./build/tests/gpu/test_gpu_reduce --family device_scan >"$OUT/test_scan.log" 2>&1
echo "(exit $?)"; grep -vE '^  mismatch' "$OUT/test_scan.log" | tail -6; grep -E '^  mismatch' "$OUT/test_scan.log" | head -8
for s in ${SCAN_SWEEP:-}; do
  if [ "$SECONDS" -gt "${SWEEP_DEADLINE:-380}" ]; then echo "== sweep $s: skipped (${SECONDS}s)"; continue; fi
  key=${s%%=*} val=${s#*=}
  cp templates/scan.cu "$OUT/.scan.cu" && cp kernels/wp_abi.h "$OUT/.wp_abi.h"
  case $key in
  lane_tiles) sed -i "s|^#define WP_LOOKBACK_LANE_TILES .*|#define WP_LOOKBACK_LANE_TILES $val|" templates/scan.cu ;;
  sleep_ns) sed -i "s|^#define WP_LOOKBACK_SLEEP_NS .*|#define WP_LOOKBACK_SLEEP_NS $val|" templates/scan.cu ;;
  thread_bytes)
    sed -i "s|^#define WP_SCAN_THREAD_BYTES .*|#define WP_SCAN_THREAD_BYTES $val|" kernels/wp_abi.h
    make -j16 build/bench/bench_reduce >>"$OUT/build.log" 2>&1 || { echo "build failed"; continue; } ;;
  *) echo "unknown sweep setting $s"; continue ;;
  esac
  echo "== sweep $s (at ${SECONDS}s)"
  timeout 100 ./build/bench/bench_reduce --only scan --min-log2 24 --max-log2 28 >"$OUT/sweep_$key$val.log" 2>&1
  grep -E '^scan|block sweep|device_scan' "$OUT/sweep_$key$val.log"
  cp "$OUT/.scan.cu" templates/scan.cu && cp "$OUT/.wp_abi.h" kernels/wp_abi.h && rm -f "$OUT/.scan.cu" "$OUT/.wp_abi.h"
done
echo "== done at ${SECONDS}s"
