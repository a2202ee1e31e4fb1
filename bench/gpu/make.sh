# make — one call on the GPU machine: build, run the GPU tests (make test-gpu) and the benchmarks
# (make bench), and print a short table last. Logs in $OUT.
#   bench/gpu.sh make [test|bench|all]
what=${1:-all}
make -j16 build/warpd >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
summary=()
if [ "$what" != bench ]; then
  make -j16 test-gpu 2>&1 | tee "$OUT/test-gpu.log" | grep -E 'passed, .* failed|SKIPPED|FAIL|mismatch' | tail -40
  summary+=("test-gpu: $(grep -E '^gpu: ' "$OUT/test-gpu.log" | tail -n 1)")
fi
if [ "$what" != test ]; then
  make -j16 bench 2>&1 | tee "$OUT/bench.log" | grep -vE '^(cc|nvcc|ar) ' | tail -60
fi
echo; echo "== summary"; printf '%s\n' "${summary[@]}"
