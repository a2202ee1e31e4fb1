#!/usr/bin/env bash
# Access API tests (server/http/access.c) against live sanitized daemons, one per configuration:
#   1. the defaults: tests/api/access/defaults.json (Host, Origin, Content-Type, security headers);
#   2. --token-file, --allow-host, --allow-origin: tests/api/access/token.json;
#   3. WARPD_TOKEN and --metrics-public: tests/api/access/metrics_public.json;
#   4. start-up: a non-loopback --listen without a token is refused with a clear message; --insecure,
#      or a token, starts it; a bad token file is refused.
# Each daemon is stopped with SIGTERM and must exit cleanly with no sanitizer report.
# Prints one closing line "access: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
BIN="$BUILD/asan/warpd"
TOKEN=api-test-token-4f1c9e2b7a3d5e60 # the token tests/api/access/token.json sends
ENV_TOKEN=env-token-0123456789abcdef  # the one metrics_public.json sends
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { echo "FAIL access: $*"; fail=$((fail+1)); }
. tests/daemon.sh
stop_daemon() {
  kill -TERM $pid; local rc=0; wait $pid || rc=$?; pid=
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$tmp/err"; then
    bad "daemon exited $rc or reported a sanitizer error:"; cat "$tmp/err"
  else ok; fi
}
run_cases() { # config name, flags... ; runs tests/api/access/<name>.json
  local name=$1; shift
  if warpd_start "$BIN" "$tmp" --backend emu "$@"; then
    "$BUILD/asan/tests/api/api_runner" "http://127.0.0.1:$port" "tests/api/access/$name.json" >"$tmp/r" 2>&1
    cat "$tmp/r"; count "$tmp/r" "$name"
    stop_daemon
  else
    bad "$name: the daemon did not start"; cat "$tmp/err"; pid=
  fi
}

run_cases defaults
printf '%s\n' "$TOKEN" >"$tmp/token"
chmod 644 "$tmp/token"
run_cases token --token-file "$tmp/token" --allow-host warpd.test --allow-origin https://app.example
grep -q "warning: the token file .* can be read by other users: chmod 600 it" "$tmp/err" && ok ||
  bad "no warning about a token file others can read: $(head -c 300 "$tmp/err")"
chmod 600 "$tmp/token"
WARPD_TOKEN=$ENV_TOKEN run_cases metrics_public --metrics-public

# 4. Start-up. A daemon that must refuse exits 2 at once, before it listens, saying what to do.
refuses() { # what, expected text, flags...
  local what=$1 want=$2; shift 2
  local rc=0
  timeout 60 "$BIN" --backend emu --cache-dir "$tmp/cache" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" "$tmp/err" && ! grep -q listening "$tmp/out"; then ok
  else bad "$what: exit $rc, stderr: $(head -c 400 "$tmp/err")"; fi
}
refuses "0.0.0.0 without a token" "refusing to listen on 0.0.0.0 without a token" --listen 0.0.0.0:0
refuses "the message says what to do" "--token-file FILE (or set WARPD_TOKEN), or --insecure" --listen 0.0.0.0:0
WARPD_TOKEN= refuses "an empty WARPD_TOKEN is no token" "without a token" --listen 0.0.0.0:0
refuses "a short token file" "the token must be" --listen 0.0.0.0:0 --token-file <(echo short)
refuses "a missing token file" "cannot read the token file" --token-file "$tmp/nonexistent"
refuses "a bad --allow-origin" "--allow-origin needs an origin" --allow-origin '*'

starts() { # what, flags... : listens on 0.0.0.0, answers on 127.0.0.1, stops cleanly
  local what=$1; shift
  : >"$tmp/out" # emptied here, not in the child: the last daemon's port must not be read
  "$BIN" --backend emu --cache-dir "$tmp/cache" "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  local p=
  for _ in $(seq 1200); do # up to 60 s: a sanitized start on a loaded machine
    p=$(grep -oE 'listening on http://0\.0\.0\.0:[0-9]+' "$tmp/out" | head -n 1 | sed 's/.*://')
    [ -n "$p" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if [ -z "$p" ]; then bad "$what: did not start: $(head -c 400 "$tmp/err")"; kill -9 $pid 2>/dev/null; pid=; return; fi
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/v1/health")
  [ "$code" = 200 ] && ok || bad "$what: /v1/health answered $code"
  stop_daemon
}
starts "0.0.0.0 with --insecure" --listen 0.0.0.0:0 --insecure
starts "0.0.0.0 with a token file" --listen 0.0.0.0:0 --token-file "$tmp/token"
WARPD_TOKEN=$ENV_TOKEN starts "0.0.0.0 with WARPD_TOKEN" --listen 0.0.0.0:0

echo "access: $pass passed, $fail failed"
[ $fail -eq 0 ]
