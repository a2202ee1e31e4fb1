# hotpath — the request path's whole table in one run: nginx's fixed 200, warpd's GET /v1/health, a
# cached 3-element f32 sum (POST /v1/reduce) and a 32-lane i32 shfl_xor (POST /v1/warp), on cuda and on
# the emulator, at 1, 64 and 256 connections (req/s, p50, p99), then each route's ratio to the same
# daemon's health and to nginx; the batch sizes seen; with PROFILE=1 a profile of the cuda daemon under the
# tiny reduce at 256 connections (top symbols, and CPU seconds per thread name; PROFILE_MODES="cuda emu"
# and PROFILE_ROUTES="reduce warp" profile more). Under each warpd row, bench/http/cpushare.py's line: how
# busy the machine's CPUs were, and the daemon's CPU µs a request, by thread name.
# Then (JSON=0 leaves it out) inline JSON of 10^6 values both ways for every type through a cuda daemon
# (bench/http/bench_json.c: a reduce sent as JSON, a scan answered as JSON, MB/s of bytes in and out).
#   bench/gpu.sh hotpath  (BUILD=build; DURATION=4; CONNS="1 64 256"; MODES="cuda emu"; FLAGS="": more
#                         warpd flags for every mode; NGINX_THREADS=8; PROFILE=1, PROFILE_MODES, PROFILE_ROUTES;
#                         STARTS=1: daemon starts per mode; JSON_FLAGS="--conn-memory 1048576": the JSON
#                         half again with these daemon flags)
DURATION=${DURATION:-4}
CONNS=${CONNS:-1 64 256}
PERF=(env LD_LIBRARY_PATH=$PWD/.perf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$PWD/.perf/perf")
[ -x .perf/perf ] || PERF=(perf)
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -f "$tmp/nginx.pid" ] && kill "$(cat "$tmp/nginx.pid")" 2>/dev/null; rm -rf "$tmp"' EXIT
make -j16 "$BUILD/warpd" "$BUILD/bench/http/bench_json" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
gpu_commit_line
grep -m1 "model name" /proc/cpuinfo; echo "CPUs: $(nproc)"

gpu_tiny_scripts "$tmp"
cp "$tmp/health.lua" "$tmp/nginx.lua"

declare -A RPS P50
cell() { # label route url conns
  local t=$(($4 < 8 ? $4 : 8))
  [ -n "$pid" ] && python3 bench/http/cpushare.py snap "$pid" >"$tmp/cpu0" 2>/dev/null
  "$WRK" -t"$t" -c"$4" -d"${DURATION}s" --latency -s "$tmp/$2.lua" "$3" >"$tmp/wrk" 2>&1
  [ -n "$pid" ] && python3 bench/http/cpushare.py snap "$pid" >"$tmp/cpu1" 2>/dev/null
  local rps p50 p99 bad
  rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk"); p50=$(awk '$1=="50%" {print $2}' "$tmp/wrk")
  p99=$(awk '$1=="99%" {print $2}' "$tmp/wrk"); bad=$(awk '/Non-2xx/ {print $NF}' "$tmp/wrk")
  RPS[$1/$2/$4]=$rps; P50[$1/$2/$4]=$p50
  printf "%-8s %-7s %5s %12s %10s %10s %7s\n" "$1" "$2" "$4" "${rps:-?}" "${p50:-?}" "${p99:-?}" "${bad:-0}"
  local n; n=$(awk '/requests in/ {print $1}' "$tmp/wrk")
  [ -n "$pid" ] && [ -n "$n" ] && printf "#   %s\n" "$(python3 bench/http/cpushare.py diff "$tmp/cpu0" "$tmp/cpu1" "$n" 2>&1)"
}
us() { awk -v v="$1" 'BEGIN { if (v ~ /us$/) print v+0; else if (v ~ /ms$/) print v*1000; else if (v ~ /s$/) print v*1e6; else print v }'; }

printf "%-8s %-7s %5s %12s %10s %10s %7s\n" server route conns "req/s" p50 p99 non2xx
if gpu_nginx_start "${NGINX_THREADS:-8}" "$tmp"; then
  for c in $CONNS; do cell nginx nginx http://127.0.0.1:18390/ "$c"; done
  gpu_nginx_stop "$tmp"
