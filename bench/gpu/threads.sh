# threads — where the CPU goes under load: warpd (default flags unless given) answers wrk at
# CONNS connections on a cached 3-element reduce (ROUTE=warp: a 32-lane shfl_xor) for DURATION
# seconds; prints CPU seconds per thread name (warpd names its threads: wp-http, wp-worker, ...), wrk's,
# and the machine's busy share from /proc/stat.
#   bench/gpu.sh threads [warpd flags...]   (BUILD=build; CONNS=256; DURATION=5; ROUTE=reduce|warp)
CONNS=${CONNS:-256}
DURATION=${DURATION:-5}
ROUTE=${ROUTE:-reduce}
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
make -j16 "$BUILD/warpd" >/dev/null 2>&1 || { echo "build failed"; exit 1; }
if [ "$ROUTE" = warp ]; then
  body='{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32}}'
else
  body='{"type":"f32","op":"sum","data":[1,2,3]}'
fi
printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' "'$body'" >"$tmp/r.lua"
port=$((20000 + RANDOM % 12000))
"$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache "$@" >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.05; done
for _ in 1 2 3; do curl -s -o /dev/null -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$port/v1/$ROUTE"; done
sleep 1
snap() { for t in /proc/$pid/task/*; do printf '%s %s %s\n' "${t##*/}" "$(tr ' ' _ <"$t/comm")" "$(awk '{print $14+$15}' "$t/stat")"; done | sort; }
cpu() { awk '/^cpu / {print $2+$3+$4+$6+$7+$8, $5}' /proc/stat; }
snap >"$tmp/s0"; c0=$(cpu)
"$WRK" -t8 -c"$CONNS" -d"${DURATION}s" --latency -s "$tmp/r.lua" "http://127.0.0.1:$port/v1/$ROUTE" >"$tmp/wrk" 2>&1 &
wpid=$!
wait $wpid
snap >"$tmp/s1"; c1=$(cpu)
hz=$(getconf CLK_TCK)
echo "warpd $* — $ROUTE at $CONNS connections: $(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk") req/s, p50 $(awk '$1=="50%" {print $2}' "$tmp/wrk"), p99 $(awk '$1=="99%" {print $2}' "$tmp/wrk")"
join "$tmp/s0" "$tmp/s1" | awk -v hz="$hz" -v d="$DURATION" '{t[$2]+=($5-$3)/hz; n[$2]++} END {for (k in t) printf "  %-16s %3d threads %7.2f CPU s (%5.0f %% of a core)\n", k, n[k], t[k], 100*t[k]/d}' | sort -k4 -nr
read -r b0 i0 <<<"$c0"; read -r b1 i1 <<<"$c1"
awk -v b=$((b1 - b0)) -v i=$((i1 - i0)) -v n="$(nproc)" 'BEGIN {printf "  machine: %.0f %% busy over %d CPUs (%.1f of them)\n", 100*b/(b+i), n, n*b/(b+i)}'
