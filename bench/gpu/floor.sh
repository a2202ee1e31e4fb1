# floor — what this machine's loopback HTTP can do at all, beside warpd's own routes: wrk
# against nginx answering a fixed 200 (no work; `worker_processes` = the HTTP threads warpd gets)
# and against warpd's GET /v1/health (libmicrohttpd and warpd's access checks, no JSON body, no
# device), at 1 and 256 connections. A route can be no faster than these on the same cores.
#   bench/gpu.sh floor   (BUILD=build; DURATION=3; CONNS="1 256"; THREADS="4 8": warpd --threads /
#                        nginx workers; NGINX=path; nginx from .debs like wrk)
DURATION=${DURATION:-3}
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -f "$tmp/nginx.pid" ] && kill "$(cat "$tmp/nginx.pid")" 2>/dev/null; rm -rf "$tmp"' EXIT
make -j16 "$BUILD/warpd" >/dev/null 2>&1 || { echo "build failed"; exit 1; }

cell() { # label url conns
  local t=$(( $3 < 8 ? $3 : 8 ))
  "$WRK" -t"$t" -c"$3" -d"${DURATION}s" --latency "$2" >"$tmp/wrk" 2>&1
  printf "%-18s %5s %12s %10s %10s\n" "$1" "$3" "$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk")" \
    "$(awk '$1=="50%" {print $2}' "$tmp/wrk")" "$(awk '$1=="99%" {print $2}' "$tmp/wrk")"
}
printf "%-18s %5s %12s %10s %10s\n" server conns "req/s" p50 p99
for th in ${THREADS:-4 8}; do
  if gpu_nginx_start "$th" "$tmp"; then
    for c in ${CONNS:-1 256}; do cell "nginx x$th" http://127.0.0.1:18390/ "$c"; done
    gpu_nginx_stop "$tmp"
  fi
  port=$((20000 + RANDOM % 12000))
  "$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache --threads "$th" >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/v1/health" >/dev/null && break; sleep 0.05; done
  for c in ${CONNS:-1 256}; do cell "warpd health x$th" "http://127.0.0.1:$port/v1/health" "$c"; done
  kill $pid; wait $pid 2>/dev/null; pid=
done