fi

# shellcheck disable=SC2086 # FLAGS: words
start() { gpu_tiny_start "$tmp" ${FLAGS:-} "$@"; } # flags...
stop() { gpu_tiny_stop; }
batches() {
  curl -s "$base/metrics" | awk '
    /^warpd_batches_total / {b=$2} /^warpd_batched_jobs_total / {j=$2}
    /^warpd_http_answered_inline_total / {i=$2} /^warpd_http_deferred_total / {d=$2}
    END {printf "#   %s jobs in %s batches (%.2f a batch), %s answered inline, %s deferred\n", j, b, (b > 0 ? j / b : 0), i, d}'
}
profile() { # mode route: under the tiny job at 256 connections
  "$WRK" -t8 -c256 -d6s -s "$tmp/$2.lua" "$base/v1/$2" >/dev/null 2>&1 &
  sleep 1
  "${PERF[@]}" record -F 4999 -g -p $pid -o "$tmp/perf.data" -- sleep 2 >/dev/null 2>&1
  echo "== perf, $1 tiny $2 at 256 connections: self"
  "${PERF[@]}" report -i "$tmp/perf.data" --no-children --sort dso,sym -g none 2>/dev/null | grep '%' | head -45
  echo "== with callees"
  "${PERF[@]}" report -i "$tmp/perf.data" --children --sort sym -g none 2>/dev/null | grep '%' | head -45
  "${PERF[@]}" report -i "$tmp/perf.data" --no-children --sort comm -g none 2>/dev/null | grep '%' | head -10
  echo "== the HTTP threads alone (wp-http): self"
  "${PERF[@]}" report -i "$tmp/perf.data" --comm wp-http --no-children --sort dso,sym -g none 2>/dev/null | grep '%' | head -40
  wait
}

for mode in ${MODES:-cuda emu}; do
  for s in $(seq "${STARTS:-1}"); do
    start --backend "$mode"
    curl -s "$base/v1/info" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("#", d["backend"], d["device"]["name"])' 2>/dev/null
    for route in health reduce warp; do
      for c in $CONNS; do cell "$mode$s" $route "$base/v1/$route" "$c"; done
    done
    batches
    if [ "${PROFILE:-0}" = 1 ] && [ "$s" = 1 ] && [[ " ${PROFILE_MODES:-cuda} " == *" $mode "* ]]; then
      for route in ${PROFILE_ROUTES:-reduce}; do profile "$mode" "$route"; done
    fi
    stop
  done
done

echo
echo "ratios (req/s against the same daemon's health, and against nginx; p50 over health's)"
for mode in ${MODES:-cuda emu}; do
  for s in $(seq "${STARTS:-1}"); do
    for route in reduce warp; do
      for c in $CONNS; do
        r=${RPS[$mode$s/$route/$c]:-0} h=${RPS[$mode$s/health/$c]:-0} n=${RPS[nginx/nginx/$c]:-0}
        dp=$(awk -v a="$(us "${P50[$mode$s/$route/$c]:-0}")" -v b="$(us "${P50[$mode$s/health/$c]:-0}")" 'BEGIN {printf "%+.1f us", a-b}')
        awk -v m="$mode$s" -v ro="$route" -v c="$c" -v r="$r" -v h="$h" -v n="$n" -v dp="$dp" \
          'BEGIN {printf "%-8s %-7s %5s  %5.2fx health  %5.2fx nginx  p50 %s\n", m, ro, c, (h>0?r/h:0), (n>0?r/n:0), dp}'
      done
    done
  done
done

if [ "${JSON:-1}" = 1 ]; then
  echo
  echo "inline JSON of 10^6 values through a cuda daemon (best of 3)"
  BENCH_JSON_BACKEND=cuda BENCH_JSON_ONLY=http WARPD_BIN="$BUILD/warpd" "$BUILD/bench/http/bench_json" 3
  if [ -n "${JSON_FLAGS:-}" ]; then
    echo; echo "the same with the daemon flags $JSON_FLAGS"
    BENCH_JSON_FLAGS="$JSON_FLAGS" BENCH_JSON_BACKEND=cuda BENCH_JSON_ONLY=http WARPD_BIN="$BUILD/warpd" \
      "$BUILD/bench/http/bench_json" 3
  fi
fi
