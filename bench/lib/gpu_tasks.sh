# gpu_tasks.sh — what every bench/gpu.sh task shares, sourced by the driver (run from the repository root):
# the GPU check, the machine's setup (carried .debs, compiler paths, $OUT, wrk), the commit line,
# building the GPU programs, and running one program under a time cap. Tasks see BUILD, OUT and WRK.

# Fails unless a GPU answers nvidia-smi. NO_GPU=1 skips the check (a dry run on emu, e.g. multi's).
gpu_need_gpu() { # task
  [ "${NO_GPU:-0}" = 1 ] && return 0
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "bench/gpu.sh $1: needs a GPU: nvidia-smi not found (run it on the GPU machine; NO_GPU=1 skips this check)" >&2
    return 1
  fi
  local list
  if ! list=$(nvidia-smi -L 2>&1) || [[ $list != *GPU* ]]; then
    echo "bench/gpu.sh $1: needs a GPU: nvidia-smi lists none (${list:0:200})" >&2
    return 1
  fi
}

# The GPU machine has no package registry, so the carried .debs (libmicrohttpd, cJSON, wrk, nginx...)
# are unpacked into /tmp/deps and put on the compiler's and loader's paths; $OUT is made; the card is
# named. Once per top-level run: a task that runs another (bench/gpu.sh engine inside check) inherits it.
gpu_env() {
  BUILD=${BUILD:-build}
  export OUT=${OUT:-/tmp/warpd-gpu-out}
  mkdir -p "$OUT"
  [ "${WARPD_GPU_ENV:-0}" = 1 ] && return 0
  export WARPD_GPU_ENV=1
  if [ -d .debs ]; then
    local f
    mkdir -p /tmp/deps && for f in .debs/*.deb; do [ -e "$f" ] && dpkg -x "$f" /tmp/deps; done
    export CPATH=/tmp/deps/usr/include LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu
  fi
  export WRK=${WRK:-$(command -v wrk || echo /tmp/deps/usr/bin/wrk)}
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true
}

gpu_commit_line() {
  echo "commit ${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo '?')}  $(date -u +%FT%TZ)"
}

# An older tree against this one (reqab, p50ab): $OLD_TGZ (default bench/old.tgz, `git archive OLD | gzip`)
# unpacked and built in /tmp/old, this tree's warpd built, the commit line printed. Returns 2 without
# the tarball, 1 when a build fails (its log's end printed).
gpu_old_and_new() { # task
  OLD_TGZ=${OLD_TGZ:-bench/old.tgz}
  [ -f "$OLD_TGZ" ] || { echo "$1: no $OLD_TGZ (git archive OLD | gzip > $OLD_TGZ)"; return 2; }
  rm -rf /tmp/old && mkdir -p /tmp/old && tar xzf "$OLD_TGZ" -C /tmp/old
  make -j16 "$BUILD/warpd" >"$OUT/build_new.log" 2>&1 || { tail -20 "$OUT/build_new.log"; return 1; }
  (cd /tmp/old && make -j16 build/warpd >"$OUT/build_old.log" 2>&1) || { tail -20 "$OUT/build_old.log"; return 1; }
  gpu_commit_line
}

# Builds warpd, the ASan daemon and api_devices (tests/api/devices.sh --cuda), every tests/gpu program
# and the extra targets given; on failure prints the build log's end and returns 1. Needs t0 (start).
# shellcheck disable=SC2154 # t0: the task sets it
gpu_build() { # extra make targets...
  local bins=() f b
  for f in tests/gpu/*.c tests/gpu/*.cu; do
    b=${f##*/}; [ "$b" = gpu_harness.c ] || bins+=("$BUILD/tests/gpu/${b%.*}") # the harness is no program
  done
  make -j16 "$BUILD/warpd" "$BUILD/asan/warpd" "$BUILD/asan/tests/api/api_devices" "${bins[@]}" "$@" \
    >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; return 1; }
  echo "built in $(( $(date +%s) - t0 )) s"
}

