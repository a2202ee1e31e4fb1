# daemon.sh — sourced by the test scripts: starts a warpd on a free loopback port and learns where it
# listens from the line it prints ("listening on http://127.0.0.1:PORT", "https://127.0.0.1:PORT" with
# --tls-cert, or "unix:PATH" when the flags end with --listen unix:PATH).
#   count FILE NAME                 (below) tallies a test program's "N passed, N failed" line
#   warpd_seed DIR, case_files      (below) the API case table's kernel cache, and its files in order
#   http_threads PID, default_threads RUNNERS   (below) a daemon's HTTP threads, and how many it starts by default
#   warpd_start BIN DIR [flags...]  runs BIN --listen 127.0.0.1:0 --cache-dir DIR/cache flags..., stdout
#                                   in DIR/out, stderr in DIR/err; sets $pid, $port (TCP), $url
#                                   (http[s]://HOST:PORT as printed, or unix:PATH); 1 if it did not start.
warpd_start() {
  local bin=$1 dir=$2
  shift 2
  : >"$dir/out" # now: the child truncates it later, and the last daemon's port must not be read meanwhile
  "$bin" --listen 127.0.0.1:0 --cache-dir "$dir/cache" "$@" >"$dir/out" 2>"$dir/err" &
  pid=$!
  port=
  url=
  for _ in $(seq 200); do
    url=$(grep -oE 'listening on (https?://[^ /]+:[0-9]+|unix:[^ ]+)' "$dir/out" | head -n 1 | sed 's/^listening on //')
    if [ -n "$url" ]; then
      case "$url" in http*) port=${url##*:} ;; esac
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}

# count FILE NAME: adds the last "N passed, N failed" line of FILE (a test program's output) to the
# caller's $pass and $fail; a missing line is one failure, named after NAME.
count() {
  local line; line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
  if [ -z "$line" ]; then fail=$((fail+1)); echo "!! no result line from $2"; return; fi
  pass=$((pass + $(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$line")))
  fail=$((fail + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")))
}

# warpd_seed DIR: DIR/cache becomes a fresh copy of $BUILD/kcache, the kernels the API case table compiles
# only in passing (tests/api/kcache.json; make builds it), or an empty folder where there is none. A
# daemon on it then compiles only the kernels the table tests compiling.
warpd_seed() {
  rm -rf "$1/cache"
  if [ -d "${BUILD:-build}/kcache" ]; then cp -r "${BUILD:-build}/kcache" "$1/cache"; else mkdir -p "$1/cache"; fi
}

# case_files [NAME...]: the API case table's files (tests/api/cases/*.json) but the NAMEs, cache.json last:
# it prunes the whole cache, and the files before it find the seeded kernels (warpd_seed) there.
case_files() {
  local f skip=" $* "
  for f in tests/api/cases/*.json; do
    [[ "$skip" == *" ${f##*/} "* || ${f##*/} == cache.json ]] || echo "$f"
  done
  [[ "$skip" == *" cache.json "* ]] || echo tests/api/cases/cache.json
}

# http_threads PID: how many of the process's threads are HTTP threads (named wp-http).
http_threads() { cat /proc/"$1"/task/*/comm 2>/dev/null | grep -c '^wp-http$'; }
# default_threads RUNNERS: the HTTP threads a daemon starts without --threads, every CPU on the emulator
# (0 runners); beside a GPU the CPUs less its batcher's runners (a stream of each device) and an eighth,
# at least half of them; 4..16 either way (flags.c, wp_options_threads_for).
default_threads() {
  local c n; c=$(getconf _NPROCESSORS_ONLN); n=$c
  if [ "$1" -gt 0 ]; then n=$((c - $1 - c / 8)); [ "$n" -lt $((c / 2)) ] && n=$((c / 2)); fi
  [ "$n" -lt 4 ] && n=4; [ "$n" -gt 16 ] && n=16; echo "$n"
}
