# reqab — the request path, an older tree against this one: daemon starts alternating (old, new, old,
# new, ...) on each backend, each start measured at 256 connections on health, the tiny reduce and the
# tiny warp (wrk, D seconds a cell), printed as req/s and the ratio to the same start's health, and the
# start's mean jobs a batch (/metrics, the reduce's and the warp's cells together). The old
# tree travels as a tarball: `git archive OLD | gzip > bench/old.tgz` (git-ignored: name it in carry);
# it is built in /tmp/old. A start that answers nothing leaves its log in $OUT/fail_*.log.
#   bench/gpu.sh reqab  (OLD_TGZ=bench/old.tgz; ROUNDS=2; MODES="cuda emu"; ORDER="old new"; D=3; FLAGS="":
#                        more warpd flags)
gpu_old_and_new reqab || exit $?
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
gpu_tiny_scripts "$tmp"
krps() { "$WRK" -t8 -c256 -d"${D:-3}s" -s "$tmp/$1.lua" "$base/v1/$1" 2>&1 | awk '/^Requests\/sec/ {printf "%.0f", $2 / 1000}'; }
for r in $(seq "${ROUNDS:-2}"); do
  for mode in ${MODES:-cuda emu}; do
    for v in ${ORDER:-old new}; do
      b=$BUILD
      [ "$v" = old ] && b=/tmp/old/build
      # shellcheck disable=SC2086 # FLAGS: words
      BUILD=$b gpu_tiny_start "$tmp" --backend "$mode" ${FLAGS:-}
      h=$(krps health) a=$(krps reduce) w=$(krps warp)
      bs=$(curl -s "$base/metrics" | awk '$1=="warpd_batches_total" {b=$2} $1=="warpd_batched_jobs_total" {j=$2}
        END {printf "%.2f", b ? j / b : 0}')
      [ "${h:-0}" -gt 0 ] || cp "$tmp/log" "$OUT/fail_${r}_${mode}_$v.log"
      gpu_tiny_stop
      awk -v m="$mode" -v v="$v" -v h="${h:-0}" -v a="${a:-0}" -v w="${w:-0}" -v bs="$bs" 'BEGIN {
        printf "%-5s %-4s health %4dk  reduce %4dk (%.2fx)  warp %4dk (%.2fx)  %s a batch\n", m, v, h, a, h ? a / h : 0, w,
          h ? w / h : 0, bs }'
    done
  done
done
