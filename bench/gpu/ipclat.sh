# ipclat — a repeated CUDA IPC reduce from Python, taken apart (issue 22: wall time per call <= kernel +
# 100 us): bench/gpu/ipc_phases.py per daemon flag set, then ipc_lat.py's wrk row (the C client).
#   bench/gpu.sh ipclat      (FLAGSETS="default|--busy-poll-us 1000"; N=268435456)
make -j16 "$BUILD/warpd" >/dev/null 2>&1 || { echo "build failed"; exit 1; }
IFS='|' read -r -a sets <<<"${FLAGSETS:-default|--busy-poll-us 1000}"
for fl in "${sets[@]}"; do
  [ "$fl" = default ] && fl=
  port=$((20000 + RANDOM % 20000))
  # shellcheck disable=SC2086
  "$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache $fl >"$OUT/ipclat-daemon.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.05; done
  echo "== daemon flags: ${fl:-(defaults)}"
  python3 bench/gpu/ipc_phases.py "http://127.0.0.1:$port" "${N:-268435456}" 2>&1 | tee -a "$OUT/ipclat.txt"
  WRK=$WRK python3 bench/gpu/ipc_lat.py "http://127.0.0.1:$port" "${N:-268435456}" 2>&1 | grep -E "wrk|warpd.Client" | tee -a "$OUT/ipclat.txt"
  kill $pid; wait $pid 2>/dev/null
done
