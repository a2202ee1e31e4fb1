# scan — one device call for a change to templates/scan.cu: device_scan against CUB and the
# cold prewarm of the default set, for the tree's scan.cu ("tree") and each NAME=FILE given, the
# variants alternating round by round in the same call; then the device_scan tests on the tree's.
# Prints a short table; logs in $OUT.
#   bench/gpu.sh scan old=OLD.cu [v2=OTHER.cu ...]
#   (ROUNDS=2 bench rounds, PREWARM_ROUNDS=3, TESTS=0 skips the tests, SCAN_CAP=300)
[ $# -ge 1 ] || { echo "usage: bench/gpu.sh scan NAME=SCAN_CU ..." >&2; exit 2; }
t0=$(date +%s)
gpu_commit_line
gpu_build "$BUILD/bench/reduce/bench_reduce" || exit 1
tmp=$(mktemp -d); trap 'cp "$tmp/tree/scan.cu" templates/scan.cu 2>/dev/null; rm -rf "$tmp"' EXIT
names=(tree)
mkdir -p "$tmp/tree"; cp templates/* kernels/wp_abi.h "$tmp/tree/"
for a in "$@"; do
  n=${a%%=*}; names+=("$n"); mkdir -p "$tmp/$n"; cp templates/* kernels/wp_abi.h "$tmp/$n/"; cp "${a#*=}" "$tmp/$n/scan.cu"
done

# bench_reduce reads templates/ (its build's path): scan.cu is swapped in place, round by round.
for r in $(seq "${ROUNDS:-2}"); do
  for v in "${names[@]}"; do
    cp "$tmp/$v/scan.cu" templates/scan.cu
    timeout 120 "$BUILD/bench/reduce/bench_reduce" --only scan --no-sweep --min-log2 20 >"$OUT/scan_${v}_$r.log" 2>&1
    echo "round $r $v: $(awk '$1 == "scan" && $5 ~ /^2\^(20|24|26|28|30)$/ {printf "%s %s %s us (%s); ", $4, $5, $7, $11} $NF == "DIFFERS" {printf "DIFFERS "}' "$OUT/scan_${v}_$r.log")"
  done
done
cp "$tmp/tree/scan.cu" templates/scan.cu

# The cold prewarm of the default set: --exit on worker processes, --templates per variant.
for r in $(seq "${PREWARM_ROUNDS:-3}"); do
  for v in "${names[@]}"; do
    rm -rf "$tmp/cache"
    s=$(date +%s.%N)
    line=$("$BUILD/warpd" --templates "$tmp/$v" --cache-dir "$tmp/cache" --prewarm prewarm/default.json --exit 2>&1 | tail -n 1)
    printf 'prewarm round %d %-6s: %.2f s wall — %s\n' "$r" "$v" "$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" "$line"
  done
done

if [ "${TESTS:-1}" = 1 ]; then
  capped test_gpu_reduce_scan ${SCAN_CAP:-300} "$BUILD/tests/gpu/test_gpu_reduce" --family device_scan
  capped test_gpu_batch 100 "$BUILD/tests/gpu/test_gpu_batch"
fi
echo "total $(( $(date +%s) - t0 )) s"
