# anywidth — CUB's logical warps at any width, in one call: build; test_gpu_anywidth
# (warp_reduce and warp_scan at every width 1..32, block_reduce and block_scan at blocks that are not
# powers of two, cuda against emu bit for bit, every strategy);
# anywidth_http.py (the same widths as small concurrent HTTP jobs, so they run batched, cuda against
# emu); the power-of-two regression (test_gpu_reduce --quick for warp_reduce, warp_scan); then
# bench_anywidth: warp_reduce and warp_scan time per element at widths 7, 8, 31, 32, f32, 2^24 and 2^28
# (the number: width 7 within 10 % of width 8 per element). Logs in $OUT.
#   bench/gpu.sh anywidth [test|bench|all]   (ROUNDS=7)
what=${1:-all}
t0=$(date +%s)
gpu_commit_line
make -j16 build/warpd build/tests/gpu/test_gpu_anywidth build/tests/gpu/test_gpu_reduce build/bench/reduce/bench_anywidth \
  >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
if [ "$what" != bench ]; then
  capped test_gpu_anywidth 150 build/tests/gpu/test_gpu_anywidth
  tmp=$(mktemp -d)
  . tests/daemon.sh
  if warpd_start build/warpd "$tmp" --backend cuda; then
    (unset http_proxy https_proxy; timeout 120 python3 bench/reduce/anywidth_http.py "$url") >"$OUT/anywidth_http.log" 2>&1
    tail -n 2 "$OUT/anywidth_http.log"; grep -m 4 FAIL "$OUT/anywidth_http.log"
    kill "$pid"; wait "$pid" 2>/dev/null
  else
    echo "anywidth_http: the daemon did not start: $(tail -c 300 "$tmp/err")"
  fi
  rm -rf "$tmp"
  for f in warp_reduce warp_scan; do capped "test_gpu_reduce_$f" 90 build/tests/gpu/test_gpu_reduce --quick --family $f; done
fi
if [ "$what" != test ]; then
  timeout 150 build/bench/reduce/bench_anywidth --rounds "${ROUNDS:-7}" 2>&1 | tee "$OUT/bench_anywidth.log"
fi
echo "total $(( $(date +%s) - t0 )) s"
