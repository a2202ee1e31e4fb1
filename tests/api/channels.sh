#!/usr/bin/env bash
# Doorbell channels (POST/GET/DELETE /v1/channels, the data plane) against the sanitized daemon on the emulator:
# tests/api/channels.py drives each daemon as a client would (its modes: the protocol and every refusal
# with defaults; --channels-max 2; --channels-max 0; --shm off; --token-file; a read-only region with the
# daemon as nobody through setpriv when run as root; channels left open at SIGTERM). Each daemon must stop
# cleanly with no sanitizer report. Objects are /dev/shm/warpd-chtest-<pid>-*, removed at exit. Prints
# "channels: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin=$BUILD/asan/warpd
tmp=$(mktemp -d)
pid=
obj=warpd-chtest-$$
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp" /dev/shm/$obj-*' EXIT
trap 'exit 1' TERM INT
pass=0; fail=0
. tests/daemon.sh
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ok() { pass=$((pass+1)); echo "ok   $1"; }
no() { fail=$((fail+1)); echo "FAIL $1"; }
PY=$(python3 -c 'import sys; print(sys.executable)')

# run LABEL MODE [TOKEN] -- daemon flags...: a daemon, channels.py's MODE against it, a clean stop
run() {
  local label=$1 mode=$2 token=$3 runner=$4 dir=$5; shift 5
  echo "-- $label"
  if ! warpd_start "$runner" "$dir" --backend emu --no-disk-cache "$@"; then
    no "$label: the daemon did not start"; cat "$dir/err"; pid=; return
  fi
  "$PY" tests/api/channels.py "$url" "$obj" "$mode" $token >"$dir/log" 2>&1
  sed '$d' "$dir/log"; count "$dir/log" "channels.py $mode"
  kill -TERM "$pid"; local rc=0; wait "$pid" || rc=$?; pid=
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|ERROR: ' "$dir/err"; then
    no "$label: SIGTERM exit $rc, or a sanitizer report:"; cat "$dir/err"
  else ok "$label: SIGTERM exits 0, no sanitizer report"; fi
}

run "emu, defaults" main "" "$bin" "$tmp"
run "--channels-max 2" limit "" "$bin" "$tmp" --channels-max 2
run "--channels-max 0" off "" "$bin" "$tmp" --channels-max 0
run "--shm off" shmoff "" "$bin" "$tmp" --shm off
printf '%s\n' "0123456789abcdef0123456789abcdef" >"$tmp/token"; chmod 600 "$tmp/token"
run "--token-file" token 0123456789abcdef0123456789abcdef "$bin" "$tmp" --token-file "$tmp/token"
run "channels left open at SIGTERM (one asleep, one spinning)" leave "" "$bin" "$tmp"
if [ "$(id -u)" != 0 ]; then
  run "a read-only region" readonly "" "$bin" "$tmp"
elif command -v setpriv >/dev/null; then
  mkdir -m 0777 "$tmp/nobody"; chmod o+x "$tmp"
  printf '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups "%s" "$@"\n' "$PWD/$bin" >"$tmp/nobody/warpd"
  chmod 0755 "$tmp/nobody/warpd"
  run "a read-only region (the daemon as nobody)" readonly "" "$tmp/nobody/warpd" "$tmp/nobody"
else
  no "read-only: running as root without setpriv (util-linux)"
fi
echo "channels: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
