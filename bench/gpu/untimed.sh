# untimed — one call on the GPU machine for small jobs without timing events (a request without
# "profile"): builds; test_gpu_batch (every batched family bit for bit against alone, on the untimed
# default); then bench/http/latency.py on a default daemon (medians of the
# answers' own timing, each route untimed and profiled), bench_smalljob (the submission variants'
# floor in-process) and bench/gpu.sh engine for the engines in ENGINES (default "new prof today") at
# CONNS (default "1 256"). Prints short tables; logs under $OUT.
#   bench/gpu.sh untimed      (SKIP_TESTS=1 leaves the test out; DURATION=5)
make -j16 build/warpd build/tests/gpu/test_gpu_batch build/bench/launch/bench_smalljob \
  >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "commit ${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}  $(date -u +%F)"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  BUILD=build timeout 300 build/tests/gpu/test_gpu_batch >"$OUT/test_gpu_batch.log" 2>&1
  echo "test_gpu_batch: $(tail -1 "$OUT/test_gpu_batch.log")"
fi
port=$((20000 + RANDOM % 12000))
build/warpd --listen 127.0.0.1:$port --no-disk-cache >"$OUT/latency_daemon.log" 2>&1 &
pid=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.05; done
# lone requests ask for the _batch kernels; give the background builds a moment
python3 bench/http/latency.py $port 300 >/dev/null 2>&1; sleep 2
python3 bench/http/latency.py $port 3000
kill $pid; wait $pid 2>/dev/null
build/bench/launch/bench_smalljob 5000 5 events4,bare,graph,launch 2>/dev/null
ENGINES=${ENGINES:-new prof today} CONNS=${CONNS:-1 256} DURATION=${DURATION:-5} SKIP_TESTS=1 \
  bench/gpu.sh engine 2>&1 | grep -v "^commit"
