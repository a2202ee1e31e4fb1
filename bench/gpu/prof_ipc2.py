#!/usr/bin/env python3
"""prof_ipc2.py URL — the Python client's own time in a repeated CUDA IPC reduce of 2^28 f32 (issue 22),
step by step: cProfile of 300 calls (by own time), then the median of single steps of the path."""
import cProfile, pstats, statistics, sys, time
sys.path.insert(0, "clients/python")
import warpd, cupy as cp
a = cp.ones(1 << 28, dtype=cp.float32)
c = warpd.Client(sys.argv[1]); c.reduce(a)
pr = cProfile.Profile(); pr.enable()
for _ in range(300): c.reduce(a)
pr.disable(); pstats.Stats(pr).sort_stats("tottime").print_stats(25)
def each(fn, k=3001):
    ts = []
    for _ in range(k):
        t0 = time.perf_counter_ns(); fn(); ts.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(ts)
drv = c._driver(); g = warpd._GpuArray(a, "cupy", c._driver)
def ctx():
    with drv.context(0):
        pass
def ipcbuf():
    with drv.context(0):
        c._ipc_buffer(g, drv)
for name, fn in (("_gpu_kind", lambda: warpd._gpu_kind(a)), ("context enter+exit", ctx),
                 ("allocation_id", lambda: drv.allocation_id(g.ptr)), ("_ipc_buffer", ipcbuf),
                 ("_transport", lambda: c._transport(None)), ("request build (json.dumps)",
                  lambda: warpd.json.dumps({"op": "sum", "buffer": "b-0123456789abcdef"}, separators=(",", ":"))),
                 ("time.perf_counter", time.perf_counter)):
    print(f"{name:28s} {each(fn):6.2f} us")
c.close()
