#!/usr/bin/env bash
# Lint tests: the ecosystem's own linters on what warpd publishes, so the next route, metric or widget is
# held to them as well (the ecosystem's own linters):
#   openapi  clients/web/openapi.json (what GET /v1/openapi.json serves) through @apidevtools/swagger-parser,
#            validate and dereference (openapi.mjs), then `redocly lint` with recommended-strict
#            (redocly.yaml): a warning fails as an error does;
#   metrics  a running daemon's GET /metrics, after requests that fill its histograms, through Debian's
#            `promtool check metrics`: the exposition format and Prometheus' naming conventions (base
#            units such as seconds and bytes, counters ending in _total, ...);
#   a11y     axe-core's WCAG 2 A and AA rules on the playground in headless Chromium, driven by
#            playwright-core, in each state the page shows (axe.mjs).
# Builds nothing: expects $BUILD/warpd. node, npm, chromium and promtool come from `make deps`
# (.ci/deps.sh); the npm packages (package-lock.json) are installed here with npm ci when missing or older
# than the lock file. Starts two daemons (--backend emu; one with --token-file, for the token dialog) on
# free loopback ports and ends with "lint: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
LINT=tests/lint
DOC=clients/web/openapi.json
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export CHROMIUM REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_NOTIFICATIONS=true
started=$SECONDS
tmp=$(mktemp -d)
pid=
token_pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$token_pid" ] && kill "$token_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
give_up() { echo "!! $*"; echo "lint: 0 passed, 1 failed"; exit 1; }
pass=0
fail=0
. tests/daemon.sh # warpd_start, count

# check NAME COMMAND...: a check that is one pass or one fail (its exit status), its output shown.
check() {
  local name=$1
  shift
  echo "== $name"
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}
# suite NAME COMMAND...: a program that ends with its own "N passed, N failed", added to ours.
suite() {
  local name=$1 out="$tmp/$1.out" rc
  shift
  echo "== $name"
  "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
  local before=$fail
  count "$out" "$name"
  if [ $rc -ne 0 ] && [ $fail -eq $before ]; then echo "!! $name exited $rc"; fail=$((fail + 1)); fi
}

[ -x "$BUILD/warpd" ] || give_up "$BUILD/warpd is missing (run make first)"
command -v node >/dev/null && command -v npm >/dev/null || give_up "node and npm are not installed (make deps)"
if [ ! -f $LINT/node_modules/.package-lock.json ] || [ $LINT/package-lock.json -nt $LINT/node_modules/.package-lock.json ]; then
  echo "installing swagger-parser, redocly, axe-core, playwright-core (npm ci)"
  (cd $LINT && npm ci --no-audit --no-fund --loglevel=error) || give_up "npm ci in $LINT failed"
fi

# The daemons: one plain, one with --token-file (the playground's token dialog is a state axe checks).
token=lint-test-token-0123456789abcdef
mkdir -p "$tmp/token-daemon"
printf '%s\n' "$token" >"$tmp/token"
warpd_start "$BUILD/warpd" "$tmp/token-daemon" --backend emu --token-file "$tmp/token" ||
  { cat "$tmp/token-daemon/err"; give_up "the daemon with a token did not start"; }
token_pid=$pid token_url=$url
warpd_start "$BUILD/warpd" "$tmp" --backend emu || { cat "$tmp/err"; give_up "the daemon did not start"; }

# ---- openapi
suite swagger-parser timeout 60 node $LINT/openapi.mjs "$DOC"
check "redocly lint $DOC" timeout 60 $LINT/node_modules/.bin/redocly lint --config $LINT/redocly.yaml --format=stylish "$DOC"

# ---- metrics: every histogram, counter and gauge with samples in it first (a warp run, a data job, a
# compile, a deferred request, a 404), then what the daemon exposes, as Prometheus would scrape it.
post() { curl -sS --max-time 60 -o /dev/null -w '%{http_code} ' -H 'Content-Type: application/json' -d "$2" "$url$1"; }
{
  post /v1/warp '{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1}}'
  post /v1/reduce '{"type":"f32","op":"max","data":[3,1,4,1,5,9,2,6]}'
  post /v1/compile '{"family":"warp_allreduce","type":"f32","width":16,"op":"max"}'
  post /v1/jobs '{"kind":"warp","request":{"family":"shfl","args":{"src_lane":3}}}'
  curl -sS --max-time 30 -o /dev/null -w '%{http_code}' "$url/v1/no-such-route"
} >"$tmp/statuses"
echo "before /metrics: warp, reduce, compile, job, unknown route answered $(cat "$tmp/statuses")"
promtool_check() {
  command -v promtool >/dev/null || { echo "promtool is not installed (make deps: Debian's prometheus)"; return 1; }
  curl -sS --max-time 30 -f "$url/metrics" >"$tmp/metrics" || { echo "GET /metrics failed"; return 1; }
  echo "$(grep -c '^# TYPE' "$tmp/metrics") metrics, $(grep -vc '^#' "$tmp/metrics") samples"
  promtool check metrics <"$tmp/metrics"
}
check "promtool check metrics (GET /metrics)" promtool_check

# ---- a11y
if [ -x "$CHROMIUM" ]; then
  WARPD_URL=$url WARPD_TOKEN_URL=$token_url suite axe timeout 300 node $LINT/axe.mjs
else
  echo "!! $CHROMIUM is missing (make deps: Debian's chromium)"; fail=$((fail + 1))
fi

kill -TERM "$pid" "$token_pid" 2>/dev/null
wait "$pid" "$token_pid" 2>/dev/null
pid= token_pid=
echo "lint took $((SECONDS - started)) s"
echo "lint: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
