#!/usr/bin/env bash
# Shared-memory regions (the data plane) against the sanitized daemon on the emulator: POST/GET/DELETE /v1/shm
# (201 with its fields and Location, the listing, one region, removal); /v1/reduce and /v1/scan over a
# region, bit for bit what the same bytes give as data_b64, for every type (device_reduce sum and max,
# device_scan inclusive and exclusive, block_reduce's per-group array, with count and offset); a scan's
# and a per-group result written into a region ("output":{"shm":...}), read back from the object; PUT
# /v1/buffers from a region, read back; every refusal with its status, code and field (names, ranges,
# types, quota with --shm-max, a prefix of --shm-prefix, truncation under a live registration: 409 and
# the daemon lives); the daemon's own permissions (a read-only object: read_only, 403 on output into it;
# one it may not open: 403 shm_denied; as nobody through setpriv when run as root); inputs over 64 KiB
# (copied to the device) against the same bytes as a raw body; a Unix socket (local: regions work); a
# peer on a documentation address inside a network namespace of the test's own (403 shm_remote, and
# --shm-remote lets it in), where ip netns works; --shm off (403 shm_disabled everywhere); --token-file (401 without the token); an
# async job over a region. No error message names /dev/shm or a name the request did not send. A region
# deleted while a job holds it (pending) is left to tests/unit/test_regions.c. Each daemon must stop
# cleanly with no sanitizer report.
# Objects are /dev/shm/warpd-test-<pid>-*, removed at exit. Prints "shm: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin=$BUILD/asan/warpd
tmp=$(mktemp -d)
pid=
obj=warpd-test-$$ # every object this suite makes: /dev/shm/$obj-*
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp" /dev/shm/$obj-*; ip netns del warpd-shm-$$ 2>/dev/null' EXIT
trap 'exit 1' TERM INT # the clean-up above runs on a timeout's SIGTERM too
pass=0; fail=0
. tests/daemon.sh
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

ok() { pass=$((pass+1)); echo "ok   $1"; }
no() { fail=$((fail+1)); echo "FAIL $1"; }
check() { if eval "$2"; then ok "$1"; else no "$1"; [ -f "$tmp/body" ] && echo "     $(head -c 400 "$tmp/body")"; fi; }

start() { # label, daemon flags...
  echo "-- $1"; shift
  warpd_start "$bin" "$tmp" --backend emu --no-disk-cache "$@" && return 0
  no "daemon did not start: $*"; cat "$tmp/err"; pid=; return 1
}
stop() { # label [its stderr file]: SIGTERM, a clean exit, nothing from the sanitizers
  local err=${2:-$tmp/err}
  kill -TERM "$pid"; local rc=0; wait "$pid" || rc=$?; pid=
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|ERROR: ' "$err"; then
    no "$1: SIGTERM exit $rc, or a sanitizer report:"; cat "$err"
  else ok "$1: SIGTERM exits 0, no sanitizer report"; fi
}

# The helper: objects, base64, JSON fields and comparisons.
cat >"$tmp/h.py" <<'EOF'
import base64, json, random, re, struct, sys
ESIZE = {"f32": 4, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8, "f16": 2, "bf16": 2}
def values(t, n, rng):
    if t in ("f32", "f64", "f16"):
        return struct.pack("<%d%s" % (n, {"f32": "f", "f64": "d", "f16": "e"}[t]), *[rng.uniform(-100, 100) for _ in range(n)])
    if t == "bf16": # the top half of an f32
        return b"".join(struct.pack("<f", rng.uniform(-100, 100))[2:] for _ in range(n))
    fmt = {"i32": "i", "u32": "I", "i64": "q", "u64": "Q"}[t]
    lo, hi = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1)}[t]
    return struct.pack("<%d%s" % (n, fmt), *[rng.randint(lo, hi) for _ in range(n)])
def field(doc, path):
    for k in path.split(".") if path else []:
        doc = doc[int(k)] if isinstance(doc, list) else doc.get(k) if isinstance(doc, dict) else None
    return doc
cmd, a = sys.argv[1], sys.argv[2:]
if cmd == "mkobj":    # path type n seed: n random values
    open(a[0], "wb").write(values(a[1], int(a[2]), random.Random(int(a[3]))))
elif cmd == "zeros":  # path bytes
    open(a[0], "wb").write(bytes(int(a[1])))
elif cmd == "b64":    # path offset bytes: base64 of those bytes of a file
    f = open(a[0], "rb"); f.seek(int(a[1])); print(base64.b64encode(f.read(int(a[2]))).decode())
elif cmd == "get":    # file path: a field as JSON ("" when absent); a string bare
    v = field(json.load(open(a[0])), a[1])
    print("" if v is None else v if isinstance(v, str) else json.dumps(v))
elif cmd == "fields": # file keys...: each field on its own line, as get prints it
    d = json.load(open(a[0]))
    for k in a[1:]:
        v = field(d, k)
        print("" if v is None else v.replace("\n", " ") if isinstance(v, str) else json.dumps(v))
elif cmd == "refusal": # file request-text prefix: code, field, "1" when there is a message, what it leaks
    d = json.load(open(a[0]))
    e = d.get("error") if isinstance(d.get("error"), dict) else {}
    msg = json.dumps(d)
    leaks = ["/dev/shm"] if "/dev/shm" in msg else []
    leaks += [m for m in re.findall(r"/?warpd[A-Za-z0-9._-]*", msg)
              if m not in a[1] and m.lstrip("/") != a[2].lstrip("/") and not m.endswith("...")]
    print(e.get("code", "")); print(e.get("field", "")); print(1 if e.get("message") else 0); print(" ".join(leaks))
elif cmd == "written": # answer.json b64-answer.json object offset esize out-id: "" when the result is in the object
    d1, d2 = json.load(open(a[0])), json.load(open(a[1]))
    o = (d1.get("output") or {}).get("shm") or {}
    off, e = int(a[3]), int(a[4])
    f = open(a[2], "rb"); f.seek(off); got = base64.b64encode(f.read(o.get("count", 0) * e)).decode()
    bad = []
    if o.get("id") != a[5] or o.get("offset") != off: bad.append("output.shm %s" % json.dumps(o))
    if o.get("count") != d1.get("out_count") or o.get("bytes") != o.get("count", 0) * e: bad.append("count/bytes %s" % json.dumps(o))
    if "data" in d1 or "data_b64" in d1: bad.append("the answer also holds the data")
    if not d2.get("data_b64") or got != d2.get("data_b64"): bad.append("the object's bytes differ from the b64 answer")
    print("; ".join(bad))
