# A/B of daemon variants for the channel IPC round trip: ROUNDS rounds, each variant a fresh daemon.
. bench/gpu/lib.sh; gpu_env >/dev/null 2>&1
for r in 1 2 3; do for v in tree untimed; do
  port=$((20000 + RANDOM % 20000))
  build-ab/$v/build/warpd --listen 127.0.0.1:$port --no-disk-cache >/tmp/d.log 2>&1 & pid=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.05; done
  echo "== $v round $r"
  CHANNEL=1 python3 bench/gpu/ipc_phases.py "http://127.0.0.1:$port" 2>&1 | grep -E "Client.reduce|before|after|total_us|answer timing" | cut -c1-200
  kill $pid; wait $pid 2>/dev/null
done; done
