# engine — the batching engine's numbers on the GPU machine, in one run: builds warpd and the GPU tests,
# runs the engine's GPU tests (stream pool, recovery, buffers, streams), then wrk on loopback at
# 1/16/64/256 connections against a cached 3-element POST /v1/reduce and a 32-lane POST /v1/warp, for
#   new     — the defaults (4 streams per device; a small cached GPU job on the HTTP thread while its
#             device is idle, else on a worker: --inline-gpu idle; dynamic batching of what waits)
#   never   — the defaults plus --inline-gpu never (every GPU job on a worker)
#   win100  — the defaults plus --batch-window-us 100 (a batch waits up to 100 us to gather more)
#   inline  — the defaults plus --inline-gpu always (small cached GPU jobs on the HTTP thread, as before)
#   today   — --streams-per-device 1 --inline-gpu always (and --batch-max 1 where the build has batching):
#             one job on the device at a time, as before the stream pool
#   yield   — the defaults plus --gpu-wait yield (jobs poll their event and yield the CPU)
#   prof    — the defaults, every request with "profile": true (timing events around each device step)
#   emu     — --backend emu (ENGINES="... emu"): the same requests with no device, the HTTP side's ceiling
#   L=F,V,… — a sweep: the defaults plus the flags F V … (commas for spaces), labelled L
# and prints one table: req/s, p50 and p99 latency, non-2xx answers. The multi-GPU numbers (sharded
# buffers, per-device buffers) are `bench/gpu.sh multi`'s.
#
# wrk comes from Debian: the GPU machine has no registry, so carry the packages in .debs/ (bench/lib/gpu_tasks.sh
# unpacks every .deb there):  apt-get download wrk libluajit-5.1-2   (into .debs/)
#   bench/gpu.sh engine      (BUILD=build; DURATION=5 seconds per cell; CONNS="1 16 64 256"; ENGINES="new never
#                            win100 inline today"; SKIP_TESTS=1, SKIP_WRK=1 leave parts out; WRK=path)
DURATION=${DURATION:-5}

make -j16 "$BUILD/warpd" "$BUILD/tests/gpu/test_gpu_streams" "$BUILD/tests/gpu/test_gpu_recover" \
  "$BUILD/tests/gpu/test_gpu_buffers" "$BUILD/tests/gpu/test_gpu_stream" >"$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')  $(date -u +%F)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -4

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  for t in test_gpu_streams test_gpu_recover test_gpu_buffers test_gpu_stream; do
    echo "== $t"; "$BUILD/tests/gpu/$t" 2>&1 | tail -6
  done
  # devices, placement and sharding: tests/api/devices.sh's checks on the GPUs here
  if make -j16 "$BUILD/asan/warpd" "$BUILD/asan/tests/api/api_devices" >>"$OUT/build.log" 2>&1; then
    BUILD=$BUILD tests/api/devices.sh --cuda 2>&1 | grep -E "^--|passed|FAIL|!!|warpd:|SKIPPED" | head -30
  fi
fi

[ -x "$WRK" ] || { echo "no wrk ($WRK): apt-get download wrk libluajit-5.1-2 into .debs/"; exit 1; }
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
cat >"$tmp/reduce.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"type":"f32","op":"sum","data":[1,2,3]}'
EOF
cat >"$tmp/warp.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32}}'
EOF
for r in reduce warp; do sed "s/}'\$/,\"profile\":true}'/" "$tmp/$r.lua" >"$tmp/${r}_prof.lua"; done

