#!/usr/bin/env bash
# /v1/reduce over HTTP on loopback, end to end with curl: a 1 GiB raw f32 upload plus its reduce (GB/s),
# 10^6 floats as inline JSON (MB/s of JSON text), and the median round trip of a small cached reduce.
# curl starts a process per request and uploads in 64 KiB pieces: bench/http/bench_http.c measures the same
# with a keep-alive C client (BENCH_HTTP_ONLY=reduce build/bench/http/bench_http).
#   bench/http/http_reduce.sh   (BUILD=build; needs curl and python3)
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
tmp=$(mktemp -d); port=$((20000 + RANDOM % 12000))
"$BUILD/warpd" --listen 127.0.0.1:$port --max-body $((1100 << 20)) --no-disk-cache >"$tmp/out" 2>&1 &
pid=$!; trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$port"
head -c $((1 << 30)) /dev/zero >"$tmp/big.f32"
curl -s -o /dev/null -X POST -T "$tmp/big.f32" -H 'Content-Type: application/octet-stream' "$base/v1/reduce?type=f32&op=sum" # compile
t=$(curl -s -o "$tmp/r" -w "%{time_total}" -X POST -T "$tmp/big.f32" -H 'Content-Type: application/octet-stream' "$base/v1/reduce?type=f32&op=sum")
echo "raw 1 GiB f32 upload + reduce: ${t}s = $(python3 -c "print(f'{(1<<30)/$t/1e9:.2f}')") GB/s   $(python3 -c "import json;d=json.load(open('$tmp/r'));print('backend',d['backend'],'timing',d['timing'])")"
python3 -c "import json,random; random.seed(1); print(json.dumps({'type':'f32','op':'sum','data':[round(random.random(),6) for _ in range(10**6)]}))" >"$tmp/j.json"
bytes=$(stat -c %s "$tmp/j.json")
curl -s -o /dev/null -H "Content-Type: application/json" --data-binary @"$tmp/j.json" "$base/v1/reduce"
t=$(curl -s -o "$tmp/r" -w '%{time_total}' -H "Content-Type: application/json" --data-binary @"$tmp/j.json" "$base/v1/reduce")
read -r recv parse < <(python3 -c "import json;t=json.load(open('$tmp/r'))['timing'];print(t.get('receive_us',0),t['parse_us'])")
echo "10^6 floats as JSON ($bytes bytes): round trip ${t}s = $(python3 -c "print(f'{$bytes/$t/1e6:.0f}')") MB/s; body received in ${recv} us, then parsed (and uploaded) in ${parse} us = $(python3 -c "print(f'{$bytes/$parse:.0f}')") MB/s"
curl -s -o /dev/null -H "Content-Type: application/json" -d '{"type":"f32","op":"sum","data":[1,2,3]}' "$base/v1/reduce"
for _ in $(seq 300); do curl -s -o /dev/null -w '%{time_total}\n' -H "Content-Type: application/json" -d '{"type":"f32","op":"sum","data":[1,2,3]}' "$base/v1/reduce"; done | sort -n >"$tmp/lat"
echo "small cached reduce round trip (curl, new connection each): p50 $(sed -n 150p "$tmp/lat")s p90 $(sed -n 270p "$tmp/lat")s"
