# multi — the multi-GPU numbers in one call on a machine with several GPUs (the device
# tool's nvidia-h100-x2 or nvidia-h200-x2): builds; tests/api/devices.sh --cuda (placement, pinning,
# sharding, info/ready on the real GPUs) and test_gpu_buffers; then, on one daemon with the defaults:
#   1. a 1 GiB raw PUT into a buffer on device 0 and into one sharded over every device (ROUNDS each,
#      alternating): upload GB/s, and the median device time of 10 reduces of each;
#   2. 2^31 f32 (8 GiB) uploaded raw to device 0 and sharded over every device: upload GB/s, the median
#      kernel_us of 10 reduces of each, GB/s and the ratio (the target: >= 1.9x);
#   3. concurrent reduces over one 2^24-element buffer per device, wrk at PER_CONNS (64) connections cycling over
#      them, against the same requests all on device 0's buffer: req/s, GB/s, the ratio (>= 1.8x).
# Prints short lines; logs under $OUT.   bench/gpu.sh multi
# (a dry run anywhere: NO_GPU=1 DAEMON_FLAGS="--backend emu --emu-devices 2" UPLOAD_BYTES=4194304
#  BIG_N=1048576 PER_N=65536 ROUNDS=1 DURATION=1 SKIP_TESTS=1)
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
make -j32 build/warpd build/asan/warpd build/asan/tests/api/api_devices build/tests/gpu/test_gpu_buffers \
  >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "commit ${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}  $(date -u +%F)"
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>/dev/null
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  BUILD=build tests/api/devices.sh --cuda >"$OUT/devices.log" 2>&1; echo "devices.sh --cuda: $(tail -1 "$OUT/devices.log")"
  timeout 300 build/tests/gpu/test_gpu_buffers >"$OUT/buffers.log" 2>&1; echo "test_gpu_buffers: $(tail -1 "$OUT/buffers.log")"
fi
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
port=$((20000 + RANDOM % 12000)); base="http://127.0.0.1:$port"
build/warpd --listen 127.0.0.1:$port --no-disk-cache --max-body $((9 << 30)) --max-elements $((1 << 31)) ${DAEMON_FLAGS:-} \
  >"$OUT/multi_daemon.log" 2>&1 &
pid=$!
for _ in $(seq 300); do curl -sf "$base/v1/ready" >/dev/null && break; sleep 0.05; done
ndev=$(curl -s "$base/v1/info" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["devices"]))')
echo "devices: $ndev"
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
med_kernel() { # buffer id -> median timing.kernel_us of 10 reduces (the first, which may compile, not counted)
  curl -s -o /dev/null -H 'Content-Type: application/json' -d "{\"buffer\":\"$1\",\"op\":\"sum\"}" "$base/v1/reduce"
  for _ in $(seq 10); do
    curl -s -H 'Content-Type: application/json' -d "{\"buffer\":\"$1\",\"op\":\"sum\",\"profile\":true}" "$base/v1/reduce" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["timing"]["kernel_us"])'
  done | sort -g | sed -n 5p
}
drop() { curl -s -o /dev/null -X DELETE "$base/v1/buffers/$1"; }

# 1. 1 GiB raw upload, one device against sharded
BYTES=${UPLOAD_BYTES:-$((1 << 30))}
head -c $BYTES /dev/urandom >"$tmp/big"
for r in $(seq "$ROUNDS"); do
  for where in device=0 shard=all; do
    t=$(curl -s -o "$tmp/put.json" -w '%{time_total}' -X PUT -T "$tmp/big" \
      -H 'Content-Type: application/octet-stream' "$base/v1/buffers?type=f32&$where")
    id=$(field "$tmp/put.json" 'd["id"]'); parts=$(field "$tmp/put.json" 'len(d.get("shards",[1]))')
    us=$(med_kernel "$id"); drop "$id"
    printf "upload %d MiB %-9s parts %d: %.2f GB/s; reduce %.1f us (%.0f GB/s)\n" $((BYTES >> 20)) $where "$parts" \
      "$(python3 -c "print($BYTES/$t/1e9)")" "$us" "$(python3 -c "print($BYTES/max($us,0.001)/1e3)")"
  done
