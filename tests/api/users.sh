#!/usr/bin/env bash
# Many users on one daemon (--tokens FILE: server/http/users.c, the owners and quotas in engine/, the
# job queue taken in turn by user) against the sanitized daemon, on the emulator and through the mock
# CUDA library (tests/mockcuda): tests/api/users.py drives it as users reader (read), runner (run),
# rival (run), admin (admin) and limited (read, rate=2) would. Then on the emulator: the access log
# names the user and never a token; SIGHUP reads the file again (a removed user's token fails, an added
# one works, their buffers stay), and a file that no longer parses is refused with its line and the old
# table stays; start-up refuses a bad file with its line number, one others can write, and --tokens
# with --token-file; the single token (--token-file, WARPD_TOKEN) and no token at all are one admin
# named "default". Every daemon stops cleanly on SIGTERM with no sanitizer report. Objects are
# /dev/shm/warpd-ustest-<pid>-*. Prints "users: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin=$BUILD/asan/warpd
tmp=$(mktemp -d)
pid=
obj=warpd-ustest-$$
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp" /dev/shm/$obj-*' EXIT
trap 'exit 1' TERM INT
pass=0; fail=0
. tests/daemon.sh
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ok() { pass=$((pass+1)); echo "ok   $1"; }
no() { fail=$((fail+1)); echo "FAIL $1"; }
check() { if eval "$2"; then ok "$1"; else no "$1"; fi; } # name, shell condition
PY=$(python3 -c 'import sys; print(sys.executable)')

hash_of() { printf %s "$1-token-0123456789abcdef" | sha256sum | cut -d' ' -f1; }
line() { echo "$1 $2 $(hash_of "$1")${3:+ $3}"; } # name role [key=value ...]
{
  echo "# the lab's users"
  line reader read
  line runner run "buffer_bytes=64k shm_bytes=64k channels=1"
  line rival run "jobs=1   # one job at a time"
  line admin admin
  line limited read rate=2
} >"$tmp/tokens"
chmod 600 "$tmp/tokens"

stop() { # label: SIGTERM, a clean exit, nothing from the sanitizers
  kill -TERM "$pid"; local rc=0; wait "$pid" || rc=$?; pid=
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|ERROR: |^mockcuda: ' "$tmp/err"; then
    no "$1: SIGTERM exit $rc, or a sanitizer report:"; cat "$tmp/err"
  else ok "$1: SIGTERM exits 0, no sanitizer report"; fi
}
users_py() { # mode
  "$PY" tests/api/users.py "$1" "$url" "$obj" >"$tmp/log" 2>&1
  sed '$d' "$tmp/log"; count "$tmp/log" "users.py $1"
}

echo "-- emu"
if warpd_start "$bin" "$tmp" --backend emu --no-disk-cache --job-workers 1 --tokens "$tmp/tokens" \
  --access-log "$tmp/access.log"; then
  users_py main
  check "the access log names the user" "grep -q '\"user\":\"runner\"' '$tmp/access.log'"
  check "the access log names no token" "! grep -q 'token-0123456789abcdef' '$tmp/access.log'"
  # SIGHUP: rival goes, newbie comes
  grep -v '^rival ' "$tmp/tokens" >"$tmp/tokens.new"; line newbie run >>"$tmp/tokens.new"
  chmod 600 "$tmp/tokens.new"; mv "$tmp/tokens.new" "$tmp/tokens"
  kill -HUP "$pid"; sleep 0.5
  users_py reload
  # a file that does not parse: refused with its line, the table stays
  cp "$tmp/tokens" "$tmp/tokens.good"; echo "bob writer $(hash_of bob)" >>"$tmp/tokens"
  kill -HUP "$pid"; sleep 0.5
  check "a bad file on SIGHUP is refused with its line" "grep -q 'line 7: unknown role' '$tmp/err'"
  users_py kept
  stop "emu"
else no "emu: the daemon did not start"; cat "$tmp/err"; pid=; fi
cp "$tmp/tokens.good" "$tmp/tokens" 2>/dev/null
{ grep -v '^newbie ' "$tmp/tokens"; line rival run "jobs=1"; } >"$tmp/tokens.m"; chmod 600 "$tmp/tokens.m"