elif cmd == "same":   # file1 file2 keys...: those fields equal or absent from both (the first present)
    d1, d2 = json.load(open(a[0])), json.load(open(a[1]))
    bad = [k for i, k in enumerate(a[2:]) if (i == 0 and k not in d1) or d1.get(k) != d2.get(k)]
    print(" ".join("%s: %s vs %s" % (k, json.dumps(d1.get(k))[:80], json.dumps(d2.get(k))[:80]) for k in bad))
elif cmd == "esize":
    print(ESIZE[a[0]])
EOF
PY=$(python3 -c 'import sys; print(sys.executable)') # once: a version manager's shim costs seconds a call
py() { "$PY" -S -E "$tmp/h.py" "$@"; }
# load [-f FILE] KEYS...: the fields of $tmp/body (or FILE) into J[KEY], in one helper call.
declare -A J
load() {
  local file=$tmp/body v i; [ "$1" = -f ] && { file=$2; shift 2; }
  local keys=("$@")
  mapfile -t v < <(py fields "$file" "$@")
  J=(); for i in "${!keys[@]}"; do J[${keys[$i]}]=${v[$i]:-}; done
}

# req METHOD PATH [BODY]: the answer in $tmp/body, its headers in $tmp/hdr; prints the status.
# $via: extra curl arguments (a Unix socket, a token); $url: where the daemon is.
via=()
prefix=/warpd # the daemon's --shm-prefix: a message may name it
req() {
  local data=()
  [ $# -ge 3 ] && [ -n "$3" ] && data=(-H 'Content-Type: application/json' --data-binary "$3")
  curl -s "${via[@]}" -X "$1" -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' "${data[@]}" "$url$2"
}
get() { py get "$tmp/body" "$1"; }
# refused NAME METHOD PATH BODY STATUS CODE FIELD: the status, error code and field; the message names
# nothing the request did not.
refused() {
  local name=$1 want_status=$5 want_code=$6 want_field=$7 code v
  code=$(req "$2" "$3" "$4")
  mapfile -t v < <(py refusal "$tmp/body" "$4" "$prefix" 2>/dev/null)
  check "$name: $5 $6 field ${7:-(none)} (got $code ${v[0]:-} ${v[1]:-(none)})" \
    '[ "$code" = "$want_status" ] && [ "${v[0]:-}" = "$want_code" ] && [ "${v[1]:-}" = "$want_field" ] && [ "${v[2]:-}" = 1 ]'
  [ -z "${v[3]:-}" ] || no "$name: the message names what the request did not: ${v[3]}"
}
metric() { # the value of the exposition line that starts with $1 (0 when absent)
  curl -s "${via[@]}" "$url/metrics" | awk -v m="$1" 'index($0, m) == 1 { v = $NF } END { print (v == "" ? 0 : v) + 0 }'
}
register() { # NAME [extra JSON members]: the region's id, or "" (the answer in $tmp/body)
  local code; code=$(req POST /v1/shm "{\"name\":\"/$1\"${2:+,$2}}")
  if [ "$code" = 201 ]; then get id; else echo "register /$1: $code $(head -c 300 "$tmp/body")" >&2; fi
}

TYPES="f32 f64 i32 u32 i64 u64 f16 bf16"
N=1000
seed=1
for t in $TYPES; do py mkobj /dev/shm/$obj-$t $t $N $seed; seed=$((seed+1)); done

# ---- regions on loopback: register, list, get, compute, write, buffers, delete ----
if start "emu, defaults"; then
  code=$(req POST /v1/shm "{\"name\":\"/$obj-f32\"}")
  loc=$(grep -i '^Location:' "$tmp/hdr" | tr -d '\r' | sed 's/^[Ll]ocation: *//')
  f32id=$(get id)
  check "POST /v1/shm: 201 with id shm-<16 hex> ($f32id)" '[ "$code" = 201 ] && [[ "$f32id" =~ ^shm-[0-9a-f]{16}$ ]]'
  check "POST /v1/shm: Location /v1/shm/<id> ($loc)" '[ "$loc" = "/v1/shm/$f32id" ]'
  load name offset bytes object_bytes registered
  check "POST /v1/shm: name, offset 0, bytes and object_bytes 4000, registered false on emu" \
    '[ "${J[name]}" = "/$obj-f32" ] && [ "${J[offset]}" = 0 ] && [ "${J[bytes]}" = 4000 ] &&
     [ "${J[object_bytes]}" = 4000 ] && [ "${J[registered]}" = false ]'
  declare -A id
  id[f32]=$f32id
  for t in $TYPES; do [ $t = f32 ] || id[$t]=$(register $obj-$t); done
  check "POST /v1/shm: every type's object registered" '( for t in $TYPES; do [ -n "${id[$t]}" ] || exit 1; done )'
  part=$(register $obj-i32 '"offset":400,"bytes":800')
  check "POST /v1/shm with offset and bytes: offset 400, bytes 800, object_bytes 4000" \
    '[ -n "$part" ] && [ "$(get offset)" = 400 ] && [ "$(get bytes)" = 800 ] && [ "$(get object_bytes)" = 4000 ]'

  code=$(req GET /v1/shm)
  load count regions.0.id regions.8.id bytes_mapped max_bytes regions.0.name regions.0.read_only regions.0.users \
    regions.0.created regions.0.location
  check "GET /v1/shm: 200, count 9, regions oldest first" \
    '[ "$code" = 200 ] && [ "${J[count]}" = 9 ] && [ "${J[regions.0.id]}" = "$f32id" ] && [ "${J[regions.8.id]}" = "$part" ]'
  check "GET /v1/shm: bytes_mapped 40800 (the eight objects, 40000, and 800), max_bytes, the first one's name" \
    '[ "${J[bytes_mapped]}" = 40800 ] && [ "${J[max_bytes]}" -gt 0 ] && [ "${J[regions.0.name]}" = "/$obj-f32" ]'
  check "GET /v1/shm: a region's read_only false, users 0, created, location (docs/api.md)" \
    '[ "${J[regions.0.read_only]}" = false ] && [ "${J[regions.0.users]}" = 0 ] && [ "${J[regions.0.created]}" -gt 0 ] &&
     [ "${J[regions.0.location]}" = "/v1/shm/$f32id" ]'
  code=$(req GET "/v1/shm/$f32id")
  check "GET /v1/shm/{id}: 200, the region" '[ "$code" = 200 ] && [ "$(get id)" = "$f32id" ] && [ "$(get bytes)" = 4000 ]'

  # Bit for bit: each request over the region against the same bytes as data_b64.
  same() { # label, body over the region, body with data_b64, keys to compare
    local label=$1 a=$2 b=$3 diff; shift 3
    local c1 c2; c1=$(req POST "$route" "$a"); cp "$tmp/body" "$tmp/a"; c2=$(req POST "$route" "$b")
    diff=$(py same "$tmp/a" "$tmp/body" "$@")
    check "$label" '[ "$c1" = 200 ] && [ "$c2" = 200 ] && [ -z "$diff" ]'
    [ "$c1" = 200 ] || echo "     region: $c1 $(head -c 300 "$tmp/a")"
    [ -z "$diff" ] || echo "     differs: $diff"
  }
  for t in $TYPES; do
    e=$(py esize $t); all=$(py b64 /dev/shm/$obj-$t 0 $((N*e))); mid=$(py b64 /dev/shm/$obj-$t $((3*e)) $((500*e)))
    s="\"shm\":{\"id\":\"${id[$t]}\"}"; sc="\"shm\":{\"id\":\"${id[$t]}\",\"offset\":$((3*e)),\"count\":500}"
    route=/v1/reduce
    same "$t device_reduce sum: region = data_b64" "{\"type\":\"$t\",\"op\":\"sum\",$s}" \
      "{\"type\":\"$t\",\"op\":\"sum\",\"data_b64\":\"$all\"}" value count accumulator
    same "$t device_reduce max: region = data_b64" "{\"type\":\"$t\",\"op\":\"max\",$s}" \
      "{\"type\":\"$t\",\"op\":\"max\",\"data_b64\":\"$all\"}" value count
    same "$t device_reduce sum, offset 3 elements, count 500" "{\"type\":\"$t\",\"op\":\"sum\",$sc}" \
      "{\"type\":\"$t\",\"op\":\"sum\",\"data_b64\":\"$mid\"}" value count accumulator
    same "$t block_reduce sum (groups of 64): region = data_b64" \
      "{\"family\":\"block_reduce\",\"block\":64,\"type\":\"$t\",\"op\":\"sum\",\"output\":\"b64\",$s}" \
      "{\"family\":\"block_reduce\",\"block\":64,\"type\":\"$t\",\"op\":\"sum\",\"output\":\"b64\",\"data_b64\":\"$all\"}" \
      data_b64 out_count
    route=/v1/scan
    same "$t device_scan sum inclusive: region = data_b64" "{\"type\":\"$t\",\"op\":\"sum\",\"output\":\"b64\",$s}" \
      "{\"type\":\"$t\",\"op\":\"sum\",\"output\":\"b64\",\"data_b64\":\"$all\"}" data_b64 out_count count
    same "$t device_scan sum exclusive, offset and count: region = data_b64" \
      "{\"type\":\"$t\",\"op\":\"sum\",\"exclusive\":true,\"output\":\"b64\",$sc}" \
      "{\"type\":\"$t\",\"op\":\"sum\",\"exclusive\":true,\"output\":\"b64\",\"data_b64\":\"$mid\"}" data_b64 out_count count
  done
  route=/v1/reduce
  same "warp_reduce i32 width 8 over a partial region (offset 400 bytes 800)" \
    "{\"family\":\"warp_reduce\",\"width\":8,\"type\":\"i32\",\"op\":\"sum\",\"output\":\"b64\",\"shm\":{\"id\":\"$part\"}}" \
    "{\"family\":\"warp_reduce\",\"width\":8,\"type\":\"i32\",\"op\":\"sum\",\"output\":\"b64\",\"data_b64\":\"$(py b64 /dev/shm/$obj-i32 400 800)\"}" \
    data_b64 out_count
  code=$(req POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"${id[i32]}\",\"count\":0}}")
  check "count 0: the identity, empty" '[ "$code" = 200 ] && [ "$(get value)" = 0 ] && [ "$(get count)" = 0 ]'
  code=$(req POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"${id[i32]}\",\"offset\":4000}}")
  check "offset at the region's end: no element, 200 count 0" '[ "$code" = 200 ] && [ "$(get count)" = 0 ]'
  code=$(req POST /v1/reduce "{\"type\":\"u32\",\"op\":\"sum\",\"shm\":{\"id\":\"${id[f32]}\"}}")
  check "a region read as another type (f32 bytes as u32): 200, count 1000" '[ "$code" = 200 ] && [ "$(get count)" = 1000 ]'

  # Inputs over 64 KiB are copied to the device (a buffer on emu), not read to the host: the same bytes as
  # a raw body (too large for a command line as base64) give the same answer; a scan's result written
  # into a region is what the raw scan answers.
  raw() { # path query, the body a file: the answer in $tmp/body (JSON) or FILE with Accept raw
    curl -s -o "${3:-$tmp/body}" -w '%{http_code}' ${3:+-H 'Accept: application/octet-stream'} \
      -H 'Content-Type: application/octet-stream' --data-binary @"$2" "$url$1"
  }
  py mkobj /dev/shm/$obj-bigf32 f32 50000 21; py mkobj /dev/shm/$obj-bigi64 i64 20000 22
  py zeros /dev/shm/$obj-bigout 200000
  big32=$(register $obj-bigf32); big64=$(register $obj-bigi64); bigout=$(register $obj-bigout)
  for r in "f32 sum $big32 bigf32 50000" "f32 max $big32 bigf32 50000" "i64 sum $big64 bigi64 20000" "i64 min $big64 bigi64 20000"; do
    set -- $r
    c1=$(req POST /v1/reduce "{\"type\":\"$1\",\"op\":\"$2\",\"shm\":{\"id\":\"$3\"}}"); cp "$tmp/body" "$tmp/a"
    c2=$(raw "/v1/reduce?type=$1&op=$2" /dev/shm/$obj-$4); diff=$(py same "$tmp/a" "$tmp/body" value count)
    check "large $1 $2 ($5 elements): region = raw body" '[ "$c1" = 200 ] && [ "$c2" = 200 ] && [ -z "$diff" ]'
  done
  code=$(req POST /v1/scan "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$big32\"},\"output\":{\"shm\":{\"id\":\"$bigout\"}}}")
  raw "/v1/scan?type=f32&op=sum" /dev/shm/$obj-bigf32 "$tmp/scan.raw" >/dev/null
  check "large f32 scan (50000) into a region: 200, the object's first 200000 bytes = the raw scan" \
    '[ "$code" = 200 ] && [ "$(get output.shm.bytes)" = 200000 ] && [ "$(stat -c %s "$tmp/scan.raw")" = 200000 ] &&
     cmp -s "$tmp/scan.raw" /dev/shm/$obj-bigout'
  code=$(req PUT /v1/buffers "{\"type\":\"i64\",\"shm\":{\"id\":\"$big64\"}}"); bbig=$(get id)
  curl -s -o "$tmp/got" -H 'Accept: application/octet-stream' "$url/v1/buffers/$bbig"
  check "large PUT /v1/buffers from a region (160000 bytes), read back exactly" '[ "$code" = 201 ] && cmp -s "$tmp/got" /dev/shm/$obj-bigi64'
  truncate -s 65536 /dev/shm/$obj-bigf32
  refused "large: reduce over a truncated region" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$big32\"}}" 409 region_truncated shm.id
  refused "large: PUT /v1/buffers from a truncated region" PUT /v1/buffers "{\"type\":\"f32\",\"shm\":{\"id\":\"$big32\"}}" 409 region_truncated shm.id
  truncate -s 1000 /dev/shm/$obj-bigout
  refused "large: a scan into a truncated region" POST /v1/scan "{\"type\":\"i64\",\"op\":\"sum\",\"shm\":{\"id\":\"$big64\"},\"output\":{\"shm\":{\"id\":\"$bigout\"}}}" 409 region_truncated output.shm.id
  for r in $big32 $big64 $bigout; do req DELETE "/v1/shm/$r" >/dev/null; done

  # A result written into a region, compared with the same request answered as base64.
  py zeros /dev/shm/$obj-out 16384
  out=$(register $obj-out)
  outw() { # label, body without output, offset, element size: the region's bytes = the b64 answer
    local label=$1 body=$2 off=$3 e=$4 c1 c2 bad
    c2=$(req POST "$route" "${body%\}},\"output\":\"b64\"}"); cp "$tmp/body" "$tmp/b" # first: the input may be the output
    c1=$(req POST "$route" "${body%\}},\"output\":{\"shm\":{\"id\":\"$out\",\"offset\":$off}}}")
    bad=$(py written "$tmp/body" "$tmp/b" /dev/shm/$obj-out "$off" "$e" "$out")
    check "$label: 200, output.shm {id, offset $off, count, bytes}, the object's bytes = the b64 answer" \
      '[ "$c1" = 200 ] && [ "$c2" = 200 ] && [ -z "$bad" ]'
    [ -z "$bad" ] || echo "     $bad"
  }
  route=/v1/scan
  outw "scan f32 into a region at 64" "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"${id[f32]}\"}}" 64 4
  check "scan into a region: the bytes before the offset untouched" '[ "$(py b64 /dev/shm/$obj-out 0 64)" = "$(head -c 64 /dev/zero | base64 -w0)" ]'
  outw "exclusive scan i64 (data in) into a region at 8000" "{\"type\":\"i64\",\"op\":\"max\",\"exclusive\":true,\"data\":[5,\"-9007199254740993\",7,3]}" 8000 8
  outw "scan bf16 into a region at 2 (a 2-byte offset)" "{\"type\":\"bf16\",\"op\":\"sum\",\"shm\":{\"id\":\"${id[bf16]}\",\"count\":100}}" 2 2
  route=/v1/reduce
  outw "block_reduce u32 (per-group) into a region at 4096" "{\"family\":\"block_reduce\",\"block\":32,\"type\":\"u32\",\"op\":\"max\",\"shm\":{\"id\":\"${id[u32]}\"}}" 4096 4
  outw "warp_reduce f64 (per-group) into a region at 12000" "{\"family\":\"warp_reduce\",\"width\":4,\"type\":\"f64\",\"op\":\"sum\",\"shm\":{\"id\":\"${id[f64]}\"}}" 12000 8
  route=/v1/scan
  outw "scan in place (a region as input and output, same offset)" "{\"type\":\"u32\",\"op\":\"sum\",\"shm\":{\"id\":\"$out\",\"offset\":64,\"count\":50}}" 64 4

  # PUT /v1/buffers from a region, read back.
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
    --data-binary "{\"type\":\"f32\",\"shm\":{\"id\":\"$f32id\"}}" "$url/v1/buffers")
  bid=$(get id)
  check "PUT /v1/buffers from a region: 201, f32, count 1000, bytes 4000" \
    '[ "$code" = 201 ] && [ "$(get type)" = f32 ] && [ "$(get count)" = 1000 ] && [ "$(get bytes)" = 4000 ]'
  curl -s -o "$tmp/got" -H 'Accept: application/octet-stream' "$url/v1/buffers/$bid"
  check "GET the buffer: the object's bytes exactly" 'cmp -s "$tmp/got" /dev/shm/$obj-f32'
  code=$(req PUT /v1/buffers "{\"type\":\"u64\",\"shm\":{\"id\":\"${id[u64]}\",\"offset\":16,\"count\":10}}")
  bid2=$(get id)
  curl -s -o "$tmp/got" -H 'Accept: application/octet-stream' "$url/v1/buffers/$bid2"
  check "PUT /v1/buffers from a region with offset 16 and count 10: bytes [16, 96) of the object" \
    '[ "$code" = 201 ] && [ "$(get count)" = 10 ] && cmp -s "$tmp/got" <(tail -c +17 /dev/shm/$obj-u64 | head -c 80)'
  code=$(req POST /v1/reduce "{\"buffer\":\"$bid\",\"op\":\"sum\"}"); cp "$tmp/body" "$tmp/a"
  code2=$(req POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$f32id\"}}")
  check "reduce of that buffer = reduce of the region" '[ "$code" = 200 ] && [ "$code2" = 200 ] && [ -z "$(py same "$tmp/a" "$tmp/body" value count)" ]'

  # The async job path: a reduce over a region as a job, from loopback.
  code=$(req POST /v1/jobs "{\"kind\":\"reduce\",\"request\":{\"type\":\"i64\",\"op\":\"sum\",\"shm\":{\"id\":\"${id[i64]}\"}}}")
  job=$(get id)
  check "POST /v1/jobs reduce over a region: 202" '[ "$code" = 202 ] && [ -n "$job" ]'
  for _ in $(seq 200); do req GET "/v1/jobs/$job" >/dev/null; case "$(get state)" in done|failed|cancelled) break ;; esac; sleep 0.05; done
  cp "$tmp/body" "$tmp/job"
  req POST /v1/reduce "{\"type\":\"i64\",\"op\":\"sum\",\"shm\":{\"id\":\"${id[i64]}\"}}" >/dev/null
  check "the job finishes 200 with the value a direct request gives ($(py get "$tmp/job" result.value))" \
    '[ "$(py get "$tmp/job" state)" = done ] && [ "$(py get "$tmp/job" status)" = 200 ] &&
     [ "$(py get "$tmp/job" result.value)" = "$(get value)" ] && [ -n "$(get value)" ]'
  code=$(req POST /v1/jobs "{\"kind\":\"reduce\",\"request\":{\"type\":\"i64\",\"op\":\"sum\",\"shm\":{\"id\":\"shm-0000000000000000\"}}}")
  job=$(get id)
  for _ in $(seq 200); do req GET "/v1/jobs/$job" >/dev/null; case "$(get state)" in done|failed|cancelled) break ;; esac; sleep 0.05; done
  check "a job over an unknown region: its status 404 unknown_shm" \
    '[ "$(get status)" = 404 ] && [ "$(get error.code)" = unknown_shm ]'

  # ---- refusals: registration ----
  ln -s /dev/shm/$obj-f32 /dev/shm/$obj-link; ln -s /etc/passwd /dev/shm/$obj-passwd; mkdir /dev/shm/$obj-dir
  mkfifo /dev/shm/$obj-fifo
  long="/$obj-$(printf 'z%.0s' $(seq 200))"
  refused "a name outside the prefix" POST /v1/shm '{"name":"/other-x"}' 400 bad_name name
  refused "a name without its leading /" POST /v1/shm "{\"name\":\"$obj-f32\"}" 400 bad_name name
  refused "a name with ..  " POST /v1/shm "{\"name\":\"/$obj..f32\"}" 400 bad_name name
  refused "a name climbing out (/warpd/../)" POST /v1/shm "{\"name\":\"/warpd/../../etc/passwd\"}" 400 bad_name name
  refused "a / inside the name" POST /v1/shm "{\"name\":\"/$obj-dir/x\"}" 400 bad_name name
  refused "a name over 200 characters" POST /v1/shm "{\"name\":\"$long\"}" 400 bad_name name
  refused "a missing object" POST /v1/shm "{\"name\":\"/$obj-none\"}" 404 shm_not_found name
  refused "a symlink to an object" POST /v1/shm "{\"name\":\"/$obj-link\"}" 400 not_shared_memory name
  refused "a symlink to /etc/passwd" POST /v1/shm "{\"name\":\"/$obj-passwd\"}" 400 not_shared_memory name
  refused "a directory" POST /v1/shm "{\"name\":\"/$obj-dir\"}" 400 not_shared_memory name
  refused "a FIFO" POST /v1/shm "{\"name\":\"/$obj-fifo\"}" 400 not_shared_memory name
  refused "offset past the object's end" POST /v1/shm "{\"name\":\"/$obj-f32\",\"offset\":4001}" 400 out_of_range offset
  refused "offset at the end (no byte)" POST /v1/shm "{\"name\":\"/$obj-f32\",\"offset\":4000}" 400 out_of_range bytes
  refused "bytes past the end" POST /v1/shm "{\"name\":\"/$obj-f32\",\"bytes\":4001}" 400 out_of_range bytes
  refused "offset + bytes past the end" POST /v1/shm "{\"name\":\"/$obj-f32\",\"offset\":3000,\"bytes\":1001}" 400 out_of_range bytes
  refused "offset 2^53 + 2" POST /v1/shm "{\"name\":\"/$obj-f32\",\"offset\":9007199254740994}" 400 out_of_range offset
  refused "offset 2^64" POST /v1/shm "{\"name\":\"/$obj-f32\",\"offset\":18446744073709551616}" 400 out_of_range offset
  refused "bytes 1e300" POST /v1/shm "{\"name\":\"/$obj-f32\",\"bytes\":1e300}" 400 out_of_range bytes
  refused "offset -1" POST /v1/shm "{\"name\":\"/$obj-f32\",\"offset\":-1}" 400 out_of_range offset
  refused "offset 1.5" POST /v1/shm "{\"name\":\"/$obj-f32\",\"offset\":1.5}" 400 bad_value offset
  refused "offset as a string" POST /v1/shm "{\"name\":\"/$obj-f32\",\"offset\":\"0\"}" 400 wrong_type offset
  refused "bytes 0" POST /v1/shm "{\"name\":\"/$obj-f32\",\"bytes\":0}" 400 out_of_range bytes
  refused "no name" POST /v1/shm '{"offset":0}' 400 missing_field name
  refused "a name that is not a string" POST /v1/shm '{"name":7}' 400 wrong_type name
  refused "an unknown field" POST /v1/shm "{\"name\":\"/$obj-f32\",\"mode\":\"rw\"}" 400 unknown_field mode
  code=$(req POST /v1/shm 'not json')
  check "a body that is not JSON: 400 bad_json" '[ "$code" = 400 ] && [ "$(get error.code)" = bad_json ]'
  refused "GET an unknown region" GET /v1/shm/shm-0000000000000000 "" 404 unknown_shm id
  refused "DELETE an unknown region" DELETE /v1/shm/shm-0000000000000000 "" 404 unknown_shm id
  refused "GET /v1/shm/a/b" GET /v1/shm/a/b "" 404 unknown_shm id
  refused "GET /v1/shm/ (no id)" GET /v1/shm/ "" 404 unknown_shm id

  # ---- refusals: a region in a job ----
  S="\"shm\":{\"id\":\"$f32id\""
  refused "shm.offset not a multiple of the element size" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"offset\":2}}" 400 out_of_range shm.offset
  refused "shm.offset past the region" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"offset\":4004}}" 400 out_of_range shm.offset
  refused "shm.count past the region" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"count\":1001}}" 400 out_of_range shm.count
  refused "shm.count past the region from an offset" POST /v1/scan "{\"type\":\"f32\",\"op\":\"sum\",$S,\"offset\":8,\"count\":999}}" 400 out_of_range shm.count
  refused "shm.count past the region as f64" POST /v1/reduce "{\"type\":\"f64\",\"op\":\"sum\",$S,\"count\":501}}" 400 out_of_range shm.count
  refused "shm.count 2^53" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"count\":9007199254740992}}" 400 out_of_range shm.count
  refused "shm.count 2^64" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"count\":18446744073709551616}}" 400 out_of_range shm.count
  refused "shm.offset 2^64 - 4" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"offset\":18446744073709551612}}" 400 out_of_range shm.offset
  refused "shm.offset -4" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"offset\":-4}}" 400 out_of_range shm.offset
  refused "shm.count -1" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"count\":-1}}" 400 out_of_range shm.count
  refused "shm.count 0.5" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"count\":0.5}}" 400 bad_value shm.count
  refused "an unknown shm.id" POST /v1/reduce '{"type":"f32","op":"sum","shm":{"id":"shm-0000000000000000"}}' 404 unknown_shm shm.id
  refused "shm.id not a string" POST /v1/reduce '{"type":"f32","op":"sum","shm":{"id":5}}' 400 wrong_type shm.id
  refused "shm without an id" POST /v1/reduce '{"type":"f32","op":"sum","shm":{"offset":0}}' 400 missing_field shm.id
  refused "shm not an object" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":\"$f32id\"}" 400 wrong_type shm
  refused "an unknown member of shm" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S,\"name\":\"x\"}}" 400 unknown_field shm.name
  refused "shm and data together" POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",$S},\"data\":[1]}" 400 bad_request data
  refused "PUT /v1/buffers: shm.offset not a multiple" PUT /v1/buffers "{\"type\":\"i64\",$S,\"offset\":4}}" 400 out_of_range shm.offset
  refused "PUT /v1/buffers: shm.count past the region" PUT /v1/buffers "{\"type\":\"f32\",$S,\"count\":1001}}" 400 out_of_range shm.count
  refused "PUT /v1/buffers: an unknown region" PUT /v1/buffers '{"type":"f32","shm":{"id":"shm-ffffffffffffffff"}}' 404 unknown_shm shm.id
  refused "PUT /v1/buffers: shm and data_b64" PUT /v1/buffers "{\"type\":\"f32\",$S},\"data_b64\":\"AAAAAA==\"}" 400 bad_input data
  refused "PUT /v1/buffers: cuda_ipc on the emulator" PUT /v1/buffers "{\"cuda_ipc\":{\"handle\":\"$(head -c 64 /dev/zero | base64 -w0)\",\"count\":1,\"type\":\"f32\"}}" 400 needs_gpu cuda_ipc
  O="\"output\":{\"shm\":{\"id\":\"$out\""
  refused "output into a region too small for the result" POST /v1/scan "{\"type\":\"f32\",\"op\":\"sum\",$S},$O,\"offset\":12388}}}" 400 out_of_range output.shm.offset
  refused "output at an offset past the region" POST /v1/scan "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1],$O,\"offset\":16385}}}" 400 out_of_range output.shm.offset
  refused "output offset 2^64 - 1" POST /v1/scan "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1],$O,\"offset\":18446744073709551615}}}" 400 out_of_range output.shm.offset
  refused "output.shm with a count" POST /v1/scan "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1],$O,\"count\":1}}}" 400 unknown_field output.shm.count
  refused "output into an unknown region" POST /v1/scan '{"type":"i32","op":"sum","data":[1],"output":{"shm":{"id":"shm-0000000000000001"}}}' 404 unknown_shm output.shm.id
  refused "output.shm for a single value (device_reduce)" POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1],$O}}}" 400 bad_value output.shm

  # ---- truncation under a live registration: 409, and the daemon keeps serving ----
  py mkobj /dev/shm/$obj-trunc i32 2048 9
  tid=$(register $obj-trunc)
  code=$(req POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$tid\"}}")
  check "before truncation: 200" '[ "$code" = 200 ]'
  truncate -s 100 /dev/shm/$obj-trunc
  refused "reduce over a truncated region" POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$tid\"}}" 409 region_truncated shm.id
  refused "scan over a truncated region" POST /v1/scan "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$tid\",\"count\":10}}" 409 region_truncated shm.id
  refused "PUT /v1/buffers from a truncated region" PUT /v1/buffers "{\"type\":\"i32\",\"shm\":{\"id\":\"$tid\"}}" 409 region_truncated shm.id
  refused "a scan into a truncated region" POST /v1/scan "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1,2,3],\"output\":{\"shm\":{\"id\":\"$tid\",\"offset\":4096}}}" 409 region_truncated output.shm.id
  truncate -s 0 /dev/shm/$obj-trunc
  refused "reduce over a region truncated to nothing" POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$tid\",\"count\":1}}" 409 region_truncated shm.id
  code=$(req GET /v1/health)
  check "GET /v1/health after the truncations: 200" '[ "$code" = 200 ]'
  code=$(req POST /v1/reduce '{"type":"i32","op":"sum","data":[1,2,3]}')
  check "a reduce after the truncations: 200 value 6" '[ "$code" = 200 ] && [ "$(get value)" = 6 ]'
  tr=$(metric 'warpd_shm_truncated_total ')
  check "metrics: warpd_shm_truncated_total counts the 409s ($tr >= 5)" '[ "$tr" -ge 5 ]'
  code=$(req DELETE "/v1/shm/$tid")
  check "DELETE the truncated region: 200" '[ "$code" = 200 ] && [ "$(get deleted)" = true ]'

  # ---- delete ----
  code=$(req DELETE "/v1/shm/$part")
  check "DELETE /v1/shm/{id}: 200, deleted true, pending false" \
    '[ "$code" = 200 ] && [ "$(get id)" = "$part" ] && [ "$(get deleted)" = true ] && [ "$(get pending)" = false ]'
  refused "GET a deleted region" GET "/v1/shm/$part" "" 404 unknown_shm id
  refused "DELETE it again" DELETE "/v1/shm/$part" "" 404 unknown_shm id
  refused "reduce over a deleted region" POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$part\"}}" 404 unknown_shm shm.id
  code=$(req GET /v1/shm)
  check "GET /v1/shm after the deletes: count 9 ($(get count))" '[ "$code" = 200 ] && [ "$(get count)" = 9 ]'
  code=$(req POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$f32id\"}}")
  check "the other regions still serve" '[ "$code" = 200 ] && [ "$(get count)" = 1000 ]'
  rm -f /dev/shm/$obj-link /dev/shm/$obj-passwd /dev/shm/$obj-fifo; rmdir /dev/shm/$obj-dir
  stop "emu daemon"
