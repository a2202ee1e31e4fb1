# p50 — one connection's p50 on the GPU machine, across daemon starts and thread placements:
# for each of STARTS daemon starts, bench/gpu.sh prof (no profile) with the threads where the kernel
# puts them ("free") and with wrk and warpd on CPUs of their own ("pinned": wrk on WRK_PIN, default
# CPU 0; warpd on WARPD_PIN, default the others), then one table of the p50s (GET /v1/health, a cached
# 3-element POST /v1/reduce, a 32-lane POST /v1/warp; two rounds a start). MODES (default "free
# pinned") may also name daemon variants as label=flags, commas for spaces: "on off=--busy-poll-us,0".
# Prints the CPU topology first. TESTS=1 runs test_gpu_batch before; PROFILE=1 a perf profile after.
#   bench/gpu.sh p50      (STARTS=3; SECONDS_PER=4; FLAGS=""; LAT_N=1000; WRK_PIN=0; WARPD_PIN=1-last)
echo "commit ${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}  $(date -u +%F)  flags: ${FLAGS:-}"
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|Core|Socket|NUMA node)" | tr -s ' '
make -j16 build/warpd >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
if [ "${TESTS:-0}" = 1 ]; then
  make -j16 build/tests/gpu/test_gpu_batch >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
  echo "== test_gpu_batch"
  BUILD=build timeout 300 build/tests/gpu/test_gpu_batch >"$OUT/test_gpu_batch.log" 2>&1
  grep -E "zero-copy|FAIL|passed" "$OUT/test_gpu_batch.log" | head -20
fi
last=$(($(nproc) - 1))
WRK_PIN=${WRK_PIN:-0}; WARPD_PIN=${WARPD_PIN:-1-$last}
rows=()
for start in $(seq "${STARTS:-3}"); do
  for spec in ${MODES:-free pinned}; do
    mode=${spec%%=*}; extra=; [ "$spec" != "$mode" ] && extra=${spec#*=} && extra=${extra//,/ }
    if [ $mode = pinned ]; then pin=(WRK_CPUS="$WRK_PIN" WARPD_CPUS="$WARPD_PIN"); else pin=(); fi
    env "${pin[@]}" FLAGS="${FLAGS:-} $extra" LAT_N=${LAT_N:-1000} NO_PERF=1 SECONDS_PER=${SECONDS_PER:-4} bench/gpu.sh prof >"$OUT/p50_${mode}_$start.log" 2>&1
    p() { awk -v r="$1" '$1=="round" && $3==r {gsub("us","",$NF); printf "%s%s", sep, $NF; sep="/"}' \
      "$OUT/p50_${mode}_$start.log"; }
    rows+=("$(printf "| %s | %s | %s | %s | %s |" $start $mode "$(p health)" "$(p reduce)" "$(p warp)")")
    grep -E -A1 "^(reduce|warp) " "$OUT/p50_${mode}_$start.log" | head -8 >>"$OUT/p50_server.txt"
  done
done
echo "| start | mode | health p50 µs | reduce p50 µs | warp p50 µs |"
echo "| --- | --- | --- | --- | --- |"
printf "%s\n" "${rows[@]}"
echo "(two 1-connection cells a route each start; wrk on CPU $WRK_PIN, warpd on $WARPD_PIN when pinned)"
if [ "${PROFILE:-0}" = 1 ]; then
  SECONDS_PER=2 bench/gpu.sh prof 2>&1 | grep -v "^round" | head -150
fi
