#!/usr/bin/env bash
# observe.sh — /metrics, request ids, the access log and --log-level against live sanitized daemons
# (tests/api/obs_check.c does the checking):
#   1. --access-log FILE --log-level debug: the metrics text, ids, the log's lines and escaping; SIGHUP
#      after the file was moved (logrotate) opens a new one;
#   2. --access-log - --log-level error: the line on stdout; no info message ("stopping") on stderr;
#   3. bad flags: an unknown --log-level, an access log that cannot be opened.
# Each daemon is stopped with SIGTERM and must exit cleanly with no sanitizer report.
# Prints one closing line "observe: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
pid=
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); }
bad() { echo "!! $1"; fail=$((fail+1)); }
. tests/daemon.sh
stop_daemon() {
  kill -TERM $pid; local rc=0; wait $pid || rc=$?
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$tmp/err"; then
    bad "daemon exited $rc or reported a sanitizer error:"; cat "$tmp/err"
  else ok; fi
}
check="$BUILD/asan/tests/api/obs_check"

if warpd_start "$BUILD/asan/warpd" "$tmp" --backend emu --access-log "$tmp/access.log" --log-level debug; then
  "$check" "http://127.0.0.1:$port" "$tmp/access.log" "$tmp/err" >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" obs_check
  # answers of every size, one after another on kept-alive connections (a call keeps its answer's buffer)
  python3 tests/api/keepalive.py "http://127.0.0.1:$port" >"$tmp/ka" 2>&1; cat "$tmp/ka"; count "$tmp/ka" keepalive.py
  # logrotate: the file moved away, SIGHUP opens a new one; later lines go there
  mv "$tmp/access.log" "$tmp/access.log.1"; kill -HUP $pid
  for _ in $(seq 100); do [ -e "$tmp/access.log" ] && break; sleep 0.05; done
  curl -s -o /dev/null -H 'X-Request-Id: after-hup' "http://127.0.0.1:$port/v1/health"
  for _ in $(seq 100); do grep -q '"id":"after-hup"' "$tmp/access.log" 2>/dev/null && break; sleep 0.05; done
  if grep -q '"id":"after-hup"' "$tmp/access.log" 2>/dev/null && ! grep -q '"id":"after-hup"' "$tmp/access.log.1"
  then ok; else bad "SIGHUP did not reopen the access log"; fi
  # Server-Timing: every answer carries one; a job's names its stages, and they add up to no more than
  # the total; the answer's timing has the hand-off (0 when answered on the HTTP thread)
  for route in reduce warp health; do
    case $route in
      reduce) args=(-H 'Content-Type: application/json' -d '{"type":"f32","op":"sum","data":[1.5,2,3]}') ;;
      warp) args=(-H 'Content-Type: application/json' -d '{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32}}') ;;
      health) args=() ;;
    esac
    curl -s -D "$tmp/h" -o "$tmp/b" "${args[@]}" "http://127.0.0.1:$port/v1/$route"
    if python3 - "$tmp/h" "$tmp/b" "$route" <<'PY'; then ok; else bad "Server-Timing of /v1/$route: $(grep -i server-timing "$tmp/h")"; fi
import json, re, sys
head, body, route = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
line = [l for l in head.splitlines() if l.lower().startswith("server-timing:")]
assert len(line) == 1, "one Server-Timing header"
metrics = [m.strip() for m in line[0].split(":", 1)[1].split(",")]
dur = {}
for m in metrics:
    name, d = re.fullmatch(r"([a-z]+);dur=(\d+\.\d{3})", m).groups()
    dur[name] = float(d)
names = list(dur)
assert names[0] == "receive" and names[-1] == "total", names
if route != "health":
    for want in ("handoff", "parse", "key", "cache", "answer"): assert want in dur, (want, names)
    t = json.loads(body)["timing"]
    assert t["handoff_us"] >= 0 and t["receive_us"] >= 0 and t["parse_us"] >= 0
    parts = sum(v for k, v in dur.items() if k not in ("total", "emulate"))
    assert parts <= dur["total"] + 0.001 * len(dur), (parts, dur)
PY
  done
  stop_daemon
else bad "daemon did not start"; cat "$tmp/err"; fi

if warpd_start "$BUILD/asan/warpd" "$tmp" --backend emu --access-log - --log-level error; then
  "$check" --stdout "http://127.0.0.1:$port" "$tmp/out" >"$tmp/r" 2>&1; cat "$tmp/r"; count "$tmp/r" "obs_check --stdout"
  stop_daemon
  if grep -q 'stopping' "$tmp/err"; then bad "--log-level error printed an info message"; else ok; fi
else bad "daemon did not start"; cat "$tmp/err"; fi

rc=0; "$BUILD/asan/warpd" --log-level loud >/dev/null 2>"$tmp/err" || rc=$?
if [ $rc -eq 2 ] && grep -q -- '--log-level must be' "$tmp/err"; then ok; else bad "--log-level loud: exit $rc"; fi
rc=0; "$BUILD/asan/warpd" --backend emu --listen 127.0.0.1:0 --cache-dir "$tmp/cache" \
  --access-log "$tmp/no/such/dir/a.log" >/dev/null 2>"$tmp/err" || rc=$?
if [ $rc -eq 1 ] && grep -q "no/such/dir/a.log" "$tmp/err"; then ok; else bad "unopenable access log: exit $rc"; cat "$tmp/err"; fi

echo "observe: $pass passed, $fail failed"
[ $fail -eq 0 ]
