#!/usr/bin/env bash
# The cuda backend's host paths without a GPU: the sanitized daemon with --backend cuda against the
# stand-in driver tests/mockcuda (LD_LIBRARY_PATH=$BUILD/mockcuda: its libcuda.so.1 runs no kernel,
# copies for real). Checks plumbing only, never a computed value: info names the mock device, warp and
# reduce answer on cuda, concurrent bursts batch, lone requests get the _batch kernel built in the
# background, --inline-gpu never/always answer, a buffer round-trips byte for byte, SIGTERM exits
# cleanly with no sanitizer report; zero-copy runs are counted; shared-memory regions are registered
# with the driver and released, and CUDA IPC buffers open a handle once and close it with the last
# (the data plane); mock_launch_io checks wp_backend_launch_io's images byte by byte. Prints one closing line
# "mockcuda: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
bin=$BUILD/asan/warpd
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0
. tests/daemon.sh
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [ ! -f "$BUILD/mockcuda/libcuda.so.1" ]; then
  echo "!! $BUILD/mockcuda/libcuda.so.1 not built (make $BUILD/mockcuda/libcuda.so.1)"
  echo "mockcuda: 0 passed, 1 failed"; exit 1
fi

ok() { pass=$((pass+1)); echo "ok   $1"; }
no() { fail=$((fail+1)); echo "FAIL $1"; }
check() { if eval "$2"; then ok "$1"; else no "$1"; fi; } # name, shell condition

