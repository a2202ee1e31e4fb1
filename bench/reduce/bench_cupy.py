#!/usr/bin/env python3
"""bench_cupy.py — cupy.sum (f32, i32) and cupy.cumsum (f32) over resident arrays, 2^10 .. 2^30 (even
powers), timed with CUDA events around R back-to-back calls (as bench_reduce.cu times warpd and CUB),
so the three can be read side by side. Prints one table; says SKIPPED without CuPy or a GPU."""
import sys

try:
    import cupy as cp
except Exception as e:  # no CuPy here
    print(f"SKIPPED: no cupy ({e.__class__.__name__})")
    sys.exit(0)


def repeats_for(n):
    return int(max(5, min(200, 5 * 2**28 / n)))


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
    while max_log2 > 10 and (2 << max_log2) * 4 > free * 0.9:
        max_log2 -= 1
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode()}; CuPy {cp.__version__}")
    print(f"{'what':<14} {'type':<4} {'n':>6} {'cupy us':>11} {'GB/s':>9}")
    rng = cp.random.default_rng(42)
    for dtype, name in ((cp.float32, "f32"), (cp.int32, "i32")):
        big = (rng.random(1 << max_log2, dtype=cp.float32) * (1 if name == "f32" else 1000)).astype(dtype)
        for lg in range(10, max_log2 + 1, 2):
            n = 1 << lg
            x = big[:n]
            r = repeats_for(n)
            us = time_us(lambda: cp.sum(x), r)
            print(f"{'cupy.sum':<14} {name:<4}   2^{lg:<2} {us:11.2f} {n * 4 / us / 1e3:9.1f}")
            if name == "f32":
                us = time_us(lambda: cp.cumsum(x), r)
                print(f"{'cupy.cumsum':<14} {name:<4}   2^{lg:<2} {us:11.2f} {2 * n * 4 / us / 1e3:9.1f}")
        del big


if __name__ == "__main__":
    main()
