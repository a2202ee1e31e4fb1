# transport_lib.sh — sourced by tests/api/transport.sh and transport_tls.sh (which run side by side in
# make test): the case table a transport carries, a temporary folder, and the helpers (start, stop,
# refused, check) over a sanitized emu daemon.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0
. tests/daemon.sh
# The case table each transport carries: every file but the ones that test a family's arithmetic (the
# statistics, maps, histogram, reduce_by_key, widths), which api.sh runs once; a transport moves
# the same bytes whatever the family computes, and the table runs five times over the two scripts.
# Each daemon starts on a fresh copy of the table's kernel cache (warpd_seed).
mapfile -t cases < <(case_files stats.json map.json histogram.json bykey.json anywidth.json)
ok() { echo "ok   $1"; pass=$((pass+1)); }
bad() { echo "FAIL $1"; fail=$((fail+1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; } # what, shell condition
start() { # daemon flags...
  warpd_seed "$tmp"
  warpd_start "$BUILD/asan/warpd" "$tmp" --backend emu "$@" && return 0
  bad "the daemon did not start with $*"; cat "$tmp/err"; pid=; return 1
}
stop() {
  kill -TERM "$pid"; local rc=0; wait "$pid" || rc=$?; pid=
  if [ $rc -ne 0 ] || grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$tmp/err"; then
    bad "daemon exited $rc or reported a sanitizer error:"; cat "$tmp/err"
  else ok "daemon stopped cleanly"; fi
}
refused() { # what, expected stderr text, daemon flags...: must exit 2 or 1 at once, saying the text
  local what=$1 text=$2; shift 2
  local rc=0; timeout 30 "$BUILD/asan/warpd" --backend emu --listen 127.0.0.1:0 --cache-dir "$tmp/cache" "$@" \
    >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$text" "$tmp/err"; then ok "$what: $(head -n 1 "$tmp/err")"
  else bad "$what: exit $rc, stderr: $(head -c 300 "$tmp/err")"; fi
}

