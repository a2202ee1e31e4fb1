#!/usr/bin/env bash
# device_reduce's statistics (mean, var, std) and norms against the sanitized daemon on two emulated devices:
# tests/api/stats_accuracy.py holds f32 answers within docs/api.md's bound of numpy's float64 answer on
# data where naive summation fails, through every input form (sharded buffers included). Needs
# /usr/bin/python3 with numpy. Prints one closing line "stats: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
. tests/daemon.sh
if ! "$PY" -c 'import numpy' 2>/dev/null; then echo "!! $PY has no numpy"; echo "stats: 0 passed, 1 failed"; exit 1; fi
if ! warpd_start "$BUILD/asan/warpd" "$tmp" --backend emu --emu-devices 2; then
  cat "$tmp/err"; echo "stats: 0 passed, 1 failed"; exit 1
fi
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY
"$PY" tests/api/stats_accuracy.py "http://127.0.0.1:$port" >"$tmp/r" 2>&1
cat "$tmp/r"
pass=0; fail=0
count "$tmp/r" stats_accuracy
kill -TERM $pid; rc=0; wait $pid || rc=$?; pid=
if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$tmp/err"; then
  echo "!! daemon exited $rc or reported a sanitizer error:"; cat "$tmp/err"; fail=$((fail+1))
else pass=$((pass+1)); fi
echo "stats: $pass passed, $fail failed"
[ $fail -eq 0 ]
