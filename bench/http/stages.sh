#!/usr/bin/env bash
# stages.sh — where a small request's CPU goes, by stage, in instructions (valgrind's callgrind counts
# instructions, not seconds: the same binary and requests give the same figures on a loaded machine).
# Runs warpd --backend emu under callgrind twice, N1 and N2 requests over one keep-alive connection,
# and prints (cost at N2 - cost at N1) / (N2 - N1) per stage for the route: receive and send (the HTTP
# layer: libmicrohttpd, access checks, headers, the request log), parse, key, cache, hand-off (the batch
# queue), kernel (the emulator), answer, log, metrics, and the total.
#   bench/http/stages.sh [reduce|warp|health] [N1 N2]   (BUILD=build; BODY='...' for another request)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
route=${1:-reduce}; n1=${2:-1000}; n2=${3:-5000}
command -v valgrind >/dev/null || { echo "stages.sh: needs valgrind"; exit 2; }
make -s "$BUILD/warpd" >/dev/null || { echo "stages.sh: build failed"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
case $route in
  reduce) BODY=${BODY:-'{"type":"f32","op":"sum","data":[1.5,2,3]}'} ;;
  warp) BODY=${BODY:-'{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32}}'} ;;
  health) BODY= ;;
  *) echo "stages.sh: route reduce, warp or health"; exit 2 ;;
esac
run() { # n -> $tmp/cg.$n
  local dir=$tmp/d$1; mkdir -p "$dir"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1" "$BUILD/warpd" --backend emu --listen 127.0.0.1:0 \
    --cache-dir "$dir/cache" >"$dir/out" 2>"$dir/err" &
  local pid=$! port=
  for _ in $(seq 300); do port=$(grep -oE 'listening on http://[^ /]+:[0-9]+' "$dir/out" | sed 's/.*://'); [ -n "$port" ] && break; sleep 0.1; done
  [ -n "$port" ] || { echo "stages.sh: the daemon did not start"; cat "$dir/err"; kill $pid; return 1; }
  python3 - "$port" "$route" "$1" "$BODY" <<'PY'
import http.client, sys
port, route, n, body = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port)
def once():
    if route == "health": c.request("GET", "/v1/health")
    else: c.request("POST", "/v1/" + route, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse(); r.read(); return r.status
st = once()  # the first request compiles the warp kernel (outside the difference: both runs pay it)
for _ in range(n - 1): st = once()
sys.exit(0 if st == 200 else 1)
PY
  local rc=$?
  kill -INT $pid; wait $pid
  return $rc
}
run "$n1" && run "$n2" || exit 1
python3 - "$tmp/cg.$n1" "$tmp/cg.$n2" $((n2 - n1)) <<'PY'
import re, subprocess, sys
def inclusive(f):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=yes", f], capture_output=True, text=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\S*?:?([A-Za-z_][\w.']*)\s", line + " ")
        if m and "/" in line: d[m.group(2)] = max(d.get(m.group(2), 0), int(m.group(1).replace(",", "")))  # a function is listed once a file name form
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+PROGRAM TOTALS", line)
        if m: d["TOTAL"] = int(m.group(1).replace(",", ""))
    return d
a, b, n = inclusive(sys.argv[1]), inclusive(sys.argv[2]), int(sys.argv[3])
per = lambda k: (b.get(k, 0) - a.get(k, 0)) / n
# Stages by the inclusive cost of the functions that do them; nested ones are taken out of the outer.
def first(*fns): return max((per(f) for f in fns), default=0.0)
handler = first("wp_api_reduce", "wp_api_warp", "wp_api_health")
parse = sum(per(f) for f in ("wp_api_parse_body", "reduce_parse_fast", "wp_json_only", "wp_spec_from_json",
                             "parse_warp_input", "wp_app_backend"))
key = first("wp_app_kernel_key", "wp_jit_key")
cache = first("wp_cache_peek") + first("wp_cache_get_named")
kernel = first("wp_emu_device_reduce", "wp_backend_run_warp")
metrics_in = first("wp_metrics_observe_kernel")
handoff = max(first("wp_batcher_submit") - kernel - key - cache - metrics_in, 0.0)
answer = max(handler - parse - key - cache - kernel - handoff - metrics_in, 0.0) if handler else 0.0
log = sum(per(f) for f in ("wp_reqlog_begin", "wp_reqlog_end", "wp_reqlog_respond", "wp_reqlog_queued", "wp_reqlog_dequeued"))
metrics = metrics_in + first("wp_metrics_observe_request")
total = per("TOTAL")
rows = [("parse", parse), ("key", key), ("cache", cache), ("hand-off (batch queue)", handoff),
        ("kernel (emulator)", kernel), ("answer and the handler's rest", answer), ("log", log), ("metrics", metrics)]
print(f"{'stage':<30} {'instructions / request':>24}")
for name, v in rows: print(f"{name:<30} {v:>24,.0f}")
rest = total - sum(v for _, v in rows)
print(f"{'receive, send (HTTP), other':<30} {rest:>24,.0f}   (libmicrohttpd, headers, access checks, threads)")
print(f"{'total':<30} {total:>24,.0f}   (handler {handler:,.0f})")
PY