post() { # path, JSON body -> "$tmp/body", prints the status
  curl -s -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$2" "$url$1"
}
# A warp job whose member mask leaves lane 31 out: its answer (file, default the last body) has lane 31
# "not_member" and lane 30 (its partner) "src_not_member", the rest defined: the emulator's run.
lanes_ok() {
  python3 -c 'import json, sys
a = json.load(open(sys.argv[1])); u = a["undefined_reason"]; d = a["defined"]
ok = u[31] == "not_member" and u[30] == "src_not_member" and u[:30] == [None] * 30
sys.exit(0 if ok and d == [r is None for r in u] and a["timing"]["emulate_us"] > 0 else 1)' "${1:-$tmp/body}"
}
# Two warp answers' text before "batch" but for the device's lists (the mock's plain launch computes
# nothing): the emulated lists, the input, the spec, where it ran and the kernel are the same bytes,
# however the answer was written (a lone job's parts while the device worked, a profiled job's all after
# its run, a handed or batched job's by its own thread after the run).
head_text() { sed -E 's/"(output|source_lane)":\[[^]]*\],//g; s/,"batch".*//' "$1"; }
same_head() { [ "$(head_text "$1")" = "$(head_text "$2")" ] && grep -q '"defined":\[.*"input":\[' "$1"; }
reduce_text() { sed -E 's/"value":[^,]*,//; s/,"batch".*//' "$1"; } # a reduce's, but for its value
# POST body to path: the answer in "$tmp/body", the headers in "$tmp/head"; prints the status
post_head() { curl -s -D "$tmp/head" -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$2" "$url$1"; }
metric() { # the value of an exposition line that starts with $1 (0 when absent)
  curl -s "$url/metrics" | awk -v m="$1" 'index($0, m) == 1 { v = $NF } END { print (v == "" ? 0 : v) + 0 }'
}

start() { # label, daemon flags...
  echo "-- $1"; shift
  rm -f "$tmp/out"
  LD_LIBRARY_PATH="$BUILD/mockcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    warpd_start "$bin" "$tmp" --backend cuda --no-disk-cache "$@" && return 0
  no "daemon did not start"; cat "$tmp/err"; pid=; return 1
}
stop() { # SIGTERM: a clean exit, nothing from the sanitizers
  kill -TERM "$pid"; local rc=0; wait "$pid" || rc=$?; pid=
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|ERROR: |^mockcuda: ' "$tmp/err"; then
    no "$1: SIGTERM exit $rc, or a sanitizer or mock report:"; cat "$tmp/err"
  else ok "$1: SIGTERM exits 0, no sanitizer or mock report"; fi
}

REDUCE='{"type":"i32","op":"sum","data":[1,2,3,4]}'
WARP='{"family":"shfl_xor","type":"i32","width":32,"mask":"0xffffffff","args":{"lane_mask":1},"input":{"iota":32}}'
wm=${WARP/0xffffffff/0x7fffffff} # lanes_ok's job

# ---- the default engine (--inline-gpu idle) ----
if start "cuda on the mock, --batch-window-us 20000" --batch-window-us 20000; then
  curl -s "$url/v1/info" >"$tmp/info"
  check "info: backend cuda" 'grep -q "\"backend\":\"cuda\"" "$tmp/info"'
  check "info: the mock device (Mock GPU, sm_90, 132 SMs, 8 GiB)" \
    'grep -q "\"name\":\"Mock GPU\",\"sm\":\"sm_90\",\"sms\":132,\"memory_total\":8589934592" "$tmp/info"'
  check "info: driver version 13000" 'grep -q "\"driver_version\":13000" "$tmp/info"'
  check "HTTP threads beside a GPU by default: the CPUs less 4 runners and an eighth, 4..16 ($(default_threads 4))" \
    '[ "$(http_threads "$pid")" = "$(default_threads 4)" ]'

  code=$(post /v1/warp "$WARP")
  check "warp: 200 on cuda" '[ "$code" = 200 ] && grep -q "\"backend\":\"cuda\"" "$tmp/body"'
  [ "$code" = 200 ] || head -c 400 "$tmp/body"
  code=$(post /v1/reduce "$REDUCE")
  check "reduce: 200 on cuda" '[ "$code" = 200 ] && grep -q "\"backend\":\"cuda\"" "$tmp/body"'
  [ "$code" = 200 ] || head -c 400 "$tmp/body"

  # Lone requests of one key ask for its _batch kernel; the background build makes and loads it.
  key=
  for _ in $(seq 100); do
    post /v1/reduce "$REDUCE" >/dev/null
    key=$(grep -oE '"key":"[^"]*"' "$tmp/body" | head -n 1)
    case "$key" in *'/batch"') break ;; esac
    sleep 0.2
  done
  check "lone requests: a later answer's key ends in /batch ($key)" 'case "$key" in *"/batch\"") true ;; *) false ;; esac'
  built=$(metric 'warpd_background_builds_total{outcome="built"}')
  check "metrics: warpd_background_builds_total{outcome=\"built\"} >= 1 ($built)" '[ "$built" -ge 1 ]'

  # Device timing: a batched job is untimed unless it asks for "profile" (no timing events: its
  # upload/kernel/download_us are null and device_us is the round trip; the mock fails any attempt to
  # time an event made without timing); with "profile": true every step is a number.
  timing() { python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timing"]; print(" ".join("n" if t.get(k) is None else "v" for k in ("upload_us","kernel_us","download_us","device_us")))' "$tmp/body"; }
  code=$(post /v1/reduce "$REDUCE"); got=$(timing)
  check "timing: a batched reduce without profile: steps null, device_us a number ($got)" '[ "$code" = 200 ] && [ "$got" = "n n n v" ]'
  code=$(post /v1/reduce "${REDUCE%\}},\"profile\":true}"); got=$(timing)
  check "timing: with \"profile\": true every step is timed ($got)" '[ "$code" = 200 ] && [ "$got" = "v v v v" ]'
  # The batch's kernel is looked up once it leaves the queue: that lookup is the job's key_us and
  # cache_us (it was in no field, key_us 0), and the stages still add up within total_us.
  code=$(post /v1/reduce "$REDUCE")
  check "timing: a batched reduce reports its kernel's lookup in key_us and cache_us, within total_us" \
    '[ "$code" = 200 ] && grep -q "/batch\"" "$tmp/body" && python3 - "$tmp/body" <<'"'"'PY'"'"'
import json, sys
t = json.load(open(sys.argv[1]))["timing"]
parts = ["receive_us", "handoff_us", "parse_us", "key_us", "cache_us", "load_us", "device_us"]
sys.exit(0 if t["key_us"] > 0 and t["cache_us"] > 0 and sum(t.get(k) or 0 for k in parts) <= t["total_us"] else 1)
PY'
  code=$(post /v1/reduce '{"type":"i32","op":"sum","data":[]}'); got=$(timing)
  check "timing: an empty batched reduce (no launch) is untimed too ($got)" \
    '[ "$code" = 200 ] && grep -q "/batch\"" "$tmp/body" && [ "$got" = "n n n v" ]'
  code=$(post /v1/warp "$WARP"); got=$(timing)
  check "timing: a warp job without profile: steps null, device_us a number ($got)" '[ "$code" = 200 ] && [ "$got" = "n n n v" ]'
  code=$(post /v1/warp "${WARP%\}},\"profile\":true}"); got=$(timing)
  check "timing: a warp job with \"profile\": true is timed ($got)" '[ "$code" = 200 ] && [ "$got" = "v v v v" ]'
  code=$(post /v1/warp "${WARP%\}},\"profile\":\"yes\"}")
  check "timing: \"profile\": \"yes\" is a 400 wrong_type naming the field" \
    '[ "$code" = 400 ] && grep -q "\"code\":\"wrong_type\"" "$tmp/body" && grep -q "\"field\":\"profile\"" "$tmp/body"'

  # Zero-copy (--zero-copy on, the default): an untimed small job runs on the mapped staging (a warp
  # job of one warp: in the resident kernel's mailbox, counted there), a profiled one is copied (its
  # steps are timed), each counted as such.
  zc='warpd_device_zero_copy_runs_total{device="0"' rr='warpd_device_resident_runs_total{device="0"'
  for route in warp reduce; do
    body=$WARP; [ $route = reduce ] && body=$REDUCE
    z0=$(( $(metric "$zc") + $(metric "$rr") )); post /v1/$route "$body" >/dev/null
    z1=$(( $(metric "$zc") + $(metric "$rr") ))
    post /v1/$route "${body%\}},\"profile\":true}" >/dev/null; z2=$(( $(metric "$zc") + $(metric "$rr") ))
    check "zero-copy: an untimed $route runs zero-copy, a profiled one copies ($z0 -> $z1 -> $z2)" \
      '[ "$z1" = $((z0 + 1)) ] && [ "$z2" = "$z1" ]'
  done

  # idle: a small cached job alone is answered on the HTTP thread; with another request in flight (a
  # body still arriving, slowly) it is handed to the batcher's runners, which pack it with others (the
  # HTTP thread goes on serving meanwhile).
  i0=$(metric warpd_http_answered_inline_total); d0=$(metric warpd_http_deferred_total)
  post /v1/reduce "$REDUCE" >/dev/null
  i1=$(metric warpd_http_answered_inline_total); d1=$(metric warpd_http_deferred_total)
  check "idle: a lone cached reduce is answered inline (inline $i0 -> $i1, deferred $d0 -> $d1)" \
    '[ "$i1" -gt "$i0" ] && [ "$d1" = "$d0" ]'
  # (a body long enough to be still arriving after every check below, however loaded the machine: it is
  # cut off after them, never waited for)
  printf '{"type":"i32","op":"sum","data":[%s1]}' "$(printf '1,%.0s' $(seq 30000))" >"$tmp/slow"
  curl -s -o /dev/null --limit-rate 1500 -H 'Content-Type: application/json' --data-binary @"$tmp/slow" \
    "$url/v1/reduce" &
  slow=$!
  sleep 1 # its headers are in; its body would take about 40 s more
  i0=$(metric warpd_http_answered_inline_total); d0=$(metric warpd_http_deferred_total)
  h0=$(metric warpd_http_handed_total)
  code=$(post /v1/reduce "$REDUCE")
  i1=$(metric warpd_http_answered_inline_total); d1=$(metric warpd_http_deferred_total)
  h1=$(metric warpd_http_handed_total)
  check "idle: with another request in flight the reduce is handed to the runners (inline $i0 -> $i1, deferred $d0 -> $d1, handed $h0 -> $h1)" \
    '[ "$code" = 200 ] && [ "$h1" = $((h0 + 1)) ] && [ "$d1" = "$d0" ] && [ "$i1" = "$i0" ]'
  h0=$h1
  code=$(post /v1/warp "$WARP")
  h1=$(metric warpd_http_handed_total)
  check "idle: so is a warp job (handed $h0 -> $h1)" '[ "$code" = 200 ] && [ "$h1" = $((h0 + 1)) ]'
  # a handed job whose kernel is in no memory yet comes back from the runner and goes to a worker, which
  # compiles it: the one answer, 200
  h0=$h1 d0=$(metric warpd_http_deferred_total)
  code=$(post /v1/reduce '{"type":"i64","op":"max","data":[3,-9,7]}')
  h1=$(metric warpd_http_handed_total) d1=$(metric warpd_http_deferred_total)
  check "idle: a handed job with no kernel in memory is compiled on a worker (handed $h0 -> $h1, deferred $d0 -> $d1)" \
    '[ "$code" = 200 ] && grep -q "\"value\":" "$tmp/body" && [ "$h1" = $((h0 + 1)) ] && [ "$d1" = $((d0 + 1)) ]'
  kill $slow 2>/dev/null
  wait $slow 2>/dev/null

  # A buffer round-trips byte for byte (the mock's copies are real).
  head -c 4096 /dev/urandom >"$tmp/bytes"
  code=$(curl -s -o "$tmp/put" -w '%{http_code}' -X PUT -H 'Content-Type: application/octet-stream' \
    --data-binary @"$tmp/bytes" "$url/v1/buffers?type=f32")
  id=$(grep -oE '"id":"[^"]*"' "$tmp/put" | head -n 1 | sed 's/"id":"//; s/"$//')
  check "buffer: raw PUT 201 on cuda" '[ "$code" = 201 ] && [ -n "$id" ] && grep -q "\"backend\":\"cuda\"" "$tmp/put"'
  curl -s -o "$tmp/got" -H 'Accept: application/octet-stream' "$url/v1/buffers/$id"
  check "buffer: GET returns the bytes exactly" 'cmp -s "$tmp/bytes" "$tmp/got"'
  # A one-value reduce over a buffer too large to batch runs alone, and untimed unless profiled (no
  # timing events: kernel_us null, device_us the round trip); with "profile": true it is timed.
  head -c 262144 /dev/urandom >"$tmp/big"
  curl -s -o "$tmp/put" -X PUT -H 'Content-Type: application/octet-stream' --data-binary @"$tmp/big" "$url/v1/buffers?type=u32"
  big=$(grep -oE '"id":"[^"]*"' "$tmp/put" | head -n 1 | sed 's/"id":"//; s/"$//')
  code=$(post /v1/reduce "{\"buffer\":\"$big\",\"op\":\"max\"}"); got=$(timing)
  check "timing: a lone one-value reduce over a buffer, no profile: kernel_us null, device_us a number ($got)" \
    '[ "$code" = 200 ] && [ "$got" = "n n n v" ] && ! grep -q "/batch\"" "$tmp/body"'
  code=$(post /v1/reduce "{\"buffer\":\"$big\",\"op\":\"max\",\"profile\":true}"); got=$(timing)
  check "timing: the same with \"profile\": true is timed: kernel_us a number ($got)" '[ "$code" = 200 ] && [ "$got" = "v v v n" ]'
  # answers of every size on kept-alive connections (a call keeps its answer's buffer), from two clients
  # at once: lone jobs and handed ones
  h0=$(metric warpd_http_handed_total)
  python3 tests/api/keepalive.py "$url" 40 1 --no-values >"$tmp/ka1" 2>&1 &
  python3 tests/api/keepalive.py "$url" 40 2 --no-values >"$tmp/ka2" 2>&1; wait $!
  h1=$(metric warpd_http_handed_total)
  for k in ka1 ka2; do
    check "$(tail -n 1 "$tmp/$k")" 'grep -q "keepalive: [1-9][0-9]* passed, 0 failed" "$tmp/$k"'
    grep '^!!' "$tmp/$k" | head -n 5
  done
  echo "   (jobs handed to the runners meanwhile: $((h1 - h0)))"
  stop "idle daemon"
fi

# ---- --gpu-wait yield: jobs wait by polling their event ----
if start "cuda on the mock, --gpu-wait yield" --gpu-wait yield; then
  code=$(post /v1/reduce "$REDUCE")
  check "gpu-wait yield: reduce 200 on cuda" '[ "$code" = 200 ] && grep -q "\"backend\":\"cuda\"" "$tmp/body"'
  code=$(post /v1/warp "$WARP")
  check "gpu-wait yield: warp 200 on cuda" '[ "$code" = 200 ]'
  stop "gpu-wait yield daemon"
fi

# ---- --zero-copy off: every job copied; --resident-us 0: no resident either ----
if start "cuda on the mock, --zero-copy off --resident-us 0" --zero-copy off --resident-us 0 --inline-gpu always; then
  for _ in $(seq 12); do code=$(post /v1/warp "$WARP"); done # past the asks that build a resident
  z=$(metric 'warpd_device_zero_copy_runs_total{device="0"')
  r=$(metric 'warpd_device_resident_runs_total{device="0"')/$(metric 'warpd_device_resident_launches_total{device="0"')
  check "zero-copy off: an untimed warp job 200, copied (zero-copy runs $z)" '[ "$code" = 200 ] && [ "$z" = 0 ]'
  check "resident: --resident-us 0 runs none (runs/launches $r)" '[ "$r" = 0/0 ]'
  stop "zero-copy off daemon"
fi

# ---- --inline-gpu never (and batching) and always ----
for mode in never always; do
  if start "cuda on the mock, --inline-gpu $mode, --batch-window-us 20000" --inline-gpu "$mode" --batch-window-us 20000; then
    code=$(post /v1/reduce "$REDUCE")
    check "inline-gpu $mode: reduce 200 on cuda" '[ "$code" = 200 ] && grep -q "\"backend\":\"cuda\"" "$tmp/body"'
    code=$(curl -s -D "$tmp/head" -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' \
      --data-binary "$REDUCE" "$url/v1/reduce")
    check "inline-gpu $mode: again (kernel in memory) 200" '[ "$code" = 200 ]'
    # on a worker (never), the job leads its batch and waits out the 20 ms window: timing says so
    [ $mode = never ] && check "inline-gpu never: the batch window's wait is in handoff_us and Server-Timing's batch" \
      'python3 -c "import json,sys; t = json.load(open(sys.argv[1]))[\"timing\"]; sys.exit(0 if 15000 <= t[\"handoff_us\"] <= t[\"total_us\"] else 1)" "$tmp/body" &&
       python3 -c "import re,sys; m = re.search(r\"(?im)^Server-Timing:.*\\bbatch;dur=([0-9.]+)\", open(sys.argv[1]).read()); sys.exit(0 if m and float(m.group(1)) >= 15 else 1)" "$tmp/head"'
    code=$(post /v1/warp "$WARP")
    check "inline-gpu $mode: warp 200 on cuda" '[ "$code" = 200 ] && grep -q "\"backend\":\"cuda\"" "$tmp/body"'
    if [ $mode = never ]; then
      # Concurrent bursts of one reduce key (jobs queued, never run on the HTTP thread, which the idle
      # default does here: the mock's device is always idle): all 200, and some batch holds more than one.
      batched=0 burst_ok=1
      for try in 1 2 3 4 5; do
        b0=$(metric 'warpd_batches_total '); j0=$(metric 'warpd_batched_jobs_total ')
        cpids=()
        for i in $(seq 16); do
          curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' \
            --data-binary "$REDUCE" "$url/v1/reduce" >"$tmp/burst.$i" &
          cpids+=($!)
        done
        wait "${cpids[@]}" # not a bare wait: the daemon is a child too
        for i in $(seq 16); do [ "$(cat "$tmp/burst.$i")" = 200 ] || burst_ok=0; done
        b1=$(metric 'warpd_batches_total '); j1=$(metric 'warpd_batched_jobs_total ')
        echo "     burst $try: batches $b0 -> $b1, jobs $j0 -> $j1"
        if [ $((j1 - j0)) -gt $((b1 - b0)) ] && [ $((b1 - b0)) -gt 0 ]; then batched=1; break; fi
      done
      check "bursts: every request 200" '[ $burst_ok = 1 ]'
      check "bursts: warpd_batches_total and warpd_batched_jobs_total grow, some batch > 1" '[ $batched = 1 ]'
      # After the bursts (the batch kernel built), a handed job's answer is written on its HTTP thread
      # once the runner is done: its timing holds the hand-off (the runners' queue and the way back)
      # beside the stages, all within total_us, and Server-Timing names it runner.
      for route in warp reduce; do
        body=$WARP
        [ $route = reduce ] && body=$REDUCE
        for _ in $(seq 50); do # a reduce is handed once its batch kernel, built in the background, is in
          curl -s -D "$tmp/head" -o "$tmp/body" -H 'Content-Type: application/json' --data-binary "$body" "$url/v1/$route"
          grep -qi '^Server-Timing:.*runner;dur=' "$tmp/head" && break
          sleep 0.1
        done
        check "inline-gpu never: a handed $route's timing adds up within total_us, Server-Timing has runner" \
          'python3 - "$tmp/body" "$tmp/head" <<'"'"'PY'"'"'
import json, re, sys
t = json.load(open(sys.argv[1]))["timing"]
head = open(sys.argv[2]).read()
# emulate_us (warp) is not added: on cuda the emulation runs while the device works, within device_us
parts = ["receive_us", "handoff_us", "parse_us", "key_us", "cache_us", "load_us", "device_us"]
spent = sum(t.get(k) or 0 for k in parts)
ok = t["handoff_us"] > 0 and spent <= t["total_us"] + 1 and re.search(r"^Server-Timing:.*runner;dur=", head, re.M | re.I)
sys.exit(0 if ok else 1)
PY'
      done
    fi
    # Warp jobs, alone and in bursts of 16 (handed to the runners under never, on the HTTP threads under
    # always; batches of several as one grid): the emulated run, which a small job's batch does while the
    # device works (its first eight jobs) and the rest on their own threads, says which lanes are
    # defined in each answer.
    code=$(post /v1/warp "$wm")
    check "inline-gpu $mode, warp: the emulated lanes' reasons" '[ "$code" = 200 ] && lanes_ok'
    wb0=$(metric 'warpd_batched_jobs_total '); cpids=()
    for i in $(seq 16); do
      curl -s -o "$tmp/wburst.$i" -H 'Content-Type: application/json' --data-binary "$wm" "$url/v1/warp" &
      cpids+=($!)
    done
    wait "${cpids[@]}"
    wburst_ok=1
    for i in $(seq 16); do lanes_ok "$tmp/wburst.$i" || wburst_ok=0; done
    check "inline-gpu $mode, warp bursts: the emulated lanes' reasons in every answer (batched jobs $wb0 -> $(metric 'warpd_batched_jobs_total '))" \
      '[ $wburst_ok = 1 ]'
    post /v1/warp "${wm%\}},\"profile\":true}" >/dev/null; cp "$tmp/body" "$tmp/wref"
    heads_ok=1
    for i in $(seq 16); do same_head "$tmp/wburst.$i" "$tmp/wref" || heads_ok=0; done
    check "inline-gpu $mode, warp bursts: each answer's emulated lists, spec and kernel are a profiled job's bytes" '[ $heads_ok = 1 ]'
    stop "inline-gpu $mode daemon"
  fi
done

# ---- parked jobs whose clients go while their kernels run (each of those launches takes 1 s, the
# others none: the mock reads the delay from a file at each launch): a parked connection stays in its
# loop (in its epoll set once kept alive), so libmicrohttpd sees the reset and ends the request at once;
# the runner that still runs the job ends the call when it is done. Each request is logged once,
# unanswered (status 0) and aborted; the daemon goes on; ASan sees nothing leaked or used after it was
# freed. The reset must land while the kernel runs: 300 ms was once too short on a loaded machine. ----
delay_file="$tmp/launch_delay_us"
: >"$delay_file"
export MOCKCUDA_LAUNCH_DELAY_US="@$delay_file"
if start "cuda on the mock, --inline-gpu never, 1 s a launch, clients that reset mid-job" \
  --inline-gpu never --access-log "$tmp/access.log"; then
  # the kernel in memory, then the batch's, built in the background once handed jobs asked for it
  # enough (each lone ask weighs 1: bgbuild.h's threshold)
  for _ in 1 2; do post /v1/reduce "$REDUCE" >/dev/null; done
  for _ in $(seq 1200); do
    [ "$(metric 'warpd_background_builds_total{outcome="built"}')" -ge 1 ] && break
    post /v1/reduce "$REDUCE" >/dev/null; sleep 0.05
  done
  for _ in 1 2; do post /v1/reduce "$REDUCE" >/dev/null; done # handed over from now on
  h0=$(metric 'warpd_http_handed_total ') b0=$(metric 'warpd_batches_total ')
  echo 1000000 >"$delay_file"
  python3 - "$port" "$REDUCE" 4 "$tmp/access.log" <<'PY' >"$tmp/rst" 2>&1
import re, socket, struct, sys, time, urllib.request
port, body, n, log = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
head = b"POST /v1/reduce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
def handed():
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30).read().decode()
    return int(re.search(r"^warpd_http_handed_total (\d+)", text, re.M).group(1))
def lines():  # this route's lines in the access log: (all, unanswered and aborted)
    with open(log) as f:
        mine = [l for l in f if '"path":"/v1/reduce"' in l]
    return len(mine), sum('"status":0,' in l and '"aborted":true' in l for l in mine)
def until(cond):  # a wait, not a sleep: the machine may be slow
    end = time.time() + 30
    while not cond() and time.time() < end:
        time.sleep(0.01)
# One at a time: each job a batch of one, as the ones before (its kernel in memory). On a loaded machine
# a reset can land unseen (the connection read in the pass that took its request, outside the epoll
# set): its job is then answered into the closed socket and logged once, not as aborted. So: until n
# resets were seen, at most 3n tries (a reset seen twice would log a fifth aborted line).
tries = 0
while lines()[1] < n and tries < 3 * n:
    tries += 1
    before = lines()[0]
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # kept alive
    got = b""
    while not got.endswith(b'{"status":"ok"}'):
        got += s.recv(4096)
    # idle a moment: libmicrohttpd reads the socket empty and puts it in its epoll set (a request sent at
    # once could be read in the same pass, and the connection would wait outside the set, its reset unseen)
    time.sleep(0.25)
    h = handed()
    s.sendall(head % len(body) + body)
    until(lambda: handed() > h)  # parked: its kernel runs (1 s)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # a reset, not a FIN: the daemon's epoll reports it at once
    until(lambda: lines()[0] > before)  # the kernel ends; the runner ends the call
total, aborted = lines()
print("tries %d logged %d aborted %d" % (tries, total, aborted))
PY
  : >"$delay_file"
  h1=$(metric 'warpd_http_handed_total ') b1=$(metric 'warpd_batches_total ')
  check "clients reset mid-job: their 4 jobs were handed over, parked, run by the runners ($h0 -> $h1 handed, $b0 -> $b1 batches)" \
    '[ $((h1 - h0)) -ge 4 ] && [ $b1 -gt $b0 ]'
  code=$(post /v1/reduce "$REDUCE")
  check "clients reset mid-job: the next reduce answers 200" '[ "$code" = 200 ]'
  read -r tries aborted < <(awk '/^tries/ {print $2, $6}' "$tmp/rst")
  check "clients reset mid-job: 4 logged once each, unanswered and aborted (${aborted:-?} lines, ${tries:-?} tries)" \
    '[ "${aborted:-0}" = 4 ]'
  [ "${aborted:-0}" = 4 ] || { cat "$tmp/rst"; grep '"path":"/v1/reduce"' "$tmp/access.log" | tail -8; }
  stop "clients-reset daemon"
fi
unset MOCKCUDA_LAUNCH_DELAY_US

# ---- device loss: the mock's 3rd launch fails with a sticky CUDA_ERROR_ILLEGAL_ADDRESS ----
export MOCKCUDA_FAIL_AFTER=3
if start "cuda on the mock, MOCKCUDA_FAIL_AFTER=3 (a sticky error, then a context reset)"; then
  unset MOCKCUDA_FAIL_AFTER
  lost=0 codes=
  for _ in $(seq 8); do
    code=$(post /v1/reduce "$REDUCE"); codes="$codes $code"
    if [ "$code" = 500 ] && grep -q '"code":"cuda_error"' "$tmp/body" && grep -q 'ILLEGAL_ADDRESS' "$tmp/body"; then lost=1; fi
  done
  echo "     statuses:$codes"
  check "device loss: one request answers 500 cuda_error (CUDA_ERROR_ILLEGAL_ADDRESS)" '[ $lost = 1 ]'
  check "device loss: the device recovers (the last request 200)" '[ "$code" = 200 ]'
  curl -s "$url/v1/info" >"$tmp/info"
  check "device loss: info says the device is usable again" 'grep -q "\"usable\":true" "$tmp/info"'
  stop "device-loss daemon"
fi
unset MOCKCUDA_FAIL_AFTER

# ---- a doorbell channel's requests while the daemon stops: its threads end before the HTTP server (a
# channel's cuda request asks the server how busy it is), so SIGTERM mid-stream is clean ----
if start "cuda on the mock, a channel hammered through SIGTERM"; then
  python3 tests/api/channels.py "$url" "warpd-mockch-$$" hammer >"$tmp/hammer" 2>&1 &
  hpid=$!
  # "hammering": a reduce went through the channel and the next is on its way (a wait, not a sleep: the
  # first compiles its kernel, slow on a busy machine)
  for _ in $(seq 1200); do grep -q hammering "$tmp/hammer" && break; kill -0 $hpid 2>/dev/null || break; sleep 0.05; done
  stop "SIGTERM while a channel serves reduces"
  wait $hpid
  check "the hammer ran reduces through the channel until then ($(grep -o '[0-9]* reduces' "$tmp/hammer"))" \
    'grep -q "^channels: [1-9][0-9]* passed, 0 failed" "$tmp/hammer"'
  rm -f /dev/shm/warpd-mockch-$$-*
fi

# ---- the data plane on the mock: shared-memory regions registered with the driver, CUDA IPC buffers ----
# A region is page-locked with cuMemHostRegister (registered: true) and unregistered on DELETE and at
# exit; jobs over it answer (values are garbage: no kernel runs); PUT /v1/buffers copies it for real. A
# mock IPC handle (64 bytes: "MOCKIPC1", u64 bytes, u32 f32 fill, u32 claimed device) opens an allocation
# filled with the pattern: a buffer over it reads back the fill exactly; one handle opens once however many
# buffers use it (the mock's free memory drops once) and closes with the last; the refusals. SIGTERM then
# shows no "mockcuda: " misuse (a registration or a mapping left behind).
PY=$(python3 -c 'import sys; print(sys.executable)')
jget() { "$PY" -S -E -c 'import json,sys
d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d = d[int(k)] if isinstance(d, list) else d.get(k) if isinstance(d, dict) else None
print("" if d is None else d if isinstance(d, str) else json.dumps(d))' "${2:-$tmp/body}" "$1"; }
put() { curl -s -o "$tmp/body" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' --data-binary "$1" "$url/v1/buffers"; }
del() { curl -s -o "$tmp/body" -w '%{http_code}' -X DELETE "$url$1"; }
handle() { # bytes fill-bits device [length]: base64 of a mock IPC handle (length 64 unless given)
  "$PY" -S -E -c 'import base64,struct,sys
b, fill, dev, n = int(sys.argv[1]), int(sys.argv[2], 16), int(sys.argv[3]), int(sys.argv[4])
print(base64.b64encode((b"MOCKIPC1" + struct.pack("<QII", b, fill, dev) + bytes(64))[:n]).decode())' "$1" "$2" "$3" "${4:-64}"
}
free_mem() { curl -s "$url/v1/info" >"$tmp/info"; jget devices.0.memory_free "$tmp/info"; }
mock_refused() { # label, status, code, field (the answer in $tmp/body)
  local got="$code $(jget error.code) $(jget error.field)" want="$2 $3 $4"
  check "$1: $want ($got)" '[ "$got" = "$want" ]'
}
shm=warpd-mock-$$
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp" /dev/shm/$shm-*' EXIT
if start "cuda on the mock, shared-memory regions and CUDA IPC buffers"; then
  head -c 65536 /dev/urandom >/dev/shm/$shm-a
  head -c $((9 << 20)) /dev/zero >/dev/shm/$shm-big # past the 8 MiB a registered copy goes by DMA
  head -c 4096 /dev/zero >/dev/shm/$shm-left
  code=$(post /v1/shm "{\"name\":\"/$shm-a\"}"); ra=$(jget id)
  check "shm: POST /v1/shm 201 registered true on cuda" '[ "$code" = 201 ] && [ "$(jget registered)" = true ]'
  code=$(post /v1/shm "{\"name\":\"/$shm-big\"}"); rbig=$(jget id)
  check "shm: a 9 MiB region 201 registered true" '[ "$code" = 201 ] && [ "$(jget registered)" = true ]'
  code=$(post /v1/shm "{\"name\":\"/$shm-left\"}"); rleft=$(jget id)
  check "shm: a region left registered at SIGTERM (the teardown unregisters it) 201" '[ "$code" = 201 ]'
  code=$(post /v1/shm "{\"name\":\"/$shm-a\",\"offset\":100,\"bytes\":1000}")
  check "shm: an unaligned part of a registered object registers too (or declines: staged), 201" '[ "$code" = 201 ]'
  code=$(post /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$ra\"}}")
  check "shm: reduce over a region answers on cuda (count 16384)" \
    '[ "$code" = 200 ] && [ "$(jget count)" = 16384 ] && [ "$(jget backend)" = cuda ]'
  code=$(post /v1/reduce "{\"type\":\"u32\",\"op\":\"max\",\"shm\":{\"id\":\"$rbig\"}}")
  check "shm: reduce over the 9 MiB region (DMA) answers (count 2359296)" '[ "$code" = 200 ] && [ "$(jget count)" = 2359296 ]'
  code=$(post /v1/scan "{\"type\":\"i32\",\"op\":\"sum\",\"shm\":{\"id\":\"$ra\",\"count\":1000},\"output\":{\"shm\":{\"id\":\"$rbig\",\"offset\":64}}}")
  check "shm: a scan into a region answers output.shm (count 1000)" '[ "$code" = 200 ] && [ "$(jget output.shm.count)" = 1000 ]'
  code=$(post /v1/scan "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$rbig\"},\"output\":{\"shm\":{\"id\":\"$rbig\"}}}")
  check "shm: a 9 MiB scan into a region (DMA both ways) answers" '[ "$code" = 200 ] && [ "$(jget output.shm.bytes)" = $((9 << 20)) ]'
  code=$(put "{\"type\":\"f32\",\"shm\":{\"id\":\"$ra\"}}"); bshm=$(jget id)
  curl -s -o "$tmp/got" -H 'Accept: application/octet-stream' "$url/v1/buffers/$bshm"
  check "shm: PUT /v1/buffers from a region, on cuda, reads back the object's bytes exactly" \
    '[ "$code" = 201 ] && [ "$(jget backend)" = cuda ] && cmp -s "$tmp/got" /dev/shm/$shm-a'
  truncate -s 4096 /dev/shm/$shm-a
  code=$(post /v1/reduce "{\"type\":\"f32\",\"op\":\"sum\",\"shm\":{\"id\":\"$ra\"}}")
  mock_refused "shm: a registered region truncated under it" 409 region_truncated shm.id
  code=$(del "/v1/shm/$ra")
  check "shm: DELETE a registered region 200 (unregistered: no misuse at exit)" '[ "$code" = 200 ] && [ "$(jget pending)" = false ]'
  code=$(del "/v1/shm/$rbig")
  check "shm: DELETE the 9 MiB region 200" '[ "$code" = 200 ]'

  f0=$(free_mem)
  h=$(handle 4096 3fc00000 0) # 1024 f32 of 1.5
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$h\",\"count\":1024,\"type\":\"f32\"}}"); b1=$(jget id)
  f1=$(free_mem)
  check "ipc: PUT /v1/buffers cuda_ipc 201, external cuda_ipc, f32, count 1024, on cuda" \
    '[ "$code" = 201 ] && [ "$(jget external)" = cuda_ipc ] && [ "$(jget type)" = f32 ] && [ "$(jget count)" = 1024 ] &&
     [ "$(jget backend)" = cuda ]'
  check "ipc: the handle opened once: the mock's free memory drops by its 4096 bytes ($f0 -> $f1)" '[ $((f0 - f1)) = 4096 ]'
  curl -s -o "$tmp/body" "$url/v1/buffers/$b1?data=1"
  check "ipc: GET ?data=1 shows the fill, 1024 times 1.5" \
    '[ "$(jget data)" = "[$(printf "1.5, %.0s" $(seq 1023))1.5]" ]'
  code=$(put "{\"type\":\"f32\",\"cuda_ipc\":{\"handle\":\"$h\",\"offset\":16,\"count\":10}}"); b2=$(jget id)
  f2=$(free_mem)
  check "ipc: the same handle again (offset 16, count 10, the body's type) 201, not opened again ($f1 -> $f2)" \
    '[ "$code" = 201 ] && [ "$(jget count)" = 10 ] && [ "$f2" = "$f1" ]'
  curl -s -o "$tmp/got" -H 'Accept: application/octet-stream' "$url/v1/buffers/$b2"
  check "ipc: the second buffer's raw bytes are ten f32 1.5 exactly" \
    'cmp -s "$tmp/got" <(for i in $(seq 10); do printf "\000\000\300\077"; done)'
  code=$(post /v1/reduce "{\"buffer\":\"$b1\",\"op\":\"sum\"}")
  check "ipc: reduce over the IPC buffer answers on cuda (count 1024)" '[ "$code" = 200 ] && [ "$(jget count)" = 1024 ]'
  code=$(post /v1/scan "{\"buffer\":\"$b2\",\"op\":\"sum\",\"output\":{\"buffer\":\"$b1\"}}")
  check "ipc: a scan into the IPC buffer (output buffer) answers" '[ "$code" = 200 ]'
  code=$(del "/v1/buffers/$b1")
  curl -s -o "$tmp/got" -H 'Accept: application/octet-stream' "$url/v1/buffers/$b2"
  check "ipc: one buffer deleted, the other still reads" '[ "$code" = 200 ] && [ "$(stat -c %s "$tmp/got")" = 40 ] && [ "$(free_mem)" = "$f1" ]'
  code=$(del "/v1/buffers/$b2")
  f3=$(free_mem)
  check "ipc: the last buffer deleted closes the handle (free memory back: $f3 = $f0)" '[ "$code" = 200 ] && [ "$f3" = "$f0" ]'
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$h\",\"count\":1,\"type\":\"f32\"}}"); b3=$(jget id)
  check "ipc: the handle opens again after its close" '[ "$code" = 201 ] && [ "$(free_mem)" = "$f1" ]'
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$(handle 8192 40000000 0)\",\"count\":2048,\"type\":\"f32\"}}")
  check "ipc: a second handle left open at SIGTERM (closed at teardown) 201" '[ "$code" = 201 ]'

  code=$(put "{\"cuda_ipc\":{\"handle\":\"$(handle 4096 3f800000 1)\",\"count\":4,\"type\":\"f32\"}}")
  mock_refused "ipc: a handle claiming device 1" 400 bad_device cuda_ipc.device
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$h\",\"device\":1,\"count\":4,\"type\":\"f32\"}}")
  mock_refused "ipc: device 1, which the daemon does not serve" 400 bad_device cuda_ipc.device
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$(head -c 64 /dev/urandom | base64 -w0)\",\"count\":4,\"type\":\"f32\"}}")
  mock_refused "ipc: a garbage handle" 400 bad_handle cuda_ipc.handle
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$(handle 4096 3f800000 0 63)\",\"count\":4,\"type\":\"f32\"}}")
  mock_refused "ipc: a 63-byte handle" 400 bad_handle cuda_ipc.handle
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$(head -c 65 /dev/zero | base64 -w0)\",\"count\":4,\"type\":\"f32\"}}")
  mock_refused "ipc: a 65-byte handle" 400 bad_handle cuda_ipc.handle
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$(handle 0 0 0)\",\"count\":4,\"type\":\"f32\"}}")
  mock_refused "ipc: a handle the driver refuses (an empty allocation)" 400 bad_handle cuda_ipc.handle
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$h\",\"offset\":8,\"count\":4,\"type\":\"f32\"}}")
  mock_refused "ipc: offset 8 (not a multiple of 16)" 400 misaligned cuda_ipc.offset
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$h\",\"offset\":16,\"count\":1021,\"type\":\"f32\"}}")
  mock_refused "ipc: count past the allocation" 400 out_of_range cuda_ipc.count
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$h\",\"offset\":4112,\"count\":0,\"type\":\"f32\"}}")
  mock_refused "ipc: offset past the allocation" 400 out_of_range cuda_ipc.offset
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$h\",\"type\":\"f32\"}}")
  mock_refused "ipc: no count" 400 missing_field cuda_ipc.count
  code=$(put "{\"cuda_ipc\":{\"handle\":\"$h\",\"count\":4,\"type\":\"f32\"},\"data\":[1]}")
  mock_refused "ipc: data beside it" 400 bad_input data
  check "ipc: after the refusals the open handle is still the one mapping ($(free_mem))" '[ "$(free_mem)" = $((f1 - 8192)) ]'
  stop "shm and IPC daemon"
