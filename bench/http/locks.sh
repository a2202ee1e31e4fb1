#!/usr/bin/env bash
# locks.sh — which mutexes a request takes, and on which thread: warpd with the mock CUDA driver
# (tests/mockcuda: the cuda backend's host paths, no GPU), wrk at 16 connections, and a perf uprobe on
# libc's pthread_mutex_lock with DWARF call graphs. Prints locks per request by thread name and by the
# two callers nearest the lock (libmicrohttpd's own are per daemon, one per HTTP thread: uncontended;
# warpd's shared ones are what every HTTP thread and runner meet). Needs root (perf probe) and perf.
#   bench/http/locks.sh [reduce|warp|health] [warpd flags...]   (BUILD=build; default --inline-gpu never:
#   every GPU job handed to the runners, as under load)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
route=${1:-warp}
[ $# -gt 0 ] && shift
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(--inline-gpu never)
if ! command -v perf >/dev/null || ! command -v wrk >/dev/null; then echo "locks.sh: needs perf and wrk"; exit 2; fi
make -s "$BUILD/warpd" "$BUILD/mockcuda/libcuda.so.1" >/dev/null || { echo "locks.sh: build failed"; exit 1; }
libc=$(ldd "$BUILD/warpd" | awk '/libc.so.6/ {print $3}')
added=0 # the probe, when this run adds it, is removed at the end (one already there is left)
perf probe -q -x "$libc" --add pthread_mutex_lock 2>/dev/null && added=1
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"; [ $added = 1 ] && perf probe -q -d probe_libc:pthread_mutex_lock' EXIT

case $route in
  reduce) body='{"type":"f32","op":"sum","data":[1.5,2,3]}' ;;
  warp) body='{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32}}' ;;
  health) body= ;;
  *) echo "locks.sh: route reduce, warp or health"; exit 2 ;;
esac
lua=()
if [ -n "$body" ]; then
  printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' "'$body'" >"$tmp/r.lua"
  lua=(-s "$tmp/r.lua")
fi

port=$((20000 + RANDOM % 12000))
LD_LIBRARY_PATH=$BUILD/mockcuda "$BUILD/warpd" --backend cuda --no-disk-cache --threads 2 "${flags[@]}" \
  --listen 127.0.0.1:$port >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.05; done
url=http://127.0.0.1:$port/v1/$route
wrk -t1 -c16 -d1s "${lua[@]}" "$url" >/dev/null # warm: kernels built, batch kernels too
sleep 1
perf record -e probe_libc:pthread_mutex_lock --call-graph dwarf,4096 -m 1024 -p $pid -o "$tmp/perf.data" -- sleep 2 \
  >"$tmp/rec" 2>&1 &
rec=$!
sleep 0.6 # perf attaches to every thread first
served() { curl -s "127.0.0.1:$port/metrics" | awk '/^warpd_http_requests_total / {print $2}'; }
m0=$(served)
wrk -t1 -c16 -d1s "${lua[@]}" "$url" >/dev/null
m1=$(served)
n=$((m1 - m0 - 1)) # the requests served while perf recorded (less the scrape)
wait $rec
grep -i "lost" "$tmp/rec"
echo "locks.sh: $route, $n requests in 1 s (mock driver; flags: ${flags[*]})"
perf script -i "$tmp/perf.data" -F comm,ip,sym 2>/dev/null | python3 -c '
import collections, sys
n = int(sys.argv[1]) or 1
count, thread, frames = collections.Counter(), None, []
def flush():
    if thread is not None:
        near = [f for f in frames[1:] if f != "[unknown]"][:2]
        count[(thread, " < ".join(near))] += 1
for line in sys.stdin:
    if not line.strip():
        flush(); thread, frames = None, []
    elif not line[0].isspace():
        thread = line.split()[0]
    else:
        parts = line.split()
        frames.append(parts[1] if len(parts) > 1 else "?")
flush()
print("%16s  %-12s %s" % ("locks a request", "thread", "callers (nearest first)"))
for (t, w), v in count.most_common(25):
    print(f"{v / n:16.2f}  {t:12} {w}")
' "${n:-0}"