# Runs the command with its output in $OUT/NAME.log and prints one line (exit status, seconds, its
# "N passed, N failed" line) and its first failures. Past cap seconds it takes every thread's backtrace
# (cuda-gdb, into $OUT/NAME.bt: a hang and a slow run look alike from outside) and kills it.
capped() { # name cap_seconds command...
  local name=$1 cap=$2; shift 2
  local s=$(date +%s)
  "$@" >"$OUT/$name.log" 2>&1 &
  local pid=$! waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt "$cap" ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 $pid 2>/dev/null; then
    for p in $pid $(pgrep -P $pid); do
      timeout 60 cuda-gdb -batch -p "$p" -ex 'thread apply all bt' >>"$OUT/$name.bt" 2>&1
    done
    pkill -P $pid; kill -9 $pid 2>/dev/null
    echo "$name: STUCK or slow past ${cap} s ($(grep -c '^Thread' "$OUT/$name.bt") threads in $name.bt); last: $(grep -a progress "$OUT/$name.log" | tail -n 1)"
  fi
  wait $pid 2>/dev/null; local rc=$?
  printf '%-22s rc=%-3d %4d s  %s\n' "$name" $rc $(( $(date +%s) - s )) \
    "$(grep -aE '[0-9]+ passed, [0-9]+ failed' "$OUT/$name.log" | tail -n 1)"
  grep -aE 'FAIL|mismatch|SKIPPED|error:' "$OUT/$name.log" | head -4
}

# nginx answering a fixed 200 on 127.0.0.1:18390 with `threads` workers, its files in dir (the loopback
# floor beside warpd's own routes: tasks floor and hotpath); 1, saying why, when there is none or it did
# not start. gpu_nginx_stop dir ends it.
gpu_nginx_start() { # threads dir
  local th=$1 dir=$2 nginx=${NGINX:-$(command -v nginx || ls /usr/sbin/nginx /tmp/deps/usr/sbin/nginx 2>/dev/null | head -1)}
  [ -x "$nginx" ] || { echo "no nginx (apt-get download nginx nginx-common into .debs/)"; return 1; }
  cat >"$dir/nginx.conf" <<NGX
worker_processes $th;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
  server { listen 127.0.0.1:18390; location / { return 200 '{"status":"ok"}'; } }
}
NGX
  "$nginx" -e "$dir/error.log" -c "$dir/nginx.conf" 2>"$dir/nginx.err" ||
    { echo "nginx did not start: $(head -c 200 "$dir/nginx.err")"; return 1; }
  sleep 0.3
}
gpu_nginx_stop() { # dir
  [ -f "$1/nginx.pid" ] && kill "$(cat "$1/nginx.pid")" 2>/dev/null
  rm -f "$1/nginx.pid"; sleep 0.3
}

# The request path's tiny jobs (tasks hotpath and perreq): a cached 3-element f32 sum and a 32-lane i32
# shfl_xor. gpu_tiny_scripts writes wrk scripts for them and for a GET into dir (reduce.lua, warp.lua,
# health.lua).
GPU_TINY_REDUCE='{"type":"f32","op":"sum","data":[1.5,2,3]}'
GPU_TINY_WARP='{"family":"shfl_xor","type":"i32","width":32,"args":{"lane_mask":1},"input":{"iota":32}}'
gpu_tiny_scripts() { # dir
  local r b
  for r in reduce warp; do
    b=$GPU_TINY_REDUCE; [ $r = warp ] && b=$GPU_TINY_WARP
    printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n' "'$b'" >"$1/$r.lua"
  done
  echo 'wrk.method = "GET"' >"$1/health.lua"
}

# Starts $BUILD/warpd with the flags on a random loopback port (its output in dir/log; sets pid and
# base), waits until it is ready and warms the tiny jobs up: one of each, a second of wrk each (dir's
# scripts), then until the batch kernels asked for are built in the background. gpu_tiny_stop ends it.
gpu_tiny_start() { # dir flags...
  local dir=$1 port=$((20000 + RANDOM % 12000)) r # under the ephemeral ports (32768 up), which wrk's connections hold
  shift
  "$BUILD/warpd" --listen 127.0.0.1:$port --no-disk-cache "$@" >"$dir/log" 2>&1 &
  pid=$!
  base="http://127.0.0.1:$port"
  for _ in $(seq 200); do curl -sf "$base/v1/ready" >/dev/null && break; sleep 0.05; done
  curl -s -o /dev/null -H 'Content-Type: application/json' -d "$GPU_TINY_REDUCE" "$base/v1/reduce"
  curl -s -o /dev/null -H 'Content-Type: application/json' -d "$GPU_TINY_WARP" "$base/v1/warp"
  for r in reduce warp; do "$WRK" -t2 -c16 -d1s -s "$dir/$r.lua" "$base/v1/$r" >/dev/null 2>&1; done
  for _ in $(seq 100); do
    curl -s "$base/metrics" | grep -q '^warpd_background_builds_queued [1-9]' || break
    sleep 0.05
  done
}
gpu_tiny_stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=; }
