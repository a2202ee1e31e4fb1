# upload — a raw PUT /v1/buffers of SHARD_BYTES (1 GiB) from curl to device 0, three times each
# for warpd started with each --conn-memory in CONN_MEMORY (the pool libmicrohttpd reads a body
# through: larger means fewer, larger reads), the settings alternating; prints GB/s per upload.
#   bench/gpu.sh upload      (BUILD=build; SHARD_BYTES=1073741824; CONN_MEMORY="262144 65536 262144 65536")
BYTES=${SHARD_BYTES:-$((1 << 30))}
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
make -j16 "$BUILD/warpd" >/dev/null 2>&1 || { echo "build failed"; exit 1; }
head -c "$BYTES" /dev/zero >"$tmp/big"
for cm in ${CONN_MEMORY:-262144 65536 262144 65536}; do
  port=$((20000 + RANDOM % 12000))
  "$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache --conn-memory "$cm" --max-body $((BYTES + (64 << 20))) >"$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.05; done
  line=""
  for _ in 1 2 3; do
    t=$(curl -s -o "$tmp/put.json" -w '%{time_total}' -X PUT -T "$tmp/big" -H 'Content-Type: application/octet-stream' \
      "http://127.0.0.1:$port/v1/buffers?type=f32&device=0&ttl=1")
    grep -q '"id"' "$tmp/put.json" || { line="$line failed($(head -c 120 "$tmp/put.json"))"; continue; }
    line="$line $(awk -v b="$BYTES" -v t="$t" 'BEGIN {printf "%.2f", b / t / 1e9}')"
    curl -s -X DELETE "http://127.0.0.1:$port/v1/buffers/$(sed 's/.*"id":"\([^"]*\)".*/\1/' "$tmp/put.json")" >/dev/null
  done
  printf "conn-memory %8d  upload %d MiB GB/s:%s\n" "$cm" $((BYTES >> 20)) "$line"
  kill $pid; wait $pid 2>/dev/null; pid=
done
