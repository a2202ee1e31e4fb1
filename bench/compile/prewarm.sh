#!/usr/bin/env bash
# Times `warpd --prewarm SET --exit` (worker processes) into an empty cache directory (cold: every
# spec compiled) and again into the filled one (warm: every spec read back); then the same set as a
# daemon's background --prewarm (worker threads in one process: GET /v1/ready's prewarm.elapsed_s);
# then bench_prewarm (which NVRTC way compiles the set fastest). Prints numbers for bench/RESULTS.md.
#   bench/compile/prewarm.sh [SET.json]   (default prewarm/default.json; BUILD=build)
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
set_file=${1:-prewarm/default.json}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
command -v nvidia-smi >/dev/null 2>&1 && echo "gpu:     $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
echo "commit:  ${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
echo "set:     $set_file ($(grep -o '"family"' "$set_file" | wc -l) specs)"
for run in cold warm; do
  t0=$(date +%s.%N)
  "$BUILD/warpd" --cache-dir "$tmp/cache" --prewarm "$set_file" --exit >"$tmp/out" 2>"$tmp/err"; rc=$?
  t1=$(date +%s.%N)
  printf '%-5s warpd --prewarm --exit: %.2f s wall (exit %d) — %s\n' "$run" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" $rc "$(tail -n 1 "$tmp/out")"
  [ $rc -eq 0 ] || tail -5 "$tmp/err"
done
echo "cache:   $(find "$tmp/cache" -name '*.wpk' | wc -l) files, $(du -sh "$tmp/cache" | cut -f1)"
. tests/daemon.sh
mkdir -p "$tmp/d"
if warpd_start "$BUILD/warpd" "$tmp/d" --prewarm "$set_file"; then
  for _ in $(seq 6000); do
    ready=$(curl -s "http://127.0.0.1:$port/v1/ready")
    [[ "$ready" == *'"status":"ready"'* ]] && break
    sleep 0.01
  done
  kill -TERM "$pid"; wait "$pid"
  echo "cold  background --prewarm (threads, one process): $(sed -n 's/.*"elapsed_s":\([0-9.]*\).*/\1/p' <<<"$ready") s — $ready"
fi
if [ -x "$BUILD/bench/compile/bench_prewarm" ]; then "$BUILD/bench/compile/bench_prewarm" "$set_file"; fi