fi

# ---- resident warp kernels (--resident-us): a small untimed warp job run alone on a GPU asks for its
# kernel's resident build in the background; once built, the next job leaves it on the device as one
# warp (the mock plays it with a thread) and the jobs after it go through its mailbox with no launch;
# another kernel takes its place; it leaves when idle, and the next job launches it again; a profiled
# job, one of 31 or 64 lanes or with an inactive lane never uses it; unloading its kernel stops it. A
# small reduce's batched kernel serves the same way ----
rl='warpd_device_resident_launches_total{device="0"'
if start "cuda on the mock, --resident-us 1000000" --resident-us 1000000 --inline-gpu always; then
  runs() { echo "$(metric "$rr")/$(metric "$rl")"; }
  until_resident() { # body [route]: lone jobs until one is answered by a resident (its build is in the background)
    local before; before=$(metric "$rr")
    for _ in $(seq 200); do
      post "/v1/${2:-warp}" "$1" >/dev/null
      [ "$(metric "$rr")" -gt "$before" ] && return 0
      sleep 0.1
    done
    return 1
  }
  three_more() { # what route body: three more jobs of the resident's kernel: 200 each, its runs, no launch
    local before after ok=1
    before=$(runs)
    for _ in 1 2 3; do [ "$(post "/v1/$2" "$3")" = 200 ] || ok=0; done
    after=$(runs)
    check "resident: three more $1, 200 each, no launch (runs/launches $before -> $after)" \
      '[ $ok = 1 ] && [ "${after%/*}" = $((${before%/*} + 3)) ] && [ "${after#*/}" = "${before#*/}" ]'
  }
  w16=${WARP/\"width\":32/\"width\":16}
  r=$(runs); until_resident "$WARP"; got=$?; r0=$(runs)
  check "resident: lone jobs ask for the resident build; then one runs there ($r -> $r0)" \
    '[ $got = 0 ] && [ "${r0#*/}" -ge 1 ] && grep -q "\"backend\":\"cuda\"" "$tmp/body"'
  three_more "jobs of one kernel" warp "$WARP"; r1=$(runs)
  code=$(post /v1/warp "$w16"); r2=$(runs)
  check "resident: another kernel's job runs as before while it stays ($r1 -> $r2)" \
    '[ "$code" = 200 ] && [ "$r2" = "$r1" ]'
  code=$(post /v1/warp "${WARP%\}},\"profile\":true}"); r3=$(runs)
  check "resident: a profiled job does not use it ($r2 -> $r3)" '[ "$code" = 200 ] && [ "$r3" = "$r2" ]'
  code=$(post /v1/warp '{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":31}}')
  r4=$(runs)
  check "resident: a job of 31 lanes does not use it ($r3 -> $r4)" '[ "$code" = 200 ] && [ "$r4" = "$r3" ]'
  code=$(post /v1/warp '{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32},"active":"0xfffffff7"}')
  r4b=$(runs)
  check "resident: a job with an inactive lane does not use it ($r4 -> $r4b)" '[ "$code" = 200 ] && [ "$r4b" = "$r4" ]'
  code=$(post /v1/warp '{"family":"shfl_xor","type":"i32","width":16,"args":{"lane_mask":1},"input":{"iota":64}}')
  r5=$(runs)
  check "resident: a job of 64 lanes does not use it ($r4b -> $r5)" '[ "$code" = 200 ] && [ "$r5" = "$r4b" ]'
  sleep 1.5 # past --resident-us: the resident has left
  until_resident "$w16"; got=$?; r6=$(runs)
  check "resident: once it left, another kernel's takes its place: one launch ($r5 -> $r6)" \
    '[ $got = 0 ] && [ "${r6#*/}" = "$((${r5#*/} + 1))" ]'
  sleep 1.5
  code=$(post /v1/warp "$w16"); r7=$(runs)
  check "resident: after it left, the next job launches it again ($r6 -> $r7)" \
    '[ "$code" = 200 ] && [ "$r7" = "$((${r6%/*} + 1))/$((${r6#*/} + 1))" ]'
  curl -s -X DELETE "$url/v1/cache?tier=memory" >/dev/null
  code=$(post /v1/warp "$w16"); r8=$(runs)
  check "resident: its kernel unloaded (a memory prune), the next job runs as before ($r7 -> $r8)" \
    '[ "$code" = 200 ] && [ "$r8" = "$r7" ]'
  # a small reduce of one block: its batched kernel's resident build, the same way; the answer as the
  # stand-in's plain launch gives it (a mock kernel computes nothing)
  code=$(post /v1/reduce "$REDUCE"); plain=$(tr -d '\n' <"$tmp/body" | grep -o '"value":[^,]*')
  until_resident "$REDUCE" reduce; got=$?; r9=$(runs)
  check "resident: lone reduces ask for the batched kernel's resident build; then one runs there ($r8 -> $r9)" \
    '[ $got = 0 ] && [ "${r9#*/}" -gt "${r8#*/}" ] && grep -q "/batch\"" "$tmp/body" &&
     [ "$(tr -d "\n" <"$tmp/body" | grep -o "\"value\":[^,]*")" = "$plain" ]'
  cp "$tmp/body" "$tmp/rres"; post /v1/reduce "${REDUCE%\}},\"profile\":true}" >/dev/null
  check "resident: the reduce's answer but for its value is a profiled job's bytes" \
    '[ "$(reduce_text "$tmp/rres")" = "$(reduce_text "$tmp/body")" ]'
  three_more reduces reduce "$REDUCE"; r10=$(runs)
  code=$(post /v1/reduce "${REDUCE%\}},\"profile\":true}"); r11=$(runs)
  check "resident: a profiled reduce does not use it ($r10 -> $r11)" '[ "$code" = 200 ] && [ "$r11" = "$r10" ]'
  big=$(printf '{"type":"f32","op":"sum","data":[%s1]}' "$(printf '1,%.0s' $(seq 999))")
  code=$(post /v1/reduce "$big"); r12=$(runs)
  check "resident: a reduce whose image does not fit the mailbox does not use it ($r11 -> $r12)" \
    '[ "$code" = 200 ] && [ "$r12" = "$r11" ]'
  code=$(post /v1/reduce '{"type":"f32","op":"mean","data":[1.5,2,3]}'); r13=$(runs)
  check "resident: a statistic does not use it ($r12 -> $r13)" '[ "$code" = 200 ] && [ "$r13" = "$r12" ]'
  # The emulator's run (which lanes are defined) goes while the device works on a lone warp job: a job
  # whose member mask leaves lane 31 out has lane 31 "not_member" and lane 30 (its partner)
  # "src_not_member", the rest defined, from a plain launch and from the resident alike.
  code=$(post /v1/warp "$wm"); r14=$(runs)
  check "warp on cuda, a plain launch: the emulated lanes' reasons ($r13 -> $r14)" \
    '[ "$code" = 200 ] && [ "${r14%/*}" = "${r13%/*}" ] && lanes_ok'
  until_resident "$wm"; got=$?; r15=$(runs)
  check "warp on cuda through the resident: the emulated lanes' reasons" '[ $got = 0 ] && lanes_ok'
  code=$(post /v1/warp "$wm"); r16=$(runs)
  check "warp on cuda, the resident's next job: the same ($r15 -> $r16)" \
    '[ "$code" = 200 ] && [ "${r16%/*}" = $((${r15%/*} + 1)) ] && lanes_ok'
  cp "$tmp/body" "$tmp/wlone"; post /v1/warp "${wm%\}},\"profile\":true}" >/dev/null
  check "warp on cuda through the resident: the answer's emulated lists, spec and kernel are a profiled job's bytes" \
    'same_head "$tmp/wlone" "$tmp/body"'
  stop "resident daemon (SIGTERM with a resident on the device)"
fi
# A lone job on its HTTP thread (--inline-gpu idle, no resident: a plain launch) has the answer's parts
# that the device's run does not decide written while the device works: the same bytes as a profiled
# job's, written after its run (a reduce's: but for the value, which the mock's launch does not compute).
if start "cuda on the mock, lone jobs without a resident" --resident-us 0; then
  post /v1/warp "$wm" >/dev/null # compiled on a worker
  code=$(post_head /v1/warp "$wm"); cp "$tmp/body" "$tmp/wplain"; cp "$tmp/head" "$tmp/wplain.head"
  post /v1/warp "${wm%\}},\"profile\":true}" >/dev/null
  check "a lone warp job, run on its HTTP thread: its emulated lists, spec and kernel are a profiled job's bytes" \
    '[ "$code" = 200 ] && grep -q "\"cache\":\"memory\"" "$tmp/wplain" && ! grep -qi "runner;dur" "$tmp/wplain.head" &&
     lanes_ok "$tmp/wplain" && same_head "$tmp/wplain" "$tmp/body"'
  for body in "$REDUCE" '{"family":"argmax","type":"f32","data":[1.5,-2,3.25]}'; do
    for _ in $(seq 100); do # until the batched kernel, built in the background, runs it
      code=$(post_head /v1/reduce "$body"); grep -q '/batch"' "$tmp/body" && break; sleep 0.05
    done
    cp "$tmp/body" "$tmp/rplain"; cp "$tmp/head" "$tmp/rplain.head"
    post /v1/reduce "${body%\}},\"profile\":true}" >/dev/null
    check "a lone reduce ($body) by the batched kernel on its HTTP thread: all but its value are a profiled job's bytes" \
      '[ "$code" = 200 ] && grep -q "/batch\"" "$tmp/rplain" && grep -q "\"value\":" "$tmp/rplain" && ! grep -qi "runner;dur" "$tmp/rplain.head" &&
       [ "$(reduce_text "$tmp/rplain")" = "$(reduce_text "$tmp/body")" ] || { cat "$tmp/rplain"; echo; cat "$tmp/body"; false; }'
  done
  stop "lone-jobs daemon"
fi
# a resident that ends without a word, or never answers: residents go off, each job still answers 200
for mode in silent deaf; do
  export MOCKCUDA_RESIDENT=$mode
  if start "cuda on the mock, a $mode resident" --inline-gpu always; then
    codes=
    for _ in $(seq 60); do
      codes="$codes $(post /v1/warp "$WARP")"
      grep -q "resident kernels are off" "$tmp/err" && break
      sleep 0.1
    done
    l0=$(metric "$rl"); codes2="$(post /v1/warp "$WARP") $(post /v1/warp "$WARP")"; l1=$(metric "$rl")
    why="left without a word"; [ $mode = deaf ] && why="did not answer in 2 s"
    check "resident: a $mode one turns them off ($why), every job 200, no launch after ($l0 -> $l1)" \
      '[ -z "$(tr " " "\n" <<<"$codes $codes2" | grep -v "^$" | grep -v "^200$")" ] &&
       grep -q "$why; resident kernels are off" "$tmp/err" &&
       [ "$l0" -ge 1 ] && [ "$l1" = "$l0" ] && [ "$(metric "$rr")" = 0 ]'
    stop "$mode resident daemon"
  fi
  unset MOCKCUDA_RESIDENT
done

# ---- wp_backend_launch_io's images (fill): copied or zero-copy, every byte where it belongs ----
echo "-- mock_launch_io (the backend's calls on the stand-in driver)"
LD_LIBRARY_PATH=$BUILD/mockcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$BUILD/asan/tests/api/mock_launch_io" >"$tmp/lio" 2>&1
grep -E "^FAIL|Sanitizer|runtime error" "$tmp/lio" | head -20
line=$(tail -n 1 "$tmp/lio")
if [[ $line =~ ^launch_io:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]] && ! grep -qE "Sanitizer|runtime error" "$tmp/lio"; then
  pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2])); echo "ok   $line"
else
  no "mock_launch_io did not finish: $(tail -n 3 "$tmp/lio")"
fi

# ---- a bad value of a two-word flag: refused at once, naming the flag and both words ----
for f in "--zero-copy maybe|--zero-copy must be on or off" "--gpu-wait fast|--gpu-wait must be spin or yield"; do
  rc=0; timeout 30 "$bin" --backend cuda --no-disk-cache --listen 127.0.0.1:0 ${f%%|*} >/dev/null 2>"$tmp/err" || rc=$?
  check "flags: ${f%%|*} exits $rc at once: $(head -n 1 "$tmp/err")" \
    '[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "${f#*|}" "$tmp/err"'
done

echo "mockcuda: $pass passed, $fail failed"
[ $fail -eq 0 ]
