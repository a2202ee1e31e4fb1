#!/usr/bin/env bash
# Devices without GPUs (multi-device placement): the sanitized daemon with --backend emu --emu-devices 1, 2 and 3, and
# with one device marked lost by the emulator's test hook (WARPD_EMU_FAIL_DEVICE=N: device N is lost
# from the start, as a GPU after a sticky error that cannot be cleared). Each runs api_devices
# (placement, pinning, info/ready, a lost device) and the sharding cases where present. Prints one
# closing line "devices: N passed, N failed".
#   tests/api/devices.sh          (make test: emu)
#   tests/api/devices.sh --cuda   (make test-gpu: the same checks against the GPUs here; SKIPPED without)
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0
. tests/daemon.sh

run_with() { # label, env assignment or "", daemon flags...
  local label=$1 envset=$2; shift 2
  echo "-- $label"
  if [ -n "$envset" ]; then export "${envset?}"; fi
  rm -f "$tmp/out" # else warpd_start may read the last daemon's port before the new one truncates it
  warpd_start "$bin" "$tmp" --backend "$backend" --no-disk-cache "$@"; local started=$?
  if [ -n "$envset" ]; then unset "${envset%%=*}"; fi
  if [ $started -ne 0 ]; then echo "!! daemon did not start"; cat "$tmp/err"; fail=$((fail+1)); return; fi
  "$BUILD/asan/tests/api/api_devices" "http://127.0.0.1:$port" >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" "$label"
  kill -TERM $pid; local rc=0; wait $pid || rc=$?; pid=
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$tmp/err"; then
    echo "!! daemon exited $rc or reported a sanitizer error:"; cat "$tmp/err"; fail=$((fail+1))
  else pass=$((pass+1)); fi
}

if [ "${1:-}" = --cuda ]; then # make test-gpu: the same checks on every GPU there is
  if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
    echo "SKIPPED: no GPU"; echo "devices: 0 passed, 0 failed"; exit 0
  fi
  backend=cuda bin=$BUILD/warpd # plain: the driver and ASan's shadow memory do not mix
  run_with "cuda, every GPU" ""
  run_with "cuda, today's engine (one stream per device, no batching)" "" --streams-per-device 1 --batch-max 1
  run_with "cuda, batching with a window" "" --batch-window-us 2000
else
  backend=emu bin=$BUILD/asan/warpd
  run_with "1 device" "" --emu-devices 1
  run_with "2 devices" "" --emu-devices 2
  run_with "3 devices" "" --emu-devices 3
  run_with "2 devices, batching with a window" "" --emu-devices 2 --batch-window-us 2000
  run_with "2 devices, today's engine (one stream, no batching)" "" --emu-devices 2 --streams-per-device 1 --batch-max 1
  run_with "3 devices, device 1 lost" "WARPD_EMU_FAIL_DEVICE=1" --emu-devices 3
  run_with "1 device, lost" "WARPD_EMU_FAIL_DEVICE=0" --emu-devices 1
  # the HTTP threads by default on the emulator, whose jobs they run: every CPU, 4..16
  rm -f "$tmp/out"
  if warpd_start "$bin" "$tmp" --backend emu --no-disk-cache; then
    n=$(http_threads "$pid"); want=$(default_threads 0)
    if [ "$n" = "$want" ]; then pass=$((pass+1)); echo "ok   emu: $n HTTP threads by default"
    else fail=$((fail+1)); echo "FAIL emu: $n HTTP threads by default, not $want"; fi
    kill -TERM $pid; wait $pid; pid=
  else fail=$((fail+1)); echo "FAIL the daemon did not start"; cat "$tmp/err"; fi
  # --devices is checked with the other flags: a bad list exits 2 at once (it used to fall back to the
  # emulator with a warning under --backend auto)
  for bad in "0,x" "0,0" "" "-1" "1,,2"; do
    "$bin" --listen 127.0.0.1:0 --no-disk-cache --devices "$bad" >"$tmp/bad.out" 2>&1; rc=$?
    if [ $rc -eq 2 ] && grep -q -- "--devices needs all or a list" "$tmp/bad.out"; then pass=$((pass+1)); echo "ok   --devices '$bad' refused"
    else fail=$((fail+1)); echo "FAIL --devices '$bad': exit $rc: $(head -c 300 "$tmp/bad.out")"; fi
  done
  # --inline-gpu takes never, idle or always (it was a bare flag before; a bare one at the end is
  # refused too, not read as the next flag)
  for bad in "sometimes" "" "IDLE"; do
    "$bin" --listen 127.0.0.1:0 --no-disk-cache --inline-gpu "$bad" >"$tmp/bad.out" 2>&1; rc=$?
    if [ $rc -eq 2 ] && grep -q -- "--inline-gpu must be never, idle or always" "$tmp/bad.out"; then pass=$((pass+1)); echo "ok   --inline-gpu '$bad' refused"
    else fail=$((fail+1)); echo "FAIL --inline-gpu '$bad': exit $rc: $(head -c 300 "$tmp/bad.out")"; fi
  done
  "$bin" --listen 127.0.0.1:0 --no-disk-cache --inline-gpu >"$tmp/bad.out" 2>&1; rc=$?
  if [ $rc -eq 2 ]; then pass=$((pass+1)); echo "ok   a bare --inline-gpu refused"
  else fail=$((fail+1)); echo "FAIL a bare --inline-gpu: exit $rc: $(head -c 300 "$tmp/bad.out")"; fi
  for mode in never always; do run_with "2 devices, --inline-gpu $mode" "" --emu-devices 2 --inline-gpu "$mode"; done
fi
echo "devices: $pass passed, $fail failed"
[ $fail -eq 0 ]