fi

# ---- permissions are the daemon's own: a read-only object registers read_only (no output into it), one
# it may not open is 403 shm_denied. Root opens anything, so as root the daemon runs as nobody (setpriv).
py mkobj /dev/shm/$obj-ro i32 1000 31; py mkobj /dev/shm/$obj-deny i32 10 32
chmod 0444 /dev/shm/$obj-ro; chmod 0000 /dev/shm/$obj-deny
runner=$bin rundir=$tmp # how the daemon starts, and where its out, err and cache go
if [ "$(id -u)" = 0 ]; then
  if command -v setpriv >/dev/null; then
    mkdir -m 0777 "$tmp/nobody"; chmod o+x "$tmp"
    printf '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups "%s" "$@"\n' "$PWD/$bin" >"$tmp/nobody/warpd"
    chmod 0755 "$tmp/nobody/warpd"; runner=$tmp/nobody/warpd rundir=$tmp/nobody
  else
    runner=; echo "NOTE permissions: running as root without setpriv: read_only and shm_denied left to test_regions"
  fi
fi
if [ -n "$runner" ]; then
  echo "-- the daemon as $([ "$runner" = "$bin" ] && id -un || echo nobody)"
  if warpd_start "$runner" "$rundir" --backend emu --no-disk-cache; then
    rid=$(register $obj-ro)
    check "a read-only object registers, read_only true" '[ -n "$rid" ] && [ "$(get read_only)" = true ] && [ "$(get registered)" = false ]'
    code=$(req POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$rid\"}}"); cp "$tmp/body" "$tmp/a"
    code2=$(req POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"data_b64\":\"$(py b64 /dev/shm/$obj-ro 0 4000)\"}")
    check "a read-only region as input: the data_b64 answer" '[ "$code" = 200 ] && [ -z "$(py same "$tmp/a" "$tmp/body" value count)" ]'
    before=$(py b64 /dev/shm/$obj-ro 0 4000)
    refused "a scan into a read-only region" POST /v1/scan "{\"type\":\"i32\",\"op\":\"sum\",\"data\":[1,2],\"output\":{\"shm\":{\"id\":\"$rid\"}}}" 403 read_only output.shm.id
    check "the read-only object is unchanged" '[ "$(py b64 /dev/shm/$obj-ro 0 4000)" = "$before" ]'
    refused "an object the daemon may not open" POST /v1/shm "{\"name\":\"/$obj-deny\"}" 403 shm_denied name
    stop "the unprivileged daemon" "$rundir/err"
  else
    no "the daemon did not start as $runner"; cat "$rundir/err"; pid=
  fi
  [ "$runner" = "$bin" ] || { chmod 0600 /dev/shm/$obj-ro; }
