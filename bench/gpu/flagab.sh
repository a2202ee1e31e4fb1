# flagab — daemon flags against each other on the request path: for each set of flags, daemon starts
# alternating (set 1, set 2, ..., then again), each start measured at 256 connections on health, the tiny
# reduce and the tiny warp (wrk, D seconds a cell), printed as req/s, the ratio to the same start's
# health and the mean batch size of the start, and the jobs its resident kernels answered (after the reduce).
# A start that answers nothing leaves its log in $OUT/fail_*.log.
#   bench/gpu.sh flagab  (SETS="default=;s2=--streams-per-device 2": label=flags, ';' between sets;
#                         ROUNDS=2; MODES=cuda; D=3)
make -j16 "$BUILD/warpd" >"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
gpu_commit_line
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
gpu_tiny_scripts "$tmp"
krps() { "$WRK" -t8 -c256 -d"${D:-3}s" -s "$tmp/$1.lua" "$base/v1/$1" 2>&1 | awk '/^Requests\/sec/ {printf "%.0f", $2 / 1000}'; }
batch_mean() { curl -s "$base/metrics" | awk '/^warpd_batches_total /{b=$2} /^warpd_batched_jobs_total /{j=$2} END {printf "%.2f", b ? j / b : 0}'; }
resident_jobs() { curl -s "$base/metrics" | awk '/^warpd_device_resident_runs_total[{]/ {s += $NF} END {printf "%d", s}'; }
IFS=';' read -r -a sets <<<"${SETS:-default=;s2=--streams-per-device 2}"
for r in $(seq "${ROUNDS:-2}"); do
  for mode in ${MODES:-cuda}; do
    for s in "${sets[@]}"; do
      label=${s%%=*} flags=${s#*=}
      # shellcheck disable=SC2086 # flags: words
      gpu_tiny_start "$tmp" --backend "$mode" $flags
      h=$(krps health) a=$(krps reduce) ra=$(resident_jobs) w=$(krps warp) bm=$(batch_mean)
      [ "${h:-0}" -gt 0 ] || cp "$tmp/log" "$OUT/fail_${r}_${mode}_$label.log"
      gpu_tiny_stop
      awk -v m="$mode" -v v="$label" -v h="${h:-0}" -v a="${a:-0}" -v w="${w:-0}" -v bm="$bm" -v ra="${ra:-0}" 'BEGIN {
        printf "%-5s %-10s health %4dk  reduce %4dk (%.2fx)  warp %4dk (%.2fx)  batch %s  resident jobs %s\n", m, v, h, a, h ? a / h : 0, w, h ? w / h : 0, bm, ra }'
    done
  done
done
