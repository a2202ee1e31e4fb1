#!/usr/bin/env bash
# fair.sh — two users on one daemon: a flood of large reduces against one user's tiny ones (bench/users/fair.py
# has the runs and the table). Starts $BUILD/warpd with a tokens file of two users (flood, tiny: both
# run), then fair.py against it.
#   bench/users/fair.sh            the target's measurement: 64 connections of 2^26-element f32 reduces, 10 s a
#                            run (on the GPU machine: bench/gpu.sh fair)
#   bench/users/fair.sh --small    the same on the emulator, small: 8 connections of 2^20, 3 s a run
# Environment: BUILD (build), LOG2, CONNS, DURATION override the sizes; WARPD_FLAGS are added to the
# daemon's flags (e.g. "--backend emu"); PORT (a random free one by default).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
BUILD=${BUILD:-build}
small=0
[ "${1:-}" = --small ] && small=1
if [ $small = 1 ]; then
  LOG2=${LOG2:-20} CONNS=${CONNS:-8} DURATION=${DURATION:-3} WARPD_FLAGS=${WARPD_FLAGS:---backend emu}
else
  LOG2=${LOG2:-26} CONNS=${CONNS:-64} DURATION=${DURATION:-10} WARPD_FLAGS=${WARPD_FLAGS:-}
fi
[ -x "$BUILD/warpd" ] || make -j"$(nproc)" "$BUILD/warpd" >/dev/null || { echo "fair.sh: build failed"; exit 1; }
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
flood=flood-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') tiny=tiny-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
{
  echo "flood run $(printf %s "$flood" | sha256sum | cut -d' ' -f1)"
  echo "tiny run $(printf %s "$tiny" | sha256sum | cut -d' ' -f1)"
} >"$tmp/tokens"
chmod 600 "$tmp/tokens"
port=${PORT:-$((20000 + RANDOM % 12000))}
# shellcheck disable=SC2086
"$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache --tokens "$tmp/tokens" $WARPD_FLAGS >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 400); do curl -sf "http://127.0.0.1:$port/v1/health" >/dev/null && break; sleep 0.05; done
curl -sf "http://127.0.0.1:$port/v1/health" >/dev/null || { echo "fair.sh: the daemon did not start"; cat "$tmp/log"; exit 1; }
head -n 1 "$tmp/log" | grep -o 'backend=[a-z]*'
python3 bench/users/fair.py "http://127.0.0.1:$port" "$flood" "$tiny" --log2 "$LOG2" --conns "$CONNS" --duration "$DURATION"
rc=$?
curl -s -H "Authorization: Bearer $tiny" "http://127.0.0.1:$port/metrics" | grep '^warpd_user_'
kill $pid; wait $pid 2>/dev/null; pid=
exit $rc
