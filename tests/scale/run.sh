#!/usr/bin/env bash
# Past one host, on loopback (stateless replicas, docs/scaling.md): two warpd replicas (emu) sharing one
# --cache-dir behind nginx, which this script starts with its own config in a temp dir (no system
# service) and routes by consistent hash of X-Warpd-Key (else ?buffer=, else spread per request).
# Checks: keys spread over both replicas and stick to one; a kernel compiled through replica A is a
# disk hit on replica B; a buffer is served by the replica its key routes to (and not by the other);
# 32 concurrent cold compiles of one key over both replicas leave exactly one valid cache file for it
# (header, length, sha256, key) and no temp file, each replica built it at most once, and a third
# replica loads that file as a disk hit. Ends with "scale: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
pass=0; fail=0
ok() { echo "ok   $*"; pass=$((pass+1)); }
no() { echo "FAIL $*"; fail=$((fail+1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else no "$what"; fi; }
finish() { echo "scale: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }
tmp=$(mktemp -d); pids=(); nginx_pid=
cleanup() {
  [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
NGINX=${NGINX:-/usr/sbin/nginx}
[ -x "$NGINX" ] || { no "nginx is missing (make deps installs it)"; finish; }
[ -x "$BUILD/warpd" ] || { no "$BUILD/warpd is missing (run make first)"; finish; }
. tests/daemon.sh
shared=$tmp/shared-cache

# replica NAME: a warpd on a free loopback port with the shared cache (the later --cache-dir wins)
replica() {
  mkdir -p "$tmp/$1"
  warpd_start "$BUILD/warpd" "$tmp/$1" --backend emu --cache-dir "$shared" || { cat "$tmp/$1/err"; return 1; }
  pids+=("$pid"); eval "port_$1=$port"
}
replica a && replica b || { no "the replicas did not start"; finish; }
ok "replicas a (:$port_a) and b (:$port_b) share $shared"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ng=$tmp/nginx; mkdir -p "$ng/logs"
# start_nginx: nginx on a free loopback port ($lb_port, $lb, $nginx_pid); 1 if it is not answering.
# nginx cannot listen on port 0 and say which it got, so a free port is picked first; should another
# suite running beside this one take it before nginx binds it, another is picked (up to 5 times).
start_nginx() {
  local attempt
  for attempt in 1 2 3 4 5; do
    lb_port=$(free_port)
    write_conf
    : >"$ng/logs/error.log"
    "$NGINX" -e "$ng/logs/error.log" -p "$ng" -c "$ng/nginx.conf" -g 'daemon off;' 2>"$ng/stderr" &
    nginx_pid=$!
    lb=http://127.0.0.1:$lb_port
    for _ in $(seq 100); do curl -sf "$lb/v1/health" >/dev/null 2>&1 && return 0; kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$nginx_pid" 2>/dev/null && return 1
    wait "$nginx_pid" 2>/dev/null; nginx_pid=
    grep -q 'Address already in use' "$ng/stderr" "$ng/logs/error.log" || return 1
    echo "     port $lb_port was taken before nginx bound it: another"
  done
  return 1
}
# write_conf: $ng/nginx.conf, listening on $lb_port, in front of replicas a and b
write_conf() {
user_line=; [ "$(id -u)" = 0 ] && user_line="user root;" # workers must reach this 0700 temp dir
cat >"$ng/nginx.conf" <<CONF
$user_line
worker_processes 1;
pid $ng/nginx.pid;
error_log $ng/logs/error.log warn;
events { worker_connections 512; }
http {
  access_log $ng/logs/access.log;
  client_body_temp_path $ng/body; proxy_temp_path $ng/proxy;
  fastcgi_temp_path $ng/fastcgi; uwsgi_temp_path $ng/uwsgi; scgi_temp_path $ng/scgi;
  # The routing key: X-Warpd-Key, else the buffer query argument, else none (spread by request id).
  map \$http_x_warpd_key \$warpd_key { "" \$arg_buffer; default \$http_x_warpd_key; }
  map \$warpd_key \$warpd_route { "" \$request_id; default \$warpd_key; }
  upstream warpd {
    hash \$warpd_route consistent;
    server 127.0.0.1:$port_a;
    server 127.0.0.1:$port_b;
    keepalive 16;
  }
  server {
    listen 127.0.0.1:$lb_port;
    client_max_body_size 64m;
    location / {
      proxy_pass http://warpd;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host; # warpd answers only Hosts it knows (loopback, --allow-host)
      add_header X-Upstream \$upstream_addr always;
    }
  }
}
CONF
}
start_nginx
if ! curl -sf "$lb/v1/health" >/dev/null 2>&1; then cat "$ng/stderr" "$ng/logs/error.log"; no "nginx did not start on :$lb_port"; finish; fi
ok "nginx on :$lb_port in front of both"

# upstream KEY: which replica's port nginx sends KEY to
upstream() { curl -s -o /dev/null -D - -H "X-Warpd-Key: $1" "$lb/v1/health" | tr -d '\r' | sed -n 's/^X-Upstream: 127.0.0.1://Ip'; }
key_a=; key_b=
for i in $(seq 64); do
  u=$(upstream "key-$i")
  [ "$u" = "$port_a" ] && [ -z "$key_a" ] && key_a=key-$i
  [ "$u" = "$port_b" ] && [ -z "$key_b" ] && key_b=key-$i
done
check "consistent hash sends keys to both replicas ($key_a -> a, $key_b -> b)" test -n "$key_a" -a -n "$key_b"
[ -n "$key_a" ] && [ -n "$key_b" ] || finish
sticky=1; for _ in 1 2 3 4 5; do [ "$(upstream "$key_a")" = "$port_a" ] && [ "$(upstream "$key_b")" = "$port_b" ] || sticky=; done
check "a key keeps its replica" test -n "$sticky"

# post KEY PATH BODY OUT: through nginx; OUT.h headers, OUT body
post() { curl -s -D "$4.h" -o "$4" -H "X-Warpd-Key: $1" -H 'Content-Type: application/json' --data-binary "$3" "$lb$2"; }
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null; }
served_by() { tr -d '\r' <"$1.h" | sed -n 's/^X-Upstream: 127.0.0.1://Ip'; }

# ---- a kernel compiled through a is a disk hit on b
spec='{"family":"warp_allreduce","type":"f32","width":16,"op":"max"}'
post "$key_a" /v1/compile "$spec" "$tmp/c1"
check "compile through a: cache compile, served by a" \
  test "$(jget "$tmp/c1" cache)" = compile -a "$(served_by "$tmp/c1")" = "$port_a"
post "$key_b" /v1/compile "$spec" "$tmp/c2"
check "the same kernel through b: cache disk (got $(jget "$tmp/c2" cache)), served by b" \
  test "$(jget "$tmp/c2" cache)" = disk -a "$(served_by "$tmp/c2")" = "$port_b"
check "one key, one hash on both" test -n "$(jget "$tmp/c1" hash)" -a "$(jget "$tmp/c1" hash)" = "$(jget "$tmp/c2" hash)"
post "$key_a" /v1/reduce '{"type":"f32","op":"max","data":[1,7,3],"compile":true}' "$tmp/r1"
post "$key_b" /v1/reduce '{"type":"f32","op":"max","data":[1,7,3],"compile":true}' "$tmp/r2"
check "a reduce with compile:true through a, then b: compile, then disk, max 7" \
  test "$(jget "$tmp/r1" cache)" = compile -a "$(jget "$tmp/r2" cache)" = disk -a "$(jget "$tmp/r2" value | sed 's/\.0$//')" = 7

# ---- a buffer lives on one replica: its key must route there
curl -s -o "$tmp/buf" -X PUT -H "X-Warpd-Key: $key_a" -H 'Content-Type: application/json' \
  --data-binary '{"type":"i32","data":[5,6,7]}' "$lb/v1/buffers"
buf=$(jget "$tmp/buf" id)
post "$key_a" /v1/reduce "{\"buffer\":\"$buf\",\"op\":\"sum\"}" "$tmp/rb1"
check "a buffer made with key a is reduced with key a (sum $(jget "$tmp/rb1" value))" test -n "$buf" -a "$(jget "$tmp/rb1" value)" = 18
post "$key_b" /v1/reduce "{\"buffer\":\"$buf\",\"op\":\"sum\"}" "$tmp/rb2"
code=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["code"])' "$tmp/rb2" 2>/dev/null)
check "the other replica does not have it (${code:-no error})" test -n "$code"

# ---- 32 concurrent cold asks for one key, over both replicas
cold='{"family":"warp_allreduce","type":"i32","width":8,"op":"sum"}'
askers=()
for i in $(seq 32); do
  if [ $((i % 2)) = 0 ]; then k=$key_a; else k=$key_b; fi
  post "$k" /v1/compile "$cold" "$tmp/cold.$i" &
  askers+=($!)
done
for j in "${askers[@]}"; do wait "$j"; done
python3 - "$tmp" "$port_a" "$port_b" >"$tmp/cold.sum" <<'PY'
import json, sys, collections
tmp, pa, pb = sys.argv[1:]
hashes, built, served, bad = set(), collections.Counter(), collections.Counter(), 0
for i in range(1, 33):
    try:
        r = json.load(open(f"{tmp}/cold.{i}"))
        hdr = open(f"{tmp}/cold.{i}.h").read()
    except (OSError, ValueError):
        bad += 1
        continue
    up = next((l.split(":")[-1].strip() for l in hdr.splitlines() if l.lower().startswith("x-upstream:")), "?")
    served[up] += 1
    hashes.add(r.get("hash"))
    if r.get("cache") in ("compile", "disk"):
        built[up] += 1
    if "error" in r:
        bad += 1
print(len(hashes), bad, served[pa], served[pb], built[pa], built[pb], next(iter(hashes)) if len(hashes) == 1 else "")
PY
read -r n_hash n_bad served_a served_b built_a built_b hash <"$tmp/cold.sum"
check "32 concurrent cold compiles answered, one hash ($n_bad errors)" test "$n_hash" = 1 -a "$n_bad" = 0 -a -n "$hash"
check "both replicas served them (a $served_a, b $served_b)" test "$served_a" -gt 0 -a "$served_b" -gt 0
check "each replica built or read it once, the rest were memory hits (a $built_a, b $built_b)" \
  test "$built_a" = 1 -a "$built_b" = 1
files=$(find "$shared" -name "$hash*" | wc -l)
check "exactly one cache file for it ($files)" test "$files" = 1 -a -f "$shared/${hash:0:2}/$hash.wpk"
tmps=$(find "$shared" -name '*.tmp.*' | wc -l)
check "no temp file left in the shared directory ($tmps)" test "$tmps" = 0
python3 tests/scale/check_cache_file.py "$shared/${hash:0:2}/$hash.wpk" "$hash" >"$tmp/valid" 2>&1
check "the file is whole: $(cat "$tmp/valid")" grep -q ': valid' "$tmp/valid"
all_valid=1
for f in $(find "$shared" -name '*.wpk'); do
  n=$(basename "$f" .wpk); python3 tests/scale/check_cache_file.py "$f" "$n" >/dev/null || all_valid=
done
check "every file in the shared directory is whole" test -n "$all_valid"
replica c || no "replica c did not start"
curl -s -o "$tmp/c3" -H 'Content-Type: application/json' --data-binary "$cold" "http://127.0.0.1:$port_c/v1/compile"
check "a third replica loads it: cache $(jget "$tmp/c3" cache)" test "$(jget "$tmp/c3" cache)" = disk

# The prewarm set of deploy/k8s/configmap-prewarm.yaml compiles, through the balancer.
python3 - "$lb" <<'PY' >"$tmp/prewarm" 2>&1
import json, subprocess, sys
text = open("deploy/k8s/configmap-prewarm.yaml").read()
specs = json.loads(text.split("prewarm.json: |", 1)[1])["specs"]
bad = []
for spec in specs:
    out = subprocess.run(["curl", "-s", "-H", "Content-Type: application/json", "--data-binary", json.dumps(spec),
                          sys.argv[1] + "/v1/compile"], capture_output=True).stdout
    answer = json.loads(out or b"{}")
    if answer.get("cache") not in ("compile", "disk", "memory"):
        bad.append(f"{spec}: {answer.get('error')}")
print(f"{len(specs)} specs" + ("; " + "; ".join(bad) if bad else ""))
sys.exit(1 if bad or not specs else 0)
PY
rc=$?
check "deploy/k8s prewarm set compiles: $(cat "$tmp/prewarm")" test "$rc" = 0

kill -QUIT "$nginx_pid"; wait "$nginx_pid"; rc=$?; nginx_pid=
check "nginx stopped (exit $rc)" test "$rc" = 0
check "nginx logged no errors" sh -c "! grep -q '\[error\]\|\[crit\]\|\[emerg\]' '$ng/logs/error.log'"
finish
