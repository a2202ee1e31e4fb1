import cProfile, pstats, sys, time, statistics
sys.path.insert(0, "clients/python"); import warpd, cupy as cp
n = 1 << 28
a = cp.ones(n, dtype=cp.float32)
c = warpd.Client(sys.argv[1]); c.reduce(a)
ts = []
for _ in range(100):
    t = time.perf_counter(); c.reduce(a); ts.append((time.perf_counter() - t) * 1e6)
print("median", statistics.median(ts))
small = cp.ones(1 << 10, dtype=cp.float32); c.reduce(small)
ts = []
for _ in range(200):
    t = time.perf_counter(); c.reduce(small); ts.append((time.perf_counter() - t) * 1e6)
print("small median", statistics.median(ts))
pr = cProfile.Profile(); pr.enable()
for _ in range(300): c.reduce(small)
pr.disable()
pstats.Stats(pr).sort_stats("tottime").print_stats(18)