fi

# ---- --shm-max and --shm-prefix ----
py zeros /dev/shm/$obj-q-a 4096; py zeros /dev/shm/$obj-q-b 8192
prefix=/$obj-q
if start "--shm-max 8192 --shm-prefix $prefix --max-elements 1000" --shm-max 8192 --shm-prefix "$prefix" --max-elements 1000; then
  a=$(register $obj-q-a)
  check "quota: 4096 of 8192 bytes: 201" '[ -n "$a" ]'
  refused "quota: 4097 more bytes" POST /v1/shm "{\"name\":\"/$obj-q-b\",\"bytes\":4097}" 413 shm_quota bytes
  refused "quota: the whole 8192-byte object" POST /v1/shm "{\"name\":\"/$obj-q-b\"}" 413 shm_quota bytes
  b=$(register $obj-q-b '"bytes":4096')
  check "quota: 4096 more, exactly full: 201" '[ -n "$b" ]'
  refused "quota: one byte more" POST /v1/shm "{\"name\":\"/$obj-q-a\",\"bytes\":1}" 413 shm_quota bytes
  code=$(req GET /v1/shm)
  check "GET /v1/shm: bytes_mapped 8192, max_bytes 8192" '[ "$(get bytes_mapped)" = 8192 ] && [ "$(get max_bytes)" = 8192 ]'
  m="$(metric 'warpd_shm_regions ') $(metric 'warpd_shm_mapped_bytes ') $(metric 'warpd_shm_max_bytes ')"
  m="$m $(metric 'warpd_shm_registered_total ') $(metric 'warpd_shm_rejected_quota_total ')"
  check "metrics: regions 2, mapped 8192, max 8192, registered 2, rejected for the quota 3 ($m)" '[ "$m" = "2 8192 8192 2 3" ]'
  req GET /v1/info >/dev/null
  check "info: limits.shm true, limits.shm_max_bytes 8192" '[ "$(get limits.shm)" = true ] && [ "$(get limits.shm_max_bytes)" = 8192 ]'
  refused "--max-elements 1000: a region of 2048 f16 as input" POST /v1/reduce "{\"type\":\"f16\",\"op\":\"sum\",\"shm\":{\"id\":\"$b\"}}" 413 too_many_elements shm.count
  req DELETE "/v1/shm/$a" >/dev/null
  c=$(register $obj-q-b '"offset":4096')
  check "quota: a delete frees its bytes (4096 again: 201)" '[ -n "$c" ]'
  refused "--shm-prefix: a name outside it" POST /v1/shm "{\"name\":\"/$obj-f32\"}" 400 bad_name name
  refused "--shm-prefix: /warpd alone" POST /v1/shm '{"name":"/warpd"}' 400 bad_name name
  stop "quota daemon"
