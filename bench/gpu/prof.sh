# prof — where one connection's time goes on the GPU machine: builds warpd, starts it (flags:
# $FLAGS), and for a cached 3-element POST /v1/reduce and a 32-lane POST /v1/warp prints wrk's p50 at
# one connection beside GET /v1/health's, the server's own timing fields (bench/http/latency.py), and,
# where perf runs (carry a perf binary and its libraries in .perf/: perf, lib/), a profile of the
# daemon under that load: the top symbols, self and with callees.
#   bench/gpu.sh prof      (BUILD=build; SECONDS_PER=5; FLAGS=""; NO_PERF=1: no profile; LAT_N=3000;
#                          WRK_CPUS / WARPD_CPUS: taskset -c lists for wrk and warpd; TAG: stacks file suffix)
WRKC=("$WRK"); [ -n "${WRK_CPUS:-}" ] && WRKC=(taskset -c "$WRK_CPUS" "$WRK")
PIN=(); [ -n "${WARPD_CPUS:-}" ] && PIN=(taskset -c "$WARPD_CPUS")
PERF=(env LD_LIBRARY_PATH=$PWD/.perf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$PWD/.perf/perf")
[ -x .perf/perf ] || PERF=(perf)
make -j16 "$BUILD/warpd" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "commit ${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}  $(date -u +%F)  flags: ${FLAGS:-}  wrk cpus: ${WRK_CPUS:-any}  warpd cpus: ${WARPD_CPUS:-any}"
grep -m1 "model name" /proc/cpuinfo; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
echo 'wrk.method = "POST"; wrk.headers["Content-Type"] = "application/json"; wrk.body = '"'"'{"type":"f32","op":"sum","data":[1,2,3]}'"'" >"$tmp/reduce.lua"
echo 'wrk.method = "POST"; wrk.headers["Content-Type"] = "application/json"; wrk.body = '"'"'{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32}}'"'" >"$tmp/warp.lua"
echo 'wrk.method = "GET"' >"$tmp/health.lua"
port=$((20000 + RANDOM % 12000)); base=http://127.0.0.1:$port
# shellcheck disable=SC2086
"${PIN[@]}" "$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache ${FLAGS:-} >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 200); do curl -sf "$base/v1/ready" >/dev/null && break; sleep 0.05; done
for r in reduce warp; do "${WRKC[@]}" -t1 -c1 -d1s -s "$tmp/$r.lua" "$base/v1/$r" >/dev/null 2>&1; done
for round in 1 2; do
  for r in health reduce warp; do
    path=/v1/$r; "${WRKC[@]}" -t1 -c1 -d"${SECONDS_PER:-5}s" --latency -s "$tmp/$r.lua" "$base$path" >"$tmp/wrk" 2>&1
    printf "round %s %-7s 1 conn: %10s req/s  p50 %s\n" $round $r "$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk")" \
      "$(awk '$1=="50%" {print $2}' "$tmp/wrk")"
  done
done
python3 bench/http/latency.py $port "${LAT_N:-3000}" 2>&1
if [ "${NO_PERF:-0}" != 1 ] && "${PERF[@]}" --version >/dev/null 2>&1; then
  for r in reduce warp; do
    ("${WRKC[@]}" -t1 -c1 -d6s -s "$tmp/$r.lua" "$base/v1/$r" >/dev/null 2>&1 &)
    sleep 1
    "${PERF[@]}" stat --per-thread -e task-clock,context-switches -p $pid -- sleep 2 2>&1 | grep -E "task-clock|context" | grep -v "not counted" | sort -k2 -nr | head -8
    "${PERF[@]}" record -F 20000 -g --call-graph dwarf,16384 -p $pid -o "$tmp/perf.data" -- sleep 1 >/dev/null 2>&1
    echo "== perf $r: self"
    "${PERF[@]}" report -i "$tmp/perf.data" --no-children --sort dso,sym -g none 2>/dev/null | grep '%' | head -40
    echo "== perf $r: with callees"
    "${PERF[@]}" report -i "$tmp/perf.data" --children --sort sym -g none 2>/dev/null | grep '%' | head -60
    "${PERF[@]}" script -i "$tmp/perf.data" -F ip,sym 2>/dev/null | gzip >"$OUT/stacks_$r${TAG:-}.txt.gz"
    sleep 2
  done
else
  echo "perf: not runnable here"
fi
kill $pid; wait $pid 2>/dev/null; pid=
