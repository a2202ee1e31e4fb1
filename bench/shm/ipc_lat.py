#!/usr/bin/env python3
"""ipc_lat.py — where a repeated CUDA IPC reduce's wall time goes (the data plane's goal: <= kernel time + 100 us).
  python3 bench/shm/ipc_lat.py URL [N]      (N: elements of f32, default 2^28)
A CuPy array from cudaMalloc (its own allocation) is made a warpd buffer once (PUT /v1/buffers
{"cuda_ipc"}); then, 41 times each, median: the bare request on one kept connection (http.client),
with "profile" (the daemon's kernel_us), and through the Python client (warpd.Client.reduce)."""
import base64, http.client, json, statistics, sys, time, urllib.parse
import cupy as cp

url = urllib.parse.urlparse(sys.argv[1]); n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 28
ptr = cp.cuda.runtime.malloc(n * 4)
a = cp.ndarray((n,), cp.float32, cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(ptr, n * 4, None), 0))
a[...] = 1
cp.cuda.Device().synchronize()
conn = http.client.HTTPConnection(url.hostname, url.port)
def call(m, p, b):
    conn.request(m, p, json.dumps(b), {"Content-Type": "application/json"}); r = conn.getresponse(); return json.loads(r.read())
t0 = time.perf_counter()
bid = call("PUT", "/v1/buffers", {"cuda_ipc": {"handle": base64.b64encode(bytes(cp.cuda.runtime.ipcGetMemHandle(ptr))).decode(),
                                                "count": n, "type": "f32"}})["id"]
first = time.perf_counter() - t0
def series(body):
    ts, last = [], None
    for _ in range(41):
        t = time.perf_counter(); last = call("POST", "/v1/reduce", body); ts.append((time.perf_counter() - t) * 1e6)
    return statistics.median(ts), last
bare, r1 = series({"op": "sum", "buffer": bid})
prof, r2 = series({"op": "sum", "buffer": bid, "profile": True})
sys.path.insert(0, "clients/python"); import warpd
c = warpd.Client(sys.argv[1]); c.reduce(a)
ts = []
for _ in range(41):
    t = time.perf_counter(); v = c.reduce(a)["value"]; ts.append((time.perf_counter() - t) * 1e6)
print(f"2^{n.bit_length() - 1} f32 via IPC: PUT+open {first * 1e3:.2f} ms; value {r1['value']} (want {float(n)})")
print(f"bare POST median {bare:.0f} us (daemon total_us {r1['timing']['total_us']:.0f}, device_us {r1['timing'].get('device_us')})")
print(f"profiled median {prof:.0f} us (kernel_us {r2['timing']['kernel_us']}, total_us {r2['timing']['total_us']:.0f})")
print(f"warpd.Client.reduce median {statistics.median(ts):.0f} us; over the kernel: bare {bare - r2['timing']['kernel_us']:.0f} us, client {statistics.median(ts) - r2['timing']['kernel_us']:.0f} us")
print(json.dumps(r1["timing"]))
import os, shutil, subprocess, tempfile
wrk = os.environ.get("WRK") or shutil.which("wrk")
if wrk and os.path.exists(wrk):  # the same request from a C client, one connection: the service's own round trip
    lua = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    lua.write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n'
              % json.dumps(json.dumps({"op": "sum", "buffer": bid})))
    lua.close()
    out = subprocess.run([wrk, "-t1", "-c1", "-d3s", "--latency", "-s", lua.name, sys.argv[1] + "/v1/reduce"],
                         capture_output=True, text=True).stdout
    p50 = next((l.split()[1] for l in out.splitlines() if l.strip().startswith("50%")), "?")
    rps = next((l.split()[1] for l in out.splitlines() if l.startswith("Requests/sec")), "?")
    print(f"wrk, one connection: p50 {p50}, {rps} req/s (kernel {r2['timing']['kernel_us']} us)")
c.close(); call("DELETE", "/v1/buffers/" + bid, None) if False else None