fi
prefix=/warpd
for f in "--shm maybe|--shm must be on or off" "--shm-prefix warpd|--shm-prefix" "--shm-prefix /a/b|--shm-prefix" \
         "--shm-prefix /a..b|--shm-prefix" "--shm-max lots|--shm-max"; do
  rc=0; timeout 30 "$bin" --backend emu --no-disk-cache --listen 127.0.0.1:0 ${f%%|*} >/dev/null 2>"$tmp/err" || rc=$?
  check "flags: ${f%%|*} refused at once ($rc): $(head -n 1 "$tmp/err")" '[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "${f#*|}" "$tmp/err"'
done

# ---- --shm off: every route and field 403 shm_disabled ----
if start "--shm off" --shm off; then
  refused "--shm off: POST /v1/shm" POST /v1/shm "{\"name\":\"/$obj-f32\"}" 403 shm_disabled ""
  refused "--shm off: GET /v1/shm" GET /v1/shm "" 403 shm_disabled ""
  refused "--shm off: GET /v1/shm/{id}" GET /v1/shm/shm-0000000000000000 "" 403 shm_disabled ""
  refused "--shm off: DELETE /v1/shm/{id}" DELETE /v1/shm/shm-0000000000000000 "" 403 shm_disabled ""
  refused "--shm off: a reduce with shm" POST /v1/reduce '{"type":"f32","op":"sum","shm":{"id":"shm-0000000000000000"}}' 403 shm_disabled shm
  refused "--shm off: a scan with shm" POST /v1/scan '{"type":"f32","op":"sum","shm":{"id":"shm-0000000000000000"}}' 403 shm_disabled shm
  refused "--shm off: a scan into a region" POST /v1/scan '{"type":"i32","op":"sum","data":[1],"output":{"shm":{"id":"shm-0000000000000000"}}}' 403 shm_disabled output.shm
  refused "--shm off: PUT /v1/buffers with shm" PUT /v1/buffers '{"type":"f32","shm":{"id":"shm-0000000000000000"}}' 403 shm_disabled shm
  code=$(req POST /v1/reduce '{"type":"i32","op":"sum","data":[1,2]}')
  check "--shm off: a reduce of data still 200" '[ "$code" = 200 ]'
  req GET /v1/info >/dev/null
  check "--shm off: info says limits.shm false" '[ "$(get limits.shm)" = false ]'
  check "--shm off: no warpd_shm_ metrics" '! curl -s "$url/metrics" | grep -q "^warpd_shm_"'
  stop "--shm off daemon"
