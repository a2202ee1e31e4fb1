#!/usr/bin/env bash
# A soak under wrk (transport hardening): 512 keep-alive connections for $SOAK_S seconds (60) against build/warpd
# (or $WARPD_BIN): GET /v1/health, then POST /v1/reduce of 3 floats (a cached kernel). Prints wrk's
# requests/s, latency and every error it counts (connect, read, write, timeout, non-2xx), and the
# daemon's RSS and descriptors before, after each run, and 5 s after. Needs wrk (installed through
# .ci/deps.sh with WARPD_BENCH_DEPS=1; not a dependency of make test). Prints numbers.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin=${WARPD_BIN:-$BUILD/warpd}
secs=${SOAK_S:-60}
command -v wrk >/dev/null || WARPD_BENCH_DEPS=1 ./.ci/deps.sh >/dev/null
command -v wrk >/dev/null || { echo "wrk_soak: wrk is not installed, skipped"; exit 0; }
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/daemon.sh
warpd_start "$bin" "$tmp" --backend emu --no-disk-cache || { echo "daemon did not start"; cat "$tmp/err"; exit 1; }
state() { echo "$1: RSS $(awk '/VmRSS/ {print $2, $3}' /proc/$pid/status), fds $(ls /proc/$pid/fd | wc -l)"; }
cat >"$tmp/reduce.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"type":"f32","op":"sum","data":[1,2,3]}'
wrk.headers["Content-Type"] = "application/json"
LUA
curl -s -o /dev/null -H 'Content-Type: application/json' -d '{"type":"f32","op":"sum","data":[1,2,3]}' "$url/v1/reduce" # compile
state "before"
for what in health reduce; do
  if [ $what = health ]; then args=("$url/v1/health"); else args=(-s "$tmp/reduce.lua" "$url/v1/reduce"); fi
  echo "-- wrk -t2 -c512 -d${secs}s ${args[*]##*/}"
  wrk -t2 -c512 -d"${secs}s" --timeout 10s "${args[@]}" 2>&1 | grep -vE '^\s*$' | tee "$tmp/wrk"
  grep -qE 'Socket errors|Non-2xx' "$tmp/wrk" || echo "errors: none (wrk counted no socket error and no non-2xx answer)"
  state "after $what"
done
sleep 5
state "5 s later"
kill -TERM $pid; wait $pid; echo "daemon exit status $?"; pid=
