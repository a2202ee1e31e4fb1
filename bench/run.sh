#!/usr/bin/env bash
# Runs the benchmark programs in $BUILD/bench/*/ (compile/bench_core first, then any other), skipping
# those not built, after a header saying when, on what GPU, and at which commit; then bench_cupy.py and
# the transport scripts. Prints numbers, never pass/fail. `make bench` builds them and runs this.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}

echo "date:   $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
if command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu:    $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
else
  echo "gpu:    none (no nvidia-smi)"
fi
# WARPD_COMMIT names it where the tree is a copy without its own .git (git would answer for a parent)
commit=${WARPD_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}
echo "commit: ${commit:-uncommitted}"

# Programs by folder, as bench/README.md lists them: compile/bench_core first, then the others
known=(compile/bench_core)
others=()
for b in "$BUILD"/bench/*/*; do
  name=${b#"$BUILD"/bench/}
  [[ -f "$b" && -x "$b" && "$name" != lib/* && "$name" != *.o && "$name" != *.d && "$name" != compile/bench_core ]] &&
    others+=("$name")
done
for name in "${known[@]}" "${others[@]}"; do
  echo
  if [ -x "$BUILD/bench/$name" ]; then
    echo "== $name"
    "$BUILD/bench/$name" || echo "($name exited $?)"
  else
    echo "== $name: not built, skipped"
  fi
done
echo
if command -v python3 >/dev/null 2>&1 && python3 -c "import cupy" >/dev/null 2>&1; then
  echo "== bench_cupy.py"
  python3 bench/reduce/bench_cupy.py || echo "(bench_cupy.py exited $?)"
else
  echo "== bench_cupy.py: python3 has no cupy, skipped"
fi
echo
# Transport (hardening): slow connections and a wrk soak (scripts; the Unix-socket upload is bench_transport).
for script in bench/http/slow_conns.sh bench/http/wrk_soak.sh; do
  echo "== $script"
  BUILD=$BUILD "$script" || echo "($script exited $?)"
done
