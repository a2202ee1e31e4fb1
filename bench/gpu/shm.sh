# shm — the data plane's numbers: 1 GiB of f32 in a registered /dev/shm region reduced end to end, beside the
# same bytes as a raw HTTP body and the pinned host -> device copy (CuPy) in the same program; a small
# job through a region against inline JSON at one connection (bench/shm/shm.py); then the Python
# client's paths (Client.shared, a plain numpy array through a pooled region, a CuPy array through
# IPC: tests/gpu/python_ipc.py --bench) when that script is there.
#   bench/gpu.sh shm        (BUILD=build; SHM_BYTES=1073741824; RUNS=5)
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
make -j16 "$BUILD/warpd" >/dev/null 2>&1 || { echo "build failed"; exit 1; }
port=$((20000 + RANDOM % 12000))
"$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache --max-body $(( ${SHM_BYTES:-1073741824} + (64 << 20) )) >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/v1/ready" >/dev/null && break; sleep 0.05; done
python3 bench/shm/shm.py "http://127.0.0.1:$port" --bytes "${SHM_BYTES:-1073741824}" --runs "${RUNS:-5}" 2>&1 | tee "$OUT/shm.txt"
if [ -f tests/gpu/python_ipc.py ]; then
  WARPD_URL="http://127.0.0.1:$port" PYTHONPATH=clients/python python3 tests/gpu/python_ipc.py 2>&1 | tail -n 3
  WARPD_URL="http://127.0.0.1:$port" PYTHONPATH=clients/python python3 tests/gpu/python_ipc.py --bench 2>&1 | tee "$OUT/shm_python.txt"
fi
kill $pid; wait $pid 2>/dev/null; pid=
