# daemon.sh — sourced by the test scripts: starts a warpd on a free loopback port and learns the port
# from the line it prints ("listening on http://127.0.0.1:PORT").
#   warpd_start BIN DIR [flags...]  runs BIN --listen 127.0.0.1:0 --cache-dir DIR/cache flags..., stdout
#                                   in DIR/out, stderr in DIR/err; sets $pid and $port; 1 if it did not start.
warpd_start() {
  local bin=$1 dir=$2
  shift 2
  : >"$dir/out" # emptied here, not only by the child's redirect: the loop below must never read the last daemon's port
  "$bin" --listen 127.0.0.1:0 --cache-dir "$dir/cache" "$@" >"$dir/out" 2>"$dir/err" &
  pid=$!
  port=
  for _ in $(seq 200); do
    port=$(grep -oE 'listening on http://127\.0\.0\.1:[0-9]+' "$dir/out" | head -n 1 | sed 's/.*://')
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  return 1
}
