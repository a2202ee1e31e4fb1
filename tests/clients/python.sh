#!/usr/bin/env bash
# The Python client under the system python3, against $BUILD/warpd (emu) on a free
# loopback port: test_python.py, test_numpy.py and test_shm.py once with numpy (python3-numpy) and once
# with numpy hidden by a sitecustomize that refuses its import (everything must work as without numpy),
# then `pip install` of clients/python into a temporary venv, offline (--no-index, setuptools from
# Debian), whose `warpctl` command and module must work. A second daemon with --shm off
# ($WARPD_URL_NOSHM) is what test_shm.py's fallback cases talk to. Ends with "python: N passed, N
# failed" (a skipped test counts as failed).
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
PY=${PY:-/usr/bin/python3}
tmp=$(mktemp -d); pid=; pid_noshm=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$pid_noshm" ] && kill "$pid_noshm" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
pass=0; fail=0
ok() { echo "ok   $*"; pass=$((pass+1)); }
no() { echo "FAIL $*"; fail=$((fail+1)); }
finish() { echo "python: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }
[ -x "$PY" ] || { no "$PY is missing (make deps installs python3)"; finish; }
[ -x "$BUILD/warpd" ] || { no "$BUILD/warpd is missing (run make first)"; finish; }
. tests/daemon.sh
mkdir -p "$tmp/noshm"
if warpd_start "$BUILD/warpd" "$tmp/noshm" --backend emu --shm off; then
  pid_noshm=$pid; url_noshm=$url; ok "a second daemon with --shm off"
else
  cat "$tmp/noshm/err"; no "a second daemon with --shm off did not start"; url_noshm=
fi
warpd_start "$BUILD/warpd" "$tmp" --backend emu || { cat "$tmp/err"; no "the daemon did not start"; finish; }
url=http://127.0.0.1:$port

unittests() { # label, env assignments...: runs the test files, adds their counts
  local label=$1; shift
  env "$@" WARPD_URL="$url" WARPD_URL_NOSHM="$url_noshm" timeout 300 "$PY" -m unittest -v tests/clients/test_python.py \
    tests/clients/test_numpy.py tests/clients/test_shm.py >"$tmp/log" 2>&1
  sed 's/^/     /' "$tmp/log" | grep -vE '\.\.\. ok$'
  local ran n f e s u
  ran=$(sed -nE 's/^Ran ([0-9]+) tests?.*/\1/p' "$tmp/log" | tail -n 1)
  [ -n "$ran" ] || { no "$label: unittest printed no summary"; return; }
  n() { sed -nE "s/.*$1=([0-9]+).*/\\1/p" "$tmp/log" | tail -n 1; }
  f=$(n failures); e=$(n errors); s=$(n skipped); u=$(n 'unexpected successes')
  local bad=$(( ${f:-0} + ${e:-0} + ${s:-0} + ${u:-0} ))
  pass=$((pass + ran - bad)); fail=$((fail + bad))
  echo "$label: $ran tests, $bad failed or skipped"
}

if "$PY" -c 'import numpy' 2>/dev/null; then ok "numpy importable under $PY"; else no "numpy is not importable under $PY (python3-numpy)"; fi
unittests "with numpy" WARPD_EXPECT_NUMPY=1

mkdir -p "$tmp/hide"
cat >"$tmp/hide/sitecustomize.py" <<'PYEOF'
import sys
class _HideNumpy:  # refuses numpy, as on a machine without it
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            raise ImportError("numpy is hidden for this test run")
sys.meta_path.insert(0, _HideNumpy())
PYEOF
unittests "numpy hidden" WARPD_EXPECT_NUMPY=0 PYTHONPATH="$tmp/hide"

# pip install into a throw-away venv, offline; from a copy (pip builds in the source tree)
cp -r clients/python "$tmp/src"
if "$PY" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 &&
   "$tmp/venv/bin/pip" install -q --no-index --no-build-isolation "$tmp/src" >"$tmp/pip.log" 2>&1; then
  ok "pip install --no-index --no-build-isolation ./clients/python into a venv"
else
  cat "$tmp/venv.log" "$tmp/pip.log"; no "pip install into a venv"; finish
fi
if [ -x "$tmp/venv/bin/warpctl" ] && "$tmp/venv/bin/warpctl" --url "$url" info >"$tmp/info" 2>&1 &&
   grep -q '"version"' "$tmp/info"; then ok "the venv's warpctl command talks to the daemon"
else cat "$tmp/info"; no "the venv's warpctl command"; fi
if [ ! -e "$tmp/venv/bin/warpd" ]; then ok "no warpd command in the venv (the daemon's name)"
else no "the venv has a warpd command: it would shadow the daemon"; fi
if (cd / && "$tmp/venv/bin/python" - "$url" "$tmp/venv" >"$tmp/mod" 2>&1 <<'PYEOF'
import sys, numpy as np, warpd
url, venv = sys.argv[1:]
assert warpd.__file__.startswith(venv), warpd.__file__  # the installed copy, not the tree's
assert warpd.Client(url).reduce(np.arange(10, dtype=np.int32), op="sum")["value"] == 45
print("installed module", warpd.__version__, "with numpy")
PYEOF
); then ok "$(cat "$tmp/mod")"; else cat "$tmp/mod"; no "the installed module"; fi
kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
[ -n "$pid_noshm" ] && { kill -TERM "$pid_noshm" 2>/dev/null; wait "$pid_noshm" 2>/dev/null; pid_noshm=; }
finish
