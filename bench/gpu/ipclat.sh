# ipclat — a repeated CUDA IPC reduce from Python, taken apart (the data plane's goal: wall time per call <= kernel +
# 100 us): tests/gpu/python_ipc.py once (TESTS=0 skips it), then per daemon flag set bench/shm/ipc_phases.py
# through the client's doorbell channel (the default) and over HTTP (CHANNEL=0), then ipc_lat.py's wrk row.
#   bench/gpu.sh ipclat      (FLAGSETS="default|default|default"; N=268435456; TESTS=1; PROFILE=1 adds
#                            ipc_phases.py's cProfile tables)
make -j16 "$BUILD/warpd" >/dev/null 2>&1 || { echo "build failed"; exit 1; }
daemon() { # flags...: a daemon on a random port, $port and $pid set
  port=$((20000 + RANDOM % 12000))
  "$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache "$@" >"$OUT/ipclat-daemon.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.05; done
}
if [ "${TESTS:-1}" = 1 ]; then
  daemon
  WARPD_URL="http://127.0.0.1:$port" python3 tests/gpu/python_ipc.py 2>&1 | grep -E "FAIL|python_ipc:|doorbell|channel" | tail -n 12 | tee -a "$OUT/ipclat.txt"
  kill $pid; wait $pid 2>/dev/null
fi
IFS='|' read -r -a sets <<<"${FLAGSETS:-default|default|default}"
for fl in "${sets[@]}"; do
  [ "$fl" = default ] && fl=
  # shellcheck disable=SC2086
  daemon $fl
  for ch in 1 0; do
    echo "== daemon flags: ${fl:-(defaults)}; client: $([ $ch = 1 ] && echo "doorbell channel" || echo "HTTP (CHANNEL=0)")"
    CHANNEL=$ch python3 bench/shm/ipc_phases.py "http://127.0.0.1:$port" "${N:-268435456}" 2>&1 | tee -a "$OUT/ipclat.txt"
  done
  WRK=$WRK python3 bench/shm/ipc_lat.py "http://127.0.0.1:$port" "${N:-268435456}" 2>&1 | grep -E "wrk|PUT.open" | tee -a "$OUT/ipclat.txt"
  kill $pid; wait $pid 2>/dev/null
done