fi

# ---- a token: /v1/shm needs it as every route ----
printf '%s\n' "0123456789abcdef0123456789abcdef" >"$tmp/token"; chmod 600 "$tmp/token"
if start "--token-file" --token-file "$tmp/token"; then
  refused "token: POST /v1/shm without it" POST /v1/shm "{\"name\":\"/$obj-f32\"}" 401 unauthorized Authorization
  refused "token: GET /v1/shm without it" GET /v1/shm "" 401 unauthorized Authorization
  via=(-H "Authorization: Bearer 0123456789abcdef0123456789abcdef")
  tokid=$(register $obj-f32)
  check "token: POST /v1/shm with it: 201" '[ -n "$tokid" ]'
  code=$(req POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$tokid\"}}")
  check "token: reduce over the region with it: 200" '[ "$code" = 200 ]'
  via=()
  refused "token: DELETE /v1/shm/{id} without it" DELETE "/v1/shm/$tokid" "" 401 unauthorized Authorization
  stop "token daemon"
fi

# ---- a Unix socket: a local peer, regions work ----
if start "--listen unix:" --listen "unix:$tmp/sock"; then
  via=(--unix-socket "$tmp/sock"); url=http://localhost
  uid=$(register $obj-i32)
  check "unix socket: POST /v1/shm 201" '[ -n "$uid" ]'
  code=$(req POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$uid\"}}"); cp "$tmp/body" "$tmp/a"
  code2=$(req POST /v1/reduce "{\"type\":\"i32\",\"op\":\"sum\",\"data_b64\":\"$(py b64 /dev/shm/$obj-i32 0 4000)\"}")
  check "unix socket: reduce over the region = over data_b64" '[ "$code" = 200 ] && [ "$code2" = 200 ] && [ -z "$(py same "$tmp/a" "$tmp/body" value count)" ]'
  code=$(req POST /v1/jobs "{\"kind\":\"reduce\",\"request\":{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$uid\"}}}")
  job=$(get id)
  for _ in $(seq 200); do req GET "/v1/jobs/$job" >/dev/null; case "$(get state)" in done|failed|cancelled) break ;; esac; sleep 0.05; done
  check "unix socket: a job over the region 200" '[ "$(get status)" = 200 ] && [ "$(get result.count)" = 1000 ]'
  code=$(req DELETE "/v1/shm/$uid")
  check "unix socket: DELETE 200" '[ "$code" = 200 ]'
  via=()
  stop "unix-socket daemon"
