#!/usr/bin/env bash
# Client tests: starts $BUILD/warpd (builds nothing) on a free loopback port with a fresh cache, runs
# tests/clients/test_python.py (unittest, standard library only) against it, stops it, and ends with
# "clients: N passed, N failed" (a skipped test counts as failed; each curl script is a check too).
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
give_up() { echo "!! $*"; echo "clients: 0 passed, 1 failed"; exit 1; }

[ -x "$BUILD/warpd" ] || give_up "$BUILD/warpd is missing (run make first)"
. tests/daemon.sh
warpd_start "$BUILD/warpd" "$tmp" --backend emu || { cat "$tmp/err"; give_up "the daemon did not start"; }

WARPD_URL="http://127.0.0.1:$port" timeout 300 python3 -m unittest -v tests/clients/test_python.py 2>&1 | tee "$tmp/log"

# Every curl script runs cleanly against the daemon and stands verbatim in README.md.
curl_pass=0; curl_fail=0
for script in clients/curl/*.sh; do
  name=$(basename "$script")
  if ! WARPD="http://127.0.0.1:$port" timeout 60 sh "$script" >"$tmp/curl.out" 2>&1 || grep -qE '^\{"error":' "$tmp/curl.out"; then
    echo "FAIL curl $name:"; head -c 600 "$tmp/curl.out"; echo; curl_fail=$((curl_fail+1))
  elif ! python3 - "$script" <<'PY'
import sys
body = open(sys.argv[1]).read().split("\n", 1)[1]  # all but the shebang
sys.exit(0 if body.strip() in open("README.md").read() else 1)
PY
  then echo "FAIL curl $name is not in README.md verbatim"; curl_fail=$((curl_fail+1))
  else echo "ok curl $name"; curl_pass=$((curl_pass+1)); fi
done
kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=

# A daemon with --token-file: every script sends $WARPD_TOKEN; without it, one that needs it fails (401).
token=curl-test-token-0123456789abcdef
printf '%s\n' "$token" >"$tmp/token"
if warpd_start "$BUILD/warpd" "$tmp" --backend emu --token-file "$tmp/token"; then
  for script in clients/curl/*.sh; do
    name=$(basename "$script")
    if WARPD="http://127.0.0.1:$port" WARPD_TOKEN=$token timeout 60 sh "$script" >"$tmp/curl.out" 2>&1 &&
       ! grep -qE '^\{"error":' "$tmp/curl.out"; then echo "ok curl $name with WARPD_TOKEN"; curl_pass=$((curl_pass+1))
    else echo "FAIL curl $name with WARPD_TOKEN:"; head -c 600 "$tmp/curl.out"; echo; curl_fail=$((curl_fail+1)); fi
  done
  if WARPD="http://127.0.0.1:$port" WARPD_TOKEN= sh clients/curl/info.sh >"$tmp/curl.out" 2>&1; then
    echo "FAIL curl info.sh without WARPD_TOKEN succeeded"; curl_fail=$((curl_fail+1))
  else echo "ok curl info.sh without WARPD_TOKEN fails"; curl_pass=$((curl_pass+1)); fi
  kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
else
  cat "$tmp/err"; echo "FAIL the daemon with a token did not start"; curl_fail=$((curl_fail+1))
fi

ran=$(sed -nE 's/^Ran ([0-9]+) tests?.*/\1/p' "$tmp/log" | tail -n 1)
[ -n "$ran" ] || give_up "unittest printed no summary"
num() { sed -nE "s/.*$1=([0-9]+).*/\\1/p" "$tmp/log" | tail -n 1; }
failures=$(num failures); errors=$(num errors); skipped=$(num skipped); unexpected=$(num 'unexpected successes')
failed=$(( ${failures:-0} + ${errors:-0} + ${unexpected:-0} ))
passed=$(( ran - failed - ${skipped:-0} + curl_pass ))
failed=$(( failed + ${skipped:-0} + curl_fail ))  # a skipped test is a failed check here
echo "clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
