#!/usr/bin/env bash
# Connection exhaustion, measured: build/warpd (or $WARPD_BIN) with default limits, 3000 slow
# connections (a partial request, then a header byte every 2 s; tests/api/slow_conns.py): the latency of
# GET /v1/health from a fresh connection while they are open (goal <= 100 ms), the time until a fresh
# one answers after they close (goal <= 2 s), and the daemon's open descriptors. Then the same with
# --max-connections 256, where the oldest idle connections make room for new ones. Prints numbers.
#   bench/http/slow_conns.sh [N]   (N slow connections, default 3000)
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin=${WARPD_BIN:-$BUILD/warpd}
n=${1:-3000}
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/daemon.sh
for flags in "" "--max-connections 256"; do
  # shellcheck disable=SC2086
  warpd_start "$bin" "$tmp" --backend emu --no-disk-cache $flags || { echo "daemon did not start"; cat "$tmp/err"; exit 1; }
  echo "-- warpd ${flags:-(default limits)}, RLIMIT_NOFILE $(awk '/Max open files/ {print $4}' /proc/$pid/limits)"
  python3 tests/api/slow_conns.py bench "$url" "$n" --pid "$pid"
  kill -TERM $pid; wait $pid 2>/dev/null; pid=
done
