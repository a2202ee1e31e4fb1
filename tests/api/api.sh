#!/usr/bin/env bash
# API tests: starts the sanitized daemon on a free loopback port with a fresh cache (holding only the
# kernels the table and the programs compile in passing: warpd_seed), runs every case file in
# tests/api/cases/ and the C API test programs against it (cache.json last), stops it with SIGTERM and checks
# it exited cleanly with no sanitizer report. Prints one closing line "api: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0
. tests/daemon.sh
start_daemon() {
  warpd_start "$BUILD/asan/warpd" "$tmp" --backend emu "$@" && return 0
  echo "!! daemon did not start"; cat "$tmp/err"; return 1
}
stop_daemon() {
  kill -TERM $pid; local rc=0; wait $pid || rc=$?
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$tmp/err"; then
    echo "!! daemon exited $rc or reported a sanitizer error:"; cat "$tmp/err"; fail=$((fail+1))
  else pass=$((pass+1)); fi
}

# The kernels the table and the programs compile only in passing (warpd_seed), so that they compile what
# they test; cache.json, which prunes the whole cache, after the programs.
warpd_seed "$tmp"
mapfile -t cases < <(case_files cache.json)
if start_daemon; then
  base="http://127.0.0.1:$port"
  "$BUILD/asan/tests/api/api_runner" "$base" "${cases[@]}" >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" api_runner
  for t in "$BUILD"/asan/tests/api/api_*; do
    case "$t" in *api_runner|*.o|*.d) continue;; esac
    [ -x "$t" ] || continue
    WARPD_CACHE_DIR="$tmp/cache" "$t" "$base" >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" "$t"
  done
  "$BUILD/asan/tests/api/api_runner" "$base" tests/api/cases/cache.json >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" cache.json
  # Phase 2 material: the README kernel, which a fresh process must find on disk, and the hash of a
  # kernel whose disk file we will corrupt while the daemon is down.
  curl -s -o /dev/null "$base/v1/compile" -H 'Content-Type: application/json' -d '{"family":"shfl_xor","type":"i32","width":16}'
  victim=$(curl -s "$base/v1/compile" -H 'Content-Type: application/json' -d '{"family":"shfl_down","type":"f16"}' | sed -n 's/.*"hash":"\([0-9a-f]*\)".*/\1/p')
  stop_daemon
  # Phase 2: a fresh process on the same cache dir finds kernels on disk, and a corrupted file
  # (one byte flipped) is detected and rebuilt.
  vfile=$(find "$tmp/cache" -name "$victim.wpk" | head -n 1)
  if [ -n "$victim" ] && [ -f "$vfile" ]; then
    printf '\xff' | dd of="$vfile" bs=1 seek=100 conv=notrunc status=none
    if start_daemon; then
      base="http://127.0.0.1:$port"
      "$BUILD/asan/tests/api/api_runner" "$base" tests/api/restart/*.json >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" restart
      stop_daemon
    else fail=$((fail+1)); fi
  else
    echo "!! could not find the cache file of $victim"; fail=$((fail+1))
  fi
  # Phase 3: tiny limits (tests/api/limits/): a queue of 2 on one job worker (503 + Retry-After
  # when full, cancel), finished jobs forgotten after 1 s; a 1 MiB buffer quota and 100000 elements,
  # which streamed raw bodies meet before they are read; a 40 KiB disk cache (LRU eviction).
  if start_daemon --max-jobs 2 --job-workers 1 --job-ttl 1 --buffer-quota 1048576 --max-elements 100000 --cache-disk-max 40K; then
    base="http://127.0.0.1:$port"
    "$BUILD/asan/tests/api/api_runner" "$base" tests/api/limits/*.json >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" limits
    stop_daemon
  else fail=$((fail+1)); fi
  warpd_seed "$tmp" # phase 3's 40 KiB cap left little of the cache: the seed again
  # Phases 4 and 5: dynamic batching with a window, where concurrent jobs of one key share batches,
  # and with --batch-max 1, where none does (tests/api/api_batch.c; phase 1 ran it with the defaults).
  # Phase 6: today's engine (one stream per device, no batching). Phase 7: batching with a window on
  # two emulated devices (queues per device) and two workers, where the jobs that defer (compile)
  # wait as followers on the workers: every result still right, nothing stuck.
  for b in "window --batch-window-us 20000" "off --batch-max 1" "off --streams-per-device 1 --batch-max 1" \
           "any --emu-devices 2 --batch-window-us 20000 --workers 2"; do
    set -- $b; bmode=$1; shift
    if start_daemon "$@"; then
      base="http://127.0.0.1:$port"
      WARPD_BATCH=$bmode "$BUILD/asan/tests/api/api_batch" "$base" >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" "batch $bmode"
      stop_daemon
    else fail=$((fail+1)); fi
  done
else
  fail=$((fail+1))
fi
echo "api: $pass passed, $fail failed"
[ $fail -eq 0 ]
