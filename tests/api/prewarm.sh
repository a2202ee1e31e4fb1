#!/usr/bin/env bash
# Prewarm tests against the sanitized daemon (prewarm.c):
#  1. warpd --prewarm FILE --exit fills an empty cache directory (one file per spec) and exits 0; a
#     set with a bad spec exits 1 (the good ones still compiled); an unreadable file exits 2. Its
#     tasks (--log-level debug) cover every spec once, a float device_scan alone, warp primitives of one
#     template together; an i64 and a u64 sum share one kernel (one compile, one file); --arch picks
#     the target; the user's GLIBC_TUNABLES stand.
#  2. a daemon started on that directory finds every spec on disk ("cache":"disk").
#  3. --prewarm in the background: GET /v1/ready answers 503 "warming" with its progress, then 200.
#  4. prewarm/default.json is what prewarm/make_default.py makes from GET /v1/families.
# Prints one closing line "prewarm: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin="$BUILD/asan/warpd"
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); }
no() { fail=$((fail+1)); echo "FAIL: $*"; }
check() { if eval "$1"; then ok; else no "$2"; fi; }
sanitizer_clean() { ! grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$1"; }
. tests/daemon.sh

small='{"specs": [
  {"family": "shfl_xor", "type": "i32", "width": 32},
  {"family": "vote_any", "type": "f16", "width": 32},
  {"family": "warp_allreduce", "type": "u64", "op": "max"},
  {"family": "device_reduce", "type": "i32", "op": "sum"}]}'
echo "$small" >"$tmp/small.json"
echo '{"specs": [{"family": "shfl", "type": "i32"}, {"family": "no_such_family"}]}' >"$tmp/bad.json"

# 1. --exit
"$bin" --backend emu --cache-dir "$tmp/c1" --prewarm "$tmp/small.json" --exit >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 0 ]' "--prewarm --exit exited $rc: $(cat "$tmp/out" "$tmp/err")"
check 'grep -q "4 specs, 4 compiled, 0 already cached, 0 failed" "$tmp/out"' "summary: $(cat "$tmp/out")"
check '[ "$(find "$tmp/c1" -name "*.wpk" | wc -l)" -eq 4 ]' "expected 4 cache files, found $(find "$tmp/c1" -name '*.wpk' | wc -l)"
check 'sanitizer_clean "$tmp/err"' "sanitizer: $(cat "$tmp/err")"
"$bin" --backend emu --cache-dir "$tmp/c1" --prewarm "$tmp/small.json" --exit >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "0 compiled, 4 already cached" "$tmp/out"' "second run: $(cat "$tmp/out")"
"$bin" --backend emu --cache-dir "$tmp/c2" --prewarm "$tmp/bad.json" --exit >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 1 ] && grep -q "prewarm spec 1: unknown family" "$tmp/err"' "bad set exited $rc: $(cat "$tmp/err")"
check '[ "$(find "$tmp/c2" -name "*.wpk" | wc -l)" -eq 1 ]' "the good spec of a bad set is still compiled"
"$bin" --backend emu --cache-dir "$tmp/c2" --prewarm "$tmp/missing.json" --exit >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 2 ] && grep -q "cannot read" "$tmp/err"' "missing file exited $rc"
echo '{"specs": {"family": "shfl"}}' >"$tmp/notarray.json"
"$bin" --backend emu --cache-dir "$tmp/c2" --prewarm "$tmp/notarray.json" --exit >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 2 ] && grep -q "specs must be an array" "$tmp/err"' "specs not an array exited $rc"
printf '{"specs": []} {"specs": []}' >"$tmp/two.json" # two JSON texts: the second was ignored
"$bin" --backend emu --cache-dir "$tmp/c2" --prewarm "$tmp/two.json" --exit >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 2 ] && grep -q "is not valid JSON" "$tmp/err"' "bytes after the document exited $rc"
"$bin" --backend emu --exit >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 2 ]' "--exit without --prewarm exited $rc"
python3 - "$tmp/mix.json" <<'PY'
import json, sys
specs = [{"family": f, "type": t, "width": 32} for f in ["shfl", "shfl_up"] for t in ["i32", "u32", "f32", "f64", "i64"]]
specs += [{"family": "device_scan", "type": t, "op": "sum"} for t in ["i32", "f32"]]
specs += [{"family": "device_reduce", "type": t, "op": "max"} for t in ["i32", "u32"]]
specs += [{"family": "device_reduce", "type": t, "op": "sum"} for t in ["u64", "i64"]]  # one kernel: the same bits
json.dump({"specs": specs}, open(sys.argv[1], "w"))
PY
"$bin" --backend emu --arch sm_80 --log-level debug --cache-dir "$tmp/c3" --prewarm "$tmp/mix.json" --exit \
  --compile-threads 2 >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "16 specs, 15 compiled, 0 already cached, 0 failed, 1 sharing a kernel" "$tmp/out"' \
  "mixed set exited $rc: $(cat "$tmp/out" "$tmp/err")"
