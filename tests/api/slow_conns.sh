#!/usr/bin/env bash
# Connection exhaustion (transport hardening): the sanitized daemon keeps answering GET /v1/health from a fresh
# connection while thousands of slow connections (a partial request, a header byte every 2 s) are open,
# and again once they close; with --max-connections far below their number (the oldest idle ones make
# room); and --header-timeout closes connections whose headers never finish. tests/api/slow_conns.py
# does the talking; bounds are generous (it asserts answers, never milliseconds). Each daemon must exit
# cleanly with no sanitizer report. Ends with "slow_conns: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0
. tests/daemon.sh
url_of() { sed -E 's#//0\.0\.0\.0:#//127.0.0.1:#' <<<"$1"; } # a wildcard listener, reached on loopback
phase() { # what, daemon flags..., --, slow_conns.py arguments after the URL
  local what=$1; shift
  local flags=(); while [ "$1" != -- ]; do flags+=("$1"); shift; done; shift
  echo "== $what"
  if ! warpd_start "$BUILD/asan/warpd" "$tmp" --backend emu --no-disk-cache "${flags[@]}"; then
    echo "!! daemon did not start"; cat "$tmp/err"; fail=$((fail+1)); pid=; return
  fi
  timeout 300 python3 tests/api/slow_conns.py "$1" "$(url_of "$url")" "${@:2}" --pid "$pid" >"$tmp/r" 2>&1
  cat "$tmp/r"; count "$tmp/r" slow_conns.py
  kill -TERM "$pid"; local rc=0; wait "$pid" || rc=$?; pid=
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$tmp/err"; then
    echo "!! daemon exited $rc or reported a sanitizer error:"; cat "$tmp/err"; fail=$((fail+1))
  else pass=$((pass+1)); fi
}
phase "3000 slow connections, default limits" -- check 3000
phase "500 slow connections, --max-connections 64" --max-connections 64 -- check 500 --evicts
phase "--header-timeout 2 closes connections whose headers never finish" --header-timeout 2 -- deadline 5 2
# Beyond loopback (0.0.0.0; the test still connects through 127.0.0.1): 64 connections per peer address.
insecure=(); [[ $("$BUILD/asan/warpd" --help 2>&1) == *--insecure* ]] && insecure=(--insecure) # once tokens exist
phase "one peer address beyond loopback holds at most 64" --listen 0.0.0.0:0 --max-connections 100 "${insecure[@]}" -- perip 80 64
echo "slow_conns: $pass passed, $fail failed"
[ $fail -eq 0 ]
