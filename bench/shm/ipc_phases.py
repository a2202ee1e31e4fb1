#!/usr/bin/env python3
"""ipc_phases.py — where the Python client's time goes in a repeated CUDA IPC reduce (the data plane's goal: wall
time per call <= kernel time + 100 us).
Prints medians (of 201 calls) of: warpd.Client.reduce(a) whole; its parts (before the exchange: the
array, the context, the sync, the buffer lookup, the JSON; the exchange on the socket; after it); the same
request's bytes sent by a bare Python socket loop; the daemon's own total_us; the kernel; and the cost of
single steps (cuCtxSynchronize, __cuda_array_interface__, json, the context, the allocation id, the
IPC buffer lookup). PROFILE=1 adds cProfile's table (by own time) of 300 calls of a 2^28 array and of
a 2^10 one (the client's own time, where a small array's call goes).
  python3 bench/shm/ipc_phases.py URL [N]     (N: f32 elements, default 2^28; URL http://... or unix:PATH)"""
import cProfile, json, os, pstats, socket, statistics, sys, time, urllib.parse
import cupy as cp
sys.path.insert(0, "clients/python")
import warpd

url = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 28
a = cp.ones(n, dtype=cp.float32)
cp.cuda.Device().synchronize()
CHANNEL = os.environ.get("CHANNEL", "1") != "0"  # CHANNEL=0: the lean path over HTTP (no doorbell channel)
c = warpd.Client(url, channel=CHANNEL)
c.reduce(a)
R = 201
med = statistics.median
marks = {}
orig = warpd.Client._exchange


def timed_exchange(conn, method, target, data, headers, spin_us=0):
    marks["x0"] = time.perf_counter_ns()
    r = orig(conn, method, target, data, headers, spin_us)
    marks["x1"] = time.perf_counter_ns()
    marks["body"] = data
    marks["head"] = headers
    return r


orig_fast = warpd.Client._fast_exchange


def timed_fast(self, conn, req):  # the lean path of a repeated IPC reduce (Client._ipc_reduce_fast)
    marks["x0"] = time.perf_counter_ns()
    r = orig_fast(self, conn, req)
    marks["x1"] = time.perf_counter_ns()
    marks["body"] = req.split(b"\r\n\r\n", 1)[1]
    marks["lean"] = marks.get("lean", 0) + (r is not None)
    return r


orig_call = warpd._Channel.call


def timed_call(self, path, body, spin_us, timeout):  # the lean path through a doorbell channel
    marks["x0"] = time.perf_counter_ns()
    r = orig_call(self, path, body, spin_us, timeout)
    marks["x1"] = time.perf_counter_ns()
    marks["body"] = body
    marks["chan"] = marks.get("chan", 0) + (r is not None)
    return r


warpd.Client._exchange = staticmethod(timed_exchange)
warpd.Client._fast_exchange = timed_fast
warpd._Channel.call = timed_call
whole, pre, wire, post, total = [], [], [], [], []
for _ in range(R):
    t0 = time.perf_counter_ns()
    ans = c.reduce(a)
    t1 = time.perf_counter_ns()
    whole.append((t1 - t0) / 1e3)
    pre.append((marks["x0"] - t0) / 1e3)
    wire.append((marks["x1"] - marks["x0"]) / 1e3)
    post.append((t1 - marks["x1"]) / 1e3)
    total.append(ans["timing"]["total_us"])
warpd.Client._exchange = staticmethod(orig)
warpd.Client._fast_exchange = orig_fast
warpd._Channel.call = orig_call
c0 = warpd.Client(url, spin_us=0)  # the same without polling the socket (sleeps in recv at once)
c0.reduce(a)
nospin = []
for _ in range(R):
    t0 = time.perf_counter_ns(); c0.reduce(a); nospin.append((time.perf_counter_ns() - t0) / 1e3)
c0.close()
prof = [c._json("POST", "/v1/reduce", {"op": "sum", "buffer": json.loads(marks["body"])["buffer"], "profile": True})
        for _ in range(21)]
kern = med([p["timing"]["kernel_us"] for p in prof])

# the same bytes from a bare socket loop (no client at all)
body = marks["body"]
if url.startswith("unix:"):  # warpd --listen unix:PATH
    host = "localhost"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(url[5:])
else:
    u = urllib.parse.urlparse(url)
    host = f"{u.hostname}:{u.port}"
    s = socket.create_connection((u.hostname, u.port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
req = (f"POST /v1/reduce HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
       f"Content-Length: {len(body)}\r\n\r\n").encode() + body
bare = []
for _ in range(R):
    t0 = time.perf_counter_ns()
    s.sendall(req)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    h, _, rest = buf.partition(b"\r\n\r\n")
    ln = int([l.split(b":")[1] for l in h.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < ln:
        rest += s.recv(65536)
    bare.append((time.perf_counter_ns() - t0) / 1e3)
s.close()


def each(fn, k=2001):
    ts = []
    for _ in range(k):
        t0 = time.perf_counter_ns(); fn(); ts.append((time.perf_counter_ns() - t0) / 1e3)
    return med(ts)


drv = c._driver()
with drv.context(0):
    sync = each(drv.synchronize)
cai = each(lambda: a.__cuda_array_interface__)
dev = each(lambda: a.device.id)
ga = each(lambda: warpd._GpuArray(a, "cupy", c._driver))
jd = each(lambda: json.dumps({"op": "sum", "buffer": "b1234567"}))
jl = each(lambda: json.loads(json.dumps(ans)))
g = warpd._GpuArray(a, "cupy", c._driver)


def in_context():
    with drv.context(0):
        pass


def ipc_lookup():
    with drv.context(0):
        c._ipc_buffer(g, drv)


ctx, aid, look = each(in_context), each(lambda: drv.allocation_id(g.ptr)), each(ipc_lookup)
print(f"2^{n.bit_length() - 1} f32, median of {R}: kernel {kern:.0f} us")
print(f"  Client.reduce   {med(whole):6.0f} us  (over the kernel {med(whole) - kern:.0f}; "
      f"{marks.get('lean', 0)} of {R} by the lean path over HTTP, {marks.get('chan', 0)} through a channel)")
print(f"    before        {med(pre):6.1f} us")
print(f"    exchange      {med(wire):6.1f} us")
print(f"    after         {med(post):6.1f} us")
print(f"  spin_us=0       {med(nospin):6.0f} us  (over the kernel {med(nospin) - kern:.0f}; default spin_us {warpd.SPIN_US})")
print(f"  bare socket     {med(bare):6.0f} us  (over the kernel {med(bare) - kern:.0f})")
print(f"  daemon total_us {med(total):6.0f} us  (over the kernel {med(total) - kern:.0f})")
print(f"  steps: cuCtxSynchronize {sync:.1f}, __cuda_array_interface__ {cai:.1f}, device.id {dev:.1f}, "
      f"_GpuArray {ga:.1f}, json.dumps {jd:.1f}, json.loads(answer) {jl:.1f}, context enter+exit {ctx:.1f}, "
      f"allocation_id {aid:.1f}, _ipc_buffer {look:.1f} us")
print("  answer timing:", json.dumps(ans["timing"]))
c.close()
if os.environ.get("PROFILE") == "1":  # the client's own time, by function
    small = cp.ones(1 << 10, dtype=cp.float32)
    for x, label in ((a, f"2^{n.bit_length() - 1}"), (small, "2^10")):
        c.reduce(x)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(300):
            c.reduce(x)
        pr.disable()
        print(f"== cProfile of 300 calls, {label} f32, by own time")
        pstats.Stats(pr).sort_stats("tottime").print_stats(20)
    c.close()