sed -n 's/.*prewarm: \([0-9]*\) \([a-z_]*\) spec(s) (estimated \([0-9]*\) ms).*/\1 \2 \3/p' "$tmp/err" >"$tmp/tasks"
check '[ "$(awk "{n += \$1} END {print n}" "$tmp/tasks")" -eq 16 ]' "tasks cover every spec once: $(cat "$tmp/tasks")"
check '[ "$(find "$tmp/c3" -name "*.wpk" | wc -l)" -eq 15 ]' "i64 and u64 sum share one cache file: $(find "$tmp/c3" -name '*.wpk' | wc -l) files"
check '! grep -q "^[2-9] device_scan" "$tmp/tasks"' "the float device_scan and the integer one compile apart: $(cat "$tmp/tasks")"
check '[ "$(grep -c " shfl" "$tmp/tasks")" -lt 5 ]' "warp primitives of one template share programs: $(cat "$tmp/tasks")"
check 'grep -q "sm_80" "$tmp/c3"/*/*.wpk' "--arch sm_80 is the target of --exit"
check 'sanitizer_clean "$tmp/err"' "sanitizer: $(cat "$tmp/err")"
GLIBC_TUNABLES=glibc.malloc.hugetlb=0 "$bin" --backend emu --cache-dir "$tmp/c4" --prewarm "$tmp/small.json" --exit \
  >"$tmp/out" 2>"$tmp/err"; rc=$?
check '[ $rc -eq 0 ] && grep -q "4 specs, 4 compiled" "$tmp/out"' "with the user's GLIBC_TUNABLES: exit $rc: $(cat "$tmp/out" "$tmp/err")"

# 2. a later daemon finds the prewarmed kernels on disk
mkdir -p "$tmp/d2"; cp -r "$tmp/c1" "$tmp/d2/cache"
if warpd_start "$bin" "$tmp/d2" --backend emu; then
  base="http://127.0.0.1:$port"
  python3 -c 'import json,sys; [print(json.dumps(s)) for s in json.load(open(sys.argv[1]))["specs"]]' "$tmp/small.json" |
  while read -r spec; do
    got=$(curl -s "$base/v1/compile" -H 'Content-Type: application/json' -d "$spec")
    if [[ "$got" == *'"cache":"disk"'* ]]; then echo pass; else echo "FAIL: $spec answered ${got:0:300}"; fi
  done >"$tmp/r"
  pass=$((pass + $(grep -c '^pass' "$tmp/r"))); fail=$((fail + $(grep -c '^FAIL' "$tmp/r"))); grep '^FAIL' "$tmp/r"
  check '[ "$(grep -c "^pass" "$tmp/r")" -eq 4 ]' "all four specs from disk"
  # 4. the default set is what the generator makes from this daemon's families
  curl -s "$base/v1/families" | python3 prewarm/make_default.py >"$tmp/default.json"
  check 'diff -q "$tmp/default.json" prewarm/default.json >/dev/null' "prewarm/default.json is stale: rerun prewarm/make_default.py"
  kill -TERM $pid; wait $pid; rc=$?; pid=
  check '[ $rc -eq 0 ] && sanitizer_clean "$tmp/d2/err"' "daemon exit $rc: $(cat "$tmp/d2/err")"
else
  no "daemon on the prewarmed directory did not start: $(cat "$tmp/d2/err")"
fi

# 3. warming, then ready: eight cold device_scan kernels take a second or more here
python3 - "$tmp/slow.json" <<'PY'
import json, sys
specs = [{"family": "device_scan", "type": t, "op": op} for t in ["i32", "u32", "i64", "u64", "f32", "f64", "f16", "bf16"]
         for op in ["max"]]
json.dump({"specs": specs}, open(sys.argv[1], "w"))
PY
mkdir -p "$tmp/d3"
if warpd_start "$bin" "$tmp/d3" --backend emu --prewarm "$tmp/slow.json"; then
  base="http://127.0.0.1:$port"
  first=$(curl -s -w ' %{http_code}' "$base/v1/ready")
  check '[[ "$first" == *"\"status\":\"warming\""*"\"total\":8"*" 503" ]]' "first /v1/ready: $first"
  check '[ "$(curl -s -o /dev/null -w "%{http_code}" "$base/v1/health")" = 200 ]' "/v1/health is 200 while warming"
  hdrs=$(curl -s -D - -o /dev/null "$base/v1/ready")
  check '[[ "$hdrs" != *" 503"* || "$hdrs" == *"Retry-After: 1"* ]]' "a warming 503 says Retry-After: $hdrs"
  last=
  for _ in $(seq 1200); do
    last=$(curl -s -w ' %{http_code}' "$base/v1/ready")
    [[ "$last" == *" 200" ]] && break
    sleep 0.1
  done
  check '[[ "$last" == *"\"status\":\"ready\""*"\"total\":8,\"done\":8,\"failed\":0"*" 200" ]]' "last /v1/ready: $last"
  got=$(curl -s "$base/v1/compile" -H 'Content-Type: application/json' -d '{"family":"device_scan","type":"bf16","op":"max"}')
  check '[[ "$got" == *"\"cache\":\"memory\""* ]]' "a prewarmed kernel is in memory: ${got:0:200}"
  kill -TERM $pid; wait $pid; rc=$?; pid=
  check '[ $rc -eq 0 ] && sanitizer_clean "$tmp/d3/err"' "daemon exit $rc: $(cat "$tmp/d3/err")"
else
  no "daemon with --prewarm did not start: $(cat "$tmp/d3/err")"
fi
# stopped while warming: exits cleanly, without waiting for the whole set
mkdir -p "$tmp/d4"
if warpd_start "$bin" "$tmp/d4" --backend emu --prewarm prewarm/default.json; then
  kill -TERM $pid; wait $pid; rc=$?; pid=
  check '[ $rc -eq 0 ] && sanitizer_clean "$tmp/d4/err"' "stop while warming: exit $rc: $(cat "$tmp/d4/err")"
  check '[ "$(find "$tmp/d4/cache" -name "*.wpk" | wc -l)" -lt 183 ]' "the stop skipped the rest of the set"
else
  no "daemon with the default prewarm did not start"
fi
echo "prewarm: $pass passed, $fail failed"
[ $fail -eq 0 ]