echo "-- mock cuda"
if [ -f "$BUILD/mockcuda/libcuda.so.1" ] &&
  LD_LIBRARY_PATH="$BUILD/mockcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    warpd_start "$bin" "$tmp" --backend cuda --no-disk-cache --job-workers 1 --tokens "$tmp/tokens.m"; then
  users_py main
  stop "mock cuda"
else no "mock cuda: the daemon did not start (make $BUILD/mockcuda/libcuda.so.1)"; cat "$tmp/err"; pid=; fi

echo "-- start-up"
refuses() { # what, expected text, flags...
  local what=$1 want=$2; shift 2
  local rc=0
  timeout 60 "$bin" --backend emu --cache-dir "$tmp/cache" --listen 127.0.0.1:0 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" "$tmp/err" && ! grep -q listening "$tmp/out"; then ok "$what"
  else no "$what: exit $rc, stderr: $(head -c 400 "$tmp/err")"; fi
}
bad() { printf '%s\n' "$@" >"$tmp/bad"; chmod 600 "$tmp/bad"; }
bad "# x" "$(line alice run)" "alice read $(hash_of other)"
refuses "a duplicate name" "line 3: the name alice is given twice" --tokens "$tmp/bad"
bad "$(line alice run)" "$(line bob run)" "carol run $(hash_of alice)"
refuses "a duplicate hash" "line 3: the hash of carol is alice's too" --tokens "$tmp/bad"
bad "alice run 12ab"
refuses "a short hash" "line 1: the hash must be 64 hex digits" --tokens "$tmp/bad"
bad "" "$(line alice root)"
refuses "an unknown role" "line 2: unknown role" --tokens "$tmp/bad"
bad "$(line alice run gpus=1)"
refuses "an unknown key" "line 1: unknown key \"gpus\"" --tokens "$tmp/bad"
bad "Alice run $(hash_of a)"
refuses "a bad name" "line 1: the name \"Alice\"" --tokens "$tmp/bad"
bad "alice run"
refuses "a malformed line" "line 1: expected NAME ROLE SHA256" --tokens "$tmp/bad"
bad "$(line alice run)"; chmod 666 "$tmp/bad"
refuses "a file others can write" "can be written by other users" --tokens "$tmp/bad"
chmod 600 "$tmp/bad"; printf '%s\n' "single-token-0123456789" >"$tmp/single"; chmod 600 "$tmp/single"
refuses "--tokens with --token-file" "not both" --tokens "$tmp/bad" --token-file "$tmp/single"
refuses "a tokens file that is not there" "cannot read the tokens file" --tokens "$tmp/nonexistent"

whoami() { curl -s ${1:+-H "Authorization: Bearer $1"} "$url/v1/whoami"; }
echo "-- one token, and none"
if warpd_start "$bin" "$tmp" --backend emu --no-disk-cache --token-file "$tmp/single"; then
  check "--token-file: one admin named default" \
    "whoami single-token-0123456789 | grep -q '\"name\":\"default\",\"role\":\"admin\"'"
  check "--token-file: another token is 401" "whoami other-token-0123456789 | grep -q unauthorized"
  stop "--token-file"
else no "--token-file: the daemon did not start"; cat "$tmp/err"; pid=; fi
if WARPD_TOKEN=env-token-0123456789abc warpd_start "$bin" "$tmp" --backend emu --no-disk-cache; then
  check "WARPD_TOKEN: one admin named default" \
    "whoami env-token-0123456789abc | grep -q '\"name\":\"default\",\"role\":\"admin\"'"
  stop "WARPD_TOKEN"
else no "WARPD_TOKEN: the daemon did not start"; cat "$tmp/err"; pid=; fi
if warpd_start "$bin" "$tmp" --backend emu --no-disk-cache; then
  check "no token on loopback: everyone the admin default" "whoami | grep -q '\"name\":\"default\",\"role\":\"admin\"'"
  check "no token: a buffer is made as before, owner default" \
    "curl -s -X PUT -H 'Content-Type: application/json' -d '{\"type\":\"f32\",\"data\":[1]}' $url/v1/buffers | grep -q '\"owner\":\"default\"'"
  stop "no token"
else no "no token: the daemon did not start"; cat "$tmp/err"; pid=; fi

echo "users: $pass passed, $fail failed"
[ $fail -eq 0 ]
