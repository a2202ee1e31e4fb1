#!/usr/bin/env python3
"""bench_stats_cupy.py — CuPy's answers to device_reduce's statistics over resident f32 arrays, 2^24 .. 2^30
(even powers): x.sum(), x.mean(), x.var(), x.std(), cp.linalg.norm(x), cp.count_nonzero(x), timed
with CUDA events around R back-to-back calls (as bench_stats.c times warpd), so the two tables read side
by side. Prints one table; says SKIPPED without CuPy or a GPU. --max-log2 N lowers the top."""
import sys

try:
    import cupy as cp
except Exception as e:  # no CuPy here
    print(f"SKIPPED: no cupy ({e.__class__.__name__})")
    sys.exit(0)


def time_us(fn, r):
    fn()  # warm-up (CuPy compiles its kernels on first use)
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record()
    for _ in range(r):
        fn()
    b.record()
    b.synchronize()
    return cp.cuda.get_elapsed_time(a, b) * 1000.0 / r


def main():
    max_log2 = 30
    if "--max-log2" in sys.argv:
        max_log2 = int(sys.argv[sys.argv.index("--max-log2") + 1])
    free, _ = cp.cuda.Device(0).mem_info
    while max_log2 > 24 and (3 << max_log2) * 4 > free * 0.9:  # the array and var's temporaries
        max_log2 -= 1
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode()}; CuPy {cp.__version__}; f32 resident")
    print(f"{'cupy':<20} {'n':>6} {'us':>12} {'GB/s':>9}")
    big = cp.random.default_rng(21).random(1 << max_log2, dtype=cp.float32)
    calls = (("x.sum()", lambda x: x.sum()), ("x.mean()", lambda x: x.mean()), ("x.var()", lambda x: x.var()),
             ("x.std()", lambda x: x.std()), ("cp.linalg.norm(x)", lambda x: cp.linalg.norm(x)),
             ("cp.count_nonzero(x)", lambda x: cp.count_nonzero(x)))
    for lg in range(24, max_log2 + 1, 2):
        n = 1 << lg
        x = big[:n]
        for name, fn in calls:
            slow = name in ("x.var()", "x.std()")
            r = 2 if slow and lg >= 28 else 5 if slow else max(5, int(5 * 2**28 / n))
            us = time_us(lambda: fn(x), r)
            print(f"{name:<20}   2^{lg:<2} {us:12.1f} {n * 4 / us / 1e3:9.1f}")


if __name__ == "__main__":
    main()