done

# 2. 2^31 f32 (8 GiB: the 1 GiB of random bytes above, 8 times) uploaded raw to device 0 and sharded over
#    every device (uploaded, so the upload is measured too): the median device time of 10 reduces of each
N=${BIG_N:-$((1 << 31))}
for _ in $(seq $((N * 4 / BYTES))); do cat "$tmp/big"; done >"$tmp/big8"
declare -A at
for where in device=0 shard=all; do
  t=$(curl -s -o "$tmp/put.json" -w '%{time_total}' -X PUT -T "$tmp/big8" \
    -H 'Content-Type: application/octet-stream' "$base/v1/buffers?type=f32&$where")
  id=$(field "$tmp/put.json" 'd.get("id","")')
  [ -n "$id" ] || { echo "upload $where failed: $(head -c 300 "$tmp/put.json")"; continue; }
  us=$(med_kernel "$id"); at[$where]=$us; drop "$id"
  printf "2^31 f32 %-9s: upload %.2f GB/s; reduce %.1f us = %.0f GB/s\n" $where "$(python3 -c "print($N*4/$t/1e9)")" \
    "$us" "$(python3 -c "print($N*4/max($us,0.001)/1e3)")"
done
rm -f "$tmp/big8"
[ -n "${at[device=0]:-}" ] && [ -n "${at[shard=all]:-}" ] &&
  printf "sharded over %d devices / one device (2^31 f32 reduce): %.2fx\n" "$ndev" \
    "$(python3 -c "print(${at[device=0]}/${at[shard=all]})")"

# 3. concurrent reduces over per-device 2^24 buffers
PER=${PER_N:-$((1 << 24))}
ids=()
for d in $(seq 0 $((ndev - 1))); do
  ids+=("$(curl -s -X PUT "$base/v1/buffers" -H 'Content-Type: application/json' \
    -d "{\"type\":\"f32\",\"device\":$d,\"generate\":{\"kind\":\"random\",\"n\":$PER}}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')")
done
declare -A rate
for r in $(seq "$ROUNDS"); do
  for mode in one all; do
    if [ $mode = one ]; then list="\"${ids[0]}\""; else list=$(printf '"%s",' "${ids[@]}"); list=${list%,}; fi
    cat >"$tmp/per.lua" <<LUA
local ids = {$list}
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i + 1
  return wrk.format(nil, nil, nil, '{"op":"sum","buffer":"' .. ids[(i % #ids) + 1] .. '"}')
end
LUA
    "$WRK" -t8 -c"${PER_CONNS:-64}" -d"${DURATION}s" -s "$tmp/per.lua" "$base/v1/reduce" >"$tmp/wrk" 2>&1
    rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk"); bad=$(awk '/Non-2xx/ {print $NF}' "$tmp/wrk")
    rate[$mode]=${rps:-0}
    printf "per-device 2^24 buffers, %-3s of %d: %10s req/s %8.1f GB/s non2xx %s\n" $mode "$ndev" "${rps:-?}" \
      "$(python3 -c "print(${rps:-0} * $PER * 4 / 1e9)")" "${bad:-0}"
  done
  printf "  round %d: all / one = %.2fx\n" "$r" "$(python3 -c "print(${rate[all]}/max(${rate[one]},1e-9))")"
done
curl -s "$base/v1/info" | python3 -c 'import json,sys; [print("device", d.get("ordinal"), d.get("name"), "jobs", d.get("jobs_running"), "usable", d.get("usable")) for d in json.load(sys.stdin)["devices"]]'
kill $pid; wait $pid 2>/dev/null; pid=