fi

# ---- a peer that is not local: inside a network namespace of this test's own, the daemon listens on a
# documentation address (198.51.100.1, TEST-NET-2) put on that namespace's loopback interface, and curl
# talks to it there: the peer address is not loopback, and no packet leaves the namespace ----
addr=198.51.100.1
ns=warpd-shm-$$
if ! { ip netns add "$ns" && ip netns exec "$ns" ip link set lo up &&
       ip netns exec "$ns" ip addr add "$addr/32" dev lo; } 2>/dev/null; then
  ip netns del "$ns" 2>/dev/null
  echo "NOTE remote peer: no network namespace could be made here (ip netns, as root); shm_remote left untested"
else
  printf '#!/bin/sh\nexec ip netns exec %s %s "$@"\n' "$ns" "$(realpath "$bin")" >"$tmp/warpd-ns"
  chmod +x "$tmp/warpd-ns"
  bin_local=$bin bin=$tmp/warpd-ns
  curl() { ip netns exec "$ns" curl "$@"; }
  via=(-H "Authorization: Bearer 0123456789abcdef0123456789abcdef")
  if start "--listen $addr:0 (a remote peer, in a network namespace of its own)" --listen "$addr:0" --token-file "$tmp/token"; then
    refused "remote peer: POST /v1/shm" POST /v1/shm "{\"name\":\"/$obj-f32\"}" 403 shm_remote ""
    refused "remote peer: GET /v1/shm" GET /v1/shm "" 403 shm_remote ""
    refused "remote peer: a reduce with shm" POST /v1/reduce '{"type":"f32","op":"sum","shm":{"id":"shm-0000000000000000"}}' 403 shm_remote shm
    refused "remote peer: a scan into a region" POST /v1/scan '{"type":"i32","op":"sum","data":[1],"output":{"shm":{"id":"shm-0000000000000000"}}}' 403 shm_remote output.shm
    refused "remote peer: PUT /v1/buffers with shm" PUT /v1/buffers '{"type":"f32","shm":{"id":"shm-0000000000000000"}}' 403 shm_remote shm
    code=$(req POST /v1/jobs '{"kind":"reduce","request":{"type":"f32","op":"sum","shm":{"id":"shm-0000000000000000"}}}')
    job=$(get id)
    for _ in $(seq 200); do req GET "/v1/jobs/$job" >/dev/null; case "$(get state)" in done|failed|cancelled) break ;; esac; sleep 0.05; done
    check "remote peer: a job with shm is refused too (403 shm_remote)" \
      '[ "$(get status)" = 403 ] && [ "$(get error.code)" = shm_remote ]'
    stop "remote-peer daemon"
  fi
  if start "--listen $addr:0 --shm-remote" --listen "$addr:0" --token-file "$tmp/token" --shm-remote; then
    rid=$(register $obj-f32)
    check "--shm-remote: a remote peer registers (201)" '[ -n "$rid" ]'
    code=$(req POST /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$rid\"}}")
    check "--shm-remote: and reduces over it (200)" '[ "$code" = 200 ] && [ "$(get count)" = 1000 ]'
    stop "--shm-remote daemon"
  fi
  via=()
  unset -f curl
  bin=$bin_local
  ip netns del "$ns"
fi

echo "shm: $pass passed, $fail failed"
[ $fail -eq 0 ]