start() { # flags...
  local port=$((20000 + RANDOM % 12000))
  "$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache "$@" >"$tmp/log" 2>&1 &
  pid=$!
  base="http://127.0.0.1:$port"
  for _ in $(seq 200); do curl -sf "$base/v1/ready" >/dev/null && break; sleep 0.05; done
  curl -s -o /dev/null -H 'Content-Type: application/json' -d '{"type":"f32","op":"sum","data":[1,2,3]}' "$base/v1/reduce"  # compile: cached from here
  curl -s -o /dev/null -H 'Content-Type: application/json' -d '{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32}}' "$base/v1/warp"
  # the _batch kernels are built in the background once batches ask for them (bgbuild.c): a second
  # of 16 connections on each route asks, then wait for the builds, so no cell measures a compile
  # beside its requests (a build that never comes just times out here)
  for r in reduce warp; do "$WRK" -t2 -c16 -d1s -s "$tmp/$r.lua" "$base/v1/$r" >/dev/null 2>&1; done
  for _ in $(seq 100); do
    curl -s "$base/metrics" >"$tmp/m"
    grep -q '^warpd_background_builds_queued [1-9]' "$tmp/m" || break # built, none asked (--batch-max 1), or an older build
    sleep 0.05
  done
}
stop() { kill $pid 2>/dev/null; wait $pid 2>/dev/null; pid=; }

cell() { # engine endpoint conns [lua script name: default the endpoint's]
  local threads=$(( $3 < 8 ? $3 : 8 ))
  "$WRK" -t"$threads" -c"$3" -d"${DURATION}s" --latency -s "$tmp/${4:-$2}.lua" "$base/v1/$2" >"$tmp/wrk" 2>&1
  local rps p50 p99 bad
  rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk")
  p50=$(awk '$1=="50%" {print $2}' "$tmp/wrk")
  p99=$(awk '$1=="99%" {print $2}' "$tmp/wrk")
  bad=$(awk '/Non-2xx/ {print $NF}' "$tmp/wrk")
  printf "%-7s %-7s %5s %12s %10s %10s %8s\n" "$1" "$2" "$3" "${rps:-?}" "${p50:-?}" "${p99:-?}" "${bad:-0}"
}

if [ "${SKIP_WRK:-0}" != 1 ]; then
batch_flag=()
help=$("$BUILD/warpd" --help 2>&1) # not `--help | grep -q`: under pipefail grep's early exit is warpd's SIGPIPE
[[ $help == *--batch-max* ]] && batch_flag=(--batch-max 1)
printf "%-7s %-7s %5s %12s %10s %10s %8s\n" engine route conns "req/s" p50 p99 non2xx
inline_always=(--inline-gpu); [[ $help == *"--inline-gpu MODE"* ]] && inline_always=(--inline-gpu always)
for engine in ${ENGINES:-new never win100 inline today}; do
  case $engine in
    new) start ;;
    never) start --inline-gpu never ;;
    win100) start --batch-window-us 100 ;;
    inline) start "${inline_always[@]}" ;;
    today) start --streams-per-device 1 "${inline_always[@]}" "${batch_flag[@]}" ;;
    yield) start --gpu-wait yield ;;
    prof) start ;; # the same daemon; its cells send the *_prof.lua bodies
    emu) start --backend emu ;; # the HTTP side's ceiling on this machine: no device at all
    *=*) # LABEL=FLAG,VALUE,...: a sweep, e.g. t8=--threads,8 or emu8=--backend,emu,--threads,8
      IFS=, read -r -a extra <<<"${engine#*=}"; engine=${engine%%=*}; start "${extra[@]}" ;;
    *) echo "unknown engine $engine"; continue ;;
  esac
  curl -s "$base/v1/info" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("#", d["backend"], d["device"]["name"])' 2>/dev/null
  for route in reduce warp; do
    for c in ${CONNS:-1 16 64 256}; do cell $engine $route $c "$([ $engine = prof ] && echo ${route}_prof)"; done
  done
  # how the engine ran them: jobs per batch, answered on the HTTP thread vs handed to a worker
  curl -s "$base/metrics" | awk '
    /^warpd_batches_total / {b=$2} /^warpd_batched_jobs_total / {j=$2}
    /^warpd_http_answered_inline_total / {i=$2} /^warpd_http_deferred_total / {d=$2}
    /^warpd_background_builds_total\{outcome="built"\}/ {g=$2}
    END {printf "#   %s jobs in %s batches (%.2f a batch), %s answered inline, %s deferred, %s background builds\n",
         j, b, (b > 0 ? j / b : 0), i, d, g}'
  stop
done
fi

# The multi-GPU numbers (a sharded buffer against one device, reduces over per-device buffers) are
# `bench/gpu.sh multi`'s.
