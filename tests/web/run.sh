#!/usr/bin/env bash
# Web tests: the playground in headless Chromium (Debian chromium, driven by playwright-core).
# Builds nothing: expects $BUILD/warpd. Installs what it needs when missing (npm ci in tests/web; apt-get
# install chromium when root), starts the daemon (and a second one with --token-file) on a free loopback port with a fresh cache, runs
# playground.test.mjs with node's test runner, stops the daemon, and ends with "web: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
ROOT=$PWD
tmp=$(mktemp -d)
pid=
token_pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$token_pid" ] && kill "$token_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
give_up() { echo "!! $*"; echo "web: 0 passed, 1 failed"; exit 1; }

[ -x "$BUILD/warpd" ] || give_up "$BUILD/warpd is missing (run make first)"
command -v node >/dev/null || give_up "node is not installed"
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing chromium (apt-get)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >"$tmp/apt.log" 2>&1 ||
      { cat "$tmp/apt.log"; give_up "apt-get install chromium failed"; }
  else
    give_up "/usr/bin/chromium is missing (apt-get install chromium, as root)"
  fi
fi
if [ ! -f tests/web/node_modules/playwright-core/package.json ]; then
  echo "installing playwright-core (npm)"
  (cd tests/web && { npm ci --no-audit --no-fund --loglevel=error || npm install --no-audit --no-fund --loglevel=error; }) ||
    give_up "npm could not install playwright-core"
fi

. tests/daemon.sh
# A second daemon with --token-file: the playground must ask for its token (playground.test.mjs).
token=web-test-token-0123456789abcdef
mkdir -p "$tmp/token-daemon"
printf '%s\n' "$token" >"$tmp/token"
warpd_start "$BUILD/warpd" "$tmp/token-daemon" --backend emu --token-file "$tmp/token" ||
  { cat "$tmp/token-daemon/err"; give_up "the daemon with a token did not start"; }
token_pid=$pid token_port=$port
warpd_start "$BUILD/warpd" "$tmp" --backend emu || { cat "$tmp/err"; give_up "the daemon did not start"; }

mkdir -p tests/web/out
WARPD_URL="http://127.0.0.1:$port" WARPD_TOKEN_URL="http://127.0.0.1:$token_port" WARPD_TEST_TOKEN=$token WARPD_BIN="$ROOT/$BUILD/warpd" \
  WEB_OUT="$ROOT/tests/web/out" \
  timeout 300 node --test --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tmp/tap" tests/web/playground.test.mjs
rc=$?

kill -TERM "$pid" "$token_pid" 2>/dev/null; wait "$pid" "$token_pid" 2>/dev/null; pid= token_pid=

pass=$(sed -nE 's/^# pass ([0-9]+)/\1/p' "$tmp/tap" | tail -n 1)
failed=$(sed -nE 's/^# fail ([0-9]+)/\1/p' "$tmp/tap" | tail -n 1)
cancelled=$(sed -nE 's/^# cancelled ([0-9]+)/\1/p' "$tmp/tap" | tail -n 1)
skipped=$(sed -nE 's/^# skipped ([0-9]+)/\1/p' "$tmp/tap" | tail -n 1)
pass=${pass:-0}; failed=$(( ${failed:-0} + ${cancelled:-0} ))
if [ -z "$(sed -nE 's/^# (pass) .*/\1/p' "$tmp/tap")" ] || { [ $rc -ne 0 ] && [ "$failed" -eq 0 ]; }; then
  echo "!! node --test exited $rc without a summary"; failed=$((failed + 1))
fi
[ "${skipped:-0}" -gt 0 ] && echo "(${skipped} skipped: presets whose family the server does not have yet)"
echo "screenshots: tests/web/out/"
echo "web: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
