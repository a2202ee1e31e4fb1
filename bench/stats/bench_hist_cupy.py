#!/usr/bin/env python3
"""bench_hist_cupy.py — CuPy's cp.histogram on the GPU machine, the baseline of the histogram row:
2^24 and 2^28 f32 uniform in [0, 1), resident, 256 and 65536 bins, cp.histogram(x, bins) (the target's
call: CuPy finds the range first) and with range=(0, 1); median of 7 timed with CUDA events after a
warm-up. Prints one row per case: time, GB/s (bytes of x read once)."""
import sys

try:
    import cupy as cp
except ImportError:
    print("SKIPPED: no cupy")
    sys.exit(0)


def timed(fn, reps=7):
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) * 1000.0)
    return sorted(times)[len(times) // 2]


print(f"{'call':<40} {'n':>6} {'bins':>6} | {'us':>10} {'GB/s':>8}")
for lg in (24, 28):
    n = 1 << lg
    x = cp.random.default_rng(21).random(n, dtype=cp.float32)
    for bins in (256, 65536):
        for label, fn in ((f"cp.histogram(x, {bins})", lambda: cp.histogram(x, bins)),
                          (f"cp.histogram(x, {bins}, range=(0, 1))", lambda: cp.histogram(x, bins, range=(0.0, 1.0)))):
            us = timed(fn)
            print(f"{label:<40} 2^{lg:<4} {bins:>6} | {us:10.1f} {n * 4 / us / 1e3:8.0f}")
    del x
    cp.get_default_memory_pool().free_all_blocks()
