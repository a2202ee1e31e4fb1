# perreq — where a request's CPU goes, per request: `perf record` of the daemon under wrk at 256
# connections, the samples turned into µs a request (samples / rate / requests counted by
# warpd_http_requests_total over the same window), by thread name, then by symbol for one thread name.
# Comparing two rows (a handed cuda job against the emulator's whole job, say) shows what one path pays
# that the other does not; the symbol lists go to $OUT/perreq_MODE_ROUTE.txt.
#   bench/gpu.sh perreq  (CASES="emu:reduce:--threads 8,cuda:reduce,cuda:health": mode:route[:flags];
#                        COMM=wp-http: the thread name whose symbols are listed; TOP=25; RATE=2999)
PERF=(env LD_LIBRARY_PATH=$PWD/.perf/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$PWD/.perf/perf")
[ -x .perf/perf ] || PERF=(perf)
RATE=${RATE:-2999}
make -j16 "$BUILD/warpd" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
gpu_commit_line
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
gpu_tiny_scripts "$tmp"
requests() { curl -s "$base/metrics" | awk '/^warpd_http_requests_total /{print $2}'; }
IFS=, read -r -a cases <<<"${CASES:-emu:reduce:--threads 8,cuda:reduce,cuda:health}"
for c in "${cases[@]}"; do
  IFS=: read -r mode route flags <<<"$c"
  # shellcheck disable=SC2086 # flags: words
  gpu_tiny_start "$tmp" --backend "$mode" $flags
  "$WRK" -t8 -c256 -d6s -s "$tmp/$route.lua" "$base/v1/$route" >"$tmp/wrk" 2>&1 &
  w=$!
  sleep 2
  a=$(requests)
  "${PERF[@]}" record -F "$RATE" -p "$pid" -o "$tmp/perf.data" -- sleep 3 >/dev/null 2>&1
  b=$(requests)
  wait $w
  n=$((b - a))
  echo "== $mode $route ${flags:-}: $n requests in the 3 s window ($(awk '/^Requests\/sec/{print $2}' "$tmp/wrk") req/s over wrk's 6 s)"
  timeout 60 "${PERF[@]}" report -i "$tmp/perf.data" --sort comm -n --no-children 2>/dev/null | grep '%' |
    awk -v n="$n" -v r="$RATE" '{printf "   %-16s %7.2f us a request\n", $NF, $2 / r / n * 1e6}' | head -8
  f="$OUT/perreq_${mode}_$route.txt"
  timeout 60 "${PERF[@]}" report -i "$tmp/perf.data" --comm "${COMM:-wp-http}" --sort dso,sym -n --no-children 2>/dev/null |
    grep '%' | awk -v n="$n" -v r="$RATE" '{s = $2 / r / n * 1e6; $1 = ""; $2 = ""; printf "%8.3f %s\n", s, $0}' >"$f"
  echo "   ${COMM:-wp-http}, by symbol (us a request; all in $f):"
  head -"${TOP:-25}" "$f" | sed 's/^/   /'
  gpu_tiny_stop
done
