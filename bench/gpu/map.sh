# map — transform-reduce on the GPU machine: build, test_gpu_map (cuda against emu, bit for
# bit), then bench_map (device_reduce's sum against the map x*x, f32 2^24..2^30, GB/s and the ratio;
# dot of two 2^28 f32 arrays in TB/s), CUB's Sum and TransformReduce (bench_map_cub: x*x, and the dot
# over indexes) and CuPy's x.sum(), (x*x).sum() and cp.dot(x, y); logs in $OUT.
#   bench/gpu.sh map   (TEST_TIMEOUT=150; BENCH_TIMEOUT=120; MAX_LOG2=30)
make -j16 build/warpd build/tests/gpu/test_gpu_map build/bench/reduce/bench_map build/bench/reduce/bench_map_cub >"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "== test_gpu_map"
timeout "${TEST_TIMEOUT:-150}" ./build/tests/gpu/test_gpu_map >"$OUT/test_gpu_map.log" 2>&1; echo "(exit $?)"
tail -4 "$OUT/test_gpu_map.log"; grep -E '^  mismatch' "$OUT/test_gpu_map.log" | head -8
echo "== bench_map"
timeout "${BENCH_TIMEOUT:-120}" ./build/bench/reduce/bench_map --max-log2 "${MAX_LOG2:-30}" 2>&1 | tee "$OUT/bench_map.log"
echo "== bench_map_cub"
timeout 90 ./build/bench/reduce/bench_map_cub --max-log2 "${MAX_LOG2:-30}" 2>&1 | tee "$OUT/bench_map_cub.log"
echo "== CuPy (median of 7, 2^28 f32 resident)"
timeout 90 python3 - <<'PY' 2>&1 | tee "$OUT/bench_map_cupy.log"
import cupy as cp
n = 1 << 28
x = cp.random.random(n, dtype=cp.float32)
y = cp.random.random(n, dtype=cp.float32)
def med_us(f):
    f(); cp.cuda.Device().synchronize()
    s, e, t = cp.cuda.Event(), cp.cuda.Event(), []
    for _ in range(7):
        s.record(); f(); e.record(); e.synchronize()
        t.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
    return sorted(t)[3]
for name, f, nbytes in (("x.sum()", lambda: x.sum(), 4 * n), ("(x*x).sum()", lambda: (x * x).sum(), 4 * n),
                        ("cp.dot(x, y)", lambda: cp.dot(x, y), 8 * n)):
    us = med_us(f)
    print(f"cupy {name:14s} {us:9.1f} us {nbytes / us / 1e3:8.0f} GB/s")
PY
